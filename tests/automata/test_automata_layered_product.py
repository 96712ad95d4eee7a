"""Length-bounded repetitions intersected with another language, built by layers.

Oracle: the general product (subset construction and minimisation) of the
same two languages, compared as minimal automata; and the layers' own claims
(bases, rooms, counts needed to end) checked on the product's table by
search.
"""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve.automata import layered_product
from tokensieve.automata.counted import counted_repeat
from tokensieve.automata.layered_product import MAX_COUNTED, layered_intersection
from tokensieve.automata.layers import ExplicitLayers, layers_of
from tokensieve.automata.ops import automaton_to_dfa, ir_intersect, stored_dfa
from tokensieve.grammar import json_formats, parse_regex
from tokensieve.grammar.ir import Automaton
from tokensieve.grammar.json_strings import json_string_char, json_string_content

PATTERNS = [
    "[a-c]+@[a-c]+",  # a separator that comes after a unit at least
    "(ab|c)*d",
    "a{2,5}(b|cd)*",
    "[0-9]{3}-[0-9]{4}",  # a bounded language: every place reads a bounded tail
    "x*",
    "(a|b)*c(a|b){0,3}",  # an unbounded head and a bounded tail
    "(\\[[0-9]{1,3}\\])?z+",
    "[é€😀a]+b?",  # multi-byte characters, in every spelling once the content of a string
]
BOUNDS = [(0, 1), (0, 5), (2, 9), (4, 4), (0, 30), (7, 40)]


def _content(pattern: str):
    return json_string_content(parse_regex(pattern))


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize(("lo", "hi"), BOUNDS)
def test_the_layered_product_is_the_intersection(checks, pattern: str, lo: int, hi: int) -> None:
    counted = counted_repeat(json_string_char(), lo, hi)
    other = _content(pattern)
    expected = ir_intersect(counted, other)
    built = layered_intersection(counted, other)
    if built is None:  # an empty intersection is left to the general product
        assert not isinstance(expected, Automaton)
        return
    assert automaton_to_dfa(built).same_as(automaton_to_dfa(expected))
    checks.assert_trimmed(stored_dfa(built))
    assert built.num_states >= expected.num_states


@pytest.mark.parametrize("block", [1, 3, 5, 7])
def test_the_table_written_a_block_of_rows_at_a_time_is_the_same(monkeypatch, block: int) -> None:
    """The product's table is written a block of rows at a time: small blocks give its automaton."""
    counted = counted_repeat(json_string_char(), 2, 30)
    other = _content("(a|b)*c(a|b){0,3}")
    whole = layered_intersection(counted, other)
    assert whole is not None
    poison = np.full((whole.num_states, 256), 7, dtype=np.int32)  # a row left unwritten would read it
    del poison
    monkeypatch.setattr(layered_product, "_BLOCK", block)
    blocks = layered_intersection(counted, other)
    assert whole is not None and blocks is not None and whole.num_states > 20
    np.testing.assert_array_equal(stored_dfa(blocks).transitions, stored_dfa(whole).transitions)
    np.testing.assert_array_equal(stored_dfa(blocks).accepting, stored_dfa(whole).accepting)


def _runs(table: np.ndarray, start: int, depth: int) -> dict[bytes, int]:
    """Every byte string of at most ``depth`` bytes that does not die from ``start``, and the state it ends in."""
    out = {b"": start}
    frontier = [(b"", start)]
    for _ in range(depth):
        nxt = []
        for text, s in frontier:
            for byte in np.flatnonzero(table[s] >= 0).tolist():
                item = (text + bytes([byte]), int(table[s, byte]))
                out[item[0]] = item[1]
                nxt.append(item)
        frontier = nxt
    return out


def _units_begun(unit, place: int, text: bytes) -> tuple[int, int]:
    """Units begun reading ``text`` from ``place`` of the unit's table, and the place it ends at (-1: left)."""
    begun = 0
    for byte in text:
        after = int(unit.table[place, byte])
        if after < 0:
            return begun, -1
        begun += bool(unit.begins[place])
        place = after
    return begun, place


@pytest.mark.parametrize(
    ("pattern", "lo", "hi"),
    [
        ("[a-c]+@[a-c]+", 0, 12),
        ("(a|b)*c(a|b){0,3}", 2, 14),
        ("(ab|c)*d", 1, 10),
        ("[é€a]+b?", 0, 9),
        # near the bound, the literal's places derive from their free state
        ("a+@(\\[[0-9]{1,6}\\]|b+)", 1, 12),
    ],
)
def test_a_derived_state_reads_as_its_base_less_what_does_not_fit(pattern: str, lo: int, hi: int) -> None:
    """For every derived state and every short string from it: the string lives iff it lives from the
    base and the units it begins, plus the fewest that lead on from where it ends, fit the room."""
    built = layered_intersection(counted_repeat(json_string_char(), lo, hi), _content(pattern))
    assert built is not None
    layers = layers_of(built)
    assert isinstance(layers, ExplicitLayers) and layers.states.size
    table = stored_dfa(built).transitions
    unit = layers.unit_table
    assert set(layers.places.tolist()) <= set(unit.counted.tolist())
    for s, b, room, place in zip(*(a.tolist() for a in layers.derived(built.num_states)[:4]), strict=True):
        here, there = _runs(table, s, 4), _runs(table, b, 4)
        assert set(here) <= set(there)
        for text in there:
            begun, end = _units_begun(unit, place, text)
            need = begun + (int(unit.extra[end]) if end >= 0 else 0)
            assert (text in here) == (need <= room), (s, b, text)


@pytest.mark.parametrize(
    ("pattern", "lo", "hi"),
    [(p, lo, hi) for p in PATTERNS for lo, hi in BOUNDS]
    + [("email", 5, 60), ("email", 0, 30), ("email", 0, 254)],
)
def test_no_base_is_derived_itself(pattern: str, lo: int, hi: int) -> None:
    """A derived state's base is walked: a base-layer state too near the bound for its place's tail
    (an e-mail address of at most 60 characters: the literal's 51 units do not fit after 24) derives
    from the free state itself, and so do the later states of its place."""
    content = (
        json_string_content(json_formats.format_content("email")) if pattern == "email" else _content(pattern)
    )
    built = layered_intersection(counted_repeat(json_string_char(), lo, hi), content)
    if built is None:
        return
    layers = layers_of(built)
    assert isinstance(layers, ExplicitLayers)
    states, bases = layers.derived(built.num_states)[:2]
    assert not np.isin(bases, states).any()


def test_lags_count_layers_past_the_last_walked_state() -> None:
    """No walked state lies between a derived state and the layers its lag says are walked before it:
    every state at most ``lag`` bytes before it is derived or the walk reaches it within the lag."""
    built = layered_intersection(counted_repeat(json_string_char(), 0, 60), _content("[a-c]+@[a-c]+"))
    assert built is not None
    layers = layers_of(built)
    assert isinstance(layers, ExplicitLayers)
    states, _, _, _, lags = layers.derived(built.num_states)
    derived = np.zeros(built.num_states, dtype=bool)
    derived[states] = True
    table = stored_dfa(built).transitions
    # the fewest bytes from any walked state to each state (one byte is one layer at most)
    dist = np.full(built.num_states, 1 << 30)
    dist[~derived] = 0
    src, byte = np.nonzero(table >= 0)
    dst = table[src, byte]
    for _ in range(built.num_states):
        new = dist.copy()
        np.minimum.at(new, dst, dist[src] + 1)
        if np.array_equal(new, dist):
            break
        dist = new
    # a state ``lag`` layers past the last walked layer is at least ``lag`` bytes from every walked state
    assert (dist[states] >= lags).all()
    assert lags.max() > 30  # the test reaches far layers


def test_bounded_tails_are_shared_across_layers() -> None:
    """Places that read a bounded tail (an address literal) are one state for every layer with room
    for it, so the product stays near the minimal automaton's size."""
    counted = counted_repeat(json_string_char(), 0, 254)
    email = json_formats.format_content("email")
    content = json_string_content(email)
    built = layered_intersection(counted, content)
    assert built is not None
    expected = ir_intersect(counted, content)
    assert built.num_states <= 1.2 * expected.num_states
    layers = layers_of(built)
    assert isinstance(layers, ExplicitLayers)
    assert layers.states.size > built.num_states // 3
    assert 0 < layers.unit_table.counted.size <= MAX_COUNTED
    # walked: the layers up to the base (24 layers of at most 22 places) and the literal's shared states
    # (162); the literal's places in the layers too near the bound for it (3,445 states) derive from those
    assert built.num_states - layers.states.size < 1000


def test_what_is_not_a_counted_repetition_is_left_to_the_caller() -> None:
    unbounded = counted_repeat(json_string_char(), 2, None)
    assert layered_intersection(unbounded, _content("a+")) is None
    plain = ir_intersect(parse_regex("a+"), parse_regex("a{0,3}"))
    assert layered_intersection(plain, _content("a+")) is None
    # empty intersections too: the general product says so
    assert layered_intersection(counted_repeat(json_string_char(), 0, 3), _content("abcd")) is None
