"""Python ``re`` patterns (the dialect of Lark terminals) to the regex IR.

The pattern is rewritten into an equivalent ECMA-262 pattern and handed to
:func:`tokensieve.grammar.regex.parse_regex`, which does the structural work
(alternation, groups, quantifiers, their limits and errors). The rewrite gives
the pieces whose meaning differs between the two dialects their Python meaning:

- ``.`` excludes only ``\\n`` (everything with the ``s`` flag);
- ``\\d \\w \\s`` are Unicode-aware as in Python (``str.isdecimal``,
  ``str.isalnum`` or ``_``, ``str.isspace``); ASCII with the ``a`` flag;
- classes follow Python's rules (``[]a]`` holds ``]``), escapes are Python's
  (``\\a``, ``\\N{...}``, octal), and ``{,n}`` is ``{0,n}``;
- the ``i`` flag adds to each character and range every case variant that
  Python's ``re`` equates with it (simple case folding plus ``re``'s few extra
  equivalences; ``\\d \\w \\s`` are not folded, as in ``re``), ``x`` drops
  white space and ``#`` comments, ``m`` and ``u`` change nothing here; flags may
  be global (``(?i)``) or scoped (``(?i:...)``).

Anchors (``^ $ \\A \\Z \\b \\B``), lookaround, backreferences, atomic groups,
possessive quantifiers and conditionals are rejected: inside a terminal of a
scannerless grammar they would depend on the surrounding text.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import unicodedata
from collections.abc import Callable

from ..errors import GrammarError, LimitExceeded
from ..ir.nodes import (
    MAX_CODE_POINT,
    Node,
    normalize_ranges,
)
from ..limits import Limits
from .regex import parse_regex

__all__ = ["parse_python_regex", "case_variants", "case_close"]

Ranges = tuple[tuple[int, int], ...]

_HEX = frozenset("0123456789abcdefABCDEF")
_OCT = frozenset("01234567")
_DIGITS = frozenset("0123456789")
_VERBOSE_SPACE = frozenset(" \t\n\r\v\f")
_SIMPLE_ESCAPES = {"a": 0x07, "f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_FLAG_LETTERS = frozenset("aiLmsux")
#: The rewritten pattern may be this many times longer than ``max_pattern_length``.
_EXPANSION = 8
_ASCII_SETS: dict[str, Ranges] = {
    "d": ((0x30, 0x39),),
    "w": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    "s": ((0x09, 0x0D), (0x20, 0x20)),
}


# --------------------------------------------------------------- Unicode
def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


@functools.cache
def _unicode_set(kind: str) -> Ranges:
    """Python's Unicode ``\\d``, ``\\w`` or ``\\s`` as code point ranges (computed once)."""
    pred: Callable[[str], bool]
    if kind == "d":
        pred = str.isdecimal
    elif kind == "w":
        pred = _is_word
    else:
        pred = str.isspace
    out: list[tuple[int, int]] = []
    start = -1
    for cp in range(MAX_CODE_POINT + 2):
        inside = cp <= MAX_CODE_POINT and not 0xD800 <= cp <= 0xDFFF and pred(chr(cp))
        if inside and start < 0:
            start = cp
        elif not inside and start >= 0:
            out.append((start, cp - 1))
            start = -1
    return tuple(out)


@functools.cache
def _case_table() -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """Sorted cased code points and, for each, every code point equal to it ignoring case."""
    parent: dict[int, int] = {}
    touched: set[int] = set()
    by_fold: dict[str, int] = {}

    def find(x: int) -> int:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    def union(a: int, b: int) -> None:
        touched.update((a, b))
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for cp in range(MAX_CODE_POINT + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        low, up = c.lower(), c.upper()
        if len(low) == 1 and low != c:
            union(cp, ord(low))
        elif cp == 0x130:  # its simple lower-case mapping is 'i' (the full one adds U+0307)
            union(cp, 0x69)
        if up != c and len(up) == 1:
            union(cp, ord(up))
        folded = c.casefold()
        if len(folded) > 1:  # re also equates a few characters with the same full case folding
            union(cp, by_fold.setdefault(folded, cp))
    groups: dict[int, list[int]] = {}
    for cp in touched:
        groups.setdefault(find(cp), []).append(cp)
    keys: list[int] = []
    variants: list[tuple[int, ...]] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort()
        for cp in members:
            keys.append(cp)
            variants.append(tuple(members))
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return tuple(keys[i] for i in order), tuple(variants[i] for i in order)


def case_variants(cp: int, *, ascii_only: bool = False) -> tuple[int, ...]:
    """Every code point that Python's ``re`` with ``IGNORECASE`` treats as equal to ``cp``.

    Parameters
    ----------
    cp
        A code point.
    ascii_only
        Fold ASCII letters only (the ``a`` flag).

    Returns
    -------
    tuple of int
        Sorted, including ``cp`` itself.
    """
    if ascii_only:
        if 0x41 <= cp <= 0x5A or 0x61 <= cp <= 0x7A:
            return tuple(sorted({cp, cp ^ 0x20}))
        return (cp,)
    keys, variants = _case_table()
    i = bisect.bisect_left(keys, cp)
    if i < len(keys) and keys[i] == cp:
        return variants[i]
    return (cp,)


def case_close(ranges: Ranges, *, ascii_only: bool = False) -> Ranges:
    """Add to ``ranges`` every case variant of their members (see :func:`case_variants`).

    Parameters
    ----------
    ranges
        Normalised code point ranges.
    ascii_only
        Fold ASCII letters only.

    Returns
    -------
    tuple of (int, int)
        Normalised ranges.
    """
    extra: list[tuple[int, int]] = list(ranges)
    if ascii_only:
        for lo, hi in ranges:
            for a, b in ((0x41, 0x5A), (0x61, 0x7A)):
                x, y = max(lo, a), min(hi, b)
                if x <= y:
                    extra.append((x ^ 0x20, y ^ 0x20))
        return normalize_ranges(extra)
    keys, variants = _case_table()
    for lo, hi in ranges:
        i = bisect.bisect_left(keys, lo)
        j = bisect.bisect_right(keys, hi)
        for k in range(i, j):
            extra.extend((v, v) for v in variants[k])
    return normalize_ranges(extra)


# ----------------------------------------------------------- translator
def parse_python_regex(
    pattern: str,
    flags: str = "",
    *,
    source: str | None = None,
    where: list[int] | None = None,
    limits: Limits | None = None,
) -> Node:
    """Parse a Python ``re`` pattern into the regex IR (full-match semantics).

    Parameters
    ----------
    pattern
        The pattern.
    flags
        Flag letters from ``aimsux`` (``L`` is rejected, as Python does for text patterns).
    source, where
        For error positions: the text the pattern was taken from, and for each
        character of ``pattern`` its offset in ``source``. Without them errors
        point into ``pattern``.
    limits
        Resource bounds, as for :func:`~tokensieve.grammar.regex.parse_regex`.

    Returns
    -------
    Node

    Raises
    ------
    GrammarError
        For invalid or unsupported syntax.
    LimitExceeded
        When a limit is exceeded.
    """
    limits = limits or Limits()
    if len(pattern) > limits.max_pattern_length:
        raise LimitExceeded(
            "max_pattern_length", limits.max_pattern_length, f"the pattern has {len(pattern)} characters"
        )
    if source is None or where is None:
        source, where = pattern, list(range(len(pattern)))
    tr = _Translator(pattern, where, source, flags, limits)
    text, out_map = tr.translate()
    # the rewrite spells sets out in full, so it may be longer than the input
    inner = dataclasses.replace(limits, max_pattern_length=_EXPANSION * max(limits.max_pattern_length, 1))
    try:
        return parse_regex(text, inner)
    except GrammarError as exc:
        if exc.position is None:
            raise
        idx = out_map[exc.position] if exc.position < len(out_map) else len(pattern)
        pos = where[idx] if idx < len(where) else (where[-1] + 1 if where else 0)
        raise GrammarError(exc.message, source, pos) from None


def _ecma_char(cp: int) -> str:
    """``cp`` written so that it is literal in an ECMA-262 pattern, in or out of a class."""
    if cp < 0x80:
        c = chr(cp)
        return c if c.isalnum() else f"\\x{cp:02X}"
    if 0xD800 <= cp <= 0xDFFF:
        return f"\\u{{{cp:X}}}"
    return chr(cp)


def _ecma_class(ranges: Ranges, negate: bool) -> str:
    parts = ["[^" if negate else "["]
    for lo, hi in ranges:
        parts.append(_ecma_char(lo) if lo == hi else f"{_ecma_char(lo)}-{_ecma_char(hi)}")
    parts.append("]")
    return "".join(parts)


class _Translator:
    def __init__(self, pat: str, where: list[int], source: str, flags: str, limits: Limits) -> None:
        self.p = pat
        self.n = len(pat)
        self.where = where
        self.source = source
        self.limits = limits
        self.out: list[str] = []
        self.out_map: list[int] = []
        self.flags = self.check_flags(flags, 0)
        self.max_out = _EXPANSION * max(limits.max_pattern_length, 1)
        self.groups: list[frozenset[str]] = []

    def error(self, message: str, i: int) -> GrammarError:
        pos = self.where[i] if i < len(self.where) else (self.where[-1] + 1 if self.where else 0)
        return GrammarError(message, self.source, pos)

    def check_flags(self, letters: str, i: int) -> frozenset[str]:
        for f in letters:
            if f == "L":
                raise self.error("the L (locale) flag cannot be used with text patterns", i)
            if f == "l":
                raise self.error("the l (locale) flag is not supported", i)
            if f not in _FLAG_LETTERS:
                raise self.error(f"unknown regex flag {f!r}", i)
        return frozenset(letters)

    def emit(self, text: str, i: int) -> None:
        self.out.append(text)
        self.out_map.extend([i] * len(text))
        if len(self.out_map) > self.max_out:
            raise LimitExceeded(
                "max_pattern_length",
                self.limits.max_pattern_length,
                "the regular expression expands to too many characters (Unicode classes are spelled out)",
            )

    def translate(self) -> tuple[str, list[int]]:
        p, n = self.p, self.n
        i = 0
        while i < n:
            c = p[i]
            if "x" in self.flags and c in _VERBOSE_SPACE:
                i += 1
            elif "x" in self.flags and c == "#":
                while i < n and p[i] != "\n":
                    i += 1
            elif c == "\\":
                i = self.escape(i)
            elif c == "[":
                i = self.char_class(i)
            elif c == "(":
                i = self.open_group(i)
            elif c == ")":
                if self.groups:
                    self.flags = self.groups.pop()
                self.emit(")", i)
                i += 1
            elif c == ".":
                self.emit("[\\s\\S]" if "s" in self.flags else "[^\\n]", i)
                i += 1
            elif c in "*+?":
                self.emit(c, i)
                i = self.after_quantifier(i + 1)
            elif c == "{":
                i = self.brace(i)
            elif c == "|":
                self.emit("|", i)
                i += 1
            elif c in "^$":
                raise self.error(f"the anchor {c!r} is not supported in a terminal", i)
            else:
                self.literal(ord(c), i)
                i += 1
        return "".join(self.out), self.out_map

    # ------------------------------------------------------------ pieces
    def literal(self, cp: int, i: int) -> None:
        if "i" in self.flags:
            variants = case_variants(cp, ascii_only="a" in self.flags)
            if len(variants) > 1:
                self.emit(_ecma_class(normalize_ranges((v, v) for v in variants), False), i)
                return
        self.emit(_ecma_char(cp), i)

    def set_ranges(self, kind: str) -> Ranges:
        return _ASCII_SETS[kind] if "a" in self.flags else _unicode_set(kind)

    def after_quantifier(self, i: int) -> int:
        """Skip a lazy ``?`` (same language) and reject a possessive ``+``."""
        if i < self.n and self.p[i] == "?":
            i += 1
        if i < self.n and self.p[i] == "+":
            raise self.error("possessive quantifiers are not supported", i)
        return i

    def brace(self, i: int) -> int:
        """``{m}``, ``{m,}``, ``{m,n}``, ``{,n}`` or ``{,}`` as in Python; otherwise a literal ``{``."""
        p, n = self.p, self.n
        k = i + 1
        if p.startswith("}", k):
            self.literal(0x7B, i)
            return i + 1
        while k < n and p[k] in _DIGITS:
            k += 1
        low = p[i + 1 : k]
        comma = k < n and p[k] == ","
        high = low
        if comma:
            m = k + 1
            while m < n and p[m] in _DIGITS:
                m += 1
            high = p[k + 1 : m]
            k = m
        if k >= n or p[k] != "}":
            self.literal(0x7B, i)
            return i + 1
        text = "{" + (low or "0") + ("," + high if comma else "") + "}"
        self.emit(text, i)
        return self.after_quantifier(k + 1)

    def open_group(self, i: int) -> int:
        p, n = self.p, self.n
        saved = self.flags
        if not p.startswith("(?", i):
            self.groups.append(saved)
            self.emit("(?:", i)
            return i + 1
        j = i + 2
        nxt = p[j] if j < n else ""
        if nxt == ":":
            self.groups.append(saved)
            self.emit("(?:", i)
            return j + 1
        if nxt == "P":
            if p.startswith("<", j + 1):
                end = p.find(">", j + 2)
                if end < 0 or not p[j + 2 : end].isidentifier():
                    raise self.error("bad group name", i)
                self.groups.append(saved)
                self.emit("(?:", i)
                return end + 1
            if p.startswith("=", j + 1):
                raise self.error("backreferences are not supported (the language would not be regular)", i)
            raise self.error("unknown extension (?P", i)
        if nxt == "#":
            end = p.find(")", j)
            if end < 0:
                raise self.error("missing ), unterminated comment", i)
            return end + 1
        if nxt in ("=", "!") or p.startswith("<=", j) or p.startswith("<!", j):
            raise self.error("lookaround assertions are not supported in a terminal", i)
        if nxt == ">":
            raise self.error("atomic groups are not supported", i)
        if nxt == "(":
            raise self.error("conditional groups are not supported", i)
        # inline flags: (?aiLmsux) for the whole pattern, or (?flags-flags:...) for a group
        k = j
        while k < n and p[k] in _FLAG_LETTERS:
            k += 1
        on = p[j:k]
        off = ""
        if k < n and p[k] == "-":
            m = k + 1
            while m < n and p[m] in _FLAG_LETTERS:
                m += 1
            off = p[k + 1 : m]
            k = m
        if k >= n or p[k] not in ":)" or not (on or off):
            raise self.error(f"unknown group syntax {p[i : i + 3]!r}", i)
        self.check_flags(on + off, i)
        if p[k] == ")":
            if off:
                raise self.error("flags can only be turned off inside a scoped group (?-x:...)", i)
            self.flags = self.flags | frozenset(on)
            return k + 1
        self.groups.append(saved)
        self.flags = (self.flags | frozenset(on)) - frozenset(off)
        self.emit("(?:", i)
        return k + 1

    # ------------------------------------------------------------ escapes
    def read_escape(self, i: int, *, in_class: bool) -> tuple[int | str, int]:
        """The escape at ``i``: a code point, or one of ``dDwWsS`` for a set."""
        p, n = self.p, self.n
        if i + 1 >= n:
            raise self.error("the pattern ends with a lone backslash", i)
        e = p[i + 1]
        if e in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[e], i + 2
        if e in "dDwWsS":
            return e, i + 2
        if e == "b" and in_class:
            return 0x08, i + 2
        if e in "bBAZ":
            raise self.error(f"the assertion \\{e} is not supported in a terminal", i)
        if e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            digits = p[i + 2 : i + 2 + width]
            if len(digits) != width or not all(h in _HEX for h in digits):
                raise self.error(f"\\{e} must be followed by {width} hex digits", i)
            value = int(digits, 16)
            if value > MAX_CODE_POINT:
                raise self.error(f"\\{e}{digits} is beyond U+10FFFF", i)
            return value, i + 2 + width
        if e == "N":
            end = p.find("}", i + 3)
            if not p.startswith("{", i + 2) or end < 0:
                raise self.error("\\N must be followed by {NAME}", i)
            try:
                return ord(unicodedata.lookup(p[i + 3 : end])), end + 1
            except KeyError:
                raise self.error(f"unknown Unicode character name {p[i + 3 : end]!r}", i) from None
        if e == "0" or (in_class and e in _OCT):
            j = i + 2
            while j < n and j < i + 4 and p[j] in _OCT:
                j += 1
            return self.octal(i, j), j
        if e in _DIGITS:
            if not in_class and e in _OCT and p[i + 2 : i + 3] in _OCT and p[i + 3 : i + 4] in _OCT:
                return self.octal(i, i + 4), i + 4
            raise self.error("backreferences are not supported (the language would not be regular)", i)
        if e.isascii() and e.isalpha():
            raise self.error(f"bad escape \\{e}", i)
        return ord(e), i + 2

    def octal(self, i: int, j: int) -> int:
        value = int(self.p[i + 1 : j], 8)
        if value > 0o377:
            raise self.error(f"octal escape value \\{self.p[i + 1 : j]} outside of range 0-0o377", i)
        return value

    def escape(self, i: int) -> int:
        value, j = self.read_escape(i, in_class=False)
        if isinstance(value, str):
            self.emit(_set_text(value, "a" in self.flags), i)
        else:
            self.literal(value, i)
        return j

    def char_class(self, i: int) -> int:
        p, n = self.p, self.n
        start = i
        i += 1
        negate = i < n and p[i] == "^"
        if negate:
            i += 1
        ranges: list[tuple[int, int]] = []
        sets: list[tuple[int, int]] = []
        first = True
        while True:
            if i >= n:
                raise self.error("unterminated character class", start)
            if p[i] == "]" and not first:
                i += 1
                break
            first = False
            a_pos = i
            a, i = self.class_atom(i)
            if i + 1 < n and p[i] == "-" and p[i + 1] != "]":
                b, i = self.class_atom(i + 1)
                if isinstance(a, str) or isinstance(b, str):
                    raise self.error("bad character range: a class escape cannot end a range", a_pos)
                if a > b:
                    raise self.error("bad character range: out of order", a_pos)
                ranges.append((a, b))
            elif isinstance(a, str):
                rs = self.set_ranges(a.lower())
                sets.extend(_complement(rs) if a.isupper() else rs)
            else:
                ranges.append((a, a))
        rs = normalize_ranges(ranges)
        if "i" in self.flags:  # case folding applies to characters, not to \d \w \s
            rs = case_close(rs, ascii_only="a" in self.flags)
        self.emit(_ecma_class(normalize_ranges([*rs, *sets]), negate), start)
        return i

    def class_atom(self, i: int) -> tuple[int | str, int]:
        if self.p[i] == "\\":
            return self.read_escape(i, in_class=True)
        return ord(self.p[i]), i + 1


@functools.cache
def _set_text(escape: str, ascii_only: bool) -> str:
    """ECMA-262 class text for Python's ``\\d \\w \\s`` and their negations."""
    kind = escape.lower()
    ranges = _ASCII_SETS[kind] if ascii_only else _unicode_set(kind)
    return _ecma_class(ranges, escape.isupper())


def _complement(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODE_POINT:
        out.append((nxt, MAX_CODE_POINT))
    return normalize_ranges(out)
