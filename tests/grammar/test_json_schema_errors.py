"""JSON Schema compiler: typed errors with JSON pointers, unenforced keywords, limits."""

from __future__ import annotations

import json

import pytest
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, GrammarMatcher, LimitExceeded, Limits, SchemaError, TokenizerInfo
from tokensieve.grammar.json_schema import schema_to_grammar


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    vocab = make_tiny_vocab()
    info = TokenizerInfo(vocab, vocab_size=len(vocab), stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])
    return GrammarCompiler(info)


def accepts(compiled, text: str) -> bool:
    m = GrammarMatcher(compiled)
    return m.accept_string(text) and m.is_completed()


def test_unparsable_text_gives_position() -> None:
    with pytest.raises(SchemaError) as info:
        schema_to_grammar('{"type": "object",\n  "properties": {,}}')
    assert "line 2" in str(info.value)
    assert "column" in str(info.value)


@pytest.mark.parametrize(
    "schema,pointer",
    [
        ({"properties": {"a": {"minimum": "x"}}}, "/properties/a/minimum"),
        ({"type": "strin"}, "/type"),
        ({"required": "a"}, "/required"),
        ({"type": "string", "pattern": "(ab"}, "/pattern"),
        ({"items": 3}, "/items"),
        ({"$ref": "#/$defs/missing"}, "/$ref"),
        ({"anyOf": []}, "/anyOf"),
        ({"minLength": -1}, "/minLength"),
        ({"maxItems": 1.5}, "/maxItems"),
        ({"multipleOf": 0}, "/multipleOf"),
        ({"properties": {"a": {"properties": {"b": 7}}}}, "/properties/a/properties/b"),
        ({"$defs": {"x": {"enum": 3}}, "$ref": "#/$defs/x"}, "/$defs/x/enum"),
        ({"patternProperties": {"(": {}}}, "/patternProperties/("),
        ({"prefixItems": [{"type": 1}]}, "/prefixItems/0/type"),
    ],
)
def test_bad_keyword_values_point_at_the_keyword(schema, pointer) -> None:
    with pytest.raises(SchemaError) as info:
        schema_to_grammar(schema)
    assert info.value.pointer == pointer


@pytest.mark.parametrize(
    "schema,pointer,keyword",
    [
        ({"type": "array", "uniqueItems": True}, "/uniqueItems", "uniqueItems"),
        ({"properties": {"a": {"$dynamicRef": "#x"}}}, "/properties/a/$dynamicRef", "$dynamicRef"),
        ({"$ref": "https://example.com/other.json"}, "/$ref", "$ref"),
        (
            {"oneOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "array", "maxItems": 2}]},
            "/oneOf",
            "oneOf",
        ),
        (
            {"type": "object", "unevaluatedProperties": False, "anyOf": [{"properties": {"a": {}}}]},
            "/unevaluatedProperties",
            "unevaluatedProperties",
        ),
    ],
)
def test_unsupported_keywords_strict_and_lenient(compiler, schema, pointer, keyword) -> None:
    with pytest.raises(SchemaError) as info:
        compiler.compile_json_schema(schema)
    assert info.value.pointer == pointer
    compiled = compiler.compile_json_schema(schema, strict=False)
    assert any(u.startswith(f"{pointer}: {keyword} ") for u in compiled.unenforced), compiled.unenforced


@pytest.mark.parametrize(
    "schema,pointer,violates,breaks_the_rest",
    [
        # a lookbehind: left out, so a string that does not end with a digit passes, and maxLength still holds
        (
            {"type": "string", "pattern": "^[a-z0-9]+(?<=[0-9])$", "maxLength": 6},
            "/pattern",
            '"abcdef"',
            '"abcdefg"',
        ),
        # a script property inside an object's property
        (
            {
                "type": "object",
                "properties": {"name": {"type": "string", "pattern": "^\\p{Script=Greek}+$", "minLength": 2}},
                "required": ["name"],
                "additionalProperties": False,
            },
            "/properties/name/pattern",
            '{"name": "ab"}',
            '{"name": "a"}',
        ),
        # a word boundary under not: the exclusion is left out
        (
            {"type": "string", "not": {"pattern": "\\bfoo"}, "maxLength": 4},
            "/not/pattern",
            '"foo"',
            '"foooo"',
        ),
    ],
)
def test_unsupported_pattern_is_reported_in_lenient_mode(
    compiler, schema, pointer, violates, breaks_the_rest
) -> None:
    """Strict: a SchemaError at the pattern; lenient: the pattern is left out and reported, the rest enforced."""
    with pytest.raises(SchemaError) as info:
        compiler.compile_json_schema(schema)
    assert info.value.pointer == pointer
    compiled = compiler.compile_json_schema(schema, strict=False)
    assert any(u.startswith(f"{pointer}: pattern ") and "not enforced" in u for u in compiled.unenforced), (
        compiled.unenforced
    )
    assert accepts(compiled, violates)
    assert not accepts(compiled, breaks_the_rest)


def test_unsupported_pattern_property_closes_the_extra_keys_and_says_so(compiler) -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^(?<!x)a": {"type": "integer"}},
        "additionalProperties": False,
    }
    compiled = compiler.compile_json_schema(schema, strict=False)
    assert any(u.startswith("/patternProperties/^(?<!x)a: pattern ") for u in compiled.unenforced)
    assert any(u.startswith("/patternProperties: patternProperties ") for u in compiled.unenforced)
    assert accepts(compiled, "{}")
    assert not accepts(compiled, '{"a": 1}')  # no extra key at all: a smaller language, never a wrong one


@pytest.mark.parametrize("pattern", ["(ab", "[z-a]", "\\p{NoSuchProperty}"])
def test_malformed_pattern_is_an_error_in_both_modes(compiler, pattern) -> None:
    for strict in (True, False):
        with pytest.raises(SchemaError) as info:
            compiler.compile_json_schema({"type": "string", "pattern": pattern}, strict=strict)
        assert info.value.pointer == "/pattern"


def test_unknown_keywords_are_ignored(compiler) -> None:
    compiled = compiler.compile_json_schema({"type": "integer", "x-custom": {"a": 1}, "title": "n"})
    assert compiled.unenforced == ()
    assert accepts(compiled, "12")


def test_unknown_format_is_reported_not_raised(compiler) -> None:
    compiled = compiler.compile_json_schema({"type": "string", "format": "no-such-format"})
    assert any("/format: format" in u for u in compiled.unenforced)
    assert accepts(compiled, '"anything"')


def test_partially_enforced_format_is_reported(compiler) -> None:
    compiled = compiler.compile_json_schema({"type": "string", "format": "hostname"})
    assert any(u.startswith("/format: format 'hostname' is enforced in part") for u in compiled.unenforced)
    assert accepts(compiled, '"example.com"')
    assert not accepts(compiled, '"-bad-.com"')


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer", "minimum": 5, "maximum": 1},
        False,
        {"type": "object", "properties": {"a": False}, "required": ["a"]},
        {"allOf": [{"type": "string"}, {"type": "integer"}]},
        {"enum": [1, 2], "type": "string"},
        {"type": "string", "minLength": 5, "maxLength": 2},
        {"type": "object", "required": ["a"], "additionalProperties": False},
        {"type": "array", "minItems": 3, "maxItems": 1},
        {"not": {}},
    ],
)
def test_unsatisfiable_schemas(compiler, schema) -> None:
    with pytest.raises(SchemaError):
        compiler.compile_json_schema(schema)


def test_bad_options() -> None:
    with pytest.raises(ValueError):
        schema_to_grammar({}, whitespace="loose")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        schema_to_grammar({}, property_order="sorted")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        schema_to_grammar({}, indent=-1)
    with pytest.raises(SchemaError):
        schema_to_grammar([1, 2])


# ------------------------------------------------------------- adversarial
def test_deep_nesting_is_a_typed_error_or_works(compiler) -> None:
    schema: dict = {"type": "integer"}
    for _ in range(500):
        schema = {
            "type": "object",
            "properties": {"a": schema},
            "required": ["a"],
            "additionalProperties": False,
        }
    with pytest.raises(LimitExceeded):
        compiler.compile_json_schema(schema)
    nested: dict = {"type": "integer"}
    for _ in range(500):
        nested = {"type": "array", "items": nested}
    with pytest.raises(LimitExceeded):
        compiler.compile_json_schema(json.dumps(nested))


def test_nesting_within_the_limit_works(compiler) -> None:
    schema: dict = {"type": "integer"}
    for _ in range(40):
        schema = {"type": "array", "items": schema, "maxItems": 1}
    compiled = compiler.compile_json_schema(schema, whitespace="compact")
    assert accepts(compiled, "[" * 40 + "1" + "]" * 40)
    assert not accepts(compiled, "[" * 39 + "1" + "]" * 39)


def test_ten_thousand_entry_enum(compiler) -> None:
    values = [f"item-{i}" for i in range(10_000)]
    compiled = compiler.compile_json_schema({"enum": values})
    assert accepts(compiled, '"item-9999"')
    assert accepts(compiled, '"item-0"')
    assert not accepts(compiled, '"item-10000"')


def test_enum_over_the_limit(compiler) -> None:
    small = GrammarCompiler(compiler.tokenizer_info, limits=Limits(max_choices=100))
    with pytest.raises(LimitExceeded):
        small.compile_json_schema({"enum": list(range(101))})


def test_giant_one_of_of_constants(compiler) -> None:
    compiled = compiler.compile_json_schema({"oneOf": [{"const": i} for i in range(2000)]})
    assert accepts(compiled, "1999")
    assert not accepts(compiled, "2000")


def test_huge_max_length_with_pattern(compiler) -> None:
    schema = {"type": "string", "maxLength": 1_000_000, "pattern": "^[a-z]+$"}
    try:
        compiled = compiler.compile_json_schema(schema)
    except LimitExceeded:
        return
    assert accepts(compiled, '"abc"')


def test_four_megabyte_schema(compiler) -> None:
    schema = {"type": "object", "description": "x" * (4 << 20), "properties": {"a": {"type": "integer"}}}
    compiled = compiler.compile_json_schema(schema)
    assert accepts(compiled, '{"a": 1}')


def test_many_properties_is_bounded(compiler) -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(3000)}}
    small = GrammarCompiler(compiler.tokenizer_info, limits=Limits(max_nfa_states=20_000))
    with pytest.raises(LimitExceeded):
        small.compile_json_schema(schema)


def test_rule_limit(compiler) -> None:
    defs = {f"d{i}": {"type": "array", "items": {"$ref": f"#/$defs/d{(i + 1) % 50}"}} for i in range(50)}
    small = GrammarCompiler(compiler.tokenizer_info, limits=Limits(max_grammar_rules=10))
    with pytest.raises(LimitExceeded):
        small.compile_json_schema({"$defs": defs, "$ref": "#/$defs/d0"})


def test_lenient_mode_relaxes_bounds_that_exceed_the_limits(compiler) -> None:
    schema = {
        "type": "object",
        "properties": {
            "texts": {"type": "array", "items": {"type": "string", "maxLength": 5000}, "maxItems": 10}
        },
        "required": ["texts"],
        "additionalProperties": False,
    }
    with pytest.raises(LimitExceeded):
        compiler.compile_json_schema(schema)
    compiled = compiler.compile_json_schema(schema, strict=False)
    assert any(u.startswith("/properties/texts/items/maxLength: maxLength 5000") for u in compiled.unenforced)
    assert accepts(compiled, '{"texts": ["a", "b"]}')
    assert not accepts(compiled, '{"texts": ["a", 1]}')
    assert not accepts(compiled, '{"texts": [' + ", ".join(['"a"'] * 11) + "]}")


def test_an_automaton_over_the_limits_is_compiled_as_a_rule_network(compiler) -> None:
    # each string alone is below the limit (1,250 states), the three together are not: they
    # become rules of their own, and every bound is still enforced
    small = GrammarCompiler(compiler.tokenizer_info, limits=Limits(max_dfa_states=1_500), cache_enabled=False)
    names = ["a", "b", "c"]
    schema = {
        "type": "object",
        "properties": {
            **{name: {"type": "string", "maxLength": 50} for name in names},
            "d": {"type": "string", "maxLength": 20},
        },
        "required": [*names, "d"],
        "additionalProperties": False,
    }
    compiled = small.compile_json_schema(schema)
    assert compiled.unenforced == ()
    for name in names:
        value = {"a": "x", "b": "", "c": "z", "d": "y"}
        assert accepts(compiled, json.dumps(value))
        value[name] = "x" * 50
        assert accepts(compiled, json.dumps(value))
        value[name] = "x" * 51
        assert not accepts(compiled, json.dumps(value))
    assert not accepts(compiled, json.dumps({"a": "x", "b": "", "c": "z", "d": "y" * 21}))


def test_lenient_mode_does_not_build_a_grammar_again_when_nothing_was_relaxed(compiler, monkeypatch) -> None:
    # the bound is at most 256: leaving out the bounds above 256 changes nothing, so only the
    # first (exact) and the last (bounds above 32 left out) grammars are built
    from tokensieve.compile import compiler as compiler_module

    built = []
    real = compiler_module.compile_grammar_automaton

    def counting(grammar, limits, **options):
        built.append(grammar)
        return real(grammar, limits, **options)

    monkeypatch.setattr(compiler_module, "compile_grammar_automaton", counting)
    small = GrammarCompiler(compiler.tokenizer_info, limits=Limits(max_dfa_states=500), cache_enabled=False)
    # up to 200 integers: a rule network calls the integer, but the count alone needs more states
    # than the limit
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "integer"}, "maxItems": 200}},
        "required": ["a"],
    }
    with pytest.raises(LimitExceeded):
        small.compile_json_schema(schema)
    assert len(built) == 1
    built.clear()
    compiled = small.compile_json_schema(schema, strict=False)
    assert len(built) == 2
    assert [u.split(":")[0] for u in compiled.unenforced] == ["/properties/a/maxItems"]
    assert accepts(compiled, json.dumps({"a": list(range(260))}))
    assert not accepts(compiled, json.dumps({"a": ["x"]}))
    # a schema that still fails once the bounds above 32 are left out gives the limit's error
    tiny = GrammarCompiler(compiler.tokenizer_info, limits=Limits(max_dfa_states=300), cache_enabled=False)
    with pytest.raises(LimitExceeded) as err:
        tiny.compile_json_schema(schema, strict=False)
    assert err.value.limit == "max_dfa_states"


@pytest.mark.parametrize(("low", "high"), [(0, 1), (0, 4), (3, 7), (5, None)])
def test_states_per_character_is_a_lower_bound(low, high) -> None:
    # the compiler gives up on long strings before building them, from this estimate:
    # it must never be more than the automaton really needs
    from tokensieve.automata.build import ir_to_dfa
    from tokensieve.grammar.json_schema import _lexical as lx

    dfa = ir_to_dfa(lx.string_length(low, high))
    assert dfa.transitions.shape[0] >= (high or low) * lx.STATES_PER_CHARACTER


def test_long_string_fails_fast_and_lenient_mode_relaxes(compiler) -> None:
    limits = compiler.limits
    n = limits.max_dfa_states  # far more characters than the automaton can hold
    schema = {"type": "object", "properties": {"sql": {"type": "string", "maxLength": n // 10}}}
    with pytest.raises(LimitExceeded) as err:
        compiler.compile_json_schema(schema)
    assert err.value.limit == "max_dfa_states"
    lenient = compiler.compile_json_schema(schema, strict=False)
    assert any("maxLength" in u for u in lenient.unenforced)


def test_email_reports_each_size_limit_it_does_not_check(compiler) -> None:
    compiled = compiler.compile_json_schema({"type": "string", "format": "email"})
    (note,) = [u for u in compiled.unenforced if u.startswith("/format: format 'email' is enforced in part")]
    for limit in ("local part", "domain", "label"):
        assert limit in note
    assert accepts(compiled, f'"joe@{"a" * 70}.example"')
    assert not accepts(compiled, '"joe@-bad.example"')
