"""Top-level lookaheads in patterns, against Python's ``re`` on every short string.

Patterns are put together from pieces where ECMA-262 and Python agree (``$``
is written ``\\Z`` for Python, which otherwise also matches before a final
line feed). Every string of up to four characters over a small alphabet is
checked: whole-output matches (``regex_to_dfa``, ``re.fullmatch``) and JSON
Schema search semantics over the JSON spellings of the string
(``json_string_pattern``, ``re.search``).
"""

from __future__ import annotations

import itertools
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokensieve.automata import ir_to_dfa
from tokensieve.errors import GrammarError
from tokensieve.grammar import parse_regex
from tokensieve.grammar.json_strings import json_string_pattern
from tokensieve.grammar.lookahead import find_lookaheads
from tokensieve.grammar.regex import regex_to_dfa

ALPHABET = "ab1\n"
STRINGS = ["".join(p) for n in range(5) for p in itertools.product(ALPHABET, repeat=n)]

LOOKAHEADS = ["(?=.*a)", "(?!.*b)", "(?=ab)", "(?!a$)", "(?=[ab]{2})", "(?=.*1$)", "(?!1)", "(?=b|1)", "(?=)"]
MATCHES = ["", "[ab]*", "a+", "b?", "\\d", ".", "(?:a|1)", "[^a]*", "a"]


def _python(pattern: str) -> str:
    return re.sub(r"(?<!\\)\$", r"\\Z", pattern)


@st.composite
def patterns(draw: st.DrawFn) -> str:
    items = draw(st.lists(st.sampled_from(MATCHES), min_size=1, max_size=3))
    looks = draw(st.lists(st.sampled_from(LOOKAHEADS), min_size=1, max_size=3))
    body: list[str] = []
    for k in range(max(len(items), len(looks))):
        if k < len(looks) and draw(st.booleans()):
            body.append(looks[k])
        if k < len(items):
            body.append(items[k])
        if k < len(looks) and body[-1:] != [looks[k]]:
            body.append(looks[k])
    start = "^" if draw(st.booleans()) else ""
    end = "$" if draw(st.booleans()) else ""
    return start + "".join(body) + end


def _check_full_match(pattern: str) -> None:
    oracle = re.compile(_python(pattern))
    try:
        dfa = regex_to_dfa(pattern)
    except GrammarError as exc:  # a pattern that matches nothing at all
        assert "no string" in exc.message
        assert not any(oracle.fullmatch(s) for s in STRINGS)
        return
    for s in STRINGS:
        assert dfa.accepts(s.encode()) == bool(oracle.fullmatch(s)), (pattern, s)


def _check_search(pattern: str) -> None:
    oracle = re.compile(_python(pattern))
    dfa = _dfa_or_none(json_string_pattern(pattern))
    for s in STRINGS:
        expected = bool(oracle.search(s))
        for spelling in {json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1]}:
            got = dfa is not None and dfa.accepts(spelling.encode())
            assert got == expected, (pattern, s, spelling)


def _dfa_or_none(content):
    try:
        return ir_to_dfa(content)
    except GrammarError:
        return None  # empty language


@settings(max_examples=150, deadline=None)
@given(patterns())
def test_lookaheads_against_python_re(pattern: str) -> None:
    assert find_lookaheads(pattern) is not None
    _check_full_match(pattern)
    _check_search(pattern)


REAL_WORLD = [
    r"^(?=.*[A-Z])(?=.*[a-z])(?=.*\d)[A-Za-z\d]{8,}$",  # a password
    r"^(?!.*\.\.)(?!\.)[a-z0-9.]+$",  # no leading dot, no two dots in a row
    r"^(?!admin$|root$)[a-z]+$",  # reserved names (the '|' is inside the lookahead)
    r"(?=.*\d)",  # contains a digit (search semantics)
]


@pytest.mark.parametrize("pattern", REAL_WORLD)
def test_real_world_patterns(pattern: str) -> None:
    oracle = re.compile(_python(pattern))
    strings = [
        "Passw0rd",
        "password",
        "PASSWORD1",
        "Ab1",
        "a..b",
        ".ab",
        "a.b",
        "admin",
        "admins",
        "root",
        "x9",
    ]
    dfa = ir_to_dfa(json_string_pattern(pattern))
    for s in strings:
        assert dfa.accepts(json.dumps(s)[1:-1].encode()) == bool(oracle.search(s)), (pattern, s)
    if pattern.startswith("^"):  # a whole-output match of the others needs the empty string to pass them
        full = regex_to_dfa(pattern)
        for s in strings:
            assert full.accepts(s.encode()) == bool(oracle.fullmatch(s)), (pattern, s)
    else:
        with pytest.raises(GrammarError, match="no string"):
            regex_to_dfa(pattern)


@pytest.mark.parametrize(
    ("pattern", "position", "words"),
    [
        ("(a(?=b))", 2, "inside a group"),
        ("x(?:(?!b)c)", 4, "inside a group"),
        ("a(?=b)|c", 6, "'|'"),
        ("a(?=b)+", 6, "quantified"),
        ("a(?=b){2}", 6, "quantified"),
        ("(?<=a)b(?=c)", 0, "lookbehind"),
        ("a(?=b^)", 5, "anchor"),
        ("a$(?=b)", 1, "anchor"),
        ("(?=(?=a))a", 3, "inside a group"),
    ],
)
def test_lookarounds_left_unsupported(pattern: str, position: int, words: str) -> None:
    with pytest.raises(GrammarError) as info:
        parse_regex(pattern)
    assert info.value.unsupported
    assert info.value.position == position, info.value
    assert words in info.value.message


def test_errors_inside_a_piece_point_into_the_whole_pattern() -> None:
    with pytest.raises(GrammarError) as info:
        parse_regex("^(?=.*\\d)[z-a]+$")
    assert info.value.position == 10 and not info.value.unsupported  # the range's first end
    with pytest.raises(GrammarError) as info:
        parse_regex("x(?=[b-a])y")
    assert info.value.position == 5


def test_the_number_of_lookaheads_is_bounded() -> None:
    """Each lookahead costs an automaton product: past ``max_lookaheads`` a LimitExceeded names the bound."""
    from tokensieve import LimitExceeded, Limits

    many = "^" + "(?=.*a)" * 17 + "[ab]*$"
    for build in (parse_regex, json_string_pattern):
        with pytest.raises(LimitExceeded) as info:
            build(many)
        assert info.value.limit == "max_lookaheads" and info.value.value == 16
    allowed = regex_to_dfa(many, Limits(max_lookaheads=17))
    assert allowed.accepts(b"ab") and not allowed.accepts(b"bb")
