"""UTF-8 range compilation against Python's own encoder."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ill_formed_utf8 import ILL_FORMED_UTF8

from tokensieve.automata import ir_to_dfa
from tokensieve.automata.utf8 import class_automaton, class_sequences, utf8_sequences
from tokensieve.errors import GrammarError
from tokensieve.grammar import ir

BOUNDARIES = [
    0,
    0x7F,
    0x80,
    0x7FF,
    0x800,
    0xFFF,
    0x1000,
    0xD7FF,
    0xD800,
    0xDFFF,
    0xE000,
    0xFFFF,
    0x10000,
    0x3FFFF,
    0x40000,
    0x10FFFF,
]


def matches(seq: tuple[tuple[int, int], ...], data: bytes) -> bool:
    return len(seq) == len(data) and all(lo <= b <= hi for (lo, hi), b in zip(seq, data, strict=True))


def probes(lo: int, hi: int, rnd: random.Random) -> list[int]:
    near = [lo - 1, lo, lo + 1, hi - 1, hi, hi + 1] + [b + d for b in BOUNDARIES for d in (-1, 0, 1)]
    near += [rnd.randint(0, 0x10FFFF) for _ in range(60)] + [rnd.randint(lo, hi) for _ in range(60)]
    return [cp for cp in near if 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 0x10FFFF), st.integers(0, 0x10FFFF), st.randoms(use_true_random=False))
def test_sequences_cover_exactly_the_range(a: int, b: int, rnd: random.Random) -> None:
    lo, hi = min(a, b), max(a, b)
    seqs = utf8_sequences(lo, hi)
    assert len(seqs) <= 24
    for cp in probes(lo, hi, rnd):
        data = chr(cp).encode("utf-8")
        hits = sum(matches(s, data) for s in seqs)
        assert hits == (1 if lo <= cp <= hi else 0), (hex(lo), hex(hi), hex(cp))


def test_sequences_exhaustive_near_boundaries() -> None:
    for lo, hi in [(0x70, 0x90), (0x7F0, 0x810), (0xD7F0, 0xE010), (0xFFF0, 0x10010), (0x10FFF0, 0x10FFFF)]:
        seqs = utf8_sequences(lo, hi)
        for cp in range(lo - 16, hi + 17):
            if not 0 <= cp <= 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                continue
            data = chr(cp).encode("utf-8")
            assert sum(matches(s, data) for s in seqs) == (1 if lo <= cp <= hi else 0)
    # the surrogates never match: every sequence is valid UTF-8
    for seq in class_sequences(((0, 0x10FFFF),)):
        assert not matches(seq, b"\xed\xa0\x80")


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 0x10FFFF), st.integers(0, 0x3000)), min_size=1, max_size=5),
    st.randoms(use_true_random=False),
)
def test_class_automaton_accepts_exactly_the_members(
    spans: list[tuple[int, int]], rnd: random.Random
) -> None:
    ranges = [(lo, min(lo + width, 0x10FFFF)) for lo, width in spans]
    node = ir.char_class(ranges)
    if ir.is_nothing(node):
        # every range lies among the surrogates, which UTF-8 text cannot contain
        assert all(0xD800 <= lo and hi <= 0xDFFF for lo, hi in ranges)
        with pytest.raises(GrammarError):
            ir_to_dfa(node)
        return
    dfa = ir_to_dfa(node)
    members = ir.normalize_ranges(ranges)
    cps = [cp for lo, hi in members for cp in probes(lo, hi, rnd)]
    for cp in cps:
        inside = any(lo <= cp <= hi for lo, hi in members)
        assert dfa.accepts(chr(cp).encode("utf-8")) == inside, hex(cp)
    # nothing but well-formed UTF-8 gets through
    for bad in ILL_FORMED_UTF8:
        assert not dfa.accepts(bad)
    if isinstance(node, ir.CharClass):
        auto = class_automaton(node.ranges)
        assert auto.num_edges <= sum(len(s) for s in class_sequences(node.ranges))


def test_common_classes_stay_small() -> None:
    from tokensieve.grammar.regex import DOT, SPACE, WORD

    assert class_automaton(WORD).num_edges == 1
    assert class_automaton(DOT).num_edges <= 20
    assert class_automaton(SPACE).num_edges <= 20
    everything = ir_to_dfa(ir.char_class([(0, 0x10FFFF)]))
    assert everything.num_states == 9  # the textbook UTF-8 validator, plus its accepting state
