"""Properties merged from several schemas are laid out in the order they first appear.

With ``property_order="schema"`` only one order of keys is generated; for a
conjunction (``allOf``, ``$ref`` and the keywords beside them) that order is
the document order of the schemas, depth first. The oracle is the order in which
the properties appear in the schema's JSON text, read independently; every
instance is also checked valid with ``jsonschema``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from tokensieve import GrammarMatcher

BASE = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}

CASES = [
    # a $ref'd base, then more properties (GitHub webhook payloads are written this way)
    {
        "$defs": {"base": BASE},
        "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"private": {"type": "boolean"}}}],
    },
    # the same, two levels deep
    {
        "$defs": {
            "base": BASE,
            "mid": {"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"x": {"type": "integer"}}}]},
        },
        "allOf": [{"$ref": "#/$defs/mid"}, {"properties": {"private": {"type": "boolean"}}}],
    },
    # a schema's own properties, then its allOf members' in order
    {
        "properties": {"first": {"type": "integer"}},
        "allOf": [
            {"properties": {"second": {"type": "integer"}}},
            {"properties": {"third": {"type": "integer"}}},
        ],
    },
]


def _order_in_text(schema: dict[str, Any]) -> list[str]:
    """Property names in the order the schema's JSON text first mentions them, $refs read in place."""
    defs = schema.get("$defs", {})

    def text(node: Any) -> str:
        if isinstance(node, dict):
            if "$ref" in node:
                return text(defs[node["$ref"].rsplit("/", 1)[1]]) + text(
                    {k: v for k, v in node.items() if k != "$ref"}
                )
            return "".join(
                text(v) if k != "properties" else "".join(f"@{n}@" + text(s) for n, s in v.items())
                for k, v in node.items()
                if k != "$defs"
            )
        if isinstance(node, list):
            return "".join(text(v) for v in node)
        return ""

    seen: list[str] = []
    for name in re.findall(r"@([^@]+)@", text(schema)):
        if name not in seen:
            seen.append(name)
    return seen


@pytest.mark.parametrize("schema", CASES)
def test_merged_properties_follow_their_first_appearance(compiler, schema) -> None:
    compiled = compiler.compile_json_schema(schema, whitespace="compact")
    names = _order_in_text(schema)
    values = {"id": 1, "name": "a", "private": False, "x": 2, "first": 1, "second": 2, "third": 3}
    ordered = {n: values[n] for n in names}
    jsonschema.validate(ordered, schema)
    m = GrammarMatcher(compiled)
    text = json.dumps(ordered, separators=(",", ":"))
    assert m.accept_string(text) and m.is_completed(), text
    backwards = json.dumps(dict(reversed(list(ordered.items()))), separators=(",", ":"))
    assert not GrammarMatcher(compiled).accept_string(backwards), backwards
