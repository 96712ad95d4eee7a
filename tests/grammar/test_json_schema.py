"""JSON Schema compiler: accepted texts against the jsonschema validator.

For each schema, instances (hand-written and hypothesis-generated) are written
with ``json.dumps`` in three layouts and fed to a matcher; a text must be a
complete match exactly when ``jsonschema.Draft202012Validator`` says the
instance is valid.
"""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tokensieve import GrammarCompiler, GrammarMatcher, SchemaError
from tokensieve.compile.compiled_grammar import CompiledGrammar
from tokensieve.grammar.json_schema import schema_to_grammar
from tokensieve.ir import Grammar


def accepts(compiled, text: str) -> bool:
    m = GrammarMatcher(compiled)
    return m.accept_string(text) and m.is_completed()


def layouts(value) -> list[str]:
    out = [json.dumps(value), json.dumps(value, indent=2), json.dumps(value, separators=(",", ":"))]
    if any(ord(c) > 127 for c in json.dumps(value, ensure_ascii=False)):
        out.append(json.dumps(value, ensure_ascii=False))
    return out


def check_against_validator(compiled, schema, instances) -> None:
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    for inst in instances:
        expected = validator.is_valid(inst)
        for text in layouts(inst):
            assert accepts(compiled, text) == expected, (schema, text, expected)


# (schema, instances); validity comes from the validator, not from this table
CASES = [
    ({"type": "integer"}, [0, -3, 17, 1.0, 1.5, "1", None, True, []]),
    ({"type": "number"}, [0, -3.25, 1e-3, 10.5, "x", None]),
    ({"type": "string"}, ["", "abc", "é€😀", 'q"uote\\', "\n\t", 3, None]),
    ({"type": "boolean"}, [True, False, 0, "true", None]),
    ({"type": "null"}, [None, False, 0, ""]),
    ({"type": ["string", "null"]}, ["a", None, 1, False]),
    (
        {"enum": ["red", "green", 3, None, [1, 2], {"a": 1}]},
        ["red", "blue", 3, 3.0, None, [1, 2], [2, 1], {"a": 1}, {}],
    ),
    ({"const": "x"}, ["x", "y", None]),
    ({"const": 2}, [2, 2.0, 3, "2"]),
    ({"type": "string", "minLength": 2, "maxLength": 4}, ["a", "ab", "abcd", "abcde", "éé", "😀😀😀"]),
    ({"type": "string", "pattern": "^[a-z]+[0-9]{2}$"}, ["abc12", "abc1", "ABC12", "a12", "12"]),
    ({"type": "string", "pattern": "b+"}, ["abbc", "ac", "b", ""]),
    ({"type": "string", "pattern": "^[a-z]*$", "maxLength": 3}, ["", "abc", "abcd", "ab1"]),
    ({"type": "integer", "minimum": -5, "maximum": 120}, [-6, -5, 0, 99, 120, 121, 5.0]),
    ({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}, [0, 1, 9, 10]),
    ({"type": "number", "minimum": 0.5, "maximum": 2.25}, [0.25, 0.5, 1, 2.25, 2.5]),
    ({"type": "integer", "multipleOf": 3}, [0, 3, 9, -6, 4, 10]),
    ({"type": "integer", "minimum": 5, "maximum": 6, "multipleOf": 2}, [4, 5, 6, 8]),
    (
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
            "required": ["name"],
            "additionalProperties": False,
        },
        [
            {"name": "a"},
            {"name": "a", "age": 3},
            {"age": 3},
            {"name": "a", "age": -1},
            {"name": "a", "x": 1},
            {},
            [],
        ],
    ),
    (
        {"type": "object", "properties": {"a": {"type": "integer"}}},
        [{}, {"a": 1}, {"a": "x"}, {"b": [1, {"c": None}]}, {"a": 1, "b": 2}, {"b": 2, "a": 1}, 3],
    ),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "additionalProperties": {"type": "string"},
        },
        [{}, {"a": 1}, {"b": "x"}, {"b": 1}, {"a": 1, "b": "y", "c": "z"}],
    ),
    (
        {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False},
        [{}, {"x-a": 1}, {"x-a": "s"}, {"y": 1}],
    ),
    (
        {
            "type": "object",
            "properties": {"id": {"type": "integer"}},
            "patternProperties": {"^s_": {"type": "string"}},
            "additionalProperties": {"type": "boolean"},
        },
        [{"id": 1, "s_a": "x", "flag": True}, {"s_a": 1}, {"flag": "x"}, {"id": "1"}],
    ),
    ({"type": "object", "propertyNames": {"pattern": "^[a-c]+$"}}, [{}, {"ab": 1}, {"ad": 1}]),
    (
        {"type": "object", "minProperties": 1, "maxProperties": 2},
        [{}, {"a": 1}, {"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3}],
    ),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
            "additionalProperties": False,
            "minProperties": 2,
        },
        [{}, {"a": 1}, {"a": 1, "c": 2}, {"a": 1, "b": 2, "c": 3}],
    ),
    (
        {
            "type": "object",
            "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
            "dependentRequired": {"card": ["billing"]},
            "additionalProperties": False,
        },
        [{}, {"billing": "x"}, {"card": "1", "billing": "x"}, {"card": "1"}],
    ),
    ({"type": "array", "items": {"type": "integer"}}, [[], [1], [1, 2, 3], [1, "a"], ["a"], {}]),
    (
        {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
        [[], ["a"], ["a", "b"], ["a", "b", "c"]],
    ),
    (
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
        [[], [1], [1, "a"], [1, "a", 2], ["a"], [1, 2]],
    ),
    (
        {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}, "minItems": 2},
        [[1], [1, True], [1, True, False], [1, 2], [True, True]],
    ),
    ({"type": "array", "contains": {"type": "string"}}, [[], [1], ["a"], [1, "a", 2], [1, 2]]),
    (
        {"type": "array", "items": {"enum": ["a", "b", "c", 1]}, "uniqueItems": True, "maxItems": 3},
        [[], ["a"], ["c", "a"], ["a", "a"], [1, "b", "c"], [1, "b", "c", "a"], [1, 1.0], ["d"]],
    ),
    ({"type": "array", "items": {"type": "boolean"}, "uniqueItems": True}, [[], [True], [True, False], [False, False]]),
    (
        {
            "type": "array",
            "items": {"type": "integer"},
            "contains": {"minimum": 5},
            "minContains": 2,
            "maxContains": 3,
        },
        [[], [5], [5, 6], [1, 5, 2, 6], [5, 6, 7, 8], [5, 6, 7]],
    ),
    (
        {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10}]},
        ["ab", "abc", 10, 9, None],
    ),
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, ["a", 1, None, 1.5]),
    (
        {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
                    "required": ["kind"],
                },
                {
                    "type": "object",
                    "properties": {"kind": {"const": "b"}, "y": {"type": "string"}},
                    "required": ["kind"],
                },
            ]
        },
        [{"kind": "a", "x": 1}, {"kind": "b", "y": "s"}, {"kind": "c"}, {"kind": "a", "x": "s"}, {}],
    ),
    (
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"required": ["b"]},
            ]
        },
        [{"a": 1, "b": 2}, {"a": 1}, {"b": 1}, {"a": "x", "b": 1}],
    ),
    (
        {"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 10}, {"multipleOf": 2}]},
        [-2, 0, 4, 7, 10, 12],
    ),
    (
        {"allOf": [{"type": "string", "pattern": "^a"}, {"pattern": "z$"}, {"maxLength": 4}]},
        ["az", "abz", "abcdz", "ba", "a"],
    ),
    ({"not": {"type": "string"}}, ["a", 1, None, [], {}]),
    ({"not": {"type": "integer"}}, [1, 1.0, 1.5, -0.25, "a", None]),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, [1, 3, 2.5, 1.5, "x"]),
    (
        {
            "oneOf": [
                {"properties": {"bar": {"type": "integer"}}, "required": ["bar"]},
                {"properties": {"foo": {"type": "string"}}, "required": ["foo"]},
            ]
        },
        [{"bar": 2, "foo": "baz"}, {"bar": 2}, {"foo": "x"}, {"bar": 2, "foo": 2}, {}],
    ),
    (
        {"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}, "properties": {"a": {}, "b": {}}},
        [{}, {"a": 1}, {"a": 1, "b": 2}, {"b": 2}],
    ),
    ({"type": "string", "not": {"enum": ["a", "b"]}}, ["a", "b", "c", ""]),
    ({"type": "integer", "not": {"const": 3}, "minimum": 0, "maximum": 5}, [0, 2, 3, 5]),
    (
        {
            "type": "object",
            "properties": {"country": {"type": "string"}, "postcode": {"type": "string"}},
            "if": {"properties": {"country": {"const": "US"}}, "required": ["country"]},
            "then": {"properties": {"postcode": {"pattern": "^[0-9]{5}$"}}},
            "else": {"properties": {"postcode": {"pattern": "^[A-Z]"}}},
            "additionalProperties": False,
        },
        [
            {"country": "US", "postcode": "12345"},
            {"country": "US", "postcode": "AB"},
            {"country": "FR", "postcode": "AB"},
            {"country": "FR", "postcode": "12345"},
            {"postcode": "A1"},
            {"postcode": "1"},
        ],
    ),
    (
        {
            "$defs": {"pos": {"type": "integer", "minimum": 1}},
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/pos"}, "b": {"$ref": "#/properties/a"}},
            "additionalProperties": False,
        },
        [{"a": 1, "b": 2}, {"a": 0}, {"b": 0}],
    ),
    (
        {
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {
                        "v": {"type": "integer"},
                        "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]},
                    },
                    "required": ["v", "next"],
                    "additionalProperties": False,
                }
            },
            "$ref": "#/$defs/node",
        },
        [
            {"v": 1, "next": None},
            {"v": 1, "next": {"v": 2, "next": None}},
            {"v": 1, "next": {"v": "x", "next": None}},
            {"v": 1},
        ],
    ),
    (
        {
            "$defs": {"a": {"$anchor": "thing", "type": "string"}},
            "type": "array",
            "items": {"$ref": "#thing"},
        },
        [["a"], [1], []],
    ),
    (
        {
            "$id": "http://example.com/root.json",
            "$defs": {"x": {"$id": "x.json", "type": "integer"}},
            "$ref": "x.json",
        },
        [1, "a"],
    ),
    ({"type": "object", "properties": {"a": False}}, [{}, {"a": 1}, {"b": 1}]),
    ({"type": "array", "items": {"type": "integer"}, "unevaluatedItems": False}, [[1], ["a"]]),
    ({"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False}, [{"a": 1}, {"b": 1}]),
    ({"type": "string", "format": "date"}, ["2024-02-29", "2023-02-29", "x", "2024-13-01"]),
    (True, [1, "a", None, {"a": [1]}]),
    ({}, [1, "a", None, {"a": [1, {"b": {}}]}, []]),
]


@pytest.mark.parametrize("schema,instances", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_against_validator(compiler, schema, instances) -> None:
    compiled = compiler.compile_json_schema(schema)
    assert compiled.unenforced == ()
    check_against_validator(compiled, schema, instances)


def test_openapi_nullable(compiler) -> None:
    compiled = compiler.compile_json_schema({"type": "string", "nullable": True, "maxLength": 2})
    # the OpenAPI meaning, as plain JSON Schema
    check_against_validator(
        compiled, {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}]}, ["a", "abc", None, 1]
    )


def test_closed_objects_are_one_automaton(compiler) -> None:
    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "kind": {"enum": ["a", "b"]},
            "nested": {
                "type": "object",
                "properties": {"x": {"type": "number"}},
                "additionalProperties": False,
            },
        },
        "required": ["id"],
        "additionalProperties": False,
    }
    compiled = compiler.compile_json_schema(schema)
    assert isinstance(compiled, CompiledGrammar)
    check_against_validator(
        compiled,
        schema,
        [
            {"id": 1, "tags": ["a"], "kind": "a", "nested": {"x": 1.5}},
            {"id": 1, "nested": {"y": 1}},
            {"id": 1},
        ],
    )


def test_compact_layout(compiler) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "integer"}}},
        "required": ["a"],
    }
    compiled = compiler.compile_json_schema(schema, whitespace="compact")
    assert accepts(compiled, '{"a":[1,2]}')
    assert not accepts(compiled, '{"a": [1, 2]}')
    assert not accepts(compiled, ' {"a":[1,2]}')


def test_flexible_whitespace_is_bounded(compiler) -> None:
    compiled = compiler.compile_json_schema({"type": "array", "items": {"type": "integer"}}, max_whitespace=4)
    assert accepts(compiled, "[ \n\t1 ,\r\n2]")
    assert accepts(compiled, "[" + " " * 4 + "1]")
    assert not accepts(compiled, "[" + " " * 5 + "1]")
    assert not accepts(compiled, " [1]")
    assert not accepts(compiled, "[1] ")


@pytest.mark.parametrize("indent", [2, 4])
def test_indent_layout_is_exact(compiler, indent) -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": {"type": "integer"}},
            "b": {"type": "object", "properties": {"c": {"type": "string"}}, "additionalProperties": False},
        },
        "additionalProperties": False,
    }
    compiled = compiler.compile_json_schema(schema, indent=indent)
    for value in [{"a": [1, 2], "b": {"c": "x"}}, {"a": [], "b": {}}, {}, {"b": {"c": "y"}}]:
        assert accepts(compiled, json.dumps(value, indent=indent))
        assert not accepts(compiled, json.dumps(value, indent=indent + 1)) or json.dumps(value) in ("{}",)
        assert not accepts(compiled, json.dumps(value)) or value == {}


def test_indent_falls_back_inside_recursion(compiler) -> None:
    schema = {"type": "object", "properties": {"x": {}}, "required": ["x"], "additionalProperties": False}
    compiled = compiler.compile_json_schema(schema, indent=2, strict=False)
    assert accepts(compiled, json.dumps({"x": {"y": [1]}}, indent=2))
    assert any("indent" in u for u in compiled.unenforced)


def test_property_order_any(compiler) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
        "required": ["a", "c"],
        "additionalProperties": False,
    }
    schema_order = compiler.compile_json_schema(schema)
    any_order = compiler.compile_json_schema(schema, property_order="any")
    text = '{"c": true, "a": 1}'
    assert not accepts(schema_order, text)
    assert accepts(any_order, text)
    assert accepts(any_order, '{"b": "x", "c": false, "a": 2}')
    assert not accepts(any_order, '{"a": 1, "a": 2, "c": true}')
    assert not accepts(any_order, '{"b": "x", "a": 2}')


def test_dependent_required_any_order(compiler) -> None:
    schema = {"dependentRequired": {"bar": ["foo"]}}
    compiled = compiler.compile_json_schema(schema, property_order="any")
    check_against_validator(
        compiled, schema, [{}, {"foo": 1}, {"bar": 2}, {"foo": 1, "bar": 2}, {"bar": 2, "foo": 1}, {"x": 1, "bar": 2}, 3]
    )


def test_openai_wrappers_and_text(compiler) -> None:
    inner = {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
        "required": ["x"],
        "additionalProperties": False,
    }
    forms = [
        {"type": "json_schema", "json_schema": {"name": "t", "schema": inner, "strict": True}},
        {"name": "t", "schema": inner, "strict": True},
        json.dumps(inner),
    ]
    for form in forms:
        compiled = compiler.compile_json_schema(form)
        assert accepts(compiled, '{"x": 3}')
        assert not accepts(compiled, '{"x": "3"}')


def test_pydantic_model(compiler) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Point(pydantic.BaseModel):
        x: int
        y: float = 0.0
        label: str | None = None

    compiled = compiler.compile_json_schema(Point)
    schema = Point.model_json_schema()
    check_against_validator(
        compiled, schema, [{"x": 1}, {"x": 1, "y": 2.5, "label": None}, {"x": 1, "label": "p"}, {"y": 1.0}]
    )


def test_recursive_schema_is_pushdown(compiler) -> None:
    schema = {
        "$defs": {
            "tree": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}}},
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/tree",
    }
    compiled = compiler.compile_json_schema(schema)
    assert not isinstance(compiled, CompiledGrammar)
    check_against_validator(
        compiled, schema, [{}, {"kids": [{}, {"kids": [{}]}]}, {"kids": [{"x": 1}]}, {"kids": [1]}]
    )


def test_references_to_one_target_share_one_rule(compiler) -> None:
    """A target reached from the root and from inside itself is one recursive rule, not an inlined copy
    (annotations beside a reference change nothing); a reference with its own keywords stays apart."""
    item = {
        "type": "object",
        "properties": {
            "label": {"type": "string", "maxLength": 3},
            "kids": {"type": "array", "items": {"$ref": "#/$defs/item", "description": "a child"}, "maxItems": 2},
        },
        "required": ["label"],
        "additionalProperties": False,
    }
    schema = {
        "$defs": {"item": item},
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "maxItems": 3},
            "first": {"$ref": "#/$defs/item", "required": ["kids"]},
        },
        "additionalProperties": False,
    }
    grammar, _ = schema_to_grammar(schema)
    assert sorted(grammar.rules) == ["root", "s0", "s1"]  # the item, and the item that must have kids
    compiled = compiler.compile_json_schema(schema)
    leaf = {"label": "a"}
    check_against_validator(
        compiled,
        schema,
        [
            {},
            {"items": [leaf, {"label": "b", "kids": [leaf, {"label": "c", "kids": []}]}]},
            {"items": [leaf, leaf, leaf, leaf]},
            {"items": [{"label": "b", "kids": [leaf, leaf, leaf]}]},
            {"items": [{"label": "toolong"}]},
            {"first": leaf},
            {"first": {"label": "a", "kids": [leaf]}},
            {"first": {"label": "a", "kids": [{"label": "b", "kids": [leaf]}]}},
        ],
    )


def test_builtin_json_grammar(compiler) -> None:
    compiled = compiler.compile_builtin_json_grammar()
    for value in [1, "a", None, [1, {"a": [True, False, None]}], {"é": "😀"}]:
        for text in layouts(value):
            assert accepts(compiled, text)
    for text in ["", "{", "[1,]", "01", "'a'", "nul", '{"a"}', '{"a":1,}']:
        assert not accepts(compiled, text)


def test_schema_to_grammar_returns_grammar() -> None:
    grammar, unenforced = schema_to_grammar({"type": "integer"})
    assert isinstance(grammar, Grammar)
    assert grammar.root == "root"
    assert unenforced == ()


def test_cache_by_canonical_key(compiler) -> None:
    a = compiler.compile_json_schema({"type": "integer", "minimum": 3})
    b = compiler.compile_json_schema('{"type": "integer", "minimum": 3}')
    c = compiler.compile_json_schema({"type": "integer", "minimum": 3}, whitespace="compact")
    assert a is b
    assert a is not c


# ----------------------------------------------------------------- hypothesis
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-1000, max_value=1000),
    st.integers(min_value=-4000, max_value=4000).map(lambda n: n / 4),
    st.text(alphabet='abcxyz019 é"\\\n😀', max_size=6),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "c", "kind", "x-y", "é"]), children, max_size=4),
    ),
    max_leaves=10,
)

HYPOTHESIS_SCHEMAS = [
    {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "minimum": 0},
            "b": {"type": ["string", "null"], "maxLength": 3},
        },
        "required": ["a"],
    },
    {
        "type": "array",
        "items": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[a-c]*$"}]},
        "maxItems": 3,
    },
    {
        "type": "object",
        "properties": {
            "kind": {"enum": ["a", "b"]},
            "c": {"type": "array", "items": {"type": "number", "maximum": 10}},
        },
        "patternProperties": {"^x-": {"type": "boolean"}},
        "additionalProperties": False,
    },
    {"not": {"anyOf": [{"type": "object"}, {"type": "string", "minLength": 2}]}},
    {},
]


def _in_schema_order(schema: dict, value: object) -> bool:
    """Whether the properties that ``schema`` names come in its order in ``value`` (top level only:
    no schema above names properties below its top level)."""
    if not isinstance(value, dict):
        return True
    order = list(schema.get("properties", {}))
    seen = [order.index(k) for k in value if k in order]
    return seen == sorted(seen)


@pytest.mark.parametrize("index", range(len(HYPOTHESIS_SCHEMAS)))
def test_random_instances(compiler, index) -> None:
    """Any order: accepted exactly when valid. Schema order (the default): the same for instances
    whose named properties come in the schema's order, and never accepted otherwise."""
    schema = HYPOTHESIS_SCHEMAS[index]
    in_order = compiler.compile_json_schema(schema)
    any_order = compiler.compile_json_schema(schema, property_order="any")
    validator = jsonschema.Draft202012Validator(schema)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(json_values)
    @example({"b": None, "a": 0})  # valid, but out of the schema's order
    @example({"kind": "a", "c": [1], "x-y": True})
    def run(value) -> None:
        expected = validator.is_valid(value)
        ordered = _in_schema_order(schema, value)
        for text in layouts(value):
            assert accepts(any_order, text) == expected, (schema, text, expected)
            assert accepts(in_order, text) == (expected and ordered), (schema, text, expected, ordered)

    run()


UNIQUE_TRACKED = [
    # too many orders to spell out: the automaton tracks the set of items used
    {"type": "array", "items": {"type": "string", "enum": ["XS", "S", "M", "L", "XL", "XXL"]}, "minItems": 1, "uniqueItems": True},
    # numbers where one item is a prefix of another (1, 10, 100)
    {"type": "array", "items": {"type": "integer", "enum": [1, 10, 100, 408, 429]}, "uniqueItems": True, "maxItems": 4},
    {"type": "array", "items": {"enum": ["a", "b", None, True, "e", "f", "g"]}, "uniqueItems": True, "minItems": 2},
]


@pytest.fixture(params=["as chosen", "tracked"])
def unique_compiler(request, compiler, monkeypatch) -> GrammarCompiler:
    """The module's compiler, or a fresh one for which every ``uniqueItems`` array tracks the items used."""
    if request.param == "as chosen":
        return compiler
    import tokensieve.grammar.json_schema._lower_arrays as arrays

    monkeypatch.setattr(arrays, "_SPELL_OUT_STATES", 0)
    return GrammarCompiler(compiler.tokenizer_info, cache_enabled=False)


@pytest.mark.parametrize("schema", UNIQUE_TRACKED)
def test_unique_items_of_enums_are_exact(unique_compiler, schema) -> None:
    """Every array of up to four items (repeats included) against the validator, in three layouts."""
    compiled = unique_compiler.compile_json_schema(schema)
    assert not compiled.unenforced
    values = schema["items"]["enum"]
    instances = [list(seq) for k in range(5) for seq in itertools.product(values, repeat=k)]
    instances += [values, values[::-1], values[:-1], values + values[:1]]  # past four items
    check_against_validator(compiled, schema, instances)


def _spaced(inst: list, rng, longest: int) -> str:
    """``inst`` with runs of 0 to ``longest`` blanks (space, newline, tab) around every bracket and comma."""

    def ws() -> str:
        return "".join(rng.choice(" \n\t") for _ in range(rng.randint(0, longest)))

    if not inst:
        return "[" + ws() + "]"
    sep = ws() + "," + ws()
    return "[" + ws() + sep.join(json.dumps(v) for v in inst) + ws() + "]"


@pytest.mark.parametrize("schema", UNIQUE_TRACKED)
def test_unique_items_of_enums_with_blanks_anywhere(unique_compiler, schema) -> None:
    """Blank runs of any placement up to the bound are accepted exactly for valid arrays; longer runs never."""
    import random

    rng = random.Random(7)
    compiled = unique_compiler.compile_json_schema(schema, max_whitespace=3)
    validator = jsonschema.Draft202012Validator(schema)
    values = schema["items"]["enum"]
    instances = [list(seq) for k in range(5) for seq in itertools.product(values, repeat=k)]
    for inst in rng.sample(instances, 300):
        expected = validator.is_valid(inst)
        for _ in range(3):
            text = _spaced(inst, rng, 3)
            assert accepts(compiled, text) == expected, (schema, text, expected)
        too_long = "[    " + json.dumps(inst)[1:]
        assert not accepts(compiled, too_long), (schema, too_long)


@pytest.mark.parametrize("options", [{"whitespace": "compact"}, {"indent": 2}])
@pytest.mark.parametrize("schema", UNIQUE_TRACKED)
def test_unique_items_of_enums_nested_in_fixed_layouts(unique_compiler, schema, options) -> None:
    """Inside an object (one level deeper), in the compact and the indented layout: exactly that layout."""
    wrapped = {"type": "object", "properties": {"tags": schema}, "required": ["tags"], "additionalProperties": False}
    compiled = unique_compiler.compile_json_schema(wrapped, **options)
    assert not compiled.unenforced
    validator = jsonschema.Draft202012Validator(wrapped)
    values = schema["items"]["enum"]
    for inst in ({"tags": list(seq)} for k in range(5) for seq in itertools.product(values, repeat=k)):
        expected = validator.is_valid(inst)
        if "indent" in options:
            text, other = json.dumps(inst, indent=2), json.dumps(inst)
        else:
            text, other = json.dumps(inst, separators=(",", ":")), json.dumps(inst, indent=2)
        assert accepts(compiled, text) == expected, (wrapped, options, text, expected)
        if other != text:
            assert not accepts(compiled, other), (wrapped, options, other)


def test_unique_items_of_large_enums_are_reported(compiler) -> None:
    schema = {"type": "array", "items": {"enum": list(range(12))}, "uniqueItems": True}
    with pytest.raises(SchemaError, match="uniqueItems"):
        compiler.compile_json_schema(schema)
    assert compiler.compile_json_schema(schema, strict=False).unenforced
