"""The negation of a JSON subschema, as a disjunction of conjunctions of subschemas.

``not``, the ``else`` branch of ``if`` and overlapping ``oneOf`` branches
(each with the others negated) lower through negations; each keyword is
negated on its own (a bound becomes the opposite bound of the same type, a
``properties`` entry a required key whose value is negated), and a keyword
that cannot be negated makes the whole negation inexpressible (None).
"""

from __future__ import annotations

from typing import Any

from ...errors import SchemaError
from ...limits import Limits
from . import _lexical as lx
from ._load import Loc, Registry, _RemoteRef, synthetic
from ._values import ALL_TYPES, ANNOTATIONS, _nonneg_int, _number, _parse_types

__all__ = ["negate"]

_NEGATED_BOUNDS = {
    "minimum": ("exclusiveMaximum", "number", 0),
    "maximum": ("exclusiveMinimum", "number", 0),
    "exclusiveMinimum": ("maximum", "number", 0),
    "exclusiveMaximum": ("minimum", "number", 0),
    "minLength": ("maxLength", "string", -1),
    "maxLength": ("minLength", "string", 1),
    "minItems": ("maxItems", "array", -1),
    "maxItems": ("minItems", "array", 1),
    "minProperties": ("maxProperties", "object", -1),
    "maxProperties": ("minProperties", "object", 1),
}

_VALIDATION_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        "properties",
        "patternProperties",
        "additionalProperties",
        "propertyNames",
        "items",
        "prefixItems",
        "contains",
        "unevaluatedItems",
        "unevaluatedProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "dependencies",
        "format",
        "$ref",
        "$dynamicRef",
        "nullable",
    }
)


def negate(reg: Registry, limits: Limits, loc: Loc, level: int = 0) -> list[list[Loc]] | None:
    """¬loc as a disjunction of conjunctions, or None when not expressible.

    ``$ref`` targets are resolved in ``reg``; references are followed
    ``limits.max_schema_indirection`` deep at most (None past it).
    """
    if level > limits.max_schema_indirection:
        return None
    node = loc.node
    if node is True:
        return []
    if node is False:
        return [[]]
    if not isinstance(node, dict):
        raise SchemaError("a schema is an object or a boolean", loc.ptr)
    out: list[list[Loc]] = []

    def make(suffix: str, schema: dict[str, Any]) -> Loc:
        return Loc(f"{loc.ptr}", schema, loc.base, key=("neg", loc.ident(), suffix))

    for name, value in loc.extra:
        if name == "neg":
            out.append([value])
        elif name == "notin":
            out.append([make("notin", {"enum": list(value)})])
        else:
            return None
    for kw, v in node.items():
        if kw in loc.omit or kw in ANNOTATIONS or kw in ("if",):
            if kw == "if" and (loc.has("then") or loc.has("else")):
                return None
            continue
        p = f"{loc.ptr}/{kw}"
        if kw == "$ref":
            if not isinstance(v, str):
                raise SchemaError("$ref must be a string", p)
            try:
                target = reg.resolve(v, loc, p)
            except _RemoteRef:
                return None
            sub = negate(reg, limits, target, level + 1)
            if sub is None:
                return None
            out.extend(sub)
        elif kw == "type":
            types = _parse_types(v, p)
            if "integer" in types and "number" not in types:
                # numbers that are not integers, written without an exponent
                out.append([synthetic(loc.ptr, loc.base, ("nonint", loc.ident()), nonint=True)])
            rest = sorted(
                ALL_TYPES - types - {"integer", "number"}
                if "number" in types or "integer" in types
                else ALL_TYPES - types - {"integer"}
            )
            if rest:
                out.append([make("type", {"type": rest})])
        elif kw == "nullable":
            continue
        elif kw in ("const", "enum"):
            values = [v] if kw == "const" else v
            if not isinstance(values, list):
                raise SchemaError("enum must be an array", p)
            out.append([synthetic(loc.ptr, loc.base, ("notin", loc.ident(), kw), notin=tuple(values))])
        elif kw == "required":
            if not isinstance(v, list):
                raise SchemaError("required must be an array of strings", p)
            for name in v:
                out.append(
                    [
                        make("object", {"type": "object"}),
                        synthetic(loc.ptr, loc.base, ("forbid", loc.ident(), name), forbid=(name,)),
                    ]
                )
        elif kw == "properties":
            if not isinstance(v, dict):
                raise SchemaError("properties must be an object", p)
            for name in v:
                child = loc.child("properties", name)
                neg = synthetic(child.ptr, child.base, ("negprop", child.ident()), neg=child)
                out.append(
                    [
                        make(f"req:{name}", {"type": "object", "required": [name]}),
                        synthetic(loc.ptr, loc.base, ("prop", child.ident()), props=((name, neg),)),
                    ]
                )
        elif kw in _NEGATED_BOUNDS:
            other, typ, shift = _NEGATED_BOUNDS[kw]
            if shift:
                bound: int | float = _nonneg_int(v, p, kw) + shift
                if bound < 0:
                    continue
            else:
                bound = _number(v, p, kw)
            out.append([make(kw, {"type": typ, other: bound})])
        elif kw == "pattern":
            if not isinstance(v, str):
                raise SchemaError("pattern must be a string", p)
            out.append(
                [
                    make("string", {"type": "string"}),
                    synthetic(loc.ptr, loc.base, ("notpattern", loc.ident()), notpattern=(v, p)),
                ]
            )
        elif kw == "anyOf":
            if not isinstance(v, list):
                raise SchemaError("anyOf must be an array", p)
            out.append(
                [
                    synthetic(
                        f"{loc.ptr}/anyOf/{i}",
                        loc.base,
                        ("neg-any", loc.ident(), i),
                        neg=loc.child("anyOf", i),
                    )
                    for i in range(len(v))
                ]
            )
        elif kw == "allOf":
            if not isinstance(v, list):
                raise SchemaError("allOf must be an array", p)
            for i in range(len(v)):
                sub = negate(reg, limits, loc.child("allOf", i), level + 1)
                if sub is None:
                    return None
                out.extend(sub)
        elif kw == "oneOf" and isinstance(v, list) and len(v) == 1:
            sub = negate(reg, limits, loc.child("oneOf", 0), level + 1)
            if sub is None:
                return None
            out.extend(sub)
        elif kw == "not":
            out.append([loc.child("not")])
        elif kw == "format":
            if isinstance(v, str) and lx.format_content(v) is not None:
                return None
        elif kw in _VALIDATION_KEYWORDS:
            return None
    return out
