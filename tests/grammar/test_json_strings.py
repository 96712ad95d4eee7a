"""JSON string contents: every spelling of a character, patterns (search semantics), lengths.

Oracles: ``json.loads`` of the quoted text decodes the content (strict mode
rejects raw control characters; a decoded string with a lone surrogate is not
Unicode text and counts as rejected), Python ``re.search`` on the decoded text
for patterns (on patterns and strings where Python and ECMA-262 agree), and
``len`` for lengths.
"""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokensieve.automata import ir_to_dfa
from tokensieve.errors import GrammarError
from tokensieve.grammar.ir import NOTHING, char_class, concat, is_nothing, literal, star
from tokensieve.grammar.json_strings import (
    json_string_char,
    json_string_content,
    json_string_length,
    json_string_pattern,
)
from tokensieve.grammar.regex import parse_regex


def _escapes_plain_ascii(content: str) -> bool:
    """Whether ``content`` spells a printable ASCII character (not ``"`` or ``\\``) as ``\\u00XX``."""
    i = 0
    while i < len(content):
        if content[i] != "\\":
            i += 1
            continue
        if content[i + 1 : i + 2] == "u":
            try:
                cp = int(content[i + 2 : i + 6], 16)
            except ValueError:
                return False
            if 0x20 <= cp <= 0x7E and cp not in (0x22, 0x5C):
                return True
            i += 6
        else:
            i += 2
    return False


def decode(content: str) -> str | None:
    """The decoded string, or None when the content is not in the accepted language.

    That is: not a valid JSON string of Unicode text, or a spelling of printable
    ASCII as ``\\u00XX``, which the constrained language leaves out by design.
    """
    try:
        value = json.loads('"' + content + '"')
    except ValueError:
        return None
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        return None
    if _escapes_plain_ascii(content):
        return None
    return value


def spellings(cp: int) -> set[str]:
    """Every way of writing one code point in a JSON string (letter case: a few variants)."""
    out: set[str] = set()
    ch = chr(cp)
    if cp >= 0x20 and ch not in '"\\':
        out.add(ch)
    short = {0x22: '\\"', 0x5C: "\\\\", 0x2F: "\\/", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t"}
    if cp in short:
        out.add(short[cp])
    if cp <= 0xFFFF:
        units = [cp]
    else:
        v = cp - 0x10000
        units = [0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)]
    if 0x20 <= cp <= 0x7E and ch not in '"\\':
        return out  # printable ASCII is only ever written as itself
    for case in (str.lower, str.upper, _mixed):
        out.add("".join("\\u" + case(f"{u:04x}") for u in units))
    return out


def _mixed(text: str) -> str:
    return "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(text))


def random_spelling(text: str, rng: random.Random) -> str:
    return "".join(rng.choice(sorted(spellings(ord(c)))) for c in text)


BROKEN = [
    "\\",
    "\\x41",
    "\\U0041",
    "\\u041",
    "\\u004G",
    "\\ud800",
    "\\udc00",
    "\\ude00\\ud83d",
    "\\ud83d\\u0041",
    "\\u0041",
    "\\u007E",
    "\\u0020",
    "\\a",
    "\x00",
    "\x1f",
    "\n",
    '"',
    "\\ud83d",
    "\\uD83D\\uDE0",
]

SAMPLE_CPS = sorted(
    set(range(0x80))
    | {0x7F, 0x80, 0xA0, 0xE9, 0x7FF, 0x800, 0x2028, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF}
    | {0x10000, 0x1F600, 0x1F64F, 0x1F650, 0xFFFFF, 0x10FFFF}
)


def _in(cp: int, ranges: tuple[tuple[int, int], ...] | None) -> bool:
    return ranges is None or any(lo <= cp <= hi for lo, hi in ranges)


def check_char(ranges: tuple[tuple[int, int], ...] | None, cps: list[int]) -> None:
    node = json_string_char(ranges)
    dfa = ir_to_dfa(node)
    candidates: set[str] = set(BROKEN)
    for cp in cps:
        candidates |= spellings(cp)
    for text in candidates:
        value = decode(text)
        expected = value is not None and len(value) == 1 and _in(ord(value), ranges)
        assert dfa.accepts(text.encode()) == expected, (ranges, text)


def test_any_character_every_spelling() -> None:
    check_char(None, SAMPLE_CPS)


def test_any_character_automaton_is_small() -> None:
    assert ir_to_dfa(json_string_char()).num_states < 40


@pytest.mark.parametrize(
    "ranges",
    [
        ((0x41, 0x5A),),
        ((0x22, 0x22),),
        ((0x00, 0x1F),),
        ((0x2F, 0x2F), (0x5C, 0x5C)),
        ((0xE9, 0xE9),),
        ((0x7F, 0x800),),
        ((0xD000, 0xE100),),
        ((0x1F600, 0x1F64F),),
        ((0xFFFF, 0x10400),),
        ((0x10000, 0x10FFFF),),
        ((0x30, 0x39), (0x1F600, 0x1F600), (0x10FFFF, 0x10FFFF)),
    ],
)
def test_character_classes(ranges: tuple[tuple[int, int], ...]) -> None:
    edges = {x + d for lo, hi in ranges for x in (lo, hi) for d in (-1, 0, 1) if 0 <= x + d <= 0x10FFFF}
    check_char(ranges, sorted(set(SAMPLE_CPS) | edges))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 0x10FFFF), st.integers(0, 0x3000)).map(
            lambda t: (t[0], min(t[0] + t[1], 0x10FFFF))
        ),
        min_size=1,
        max_size=4,
    ),
    st.randoms(use_true_random=False),
)
def test_random_classes(pairs: list[tuple[int, int]], rng: random.Random) -> None:
    node = char_class(pairs)
    if is_nothing(node):
        return
    ranges = tuple(sorted(pairs))
    cps = {x + d for lo, hi in pairs for x in (lo, hi) for d in (-1, 0, 1) if 0 <= x + d <= 0x10FFFF}
    cps |= {rng.randint(0, 0x10FFFF) for _ in range(20)}
    check_char(ranges, sorted(c for c in cps if not 0xD800 <= c <= 0xDFFF) + [0x41])


def test_empty_class_is_nothing() -> None:
    assert json_string_char(()) is NOTHING
    assert json_string_char([(0xD800, 0xDFFF)]) is NOTHING


# ------------------------------------------------------------------ content
def test_content_maps_literals_and_structure() -> None:
    node = json_string_content(concat(literal("é/"), star(char_class([(0x30, 0x39)])), literal('"')))
    dfa = ir_to_dfa(node)
    for text, ok in [
        ('é/\\"', True),
        ('\\u00e9\\/12\\"', True),
        ('\\u00C9/\\"', False),  # É, not é
        ('é/1a\\"', False),
        ("é/12\\u0022", True),
        ("é/\\u0031\\u0032\\u0022", False),  # printable ASCII is never spelled \u00XX
        ("é/", False),
    ]:
        assert dfa.accepts(text.encode()) == ok, text


def test_content_rejects_non_text_leaves() -> None:
    from tokensieve.grammar.ir import RuleRef, byte_class

    with pytest.raises(GrammarError):
        json_string_content(RuleRef("x"))
    with pytest.raises(GrammarError):
        json_string_content(byte_class([(0x80, 0xFF)]))
    with pytest.raises(GrammarError):
        json_string_content(literal(b"\xff"))
    # ASCII byte classes stand for characters
    dfa = ir_to_dfa(json_string_content(byte_class([(0x61, 0x62)])))
    assert dfa.accepts(b"a") and dfa.accepts(b"b") and not dfa.accepts(b"c")
    assert not dfa.accepts(b"\\u0062")  # printable ASCII is never spelled \u00XX


# ----------------------------------------------------------------- patterns
ALPHABET = ["a", "b", "c", "x", "/", "1", "2", "é", "😀", '"', "\\", "\n", "\t", " ", "\x00", "ab", "cd"]

PATTERNS = [
    "a",
    "^a",
    "a$",
    "^a$",
    "^a|b$",
    "(^|/)x",
    "x(/|$)",
    "^(ab|cd)+$",
    "[0-9]{2,3}",
    "^[0-9]{2,3}$",
    "é+",
    "😀",
    "^[^a]*$",
    "\\d\\d",
    "^$",
    "",
    "a.c",
    "^.{2}$",
    "[\\u0100-\\uffff]",
    "[😀-🙏]",
    "(?:^a)?b",
    "^\\/",
    '"',
    "\\\\",
    "^(?<n$>x)$",
    "$^",
    "^(a|b$)",
    "(a|^b)c",
    "^[a-c]+(x|/)?$",
    "[\\n\\t]",
    "^\\u00e9",
]


def _python_pattern(pattern: str) -> str:
    # ECMA '$' (no multiline) is Python '\Z'; named groups differ in syntax
    out = pattern.replace("(?<n$>", "(?P<n_>")
    return re.sub(r"(?<!\\)\$", r"\\Z", out)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_pattern_search_semantics(pattern: str) -> None:
    dfa = ir_to_dfa(json_string_pattern(pattern)) if not is_nothing(json_string_pattern(pattern)) else None
    oracle = re.compile(_python_pattern(pattern), re.ASCII)
    rng = random.Random(pattern)
    strings = {"", "a", "b", "x", "/x", "ab", "abc", "aé", "😀", "12", "123", "ba", "a\nb", "é"}
    for _ in range(300):
        strings.add("".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 5))))
    for s in strings:
        expected = oracle.search(s) is not None
        forms = {
            json.dumps(s)[1:-1],
            json.dumps(s, ensure_ascii=False)[1:-1],
            random_spelling(s, rng),
        }
        for enc in forms:
            got = dfa is not None and dfa.accepts(enc.encode())
            assert got == expected, (pattern, s, enc)
    # broken encodings are never accepted
    if dfa is not None:
        for bad in BROKEN:
            for text in ("a" + bad, bad + "x"):
                if decode(text) is None:
                    assert not dfa.accepts(text.encode()), (pattern, text)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=5).map("".join), st.sampled_from(PATTERNS[:14]))
def test_pattern_hypothesis(s: str, pattern: str) -> None:
    dfa = ir_to_dfa(json_string_pattern(pattern))
    expected = re.search(_python_pattern(pattern), s, re.ASCII) is not None
    assert dfa.accepts(json.dumps(s)[1:-1].encode()) == expected
    assert dfa.accepts(json.dumps(s, ensure_ascii=False)[1:-1].encode()) == expected


def test_unanchored_pattern_allows_any_prefix() -> None:
    dfa = ir_to_dfa(json_string_pattern("ab"))
    assert dfa.is_prefix("😀\\n\\u00e9\\ud83d".encode())
    assert not dfa.is_prefix(b"\\ud83dx")  # a high surrogate escape must be followed by a low one


def test_pattern_with_no_match_is_nothing() -> None:
    assert is_nothing(json_string_pattern("[]"))
    assert is_nothing(json_string_pattern("^a[]"))


def test_pattern_marker_characters_in_the_pattern() -> None:
    # the anchor markers are private-use characters; a pattern using them still works
    pattern = "^\U0010fffd\U0010fffc|\U0010fffb$"
    dfa = ir_to_dfa(json_string_pattern(pattern))
    oracle = re.compile(_python_pattern(pattern))
    for s in ["\U0010fffd\U0010fffc", "x\U0010fffd\U0010fffc", "\U0010fffbx", "x\U0010fffb", ""]:
        assert dfa.accepts(json.dumps(s, ensure_ascii=False)[1:-1].encode()) == bool(oracle.search(s)), s


@pytest.mark.parametrize(
    ("pattern", "position"),
    [("(?=a)|b", 5), ("(a(?!b))", 2), ("(a)\\1", 3), ("(?<=a)b", 0), ("a\\b", 1), ("a)", 1), ("^*", 1)],
)
def test_pattern_errors_have_positions(pattern: str, position: int) -> None:
    with pytest.raises(GrammarError) as info:
        json_string_pattern(pattern)
    assert info.value.position == position


def test_json_string_content_of_parsed_regex() -> None:
    # full-match semantics when the caller maps a parsed regex directly
    dfa = ir_to_dfa(json_string_content(parse_regex("[a-z]+é")))
    assert dfa.accepts(b"abc\\u00e9") and not dfa.accepts(b"xabc\\u00e9y".replace(b"y", b"1"))


# ------------------------------------------------------------------ lengths
def test_any_string_content_the_schemas_use() -> None:
    """The content of a schema's free string (an embedded automaton, built once) against ``json.loads``."""
    from tokensieve.grammar.json_schema import _lexical as lx

    node = lx.any_string_content()
    assert lx.any_string_content() is node
    dfa = ir_to_dfa(node)
    rng = random.Random(7)
    for _ in range(300):
        s = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6)))
        for enc in (json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1], random_spelling(s, rng)):
            assert dfa.accepts(enc.encode()) == (decode(enc) is not None), (s, enc)
    for text in BROKEN:
        assert dfa.accepts(text.encode()) == (decode(text) is not None), text


@pytest.mark.parametrize(("lo", "hi"), [(0, None), (0, 0), (1, 1), (2, 3), (3, None), (0, 4)])
def test_length(lo: int, hi: int | None) -> None:
    dfa = ir_to_dfa(json_string_length(lo, hi))
    rng = random.Random(lo * 31 + (hi or 0))
    for _ in range(300):
        s = "".join(rng.choice(ALPHABET[:-2]) for _ in range(rng.randint(0, 6)))
        expected = lo <= len(s) and (hi is None or len(s) <= hi)
        for enc in (json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1], random_spelling(s, rng)):
            assert dfa.accepts(enc.encode()) == expected, (lo, hi, s, enc)
    for bad in BROKEN:
        if decode(bad) is None:
            assert not dfa.accepts(bad.encode())


def test_length_errors_and_empty() -> None:
    assert json_string_length(3, 2) is NOTHING
    with pytest.raises(ValueError):
        json_string_length(-1)


def test_pattern_limits_and_memo() -> None:
    from tokensieve.errors import LimitExceeded
    from tokensieve.limits import Limits

    assert json_string_pattern("^ab+$") is json_string_pattern("^ab+$")
    with pytest.raises(LimitExceeded):
        json_string_pattern("a" * 50, Limits(max_pattern_length=10))
    with pytest.raises(TypeError):
        json_string_pattern(b"a")  # type: ignore[arg-type]


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    atoms = ["a", "b", "é", "[ab]", "[^a]", ".", "(?:a|b)", "😀"]
    parts = []
    for _ in range(rng.randint(0, 3)):
        atom = (
            rng.choice(atoms)
            if rng.random() < 0.6 or depth > 2
            else "(" + _random_pattern(rng, depth + 1) + ")"
        )
        parts.append(atom + rng.choice(["", "", "*", "+", "?", "{1,2}"]))
    body = "".join(parts)
    if rng.random() < 0.3:
        body = "^" + body
    if rng.random() < 0.3:
        body += "$"
    if rng.random() < 0.3:
        body += "|" + _random_pattern(rng, depth + 1)
    return body


@pytest.mark.parametrize("seed", range(4))
def test_random_patterns_with_anchors(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    for _ in range(60):
        pattern = _random_pattern(rng)
        try:
            node = json_string_pattern(pattern)
        except GrammarError:
            continue  # anchors where the parser does not support them
        checked += 1
        dfa = None if is_nothing(node) else ir_to_dfa(node)
        oracle = re.compile(_python_pattern(pattern))
        for _ in range(25):
            s = "".join(rng.choice(["a", "b", "c", "é", "😀", "\n"]) for _ in range(rng.randint(0, 5)))
            expected = oracle.search(s) is not None
            for enc in (json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1]):
                assert (dfa is not None and dfa.accepts(enc.encode())) == expected, (pattern, s, enc)
    assert checked >= 20
