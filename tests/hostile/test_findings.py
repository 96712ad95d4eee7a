"""Inputs found not to end as they must, each pinned to the smallest case found.

A test that still fails is a strict expected failure: it fails (XPASS) the
day the behaviour is fixed, and the ``xfail`` mark can go.
"""

from __future__ import annotations

import base64

import pytest
from hostile.harness import run_bounded, tiny_compiler

from tokensieve import GrammarCompiler, GrammarMatcher, LimitExceeded, Limits, SchemaError, TokensieveError


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    return tiny_compiler()


def _left_chain(n: int) -> str:
    """``r0 ::= r1 "a" | "a"`` ... ``r{n-1} ::= r0 "a" | "b"``: left recursion through ``n`` rules."""
    lines = [f'r{i} ::= r{i + 1} "a" | "a"' for i in range(n - 1)]
    return "\n".join([*lines, f'r{n - 1} ::= r0 "a" | "b"', "root ::= r0"])


def _chain_samples(n: int) -> list[tuple[str, bool]]:
    """Strings in and out of the chain's language: ``a`` repeated, or ``b`` then ``n - 1 + j*n`` ``a``."""
    inside = ["a", "aaaa", "b" + "a" * (n - 1), "b" + "a" * (2 * n - 1)]
    outside = ["b", "ab", "b" + "a" * n, "b" + "a" * (n - 2)]
    return [(t, True) for t in inside] + [(t, False) for t in outside]


def test_left_recursion_through_100_rules_is_rewritten(compiler: GrammarCompiler) -> None:
    compiled = compiler.compile_grammar(_left_chain(100), syntax="gbnf")
    for text, ok in _chain_samples(100):
        matcher = GrammarMatcher(compiled)
        assert (matcher.accept_string(text) and matcher.is_completed()) is ok, text


def test_left_recursion_through_60_rules_is_rewritten(compiler: GrammarCompiler) -> None:
    """The same chain below the bound compiles and keeps its language."""
    compiled = compiler.compile_grammar(_left_chain(60), syntax="gbnf")
    for text, ok in _chain_samples(60):
        matcher = GrammarMatcher(compiled)
        assert (matcher.accept_string(text) and matcher.is_completed()) is ok, text


def test_multiple_of_1e_200_ends_in_a_constraint_or_a_typed_error(compiler: GrammarCompiler) -> None:
    try:
        compiler.compile_json_schema({"type": "number", "multipleOf": 1e-200})
    except TokensieveError:
        pass


def test_schema_text_with_a_5000_digit_integer_is_a_schema_error(compiler: GrammarCompiler) -> None:
    try:
        compiler.compile_json_schema('{"type": "integer", "maximum": ' + "9" * 5000 + "}")
    except TokensieveError:
        pass


def _objects(n: int, first: dict | None = None) -> list[dict]:
    members = [
        {"type": "object", "properties": {f"k{i}": {"type": "integer"}}, "required": [f"k{i}"]}
        for i in range(n)
    ]
    return [first, *members[1:]] if first is not None else members


def test_anyof_members_are_counted_before_any_is_lowered() -> None:
    """Past ``max_schema_branches`` the error comes before the members' own (a bad pattern in the first)."""
    bad = {"type": "string", "pattern": "("}
    schema = {"anyOf": _objects(4, first=bad)}
    with pytest.raises(LimitExceeded) as exc:
        tiny_compiler(limits=Limits(max_schema_branches=3)).compile_json_schema(schema)
    assert (exc.value.limit, exc.value.value) == ("max_schema_branches", 3)
    assert "/anyOf has 4 members" in str(exc.value)
    with pytest.raises(SchemaError, match="/anyOf/0/pattern"):
        tiny_compiler(limits=Limits(max_schema_branches=4)).compile_json_schema(schema)


def test_constant_members_are_not_counted() -> None:
    """``const`` and ``enum`` members are left out of the count; the language is unchanged."""
    schema = {"oneOf": [*_objects(2), {"const": "a"}, {"enum": ["b", 3]}, {"type": "string", "const": "c"}]}
    compiled = tiny_compiler(limits=Limits(max_schema_branches=2)).compile_json_schema(schema)
    for text, ok in [('{"k0":1}', True), ('{"k1":2}', True), ('"a"', True), ('"b"', True), ("3", True)]:
        matcher = GrammarMatcher(compiled)
        assert (matcher.accept_string(text) and matcher.is_completed()) is ok, text
    for text in ['{"k2":1}', '"d"', "4", "{}"]:
        matcher = GrammarMatcher(compiled)
        assert not (matcher.accept_string(text) and matcher.is_completed()), text
    with pytest.raises(LimitExceeded, match="max_schema_branches"):
        tiny_compiler(limits=Limits(max_schema_branches=1)).compile_json_schema(schema)


def test_a_large_object_is_refused_before_its_values_are_lowered() -> None:
    """600 optional properties cost more than the NFA budget: refused before the last one's bad pattern is read."""
    props = {f"p{i}": {"type": "integer"} for i in range(599)}
    props["p599"] = {"type": "string", "pattern": "("}
    with pytest.raises(LimitExceeded) as exc:
        tiny_compiler().compile_json_schema({"type": "object", "properties": props})
    assert exc.value.limit == "max_nfa_states"
    assert "600 properties, 600 optional" in str(exc.value)
    # with the first property required the object is small enough, and the pattern is read
    with pytest.raises(SchemaError, match="/properties/p599/pattern"):
        tiny_compiler().compile_json_schema({"type": "object", "properties": props, "required": ["p0"]})


#: a GBNF grammar the long atheris run found (200 bytes): an optional repeated class before 75
#: any-characters, then classes that overlap them; its automaton has more states than
#: ``max_dfa_states``, and the subset construction ran up to that limit twice (for the whole
#: grammar, then again for the rule network tried after the size limit): 12 s beside other work,
#: past libFuzzer's 20 s on a loaded machine. A body over a size limit is now not built again
#: (about 2 s)
_SUBSETS_TWICE = base64.b64decode(
    "cm9vdCA6Oj0gaXRlbT8gKC4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLiJvb3QgOjo9IGl0ZW0/ICgiW2EAIiBpdGVtKSoKaXRlbSA6Oj0gW2EELXpdKyB8ICIsPSATlxMTExNbYQAiIGl0ZW0pKgppdGVtIDo6PSBbYQQtel0rIHwgIiw9IBOXExMTExN0RGVtIC3/GyI="
).decode("utf-8", "replace")


#: a Lark grammar the long atheris run found: a terminal's pattern of repeated classes each
#: followed by nine any-characters, past ``max_dfa_states`` like the grammar above and built to
#: that limit twice in the same way: 25 s beside other work (now once: about 4.5 s)
_LARK_SUBSETS_TWICE = base64.b64decode(
    "c3RhcnQ6IC9hdGk6IFtlz2lbZc9pZFv/K/+hqaGhoaGhof/////Qnygp+AAAAAAAAAAuQAB6YF0rLi4uLi4uLi4uAABkW/8r/6GpoaHfngA6MDIyz0rPz2lcdwAAAAAAAC5AAHpgXSsuLi4uLi4uLi4AAP///y8="
).decode("utf-8", "replace")


@pytest.mark.parametrize(("text", "syntax"), [(_SUBSETS_TWICE, "gbnf"), (_LARK_SUBSETS_TWICE, "lark")], ids=["gbnf", "lark"])
def test_grammar_past_the_dfa_state_limit_is_refused_in_20_s(compiler: GrammarCompiler, text: str, syntax: str) -> None:
    # libFuzzer's bound for a hang; about 2 and 4.5 s alone, 10 s and more beside a loaded test run
    out = run_bounded(lambda: compiler.compile_grammar(text, syntax=syntax), seconds=20)
    assert out.kind == "typed" and isinstance(out.error, LimitExceeded), out.describe()
