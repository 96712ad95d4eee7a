"""Reading a vLLM request's constraint from ``extra_args`` (no vLLM needed: runs in every environment)."""

from __future__ import annotations

import json
import re

import pytest

from tokensieve import GrammarCompiler, GrammarError, GrammarMatcher, SchemaError, TokenizerInfo
from tokensieve.integrations._vllm_requests import (
    Constraint,
    ConstraintError,
    check_constraint,
    compile_constraint,
    constraint_from_extra_args,
)
from tokensieve.integrations._vllm_vocab import stop_ids_from

SCHEMA = {
    "type": "object",
    "properties": {"b": {"type": "integer"}, "a": {"type": "string"}},
    "required": ["b"],
}


def read(value: object) -> Constraint | None:
    return constraint_from_extra_args({"structured_outputs": value})


def test_no_constraint() -> None:
    assert constraint_from_extra_args(None) is None
    assert constraint_from_extra_args({}) is None
    assert constraint_from_extra_args({"other": 1}) is None
    assert read(None) is None


def test_dict_and_json_text_agree() -> None:
    as_dict = read({"json": SCHEMA})
    assert as_dict == read(json.dumps({"json": SCHEMA}))  # vllm_xargs: the whole object as text
    assert as_dict == read({"json": json.dumps(SCHEMA)})  # the schema as text
    assert as_dict is not None and as_dict.kind == "json"
    # the schema's key order is its property order, so it is kept
    assert list(json.loads(str(as_dict.source))["properties"]) == ["b", "a"]


def test_each_kind() -> None:
    assert read({"regex": r"\d+"}) == Constraint("regex", r"\d+")
    assert read({"choice": ["yes", "no"]}) == Constraint("choice", ("yes", "no"))
    assert read({"choice": '["yes", "no"]'}) == Constraint("choice", ("yes", "no"))
    assert read({"json_object": True}) == Constraint("json_object", "")
    gbnf = 'root ::= "a" root | "b"'
    assert read({"grammar": gbnf}) == Constraint("grammar", gbnf, syntax="ebnf")
    assert read({"grammar": gbnf, "grammar_syntax": "gbnf"}) == Constraint("grammar", gbnf, syntax="gbnf")
    lark = 'start: "a" start | "b"'
    assert read({"grammar": lark}) == Constraint("grammar", lark, syntax="lark")
    options = read({"json": SCHEMA, "disable_any_whitespace": True, "strict": False})
    assert options is not None and options.compact and not options.strict


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("[1, 2]", "must be an object"),
        ("{not json", "not JSON"),
        (42, "must be an object"),
        ({}, "exactly one"),
        ({"regex": "a", "choice": ["a"]}, "regex, choice"),
        ({"regexp": "a"}, "unknown fields ['regexp']"),
        ({"structural_tag": "{}"}, "structural_tag is not supported"),
        ({"regex": 5}, "regex must be a string"),
        ({"choice": []}, "non-empty list"),
        ({"choice": ["a", 1]}, "[1] must be a string"),
        ({"json": [1]}, "JSON Schema"),
        ({"json": "{oops"}, "not JSON"),
        ({"json_object": "yes"}, "must be true"),
        ({"json": {}, "strict": "no"}, "strict must be true or false"),
        ({"grammar": "a ::= 'x'", "grammar_syntax": "peg"}, "grammar_syntax"),
    ],
)
def test_malformed_requests_are_refused(value: object, words: str) -> None:
    with pytest.raises(ConstraintError, match=re.escape(words)):
        read(value)
    assert issubclass(ConstraintError, ValueError)  # vLLM answers a ValueError with a 400


def test_front_end_errors_say_where() -> None:
    regex = read({"regex": "a(b"})
    assert regex is not None
    with pytest.raises(GrammarError, match="column"):
        check_constraint(regex)
    # a keyword tokensieve cannot enforce exactly: refused under strict with its pointer, left out otherwise
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": "(?<=a)b"}}}
    strict = read({"json": schema})
    assert strict is not None
    with pytest.raises(SchemaError, match="/properties/x"):
        check_constraint(strict)
    lenient = read({"json": schema, "strict": False})
    assert lenient is not None
    check_constraint(lenient)
    grammar = read({"grammar": 'root ::= "a" missing'})
    assert grammar is not None
    with pytest.raises(GrammarError, match="missing"):
        check_constraint(grammar)


def accepts(compiled: object, text: str) -> bool:
    matcher = GrammarMatcher(compiled)  # type: ignore[arg-type]
    return matcher.accept_string(text) and matcher.is_completed()


def test_compiled_constraints_follow_their_language() -> None:
    # a vocabulary of single bytes: every string is one spelling, so membership is a plain check
    info = TokenizerInfo(
        [b"<eos>", *(bytes([b]) for b in range(1, 128))], stop_token_ids=[0], special_token_ids=[0]
    )
    compiler = GrammarCompiler(info)
    cases = {
        json.dumps({"regex": r"[a-c]{2}\d"}): (["ab1", "cc9"], ["ab", "abc", "ab12"]),
        json.dumps({"choice": ["yes", "no"]}): (["yes", "no"], ["ye", "yesno", "maybe"]),
        json.dumps({"json": SCHEMA, "disable_any_whitespace": True}): (
            ['{"b":1}', '{"b":-2,"a":"x"}'],
            ['{"a":"x"}', '{"b": 1}', '{"b":1.5}'],
        ),
        json.dumps({"json_object": True}): (['{"k":[1,{}]}', "{}"], ["[]", "1", '"x"']),
        json.dumps({"grammar": 'root ::= "(" root ")" | "x"'}): (["x", "((x))"], ["(x", "()"]),
        json.dumps({"grammar": 'start: "(" start ")" | "x"'}): (["(x)"], ["((x)"]),
    }
    for spec, (good, bad) in cases.items():
        constraint = read(spec)
        assert constraint is not None
        compiled = compile_constraint(compiler, constraint)
        for text in good:
            assert accepts(compiled, text), (spec, text)
        for text in bad:
            assert not accepts(compiled, text), (spec, text)


def test_stop_ids_are_the_tokenizers_and_the_generation_configs() -> None:
    class Tok:
        eos_token_id = 2

    assert stop_ids_from(Tok(), None) == [2]
    assert stop_ids_from(Tok(), {"eos_token_id": [7, 2]}) == [2, 7]
    assert stop_ids_from(object(), {"eos_token_id": 5}) == [5]
    assert stop_ids_from(object(), {"eos_token_id": True}) == []
