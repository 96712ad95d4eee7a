"""Members in any order beyond the spelled-out bound: the frames of ``compile/unordered_frames.py``.

``property_order="any"`` spells out every order of objects of up to
``max_any_order_properties`` members as one automaton (the reference here, a
different mechanism); past it, a rule network tracks the members seen. The
same schemas compiled both ways (the bound lowered to 1 for the frames) must
give the same mask at every step of random walks, on a vocabulary whose tokens
cross member boundaries (pieces of valid instances). Large objects, past any
order that could be spelled out, are checked against ``jsonschema``.
"""

from __future__ import annotations

import itertools
import json
import random

import jsonschema
import numpy as np
import pytest

from tokensieve import GrammarCompiler, GrammarMatcher, Limits, TokenizerInfo
from tokensieve.compile.pushdown import CompiledPushdownGrammar

SCHEMAS = {
    "all_required": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "bb": {"type": "string"}, "c": {"type": "boolean"}},
        "required": ["a", "bb", "c"],
        "additionalProperties": False,
    },
    "some_required": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "ab": {"enum": [1, 2]}, "c": {"type": "null"}, "d": {"const": "x"}},
        "required": ["ab"],
        "additionalProperties": False,
    },
    "none_required_extra": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}, "c": {"type": "null"}},
        "additionalProperties": {"type": "integer"},
    },
    "nested": {
        "type": "object",
        "properties": {
            "o": {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
            "p": {"type": "boolean"},
            "q": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["o", "p"],
        "additionalProperties": False,
    },
}

SAMPLES = {
    "all_required": [{"a": 1, "bb": "s", "c": True}],
    "some_required": [{"ab": 1, "a": 7, "c": None, "d": "x"}],
    "none_required_extra": [{"b": False, "zz": 3, "a": 12, "c": None}, {}],
    "nested": [{"p": True, "o": {"y": 1, "x": 2}, "q": [1, 2]}],
}


def _vocab(samples: list[dict]) -> TokenizerInfo:
    """Every byte, and pieces of the samples' texts in several layouts and orders (tokens that cross
    member boundaries: ``1, "b``, ``": {"``, ``}}``...)."""
    rng = random.Random(7)
    texts = []
    for value in samples:
        for keys in itertools.islice(itertools.permutations(value), 6):
            reordered = {k: value[k] for k in keys}
            texts += [json.dumps(reordered), json.dumps(reordered, separators=(",", ":"))]
    pieces = {t[i : i + n].encode() for t in texts for n in (2, 3, 5, 8) for i in range(0, max(1, len(t) - n))}
    vocab = [b""] + [bytes([b]) for b in range(256)] + sorted(pieces)
    rng.shuffle(vocab[257:])
    return TokenizerInfo(vocab, stop_token_ids=[0], special_token_ids=[0])


def _allowed(matcher: GrammarMatcher, size: int) -> np.ndarray:
    bits = np.unpackbits(matcher.next_token_mask().view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:size])


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_masks_equal_the_spelled_out_orders(name: str) -> None:
    info = _vocab(SAMPLES[name])
    schema = SCHEMAS[name]
    frames = GrammarCompiler(info, limits=Limits(max_any_order_properties=1)).compile_json_schema(
        schema, property_order="any"
    )
    spelled = GrammarCompiler(info).compile_json_schema(schema, property_order="any")
    assert isinstance(frames, CompiledPushdownGrammar) and frames.network.unordered
    assert not (isinstance(spelled, CompiledPushdownGrammar) and spelled.network.unordered)
    rng = random.Random(name)
    steps = 0
    for _ in range(12):
        a, b = GrammarMatcher(frames), GrammarMatcher(spelled)
        for _ in range(40):
            allowed = _allowed(a, info.vocab_size)
            assert np.array_equal(allowed, _allowed(b, info.vocab_size)), (name, steps)
            assert a.is_completed() == b.is_completed()
            steps += 1
            if not allowed.size:
                break
            token = int(rng.choice(allowed))
            if token == 0:
                break
            assert a.accept_token(token) and b.accept_token(token)
    assert steps > 100


def _big_schema(n: int, required: list[int]) -> dict:
    return {
        "type": "object",
        "properties": {f"k{i}": {"type": "integer"} for i in range(n)},
        "required": [f"k{i}" for i in required],
        "additionalProperties": False,
    }


def _accepts(compiled, text: str) -> bool:
    matcher = GrammarMatcher(compiled)
    return matcher.accept_string(text) and matcher.is_completed()


def test_large_objects_take_their_members_in_any_order_once() -> None:
    from support.real_vocabs import tekken_240911_json

    info = TokenizerInfo.from_file(tekken_240911_json())
    n = 70  # more members than a 64-bit set holds
    schema = _big_schema(n, [0, 33, 69])
    compiled = GrammarCompiler(info).compile_json_schema(schema, property_order="any")
    assert compiled.unenforced == ()
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(3)
    for _ in range(20):
        keys = [f"k{i}" for i in range(n) if i in (0, 33, 69) or rng.random() < 0.3]
        rng.shuffle(keys)
        value = {k: rng.randint(-9, 99) for k in keys}
        text = json.dumps(value) if rng.random() < 0.5 else json.dumps(value, separators=(",", ":"))
        assert validator.is_valid(value) and _accepts(compiled, text), text
    assert not _accepts(compiled, '{"k0": 1, "k33": 2, "k69": 3, "k0": 4}')  # a member twice
    assert not _accepts(compiled, '{"k69": 1, "k0": 2}')  # a required member missing
    assert not _accepts(compiled, '{"k69": 1, "k0": 2, "k33": 3, "other": 4}')
    assert _accepts(compiled, '{"k69": 1, "k0": 2, "k33": 3}')


def test_the_members_seen_are_per_object() -> None:
    """Nested objects of the same schema each track their own members."""
    from support.real_vocabs import tekken_240911_json

    info = TokenizerInfo.from_file(tekken_240911_json())
    inner = _big_schema(8, [1])
    schema = {"type": "object", "properties": {**inner["properties"], "sub": inner}, "additionalProperties": False}
    compiled = GrammarCompiler(info).compile_json_schema(schema, property_order="any")
    assert _accepts(compiled, '{"k3": 1, "sub": {"k3": 2, "k1": 0}, "k1": 5}')
    assert not _accepts(compiled, '{"k3": 1, "sub": {"k3": 2, "k1": 0}, "k3": 5}')
    assert not _accepts(compiled, '{"k3": 1, "sub": {"k3": 2}}')


def _in_language(text: str) -> bool:
    """``{`` members ``}``: ``a``, ``b``, ``c`` at most once each (``b`` required), ``x`` any number of
    times, at least one item, comma-separated."""
    if not (text.startswith("{") and text.endswith("}")) or len(text) < 3:
        return False
    items = text[1:-1].split(",")
    named = [i for i in items if i != "x"]
    return (
        all(i in ("a", "b", "c", "x") for i in items) and len(named) == len(set(named)) and "b" in named
    )


def test_an_unordered_rule_of_the_ir_accepts_its_language_exactly() -> None:
    from tokensieve.errors import GrammarError
    from tokensieve.ir import Grammar, Unordered, alt, concat, literal, star
    from tokensieve.ir.nodes import RuleRef

    refs = {n: RuleRef(n) for n in ("ma", "mb", "mc", "mx", "sep", "close")}
    one = alt(refs["ma"], refs["mb"], refs["mc"], refs["mx"])
    rules = {
        "root": concat(literal("{"), RuleRef("u")),
        "u": concat(one, star(concat(refs["sep"], one)), refs["close"]),
        "ma": literal("a"),
        "mb": literal("b"),
        "mc": literal("c"),
        "mx": literal("x"),
        "sep": literal(","),
        "close": literal("}"),
    }
    spec = Unordered(("ma", "mb", "mc"), (False, True, False), "mx", "sep", "close")
    info = TokenizerInfo([b""] + [bytes([b]) for b in range(256)] + [b"a,", b",b", b"}"], stop_token_ids=[0])
    compiled = GrammarCompiler(info).compile_grammar(Grammar(rules, "root", {"u": spec}))
    alphabet = "{}abcx,"
    checked = 0
    for n in range(1, 8):
        for chars in itertools.product(alphabet, repeat=n):
            text = "".join(chars)
            if not text.startswith("{"):
                continue
            checked += 1
            assert _accepts(compiled, text) == _in_language(text), text
    assert checked > 10_000
    with pytest.raises(GrammarError):
        Grammar(rules, "root", {"u": Unordered(("ma", "nope"), (False, False), None, "sep", "close")})
    with pytest.raises(GrammarError):
        Grammar({**rules, "u": literal("a")}, "root", {"u": spec})


def test_past_half_the_stack_bound_the_schema_order_is_kept_and_said() -> None:
    """Each member not seen is a parse stack after ``{``: objects past ``max_stacks / 2`` members keep the
    schema's order (a smaller language, never a wrong one) and say so, rather than failing mid-output."""
    info = _vocab([{"k0": 1}])
    schema = _big_schema(6, [0])
    compiled = GrammarCompiler(info, limits=Limits(max_stacks=8)).compile_json_schema(schema, property_order="any")
    assert any("property_order" in u for u in compiled.unenforced)
    assert _accepts(compiled, '{"k0": 1, "k3": 2}')
    assert not _accepts(compiled, '{"k3": 2, "k0": 1}')
    wide = GrammarCompiler(info, limits=Limits(max_stacks=16)).compile_json_schema(schema, property_order="any")
    assert wide.unenforced == () and _accepts(wide, '{"k3": 2, "k0": 1}')
