"""Unicode property escapes (``\\p{...}``, ``\\P{...}``) in patterns, against the ``regex`` package.

The oracle is the third-party ``regex`` package, whose Unicode tables and
matcher are its own. Every code point is run through the pattern's automaton
(all at once, on their UTF-8 bytes) and compared with what ``regex`` finds in
the string of all code points. The two may carry different Unicode versions,
so only the code points to which both give the same General_Category are
compared (over 98 % of them; ``Any`` is checked on all).
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from tokensieve.automata import ir_to_dfa
from tokensieve.errors import GrammarError
from tokensieve.grammar import parse_regex
from tokensieve.grammar.json_strings import json_string_pattern
from tokensieve.grammar.regex import regex_to_dfa

regex = pytest.importorskip("regex")

#: every Unicode scalar value (no surrogates)
SCALARS = np.concatenate([np.arange(0xD800), np.arange(0xE000, 0x110000)])
TEXT = "".join(map(chr, SCALARS.tolist()))


def _utf8_matrix() -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes of every scalar value, ``(N, 4)`` padded with zeros, and their lengths."""
    cp = SCALARS
    length = 1 + (cp >= 0x80) + (cp >= 0x800) + (cp >= 0x10000)
    out = np.zeros((cp.size, 4), dtype=np.int64)
    for n in (1, 2, 3, 4):
        at = length == n
        c = cp[at]
        if n == 1:
            out[at, 0] = c
            continue
        lead = {2: 0xC0, 3: 0xE0, 4: 0xF0}[n]
        out[at, 0] = lead | (c >> (6 * (n - 1)))
        for k in range(1, n):
            out[at, k] = 0x80 | ((c >> (6 * (n - 1 - k))) & 0x3F)
    return out, length


UTF8, LENGTH = _utf8_matrix()


def _accepted(pattern: str) -> np.ndarray:
    """``bool (N,)``: which one-character strings the pattern's automaton accepts."""
    dfa = regex_to_dfa(pattern)
    table = np.asarray(dfa.transitions)
    state = np.full(SCALARS.size, dfa.start, dtype=np.int64)
    for k in range(4):
        live = (k < LENGTH) & (state >= 0)
        state[live] = table[state[live], UTF8[live, k]]
    return (state >= 0) & np.asarray(dfa.accepting)[np.maximum(state, 0)]


def _found(pattern: str) -> np.ndarray:
    """``bool (N,)``: which code points ``regex`` matches with ``pattern``."""
    hits = {ord(c) for c in regex.findall(pattern, TEXT)}
    return np.isin(SCALARS, np.fromiter(hits, dtype=np.int64, count=len(hits)))


def _same_category_in_both() -> np.ndarray:
    """``bool (N,)``: the code points to which both Unicode versions give one General_Category."""
    import unicodedata

    ours = np.array([unicodedata.category(chr(c)) for c in SCALARS.tolist()])
    theirs = np.full(SCALARS.size, "", dtype=ours.dtype)
    for category in sorted(set(ours.tolist())):
        theirs[_found(rf"\p{{{category}}}")] = category
    return ours == theirs


#: the code points compared (a category can change between Unicode versions: U+0295 went from Ll to Lo)
STABLE = _same_category_in_both()

# (our pattern, the same set for the regex package)
CASES = [
    (r"\p{L}", r"\p{L}"),
    (r"\p{Letter}", r"\p{L}"),
    (r"\p{Lu}", r"\p{Lu}"),
    (r"\p{Lowercase_Letter}", r"\p{Ll}"),
    (r"\p{LC}", r"[\p{Lu}\p{Ll}\p{Lt}]"),
    (r"\p{digit}", r"\p{Nd}"),
    (r"\p{gc=Nd}", r"\p{Nd}"),
    (r"\p{General_Category=Punctuation}", r"\p{P}"),
    (r"\p{punct}", r"\p{P}"),
    (r"\p{Mark}", r"\p{M}"),
    (r"\p{Zs}", r"\p{Zs}"),
    (r"\p{cntrl}", r"\p{Cc}"),
    (r"\p{S}", r"\p{S}"),
    (r"\p{Co}", r"\p{Co}"),
    (r"\P{L}", r"\P{L}"),
    (r"\P{Nd}", r"\P{Nd}"),
    (r"[\p{L}\d_-]", r"[\p{L}0-9_-]"),
    (r"[^\p{Lu}\p{Zs}]", r"[^\p{Lu}\p{Zs}]"),
    (r"[\P{L}a]", r"[\P{L}a]"),
    (r"\p{ASCII}", r"[\x00-\x7f]"),
    (r"\p{Assigned}", r"\P{Cn}"),
]


@pytest.mark.parametrize(("ours", "theirs"), CASES)
def test_property_sets_match_the_regex_package(ours: str, theirs: str) -> None:
    got, expected = _accepted(ours), _found(theirs)
    differ = np.flatnonzero((got != expected) & STABLE)
    assert not differ.size, (ours, [hex(c) for c in SCALARS[differ[:10]].tolist()])
    assert expected[STABLE].any() and STABLE.mean() > 0.95  # the comparison is not vacuous


def test_any_is_every_scalar_value() -> None:
    assert _accepted(r"\p{Any}").all()
    with pytest.raises(GrammarError, match="no string"):
        regex_to_dfa(r"\P{Any}")


def test_properties_inside_longer_patterns() -> None:
    dfa = regex_to_dfa(r"^\p{Lu}\p{Ll}+(?: \p{Lu}\p{Ll}+)*$")
    for text, ok in [
        ("Ada", True),
        ("Élodie Durand", True),
        ("Πλάτων", True),
        ("ada", False),
        ("Ada ", False),
    ]:
        assert dfa.accepts(text.encode()) == ok, text


def test_json_string_pattern_with_a_property() -> None:
    """The suite's ``^\\p{Letter}+$`` case, on the JSON string's contents in every spelling."""
    dfa = ir_to_dfa(json_string_pattern(r"^\p{Letter}+$"))
    for value, ok in [("Hello", True), ("π", True), ("123", False), ("", False), ("ab1", False)]:
        for spelling in {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}:
            assert dfa.accepts(spelling.encode()) == ok, (value, spelling)


BAD = [
    (r"\p{Foo}", 0, "unknown Unicode property"),
    (r"x\p{gc=Foo}", 1, "unknown General_Category value"),
    (r"[a\p{sc}]", 2, "needs a value"),
    (r"\p{Script=Latin}", 0, "not supported"),
    (r"\P{scx=Grek}", 0, "not supported"),
    (r"\p{Alphabetic}", 0, "not supported"),
    (r"\pL", 0, "in braces"),
    (r"ab\p{L", 2, "in braces"),
    (r"\p{}", 0, "unknown Unicode property"),
]


@pytest.mark.parametrize(("pattern", "position", "words"), BAD)
def test_bad_and_unsupported_properties_are_grammar_errors(pattern: str, position: int, words: str) -> None:
    with pytest.raises(GrammarError) as info:
        parse_regex(pattern)
    assert words in info.value.message
    assert info.value.column == position + 1


def test_bounded_repetition_of_a_large_class_in_a_json_pattern() -> None:
    """Built by layers: the subset construction of ``[\\p{Ll}0-9_]{2,15}`` ran past ``max_compile_work``."""
    dfa = ir_to_dfa(json_string_pattern(r"^(?!admin$)[\p{Ll}0-9_]{2,15}$"))
    oracle = regex.compile(r"^(?!admin$)[\p{Ll}0-9_]{2,15}$")
    alphabet = ["a", "é", "ß", "A", "1", "_", " ", "π", "Ω", "ǆ"]
    words = ["admin", "admins", "a" * 15, "a" * 16, "ǆǆ", "éπ_1" * 4]
    words += ["".join(p) for n in range(4) for p in itertools.product(alphabet, repeat=n)]
    for word in words:
        for spelling in {json.dumps(word)[1:-1], json.dumps(word, ensure_ascii=False)[1:-1]}:
            assert dfa.accepts(spelling.encode()) == bool(oracle.search(word)), (word, spelling)
