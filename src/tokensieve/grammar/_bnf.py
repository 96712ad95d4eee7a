"""The parser shared by the BNF-style syntaxes: llama.cpp GBNF and xgrammar's W3C-style EBNF.

Both write ``name ::= body`` rules whose bodies use string literals, character
classes, grouping, ``|`` and the postfix quantifiers ``* + ? {m,n}``. They
differ in details (escape sets, rule-name characters, comment styles,
lookahead assertions), which a :class:`Dialect` records.

Where a rule ends: a name followed by ``::=`` starts the next rule, and it must
be the first thing on its line. Every other line break is plain white space.
llama.cpp's own parser is stricter (outside parentheses it ends a rule at a
line break unless the line ends with ``::=`` or ``|``), but on every grammar it
accepts the two readings agree, because each of its rule-ending line breaks is
followed by ``name ::=``. xgrammar's lexer decides exactly as here.

The parser is iterative (an explicit stack of open groups), so nesting depth is
bounded by :attr:`Limits.max_nesting_depth` and never by Python's recursion
limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import GrammarError, LimitExceeded
from ..ir.grammar import Grammar
from ..ir.nodes import (
    MAX_CODE_POINT,
    NOTHING,
    RuleRef,
    alt,
    char_class,
    complement_ranges,
    concat,
    literal,
    repeat,
)
from ..ir.nodes import Node as IRNode
from ..limits import Limits
from .regex import DIGIT, SPACE, WORD

__all__ = ["Dialect", "parse_bnf"]

_ANY = char_class([(0, MAX_CODE_POINT)])
_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")
_SET_ESCAPES: dict[str, tuple[tuple[int, int], ...]] = {"d": DIGIT, "w": WORD, "s": SPACE}


@dataclass(frozen=True)
class Dialect:
    """What distinguishes one BNF-style syntax from another.

    Attributes
    ----------
    label
        Name used in error messages (``"GBNF"``, ``"EBNF"``).
    name_start, name_chars
        Characters that may start and continue a rule name.
    escapes
        Single-character escapes valid in strings and classes (``"n"`` to 10 ...).
    class_escapes
        Extra single-character escapes valid only inside classes.
    hex_any_length
        ``\\x`` takes one or more hex digits (xgrammar) instead of exactly two.
    single_quotes
        ``'...'`` is a string literal too.
    block_comments
        ``/* ... */`` and ``(* ... *)`` are comments (``#`` always is).
    newline_in_literals
        A raw line break may appear inside a string or class.
    set_escapes
        ``\\d \\w \\s`` (and negations) are allowed inside classes.
    lookahead
        A rule body may end with a lookahead assertion ``(= ...)``.
    empty_class
        ``[]`` is allowed and matches nothing (otherwise it is an error).
    token_refs
        ``<...>`` and ``!<...>`` are token references (recognised to be rejected).
    dot_is_name
        ``.`` is a rule-name character; a name that is exactly ``.`` still means any character.
    macros
        Names that, followed by ``(``, are macros of the dialect (recognised to be rejected).
    rule_attributes
        ``name[...] ::=`` is the dialect's rule-attribute syntax (recognised to be rejected).
    """

    label: str
    name_start: frozenset[str]
    name_chars: frozenset[str]
    escapes: Mapping[str, int]
    class_escapes: Mapping[str, int] = field(default_factory=dict)
    hex_any_length: bool = False
    single_quotes: bool = False
    block_comments: bool = False
    newline_in_literals: bool = False
    set_escapes: bool = False
    lookahead: bool = False
    empty_class: bool = False
    token_refs: bool = False
    dot_is_name: bool = False
    macros: frozenset[str] = frozenset()
    rule_attributes: bool = False


def parse_bnf(text: str, dialect: Dialect, root: str, limits: Limits | None) -> Grammar:
    """Parse ``text`` in ``dialect`` into a :class:`Grammar`.

    Parameters
    ----------
    text
        The grammar source.
    dialect
        Syntax details.
    root
        Name of the start rule.
    limits
        ``max_pattern_length`` bounds the text, ``max_nesting_depth`` the
        parentheses and ``max_repetition`` the ``{m,n}`` counts.

    Returns
    -------
    Grammar

    Raises
    ------
    GrammarError
        With the line and column of the problem.
    LimitExceeded
        When a limit is exceeded.
    """
    if not isinstance(text, str):
        raise TypeError(f"grammar text must be a str, not {type(text).__name__}")
    limits = limits or Limits()
    if len(text) > limits.max_pattern_length:
        raise LimitExceeded(
            "max_pattern_length", limits.max_pattern_length, f"the grammar has {len(text)} characters"
        )
    return _Parser(text, dialect, limits).parse(root)


class _Frame:
    """One open group; the outermost frame is the rule body."""

    __slots__ = ("open_pos", "alts", "seq", "lookahead")

    def __init__(self, open_pos: int, lookahead: bool = False) -> None:
        self.open_pos = open_pos
        self.alts: list[IRNode] = []
        self.seq: list[IRNode] = []
        self.lookahead = lookahead

    def end_alternative(self) -> None:
        self.alts.append(concat(*self.seq))
        self.seq = []

    def finish(self) -> IRNode:
        self.end_alternative()
        return alt(*self.alts)


class _Parser:
    def __init__(self, src: str, dialect: Dialect, limits: Limits) -> None:
        self.src = src
        self.n = len(src)
        self.pos = 0
        self.d = dialect
        self.limits = limits
        self.refs: dict[str, int] = {}  # rule name -> position of its first reference

    def error(self, message: str, position: int) -> GrammarError:
        return GrammarError(message, self.src, position)

    # ------------------------------------------------------------ spacing
    def skip(self, i: int) -> int:
        """Index of the first character at or after ``i`` that is not white space or a comment."""
        src, n = self.src, self.n
        while i < n:
            c = src[i]
            if c in " \t\r\n":
                i += 1
            elif c == "#":
                while i < n and src[i] not in "\r\n":
                    i += 1
            elif self.d.block_comments and (src.startswith("/*", i) or src.startswith("(*", i)):
                close = "*/" if c == "/" else "*)"
                end = src.find(close, i + 2)
                if end < 0:
                    raise self.error("unterminated comment", i)
                i = end + 2
            else:
                break
        return i

    def name_end(self, i: int) -> int:
        chars = self.d.name_chars
        src, n = self.src, self.n
        while i < n and src[i] in chars:
            i += 1
        return i

    def starts_rule(self, name_end: int) -> bool:
        return self.src.startswith("::=", self.skip(name_end))

    def at_line_start(self, i: int) -> bool:
        k = i - 1
        while k >= 0 and self.src[k] in " \t":
            k -= 1
        return k < 0 or self.src[k] in "\r\n"

    # -------------------------------------------------------------- rules
    def parse(self, root: str) -> Grammar:
        rules: dict[str, IRNode] = {}
        self.pos = self.skip(0)
        if self.pos >= self.n:
            raise self.error(f"the {self.d.label} grammar defines no rules", self.pos)
        while self.pos < self.n:
            name_pos = self.pos
            if self.src[name_pos] not in self.d.name_start:
                raise self.error(f"expected a rule name, found {self.src[name_pos]!r}", name_pos)
            end = self.name_end(name_pos)
            name = self.src[name_pos:end]
            self.pos = self.skip(end)
            if self.d.rule_attributes and self.src.startswith("[", end):
                raise self.error("rule attributes (name[...] ::=) are not supported", end)
            if not self.src.startswith("::=", self.pos):
                raise self.error(f"expected '::=' after the rule name {name!r}", self.pos)
            if name in rules:
                raise self.error(f"rule {name!r} is defined more than once", name_pos)
            self.pos += 3
            rules[name] = self.parse_body()
        for name, pos in self.refs.items():
            if name not in rules:
                raise self.error(f"undefined rule {name!r}", pos)
        if root not in rules:
            raise self.error(f"the grammar has no rule named {root!r} to start from", 0)
        return Grammar(rules, root)

    def parse_body(self) -> IRNode:
        src, n, d = self.src, self.n, self.d
        stack = [_Frame(-1)]
        frame = stack[0]
        lookahead_end: int | None = None  # set once the rule's lookahead assertion is closed
        while True:
            self.pos = pos = self.skip(self.pos)
            if pos >= n:
                break
            c = src[pos]
            if c in d.name_start:
                end = self.name_end(pos)
                if self.starts_rule(end):
                    if len(stack) > 1:
                        raise self.error("missing ')' before the next rule", stack[-1].open_pos)
                    if not self.at_line_start(pos):
                        raise self.error("a rule definition must start on a new line", pos)
                    break
            if lookahead_end is not None:
                raise self.error("a lookahead assertion must be the last part of a rule", pos)
            if c in d.name_start:
                name = src[pos:end]
                self.pos = end
                if name == "." and d.dot_is_name:
                    frame.seq.append(_ANY)
                    continue
                if name in d.macros and src.startswith("(", self.skip(end)):
                    raise self.error(f"the {name}(...) macro is not supported", pos)
                self.refs.setdefault(name, pos)
                frame.seq.append(RuleRef(name))
            elif c == '"' or (c == "'" and d.single_quotes):
                frame.seq.append(self.parse_string(c))
            elif c == "[":
                frame.seq.append(self.parse_class())
            elif c == ".":
                self.pos += 1
                frame.seq.append(_ANY)
            elif c == "(":
                is_lookahead = d.lookahead and src.startswith("(=", pos)
                if is_lookahead and len(stack) > 1:
                    raise self.error("a lookahead assertion is only allowed at the end of a rule", pos)
                if len(stack) > self.limits.max_nesting_depth:
                    raise LimitExceeded(
                        "max_nesting_depth",
                        self.limits.max_nesting_depth,
                        f"groups nested too deeply at line {src.count(chr(10), 0, pos) + 1}",
                    )
                self.pos += 2 if is_lookahead else 1
                frame = _Frame(pos, is_lookahead)
                stack.append(frame)
            elif c == ")":
                if len(stack) == 1:
                    raise self.error("unbalanced parenthesis: ')' without a matching '('", pos)
                self.pos += 1
                done = stack.pop()
                frame = stack[-1]
                node = done.finish()
                if done.lookahead:
                    lookahead_end = pos  # parsed and checked, then ignored: see the ebnf module
                else:
                    frame.seq.append(node)
            elif c == "|":
                self.pos += 1
                frame.end_alternative()
            elif c in "*+?":
                self.pos += 1
                self.quantify(frame, pos, 1 if c == "+" else 0, 1 if c == "?" else None)
            elif c == "{":
                low, high = self.parse_counts()
                self.quantify(frame, pos, low, high)
            elif d.token_refs and (c == "<" or (c == "!" and src.startswith("<", pos + 1))):
                raise self.error("token references (<...>) are not supported", pos)
            else:
                raise self.error(f"unexpected character {c!r}", pos)
        if len(stack) > 1:
            raise self.error("unbalanced parenthesis: missing ')'", stack[-1].open_pos)
        return frame.finish()

    # -------------------------------------------------------- quantifiers
    def quantify(self, frame: _Frame, pos: int, low: int, high: int | None) -> None:
        if not frame.seq:
            raise self.error("nothing to repeat before this quantifier", pos)
        frame.seq[-1] = repeat(frame.seq[-1], low, high)

    def parse_counts(self) -> tuple[int, int | None]:
        """Parse ``{m}``, ``{m,}``, ``{m,n}`` or ``{,n}`` at ``self.pos``."""
        start = self.pos
        i = self.skip(start + 1)
        low_text, i = self.read_int(i)
        i = self.skip(i)
        high_text: str | None
        if i < self.n and self.src[i] == ",":
            i = self.skip(i + 1)
            high_text, i = self.read_int(i)
            high_text = high_text or None
            i = self.skip(i)
            if not low_text and high_text is None:
                raise self.error("a repetition needs at least one bound", start)
        elif not low_text:
            raise self.error("expected a number after '{'", i)
        else:
            high_text = low_text
        if i >= self.n or self.src[i] != "}":
            raise self.error("expected '}' to close the repetition", i)
        self.pos = i + 1
        low = self.count(low_text or "0", start)
        high = None if high_text is None else self.count(high_text, start)
        if high is not None and high < low:
            raise self.error(
                f"bad repetition bounds {{{low},{high}}}: the minimum exceeds the maximum", start
            )
        return low, high

    def read_int(self, i: int) -> tuple[str, int]:
        j = i
        while j < self.n and self.src[j] in _DIGITS:
            j += 1
        return self.src[i:j], j

    def count(self, text: str, pos: int) -> int:
        limit = self.limits.max_repetition
        if len(text) > 18 or int(text) > limit:
            raise LimitExceeded("max_repetition", limit, f"repetition count {text} at position {pos}")
        return int(text)

    # ------------------------------------------------- strings and classes
    def parse_string(self, quote: str) -> IRNode:
        src, n = self.src, self.n
        start = self.pos
        i = start + 1
        out: list[str] = []
        while True:
            if i >= n:
                raise self.error("unterminated string literal", start)
            ch = src[i]
            if ch == quote:
                break
            if ch in "\r\n" and not self.d.newline_in_literals:
                raise self.error("unterminated string literal (a string cannot span lines)", start)
            if ch == "\\":
                esc = i
                value, i = self.parse_escape(i, in_class=False)
                assert isinstance(value, int)
                out.append(self.char(value, esc))
            else:
                out.append(self.char(ord(ch), i))
                i += 1
        self.pos = i + 1
        return literal("".join(out))

    def char(self, cp: int, pos: int) -> str:
        if 0xD800 <= cp <= 0xDFFF:
            raise self.error(f"lone surrogate U+{cp:04X} cannot occur in UTF-8 text", pos)
        return chr(cp)

    def parse_escape(self, i: int, *, in_class: bool) -> tuple[int | tuple[tuple[int, int], ...], int]:
        """Parse the escape at ``i`` (a backslash): a code point, or a set of ranges in a class."""
        src, d = self.src, self.d
        if i + 1 >= self.n:
            raise self.error("the grammar ends with a lone backslash", i)
        e = src[i + 1]
        if e in d.escapes:
            return d.escapes[e], i + 2
        if in_class and e in d.class_escapes:
            return d.class_escapes[e], i + 2
        if in_class and d.set_escapes and e.lower() in _SET_ESCAPES:
            ranges = _SET_ESCAPES[e.lower()]
            return (complement_ranges(ranges) if e.isupper() else ranges), i + 2
        if e in "xuU":
            if e == "x" and d.hex_any_length:
                j = i + 2
                while j < self.n and src[j] in _HEX:
                    j += 1
                digits = src[i + 2 : j]
                if not digits:
                    raise self.error("\\x must be followed by hex digits", i)
            else:
                width = {"x": 2, "u": 4, "U": 8}[e]
                digits = src[i + 2 : i + 2 + width]
                if len(digits) != width or not all(h in _HEX for h in digits):
                    raise self.error(f"\\{e} must be followed by {width} hex digits", i)
                j = i + 2 + width
            value = int(digits, 16) if len(digits) <= 8 else MAX_CODE_POINT + 1
            if value > MAX_CODE_POINT:
                raise self.error(f"\\{e}{digits} is beyond U+10FFFF", i)
            return value, j
        raise self.error(f"unknown escape \\{e}", i)

    def parse_class(self) -> IRNode:
        src, n = self.src, self.n
        open_pos = self.pos
        i = open_pos + 1
        negate = i < n and src[i] == "^"
        if negate:
            i += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if i >= n:
                raise self.error("unterminated character class", open_pos)
            ch = src[i]
            if ch == "]":
                i += 1
                break
            if ch in "\r\n" and not self.d.newline_in_literals:
                raise self.error("unterminated character class (a class cannot span lines)", open_pos)
            a_pos = i
            a, i = self.class_atom(i)
            if i + 1 < n and src[i] == "-" and src[i + 1] != "]":
                b, i = self.class_atom(i + 1)
                if not (isinstance(a, int) and isinstance(b, int)):
                    raise self.error("a class escape cannot be the end of a range", a_pos)
                if a > b:
                    raise self.error("range out of order in character class", a_pos)
                ranges.append((a, b))
            elif isinstance(a, int):
                ranges.append((a, a))
            else:
                ranges.extend(a)
        self.pos = i
        if not ranges and not negate:
            if self.d.empty_class:
                return NOTHING
            raise self.error("empty character class '[]' matches nothing", open_pos)
        return char_class(ranges, negate=negate)

    def class_atom(self, i: int) -> tuple[int | tuple[tuple[int, int], ...], int]:
        ch = self.src[i]
        if ch == "\\":
            value, j = self.parse_escape(i, in_class=True)
            if isinstance(value, int):
                self.char(value, i)
            return value, j
        return ord(self.char(ord(ch), i)), i + 1
