"""The JSON Schema instance validator the lowering asks about single values.

Enums, ``const``, ``not`` and ``propertyNames`` are lowered by checking
concrete values (a property name, an enum member) against schemas; this is
that check, keyword by keyword, over the same resolved locations the lowering
reads. A keyword it cannot decide (``unevaluated*``, dynamic references, a
pattern that is not enforced) raises :class:`Undecided`.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ...errors import SchemaError
from . import _lexical as lx
from ._load import Loc
from ._values import (
    ANNOTATIONS,
    Lowering,
    _has_type,
    _is_num,
    _nonneg_int,
    _number,
    _parse_types,
    _Undecided,
    ckey,
)

__all__ = ["check"]


def check(low: Lowering, value: Any, locs: list[Loc], level: int = 0) -> bool:
    """Whether ``value`` satisfies every schema in ``locs`` (raises :class:`_Undecided`)."""
    if level > low.limits.max_schema_indirection:
        raise _Undecided("too deep")
    for loc in locs:
        if not _check_one(low, value, loc, level):
            return False
    return True


def _check_one(low: Lowering, value: Any, loc: Loc, level: int) -> bool:
    node = loc.node
    if node is True:
        return True
    if node is False:
        return False
    for name, v in loc.extra:
        if name == "neg":
            if check(low, value, [v], level + 1):
                return False
        elif name == "notin":
            if any(ckey(value) == ckey(x) for x in v):
                return False
        elif name == "nonint":
            if not (_is_num(value) and not float(value).is_integer()):
                return False
        elif name == "forbid":
            if isinstance(value, dict) and any(n in value for n in v):
                return False
        elif name == "props":
            if isinstance(value, dict):
                for n, sub in v:
                    if n in value and not check(low, value[n], [sub], level + 1):
                        return False
        elif name == "notpattern":
            if isinstance(value, str) and low.pattern_matches(v[0], value, v[1]):
                return False
        else:
            raise _Undecided(name)
    return _check_keywords(low, value, loc, level)


def _check_keywords(low: Lowering, value: Any, loc: Loc, level: int) -> bool:
    """Evaluate the keywords of one schema on ``value`` (raises ``_Undecided``)."""
    node = loc.node
    if not isinstance(node, dict):
        raise SchemaError("a schema is an object or a boolean", loc.ptr)
    if level > low.limits.max_schema_indirection:
        raise _Undecided("depth")
    for kw, v in node.items():
        if kw in loc.omit or kw in ANNOTATIONS or kw in ("minContains", "maxContains"):
            continue
        p = f"{loc.ptr}/{kw}"
        if kw == "$ref":
            try:
                target = low.reg.resolve(v, loc, p)
            except SchemaError:
                raise _Undecided(p) from None
            if not check(low, value, [target], level + 1):
                return False
        elif kw == "type":
            types = _parse_types(v, p)
            if node.get("nullable") is True:
                types = types | {"null"}
            if not _has_type(value, types):
                return False
        elif kw == "nullable":
            continue
        elif kw == "const":
            if ckey(value) != ckey(v):
                return False
        elif kw == "enum":
            if not isinstance(v, list):
                raise SchemaError("enum must be an array", p)
            keys = {ckey(x) for x in v}
            if node.get("nullable") is True:
                keys.add(ckey(None))
            if ckey(value) not in keys:
                return False
        elif kw in ("minLength", "maxLength"):
            if isinstance(value, str):
                n = _nonneg_int(v, p, kw)
                if (kw == "minLength" and len(value) < n) or (kw == "maxLength" and len(value) > n):
                    return False
        elif kw == "pattern":
            if isinstance(value, str) and not low.pattern_matches(v, value, p):
                return False
        elif kw == "format":
            if isinstance(value, str) and isinstance(v, str):
                content = lx.format_content(v)
                if content is not None and not low.dfa_accepts(
                    content, json.dumps(value, ensure_ascii=False)[1:-1].encode()
                ):
                    return False
        elif kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            if _is_num(value) and not _check_number(kw, v, value, node, p):
                return False
        elif kw in ("minItems", "maxItems"):
            if isinstance(value, list):
                n = _nonneg_int(v, p, kw)
                if (kw == "minItems" and len(value) < n) or (kw == "maxItems" and len(value) > n):
                    return False
        elif kw in ("minProperties", "maxProperties"):
            if isinstance(value, dict):
                n = _nonneg_int(v, p, kw)
                if (kw == "minProperties" and len(value) < n) or (kw == "maxProperties" and len(value) > n):
                    return False
        elif kw == "required":
            if isinstance(value, dict) and not all(n in value for n in v):
                return False
        elif kw == "dependentRequired":
            if isinstance(value, dict):
                for k, names in v.items():
                    if k in value and not all(n in value for n in names):
                        return False
        elif kw == "prefixItems" or (kw == "items" and isinstance(v, list)):
            if isinstance(value, list):
                for i, item in enumerate(value[: len(v)]):
                    if not check(low, item, [loc.child(kw, i)], level + 1):
                        return False
        elif kw == "items":
            if isinstance(value, list):
                start = len(node.get("prefixItems", [])) if isinstance(node.get("prefixItems"), list) else 0
                for item in value[start:]:
                    if not check(low, item, [loc.child(kw)], level + 1):
                        return False
        elif kw == "contains":
            if isinstance(value, list):
                hits = sum(1 for item in value if check(low, item, [loc.child(kw)], level + 1))
                lo = node.get("minContains", 1)
                hi = node.get("maxContains")
                if hits < lo or (hi is not None and hits > hi):
                    return False
        elif kw == "uniqueItems":
            if v is True and isinstance(value, list):
                if len({ckey(x) for x in value}) != len(value):
                    return False
        elif kw in ("properties", "patternProperties", "additionalProperties"):
            if isinstance(value, dict) and not _check_props(low, value, loc, kw, level):
                return False
        elif kw == "propertyNames":
            if isinstance(value, dict):
                for k in value:
                    if not check(low, k, [loc.child(kw)], level + 1):
                        return False
        elif kw == "allOf":
            if not all(check(low, value, [loc.child(kw, i)], level + 1) for i in range(len(v))):
                return False
        elif kw == "anyOf":
            if not any(check(low, value, [loc.child(kw, i)], level + 1) for i in range(len(v))):
                return False
        elif kw == "oneOf":
            if sum(1 for i in range(len(v)) if check(low, value, [loc.child(kw, i)], level + 1)) != 1:
                return False
        elif kw == "not":
            if check(low, value, [loc.child(kw)], level + 1):
                return False
        elif kw == "if":
            branch = "then" if check(low, value, [loc.child(kw)], level + 1) else "else"
            if (
                branch in node
                and branch not in loc.omit
                and not check(low, value, [loc.child(branch)], level + 1)
            ):
                return False
        elif kw in ("dependentSchemas", "dependencies"):
            if isinstance(value, dict):
                for k, sub in v.items():
                    if k not in value:
                        continue
                    if isinstance(sub, list):
                        if not all(n in value for n in sub):
                            return False
                    elif not check(low, value, [loc.child(kw, k)], level + 1):
                        return False
        elif kw in ("unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"):
            raise _Undecided(p)
    return True


def _check_number(kw: str, v: Any, value: Any, node: dict[str, Any], p: str) -> bool:
    if isinstance(v, bool):
        return True
    bound = _number(v, p, kw)
    x = Fraction(Decimal(repr(value))) if isinstance(value, float) else Fraction(value)
    b = Fraction(Decimal(repr(bound))) if isinstance(bound, float) else Fraction(bound)
    if kw == "minimum":
        return x > b if node.get("exclusiveMinimum") is True else x >= b
    if kw == "maximum":
        return x < b if node.get("exclusiveMaximum") is True else x <= b
    if kw == "exclusiveMinimum":
        return x > b
    if kw == "exclusiveMaximum":
        return x < b
    return b > 0 and (x / b).denominator == 1


def _check_props(low: Lowering, value: dict[str, Any], loc: Loc, kw: str, level: int) -> bool:
    node = loc.node
    props = node.get("properties", {}) if "properties" not in loc.omit else {}
    pats = node.get("patternProperties", {}) if "patternProperties" not in loc.omit else {}
    for k, item in value.items():
        if kw == "properties":
            if k in props and not check(low, item, [loc.child("properties", k)], level + 1):
                return False
        elif kw == "patternProperties":
            for pat in pats:
                if low.pattern_matches(pat, k, f"{loc.ptr}/patternProperties") and not check(
                    low, item, [loc.child("patternProperties", pat)], level + 1
                ):
                    return False
        else:
            if k in props or any(low.pattern_matches(pat, k, loc.ptr) for pat in pats):
                continue
            if not check(low, item, [loc.child("additionalProperties")], level + 1):
                return False
    return True
