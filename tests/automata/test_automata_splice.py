"""Splicing large embedded automata into the DFA around them.

The oracle for random patterns is the brute-force language of
``support.regex_trees`` (strings up to length 6 over ``abc``); for delimited
automata, where the splice must also be minimal, it is the DFA the subset
construction and minimisation build from the same IR without splicing.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from support.regex_trees import OUTSIDE, accepted, brute, pattern_trees, to_ir

from tokensieve import LimitExceeded, Limits
from tokensieve.automata import ByteDFA, ir_to_dfa, regex_to_dfa
from tokensieve.automata.build import _determinized
from tokensieve.automata.ops import automaton_to_dfa, dfa_to_ir
from tokensieve.automata.splice import PLACEHOLDER_LEAD, plan_splice, splice
from tokensieve.grammar import ir, parse_regex

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _spliced(node: ir.Node, limits: Limits | None = None):
    plan = plan_splice(node, min_states=1)
    if plan is None:
        return ir_to_dfa(node, limits)  # nothing to splice: the whole IR determinised
    return splice(ir_to_dfa(plan.node, limits), plan, limits)


def _automaton(pattern: str) -> ir.Automaton:
    return dfa_to_ir(regex_to_dfa(pattern))


def _quoted(node: ir.Node) -> ir.Node:
    return ir.concat(ir.literal('"'), node, ir.literal('"'))


@SETTINGS
@given(tree=pattern_trees())
def test_splice_keeps_the_language_of_random_patterns(checks, tree: tuple) -> None:
    node = to_ir(tree)
    plan = plan_splice(node, min_states=1)
    if plan is None:
        return
    out = splice(ir_to_dfa(plan.node), plan)
    if not isinstance(out, ByteDFA):  # not deterministic: these automata stay in the IR
        assert out <= set(range(len(plan.automata)))
        return
    checks.assert_trimmed(out)
    assert accepted(out) == brute(tree)
    assert not accepted(out, OUTSIDE)


@SETTINGS
@given(trees=pattern_trees().flatmap(lambda t: pattern_trees().map(lambda u: (t, u))))
def test_delimited_automata_splice_to_the_minimal_dfa(checks, trees: tuple) -> None:
    a, b = (dfa_to_ir(ir_to_dfa(to_ir(t))) for t in trees)
    # JSON-like: each automaton between quotes, in a sequence, an alternative and a list
    item = ir.alt(_quoted(a), ir.concat(ir.literal("#"), _quoted(b), ir.literal("!")), ir.literal("null"))
    node = ir.concat(
        ir.literal("["),
        item,
        ir.repeat(ir.concat(ir.literal(","), item), 0, 2),
        ir.literal("]"),
        ir.repeat(_quoted(a), 0, 1),
    )
    out = _spliced(node)
    assert isinstance(out, ByteDFA)
    checks.assert_trimmed(out)
    checks.assert_minimal(out)
    assert automaton_to_dfa(dfa_to_ir(out)).same_as(_determinized(node, Limits()))


def test_automata_with_one_continuation_keep_their_states_apart(checks) -> None:
    # "a" and "b" end in states with the same future once both are followed by the same
    # continuation: the splice keeps them apart (correct, one state more than minimal)
    a, b = _automaton("a"), _automaton("b")
    node = ir.concat(
        ir.literal("["), ir.alt(_quoted(a), ir.concat(ir.literal("#"), _quoted(b))), ir.literal("]")
    )
    out = _spliced(node)
    assert isinstance(out, ByteDFA)
    checks.assert_trimmed(out)
    assert automaton_to_dfa(dfa_to_ir(out)).same_as(_determinized(node, Limits()))
    assert out.num_states == _determinized(node, Limits()).num_states + 1


def test_splice_of_automata_with_the_empty_string_or_loops(checks) -> None:
    for pattern in ("[a-c]{0,3}", "a?(bc)*", "a*b*|c", "(a|bc)+", "(ab)*", "a*b"):
        node = ir.concat(ir.literal("x"), _quoted(_automaton(pattern)), ir.literal("y"))
        plan = plan_splice(node, min_states=1)
        # an automaton whose start is entered again stays in the IR
        assert (plan is None) == (pattern in ("(ab)*", "a*b")), pattern
        out = _spliced(node)
        assert isinstance(out, ByteDFA), pattern
        checks.assert_trimmed(out)
        checks.assert_minimal(out)
        assert checks.isomorphic(out, _determinized(node, Limits())), pattern


def test_the_same_automaton_with_several_continuations_gets_a_copy_for_each(checks) -> None:
    a = _automaton("[a-z]{1,5}@[a-z]{1,5}")
    node = ir.concat(
        ir.literal("{"),
        _quoted(a),
        ir.literal(":"),
        _quoted(a),
        ir.repeat(ir.concat(ir.literal(","), _quoted(a)), 0, None),
        ir.literal("}"),
    )
    out = _spliced(node)
    assert isinstance(out, ByteDFA)
    checks.assert_trimmed(out)
    assert checks.isomorphic(automaton_to_dfa(dfa_to_ir(out)), _determinized(node, Limits()))
    assert out.num_states == _determinized(node, Limits()).num_states
    assert out.accepts(b'{"ab@cd":"x@y","q@r","s@t"}')
    assert not out.accepts(b'{"ab@cd":"x@y",}')


@pytest.mark.parametrize(
    "node",
    [
        # an alternative reads the automaton's first byte
        ir.alt(_quoted(_automaton("x[a-z]*")), ir.literal('"xyz!"')),
        # the continuation reads a byte the automaton goes on with
        ir.concat(_automaton("[a-z]+"), ir.literal("b")),
        # two automata back to back, the second starting with a byte the first goes on with
        ir.concat(_automaton("[a-z]+"), _automaton("[a-z0-9]+")),
    ],
)
def test_a_splice_that_would_not_be_deterministic_is_declined(node, checks) -> None:
    plan = plan_splice(node, min_states=1)
    assert plan is not None
    declined = splice(ir_to_dfa(plan.node), plan)
    assert 0 in declined  # the first automaton (with the second, for a clash between them)
    whole = ir_to_dfa(node)
    checks.assert_trimmed(whole)
    assert whole.same_as(_determinized(node, Limits()))


def test_automata_that_cannot_be_spliced_stay_in_the_ir_and_the_others_are_spliced(checks) -> None:
    big = _automaton("[a-z]{1,300}")
    undelimited = _automaton("[0-9]{1,300}")  # read on by the continuation
    node = ir.concat(_quoted(big), ir.literal(":"), undelimited, ir.repeat(ir.literal("7"), 0, 1), ir.literal(";"))
    plan = plan_splice(node)
    assert plan is not None and plan.automata == (big, undelimited)
    assert splice(ir_to_dfa(plan.node), plan) == {1}
    second = plan_splice(node, exclude=frozenset([undelimited]))
    assert second is not None and second.automata == (big,)
    out = ir_to_dfa(node)
    whole = _determinized(node, Limits())
    assert automaton_to_dfa(dfa_to_ir(out)).same_as(whole)
    assert out.num_states == whole.num_states


def test_automata_back_to_back_are_spliced_one_into_the_other(checks) -> None:
    letters, digits = _automaton("[a-z]{1,4}"), _automaton("[0-9]{0,3}")
    node = ir.concat(
        ir.literal("<"),
        letters,
        digits,
        ir.alt(ir.literal(">"), ir.concat(ir.literal("#"), letters)),
        ir.repeat(ir.concat(digits, ir.literal(",")), 1, 2),
        ir.literal(";"),
    )
    out = _spliced(node)
    assert isinstance(out, ByteDFA)
    checks.assert_trimmed(out)
    assert automaton_to_dfa(dfa_to_ir(out)).same_as(_determinized(node, Limits()))
    assert out.accepts(b"<ab12>,;") and out.accepts(b"<a7#b1,,;") and not out.accepts(b"<ab12>;")


def test_no_plan_when_the_ir_reads_the_placeholder_byte_or_has_no_large_automaton() -> None:
    a = _automaton("[a-z]{1,19}")
    assert plan_splice(ir.concat(a, ir.literal(b"\xf5")), min_states=1) is None
    assert plan_splice(ir.concat(a, ir.ByteClass(((0xF0, 0xFF),))), min_states=1) is None
    assert plan_splice(ir.concat(a, ir.literal("x"))) is None  # 20 states: below the default size
    plan = plan_splice(ir.concat(a, ir.literal("x")), min_states=1)
    assert plan is not None and plan.automata == (a,)
    assert plan.node == ir.concat(ir.literal(bytes((PLACEHOLDER_LEAD, 0))), ir.literal("x"))


def test_large_automata_are_spliced_by_ir_to_dfa(checks) -> None:
    content = _automaton("[a-z]{1,300}")
    node = ir.concat(ir.literal("{"), _quoted(content), ir.literal(":"), _quoted(content), ir.literal("}"))
    assert plan_splice(node) is not None
    out = ir_to_dfa(node)
    whole = _determinized(node, Limits())
    assert out.num_states == whole.num_states
    assert automaton_to_dfa(dfa_to_ir(out)).same_as(whole)
    assert out.accepts(b'{"' + b"a" * 300 + b'":"b"}')
    assert not out.accepts(b'{"' + b"a" * 301 + b'":"b"}')


def test_the_state_limit_applies_to_the_spliced_automaton() -> None:
    content = dfa_to_ir(ir_to_dfa(parse_regex("[a-z]{1,300}")))
    node = ir.repeat(_quoted(content), 1, 5)  # five copies of 301 states
    with pytest.raises(LimitExceeded, match="max_dfa_states"):
        ir_to_dfa(node, Limits(max_dfa_states=1000))
    assert ir_to_dfa(node, Limits(max_dfa_states=2000)).num_states > 1000
