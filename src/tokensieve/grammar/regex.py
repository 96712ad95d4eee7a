"""ECMA-262 regular expressions (the JSON Schema ``pattern`` dialect) to the regex IR.

The whole output must match the pattern (full-match semantics), so ``^`` at the
start and ``$`` at the end are accepted and mean nothing. Supported: literals
and escapes (``\\n \\t \\r \\f \\v \\0 \\/ \\\\ \\xHH \\uHHHH \\u{H...} \\cX``,
escaped punctuation), ``.``, classes with ranges and negation, ``\\d \\w \\s \\D
\\W \\S``, Unicode property escapes ``\\p{...} \\P{...}`` (General_Category
values and ``Any``/``ASCII``/``Assigned``, see
:mod:`~tokensieve.grammar.unicode_properties`), groups (capturing, ``(?:...)``, ``(?<name>...)``), alternation and
the quantifiers ``* + ? {m} {m,} {m,n}`` (lazy forms too: they match the same
strings). Following Annex B, a ``{`` that does not start a quantifier and a lone
``]`` or ``}`` are literal, and ``-`` next to a class escape inside a class
(``[\\w-.]``) is literal.

Rejected with a :class:`~tokensieve.errors.GrammarError` naming the construct and
its position: lookbehinds and lookaheads that are not at the top level (those
that are become intersections: :mod:`~tokensieve.grammar.lookahead`),
backreferences, word boundaries, the Unicode
properties without a table here (scripts, most binary properties), inline flags, unbalanced parentheses, bad ranges
and escapes, quantifiers with nothing to repeat, and anchors anywhere a full
match makes them more than decoration.

Everything is matched over Unicode scalar values; a pattern is text, so a lone
surrogate escape that is not half of a ``\\uD83D\\uDE00`` pair is an error
outside classes and matches nothing inside them.
"""

from __future__ import annotations

from ..automata.build import EMPTY_LANGUAGE, ir_to_dfa
from ..automata.dfa import ByteDFA
from ..errors import GrammarError, LimitExceeded
from ..ir.nodes import (
    MAX_CODE_POINT,
    NOTHING,
    CharClass,
    Literal,
    Node,
    Ranges,
    alt,
    char_class,
    complement_ranges,
    concat,
    normalize_ranges,
    repeat,
)
from ..limits import Limits
from .lookahead import build_lookaheads, find_lookaheads
from .unicode_properties import UnknownProperty, UnsupportedProperty, property_ranges

__all__ = ["parse_regex", "regex_to_dfa", "DIGIT", "WORD", "SPACE", "DOT"]

#: ``\d``
DIGIT = ((0x30, 0x39),)
#: ``\w``
WORD = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
#: ``\s``: ECMA-262 WhiteSpace and LineTerminator
SPACE = normalize_ranges(
    [
        (0x09, 0x0D),
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ]
)
#: ``.``: every code point but the line terminators
DOT = complement_ranges(((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)))

_CLASS_ESCAPES = {
    "d": DIGIT,
    "D": complement_ranges(DIGIT),
    "w": WORD,
    "W": complement_ranges(WORD),
    "s": SPACE,
    "S": complement_ranges(SPACE),
}
_DOT_NODE = CharClass(DOT)
#: any text: what a lookahead leaves unread after its body
_ANY_TEXT = repeat(char_class([(0, MAX_CODE_POINT)]), 0, None)
_SET_NODES = {ranges: CharClass(ranges) for ranges in _CLASS_ESCAPES.values()}
_CONTROL_ESCAPES = {"n": 0x0A, "t": 0x09, "r": 0x0D, "f": 0x0C, "v": 0x0B}
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_ID_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$")
_ID_PART = _ID_START | frozenset("0123456789")

_Atom = tuple[str, object]  # ("c", code point) or ("s", ranges)


def parse_regex(pattern: str, limits: Limits | None = None) -> Node:
    """Parse an ECMA-262 pattern into the regex IR (full-match semantics).

    Parameters
    ----------
    pattern
        The pattern text, as in a JSON Schema ``pattern`` keyword.
    limits
        Resource bounds; ``max_pattern_length``, ``max_nesting_depth`` and
        ``max_repetition`` apply here.

    Returns
    -------
    Node
        The IR; :data:`~tokensieve.ir.nodes.NOTHING` when the pattern matches
        no string (e.g. ``[]``).

    Raises
    ------
    GrammarError
        For invalid or unsupported syntax, with its position.
    LimitExceeded
        When a limit is exceeded.
    """
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
    limits = limits or Limits()
    check_pattern_length(pattern, limits)
    found = find_lookaheads(pattern)
    if found is not None:
        return build_lookaheads(
            found, lambda text: _Parser(text, limits).parse(), _ANY_TEXT, search=False, limits=limits
        )
    return _Parser(pattern, limits).parse()


def check_pattern_length(pattern: str, limits: Limits) -> None:
    """Raise :class:`~tokensieve.errors.LimitExceeded` when ``pattern`` is longer than ``max_pattern_length``."""
    if len(pattern) > limits.max_pattern_length:
        raise LimitExceeded(
            "max_pattern_length", limits.max_pattern_length, f"the pattern has {len(pattern)} characters"
        )


class _Frame:
    """One open group (the outermost frame is the pattern itself)."""

    __slots__ = (
        "open_pos",
        "start_ok",
        "alts",
        "seq",
        "consuming",
        "last",
        "last_anchor",
        "pending_end",
        "ends_anchor",
        "any_anchor",
    )

    def __init__(self, open_pos: int, start_ok: bool) -> None:
        self.open_pos = open_pos
        self.start_ok = start_ok  # nothing can precede the group's alternatives
        self.alts: list[Node] = []
        self.seq: list[Node] = []
        self.consuming = False  # the current alternative has a non-anchor item
        self.last = ""  # "", "atom", "quantified", "anchor"
        self.last_anchor: int | None = None  # anchor inside the last atom
        self.pending_end: int | None = None  # position of a '$' ending the current alternative
        self.ends_anchor: int | None = None  # some alternative ended with '$'
        self.any_anchor: int | None = None  # first anchor anywhere inside

    def end_alternative(self) -> None:
        self.alts.append(concat(*self.seq))
        if self.pending_end is not None and self.ends_anchor is None:
            self.ends_anchor = self.pending_end
        self.seq = []
        self.consuming = False
        self.last = ""
        self.last_anchor = None
        self.pending_end = None


class _Parser:
    def __init__(self, src: str, limits: Limits) -> None:
        self.src = src
        self.n = len(src)
        self.pos = 0
        self.limits = limits
        self.names: set[str] = set()

    # ------------------------------------------------------------ helpers
    def error(self, message: str, position: int, *, unsupported: bool = False) -> GrammarError:
        """A :class:`GrammarError` at ``position``; ``unsupported``: valid ECMA-262 that is not supported."""
        return GrammarError(message, self.src, position, unsupported=unsupported)

    def add_atom(self, frame: _Frame, node: Node, anchor: int | None = None) -> None:
        if frame.pending_end is not None:
            raise self.error(
                "'$' is only supported at the end of the pattern", frame.pending_end, unsupported=True
            )
        frame.seq.append(node)
        frame.consuming = True
        frame.last = "atom"
        frame.last_anchor = anchor

    # --------------------------------------------------------------- main
    def parse(self) -> Node:
        src, n = self.src, self.n
        stack = [_Frame(-1, True)]
        frame = stack[0]
        while self.pos < n:
            ch = src[self.pos]
            pos = self.pos
            if ch == "(":
                frame = self.open_group(stack)
            elif ch == ")":
                if len(stack) == 1:
                    raise self.error("unbalanced parenthesis: ')' without a matching '('", pos)
                self.pos += 1
                done = stack.pop()
                done.end_alternative()
                frame = stack[-1]
                self.add_atom(frame, alt(*done.alts), done.any_anchor)
                if done.any_anchor is not None and frame.any_anchor is None:
                    frame.any_anchor = done.any_anchor
                if done.ends_anchor is not None:
                    frame.pending_end = done.ends_anchor
            elif ch == "|":
                self.pos += 1
                frame.end_alternative()
            elif ch in "*+?":
                self.pos += 1
                self.quantify(frame, pos, 0 if ch != "+" else 1, 1 if ch == "?" else None)
            elif ch == "{":
                counts = self.read_counts()
                if counts is None:
                    self.pos += 1
                    self.add_atom(frame, Literal(b"{"))
                else:
                    self.quantify(frame, pos, *counts)
            elif ch == "^":
                self.pos += 1
                if not frame.start_ok or frame.consuming:
                    raise self.error(
                        "'^' is only supported at the start of the pattern", pos, unsupported=True
                    )
                frame.last = "anchor"
                if frame.any_anchor is None:
                    frame.any_anchor = pos
            elif ch == "$":
                self.pos += 1
                if frame.pending_end is None:
                    frame.pending_end = pos
                frame.last = "anchor"
                if frame.any_anchor is None:
                    frame.any_anchor = pos
            elif ch == "[":
                self.add_atom(frame, self.parse_class())
            elif ch == ".":
                self.pos += 1
                self.add_atom(frame, _DOT_NODE)
            elif ch == "\\":
                kind, value = self.parse_escape(in_class=False)
                if kind == "c":
                    assert isinstance(value, int)
                    self.add_atom(frame, self.char_node(value, pos))
                else:
                    assert isinstance(value, tuple)
                    known = _SET_NODES.get(value)  # \\d, \\w, \\s and their complements
                    self.add_atom(frame, known if known is not None else char_class(value))
            else:
                self.pos += 1
                cp = ord(ch)
                if 0xD800 <= cp <= 0xDFFF:
                    cp = self.combine_raw_surrogate(cp)
                    self.add_atom(frame, self.char_node(cp, pos))
                else:
                    self.add_atom(frame, Literal(ch.encode("utf-8")))
        if len(stack) > 1:
            raise self.error("unbalanced parenthesis: missing ')'", stack[-1].open_pos)
        frame.end_alternative()
        return alt(*frame.alts)

    def char_node(self, cp: int, pos: int) -> Node:
        if 0xD800 <= cp <= 0xDFFF:
            raise self.error(f"lone surrogate U+{cp:04X} cannot occur in UTF-8 text", pos)
        return Literal(chr(cp).encode("utf-8"))

    def combine_raw_surrogate(self, cp: int) -> int:
        if cp <= 0xDBFF and self.pos < self.n and 0xDC00 <= ord(self.src[self.pos]) <= 0xDFFF:
            low = ord(self.src[self.pos])
            self.pos += 1
            return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
        return cp

    # ------------------------------------------------------------- groups
    def open_group(self, stack: list[_Frame]) -> _Frame:
        src, pos = self.src, self.pos
        parent = stack[-1]
        if src.startswith("(?", pos):
            if src.startswith("(?:", pos):
                self.pos = pos + 3
            elif src.startswith("(?=", pos) or src.startswith("(?!", pos):
                raise self.error(
                    "lookahead assertions are not supported (the language would not be regular)",
                    pos,
                    unsupported=True,
                )
            elif src.startswith("(?<=", pos) or src.startswith("(?<!", pos):
                raise self.error(
                    "lookbehind assertions are not supported (the language would not be regular)",
                    pos,
                    unsupported=True,
                )
            elif src.startswith("(?<", pos):
                end = src.find(">", pos + 3)
                name = src[pos + 3 : end] if end >= 0 else ""
                if end < 0 or not _is_identifier(name):
                    raise self.error("invalid group name", pos + 3)
                if name in self.names:
                    raise self.error(f"duplicate group name {name!r}", pos + 3)
                self.names.add(name)
                self.pos = end + 1
            else:
                raise self.error(
                    f"unsupported group syntax {src[pos : pos + 3]!r} (inline flags and other group kinds are not ECMA-262)",
                    pos,
                )
        else:
            self.pos = pos + 1
        if len(stack) > self.limits.max_nesting_depth:
            raise LimitExceeded(
                "max_nesting_depth",
                self.limits.max_nesting_depth,
                f"groups nested too deeply at position {pos}",
            )
        if parent.pending_end is not None:
            raise self.error(
                "'$' is only supported at the end of the pattern", parent.pending_end, unsupported=True
            )
        frame = _Frame(pos, parent.start_ok and not parent.consuming)
        stack.append(frame)
        return frame

    # -------------------------------------------------------- quantifiers
    def read_counts(self) -> tuple[int, int | None] | None:
        """Parse ``{m}``, ``{m,}`` or ``{m,n}`` at ``self.pos``; ``None`` (position kept) if not one."""
        src, n = self.src, self.n
        i = self.pos + 1
        j = i
        while j < n and src[j] in _DIGITS:
            j += 1
        if j == i or j >= n:
            return None
        low_text = src[i:j]
        high_text: str | None = low_text
        if src[j] == ",":
            k = j + 1
            while k < n and src[k] in _DIGITS:
                k += 1
            high_text = src[j + 1 : k] or None
            j = k
        if j >= n or src[j] != "}":
            return None
        start = self.pos
        self.pos = j + 1
        low = self.count(low_text, start)
        high = None if high_text is None else self.count(high_text, start)
        if high is not None and high < low:
            raise self.error(f"numbers out of order in {{{low},{high}}} quantifier", start)
        return low, high

    def count(self, text: str, pos: int) -> int:
        limit = self.limits.max_repetition
        if len(text) > 18 or int(text) > limit:
            raise LimitExceeded("max_repetition", limit, f"repetition count {text} at position {pos}")
        return int(text)

    def quantify(self, frame: _Frame, pos: int, low: int, high: int | None) -> None:
        if frame.last != "atom":
            what = (
                "a quantifier"
                if frame.last == "quantified"
                else ("an anchor" if frame.last == "anchor" else "")
            )
            raise self.error("nothing to repeat" + (f" (after {what})" if what else ""), pos)
        if self.pos < self.n and self.src[self.pos] == "?":
            self.pos += 1  # lazy: same language
        if frame.last_anchor is not None and (high is None or high > 1):
            raise self.error(
                "an anchor inside a repeated group is not supported", frame.last_anchor, unsupported=True
            )
        frame.seq[-1] = repeat(frame.seq[-1], low, high)
        frame.last = "quantified"

    # ------------------------------------------------------------ escapes
    def parse_escape(self, *, in_class: bool) -> _Atom:
        """Parse the escape at ``self.pos`` (a backslash); returns a code point or a set."""
        src, n = self.src, self.n
        start = self.pos
        if start + 1 >= n:
            raise self.error("the pattern ends with a lone backslash", start)
        c = src[start + 1]
        self.pos = start + 2
        if c in _CONTROL_ESCAPES:
            return ("c", _CONTROL_ESCAPES[c])
        if c in _CLASS_ESCAPES:
            return ("s", _CLASS_ESCAPES[c])
        if c == "0":
            if self.pos < n and src[self.pos] in _DIGITS:
                raise self.error("octal escapes are not supported", start)
            return ("c", 0)
        if c in _DIGITS:
            raise self.error(
                f"backreferences (\\{c}) are not supported (the language would not be regular)",
                start,
                unsupported=True,
            )
        if c == "b":
            if in_class:
                return ("c", 0x08)
            raise self.error("word boundary assertions (\\b) are not supported", start, unsupported=True)
        if c == "B":
            if in_class:
                raise self.error("\\B is not allowed in a character class", start)
            raise self.error("word boundary assertions (\\B) are not supported", start, unsupported=True)
        if c == "k":
            raise self.error(
                "backreferences (\\k<name>) are not supported (the language would not be regular)",
                start,
                unsupported=True,
            )
        if c in "pP":
            return ("s", self.parse_property(c, start))
        if c == "x":
            digits = src[self.pos : self.pos + 2]
            if len(digits) != 2 or not all(d in _HEX for d in digits):
                raise self.error("\\x must be followed by two hex digits", start)
            self.pos += 2
            return ("c", int(digits, 16))
        if c == "u":
            return ("c", self.parse_unicode_escape(start))
        if c == "c":
            letter = src[self.pos] if self.pos < n else ""
            if not (letter.isascii() and letter.isalpha()):
                raise self.error("\\c must be followed by a letter", start)
            self.pos += 1
            return ("c", ord(letter) % 32)
        if c.isascii() and c.isalnum():
            raise self.error(f"unknown escape \\{c}", start)
        cp = ord(c)
        if 0xD800 <= cp <= 0xDFFF:
            cp = self.combine_raw_surrogate(cp)
        return ("c", cp)

    def parse_property(self, c: str, start: int) -> Ranges:
        """The code points of ``\\p{...}`` (``c`` is ``p``) or ``\\P{...}`` (``P``) at ``start``."""
        src = self.src
        end = src.find("}", self.pos)
        if not src.startswith("{", self.pos) or end < 0:
            raise self.error(f"\\{c} must be followed by a property in braces, as \\{c}{{Letter}}", start)
        text = src[self.pos + 1 : end]
        try:
            ranges = property_ranges(text)
        except UnknownProperty as exc:
            raise self.error(f"bad Unicode property escape \\{c}{{{text}}}: {exc}", start) from None
        except UnsupportedProperty as exc:
            raise self.error(
                f"Unicode property escape \\{c}{{{text}}}: {exc}", start, unsupported=True
            ) from None
        self.pos = end + 1
        return ranges if c == "p" else complement_ranges(ranges)

    def parse_unicode_escape(self, start: int) -> int:
        src = self.src
        if src.startswith("{", self.pos):
            end = src.find("}", self.pos)
            digits = src[self.pos + 1 : end] if end >= 0 else ""
            if not digits or not all(d in _HEX for d in digits):
                raise self.error("\\u{...} must hold hex digits", start)
            value = int(digits[-8:], 16) if len(digits) <= 8 else 0x110000
            if value > 0x10FFFF:
                raise self.error("\\u{...} is beyond U+10FFFF", start)
            self.pos = end + 1
            return value
        digits = src[self.pos : self.pos + 4]
        if len(digits) != 4 or not all(d in _HEX for d in digits):
            raise self.error("\\u must be followed by four hex digits or {...}", start)
        self.pos += 4
        value = int(digits, 16)
        if 0xD800 <= value <= 0xDBFF and src.startswith("\\u", self.pos):
            low = src[self.pos + 2 : self.pos + 6]
            if len(low) == 4 and all(d in _HEX for d in low) and 0xDC00 <= int(low, 16) <= 0xDFFF:
                self.pos += 6
                return 0x10000 + ((value - 0xD800) << 10) + (int(low, 16) - 0xDC00)
        return value

    # ------------------------------------------------------------ classes
    def parse_class(self) -> Node:
        src, n = self.src, self.n
        open_pos = self.pos
        self.pos += 1
        negate = self.pos < n and src[self.pos] == "^"
        if negate:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if self.pos >= n:
                raise self.error("unterminated character class", open_pos)
            if src[self.pos] == "]":
                self.pos += 1
                break
            a_pos = self.pos
            a = self.class_atom()
            if self.pos + 1 < n and src[self.pos] == "-" and src[self.pos + 1] != "]":
                self.pos += 1
                b = self.class_atom()
                if a[0] == "c" and b[0] == "c":
                    lo, hi = a[1], b[1]
                    assert isinstance(lo, int) and isinstance(hi, int)
                    if lo > hi:
                        raise self.error("range out of order in character class", a_pos)
                    ranges.append((lo, hi))
                else:  # Annex B: a class escape as a range end makes '-' literal
                    _add_atom(ranges, a)
                    ranges.append((0x2D, 0x2D))
                    _add_atom(ranges, b)
            else:
                _add_atom(ranges, a)
        if not ranges and not negate:
            return NOTHING
        return char_class(ranges, negate=negate)

    def class_atom(self) -> _Atom:
        ch = self.src[self.pos]
        if ch == "\\":
            return self.parse_escape(in_class=True)
        self.pos += 1
        cp = ord(ch)
        if 0xD800 <= cp <= 0xDFFF:
            cp = self.combine_raw_surrogate(cp)
        return ("c", cp)


def _add_atom(ranges: list[tuple[int, int]], atom: _Atom) -> None:
    if atom[0] == "c":
        cp = atom[1]
        assert isinstance(cp, int)
        ranges.append((cp, cp))
    else:
        ranges.extend(atom[1])  # type: ignore[arg-type]


def _is_identifier(name: str) -> bool:
    return bool(name) and name[0] in _ID_START and all(c in _ID_PART for c in name)


def regex_to_dfa(pattern: str, limits: Limits | None = None) -> ByteDFA:
    """Compile an ECMA-262 pattern (full-match semantics) to a minimal byte DFA.

    Parameters
    ----------
    pattern
        The pattern (see :func:`parse_regex`).
    limits
        Resource bounds.

    Returns
    -------
    ByteDFA
        Minimal and trimmed; accepts exactly the UTF-8 encodings of the strings
        the pattern matches in full.

    Raises
    ------
    GrammarError
        For invalid or unsupported syntax, or a pattern that matches no string.
    LimitExceeded
        When a limit is exceeded.
    """
    limits = limits or Limits()
    node = parse_regex(pattern, limits)
    try:
        return ir_to_dfa(node, limits)
    except GrammarError as exc:
        if exc.source is None and exc.message == EMPTY_LANGUAGE:
            raise GrammarError(EMPTY_LANGUAGE, pattern) from None
        raise
