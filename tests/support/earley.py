"""A small, obviously-right Earley recogniser over characters, for grammar IR.

It knows nothing of automata or tokens: the IR is turned into plain BNF
productions (repetitions become right-recursive helper symbols) and the text is
recognised character by character. ``viable(text)`` says whether the text is a
prefix of some sentence (every helper symbol derives some string, so a
non-empty Earley set means the prefix can be completed); ``complete(text)``
whether it is a sentence.
"""

from __future__ import annotations

from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.ir import Alt, ByteClass, CharClass, Concat, Empty, Literal, Node, Repeat, RuleRef

Term = tuple[tuple[int, int], ...]  # code point ranges


class Earley:
    def __init__(self, grammar: Grammar) -> None:
        self.prods: dict[str, list[tuple[object, ...]]] = {}
        self._n = 0
        for name, body in grammar.rules.items():
            self.prods.setdefault(("rule", name), []).extend(self._alts(body))  # type: ignore[arg-type]
        self.root = ("rule", grammar.root)
        self.nullable = self._nullable()

    def _fresh(self) -> tuple[str, int]:
        self._n += 1
        return ("aux", self._n)  # type: ignore[return-value]

    def _alts(self, node: Node) -> list[tuple[object, ...]]:
        if isinstance(node, Alt):
            out: list[tuple[object, ...]] = []
            for item in node.items:
                out.extend(self._alts(item))
            return out
        return [self._seq(node)]

    def _sym(self, node: Node) -> object:
        nt = self._fresh()
        self.prods[nt] = self._alts(node)  # type: ignore[index]
        return nt

    def _seq(self, node: Node) -> tuple[object, ...]:
        if isinstance(node, Empty):
            return ()
        if isinstance(node, Literal):
            return tuple(((ord(c), ord(c)),) for c in node.value.decode("utf-8"))
        if isinstance(node, CharClass):
            return (node.ranges,) if node.ranges else (self._sym_nothing(),)
        if isinstance(node, ByteClass):
            if all(hi < 0x80 for _, hi in node.ranges):
                return (node.ranges,)
            raise NotImplementedError("byte classes beyond ASCII")
        if isinstance(node, RuleRef):
            return (("rule", node.name),)
        if isinstance(node, Concat):
            out: list[object] = []
            for item in node.items:
                out.extend(self._seq(item) if not isinstance(item, Alt) else (self._sym(item),))
            return tuple(out)
        if isinstance(node, Alt):
            return (self._sym(node),)
        if isinstance(node, Repeat):
            item = self._sym(node.item)
            seq: list[object] = [item] * node.min
            if node.max is None:
                star = self._fresh()
                self.prods[star] = [(), (item, star)]  # type: ignore[index]
                seq.append(star)
            else:
                # optional chain: O_k -> eps | item O_{k-1}
                tail: object | None = None
                for _ in range(node.max - node.min):
                    opt = self._fresh()
                    self.prods[opt] = [(), (item,) if tail is None else (item, tail)]  # type: ignore[index]
                    tail = opt
                if tail is not None:
                    seq.append(tail)
            return tuple(seq)
        raise TypeError(node)

    def _sym_nothing(self) -> object:
        nt = self._fresh()
        self.prods[nt] = []  # type: ignore[index]
        return nt

    def _nullable(self) -> set[object]:
        null: set[object] = set()
        changed = True
        while changed:
            changed = False
            for nt, alts in self.prods.items():
                if nt not in null and any(all(s in null for s in a) for a in alts):
                    null.add(nt)
                    changed = True
        return null

    def _is_nt(self, sym: object) -> bool:
        return sym in self.prods

    def _close(self, sets: list[set[tuple[object, int, int, int]]]) -> None:
        """Predict and complete in the last set (items are (symbol, alternative, dot, origin))."""
        i = len(sets) - 1
        current = sets[i]
        todo = list(current)
        while todo:
            nt, k, dot, origin = todo.pop()
            alt = self.prods[nt][k]  # type: ignore[index]
            if dot < len(alt):
                sym = alt[dot]
                if self._is_nt(sym):
                    for kk in range(len(self.prods[sym])):  # type: ignore[index]
                        item = (sym, kk, 0, i)
                        if item not in current:
                            current.add(item)
                            todo.append(item)
                    if sym in self.nullable:
                        item = (nt, k, dot + 1, origin)
                        if item not in current:
                            current.add(item)
                            todo.append(item)
            else:
                for pnt, pk, pdot, porigin in list(sets[origin]):
                    palt = self.prods[pnt][pk]  # type: ignore[index]
                    if pdot < len(palt) and palt[pdot] == nt:
                        item = (pnt, pk, pdot + 1, porigin)
                        if item not in current:
                            current.add(item)
                            todo.append(item)

    def start(self) -> list[set[tuple[object, int, int, int]]]:
        """The Earley sets of the empty text."""
        sets = [{(self.root, k, 0, 0) for k in range(len(self.prods[self.root]))}]  # type: ignore[index]
        self._close(sets)
        return sets

    def step(
        self, sets: list[set[tuple[object, int, int, int]]], ch: str
    ) -> list[set[tuple[object, int, int, int]]] | None:
        """The sets after one more character (a new list), or None when the text is no longer viable."""
        c = ord(ch)
        new = set()
        for nt, k, dot, origin in sets[-1]:
            alt = self.prods[nt][k]  # type: ignore[index]
            if dot < len(alt) and not self._is_nt(alt[dot]):
                if any(lo <= c <= hi for lo, hi in alt[dot]):  # type: ignore[attr-defined]
                    new.add((nt, k, dot + 1, origin))
        if not new:
            return None
        out = [*sets, new]
        self._close(out)
        return out

    def is_complete(self, sets: list[set[tuple[object, int, int, int]]]) -> bool:
        """Whether the text of ``sets`` is a sentence."""
        return any(
            nt == self.root and dot == len(self.prods[nt][k]) and origin == 0  # type: ignore[index]
            for nt, k, dot, origin in sets[-1]
        )

    def _sets(self, text: str) -> list[set[tuple[object, int, int, int]]] | None:
        sets: list[set[tuple[object, int, int, int]]] | None = self.start()
        for ch in text:
            assert sets is not None
            sets = self.step(sets, ch)
            if sets is None:
                return None
        return sets

    def viable(self, text: str) -> bool:
        return self._sets(text) is not None

    def complete(self, text: str) -> bool:
        sets = self._sets(text)
        return sets is not None and self.is_complete(sets)
