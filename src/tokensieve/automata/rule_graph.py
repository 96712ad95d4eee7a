"""The reference graph of a grammar's rules, and the rewrites that analysis allows.

Rules that derive no finite string are dropped (:func:`drop_unproductive`),
left recursion over top-level alternatives is rewritten into repetition
(:func:`rewrite_left_recursion`, Paull's algorithm), and the recursive rules
(those on a cycle of references, :func:`recursive_rules`) are found with
Tarjan's algorithm. :func:`rewrite` replaces subtrees of the IR, sharing what
it does not change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..errors import GrammarError, LimitExceeded
from ..ir.grammar import Grammar, referenced_rules
from ..ir.nodes import (
    EMPTY,
    NOTHING,
    Alt,
    Automaton,
    Concat,
    Empty,
    Literal,
    Node,
    Repeat,
    RuleRef,
    alt,
    concat,
    is_nothing,
    repeat,
)
from ..limits import Limits

__all__ = [
    "check_left_recursion",
    "drop_unproductive",
    "left_cycle",
    "recursive_rules",
    "rewrite",
    "rewrite_left_recursion",
    "rule_references",
    "substitute",
]


def _productive(node: Node, ok: set[str]) -> bool:
    if isinstance(node, RuleRef):
        return node.name in ok
    if isinstance(node, Concat):
        return all(_productive(i, ok) for i in node.items)
    if isinstance(node, Alt):
        return any(_productive(i, ok) for i in node.items)
    if isinstance(node, Repeat):
        return node.min == 0 or _productive(node.item, ok)
    return not is_nothing(node)


def drop_unproductive(rules: dict[str, Node], root: str) -> dict[str, Node]:
    ok: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in ok and _productive(body, ok):
                ok.add(name)
                changed = True
    if root not in ok:
        raise GrammarError(f"the grammar derives no finite string: rule {root!r} never terminates")
    if len(ok) == len(rules):
        return rules
    return {n: substitute(b, lambda r: r if r.name in ok else NOTHING) for n, b in rules.items() if n in ok}


def substitute(node: Node, fn: Callable[[RuleRef], Node]) -> Node:
    """``node`` with every rule reference ``r`` replaced by ``fn(r)`` (see :func:`rewrite`)."""
    return rewrite(node, lambda n: fn(n) if isinstance(n, RuleRef) else None)


def rewrite(
    node: Node, replace: Callable[[Node], Node | None], done: dict[int, Node] | None = None
) -> Node:
    """``node`` with every subtree ``n`` for which ``replace(n)`` is a node replaced by it.

    A subtree where nothing is replaced is returned as it is, and a subtree
    shared by several parents is rebuilt once (the IR is a DAG), so the cost is
    the number of distinct nodes. Rewrites of several nodes with the same
    ``replace`` can share their work through one ``done`` dict (kept alive with
    the nodes: it is keyed by identity).
    """
    if done is None:
        done = {}

    def sub(n: Node) -> Node:
        got = replace(n)
        if got is not None:
            return got
        if not isinstance(n, (Concat, Alt, Repeat)):
            return n
        hit = done.get(id(n))
        if hit is not None:
            return hit
        if isinstance(n, Repeat):
            item = sub(n.item)
            out = n if item is n.item else repeat(item, n.min, n.max)
        else:
            items = [sub(i) for i in n.items]
            if all(new is old for new, old in zip(items, n.items, strict=True)):
                out = n
            else:
                out = concat(*items) if isinstance(n, Concat) else alt(*items)
        done[id(n)] = out
        return out

    return sub(node)


def _nullable(node: Node, null: set[str]) -> bool:
    if isinstance(node, RuleRef):
        return node.name in null
    if isinstance(node, Concat):
        return all(_nullable(i, null) for i in node.items)
    if isinstance(node, Alt):
        return any(_nullable(i, null) for i in node.items)
    if isinstance(node, Repeat):
        return node.min == 0 or _nullable(node.item, null)
    if isinstance(node, Literal):
        return not node.value
    if isinstance(node, Automaton):
        return node.nullable
    return isinstance(node, Empty)


def _nullable_rules(rules: dict[str, Node]) -> set[str]:
    null: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in null and _nullable(body, null):
                null.add(name)
                changed = True
    return null


def _left_refs(node: Node, null: set[str]) -> Iterator[str]:
    """Rules that can be entered before any byte of ``node`` is read."""
    if isinstance(node, RuleRef):
        yield node.name
    elif isinstance(node, Concat):
        for item in node.items:
            yield from _left_refs(item, null)
            if not _nullable(item, null):
                break
    elif isinstance(node, Alt):
        for item in node.items:
            yield from _left_refs(item, null)
    elif isinstance(node, Repeat):
        yield from _left_refs(node.item, null)


def left_cycle(rules: dict[str, Node]) -> list[str] | None:
    """A cycle of left-corner references, or None."""
    null = _nullable_rules(rules)
    graph = {n: sorted(set(_left_refs(b, null))) for n, b in rules.items()}
    color: dict[str, int] = {}
    for start in graph:
        if color.get(start):
            continue
        path: list[str] = []
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(graph[start]))]
        color[start] = 1
        path.append(start)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                path.pop()
                color[node] = 2
                continue
            if nxt not in graph:
                continue
            c = color.get(nxt, 0)
            if c == 1:
                return path[path.index(nxt) :] + [nxt]
            if c == 0:
                color[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(graph[nxt])))
    return None


def _branches(node: Node) -> list[Node]:
    if isinstance(node, Alt):
        return [b for item in node.items for b in _branches(item)]
    if isinstance(node, Repeat) and node.min == 0 and node.max == 1:
        return [*_branches(node.item), EMPTY]
    return [node]


def _split_first(branch: Node) -> tuple[Node, Node]:
    if isinstance(branch, Concat):
        return branch.items[0], concat(*branch.items[1:])
    return branch, EMPTY


def rewrite_left_recursion(rules: dict[str, Node], limits: Limits) -> dict[str, Node]:
    if left_cycle(rules) is None:
        return rules
    order = list(rules)
    out = dict(rules)
    for i, a in enumerate(order):
        earlier = set(order[:i])
        branches = _branches(out[a])
        # Each round replaces a leading reference to an earlier rule by that rule's
        # alternatives, which (already rewritten) lead with a later rule or a terminal, so
        # the leading rule's position rises every round: at most i rounds, and the number
        # of alternatives is bounded below.
        changed = True
        while changed:
            changed = False
            new: list[Node] = []
            for b in branches:
                first, rest = _split_first(b)
                if isinstance(first, RuleRef) and first.name in earlier and first.name != a:
                    new.extend(concat(x, rest) for x in _branches(out[first.name]))
                    changed = True
                else:
                    new.append(b)
            branches = new
            if len(branches) > limits.max_grammar_rules:
                raise LimitExceeded(
                    "max_grammar_rules",
                    limits.max_grammar_rules,
                    f"rewriting left recursion makes rule {a!r} {len(branches)} alternatives",
                )
        direct: list[Node] = []
        other: list[Node] = []
        for b in branches:
            first, rest = _split_first(b)
            (direct if first == RuleRef(a) else other).append(rest if first == RuleRef(a) else b)
        if direct:
            if not other:
                raise GrammarError(f"rule {a!r} is left-recursive in every alternative and derives no string")
            out[a] = concat(alt(*other), repeat(alt(*direct), 0, None))
        elif len(branches) != len(_branches(out[a])):
            out[a] = alt(*branches)
    return out


def check_left_recursion(bodies: dict[str, Node]) -> None:
    cycle = left_cycle(bodies)
    if cycle is not None:
        raise GrammarError(
            "left recursion that cannot be rewritten (through a nullable prefix or a repetition): "
            + " -> ".join(cycle)
        )


def rule_references(grammar: Grammar, rules: dict[str, Node]) -> dict[str, tuple[str, ...]]:
    """The rules each of ``rules`` references: ``grammar``'s where the body is still its own."""
    known = grammar.rules
    return {
        n: grammar.references(n) if known.get(n) is b else tuple(referenced_rules(b)) for n, b in rules.items()
    }


def recursive_rules(rules: dict[str, Node], references: dict[str, tuple[str, ...]]) -> set[str]:
    """Rules on a cycle of the reference graph (Tarjan's SCCs, iterative)."""
    graph = {n: sorted(references[n]) for n in rules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    st: list[str] = []
    out: set[str] = set()
    counter = 0
    for v0 in graph:
        if v0 in index:
            continue
        work: list[tuple[str, int]] = [(v0, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                st.append(v)
                on.add(v)
            succ = graph[v]
            if i < len(succ):
                work.append((v, i + 1))
                w = succ[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = st.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in graph[v]:
                    out.update(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out
