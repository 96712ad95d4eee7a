"""The contents of JSON strings as regex IR over the bytes of the JSON text.

A JSON string constraint (``pattern``, ``minLength``, ``format``, ``enum`` of
strings...) speaks of the *decoded* string, but the model writes the *encoded*
text between the quotes, where one character has many spellings: ``é`` is the
raw UTF-8 bytes ``C3 A9``, or ``\\u00e9``, or ``\\u00E9``; ``😀`` is four UTF-8
bytes or the escaped surrogate pair ``\\ud83d\\ude00`` in any letter case;
``/`` is ``/`` or ``\\/``. The functions here build IR that accepts every
spelling of exactly the decoded strings in a language (with one exception:
printable ASCII other than ``"`` and ``\\`` is never spelled ``\\u00XX``, see
:func:`json_string_char`):

* :func:`json_string_char`: one encoded character whose code point lies in a
  set of ranges;
* :func:`json_string_content`: any regex IR over decoded text (for example
  the output of :func:`tokensieve.grammar.regex.parse_regex`) mapped to the
  encoded content;
* :func:`json_string_pattern`: a JSON Schema ``pattern`` (ECMA-262 search
  semantics: unanchored unless ``^``/``$`` say otherwise);
* :func:`json_string_length`: ``minLength``/``maxLength`` in code points.

The IR never contains the surrounding quotes. Escapes of lone surrogates
(``\\ud800`` not followed by a low surrogate escape) are never accepted: such
strings have no Unicode text, and RFC 8259 leaves their meaning undefined.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from .._memo import memoized
from ..errors import GrammarError
from ..ir.nodes import (
    EMPTY,
    MAX_CODE_POINT,
    NOTHING,
    Alt,
    ByteClass,
    CharClass,
    Concat,
    Empty,
    Literal,
    Node,
    Repeat,
    alt,
    char_class,
    concat,
    literal,
    normalize_ranges,
    repeat,
    star,
)
from ..limits import Limits
from .json_automata import counted
from .json_digits import fixed_width_range
from .lookahead import build_lookaheads, find_lookaheads
from .regex import check_pattern_length, parse_regex

__all__ = [
    "ANY_CHAR",
    "json_string_char",
    "json_string_content",
    "json_string_pattern",
    "json_string_length",
]

Ranges = tuple[tuple[int, int], ...]

#: The decoded-text class of every Unicode scalar value.
ANY_CHAR = CharClass(normalize_ranges([(0, MAX_CODE_POINT)]))

#: Code points a JSON string must escape.
_MUST_ESCAPE: Ranges = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C))
#: Printable ASCII that may stand for itself: never spelled ``\\u00XX`` (see :func:`json_string_char`).
_PLAIN_ASCII: Ranges = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E))
#: The two-character escapes and the code point each denotes.
_SHORT_ESCAPES = {
    0x22: b'\\"',
    0x5C: b"\\\\",
    0x2F: b"\\/",
    0x08: b"\\b",
    0x0C: b"\\f",
    0x0A: b"\\n",
    0x0D: b"\\r",
    0x09: b"\\t",
}


def _intersect(a: Ranges, b: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _subtract(a: Ranges, b: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in a:
        cur = lo
        for blo, bhi in b:
            if bhi < cur or blo > hi:
                continue
            if blo > cur:
                out.append((cur, blo - 1))
            cur = max(cur, bhi + 1)
        if cur <= hi:
            out.append((cur, hi))
    return tuple(out)


@memoized(max_entries=64)
def _hex_digit(lo: int, hi: int) -> Node:
    """One hexadecimal digit (either letter case) with a value in ``lo..hi``."""
    ranges = []
    if lo <= 9:
        ranges.append((0x30 + lo, 0x30 + min(hi, 9)))
    if hi >= 10:
        a, b = max(lo, 10) - 10, hi - 10
        ranges.append((0x61 + a, 0x61 + b))
        ranges.append((0x41 + a, 0x41 + b))
    return char_class(ranges)


def _hex4(lo: int, hi: int) -> Node:
    """Four hex digits (either case) with a value in ``lo..hi``."""
    return fixed_width_range(lo, hi, 4, base=16, digit=_hex_digit)


_U = literal("\\u")


@memoized(max_entries=4096)
def _char_node(ranges: Ranges) -> Node:
    parts: list[Node] = []
    # raw UTF-8
    parts.append(char_class(_subtract(ranges, _MUST_ESCAPE)))
    # short escapes
    for cp, text in _SHORT_ESCAPES.items():
        if _intersect(ranges, ((cp, cp),)):
            parts.append(literal(text))
    # \uXXXX for BMP code points (surrogates are never in normalised ranges), except
    # printable ASCII, which is written as itself
    for lo, hi in _subtract(_intersect(ranges, ((0, 0xFFFF),)), _PLAIN_ASCII):
        parts.append(concat(_U, _hex4(lo, hi)))
    # escaped surrogate pairs for the astral planes
    pairs: list[Node] = []
    for lo, hi in _intersect(ranges, ((0x10000, MAX_CODE_POINT),)):
        hi_a, lo_a = divmod(lo - 0x10000, 0x400)
        hi_b, lo_b = divmod(hi - 0x10000, 0x400)
        if hi_a == hi_b:
            pairs.append(_pair(hi_a, hi_a, lo_a, lo_b))
            continue
        pairs.append(_pair(hi_a, hi_a, lo_a, 0x3FF))
        if hi_b - hi_a >= 2:
            pairs.append(_pair(hi_a + 1, hi_b - 1, 0, 0x3FF))
        pairs.append(_pair(hi_b, hi_b, 0, lo_b))
    parts.extend(pairs)
    return alt(*parts)


def _pair(high_lo: int, high_hi: int, low_lo: int, low_hi: int) -> Node:
    return concat(
        _U,
        _hex4(0xD800 + high_lo, 0xD800 + high_hi),
        _U,
        _hex4(0xDC00 + low_lo, 0xDC00 + low_hi),
    )


def json_string_char(ranges: Iterable[tuple[int, int]] | None = None) -> Node:
    """One character of a JSON string's content, in any of its spellings.

    Parameters
    ----------
    ranges
        Inclusive code point ranges of the *decoded* character (any order;
        surrogates are ignored). ``None``: any Unicode scalar value.

    Returns
    -------
    Node
        IR over the encoded bytes accepting exactly the spellings of one
        character whose code point is in ``ranges``: raw UTF-8 (except for
        ``"``, ``\\`` and U+0000 to U+001F, which must be escaped), the short
        escapes ``\\" \\\\ \\/ \\b \\f \\n \\r \\t``, ``\\uXXXX`` with hex digits in
        either case for the Basic Multilingual Plane, and an escaped surrogate
        pair (any case) beyond it. :data:`NOTHING` for empty ranges.

    Notes
    -----
    Printable ASCII characters other than ``"`` and ``\\`` (U+0020 to U+007E)
    are accepted only as themselves, never as ``\\u00XX`` (``\\u0041`` for
    ``A``). No JSON encoder writes them that way, and allowing it makes the
    automaton of every constrained string (formats, patterns, lengths) about
    seven times larger. This is the one spelling the constrained language
    leaves out; the decoded strings it accepts are exactly those in ``ranges``.
    """
    rs = normalize_ranges([(0, MAX_CODE_POINT)] if ranges is None else ranges)
    if not rs:
        return NOTHING
    return _char_node(rs)


def json_string_content(node: Node, limits: Limits | None = None) -> Node:
    """Map regex IR over decoded text to IR over the JSON-encoded string content.

    Parameters
    ----------
    node
        IR whose :class:`Literal` and :class:`CharClass` leaves stand for
        decoded text (UTF-8), such as the output of
        :func:`~tokensieve.grammar.regex.parse_regex`. :class:`ByteClass`
        leaves may only hold ASCII bytes.
    limits
        Bounds on the automata of bounded repetitions of large classes (see
        the notes).

    Returns
    -------
    Node
        The same structure with every character replaced by
        :func:`json_string_char` of it.

    Raises
    ------
    GrammarError
        For a leaf that does not stand for text (non-UTF-8 literal, non-ASCII
        byte class, rule reference, embedded automaton).
    """
    memo: dict[Node, Node] = {}
    return _content(node, memo, limits or Limits())


#: a bounded repetition of a class of more ranges than this is built by layers (see _counted_class)
_COUNTED_CLASS_RANGES = 16


def _counted_class(item: Node, content: Node, low: int, high: int | None, limits: Limits) -> Node | None:
    """``content{low,high}`` built by layers when ``item`` is a class of many ranges, else ``None``.

    The spellings of one character of such a class (``\\p{Ll}``: hundreds of
    ranges, each raw or as ``\\uXXXX`` escapes in either case) make an
    automaton of hundreds of states, and the subset construction of its
    repetition pays for every copy again (``[\\p{Ll}0-9_]{2,15}`` ran out of
    ``max_compile_work``); by layers it is 3,526 states in 30 ms.
    """
    if (
        high is None
        or high < 2
        or not isinstance(item, CharClass)
        or len(item.ranges) <= _COUNTED_CLASS_RANGES
    ):
        return None
    return counted(content, low, high, limits)


def _content(node: Node, memo: dict[Node, Node], limits: Limits) -> Node:
    done = memo.get(node)
    if done is not None:
        return done
    out: Node
    if isinstance(node, Empty):
        out = EMPTY
    elif isinstance(node, Literal):
        try:
            text = node.value.decode("utf-8")
        except UnicodeDecodeError:
            raise GrammarError(f"literal {node.value!r} is not UTF-8 text") from None
        out = concat(*(_char_node(((ord(c), ord(c)),)) for c in text))
    elif isinstance(node, CharClass):
        out = json_string_char(node.ranges)
    elif isinstance(node, ByteClass):
        if node.ranges and node.ranges[-1][1] > 0x7F:
            raise GrammarError("a byte class beyond ASCII does not stand for text")
        out = json_string_char(node.ranges)
    elif isinstance(node, Concat):
        out = concat(*(_content(item, memo, limits) for item in node.items))
    elif isinstance(node, Alt):
        out = alt(*(_content(item, memo, limits) for item in node.items))
    elif isinstance(node, Repeat):
        item = _content(node.item, memo, limits)
        out = _counted_class(node.item, item, node.min, node.max, limits) or repeat(item, node.min, node.max)
    else:
        raise GrammarError(f"{type(node).__name__} does not stand for decoded text")
    memo[node] = out
    return out


def json_string_length(min_length: int = 0, max_length: int | None = None) -> Node:
    """String content with ``min_length`` to ``max_length`` characters.

    Parameters
    ----------
    min_length
        At least this many code points (JSON Schema ``minLength``).
    max_length
        At most this many (``maxLength``); ``None``: unbounded.

    Returns
    -------
    Node
        Any encoded content whose decoded length (Python ``len``; an escaped
        surrogate pair is one character) is in range; :data:`NOTHING` when
        ``max_length < min_length``.

    Raises
    ------
    ValueError
        For a negative length.
    """
    if min_length < 0 or (max_length is not None and max_length < 0):
        raise ValueError("string lengths must not be negative")
    if max_length is not None and max_length < min_length:
        return NOTHING
    return repeat(json_string_char(), min_length, max_length)


# ----------------------------------------------------------------- patterns
def _anchor_positions(pattern: str) -> list[int]:
    """Positions of the ``^`` and ``$`` outside classes and escapes."""
    out: list[int] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            continue
        elif c in "^$":
            out.append(i)
        elif pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
            close = pattern.find(">", i)
            i = n if close < 0 else close + 1  # a group name may contain '$'
            continue
        i += 1
    return out


def _literal_code_points(node: Node, out: set[int]) -> None:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Literal):
            out.update(ord(c) for c in item.value.decode("utf-8", "replace"))
        elif isinstance(item, (Concat, Alt)):
            stack.extend(item.items)
        elif isinstance(item, Repeat):
            stack.append(item.item)


_Split = dict[tuple[bool, bool], Node]  # (anchored at start, anchored at end) -> language


def _split_anchors(node: Node, start: str, end: str, memo: dict[Node, _Split]) -> _Split:
    done = memo.get(node)
    if done is not None:
        return done
    out: _Split
    if isinstance(node, Literal):
        text = node.value.decode("utf-8")
        if start not in text and end not in text:
            out = {(False, False): node}
        else:
            core = text.replace(start, "").replace(end, "")
            if text.strip(start + end) != core:
                raise GrammarError("an anchor between characters is not supported", unsupported=True)
            out = {(start in text, end in text): literal(core)}
    elif isinstance(node, Concat):
        acc: _Split = {(False, False): EMPTY}
        for item in node.items:
            parts = _split_anchors(item, start, end, memo)
            new: dict[tuple[bool, bool], list[Node]] = {}
            for (s1, e1), left in acc.items():
                for (s2, e2), right in parts.items():
                    new.setdefault((s1 or s2, e1 or e2), []).append(concat(left, right))
            acc = {key: alt(*nodes) for key, nodes in new.items()}
        out = acc
    elif isinstance(node, Alt):
        groups: dict[tuple[bool, bool], list[Node]] = {}
        for item in node.items:
            for key, sub in _split_anchors(item, start, end, memo).items():
                groups.setdefault(key, []).append(sub)
        out = {key: alt(*nodes) for key, nodes in groups.items()}
    elif isinstance(node, Repeat):
        parts = _split_anchors(node.item, start, end, memo)
        if set(parts) == {(False, False)}:
            out = {(False, False): node}
        elif node.min == 0 and node.max == 1:
            out = dict(parts)
            out[(False, False)] = alt(out.get((False, False), NOTHING), EMPTY)
        else:
            raise GrammarError("an anchor inside a repeated group is not supported", unsupported=True)
    else:
        out = {(False, False): node}
    memo[node] = out
    return out


def _pick_marker(used: set[int], taken: set[int]) -> str:
    for cp in range(0x10FFFD, 0xF0000, -1):
        if cp not in used and cp not in taken:
            taken.add(cp)
            return chr(cp)
    raise GrammarError("pattern uses every private-use code point")  # pragma: no cover


def json_string_pattern(pattern: str, limits: Limits | None = None) -> Node:
    """Encoded string contents whose decoded text matches a JSON Schema ``pattern``.

    Parameters
    ----------
    pattern
        An ECMA-262 regular expression (see
        :func:`~tokensieve.grammar.regex.parse_regex` for the supported
        syntax). Matching is a *search*, as JSON Schema specifies: ``"a"``
        means "contains an a"; ``^`` and ``$`` anchor at the start and the end
        of the string, also at the ends of alternatives and groups
        (``^a|b$``, ``(^|/)x``).
    limits
        Resource bounds for the pattern parser.

    Returns
    -------
    Node
        IR over the encoded content (without the quotes); :data:`NOTHING`
        when no string matches.

    Raises
    ------
    GrammarError
        For invalid or unsupported syntax (lookaround, backreferences, ...),
        with the position in ``pattern``.
    LimitExceeded
        When a limit is exceeded.

    Notes
    -----
    Results are memoised per ``(pattern, limits)`` (IR nodes are immutable).
    """
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
    return _pattern(pattern, limits or Limits())


@memoized(max_entries=256)
def _pattern(pattern: str, limits: Limits) -> Node:
    check_pattern_length(pattern, limits)  # the pieces are parsed one by one
    found = find_lookaheads(pattern)
    if found is not None:  # the contents are intersected piece by piece (see grammar/lookahead.py)
        return build_lookaheads(
            found,
            lambda text: json_string_content(parse_regex(text, limits), limits),
            json_string_content(star(ANY_CHAR), limits),
            search=True,
            limits=limits,
        )
    node = parse_regex(pattern, limits)
    any_text = star(ANY_CHAR)
    anchors = _anchor_positions(pattern)
    if not anchors:
        decoded = concat(any_text, node, any_text)
        return json_string_content(decoded, limits)
    used: set[int] = set()
    _literal_code_points(node, used)
    taken: set[int] = set()
    start = _pick_marker(used, taken)
    end = _pick_marker(used, taken)
    pieces: list[str] = []
    prev = 0
    for pos in anchors:
        pieces.append(pattern[prev:pos])
        pieces.append(start * 2 if pattern[pos] == "^" else end * 2)
        prev = pos + 1
    pieces.append(pattern[prev:])
    marked = "".join(pieces)
    relaxed = dataclasses.replace(limits, max_pattern_length=max(limits.max_pattern_length, len(marked)))
    marked_node = parse_regex(marked, relaxed)
    split = _split_anchors(marked_node, start, end, {})
    parts: list[Node] = []
    for (anchored_start, anchored_end), sub in split.items():
        parts.append(
            concat(
                EMPTY if anchored_start else any_text,
                sub,
                EMPTY if anchored_end else any_text,
            )
        )
    return json_string_content(alt(*parts), limits)
