"""Objects with many optional properties: their language, and that it stays small.

An object's members are written in schema order, each optional one at most
once, the required ones always, and (where the schema allows them) other keys
anywhere between. The oracle is that rule written out directly, and
``jsonschema`` for the values; the matcher runs byte by byte over a tiny
vocabulary.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, GrammarMatcher, TokenizerInfo
from tokensieve.grammar.json_schema import schema_to_grammar

jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    return GrammarCompiler(TokenizerInfo(make_tiny_vocab(), stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]))


def _accepts(compiler: GrammarCompiler, compiled: object, text: str) -> bool:
    vocab = compiler.tokenizer_info.decoded_vocab
    byte_token = {vocab[i][0]: i for i in range(len(vocab)) if len(vocab[i]) == 1}
    matcher = GrammarMatcher(compiled)  # type: ignore[arg-type]
    return all(matcher.accept_token(byte_token[b]) for b in text.encode()) and matcher.accept_token(EOS)


def _text(pairs: list[tuple[str, object]]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "}"


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    required=st.lists(st.booleans(), min_size=1, max_size=5),
    extras=st.booleans(),
)
def test_every_subset_in_schema_order_and_nothing_else(compiler: GrammarCompiler, required, extras) -> None:
    names = [f"k{i}" for i in range(len(required))]
    schema = {
        "type": "object",
        "properties": {n: {"type": "integer"} for n in names},
        "required": [n for n, r in zip(names, required, strict=True) if r],
        "additionalProperties": extras,
    }
    compiled = compiler.compile_json_schema(schema)
    must = {n for n, r in zip(names, required, strict=True) if r}
    for size in range(len(names) + 1):
        for chosen in itertools.combinations(names, size):
            pairs: list[tuple[str, object]] = [(n, 1) for n in chosen]
            expected = must <= set(chosen)
            assert _accepts(compiler, compiled, _text(pairs)) == expected, pairs
            for at in range(len(pairs) + 1):  # another key, at every place
                more = [*pairs[:at], ("zz", 2), *pairs[at:]]
                assert _accepts(compiler, compiled, _text(more)) == (expected and extras), more
            if len(chosen) > 1:  # two members out of schema order
                swapped = [pairs[1], pairs[0], *pairs[2:]]
                assert not _accepts(compiler, compiled, _text(swapped)), swapped


def test_a_hundred_and_twenty_optional_properties_agree_with_jsonschema(compiler: GrammarCompiler) -> None:
    # an object too large for one automaton: a rule network, whose rules are this object's parts
    names = [f"p{i:03d}" for i in range(120)]
    schema = {
        "type": "object",
        "properties": {n: {"type": "integer"} if i % 2 else {"type": "boolean"} for i, n in enumerate(names)},
        "required": ["p060"],
    }
    compiled = compiler.compile_json_schema(schema)
    assert compiled.unenforced == ()
    validator = jsonschema.Draft202012Validator(schema)
    rng = np.random.default_rng(11)
    for _ in range(12):
        chosen = [n for n in names if rng.random() < 0.05 or (n == "p060" and rng.random() < 0.9)]
        value: dict[str, object] = {n: (7 if int(n[1:]) % 2 else True) for n in chosen}
        if chosen and rng.random() < 0.3:  # a value of the wrong type
            value[chosen[int(rng.integers(len(chosen)))]] = "x"
        pairs = list(value.items())
        if rng.random() < 0.3:
            pairs.insert(int(rng.integers(len(pairs) + 1)), ("other", None))
        text = _text(pairs)
        assert _accepts(compiler, compiled, text) == validator.is_valid(dict(pairs)), text


def test_the_lowered_object_grows_as_n_log_n() -> None:
    def size(n: int) -> int:
        schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)}}
        grammar, _ = schema_to_grammar(schema)
        return len(str(grammar))

    small, large = size(32), size(256)
    # eight times the members: about 8 * 8 / 5 = 13 times the text for n log n (10.5 measured), 64 for
    # n squared (59 measured before the halving construction)
    assert large < 16 * small, (small, large)
