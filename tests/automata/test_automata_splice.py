"""Splicing large embedded automata into the DFA around them.

The oracle for random patterns is the brute-force language of
``support.regex_trees`` (strings up to length 6 over ``abc``); for delimited
automata, where the splice must also be minimal, it is the DFA the subset
construction and minimisation build from the same IR without splicing.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from support.regex_trees import OUTSIDE, accepted, brute, pattern_trees, to_ir

from tokensieve import LimitExceeded, Limits
from tokensieve.automata import ByteDFA, ir_to_dfa
from tokensieve.automata import splice as splice_module
from tokensieve.automata.blank_runs import RunsNotCountable, bound_blank_runs, layout_places
from tokensieve.automata.build import _determinized
from tokensieve.automata.counted import counted_repeat
from tokensieve.automata.ops import automaton_to_dfa, dfa_to_ir
from tokensieve.automata.splice import PLACEHOLDER_LEAD, plan_splice, splice
from tokensieve.grammar import ir, parse_regex
from tokensieve.grammar.regex import regex_to_dfa

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
    node = ir.concat(
        _quoted(big), ir.literal(":"), undelimited, ir.repeat(ir.literal("7"), 0, 1), ir.literal(";")
    )
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


WS = ir.star(ir.byte_class([(0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)]))


def _same_automaton(got: ByteDFA, want: ByteDFA) -> None:
    """Equal tables, acceptance and start, and the same blank chains and layer copies."""
    assert np.array_equal(got.transitions, want.transitions)
    assert np.array_equal(got.accepting, want.accepting) and got.start == want.start
    assert (got.blank_chains is None) == (want.blank_chains is None)
    if got.blank_chains is not None and want.blank_chains is not None:
        assert (got.blank_chains.first, got.blank_chains.most) == (
            want.blank_chains.first,
            want.blank_chains.most,
        )
        assert np.array_equal(got.blank_chains.places, want.blank_chains.places)
    assert (got.layer_copies is None) == (want.layer_copies is None)
    if got.layer_copies is not None:
        for name in ("base", "room", "place", "unit", "lag"):
            assert np.array_equal(getattr(got.layer_copies, name), getattr(want.layer_copies, name)), name


def _counted_letters() -> ir.Automaton:
    """``[a-z]{0,60}`` built by layers (its copies carry layer copies)."""
    out = counted_repeat(ir.byte_class([(0x61, 0x7A)]), 0, 60)
    assert out is not None
    return out


def _layout_node() -> ir.Node:
    """Layout places in the skeleton and inside a spliced automaton, and a counted string."""
    # loops on the blanks inside, and on tabs alone (not a place)
    spaced = _automaton("<[a-z]{1,20}(#\t*#)?([ \t\n\r]*,[ \t\n\r]*[a-z]{1,20})*>")
    counted = _counted_letters()
    return ir.concat(
        ir.literal("{"),
        WS,
        _quoted(counted),
        WS,
        ir.literal(":"),
        WS,
        spaced,
        WS,
        ir.repeat(ir.concat(ir.literal(","), WS, _quoted(counted), WS), 0, None),
        ir.literal("}"),
    )


@pytest.mark.parametrize("most", [0, 1, 3, 32])
def test_a_splice_bounds_the_runs_of_blanks_in_its_own_table(most: int, monkeypatch) -> None:
    node = _layout_node()
    plan = plan_splice(node, min_states=1)
    assert plan is not None and len(plan.automata) >= 2
    skeleton = ir_to_dfa(plan.node)
    plain = splice(skeleton, plan)
    assert isinstance(plain, ByteDFA)
    want = bound_blank_runs(plain, most)
    assert want is not None and (want.blank_chains is None) == (most == 0)
    places = layout_places(plain.transitions)
    assert places is not None
    inside = places.places >= plain.num_states - sum(splice_module._copyable(a).size for a in plan.automata)
    assert inside.any() and not inside.all()  # places in the skeleton and in a copy
    # the copies' rows are written into the spliced table itself, made with room for them
    unrolled = []
    unroll = splice_module.unroll_blank_runs
    monkeypatch.setattr(splice_module, "unroll_blank_runs", lambda *a: unrolled.append(a) or unroll(*a))
    got = splice(skeleton, plan, blank_runs=most)
    assert isinstance(got, ByteDFA) and len(unrolled) == 1
    _same_automaton(got, want)
    assert not got.transitions.flags.writeable

    def text(outer: int, inner: int) -> bytes:
        return b'{"ab"' + b" " * outer + b":<a" + b"\t" * inner + b',b>,"c"}'

    assert got.accepts(text(most, most))
    assert not got.accepts(text(most + 1, 0)) and not got.accepts(text(0, most + 1))


def test_a_splice_whose_places_are_not_as_counted_bounds_a_table_of_its_own(monkeypatch) -> None:
    node = _layout_node()
    plan = plan_splice(node, min_states=1)
    assert plan is not None
    skeleton = ir_to_dfa(plan.node)
    want = bound_blank_runs(splice(skeleton, plan), 4)
    assert want is not None
    copyable = splice_module._copyable
    for wrong in (1, -1):
        monkeypatch.setattr(
            splice_module,
            "_copyable",
            lambda a, wrong=wrong: (
                lambda c: dataclasses.replace(c, layout_places=max(0, c.layout_places + wrong))
            )(copyable(a)),
        )
        got = splice(skeleton, plan, blank_runs=4)
        assert isinstance(got, ByteDFA)
        _same_automaton(got, want)


def test_a_splice_refuses_runs_that_start_before_their_place() -> None:
    counted = _counted_letters()
    node = ir.concat(_quoted(counted), ir.literal("  "), WS, ir.literal("}"))
    plan = plan_splice(node, min_states=1)
    assert plan is not None
    with pytest.raises(RunsNotCountable):
        splice(ir_to_dfa(plan.node), plan, blank_runs=3)
    with pytest.raises(RunsNotCountable):
        ir_to_dfa(node, blank_runs=3)
    # without the literal blanks the same splice counts the run
    bounded = ir_to_dfa(ir.concat(_quoted(counted), WS, ir.literal("}")), blank_runs=3)
    assert bounded.accepts(b'"ab"   }') and not bounded.accepts(b'"ab"    }')


def test_the_state_limit_counts_the_copies_of_the_places() -> None:
    node = _layout_node()
    plan = plan_splice(node, min_states=1)
    assert plan is not None
    skeleton = ir_to_dfa(plan.node)
    spliced = splice(skeleton, plan)
    assert isinstance(spliced, ByteDFA)
    with pytest.raises(LimitExceeded, match="blanks"):
        splice(skeleton, plan, Limits(max_dfa_states=spliced.num_states + 10), blank_runs=32)
