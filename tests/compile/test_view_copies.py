"""The walk's arrays of an unrolled automaton, its copies' rows made from their places'.

Oracle: the same arrays read off every row of the table (``AutomatonView``
given no copies), which the tests of the character and class chains check
against their definitions.
"""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve.automata import ir_to_dfa
from tokensieve.automata.blank_runs import bound_blank_runs
from tokensieve.automata.pushdown import compile_grammar_automaton
from tokensieve.compile.token_masks import AutomatonView
from tokensieve.grammar import ir
from tokensieve.grammar.json_schema import schema_to_grammar

SCHEMAS = [
    {"type": "array", "items": {"type": "integer"}},
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+@[a-z]+$"}},
            "size": {"type": "number", "minimum": 0},
        },
        "required": ["name"],
        "additionalProperties": {"type": "integer"},
    },
    {"type": "object", "additionalProperties": {"type": "boolean"}, "maxProperties": 2},
    {
        "anyOf": [
            {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
            {"enum": [[1, {}], {"a": []}]},
        ]
    },
    {"type": "array", "items": {"type": "string"}},  # free strings (UTF-8 loops) next to the places
]

WS = ir.byte_class([(0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)])


def _schema_dfa(schema, options):
    grammar, _ = schema_to_grammar(schema, blank_runs="automaton", **options)
    return compile_grammar_automaton(grammar, blank_runs=options.get("max_whitespace", 32))


def _same_view(dfa) -> None:
    derived = AutomatonView.of(dfa)
    scanned = AutomatonView(dfa.transitions, dfa.accepting)
    assert derived.chains is not None and scanned.chains is not None
    assert derived.jump_utf8 is not None and scanned.jump_utf8 is not None  # built on first use
    for name, want in vars(scanned).items():
        if name == "_copy_rows":
            continue
        got = vars(derived)[name]
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype, name
            assert np.array_equal(got, want), name
        elif isinstance(want, tuple) and want and isinstance(want[0], np.ndarray):
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.dtype and np.array_equal(g, w), name
        elif name != "_nbytes":
            assert got == want, name


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
@pytest.mark.parametrize("options", [{"max_whitespace": 1}, {"max_whitespace": 3}, {"max_whitespace": 20}])
def test_schema_automata(schema, options) -> None:
    dfa = _schema_dfa(schema, options)
    assert dfa.blank_chains is not None
    _same_view(dfa)
    rows = dfa.blank_chains.copy_rows(dfa.transitions)
    assert rows is not None
    if options["max_whitespace"] > 1:
        assert rows.copies.size  # the rows were made, not read
    else:
        assert not rows.copies.size  # a single copy is the last one


def test_a_place_that_loops_on_another_byte_has_its_copies_read() -> None:
    # "a" [ \t\n\r x]* "b": the place loops on the blanks and on "x"; "c" [ \t\n\r]* "d" does not
    node = ir.alt(
        ir.concat(ir.literal("a"), ir.star(ir.alt(WS, ir.literal("x"))), ir.literal("b")),
        ir.concat(ir.literal("c"), ir.star(WS), ir.literal("d")),
    )
    dfa = bound_blank_runs(ir_to_dfa(node), 6)
    assert dfa is not None and dfa.blank_chains is not None
    chains = dfa.blank_chains
    rows = chains.copy_rows(dfa.transitions)
    assert rows is not None
    looping = [k for k, p in enumerate(chains.places.tolist()) if dfa.transitions[p, ord("x")] == p]
    assert len(looping) == 1
    mine = np.arange(chains.most) + chains.first + looping[0] * chains.most
    assert np.isin(mine, rows.scanned).all()
    assert rows.copies.size == chains.most - 1  # the other place's copies but its last
    _same_view(dfa)


def test_states_after_the_copies_mean_no_rows_are_made() -> None:
    dfa = _schema_dfa(SCHEMAS[0], {"max_whitespace": 4})
    chains = dfa.blank_chains
    longer = np.vstack([dfa.transitions, np.full((1, 256), -1, dtype=np.int32)])
    assert chains.copy_rows(longer) is None
    view = AutomatonView(longer, np.append(dfa.accepting, False), copies=chains)
    assert view._copy_rows is None


@pytest.mark.parametrize("schema", SCHEMAS[:2], ids=range(2))
def test_targets_read_off_the_places_rows(schema) -> None:
    # from the space on: the place's space leads to its first copy, a copy's to its next copy
    from tokensieve.compile.char_chains import _uniform_step

    dfa = _schema_dfa(schema, {"max_whitespace": 5})
    rows = dfa.blank_chains.copy_rows(dfa.transitions)
    for lo, hi in ((0x20, 0x7E), (0x09, 0x20), (0x30, 0x39)):
        made = _uniform_step(dfa.transitions, lo, hi, copies=rows)
        read = _uniform_step(dfa.transitions, lo, hi)
        assert np.array_equal(made[0], read[0])
        assert np.array_equal(made[1], read[1])
