"""Short fuzz runs of the text front ends: patterns, GBNF, EBNF, Lark, JSON Schema.

Inputs are well-formed texts from each syntax and mutations of them (see
:mod:`fuzz.strategies`), plus schemas as parsed JSON with odd numbers and
Unicode. The only endings allowed are a compiled constraint whose start
offers a token or the stop token, or a :class:`tokensieve.TokensieveError`,
within :data:`SECONDS` per input. ``scripts/fuzz.sh`` runs the same targets
with many more examples (``TOKENSIEVE_FUZZ_EXAMPLES``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fuzz.strategies import (
    fuzz_settings,
    gbnf_texts,
    json_schemas,
    lark_texts,
    mutated,
    regex_extras,
    regex_texts,
    schema_text,
)
from hostile.harness import run_bounded, start_mask_allows_something, tiny_compiler
from hypothesis import event, given
from hypothesis import strategies as st

from tokensieve import GrammarCompiler

SECONDS = 10.0
SETTINGS = fuzz_settings(40)


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    return tiny_compiler()


def check(compile_it: Callable[[], Any]) -> None:
    """The input compiles to a working constraint or raises a typed error, in time."""

    def run() -> Any:
        compiled = compile_it()
        assert start_mask_allows_something(compiled), "the start state offers no token"
        return compiled

    out = run_bounded(run, seconds=SECONDS)
    event(out.kind if out.error is None else f"{out.kind}: {type(out.error).__name__}")
    assert out.kind in ("ok", "typed"), out.describe()


# odd JSON values: huge and tiny numbers, odd Unicode, deep-ish nesting
_KEYWORDS = [
    "type", "properties", "items", "enum", "const", "anyOf", "oneOf", "allOf", "not", "$ref", "$defs",
    "minimum", "maximum", "multipleOf", "minLength", "maxLength", "pattern", "minItems", "maxItems",
    "required", "additionalProperties", "prefixItems", "format", "if", "then", "else", "uniqueItems",
]  # fmt: skip
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**40), 10**40),
    st.floats(allow_nan=False),
    st.sampled_from(
        ["string", "integer", "number", "object", "array", "null", "#", "#/$defs/a", "", "\ud800"]
    ),
    st.text(max_size=6),
)
json_values = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(_KEYWORDS), st.text(max_size=4)), inner, max_size=4),
    ),
    max_leaves=12,
)


@SETTINGS
@given(pattern=st.one_of(mutated(regex_texts()), mutated(regex_extras(), max_edits=2), st.text(max_size=24)))
def test_fuzz_regex(compiler: GrammarCompiler, pattern: str) -> None:
    check(lambda: compiler.compile_regex(pattern))


@SETTINGS
@given(text=mutated(gbnf_texts()))
def test_fuzz_gbnf(compiler: GrammarCompiler, text: str) -> None:
    check(lambda: compiler.compile_grammar(text, syntax="gbnf"))


@SETTINGS
@given(text=mutated(gbnf_texts()))
def test_fuzz_ebnf(compiler: GrammarCompiler, text: str) -> None:
    check(lambda: compiler.compile_grammar(text, syntax="ebnf"))


@SETTINGS
@given(text=mutated(lark_texts()))
def test_fuzz_lark(compiler: GrammarCompiler, text: str) -> None:
    check(lambda: compiler.compile_grammar(text, syntax="lark"))


@SETTINGS
@given(schema=st.one_of(json_schemas(), json_values))
def test_fuzz_json_schema_values(compiler: GrammarCompiler, schema: Any) -> None:
    check(lambda: compiler.compile_json_schema(schema))


@SETTINGS
@given(text=mutated(json_schemas().map(schema_text), max_edits=3))
def test_fuzz_json_schema_text(compiler: GrammarCompiler, text: str) -> None:
    check(lambda: compiler.compile_json_schema(text))
