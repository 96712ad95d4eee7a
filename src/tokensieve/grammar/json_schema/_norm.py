"""A merged conjunction of plain subschemas (no ``$ref``, ``allOf`` or disjunctions) and its IR.

:meth:`_Norm.add` merges each subschema's keywords into the fields of
``_merged.Merged``; numbers, strings and ``enum`` are lowered here, objects in
``_lower_objects`` and arrays in ``_lower_arrays``.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ...errors import LimitExceeded, SchemaError
from ...ir.nodes import (
    NOTHING,
    Node,
    is_nothing,
    literal,
)
from ..json_automata import string_enum
from . import _lexical as lx
from ._lexical import Layout, alt, quoted
from ._load import Loc
from ._lower_arrays import ArrayLowering
from ._lower_objects import ObjectLowering
from ._merged import _ArrComp, _ObjComp
from ._values import (
    ALL_TYPES,
    ANNOTATIONS,
    UNSUPPORTED,
    _has_type,
    _is_num,
    _nonneg_int,
    _number,
    _parse_types,
    _type_of,
    _Undecided,
    ckey,
)

#: formats whose language is a superset of the specified one
_PARTIAL_FORMATS = {
    "hostname": "the total length and the IDNA rules of xn-- labels are not checked",
    "email": "the size limits of 64 characters per local part, 255 per domain and 63 per label are not checked",
}


class _Norm(ObjectLowering, ArrayLowering):
    """Every constraint of a conjunction, merged per JSON type."""

    # --------------------------------------------------------------- merge
    def add(self, loc: Loc) -> None:
        self.locs.append(loc)
        if not self.ptr:
            self.ptr = loc.ptr
        for name, value in loc.extra:
            if name == "forbid":
                self.forbid.update(value)
            elif name == "notin":
                self.notin.extend(value)
            elif name == "props":
                synth = _ObjComp(loc.ptr)
                synth.props.update(dict(value))
                self.obj.append(synth)
            elif name == "notpattern":
                self.neg_patterns.append(value)
            elif name == "nonint":
                self.nonint = True
                self._restrict_types(frozenset({"number"}))
        node = loc.node
        if not isinstance(node, dict):
            return
        ptr = loc.ptr
        comp: _ObjComp | None = None
        acomp: _ArrComp | None = None
        for kw, v in node.items():
            if kw in loc.omit or kw in ANNOTATIONS:
                continue
            p = f"{ptr}/{kw}"
            self.where[kw] = p
            if kw == "type":
                types = _parse_types(v, p)
                if node.get("nullable") is True:
                    types = types | {"null"}
                self._restrict_types(types)
            elif kw == "nullable":
                if not isinstance(v, bool):
                    raise SchemaError("nullable must be a boolean", p)
            elif kw in ("enum", "const"):
                values = [v] if kw == "const" else v
                if not isinstance(values, list):
                    raise SchemaError("enum must be an array", p)
                if kw == "enum" and node.get("nullable") is True and "type" in node:
                    values = [*values, None]
                if self.enum is None:
                    self.enum = list(values)
                else:
                    keys = {ckey(x) for x in values}
                    self.enum = [x for x in self.enum if ckey(x) in keys]
                self.enum_ptr = p
            elif kw == "minLength":
                self.min_len = max(self.min_len, _nonneg_int(v, p, kw))
            elif kw == "maxLength":
                n = _nonneg_int(v, p, kw)
                self.max_len = n if self.max_len is None else min(self.max_len, n)
            elif kw == "pattern":
                if not isinstance(v, str):
                    raise SchemaError("pattern must be a string", p)
                if not self.summary:
                    self.low.pattern_node(v, p)  # syntax errors surface here, with the pointer
                self.patterns.append((v, p))
            elif kw == "format":
                if not isinstance(v, str):
                    raise SchemaError("format must be a string", p)
                self.formats.append((v, p))
            elif kw in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
                self._bound(kw, v, node, p)
            elif kw == "multipleOf":
                m = _number(v, p, kw)
                if m <= 0:
                    raise SchemaError("multipleOf must be greater than 0", p)
                self.multiples.append((m, p))
            elif kw == "minItems":
                self.min_items = max(self.min_items, _nonneg_int(v, p, kw))
            elif kw == "maxItems":
                n = _nonneg_int(v, p, kw)
                self.max_items = n if self.max_items is None else min(self.max_items, n)
            elif kw in ("prefixItems", "items", "additionalItems"):
                if acomp is None:
                    acomp = _ArrComp(ptr)
                    self.arr.append(acomp)
                self._items(loc, kw, v, p, acomp)
            elif kw == "contains":
                if not isinstance(v, (dict, bool)):
                    raise SchemaError("contains must be a schema", p)
                lo = (
                    _nonneg_int(node["minContains"], f"{ptr}/minContains", "minContains")
                    if "minContains" in node
                    else 1
                )
                hi = (
                    _nonneg_int(node["maxContains"], f"{ptr}/maxContains", "maxContains")
                    if "maxContains" in node
                    else None
                )
                self.contains.append((loc.child("contains"), lo, hi, p))
            elif kw == "uniqueItems":
                if not isinstance(v, bool):
                    raise SchemaError("uniqueItems must be a boolean", p)
                if v:
                    self.unique = p
            elif kw == "unevaluatedItems":
                if not isinstance(v, (dict, bool)):
                    raise SchemaError("unevaluatedItems must be a schema", p)
                self._unevaluated_items(loc, p)
            elif kw in ("properties", "patternProperties", "additionalProperties"):
                if comp is None:
                    comp = _ObjComp(ptr)
                    self.obj.append(comp)
                self._props(loc, kw, v, p, comp)
            elif kw == "required":
                if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                    raise SchemaError("required must be an array of strings", p)
                known = set(self.required)
                for name in v:
                    if name not in known:
                        known.add(name)
                        self.required.append(name)
            elif kw == "propertyNames":
                if not isinstance(v, (dict, bool)):
                    raise SchemaError("propertyNames must be a schema", p)
                self.prop_names.append(loc.child(kw))
            elif kw == "minProperties":
                self.min_props = max(self.min_props, _nonneg_int(v, p, kw))
            elif kw == "maxProperties":
                n = _nonneg_int(v, p, kw)
                self.max_props = n if self.max_props is None else min(self.max_props, n)
            elif kw in ("dependentRequired", "dependencies"):
                if not isinstance(v, dict):
                    raise SchemaError(f"{kw} must be an object", p)
                for name, names in v.items():
                    if isinstance(names, (dict, bool)) and kw == "dependencies":
                        continue  # distributed before the merge
                    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
                        raise SchemaError(f"{kw} values must be arrays of strings", f"{p}/{name}")
                    self.dep_required.setdefault(name, set()).update(names)
            elif kw == "unevaluatedProperties":
                if not isinstance(v, (dict, bool)):
                    raise SchemaError("unevaluatedProperties must be a schema", p)
                self._unevaluated_props(loc, p)
            elif kw in UNSUPPORTED:
                self._unsupported(ptr, kw, UNSUPPORTED[kw])
            # anything else: unknown keywords are ignored, as the specification says

    def _unevaluated_props(self, loc: Loc, p: str) -> None:
        names: dict[str, None] = {}
        patterns: dict[str, None] = {}
        try:
            everything = self.low.evaluated(loc, "props", names, patterns, 0)
        except _Undecided as exc:
            self._unsupported(
                loc.ptr, "unevaluatedProperties", f"depends on {exc.args[0]}, which is not supported"
            )
            return
        if everything:
            return
        comp = _ObjComp(loc.ptr)
        true = Loc(p + "/~evaluated", True, loc.base)
        comp.props = {n: true for n in names}
        comp.patterns = [(pat, true, p) for pat in patterns]
        comp.additional = loc.child("unevaluatedProperties")
        self.obj.append(comp)

    def _unevaluated_items(self, loc: Loc, p: str) -> None:
        count: dict[str, None] = {}
        try:
            everything = self.low.evaluated(loc, "items", count, {}, 0)
        except _Undecided as exc:
            self._unsupported(
                loc.ptr, "unevaluatedItems", f"depends on {exc.args[0]}, which is not supported"
            )
            return
        if everything:
            return
        comp = _ArrComp(loc.ptr)
        true = Loc(p + "/~evaluated", True, loc.base)
        comp.prefix = [true] * max((int(k) for k in count), default=0)
        comp.items = loc.child("unevaluatedItems")
        self.arr.append(comp)

    def _restrict_types(self, types: frozenset[str]) -> None:
        cur = self.types
        out = set()
        for t in ALL_TYPES:
            in_cur = t in cur or (t == "integer" and "number" in cur)
            in_new = t in types or (t == "integer" and "number" in types)
            if in_cur and in_new:
                out.add(t)
        if "number" in out:
            out.add("integer")
        self.types = frozenset(out)

    def _bound(self, kw: str, v: Any, node: dict[str, Any], p: str) -> None:
        if isinstance(v, bool) and kw.startswith("exclusive"):
            return  # draft 4: a flag on minimum/maximum, read there
        value = _number(v, p, kw)
        if kw in ("minimum", "exclusiveMinimum"):
            excl = kw == "exclusiveMinimum" or node.get("exclusiveMinimum") is True
            if self.lo is None or value > self.lo[0] or (value == self.lo[0] and excl):
                self.lo = (value, excl)
        else:
            excl = kw == "exclusiveMaximum" or node.get("exclusiveMaximum") is True
            if self.hi is None or value < self.hi[0] or (value == self.hi[0] and excl):
                self.hi = (value, excl)

    def _items(self, loc: Loc, kw: str, v: Any, p: str, comp: _ArrComp) -> None:
        node = loc.node
        if kw == "prefixItems" or (kw == "items" and isinstance(v, list)):
            if not isinstance(v, list):
                raise SchemaError(f"{kw} must be an array of schemas", p)
            comp.prefix = [loc.child(kw, i) for i in range(len(v))]
            return
        if kw == "additionalItems":
            if not isinstance(node.get("items"), list):
                return  # ignored without an array-form items
        if not isinstance(v, (dict, bool)):
            raise SchemaError(f"{kw} must be a schema", p)
        comp.items = loc.child(kw)

    def _props(self, loc: Loc, kw: str, v: Any, p: str, comp: _ObjComp) -> None:
        if kw == "additionalProperties":
            if not isinstance(v, (dict, bool)):
                raise SchemaError("additionalProperties must be a schema", p)
            comp.additional = loc.child(kw)
            return
        if not isinstance(v, dict):
            raise SchemaError(f"{kw} must be an object", p)
        for name in v:
            if not isinstance(v[name], (dict, bool)):
                raise SchemaError("a schema is an object or a boolean", f"{p}/{name}")
        if kw == "properties":
            for name in v:
                comp.props[name] = loc.child(kw, name)
        else:
            for pattern in v:
                child = loc.child(kw, pattern)
                if not self.summary:
                    self.low.pattern_node(pattern, child.ptr)
                comp.patterns.append((pattern, child, child.ptr))

    def is_trivial(self) -> bool:
        """Whether nothing is constrained (any JSON value)."""
        return (
            self.types == ALL_TYPES
            and self.enum is None
            and not self.notin
            and self.min_len == 0
            and self.max_len is None
            and not (self.patterns or self.neg_patterns or self.formats)
            and self.lo is None
            and self.hi is None
            and not self.multiples
            and not self.arr
            and self.min_items == 0
            and self.max_items is None
            and not self.contains
            and self.unique is None
            and not self.obj
            and not self.required
            and not self.forbid
            and not self.prop_names
            and self.min_props == 0
            and self.max_props is None
            and not self.nonint
        )

    # ---------------------------------------------------------- summaries
    def effective_types(self) -> frozenset[str]:
        if self._eff_types is None:
            if self.enum is not None:
                self._eff_types = frozenset(_type_of(v) for v in self.enum if _has_type(v, self.types))
            else:
                self._eff_types = self.types
        return self._eff_types

    def const_keys(self) -> set[Any] | None:
        if self.enum is None:
            return None
        if self._keys is None:
            self._keys = {ckey(v) for v in self.enum}
        return self._keys

    def prop_consts(self, name: str) -> set[Any] | None:
        """Allowed values of property ``name`` when some component pins it to constants."""
        out: set[Any] | None = None
        for comp in self.obj:
            sub = comp.props.get(name)
            if sub is None:
                continue
            s = self.low.summary([sub])
            if s is None:
                return set()
            keys = s.const_keys()
            if keys is not None:
                out = keys if out is None else out & keys
        return out

    def disjoint_from(self, other: _Norm) -> bool:
        ta, tb = self.effective_types(), other.effective_types()
        common = {t for t in ta if t in tb or (t == "integer" and "number" in tb)}
        common |= {t for t in tb if t == "integer" and "number" in ta}
        if not common:
            return True
        ka, kb = self.const_keys(), other.const_keys()
        if ka is not None and kb is not None and not (ka & kb):
            return True
        if common <= {"object"}:
            for name in set(self.required) | set(other.required):
                ca, cb = self.prop_consts(name), other.prop_consts(name)
                if ca is not None and cb is not None and not (ca & cb):
                    return True
                if (
                    name in self.required
                    and name in other.forbid
                    or name in other.required
                    and name in self.forbid
                ):
                    return True
        if common <= {"number", "integer"} and self.enum is None and other.enum is None:
            if _below(self.hi, other.lo) or _below(other.hi, self.lo):
                return True
        return False

    # --------------------------------------------------------------- lower
    def lower(self, layout: Layout, depth: int) -> Node:
        if self.enum is not None:
            return self._lower_enum(layout, depth)
        types = self.types
        parts: list[Node] = []
        excluded = {ckey(v) for v in self.notin}
        if "null" in types and ckey(None) not in excluded:
            parts.append(literal("null"))
        if "boolean" in types:
            parts.extend(literal(t) for t, v in (("true", True), ("false", False)) if ckey(v) not in excluded)
        if "number" in types or "integer" in types:
            parts.append(self._number(layout))
        if "string" in types:
            parts.append(self._string())
        if "array" in types:
            parts.append(self._array(layout, depth))
        if "object" in types:
            parts.append(self._object(layout, depth))
        others = [v for v in self.notin if isinstance(v, (list, dict))]
        if others:
            self._unsupported(self.ptr, "not", "excluding array or object values is not supported")
        return alt(*parts)

    def _lower_enum(self, layout: Layout, depth: int) -> Node:
        assert self.enum is not None
        seen: set[Any] = set()
        values = []
        # the merged enum already satisfies every enum and const: check the rest only
        others = [loc.without("enum").without("const") for loc in self.locs]
        for v in self.enum:
            k = ckey(v)
            if k in seen:
                continue
            seen.add(k)
            try:
                ok = self.low.check(v, others)
            except _Undecided:
                self._unsupported(
                    self.enum_ptr.rsplit("/", 1)[0],
                    self.enum_ptr.rsplit("/", 1)[1],
                    "values are not checked against the other keywords here",
                )
                ok = True
            if ok:
                values.append(v)
        if not values:
            return NOTHING
        limits = self.low.limits
        if len(values) > limits.max_choices:
            raise LimitExceeded("max_choices", limits.max_choices, f"enum of {len(values)} values")
        if len(values) > 64 and all(isinstance(v, str) for v in values):
            return string_enum(values, limits)
        any_order = self.low.property_order == "any"
        return alt(*(lx.value_literal(v, layout, depth, any_order) for v in values))

    # ------------------------------------------------------------ numbers
    def _number(self, layout: Layout) -> Node:
        integer = "number" not in self.types
        kwargs: dict[str, Any] = {}
        if self.lo is not None:
            kwargs["exclusive_minimum" if self.lo[1] else "minimum"] = self.lo[0]
        if self.hi is not None:
            kwargs["exclusive_maximum" if self.hi[1] else "maximum"] = self.hi[0]
        multiple = None
        if self.multiples:
            multiple = self._multiple()
        nums = [v for v in self.notin if _is_num(v)]
        try:
            node = lx.number_node(
                integer,
                kwargs.get("minimum"),
                kwargs.get("maximum"),
                kwargs.get("exclusive_minimum"),
                kwargs.get("exclusive_maximum"),
                multiple,
                self.low.limits,
            )
            if node is None and multiple is not None:
                where = self.multiples[-1][1]
                self._unsupported(where.rsplit("/", 1)[0], "multipleOf", f"{multiple} is not enforced")
                node = lx.number_node(
                    integer,
                    kwargs.get("minimum"),
                    kwargs.get("maximum"),
                    kwargs.get("exclusive_minimum"),
                    kwargs.get("exclusive_maximum"),
                    None,
                    self.low.limits,
                )
        except ValueError as exc:
            raise SchemaError(f"bad numeric bound: {exc}", self.ptr) from None
        if node is None:
            self._unsupported(self.ptr, "minimum", "numeric bounds are not enforced")
            node = lx.ANY_INTEGER if integer else lx.ANY_NUMBER
        if self.nonint and not is_nothing(node):
            node = lx.intersect(node, lx.NON_INTEGER, self.low.limits)
        if nums and not is_nothing(node):
            literals = alt(*(lx.number_literal(v) for v in nums))
            node = lx.difference(node, literals, self.low.limits)
        return node

    def _multiple(self) -> Any:
        if len(self.multiples) == 1:
            return self.multiples[0][0]
        acc: Fraction | None = None
        for m, _ in self.multiples:
            f = Fraction(Decimal(repr(m)) if isinstance(m, float) else m)
            if acc is None:
                acc = f
            else:
                num = acc.numerator * f.numerator // math.gcd(acc.numerator, f.numerator)
                acc = Fraction(num, math.gcd(acc.denominator, f.denominator))
        assert acc is not None
        if acc.denominator == 1:
            return int(acc)
        return Decimal(acc.numerator) / Decimal(acc.denominator)

    # ------------------------------------------------------------ strings
    def _string(self) -> Node:
        return quoted(self.string_content())

    def string_content(self) -> Node:
        low = self.low
        pieces: list[tuple[Node, str]] = []
        relax = low.relax_bounds
        if relax is not None and (self.max_len or 0) > relax:
            where = self.where.get("maxLength", self.ptr + "/maxLength")
            low.note(f"{where}: maxLength {self.max_len} is not enforced (the exact automaton is too large)")
            self.max_len = None
        if relax is not None and self.min_len > relax:
            where = self.where.get("minLength", self.ptr + "/minLength")
            low.note(f"{where}: minLength {self.min_len} is not enforced (the exact automaton is too large)")
            self.min_len = 0
        if self.min_len > 0 or self.max_len is not None:
            if self.max_len is not None and self.max_len < self.min_len:
                return NOTHING
            bound = self.max_len or self.min_len
            if bound > low.limits.max_repetition:
                raise LimitExceeded(
                    "max_repetition", low.limits.max_repetition, f"string length bound {bound}"
                )
            if (
                not self.patterns
                and not self.formats
                and bound * lx.STATES_PER_CHARACTER >= low.limits.max_dfa_states
            ):
                # every character position is that many automaton states: fail before building them
                raise LimitExceeded(
                    "max_dfa_states",
                    low.limits.max_dfa_states,
                    f"a string of up to {bound} characters needs about {bound * lx.STATES_PER_CHARACTER} states",
                )
            pieces.append(
                (
                    lx.string_length(self.min_len, self.max_len, low.limits),
                    self.where.get("maxLength", self.ptr),
                )
            )
        for pattern, p in self.patterns:
            node = low.pattern_node(pattern, p)
            if node is not None:  # None: not enforced, and reported as such
                pieces.append((node, p))
        for name, p in self.formats:
            node = lx.format_content(name)
            if node is None:
                if not self.summary:
                    low.note(f"{p}: format {name!r} is not enforced (an annotation for this compiler)")
                continue
            if name in _PARTIAL_FORMATS and not self.summary:
                low.note(f"{p}: format {name!r} is enforced in part ({_PARTIAL_FORMATS[name]})")
            pieces.append((node, p))
        if not pieces:
            content = lx.any_string_content()
        else:
            content = pieces[0][0]
            for node, _ in pieces[1:]:
                content = lx.intersect(content, node, low.limits)
        excluded = [v for v in self.notin if isinstance(v, str)]
        negs = [low.pattern_node(pat, p) for pat, p in self.neg_patterns]
        if excluded:
            content = lx.difference(
                content, alt(*(lx.string_literal_content(s) for s in excluded)), low.limits
            )
        for n in negs:
            if n is not None:
                content = lx.difference(content, n, low.limits)
        if not is_nothing(content) and len(pieces) > 1 and lx.is_empty(content, low.limits):
            return NOTHING
        return content

    # ------------------------------------------------------------- arrays


def _below(hi: tuple[Any, bool] | None, lo: tuple[Any, bool] | None) -> bool:
    if hi is None or lo is None:
        return False
    return hi[0] < lo[0] or (hi[0] == lo[0] and (hi[1] or lo[1]))
