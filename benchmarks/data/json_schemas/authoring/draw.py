"""Draws instances of an arbitrary draft 2020-12 schema (for imported schemas without examples).

:func:`draw_instances` walks the schema with a random generator: every required
property and a shrinking share of the optional ones (fewer the deeper the
object), one branch of each ``anyOf``/``oneOf``, ``allOf`` parts merged, pattern
strings from ``hypothesis``'s ``from_regex``. It is a best effort: only the
instances that ``jsonschema`` accepts are kept.
"""

from __future__ import annotations

import datetime
import json
import random
import string
import warnings
from typing import Any

Schema = dict[str, Any]

_ANNOTATIONS = {"title", "description", "default", "examples", "$comment"}
_WORDS = ("alpha", "beta", "gamma", "delta", "main", "release", "web", "api", "cache", "worker", "data", "prod")


class _Fail(Exception):
    pass


class Drawer:
    """One random walk over ``root`` (references resolved against it)."""

    def __init__(self, root: Schema, rng: random.Random, optional: float) -> None:
        self.root = root
        self.rng = rng
        self.optional = optional

    def deref(self, schema: Any) -> Any:
        """``schema`` with its ``$ref`` and ``allOf`` merged into one dictionary."""
        for _ in range(40):
            if not isinstance(schema, dict):
                return schema
            if "$ref" in schema:
                target: Any = self.root
                for part in schema["$ref"].lstrip("#").split("/")[1:]:
                    target = target[part.replace("~1", "/").replace("~0", "~")]
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                schema = _merge(target, rest) if isinstance(target, dict) else target
                continue
            if "allOf" in schema:
                merged = {k: v for k, v in schema.items() if k != "allOf"}
                for part in schema["allOf"]:
                    merged = _merge(merged, self.deref(part))
                schema = merged
                continue
            return schema
        raise _Fail("reference loop")

    def value(self, schema: Any, depth: int) -> Any:
        if depth > 14:
            raise _Fail("too deep")
        schema = self.deref(schema)
        if schema is True or schema == {}:
            return self.rng.choice(_WORDS)
        if schema is False:
            raise _Fail("false schema")
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        for key in ("oneOf", "anyOf"):
            if key in schema:
                branch = self.rng.choice(schema[key])
                rest = {k: v for k, v in schema.items() if k != key}
                return self.value(_merge(rest, self.deref(branch)), depth)
        types = schema.get("type")
        if isinstance(types, list):
            non_null = [t for t in types if t != "null"]
            types = self.rng.choice(non_null) if non_null and self.rng.random() < 0.9 else self.rng.choice(types)
        if types is None:
            if "properties" in schema or "required" in schema or "additionalProperties" in schema:
                types = "object"
            elif "items" in schema or "prefixItems" in schema:
                types = "array"
            else:
                types = "string"
        if types == "object":
            return self.obj(schema, depth)
        if types == "array":
            return self.array(schema, depth)
        if types == "string":
            return self.string(schema)
        if types in ("integer", "number"):
            return self.number(schema, types == "integer")
        if types == "boolean":
            return self.rng.random() < 0.5
        return None

    def obj(self, schema: Schema, depth: int) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties", {})
        required = list(dict.fromkeys(schema.get("required", [])))
        share = self.optional / (1 + 0.5 * depth) if depth < 8 else 0.0
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or self.rng.random() < share:
                out[name] = self.value(sub, depth + 1)
        for name in required:
            if name not in out:
                out[name] = self.value(self._extra_schema(schema, name), depth + 1)
        want = schema.get("minProperties", 0)
        extra = schema.get("additionalProperties", True)
        n = 0
        while len(out) < want and n < 20:
            n += 1
            name = f"{self.rng.choice(_WORDS)}_{n}"
            out[name] = self.value(self._extra_schema(schema, name), depth + 1)
        if not props and extra not in (False, None) and not out and self.rng.random() < self.optional and depth < 6:
            for n in range(self.rng.randint(1, 2)):
                name = f"{self.rng.choice(_WORDS)}_{n}"
                out[name] = self.value(self._extra_schema(schema, name), depth + 1)
        return out

    def _extra_schema(self, schema: Schema, name: str) -> Any:
        import re

        if name in schema.get("properties", {}):
            return schema["properties"][name]
        for pattern, sub in schema.get("patternProperties", {}).items():
            if re.search(pattern, name):
                return sub
        extra = schema.get("additionalProperties", True)
        return {} if extra is True else extra

    def array(self, schema: Schema, depth: int) -> list[Any]:
        prefix = schema.get("prefixItems", [])
        lo = max(schema.get("minItems", 0), 0)
        hi = schema.get("maxItems", lo + (3 if depth < 4 else 1))
        n = self.rng.randint(lo, max(lo, min(hi, lo + (3 if depth < 4 else 1))))
        items = schema.get("items", {})
        out = [self.value(prefix[i] if i < len(prefix) else items, depth + 1) for i in range(max(n, 0))]
        if schema.get("uniqueItems"):
            seen = []
            for x in out:
                if x not in seen:
                    seen.append(x)
            out = seen
        return out

    def string(self, schema: Schema) -> str:
        fmt = schema.get("format")
        if "pattern" in schema:
            from hypothesis import strategies as st

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    ascii_text = st.characters(codec="ascii", exclude_categories=("Cc",))
                    return str(st.from_regex(schema["pattern"], fullmatch=True, alphabet=ascii_text).example())
                except Exception as exc:  # noqa: BLE001
                    raise _Fail(str(exc)) from None
        if fmt == "date-time":
            return datetime.datetime(2024, self.rng.randint(1, 12), self.rng.randint(1, 28), 10, 30, tzinfo=datetime.UTC).isoformat()
        if fmt == "date":
            return f"2024-0{self.rng.randint(1, 9)}-1{self.rng.randint(0, 9)}"
        if fmt in ("uri", "uri-reference", "url"):
            return f"https://example.com/{self.rng.choice(_WORDS)}"
        if fmt in ("email", "idn-email"):
            return f"{self.rng.choice(_WORDS)}@example.com"
        if fmt == "uuid":
            return "123e4567-e89b-42d3-a456-42661417400" + str(self.rng.randint(0, 9))
        if fmt in ("ipv4",):
            return f"10.0.{self.rng.randint(0, 255)}.{self.rng.randint(1, 254)}"
        lo = schema.get("minLength", 1)
        hi = schema.get("maxLength", max(lo, 24))
        text = "-".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(1, 3)))
        while len(text) < lo:
            text += self.rng.choice(string.ascii_lowercase)
        return text[: max(hi, 0)]

    def number(self, schema: Schema, integer: bool) -> int | float:
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        hi = schema.get("maximum", schema.get("exclusiveMaximum", max(lo, 0) + 100))
        if "exclusiveMinimum" in schema:
            lo = schema["exclusiveMinimum"] + (1 if integer else 0.5)
        if "exclusiveMaximum" in schema:
            hi = schema["exclusiveMaximum"] - (1 if integer else 0.5)
        if integer:
            value: int | float = self.rng.randint(int(lo), max(int(lo), int(hi)))
        else:
            value = round(self.rng.uniform(lo, hi), 2)
        step = schema.get("multipleOf")
        if step:
            value = type(value)(int(value / step) * step)
        return value


def _merge(a: Any, b: Any) -> Any:
    """The conjunction of two schema dictionaries, roughly (properties and required united)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return b if a in (True, {}) else a
    out = dict(a)
    for k, v in b.items():
        if k in _ANNOTATIONS:
            continue
        if k == "properties" and k in out:
            out[k] = {**out[k], **v}
        elif k == "required" and k in out:
            out[k] = list(dict.fromkeys([*out[k], *v]))
        else:
            out[k] = v
    return out


def draw_instances(schema: Schema, count: int, rng: random.Random, avoid: list[Any] | tuple[Any, ...] = ()) -> list[Any]:
    """Up to ``count`` distinct instances that ``jsonschema`` accepts (formats checked as in ``build.py``)."""
    from build import validator

    v = validator(schema)
    seen = {json.dumps(a, sort_keys=True) for a in avoid}
    found: list[Any] = []
    for attempt in range(240):
        optional = (0.9, 0.6, 0.3, 0.0)[attempt * 4 // 240]
        try:
            instance = Drawer(schema, random.Random(rng.random()), optional).value(schema, 0)
        except (_Fail, RecursionError, KeyError, TypeError, ValueError):
            continue
        key = json.dumps(instance, sort_keys=True)
        if key in seen or len(key) > 20_000:
            continue
        try:
            ok = v.is_valid(instance)
        except Exception:  # noqa: BLE001 - a pattern Python's re cannot read
            ok = False
        if ok:
            seen.add(key)
            found.append(instance)
            if len(found) == count:
                break
    return found
