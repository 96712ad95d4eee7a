"""Runs of JSON blanks counted into an automaton built with unbounded ones.

Oracles: a plain predicate over every short string (the longest run of
blanks), the automaton the grammar with ``{0,N}`` runs gives, and the
JSON Schema compiler with the bound written into the grammar.
"""

from __future__ import annotations

import itertools
import json
import random
import re

import pytest

from tokensieve import GrammarCompiler, GrammarMatcher, LimitExceeded, Limits, TokenizerInfo
from tokensieve.automata import ir_to_dfa
from tokensieve.automata.blank_runs import bound_blank_runs
from tokensieve.automata.ops import automaton_to_dfa, dfa_to_ir
from tokensieve.automata.pushdown import compile_grammar_automaton
from tokensieve.grammar import ir
from tokensieve.grammar.json_schema import schema_to_grammar

from ..support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab


def _canonical(dfa):
    """The minimal automaton of ``dfa``'s language, numbered canonically."""
    return automaton_to_dfa(dfa_to_ir(dfa))


WS = ir.byte_class([(0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)])
BLANK = "[ \t\n\r]"


def _longest_blank_run(text: str) -> int:
    return max((len(m.group()) for m in re.finditer(BLANK + "+", text)), default=0)


@pytest.mark.parametrize("most", [0, 1, 2, 3])
def test_every_short_string_against_a_plain_predicate(most: int) -> None:
    # "a" blanks* ("b" blanks*)* "c": every run of blanks sits between two letters
    node = ir.concat(
        ir.literal("a"), ir.star(WS), ir.star(ir.concat(ir.literal("b"), ir.star(WS))), ir.literal("c")
    )
    dfa = bound_blank_runs(ir_to_dfa(node), most)
    assert dfa is not None
    shape = re.compile(f"a{BLANK}*(b{BLANK}*)*c")
    for length in range(1, 9):
        for letters in itertools.product("abc \t\n", repeat=length):
            text = "".join(letters)
            expected = bool(shape.fullmatch(text)) and _longest_blank_run(text) <= most
            assert dfa.accepts(text.encode()) == expected, (text, most)


def test_a_blank_entering_the_place_is_the_first_of_the_run() -> None:
    # a number's last digit reads the first blank of the run after it (its own state does not loop)
    node = ir.concat(ir.plus(ir.byte_class([(0x30, 0x39)])), ir.star(WS), ir.literal("]"))
    dfa = bound_blank_runs(ir_to_dfa(node), 2)
    assert dfa is not None
    assert dfa.accepts(b"12]") and dfa.accepts(b"12 ]") and dfa.accepts(b"12\n\t]")
    assert not dfa.accepts(b"12   ]")


def test_the_same_language_as_bounded_runs_in_the_grammar(checks) -> None:
    for layout in ("{", "[", "obj"):
        for most in (1, 4, 32):
            run = ir.repeat(WS, 0, most)
            if layout == "obj":
                parts = [ir.literal("{"), None, ir.literal('"k"'), None, ir.literal(":"), None]
                parts += [ir.literal("1"), None, ir.literal("}")]
            else:
                parts = [
                    ir.literal(layout),
                    None,
                    ir.literal("0"),
                    None,
                    ir.literal("," if layout == "[" else ";"),
                ]
            bounded = ir.concat(*(run if p is None else p for p in parts))
            loose = ir.concat(*(ir.star(WS) if p is None else p for p in parts))
            counted = bound_blank_runs(ir_to_dfa(loose), most)
            assert counted is not None
            assert _canonical(counted).same_as(_canonical(ir_to_dfa(bounded))), (layout, most)
            checks.assert_trimmed(counted)


def test_a_run_that_starts_before_the_place_is_refused() -> None:
    # the second literal blank leads into the loop from a state reached on the first
    loose = ir.concat(ir.literal("a  "), ir.star(WS), ir.literal("b"))
    assert bound_blank_runs(ir_to_dfa(loose), 3) is None
    # one literal blank is the run's first: counted
    once = bound_blank_runs(ir_to_dfa(ir.concat(ir.literal("a "), ir.star(WS), ir.literal("b"))), 3)
    assert once is not None
    assert once.accepts(b"a   b") and not once.accepts(b"a    b")


def test_without_loops_the_automaton_is_kept_and_limits_hold() -> None:
    plain = ir_to_dfa(ir.literal("[ 1 ]"))
    assert bound_blank_runs(plain, 5) is plain
    loose = ir_to_dfa(ir.concat(ir.literal("["), ir.star(WS), ir.literal("]")))
    with pytest.raises(LimitExceeded):
        bound_blank_runs(loose, 500, Limits(max_dfa_states=100))
    with pytest.raises(ValueError):
        bound_blank_runs(loose, -1)


SCHEMAS = [
    {"type": "array", "items": {"type": "integer"}},
    {
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "b": {"type": "array", "items": {"type": "string", "maxLength": 3}},
        },
        "required": ["a"],
        "additionalProperties": False,
    },
    {"type": "object", "additionalProperties": {"type": "boolean"}, "maxProperties": 2},
    {
        "anyOf": [
            {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
            {"enum": [[1, {}], {"a": []}]},
        ]
    },
]


@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize("options", [{"max_whitespace": 3}, {"max_whitespace": 32}, {"indent": 2}])
def test_schemas_give_the_language_of_the_bound_written_in_the_grammar(schema, options) -> None:
    in_grammar, _ = schema_to_grammar(schema, blank_runs="grammar", **options)
    counted, _ = schema_to_grammar(schema, blank_runs="automaton", **options)
    most = options.get("max_whitespace", 32)
    expected = compile_grammar_automaton(in_grammar)
    got = compile_grammar_automaton(counted, blank_runs=most)
    assert _canonical(got).same_as(_canonical(expected))


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    vocab = make_tiny_vocab()
    info = TokenizerInfo(
        vocab, vocab_size=len(vocab) + 3, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )
    return GrammarCompiler(info, cache_enabled=False)


def _spaced(value: object, rng: random.Random, most: int) -> str:
    """``value`` as JSON with a random run of up to ``most + 1`` blanks in every layout place."""
    text = json.dumps(value, separators=(",", ":"))
    out = []
    in_string = escaped = False
    for ch in text:
        out.append(ch)
        if in_string:
            in_string = escaped or ch != '"'
            escaped = not escaped and ch == "\\"
            continue
        if ch == '"':
            in_string = True
            continue
        if ch in "[{,:" or rng.random() < 0.3:
            out.append("".join(rng.choice(" \t\n\r") for _ in range(rng.randint(0, most + 1))))
    return "".join(out).rstrip(" \t\n\r")


def test_recursive_schemas_bound_every_run(compiler) -> None:
    tree = {
        "type": "object",
        "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["v"],
        "additionalProperties": False,
    }
    compiled = compiler.compile_json_schema(tree, max_whitespace=2)
    rng = random.Random(5)
    values = [{"v": 1}, {"v": 2, "kids": []}, {"v": 3, "kids": [{"v": 4, "kids": [{"v": 5}]}, {"v": 6}]}]
    for _ in range(60):
        text = _spaced(rng.choice(values), rng, 2)
        matcher = GrammarMatcher(compiled)
        ok = matcher.accept_string(text) and matcher.is_completed()
        assert ok == (_longest_blank_run(text) <= 2), text


def test_the_compiler_writes_the_bound_into_the_grammar_when_runs_cannot_be_counted(
    compiler, monkeypatch
) -> None:
    from tokensieve.automata import pushdown
    from tokensieve.automata.blank_runs import RunsNotCountable

    build = pushdown.ir_to_dfa

    def uncountable(node, limits=None, *, blank_runs=None):
        if blank_runs is not None:
            raise RunsNotCountable("as if a run started before its place")
        return build(node, limits)

    monkeypatch.setattr(pushdown, "ir_to_dfa", uncountable)
    compiled = compiler.compile_json_schema({"type": "array", "items": {"type": "integer"}}, max_whitespace=3)
    for text, ok in [("[1,   2]", True), ("[1,    2]", False), ("[\n\t 1]", True), ("[1 \n\t\r]", False)]:
        matcher = GrammarMatcher(compiled)
        assert (matcher.accept_string(text) and matcher.is_completed()) == ok, text


def test_recursive_grammars_get_the_rules_the_grammar_bound_gives() -> None:
    import numpy as np

    from tokensieve.automata.pushdown import RuleNetwork

    tree = {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}}
    in_grammar, _ = schema_to_grammar(tree, blank_runs="grammar", max_whitespace=5)
    counted, _ = schema_to_grammar(tree, blank_runs="automaton", max_whitespace=5)
    expected = compile_grammar_automaton(in_grammar)
    got = compile_grammar_automaton(counted, blank_runs=5)
    assert isinstance(expected, RuleNetwork) and isinstance(got, RuleNetwork)
    assert got.names == expected.names and got.starts == expected.starts and got.calls == expected.calls
    for a, b in zip(got.transitions, expected.transitions, strict=True):
        assert np.array_equal(a, b)
    for a, b in zip(got.accepting, expected.accepting, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize("most", [1, 3, 32])
def test_the_chains_say_where_each_copy_is_and_what_it_allows(schema, most: int) -> None:
    """What the copies' masks rely on, read off the table: a copy leaves on every byte but a
    blank as its place does and accepts as it does; a blank leads along the chain to its end."""
    import numpy as np

    counted, _ = schema_to_grammar(schema, blank_runs="automaton", max_whitespace=most)
    looping = compile_grammar_automaton(counted)
    dfa = bound_blank_runs(looping, most)
    assert dfa is not None
    chains = dfa.blank_chains
    assert chains is not None and chains.most == most
    assert chains.first == looping.num_states and chains.end == dfa.num_states
    table, accepting = dfa.transitions, dfa.accepting
    blanks = [0x09, 0x0A, 0x0D, 0x20]
    others = [b for b in range(256) if b not in blanks]
    # the places are the looping automaton's states that loop on the blanks
    loops = [s for s in range(looping.num_states) if all(looping.transitions[s, b] == s for b in blanks)]
    assert chains.places.tolist() == loops
    assert not chains.places.flags.writeable
    # only blanks lead to copies, and a place's blanks lead to its first copy
    assert (table[:, others] < chains.first).all()
    for state in range(chains.first):
        assert chains.copy_of(state) == (-1, 0)
    for state in range(chains.first, chains.end):
        place, left = chains.copy_of(state)
        assert place in loops and 0 <= left < most
        assert np.array_equal(table[state, others], table[place, others])
        assert accepting[state] == accepting[place]
        after = table[state, blanks]
        if left == 0:
            assert (after == -1).all()
        else:
            assert (after == state + 1).all() and chains.copy_of(state + 1) == (place, left - 1)
    for place in loops:
        first_copy = int(table[place, 0x20])
        assert chains.copy_of(first_copy) == (place, most - 1)
    states = np.arange(dfa.num_states)
    folded = chains.places_of(states)
    assert np.array_equal(folded[: chains.first], states[: chains.first])
    assert [chains.copy_of(s)[0] for s in range(chains.first, chains.end)] == folded[chains.first :].tolist()
    assert np.array_equal(chains.folded(), folded[chains.first :])


def test_the_chains_travel_with_the_automaton() -> None:
    import pickle

    loose = ir_to_dfa(ir.concat(ir.literal("["), ir.star(WS), ir.literal("]")))
    dfa = bound_blank_runs(loose, 4)
    assert dfa is not None and dfa.blank_chains is not None
    again = pickle.loads(pickle.dumps(dfa))
    assert again.same_as(dfa)
    assert again.blank_chains is not None
    assert (again.blank_chains.first, again.blank_chains.most) == (dfa.blank_chains.first, 4)
    assert again.blank_chains.places.tolist() == dfa.blank_chains.places.tolist()
    assert bound_blank_runs(loose, 0).blank_chains is None  # no copies: nothing to say
    from tokensieve.automata import ByteDFA

    with pytest.raises(ValueError, match="blank chains"):
        ByteDFA(loose.transitions, loose.accepting, loose.start, blank_chains=dfa.blank_chains)
