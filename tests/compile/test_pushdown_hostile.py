"""Hostile recursive grammars end in a typed error within small limits, never a hang.

Every case compiles with deliberately small :class:`~tokensieve.Limits` so that
the limit is reached after a few steps; an alarm turns a hang into a failure
instead of a stuck test run.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from tokensieve import GrammarCompiler, GrammarError, GrammarMatcher, LimitExceeded, Limits
from tokensieve.bitmask import allocate_token_bitmask

_GUARD_SECONDS = 60


@pytest.fixture(autouse=True)
def _no_hang() -> Iterator[None]:
    """Fail (rather than hang) when a case runs far beyond what its limits allow."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expired(signum, frame):  # type: ignore[no-untyped-def]
        raise TimeoutError(f"no result within {_GUARD_SECONDS} s: the limits did not stop the work")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(_GUARD_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _drive(info, compiled, text: str) -> None:  # type: ignore[no-untyped-def]
    """Feed ``text`` one character at a time, filling the mask before each step."""
    matcher = GrammarMatcher(compiled)
    bitmask = allocate_token_bitmask(1, info.vocab_size)
    for ch in text:
        matcher.fill_next_token_bitmask(bitmask)
        assert matcher.accept_string(ch), f"{ch!r} refused"


def _limit_name(excinfo: pytest.ExceptionInfo[LimitExceeded]) -> str:
    return str(excinfo.value)


# ------------------------------------------------------------------ deep recursion


def test_deep_nesting_ends_in_the_stack_depth_limit(tiny_info) -> None:
    limits = Limits(max_stack_depth=40)
    compiled = GrammarCompiler(tiny_info, limits=limits).compile_grammar(
        'root ::= "(" root ")" | "x"', syntax="gbnf"
    )
    with pytest.raises(LimitExceeded) as excinfo:
        _drive(tiny_info, compiled, "(" * 200)
    assert "max_stack_depth" in _limit_name(excinfo)


def test_deep_nesting_through_several_rules_ends_in_the_stack_depth_limit(tiny_info) -> None:
    text = """
    root  ::= block
    block ::= "{" item* "}"
    item  ::= block | "[" list "]" | "a"
    list  ::= item ( "," item )*
    """
    limits = Limits(max_stack_depth=30)
    compiled = GrammarCompiler(tiny_info, limits=limits).compile_grammar(text, syntax="gbnf")
    with pytest.raises(LimitExceeded) as excinfo:
        _drive(tiny_info, compiled, "{[" * 100)
    assert "max_stack_depth" in _limit_name(excinfo)


def test_every_nesting_level_is_a_new_state_until_the_state_limit(tiny_info) -> None:
    limits = Limits(max_pushdown_states=40)
    compiled = GrammarCompiler(tiny_info, limits=limits).compile_grammar(
        'root ::= "(" root ")" | "x"', syntax="gbnf"
    )
    with pytest.raises(LimitExceeded) as excinfo:
        _drive(tiny_info, compiled, "(" * 200)
    assert "max_pushdown_states" in _limit_name(excinfo)


def test_a_long_cycle_of_rules_ends_in_the_rule_limit(tiny_info) -> None:
    n = 300
    rules = [f'r{i} ::= "a" r{(i + 1) % n} | "b"' for i in range(n)]
    text = "root ::= r0\n" + "\n".join(rules)
    with pytest.raises(LimitExceeded) as excinfo:
        GrammarCompiler(tiny_info, limits=Limits(max_grammar_rules=100)).compile_grammar(text, syntax="gbnf")
    assert "max_grammar_rules" in _limit_name(excinfo)


# ------------------------------------------------------------------ huge alternations


def test_a_huge_alternation_in_a_recursive_rule_ends_in_an_automaton_limit(tiny_info) -> None:
    words = " | ".join(f'"w{i}x{i * 7919 % 10007}"' for i in range(5000))
    text = f'root ::= "(" root ")" | {words}'
    limits = Limits(max_nfa_states=5_000, max_dfa_states=2_000)
    with pytest.raises(LimitExceeded) as excinfo:
        GrammarCompiler(tiny_info, limits=limits).compile_grammar(text, syntax="gbnf")
    assert any(name in _limit_name(excinfo) for name in ("max_nfa_states", "max_dfa_states"))


def test_huge_grammar_text_is_refused_before_parsing(tiny_info) -> None:
    text = "root ::= " + " | ".join(f'"{i}"' for i in range(20_000))
    with pytest.raises(LimitExceeded) as excinfo:
        GrammarCompiler(tiny_info, limits=Limits(max_pattern_length=10_000)).compile_grammar(
            text, syntax="gbnf"
        )
    assert "max_pattern_length" in _limit_name(excinfo)


def test_left_recursion_rewrite_that_multiplies_alternatives_is_bounded(tiny_info) -> None:
    # r_i ::= r_{i+1} "a" | r_{i+1} "b" | "x", closing a left cycle: substitution doubles per rule
    n = 24
    rules = [f'r{i} ::= r{i + 1} "a" | r{i + 1} "b" | "x"' for i in range(n)]
    rules.append('r24 ::= r0 "c" | "y"')
    text = "root ::= r0\n" + "\n".join(rules)
    with pytest.raises((LimitExceeded, GrammarError)):
        GrammarCompiler(tiny_info).compile_grammar(text, syntax="gbnf")


# ------------------------------------------------------------------ automaton blow-ups


def test_exponential_subset_construction_in_a_recursive_rule_ends_in_the_dfa_limit(tiny_info) -> None:
    # [ab]* "a" [ab]{16}: the minimal DFA remembers the last 17 letters (2^17 states)
    text = 'root ::= "(" root ")" | [ab]* "a" [ab]{16}'
    with pytest.raises(LimitExceeded) as excinfo:
        GrammarCompiler(tiny_info, limits=Limits(max_dfa_states=2_000)).compile_grammar(text, syntax="gbnf")
    assert "max_dfa_states" in _limit_name(excinfo)


def test_nested_counted_repetitions_end_in_a_limit(tiny_info) -> None:
    text = 'root ::= "(" root ")" | ( ( ( "a" | "b" ){1,50} ){1,50} ){1,50}'
    limits = Limits(max_nfa_states=20_000, max_dfa_states=2_000, max_compile_work=2_000_000)
    with pytest.raises(LimitExceeded):
        GrammarCompiler(tiny_info, limits=limits).compile_grammar(text, syntax="gbnf")


# ------------------------------------------------------------------ ambiguity


def test_ambiguity_that_doubles_the_stacks_ends_in_the_stack_count_limit(tiny_info) -> None:
    # after n letters "a" there are 2^n parse stacks (p or q at every level)
    text = """
    root ::= "a" p | "a" q | "z"
    p    ::= root "b"
    q    ::= root "c"
    """
    limits = Limits(max_stacks=64)
    compiled = GrammarCompiler(tiny_info, limits=limits).compile_grammar(text, syntax="gbnf")
    with pytest.raises(LimitExceeded) as excinfo:
        _drive(tiny_info, compiled, "a" * 40)
    assert "max_stacks" in _limit_name(excinfo)


def test_ambiguous_concatenation_of_a_rule_with_itself_is_bounded(tiny_info) -> None:
    # s ::= s s | "x" is rewritten to s ::= "x" s*; the runs of x have Catalan-many parses
    text = """
    root ::= "[" s "]"
    s    ::= s s | "x" | "(" s ")"
    """
    limits = Limits(max_stacks=32, max_pushdown_states=200)
    try:
        compiled = GrammarCompiler(tiny_info, limits=limits).compile_grammar(text, syntax="gbnf")
        _drive(tiny_info, compiled, "[" + "(x" * 100)
    except (LimitExceeded, GrammarError):
        return
    pytest.fail("200 characters of a highly ambiguous grammar stayed within max_stacks=32 and 200 states")


def test_ambiguity_inside_one_token_is_bounded_while_computing_masks(tiny_info) -> None:
    # the mask walk itself meets the ambiguity (tokens of several letters): it must stop too
    text = """
    root ::= "a" p | "a" q | "a" | "z"
    p    ::= root "b"
    q    ::= root "c"
    """
    limits = Limits(max_stacks=8)
    with pytest.raises(LimitExceeded):
        compiled = GrammarCompiler(tiny_info, limits=limits).compile_grammar(text, syntax="gbnf")
        _drive(tiny_info, compiled, "a" * 40)
