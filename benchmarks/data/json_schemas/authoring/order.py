"""Puts the keys of an instance in the order of its schema's ``properties``.

JSON Schema does not order properties, but the engines benchmarked here write
them in schema order (tokensieve by default, xgrammar and llguidance always), as
the hand-written corpus does; imported instances (real payloads, upstream test
files) are reordered so that a walk tests the schema's language, not the order.
Keys a schema does not list keep their relative order after the listed ones.
"""

from __future__ import annotations

from typing import Any


class Orderer:
    """Reorders instances of one schema (``validator``: a ``jsonschema`` validator of the whole schema)."""

    def __init__(self, validator: Any) -> None:
        self.validator = validator
        self.root = validator.schema

    def _deref(self, schema: Any) -> Any:
        for _ in range(50):
            if not isinstance(schema, dict) or "$ref" not in schema:
                return schema
            target: Any = self.root
            for part in schema["$ref"].lstrip("#").split("/")[1:]:
                target = target[part.replace("~1", "/").replace("~0", "~")]
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **rest} if isinstance(target, dict) and rest else target
        return schema

    def _parts(self, schema: Any, value: Any) -> list[dict[str, Any]]:
        """``schema`` and the subschemas that apply to ``value`` with it (``allOf``, the fitting branch)."""
        schema = self._deref(schema)
        if not isinstance(schema, dict):
            return []
        parts = [schema]
        for sub in schema.get("allOf", []):
            parts += self._parts(sub, value)
        for key in ("anyOf", "oneOf"):
            for sub in schema.get(key, []):
                if self.validator.evolve(schema=self._resolved(sub)).is_valid(value):
                    parts += self._parts(sub, value)
                    break
        for key in ("then", "else"):
            if key in schema and "if" in schema:
                fits = self.validator.evolve(schema=self._resolved(schema["if"])).is_valid(value)
                if fits == (key == "then"):
                    parts += self._parts(schema[key], value)
        return parts

    def _resolved(self, sub: Any) -> Any:
        if isinstance(sub, dict) and "$defs" not in sub:
            return {**sub, "$defs": self.root.get("$defs", {})}
        return sub

    def order(self, value: Any, schema: Any = None) -> Any:
        """``value`` with every object's keys in schema order."""
        schema = self.root if schema is None else schema
        parts = self._parts(schema, value)
        if isinstance(value, dict):
            listed: list[str] = []
            for part in parts:
                listed += [k for k in part.get("properties", {}) if k not in listed]
            keys = [k for k in listed if k in value] + [k for k in value if k not in listed]
            return {k: self.order(value[k], self._child(parts, k)) for k in keys}
        if isinstance(value, list):
            return [self.order(v, self._item(parts, i)) for i, v in enumerate(value)]
        return value

    def _child(self, parts: list[dict[str, Any]], key: str) -> Any:
        import re

        for part in parts:
            if key in part.get("properties", {}):
                return part["properties"][key]
        for part in parts:
            for pattern, sub in part.get("patternProperties", {}).items():
                if re.search(pattern, key):
                    return sub
        for part in parts:
            if isinstance(part.get("additionalProperties"), dict):
                return part["additionalProperties"]
        return True

    def _item(self, parts: list[dict[str, Any]], index: int) -> Any:
        for part in parts:
            prefix = part.get("prefixItems", [])
            if index < len(prefix):
                return prefix[index]
            if isinstance(part.get("items"), dict):
                return part["items"]
        return True
