"""Choice lists: the DFA accepts exactly the set, and is the minimal one."""

from __future__ import annotations

import random
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokensieve.automata import choices_to_dfa
from tokensieve.errors import GrammarError
from tokensieve.grammar.regex import regex_to_dfa

ALPHABET = "abc\x00é€😀"
texts = st.text(alphabet=ALPHABET, max_size=6)


def byte_prefixes(items: set[bytes]) -> set[bytes]:
    return {s[:k] for s in items for k in range(len(s) + 1)}


@settings(max_examples=200, deadline=None)
@given(words=st.lists(texts, min_size=1, max_size=40), rnd=st.randoms(use_true_random=False))
def test_accepts_exactly_the_set(words: list[str], rnd: random.Random, checks) -> None:
    dfa = choices_to_dfa(words)
    members = {w.encode() for w in words}
    prefixes = byte_prefixes(members)
    others = {"".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 7))).encode() for _ in range(60)}
    for data in prefixes | others | {p + b"\xff" for p in prefixes}:
        assert dfa.accepts(data) == (data in members), data
        assert dfa.is_prefix(data) == (data in prefixes), data
    checks.assert_trimmed(dfa)
    if dfa.num_states <= 80:
        checks.assert_minimal(dfa)
    assert dfa.start == 0


@settings(max_examples=60, deadline=None)
@given(words=st.lists(texts, min_size=1, max_size=25))
def test_same_table_as_the_alternation(words: list[str], checks) -> None:
    by_list = choices_to_dfa(words)
    by_regex = regex_to_dfa("|".join("(?:" + "".join(_ecma(c) for c in w) + ")" for w in words))
    assert checks.isomorphic(by_list, by_regex)
    assert by_list.same_as(by_regex)  # both numbered breadth-first from the start


def _ecma(c: str) -> str:
    return f"\\u{{{ord(c):x}}}"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=5), min_size=1, max_size=30))
def test_raw_bytes(items: list[bytes]) -> None:
    dfa = choices_to_dfa(items)
    members = set(items)
    prefixes = byte_prefixes(members)
    for data in prefixes | {p + bytes([b]) for p in list(prefixes)[:20] for b in (0, 0x80, 0xFF)}:
        assert dfa.accepts(data) == (data in members)
        assert dfa.is_prefix(data) == (data in prefixes)


def test_edge_cases(checks) -> None:
    with pytest.raises(GrammarError, match="empty"):
        choices_to_dfa([])
    only_empty = choices_to_dfa([""])
    assert only_empty.num_states == 1 and only_empty.accepts(b"") and not only_empty.is_prefix(b"a")
    dup = choices_to_dfa(["ab", "ab", b"ab", ""])
    assert dup.accepts(b"ab") and dup.accepts(b"") and not dup.accepts(b"a")
    checks.assert_minimal(dup)
    with pytest.raises(GrammarError, match="choice 1"):
        choices_to_dfa(["ok", "bad\ud800"])
    with pytest.raises(TypeError):
        choices_to_dfa("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        choices_to_dfa(["a", 3])  # type: ignore[list-item]
    shared = choices_to_dfa(["xa", "ya", "za", "xb", "yb", "zb"])
    assert shared.num_states == 3  # [xyz] then [ab] then the end


def test_large_lists_are_fast() -> None:
    rnd = random.Random(7)
    words = ["".join(rnd.choice("abcdefghij") for _ in range(rnd.randint(1, 12))) for _ in range(100_000)]
    t0 = time.perf_counter()
    dfa = choices_to_dfa(words)
    elapsed = time.perf_counter() - t0
    assert elapsed < 5.0, elapsed  # about 0.2 s; the bound only guards against a quadratic regression
    members = set(words)
    for w in rnd.sample(words, 2000):
        assert dfa.accepts(w.encode())
    pattern = re.compile("[a-j]{1,12}")
    for _ in range(2000):
        s = "".join(rnd.choice("abcdefghij") for _ in range(rnd.randint(0, 13)))
        expected = s in members
        assert dfa.accepts(s.encode()) == expected
        if expected:
            assert pattern.fullmatch(s)


def test_long_strings() -> None:
    long = ["x" * 5000 + "a", "x" * 5000 + "b", "x" * 4999]
    dfa = choices_to_dfa(long)
    assert dfa.accepts(long[0].encode()) and dfa.accepts(long[2].encode())
    assert not dfa.accepts(b"x" * 5000)
    assert dfa.num_states == 5002
