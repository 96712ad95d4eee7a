"""The IR written in a grammar notation, for reading what a constraint was lowered to.

``str(grammar)`` (:class:`~tokensieve.ir.grammar.Grammar`) writes one rule per
line, the root first, then the others in the order they are first referenced::

    root ::= "{" ws "\\"id\\":" ws int ws "}"
    int ::= "-"? ("0" | [1-9] [0-9]*)

Literals are written as JSON-style strings of their text (``\\xNN`` for bytes
that are not UTF-8); character classes as ``[...]`` over code points, written
``[^...]`` where the complement is shorter; byte classes as ``b[...]`` over
byte values; repetitions as ``?``, ``*``, ``+`` and ``{m,n}``; an embedded
automaton, which has no shorter spelling, as ``<automaton N states #digest>``.
``[]`` matches nothing, ``""`` the empty string. The text is for people: no
parser reads it back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from .nodes import (
    MAX_CODE_POINT,
    SURROGATES,
    Alt,
    Automaton,
    ByteClass,
    CharClass,
    Concat,
    Empty,
    Literal,
    Node,
    Repeat,
    RuleRef,
    complement_ranges,
)

__all__ = ["grammar_text", "node_text"]

_ESCAPES = {ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r", ord('"'): '\\"', ord("\\"): "\\\\"}
_CLASS_ESCAPES = {ord("]"): "\\]", ord("["): "\\[", ord("^"): "\\^", ord("-"): "\\-", ord("\\"): "\\\\"}

# binding strength: an alternation binds loosest, then a sequence, then a repetition's operand
_ALT, _SEQ, _ATOM = 0, 1, 2


def _char(cp: int, in_class: bool) -> str:
    if in_class and cp in _CLASS_ESCAPES:
        return _CLASS_ESCAPES[cp]
    if cp in _ESCAPES and not (in_class and cp == ord('"')):
        return _ESCAPES[cp]
    if cp < 0x20 or cp == 0x7F or 0x80 <= cp < 0xA0 or SURROGATES[0] <= cp <= SURROGATES[1]:
        return f"\\u{cp:04x}" if cp > 0xFF else f"\\x{cp:02x}"
    return chr(cp)


def _literal(data: bytes) -> str:
    out = []
    i = 0
    while i < len(data):
        for width in (1, 2, 3, 4):  # the longest valid UTF-8 character at i, else one raw byte
            try:
                ch = data[i : i + width].decode("utf-8")
            except UnicodeDecodeError:
                continue
            out.append(_char(ord(ch), False))
            i += width
            break
        else:
            out.append(f"\\x{data[i]:02x}")
            i += 1
    return '"' + "".join(out) + '"'


def _ranges(ranges: tuple[tuple[int, int], ...], byte: bool) -> str:
    def spell(rs: tuple[tuple[int, int], ...]) -> str:
        parts = []
        for lo, hi in rs:
            a = f"\\x{lo:02x}" if byte and lo > 0x7E else _char(lo, True)
            b = f"\\x{hi:02x}" if byte and hi > 0x7E else _char(hi, True)
            parts.append(a if lo == hi else f"{a}{b}" if hi == lo + 1 else f"{a}-{b}")
        return "".join(parts)

    prefix = "b" if byte else ""
    plain = spell(ranges)
    if ranges:
        complement = complement_ranges(ranges, 0xFF if byte else MAX_CODE_POINT)
        if not byte:  # the surrogates are never characters: leave them out of the complement
            complement = tuple(r for lo, hi in complement for r in _without_surrogates(lo, hi))
        negated = spell(complement)
        if len(negated) < len(plain):
            return f"{prefix}[^{negated}]"
    return f"{prefix}[{plain}]"


def _without_surrogates(lo: int, hi: int) -> list[tuple[int, int]]:
    s_lo, s_hi = SURROGATES
    if hi < s_lo or lo > s_hi:
        return [(lo, hi)]
    return [r for r in ((lo, s_lo - 1), (s_hi + 1, hi)) if r[0] <= r[1]]


def _text(node: Node, context: int) -> str:
    if isinstance(node, Empty):
        return '""'
    if isinstance(node, Literal):
        return _literal(node.value)
    if isinstance(node, CharClass):
        return _ranges(node.ranges, False)
    if isinstance(node, ByteClass):
        return _ranges(node.ranges, True)
    if isinstance(node, RuleRef):
        return node.name
    if isinstance(node, Automaton):
        return f"<automaton {node.num_states} states #{node.digest[:8]}>"
    if isinstance(node, Concat):
        text = " ".join(_text(item, _SEQ) for item in node.items)
        return f"({text})" if context > _SEQ else text
    if isinstance(node, Alt):
        text = " | ".join(_text(item, _SEQ) for item in node.items)
        return f"({text})" if context > _ALT else text
    if isinstance(node, Repeat):
        m, n = node.min, node.max
        op = {(0, 1): "?", (0, None): "*", (1, None): "+"}.get((m, n))
        if op is None:
            op = f"{{{m}}}" if m == n else f"{{{m},}}" if n is None else f"{{{m},{n}}}"
        return _text(node.item, _ATOM) + op
    raise TypeError(f"not an IR node: {type(node).__name__}")


def node_text(node: Node) -> str:
    """``node`` in the grammar notation of this module."""
    return _text(node, _ALT)


def grammar_text(rules: Mapping[str, Node], root: str, references: Callable[[str], Sequence[str]]) -> str:
    """The rules as lines ``name ::= body``: the root first, then in order of first reference.

    ``references(name)`` names the rules that rule ``name`` references, in order.

    A body that is an alternation writes each alternative on a line of its own.
    Rules no other rule reaches come last, in their order in ``rules``.
    """
    order: dict[str, None] = {}
    todo = [root]
    while todo:
        name = todo.pop(0)
        if name in order or name not in rules:
            continue
        order[name] = None
        todo.extend(references(name))
    order.update(dict.fromkeys(rules))
    lines = []
    for name in order:
        body = rules[name]
        if isinstance(body, Alt):
            pad = " " * (len(name) + 3)
            alts = [_text(item, _SEQ) for item in body.items]
            lines.append(f"{name} ::= {alts[0]}" + "".join(f"\n{pad}| {a}" for a in alts[1:]))
        else:
            lines.append(f"{name} ::= {node_text(body)}")
    return "\n".join(lines)
