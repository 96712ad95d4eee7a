"""Slow, obviously-right checks of what a ``Grammar`` accepts.

``accepts`` decides membership by a least fixed point over a chart: for every
rule and start offset, the set of offsets where a match of the rule can end.
It starts from empty sets and re-evaluates every rule body against the current
chart until nothing changes, so left recursion and empty rules need no special
care. ``inline`` expands the references of a non-recursive grammar into one IR
node, for the DFA builder.
"""

from __future__ import annotations

from tokensieve.grammar.cfg import Grammar
from tokensieve.grammar.ir import (
    Alt,
    ByteClass,
    CharClass,
    Concat,
    Empty,
    Literal,
    Node,
    Repeat,
    RuleRef,
    alt,
    concat,
    repeat,
)


def _in(ranges: tuple[tuple[int, int], ...], x: int) -> bool:
    return any(lo <= x <= hi for lo, hi in ranges)


def _char_at(data: bytes, i: int) -> tuple[int, int] | None:
    """The code point starting at byte ``i`` and its length, if well-formed UTF-8."""
    for size in (1, 2, 3, 4):
        try:
            text = data[i : i + size].decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(text) == 1:
            return ord(text), size
    return None


def accepts(grammar: Grammar, text: str | bytes) -> bool:
    """Whether ``text`` is in the language of ``grammar`` (exponential in nothing, just slow)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    n = len(data)
    chart: dict[str, dict[int, frozenset[int]]] = {name: {} for name in grammar.rules}

    def ends(node: Node, i: int, memo: dict[tuple[int, int], frozenset[int]]) -> frozenset[int]:
        key = (id(node), i)
        if key in memo:
            return memo[key]
        if isinstance(node, Empty):
            out = frozenset((i,))
        elif isinstance(node, Literal):
            out = frozenset((i + len(node.value),)) if data.startswith(node.value, i) else frozenset()
        elif isinstance(node, CharClass):
            ch = _char_at(data, i) if i < n else None
            out = frozenset((i + ch[1],)) if ch and _in(node.ranges, ch[0]) else frozenset()
        elif isinstance(node, ByteClass):
            out = frozenset((i + 1,)) if i < n and _in(node.ranges, data[i]) else frozenset()
        elif isinstance(node, Concat):
            cur = {i}
            for item in node.items:
                cur = {k for j in cur for k in ends(item, j, memo)}
                if not cur:
                    break
            out = frozenset(cur)
        elif isinstance(node, Alt):
            out = frozenset(k for item in node.items for k in ends(item, i, memo))
        elif isinstance(node, Repeat):
            result: set[int] = {i} if node.min == 0 else set()
            cur = {i}
            level = 0
            top = node.max if node.max is not None else node.min + n + 1
            while cur and level < top:
                level += 1
                cur = {k for j in cur for k in ends(node.item, j, memo)}
                if level >= node.min:
                    if node.max is None and cur <= result:
                        break
                    result |= cur
            out = frozenset(result)
        elif isinstance(node, RuleRef):
            out = chart[node.name].get(i, frozenset())
        else:  # pragma: no cover
            raise TypeError(node)
        memo[key] = out
        return out

    changed = True
    while changed:
        changed = False
        memo: dict[tuple[int, int], frozenset[int]] = {}
        for name, body in grammar.rules.items():
            row = chart[name]
            for i in range(n + 1):
                new = ends(body, i, memo)
                if new != row.get(i, frozenset()):
                    row[i] = new
                    changed = True
    return n in chart[grammar.root].get(0, frozenset())


def inline(grammar: Grammar, name: str | None = None) -> Node:
    """The root (or ``name``) with every reference expanded; the grammar must not be recursive."""

    def expand(node: Node, path: tuple[str, ...]) -> Node:
        if isinstance(node, RuleRef):
            if node.name in path:
                raise ValueError(f"rule {node.name!r} is recursive")
            return expand(grammar.rules[node.name], (*path, node.name))
        if isinstance(node, Concat):
            return concat(*(expand(x, path) for x in node.items))
        if isinstance(node, Alt):
            return alt(*(expand(x, path) for x in node.items))
        if isinstance(node, Repeat):
            return repeat(expand(node.item, path), node.min, node.max)
        return node

    start = name or grammar.root
    return expand(grammar.rules[start], (start,))
