"""Never a dead end: an unfinished output always has a token or the stop token to go on with.

For random constraints (patterns, small recursive grammars, small JSON
Schemas) and random walks through the tokens each mask allows, on the tiny
byte-level vocabulary, the mask of every state reached before the stop token
has at least one bit set. Each token the walk takes is checked against the
matcher's own ``accept_token``, and the output it spells is checked, at the
end, against Python's ``re`` (patterns) and ``jsonschema`` (schemas) when
the walk stopped.
"""

from __future__ import annotations

import json
import re

import jsonschema
import numpy as np
import pytest
from fuzz.strategies import fuzz_settings, gbnf_texts, json_schemas, lark_texts, regex_texts
from hostile.harness import tiny_compiler, tiny_info
from hypothesis import given
from hypothesis import strategies as st
from support.tiny_vocab import EOS

from tokensieve import GrammarCompiler, GrammarMatcher, LimitExceeded, TokensieveError

STEPS = 24
SETTINGS = fuzz_settings(60)


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    return tiny_compiler()


def _allowed(matcher: GrammarMatcher, vocab_size: int) -> np.ndarray:
    mask = matcher.next_token_mask()
    bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(bits)


def _walk(compiled: object, data: st.DataObject) -> bytes | None:
    """Walk at random; return the output when the stop token was taken, else None."""
    info = tiny_info()
    matcher = GrammarMatcher(compiled)  # type: ignore[arg-type]
    out = b""
    for _ in range(STEPS):
        allowed = _allowed(matcher, info.vocab_size)
        assert allowed.size > 0, f"dead end after {out!r}: no token and no stop token allowed"
        # prefer ending a quarter of the time when the stop token is offered
        if EOS in allowed and data.draw(st.integers(0, 3)) == 0:
            token = EOS
        else:
            token = int(allowed[data.draw(st.integers(0, allowed.size - 1))])
        assert matcher.accept_token(token), f"token {token} was offered but refused after {out!r}"
        if token == EOS:
            assert matcher.is_terminated()
            return out
        out += info.decoded_vocab[token]
    return None


# ECMA-262 escapes spelled for Python's re (whose \d, \w, \s are Unicode-wide)
_ECMA = {
    "\\d": "[0-9]",
    "\\w": "[A-Za-z0-9_]",
    "\\s": "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]",
}


def _python_pattern(pattern: str) -> str:
    return re.sub(r"\\[dws]", lambda m: _ECMA[m.group(0)], pattern)


def _compile_or_none(fn: object) -> object:
    try:
        return fn()  # type: ignore[operator]
    except TokensieveError:
        return None


@SETTINGS
@given(pattern=regex_texts(), data=st.data())
def test_random_pattern_walks_never_dead_end(
    compiler: GrammarCompiler, pattern: str, data: st.DataObject
) -> None:
    try:  # a well-formed pattern compiles unless it is too large
        compiled = compiler.compile_regex(pattern)
    except LimitExceeded:
        return
    out = _walk(compiled, data)
    if out is not None:
        text = out.decode("utf-8")
        if "\\p" not in pattern:  # Python's re has no \p{...}
            assert re.fullmatch(_python_pattern(pattern), text), (pattern, text)


_GRAMMARS = st.one_of(gbnf_texts().map(lambda t: ("gbnf", t)), lark_texts().map(lambda t: ("lark", t)))


@SETTINGS
@given(grammar=_GRAMMARS, data=st.data())
def test_random_grammar_walks_never_dead_end(
    compiler: GrammarCompiler, grammar: tuple[str, str], data: st.DataObject
) -> None:
    syntax, text = grammar
    compiled = _compile_or_none(lambda: compiler.compile_grammar(text, syntax=syntax))  # type: ignore[arg-type]
    if compiled is not None:
        _walk(compiled, data)


@SETTINGS
@given(schema=json_schemas(), data=st.data())
def test_random_schema_walks_never_dead_end(
    compiler: GrammarCompiler, schema: dict, data: st.DataObject
) -> None:
    compiled = _compile_or_none(lambda: compiler.compile_json_schema(schema))
    if compiled is None:
        return
    out = _walk(compiled, data)
    if out is not None and not getattr(compiled, "unenforced", ()):
        value = json.loads(out)
        assert jsonschema.Draft202012Validator(schema).is_valid(value), (schema, out)
