"""Inputs that do not end as they must yet, each pinned to the smallest case found.

Every test is a strict expected failure: it fails (XPASS) the day the
behaviour is fixed, and the ``xfail`` mark can go.
"""

from __future__ import annotations

import pytest
from hostile.harness import tiny_compiler

from tokensieve import GrammarCompiler, GrammarMatcher, TokensieveError


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    return tiny_compiler()


def _left_chain(n: int) -> str:
    """``r0 ::= r1 "a" | "a"`` ... ``r{n-1} ::= r0 "a" | "b"``: left recursion through ``n`` rules."""
    lines = [f'r{i} ::= r{i + 1} "a" | "a"' for i in range(n - 1)]
    return "\n".join([*lines, f'r{n - 1} ::= r0 "a" | "b"', "root ::= r0"])


def _chain_samples(n: int) -> list[tuple[str, bool]]:
    """Strings in and out of the chain's language: ``a`` repeated, or ``b`` then ``n - 1 + j*n`` ``a``."""
    inside = ["a", "aaaa", "b" + "a" * (n - 1), "b" + "a" * (2 * n - 1)]
    outside = ["b", "ab", "b" + "a" * n, "b" + "a" * (n - 2)]
    return [(t, True) for t in inside] + [(t, False) for t in outside]


def test_left_recursion_through_100_rules_is_rewritten(compiler: GrammarCompiler) -> None:
    compiled = compiler.compile_grammar(_left_chain(100), syntax="gbnf")
    for text, ok in _chain_samples(100):
        matcher = GrammarMatcher(compiled)
        assert (matcher.accept_string(text) and matcher.is_completed()) is ok, text


def test_left_recursion_through_60_rules_is_rewritten(compiler: GrammarCompiler) -> None:
    """The same chain below the bound compiles and keeps its language."""
    compiled = compiler.compile_grammar(_left_chain(60), syntax="gbnf")
    for text, ok in _chain_samples(60):
        matcher = GrammarMatcher(compiled)
        assert (matcher.accept_string(text) and matcher.is_completed()) is ok, text


def test_multiple_of_1e_200_ends_in_a_constraint_or_a_typed_error(compiler: GrammarCompiler) -> None:
    try:
        compiler.compile_json_schema({"type": "number", "multipleOf": 1e-200})
    except TokensieveError:
        pass


def test_schema_text_with_a_5000_digit_integer_is_a_schema_error(compiler: GrammarCompiler) -> None:
    try:
        compiler.compile_json_schema('{"type": "integer", "maximum": ' + "9" * 5000 + "}")
    except TokensieveError:
        pass
