"""Constraints too large for one automaton compile as rule networks, with the same masks.

- a grammar's rules are numbered by two-byte call markers: a network of more
  rules than one marker byte can number (past 248) matches what a regular
  expression of the same language matches;
- a schema whose inlined automaton is over the size limits compiles exactly
  (strict) as a network, and accepts and refuses what ``jsonschema`` does;
- forcing every schema of a sample into a network of small rules (the budgets
  of :mod:`tokensieve.automata.outline` set low) gives, at every step of a walk
  through each example, the same token mask as the one automaton does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.tiny_vocab import EOS

from tokensieve import GrammarCompiler, GrammarMatcher, Limits, TokenizerInfo
from tokensieve.automata import pushdown
from tokensieve.compile.pushdown import CompiledPushdownGrammar

jsonschema = pytest.importorskip("jsonschema")

CORPUS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "json_schemas"


def _byte_tokens(info: TokenizerInfo) -> dict[int, int]:
    vocab = info.decoded_vocab
    return {vocab[i][0]: i for i in range(info.vocab_size) if len(vocab[i]) == 1}


def _accepts(compiled, tokens: dict[int, int], text: str) -> bool:
    matcher = GrammarMatcher(compiled)
    return all(matcher.accept_token(tokens[b]) for b in text.encode()) and matcher.accept_token(EOS)


def _tree(text: str) -> bool:
    """Whether ``text`` is in ``T ::= "a" | "[" T T "]"`` (the oracle, by recursive descent)."""

    def parse(i: int) -> int:
        if text.startswith("a", i):
            return i + 1
        if not text.startswith("[", i):
            return -1
        j = parse(i + 1)
        k = parse(j) if j >= 0 else -1
        return k + 1 if k >= 0 and text.startswith("]", k) else -1

    return parse(0) == len(text)


def test_a_network_of_more_rules_than_one_marker_byte_numbers(tiny_info: TokenizerInfo) -> None:
    # 300 rules, each calling the next twice in a row: the calls of rules numbered past 248 follow
    # each other (each rule's language is the same binary trees)
    n = 300
    rules = [f'q{i} ::= "a" | "[" q{(i + 1) % n} q{(i + 1) % n} "]"' for i in range(n)]
    compiled = GrammarCompiler(tiny_info).compile_grammar("root ::= q0\n" + "\n".join(rules))
    assert isinstance(compiled, CompiledPushdownGrammar)
    assert len(compiled.network.names) > 256
    tokens = _byte_tokens(tiny_info)
    deep = "a"
    for _ in range(n + 10):  # nested past every rule number
        deep = "[" + deep + "a]"
    texts = ["a", "[aa]", "[[aa]a]", deep, "[" + deep + deep + "]", "[a]", deep[:-1], deep + "a", "[" + deep + "]"]
    for text in texts:
        assert _accepts(compiled, tokens, text) == _tree(text), text[:12]
    assert sum(map(_tree, texts)) == 5


def test_a_schema_over_the_size_limits_compiles_exactly_as_a_network(tiny_info: TokenizerInfo) -> None:
    # twelve optional properties, each a string of up to 40 characters: about 12,000 states as one
    # automaton, over the limit of 5,000 set here
    names = [f"p{i}" for i in range(12)]
    schema = {
        "type": "object",
        "properties": {name: {"type": "string", "maxLength": 40} for name in names},
        "additionalProperties": False,
    }
    compiler = GrammarCompiler(tiny_info, limits=Limits(max_dfa_states=5_000))
    compiled = compiler.compile_json_schema(schema)
    assert isinstance(compiled, CompiledPushdownGrammar)
    assert compiled.unenforced == ()
    tokens = _byte_tokens(tiny_info)
    validator = jsonschema.Draft202012Validator(schema)
    rng = np.random.default_rng(5)
    for _ in range(40):
        keys = [name for name in names if rng.random() < 0.4]
        value = {key: "x" * int(rng.integers(0, 43)) for key in keys}
        if rng.random() < 0.2:
            value["other"] = "y"
        text = json.dumps(value)
        assert _accepts(compiled, tokens, text) == validator.is_valid(value), text


def _sample() -> list[dict]:
    """Schemas of the written corpus that compile to one automaton, a spread sample."""
    records = []
    for path in sorted(CORPUS_DIR.glob("*.jsonl")):
        if path.name != "realworld.jsonl":
            records.extend(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    return records[::23]


def test_masks_of_a_forced_network_equal_those_of_one_automaton(
    tiny_info: TokenizerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = _byte_tokens(tiny_info)
    records = _sample()
    whole = GrammarCompiler(tiny_info, cache_enabled=False)
    expected = {r["name"]: whole.compile_json_schema(r["schema"], strict=False) for r in records}
    # every rule is called and every part over 60 positions is a rule of its own
    monkeypatch.setattr(pushdown, "INLINE_BUDGET", 0)
    monkeypatch.setattr(pushdown, "SPLIT_BUDGET", 60)
    split = GrammarCompiler(tiny_info, cache_enabled=False)
    mask_a = np.zeros((1, (tiny_info.vocab_size + 31) // 32), dtype=np.int32)
    mask_b = np.zeros_like(mask_a)
    networks = 0
    for record in records:
        got = split.compile_json_schema(record["schema"], strict=False)
        assert isinstance(got, CompiledPushdownGrammar)
        networks += len(got.network.names) > 1
        for example in record["examples"][:2]:
            a, b = GrammarMatcher(expected[record["name"]]), GrammarMatcher(got)
            for i, byte in enumerate(json.dumps(example).encode()):
                if i % 3 == 0:
                    a.fill_next_token_bitmask(mask_a, 0)
                    b.fill_next_token_bitmask(mask_b, 0)
                    assert np.array_equal(mask_a, mask_b), (record["name"], i)
                assert a.accept_token(tokens[byte]) and b.accept_token(tokens[byte])
            a.fill_next_token_bitmask(mask_a, 0)
            b.fill_next_token_bitmask(mask_b, 0)
            assert np.array_equal(mask_a, mask_b), record["name"]
    assert networks >= len(records) // 2
