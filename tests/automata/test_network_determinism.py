"""A rule network is the same in every process: its rules, their names and their automata do
not depend on the interpreter's string-hash seed (disk-cache entries and compiled networks are
reproducible)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_REALWORLD = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "json_schemas" / "realworld.jsonl"

_DIGEST = """
import hashlib, json, pickle, sys
from tokensieve.automata.pushdown import RuleNetwork
from tokensieve.grammar.json_schema import schema_to_grammar
from tokensieve.automata.pushdown import compile_grammar_automaton
schema = json.loads(sys.stdin.read())
grammar, _ = schema_to_grammar(schema, strict=False)
network = compile_grammar_automaton(grammar)
assert isinstance(network, RuleNetwork)
print(len(network.names), hashlib.sha256(pickle.dumps(network)).hexdigest())
"""


def _digest(schema: dict, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run(
        [sys.executable, "-c", _DIGEST], input=json.dumps(schema), env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_a_split_network_is_the_same_whatever_the_hash_seed() -> None:
    records = [json.loads(line) for line in _REALWORLD.read_text(encoding="utf-8").split("\n") if line.strip()]
    schema = next(r["schema"] for r in records if r["name"] == "k8s_service_v1")
    first = _digest(schema, "1")
    assert int(first.split()[0]) > 1  # a network of several rules, some split out of shared bodies
    assert _digest(schema, "2") == first
    assert _digest(schema, "3") == first
