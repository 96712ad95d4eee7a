"""Hypothesis strategies for constraint texts, well-formed and broken.

Well-formed inputs are generated from the syntax of each front end (regexes
in the ECMA dialect, GBNF/EBNF and Lark grammars, JSON Schemas); broken ones
by mutating well-formed ones character by character (deletions, insertions
of syntax characters and odd Unicode, duplications of a slice), the
character-level counterpart of byte mutation.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = [
    "fuzz_settings",
    "gbnf_texts",
    "json_schemas",
    "lark_texts",
    "mutated",
    "mutated_bytes",
    "regex_extras",
    "regex_texts",
    "schema_text",
]

# characters the front ends treat specially, and some that no tokenizer likes
_SYNTAX = list("()[]{}|*+?.^$\\-,:=\"'/#~!<>&@%;`") + ["::=", "{1,", "(?", "\\p{", "\\u{"]
_ODD = ["\x00", "\ud800", "\udfff", "\u200d", "\ufeff", "\U0010ffff", "é", "😀", "\n", "\t", "\r"]

_REGEX_LEAVES = st.sampled_from(
    [
        "a",
        "b",
        "0",
        "é",
        "😀",
        "-",
        ".",
        "\\d",
        "\\w",
        "\\s",
        "\\.",
        "[a-c]",
        "[^a]",
        "[0-9é]",
        "\\u00e9",
        "\\p{Ll}",
    ]
)


def regex_texts() -> st.SearchStrategy[str]:
    """Well-formed patterns: literals, classes, groups, alternation, quantifiers."""

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, inner).map("".join),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{0,3}", "{1,}", "*?"])).map(
                lambda t: f"({t[0]}){t[1]}"
            ),
        )

    return st.recursive(_REGEX_LEAVES, extend, max_leaves=8)


@st.composite
def regex_extras(draw: st.DrawFn) -> str:
    """Patterns with the rarer ECMA constructs: lookarounds, backreferences, large counts, anchors."""
    a, b = draw(regex_texts()), draw(regex_texts())
    big = draw(st.sampled_from([0, 1, 255, 256, 1000, 65535, 100_000, 100_001, 2**31]))
    return draw(
        st.sampled_from(
            [
                f"(?={a}){b}",
                f"(?!{a}){b}",
                f"{a}(?<={b})",
                f"(?<n>{a})\\k<n>",
                f"({a})\\1",
                f"^{a}$",
                f"{a}{{{big}}}",
                f"{a}{{{big},{big + 1}}}",
                f"[{a}]",
                f"\\u{{{big:x}}}{b}",
                f"(?i){a}",
                f"{a}\\b{b}",
            ]
        )
    )


def _bnf_body(rules: list[str], quote: str) -> st.SearchStrategy[str]:
    literal = st.sampled_from(["a", "b", "x", "0", "é", "{", "}", ",", " "]).map(
        lambda s: f"{quote}{s}{quote}"
    )
    leaf = st.one_of(literal, st.sampled_from(rules), st.just("[a-c]"))

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, inner).map(" ".join),
            st.tuples(inner, inner).map(lambda t: f"({t[0]} | {t[1]})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?"])).map(lambda t: f"({t[0]}){t[1]}"),
        )

    return st.recursive(leaf, extend, max_leaves=6)


@st.composite
def gbnf_texts(draw: st.DrawFn, arrow: str = "::=") -> str:
    """Well-formed GBNF (or EBNF, same rule syntax) grammars of 1 to 3 rules, maybe recursive."""
    names = ["root", "r1", "r2"][: draw(st.integers(1, 3))]
    lines = []
    for name in names:
        body = draw(_bnf_body(names, '"'))
        # a terminating alternative keeps most grammars non-empty
        lines.append(f'{name} {arrow} {body} | "z"' if draw(st.booleans()) else f"{name} {arrow} {body}")
    return "\n".join(lines)


@st.composite
def lark_texts(draw: st.DrawFn) -> str:
    """Well-formed Lark grammars: rules ``start``, ``r1``, ``r2`` and one regex terminal."""
    names = ["start", "r1", "r2"][: draw(st.integers(1, 3))]
    lines = []
    for name in names:
        body = draw(_bnf_body([*names, "WORD"], '"')).replace("[a-c]", "WORD")
        lines.append(f'{name}: {body} | "z"' if draw(st.booleans()) else f"{name}: {body}")
    lines.append(f"WORD: /{draw(regex_texts())}/")
    return "\n".join(lines)


def _numbers() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(-(10**30), 10**30),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([0, 1, -1, 0.5, 1e-9, 1e300, 10**20, 2**53 + 1]),
    )


def _leaf_schemas(refs: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    text = st.text(st.sampled_from(["a", "é", "😀", "\x00", '"', "\\", " ", "\ufeff"]), max_size=4)
    return st.one_of(
        st.just({}),
        st.fixed_dictionaries(
            {"type": st.just("string")},
            optional={
                "minLength": st.integers(0, 5),
                "maxLength": st.integers(0, 8),
                "pattern": regex_texts(),
                "format": st.sampled_from(["date", "email", "uuid", "date-time", "ipv4"]),
            },
        ),
        st.fixed_dictionaries(
            {"type": st.sampled_from(["integer", "number"])},
            optional={
                "minimum": _numbers(),
                "maximum": _numbers(),
                "exclusiveMinimum": _numbers(),
                "multipleOf": st.sampled_from([1, 2, 3, 0.5, 0.01, 7, 10**10]),
            },
        ),
        st.sampled_from([{"type": "boolean"}, {"type": "null"}, {"type": ["string", "null"]}]),
        st.lists(st.one_of(text, st.integers(-5, 5), st.none(), st.booleans()), min_size=1, max_size=4).map(
            lambda xs: {"enum": xs}
        ),
        text.map(lambda s: {"const": s}),
        st.sampled_from(refs).map(lambda r: {"$ref": f"#/$defs/{r}"}),
    )


def _schema_tree(refs: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.text(st.sampled_from(["k", "é", "😀", " ", '"', "\\", "\x00"]), min_size=1, max_size=3)

    def extend(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        return st.one_of(
            st.fixed_dictionaries(
                {"type": st.just("array"), "items": inner},
                optional={
                    "minItems": st.integers(0, 3),
                    "maxItems": st.integers(0, 4),
                    "uniqueItems": st.booleans(),
                },
            ),
            st.dictionaries(keys, inner, max_size=3).flatmap(
                lambda props: st.fixed_dictionaries(
                    {"type": st.just("object"), "properties": st.just(props)},
                    optional={
                        "required": st.lists(
                            st.sampled_from(sorted(props) or ["k"]), unique=True, max_size=3
                        ),
                        "additionalProperties": st.one_of(st.booleans(), inner),
                    },
                )
            ),
            st.tuples(
                st.sampled_from(["anyOf", "oneOf", "allOf"]), st.lists(inner, min_size=1, max_size=3)
            ).map(lambda t: {t[0]: t[1]}),
            st.tuples(inner, inner).map(
                lambda t: {"not": t[0]} if t[1] == {} else {"if": t[0], "then": t[1]}
            ),
        )

    return st.recursive(_leaf_schemas(refs), extend, max_leaves=5)


@st.composite
def json_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """Small JSON Schemas with ``$defs`` that may reference each other (cycles included)."""
    refs = ["d0", "d1"]
    root = dict(draw(_schema_tree(refs)))
    root["$defs"] = {name: draw(_schema_tree(refs)) for name in refs}
    return root


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[str], max_edits: int = 4) -> str:
    """A text from ``base``, then up to ``max_edits`` deletions, insertions or duplications."""
    text = draw(base)
    for _ in range(draw(st.integers(0, max_edits))):
        op = draw(st.sampled_from(["delete", "insert", "duplicate"]))
        at = draw(st.integers(0, len(text)))
        if op == "delete" and text:
            end = draw(st.integers(at, min(len(text), at + 4)))
            text = text[:at] + text[end:]
        elif op == "insert":
            text = text[:at] + draw(st.sampled_from(_SYNTAX + _ODD)) + text[at:]
        else:
            end = draw(st.integers(at, min(len(text), at + 16)))
            text = text[:at] + text[at:end] * draw(st.integers(2, 5)) + text[at:]
    return text


@st.composite
def mutated_bytes(draw: st.DrawFn, seed: bytes, max_edits: int = 3) -> bytes:
    """``seed`` with bytes overwritten, deleted, inserted, or the tail cut off."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, max_edits))):
        op = draw(st.sampled_from(["set", "set", "set", "delete", "insert", "truncate", "varint"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "set" and data:
            data[at] = draw(st.integers(0, 255))
        elif op == "delete" and data:
            del data[at : at + draw(st.integers(1, 8))]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "truncate":
            del data[at:]
        else:  # a large length or count where one may be read
            data[at : at + 8] = draw(
                st.sampled_from([b"\xff" * 8, b"\x00" * 8, b"\xff\xff\xff\x7f", b"\x80" * 8])
            )
    return bytes(data)


def schema_text(schema: Any) -> str:
    """The schema as JSON text (non-ASCII kept, lone surrogates escaped)."""
    return json.dumps(schema, ensure_ascii=False)


def fuzz_settings(examples: int) -> settings:
    """Hypothesis settings of a fuzz target: ``examples`` derandomised examples.

    ``TOKENSIEVE_FUZZ_EXAMPLES`` replaces the count and ``TOKENSIEVE_FUZZ_RANDOM``
    draws random examples instead (the long run, ``scripts/fuzz.sh``).
    """
    return settings(
        derandomize=os.environ.get("TOKENSIEVE_FUZZ_RANDOM") is None,
        max_examples=int(os.environ.get("TOKENSIEVE_FUZZ_EXAMPLES", str(examples))),
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
    )
