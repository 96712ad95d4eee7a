"""Closed objects (``closed_objects=True``) against the jsonschema validator.

Each case gives a schema and the schema of its closed language, written by
hand: ``additionalProperties: false`` where the object's merged schemas are
silent about extra keys, over the union of the names an ``allOf`` gathers. A
text must be accepted exactly when ``jsonschema`` says the instance is valid
under that closed schema (properties in any order), and every text a random walk of the automaton
generates must be valid under it too.
"""

from __future__ import annotations

import json
import random

import jsonschema
import numpy as np
import pytest

from tokensieve import GrammarMatcher
from tokensieve.automata.dfa import ByteDFA
from tokensieve.automata.pushdown import compile_grammar_automaton
from tokensieve.grammar.json_schema import schema_to_grammar

POINT = {
    "type": "object",
    "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 9}, "y": {"type": "boolean"}},
    "required": ["x"],
}
CLOSED_POINT = {**POINT, "additionalProperties": False}

# (schema, the schema of the closed language, instances)
CASES = [
    (
        POINT,
        CLOSED_POINT,
        [{"x": 1}, {"x": 1, "y": True}, {"x": 1, "z": 2}, {"y": False}, {}, {"x": 1, "x2": 0}],
    ),
    (
        {"type": "object"},
        {"type": "object", "additionalProperties": False},
        [{}, {"a": 1}, [], None],
    ),
    (
        {"type": "object", "required": ["a"]},
        {"type": "object", "required": ["a"], "properties": {"a": True}, "additionalProperties": False},
        [{"a": None}, {"a": [1, {"q": 2}]}, {"a": 1, "b": 2}, {}],
    ),
    (
        {
            "type": "object",
            "properties": {"p": POINT, "tags": {"type": "array", "items": POINT, "maxItems": 2}},
        },
        {
            "type": "object",
            "properties": {
                "p": CLOSED_POINT,
                "tags": {"type": "array", "items": CLOSED_POINT, "maxItems": 2},
            },
            "additionalProperties": False,
        },
        [
            {"p": {"x": 2}},
            {"p": {"x": 2, "w": 1}},
            {"tags": [{"x": 3}, {"x": 4, "y": True}]},
            {"tags": [{"x": 3, "extra": 1}]},
            {"p": {"x": 2}, "q": 1},
        ],
    ),
    # allOf: both members' names are allowed, no other
    (
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}},
                {"properties": {"b": {"type": "string", "maxLength": 3}}},
            ]
        },
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}},
                {"properties": {"b": {"type": "string", "maxLength": 3}}},
            ],
            "properties": {"a": True, "b": True},
            "additionalProperties": False,
        },
        [{}, {"a": 1}, {"b": "xy"}, {"a": 1, "b": "xy"}, {"a": 1, "c": 2}, {"b": "toolong"}],
    ),
    # $ref siblings merge like allOf
    (
        {
            "$defs": {
                "base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
            },
            "$ref": "#/$defs/base",
            "properties": {"name": {"enum": ["a", "b"]}},
        },
        {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "name": {"enum": ["a", "b"]}},
            "required": ["id"],
            "additionalProperties": False,
        },
        [{"id": 1}, {"id": 1, "name": "a"}, {"id": 1, "name": "c"}, {"id": 1, "other": 0}, {"name": "a"}],
    ),
    # a schema that decides extra keys keeps deciding them
    (
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "additionalProperties": {"type": "boolean"},
        },
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "additionalProperties": {"type": "boolean"},
        },
        [{"a": 1}, {"a": 1, "b": True}, {"b": 1}],
    ),
    (
        {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}},
        {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}},
        [{}, {"x-a": 1}, {"x-a": "s"}, {"y": 1}],
    ),
    (
        {"allOf": [{"properties": {"a": {"type": "integer"}}}, {"additionalProperties": False}]},
        {"allOf": [{"properties": {"a": {"type": "integer"}}}, {"additionalProperties": False}]},
        [{}, {"a": 1}],
    ),
    # anyOf: each branch closed on its own names
    (
        {
            "anyOf": [
                {"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"const": 2}}, "required": ["b"]},
            ]
        },
        {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"a": {"const": 1}},
                    "required": ["a"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"b": {"const": 2}},
                    "required": ["b"],
                    "additionalProperties": False,
                },
            ]
        },
        [{"a": 1}, {"b": 2}, {"a": 1, "b": 2}, {"a": 1, "c": 0}, {}],
    ),
]


def accepts(compiled, text: str) -> bool:
    m = GrammarMatcher(compiled)
    return m.accept_string(text) and m.is_completed()


@pytest.mark.parametrize(("schema", "closed", "instances"), CASES)
def test_closed_language_is_the_closed_schema(compiler, schema, closed, instances) -> None:
    jsonschema.Draft202012Validator.check_schema(closed)
    validator = jsonschema.Draft202012Validator(closed)
    compiled = compiler.compile_json_schema(schema, closed_objects=True, property_order="any")
    for inst in instances:
        expected = validator.is_valid(inst)
        for text in (json.dumps(inst), json.dumps(inst, indent=2), json.dumps(inst, separators=(",", ":"))):
            assert accepts(compiled, text) == expected, (schema, text, expected)


@pytest.mark.parametrize(("schema", "closed", "instances"), CASES)
def test_open_by_default(compiler, schema, closed, instances) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    compiled = compiler.compile_json_schema(schema, property_order="any")
    for inst in instances:
        text = json.dumps(inst)
        assert accepts(compiled, text) == validator.is_valid(inst), (schema, text)


def _random_texts(dfa: ByteDFA, rng: random.Random, count: int) -> list[bytes]:
    """Texts of the automaton's language, by random walks that stop at accepting states."""
    out = []
    trans = dfa.transitions
    for _ in range(count):
        state, text = dfa.start, bytearray()
        for _ in range(400):
            if dfa.accepting[state] and (rng.random() < 0.3 or not (trans[state] >= 0).any()):
                break
            moves = np.flatnonzero(trans[state] >= 0)
            byte = int(rng.choice(moves.tolist()))
            text.append(byte)
            state = int(trans[state, byte])
        if dfa.accepting[state]:
            out.append(bytes(text))
    return out


@pytest.mark.parametrize(("schema", "closed", "instances"), [*CASES[:2], *CASES[3:6], CASES[9]])
def test_generated_instances_validate_closed(schema, closed, instances) -> None:
    grammar, _ = schema_to_grammar(schema, whitespace="compact", closed_objects=True)
    dfa = compile_grammar_automaton(grammar)
    assert isinstance(dfa, ByteDFA)  # no value of unconstrained type left: no recursion
    validator = jsonschema.Draft202012Validator(closed)
    texts = _random_texts(dfa, random.Random(7), 60)
    assert len(texts) >= 20
    for text in texts:
        value = json.loads(text)
        assert validator.is_valid(value), (schema, text)


def test_option_is_part_of_the_cache_key(compiler) -> None:
    open_ = compiler.compile_json_schema(POINT)
    closed = compiler.compile_json_schema(POINT, closed_objects=True)
    assert accepts(open_, '{"x": 1, "q": 2}')
    assert not accepts(closed, '{"x": 1, "q": 2}')
