"""Resource limits: every blow-up stops early with ``LimitExceeded``."""

from __future__ import annotations

import time

import pytest

from tokensieve.automata import choices_to_dfa
from tokensieve.errors import GrammarError, LimitExceeded
from tokensieve.grammar.regex import regex_to_dfa
from tokensieve.limits import Limits


def test_exponential_dfa_fails_fast() -> None:
    t0 = time.perf_counter()
    with pytest.raises(LimitExceeded) as info:
        regex_to_dfa("(a|b)*a(a|b){30}")
    elapsed = time.perf_counter() - t0
    assert info.value.limit == "max_dfa_states"
    assert elapsed < 10.0, elapsed  # typically about 0.15 s; generous for a loaded machine


def test_dfa_state_limit_is_exact() -> None:
    # a{n} needs n + 1 states
    regex_to_dfa("a{99}", Limits(max_dfa_states=100))
    with pytest.raises(LimitExceeded) as info:
        regex_to_dfa("a{100}", Limits(max_dfa_states=100))
    assert info.value.limit == "max_dfa_states" and info.value.value == 100


def test_nfa_limit_before_building() -> None:
    t0 = time.perf_counter()
    with pytest.raises(LimitExceeded) as info:
        regex_to_dfa("(a{1000}){1000}")
    assert info.value.limit == "max_nfa_states"
    with pytest.raises(LimitExceeded) as info:
        regex_to_dfa("(.{1000}){100}")
    assert info.value.limit == "max_nfa_states"
    assert time.perf_counter() - t0 < 5.0  # both fail before building: milliseconds


def test_compile_work_limit() -> None:
    words = "|".join(f"w{i:04d}x" for i in range(3000))
    with pytest.raises(LimitExceeded) as info:
        regex_to_dfa(f"({words})*", Limits(max_compile_work=200_000))
    assert info.value.limit == "max_compile_work"


def test_choice_limits() -> None:
    with pytest.raises(LimitExceeded) as info:
        choices_to_dfa(["a", "b", "c"], Limits(max_choices=2))
    assert info.value.limit == "max_choices"
    with pytest.raises(LimitExceeded) as info:
        choices_to_dfa(["abc", "def"], Limits(max_choice_bytes=5))
    assert info.value.limit == "max_choice_bytes"


def test_limits_are_errors_of_the_package() -> None:
    from tokensieve.errors import TokensieveError

    assert issubclass(LimitExceeded, TokensieveError)
    assert issubclass(GrammarError, TokensieveError)
