"""Bounded repetitions built by layers, against the subset construction of the same repetition."""

from __future__ import annotations

import pytest

from tokensieve import LimitExceeded, Limits
from tokensieve.automata import ir_to_dfa
from tokensieve.automata.counted import counted_repeat
from tokensieve.automata.ops import automaton_to_dfa
from tokensieve.grammar import ir, parse_regex
from tokensieve.grammar.json_strings import json_string_char

UNITS = {
    "json character": json_string_char(),
    "blank": ir.byte_class([(0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)]),
    "two spellings": parse_regex("ab|c|d[ef]"),
}
BOUNDS = [(0, 0), (0, 1), (1, 1), (2, 5), (0, 7), (3, None), (0, None), (1, None)]


@pytest.mark.parametrize("name", sorted(UNITS))
@pytest.mark.parametrize(("lo", "hi"), BOUNDS)
def test_layers_give_the_minimal_automaton_of_the_repetition(checks, name: str, lo: int, hi: int | None) -> None:
    unit = UNITS[name]
    built = counted_repeat(unit, lo, hi)
    assert built is not None
    expected = ir_to_dfa(ir.repeat(unit, lo, hi))
    dfa = automaton_to_dfa(built)  # canonical numbering; the same number of states when minimal
    assert dfa.same_as(expected)
    assert built.num_states == expected.num_states
    raw = ir_to_dfa(built)  # the node as it is (a lone embedded automaton is copied as is)
    checks.assert_trimmed(raw)


def test_json_strings_of_bounded_length() -> None:
    built = automaton_to_dfa(counted_repeat(json_string_char(), 2, 3))
    for text, ok in [("ab", True), ("a\\u00e9\\ud83d\\ude00", True), ("é😀", True), ("a", False), ("abcd", False)]:
        content = text.encode()
        assert built.accepts(content) == ok, text


@pytest.mark.parametrize("pattern", ["a|ab", "a*", "(ab)+"])
def test_items_that_are_not_units_are_left_to_the_caller(pattern: str) -> None:
    # the final state reads on, the start accepts or is entered again
    assert counted_repeat(parse_regex(pattern), 1, 3) is None


def test_bounds_are_checked_and_the_state_limit_applies() -> None:
    with pytest.raises(ValueError):
        counted_repeat(UNITS["blank"], 3, 2)
    with pytest.raises(ValueError):
        counted_repeat(UNITS["blank"], -1, 2)
    with pytest.raises(LimitExceeded, match="max_dfa_states"):
        counted_repeat(json_string_char(), 0, 1000, Limits(max_dfa_states=10_000))
