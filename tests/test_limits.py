"""Limits: every field documented; each bound, when hit, is the one named.

A bound marked *reported* in the documentation leaves a keyword unenforced
(``SchemaError`` when strict), naming the field; raising the bound enforces it
again, checked against the ``jsonschema`` validator.
"""

from __future__ import annotations

import dataclasses
import json
import re

import jsonschema
import pytest
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, GrammarMatcher, LimitExceeded, Limits, SchemaError, TokenizerInfo
from tokensieve.limits import RECURSIVE_RULES_CAP


@pytest.fixture(scope="module")
def info() -> TokenizerInfo:
    vocab = make_tiny_vocab()
    return TokenizerInfo(vocab, vocab_size=len(vocab), stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])


def _accepts(compiled, value) -> bool:
    m = GrammarMatcher(compiled)
    return m.accept_string(json.dumps(value)) and m.is_completed()


def test_every_field_is_documented_with_its_default() -> None:
    doc = Limits.__doc__ or ""
    documented = set(re.findall(r"^    (max_\w+)$", doc, flags=re.M))
    names = {f.name for f in dataclasses.fields(Limits)}
    assert documented == names
    for name in names:
        entry = doc.split(f"\n    {name}\n", 1)[1].split("\n    max_", 1)[0]
        assert "default" in entry or name == "max_recursive_rules", name
        assert any(w in entry for w in ("Raises", "reported", "Never raises")), name


@pytest.mark.parametrize("bad", [-1, 1.5, True, None])
def test_fields_must_be_non_negative_integers(bad) -> None:
    with pytest.raises(ValueError, match="max_stacks"):
        Limits(max_stacks=bad)


def test_recursive_rules_cannot_pass_the_encoding() -> None:
    with pytest.raises(ValueError, match="max_recursive_rules"):
        Limits(max_recursive_rules=RECURSIVE_RULES_CAP + 1)


def test_recursive_rules_bound_is_named(info: TokenizerInfo) -> None:
    text = "\n".join(f'r{i} ::= "(" r{(i + 1) % 5} ")" | "x"' for i in range(5))
    compiler = GrammarCompiler(info, limits=Limits(max_recursive_rules=3))
    with pytest.raises(LimitExceeded) as exc:
        compiler.compile_grammar("root ::= r0\n" + text)
    assert (exc.value.limit, exc.value.value) == ("max_recursive_rules", 3)
    assert GrammarCompiler(info, limits=Limits(max_recursive_rules=6)).compile_grammar("root ::= r0\n" + text)


def test_schema_work_bound_is_named(info: TokenizerInfo) -> None:
    branches = [{"anyOf": [{"minimum": i}, {"maximum": -i}]} for i in range(1, 9)]  # 2**8 combinations
    schema = {"type": "integer", "allOf": branches}
    with pytest.raises(LimitExceeded) as exc:
        GrammarCompiler(info, limits=Limits(max_schema_work=100)).compile_json_schema(schema)
    assert (exc.value.limit, exc.value.value) == ("max_schema_work", 100)
    GrammarCompiler(info).compile_json_schema(schema)


def _reported(info: TokenizerInfo, schema, limits: Limits, field: str):
    with pytest.raises(SchemaError, match=field):
        GrammarCompiler(info, limits=limits).compile_json_schema(schema)
    lenient = GrammarCompiler(info, limits=limits).compile_json_schema(schema, strict=False)
    assert any(field in u for u in lenient.unenforced), lenient.unenforced
    return lenient


def _exact(info: TokenizerInfo, schema, instances, **options) -> None:
    compiled = GrammarCompiler(info).compile_json_schema(schema, **options)
    validator = jsonschema.Draft202012Validator(schema)
    for value in instances:
        assert _accepts(compiled, value) == validator.is_valid(value), value


def test_pattern_properties_bound(info: TokenizerInfo) -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^a": {"type": "integer"}, "^b": {"type": "string"}, "^c": {"type": "null"}},
        "additionalProperties": False,
    }
    _reported(info, schema, Limits(max_pattern_properties=2), "max_pattern_properties")
    _exact(info, schema, [{}, {"a1": 1}, {"a1": "x"}, {"b": "s"}, {"c": None}, {"d": 1}])


def test_counted_optional_properties_bound(info: TokenizerInfo) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
        "minProperties": 2,
        "additionalProperties": False,
    }
    _reported(info, schema, Limits(max_counted_optional_properties=2), "max_counted_optional_properties")
    _exact(info, schema, [{}, {"a": 1}, {"a": 1, "b": 2}, {"a": 1, "c": 3}, {"a": 1, "b": 2, "c": 3}])


def test_unique_items_bound(info: TokenizerInfo) -> None:
    schema = {"type": "array", "items": {"enum": [1, 2, 3, 4]}, "uniqueItems": True}
    lenient = GrammarCompiler(info, limits=Limits(max_unique_items=3)).compile_json_schema(
        schema, strict=False
    )
    assert any("uniqueItems" in u for u in lenient.unenforced)
    assert _accepts(lenient, [1, 1])  # left out: a larger language
    _exact(info, schema, [[], [1], [1, 2], [1, 1], [4, 3, 2, 1], [4, 3, 2, 4]])


def test_any_order_bound_changes_the_mechanism_not_the_language(info: TokenizerInfo) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"const": 1}, "b": {"const": 2}, "c": {"const": 3}},
        "required": ["a", "b", "c"],
        "additionalProperties": False,
    }
    small = GrammarCompiler(info, limits=Limits(max_any_order_properties=2))
    tracked = small.compile_json_schema(schema, property_order="any")  # the members seen, on the stack
    spelled = GrammarCompiler(info).compile_json_schema(schema, property_order="any")  # every order
    for compiled in (tracked, spelled):
        assert _accepts(compiled, {"a": 1, "b": 2, "c": 3})
        assert _accepts(compiled, {"c": 3, "a": 1, "b": 2})
        assert not _accepts(compiled, {"c": 3, "a": 1})


def test_left_recursion_rewrite_names_the_configured_rule_bound(info: TokenizerInfo) -> None:
    # r_i ::= r_{i+1} "a" | r_{i+1} "b" | "x", closing a left cycle: substitution doubles per rule
    rules = [f'r{i} ::= r{i + 1} "a" | r{i + 1} "b" | "x"' for i in range(12)]
    text = "root ::= r0\n" + "\n".join(rules) + '\nr12 ::= r0 "c" | "y"'
    with pytest.raises(LimitExceeded) as exc:
        GrammarCompiler(info, limits=Limits(max_grammar_rules=500)).compile_grammar(text)
    assert (exc.value.limit, exc.value.value) == ("max_grammar_rules", 500)
