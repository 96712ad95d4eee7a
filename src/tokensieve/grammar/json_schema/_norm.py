"""A merged conjunction of plain subschemas (no ``$ref``, ``allOf`` or disjunctions) and its IR."""

from __future__ import annotations

import itertools
import json
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ...automata.choices import choices_to_dfa
from ...automata.ops import dfa_to_ir
from ...errors import LimitExceeded, SchemaError
from ...ir.nodes import (
    EMPTY,
    NOTHING,
    Alt,
    Concat,
    Empty,
    Node,
    concat,
    is_nothing,
    literal,
    optional,
    repeat,
    star,
)
from . import _lexical as lx
from ._lexical import Layout, alt, container, quoted
from ._load import Loc
from ._other_keys import other_keys_content
from ._unique import unique_array_automaton
from ._values import (
    ALL_TYPES,
    ANNOTATIONS,
    UNSUPPORTED,
    Lowering,
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


#: ``uniqueItems``: past this many spelled-out orders times states per item, one automaton
#: tracks the set of items used instead (see :mod:`._unique`)
_SPELL_OUT_STATES = 20_000


class _ObjComp:
    """One schema's ``properties``/``patternProperties``/``additionalProperties``."""

    def __init__(self, ptr: str) -> None:
        self.ptr = ptr
        self.props: dict[str, Loc] = {}
        self.patterns: list[tuple[str, Loc, str]] = []
        self.additional: Loc | None = None


class _ArrComp:
    """One schema's ``prefixItems``/``items``."""

    def __init__(self, ptr: str) -> None:
        self.ptr = ptr
        self.prefix: list[Loc] = []
        self.items: Loc | None = None


class _Norm:
    """Every constraint of a conjunction, merged per JSON type."""

    def __init__(self, low: Lowering, *, summary: bool = False) -> None:
        self.low = low
        self.summary = summary
        self.locs: list[Loc] = []
        self.ptr = ""
        self.types: frozenset[str] = ALL_TYPES
        self.enum: list[Any] | None = None
        self.enum_ptr = ""
        self.notin: list[Any] = []
        # strings
        self.min_len = 0
        self.max_len: int | None = None
        self.patterns: list[tuple[str, str]] = []
        self.neg_patterns: list[tuple[str, str]] = []
        self.formats: list[tuple[str, str]] = []
        # numbers
        self.lo: tuple[Any, bool] | None = None
        self.hi: tuple[Any, bool] | None = None
        self.multiples: list[tuple[Any, str]] = []
        # arrays
        self.arr: list[_ArrComp] = []
        self.min_items = 0
        self.max_items: int | None = None
        self.contains: list[tuple[Loc, int, int | None, str]] = []
        self.unique: str | None = None
        # objects
        self.obj: list[_ObjComp] = []
        self.required: list[str] = []
        self.forbid: set[str] = set()
        self.prop_names: list[Loc] = []
        self.min_props = 0
        self.max_props: int | None = None
        self.dep_required: dict[str, set[str]] = {}
        self.where: dict[str, str] = {}
        self.nonint = False
        self._eff_types: frozenset[str] | None = None
        self._keys: set[Any] | None = None

    # --------------------------------------------------------------- merge
    def _unsupported(self, ptr: str, kw: str, why: str) -> None:
        if not self.summary:
            self.low.unsupported(ptr, kw, why)

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
            return _string_enum(values, limits)
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
    def _array(self, layout: Layout, depth: int) -> Node:
        low = self.low
        comps = self.arr or [_ArrComp(self.ptr)]
        k = max(len(c.prefix) for c in comps)
        hi = self.max_items
        relax = low.relax_bounds
        if relax is not None and hi is not None and hi > relax:
            where = self.where.get("maxItems", self.ptr + "/maxItems")
            low.note(f"{where}: maxItems {hi} is not enforced (the exact automaton is too large)")
            hi = None
        lo = self.min_items
        pos_locs: list[list[Loc]] = []
        for i in range(k):
            locs = []
            for c in comps:
                if i < len(c.prefix):
                    locs.append(c.prefix[i])
                elif c.items is not None:
                    locs.append(c.items)
            pos_locs.append(locs)
        rest_locs = [c.items for c in comps if c.items is not None]
        if self.unique is not None and (hi is None or hi > 1):
            unique = None if k or self.contains else self._unique_array(rest_locs, lo, hi, layout, depth)
            if unique is not None:
                return unique
            self._unsupported(self.unique.rsplit("/", 1)[0], "uniqueItems", UNSUPPORTED["uniqueItems"])
        sub = depth + 1
        elems = []
        for i, locs in enumerate(pos_locs):
            if hi is not None and i >= hi:
                break
            e = low.lower(locs, layout, sub)
            if is_nothing(e):
                hi = i if hi is None else min(hi, i)
                break
            elems.append(e)
        rest = low.lower(rest_locs, layout, sub) if (hi is None or hi > k) else NOTHING
        if is_nothing(rest):
            hi = len(elems) if hi is None else min(hi, len(elems))
        if hi is not None and lo > hi:
            return NOTHING
        sep = layout.sep(depth)
        if self.contains:
            return self._array_contains(rest_locs, rest, elems, lo, hi, layout, depth)
        # positions after the prefix
        after = max(0, lo - len(elems))
        top = None if hi is None else max(0, hi - len(elems))
        if elems:
            tail = repeat(concat(sep, rest), after, top) if top != 0 else EMPTY
            for i in range(len(elems) - 1, 0, -1):
                piece = concat(sep, elems[i], tail)
                tail = piece if i < lo else optional(piece)
            body = concat(elems[0], tail)
        else:
            if hi == 0 or is_nothing(rest):
                body = NOTHING
            else:
                body = concat(rest, repeat(concat(sep, rest), max(0, lo - 1), None if hi is None else hi - 1))
        return container("[", "]", body, lo == 0, layout, depth)

    def _unique_array(
        self, rest_locs: list[Loc], lo: int, hi: int | None, layout: Layout, depth: int
    ) -> Node | None:
        """Arrays of distinct items drawn from a small finite set (None: the items are not such a set)."""
        low = self.low
        summary = low.summary(rest_locs)
        if summary is None:
            return container("[", "]", NOTHING, lo == 0, layout, depth)
        if summary.enum is not None:
            candidates = summary.enum
        elif summary.types <= {"null", "boolean"}:
            candidates = [
                v for t, v in (("null", None), ("boolean", True), ("boolean", False)) if t in summary.types
            ]
        else:
            return None
        values: list[Any] = []
        seen: set[Any] = set()
        for v in candidates:
            key = ckey(v)
            if key in seen:
                continue
            seen.add(key)
            try:
                if low.check(v, rest_locs):
                    values.append(v)
            except _Undecided:
                return None
        if len(values) > low.limits.max_unique_items:
            return None
        n = len(values)
        top = n if hi is None else min(hi, n)
        if lo > top:
            return container("[", "]", NOTHING, lo == 0, layout, depth)
        any_order = low.property_order == "any"
        lits = [lx.value_literal(v, layout, depth + 1, any_order) for v in values]
        sep = layout.sep(depth)
        # the spelled-out sequences cost automaton states in proportion to their number; past a
        # budget, one automaton tracks the set of items used instead (2**n subsets)
        paths = sum(math.perm(n, j) for j in range(lo, top + 1))
        per_item = 8 + (2 * layout.max_whitespace if layout.mode == "flexible" else 2)
        if paths * per_item > _SPELL_OUT_STATES:
            opening, closing, empty = lx.container_parts("[", "]", lo == 0, layout, depth)
            return unique_array_automaton(lits, sep, opening, closing, empty, lo, hi, low.limits)
        memo: dict[tuple[frozenset[int], int], Node] = {}

        def more(remaining: frozenset[int], count: int) -> Node:
            key = (remaining, count)
            hit = memo.get(key)
            if hit is None:
                parts: list[Node] = [EMPTY] if count >= lo else []
                if hi is None or count < hi:
                    parts += [
                        concat(sep, lits[i], more(remaining - {i}, count + 1)) for i in sorted(remaining)
                    ]
                hit = alt(*parts) if parts else NOTHING
                memo[key] = hit
            return hit

        everything = frozenset(range(len(values)))
        body = alt(*(concat(lits[i], more(everything - {i}, 1)) for i in range(len(values))))
        return container("[", "]", body, lo == 0, layout, depth)

    def _array_contains(
        self,
        rest_locs: list[Loc],
        rest: Node,
        elems: list[Node],
        lo: int,
        hi: int | None,
        layout: Layout,
        depth: int,
    ) -> Node:
        low = self.low
        if len(self.contains) > 1 or elems:
            ptr = self.contains[-1][3]
            self._unsupported(
                ptr.rsplit("/", 1)[0],
                "contains",
                "is not enforced together with prefixItems or another contains",
            )
            return container(
                "[", "]", concat(rest, star(concat(layout.sep(depth), rest))), lo == 0, layout, depth
            )
        cloc, a, b, ptr = self.contains[0]
        base = ptr.rsplit("/", 1)[0]
        sep = layout.sep(depth)
        sub = depth + 1
        if a == 0 and b is None:
            body = concat(rest, star(concat(sep, rest)))
            return container("[", "]", body, lo == 0, layout, depth)
        if hi is not None or lo > max(a, 1):
            self._unsupported(base, "contains", "is not enforced together with minItems/maxItems")
        match = low.lower([*rest_locs, cloc], layout, sub)
        if b is None:
            other = rest
        else:
            negs = low.negate(cloc)
            if negs is None:
                self._unsupported(base, "maxContains", "needs the negation of contains, which is too complex")
                other = rest
            else:
                other = alt(*(low.lower([*rest_locs, *n], layout, sub) for n in negs))
        parts = []
        if b is None or b >= max(a, 1):
            first = max(a, 1)
            more_hi = None if b is None else b - 1
            body = concat(
                star(concat(other, sep)),
                match,
                repeat(concat(sep, star(concat(other, sep)), match), first - 1, more_hi),
                star(concat(sep, other)),
            )
            parts.append(body)
        if a == 0 and not is_nothing(other):
            parts.append(concat(other, star(concat(sep, other))))
        return container("[", "]", alt(*parts), a == 0, layout, depth)

    # ------------------------------------------------------------ objects
    def _value_locs(self, name: str) -> tuple[list[Loc], bool]:
        """Schemas the value of property ``name`` must satisfy, and whether it is allowed at all."""
        locs: list[Loc] = []
        for comp in self.obj:
            named = name in comp.props
            if named:
                locs.append(comp.props[name])
            matched = False
            for pattern, ploc, p in comp.patterns:
                try:
                    hit = self.low.pattern_matches(pattern, name, p)
                except _Undecided:
                    self._unsupported(
                        p.rsplit("/", 2)[0],
                        "patternProperties",
                        "cannot be matched against the property names",
                    )
                    hit = False
                if hit:
                    locs.append(ploc)
                    matched = True
            if not named and not matched and comp.additional is not None:
                locs.append(comp.additional)
        return locs, True

    def _check_copies(self, count: int, prefix: int) -> None:
        """Refuse a sequence of ``count`` properties, ``prefix`` optional ones first, whose tails cost too many states.

        Each optional property before the first required one starts a copy of
        the tail: about ``(prefix + 1) * (count + 1)`` NFA states, bounded by a
        tenth of ``max_nfa_states``.
        """
        copies = (prefix + 1) * (count + 1)
        budget = max(1000, self.low.limits.max_nfa_states // 10)
        if copies > budget:
            raise LimitExceeded(
                "max_nfa_states",
                self.low.limits.max_nfa_states,
                f"an object with {count} properties, {prefix} optional ones before the first required one",
            )

    def _check_named(self, names: list[str], required: set[str]) -> None:
        """:meth:`_check_copies` on the named properties, before their values are lowered.

        Applies where the object is certain to be lowered as a sequence (not
        by :meth:`_enumerated` or :meth:`_any_order`); counts every name that
        is not forbidden, so a property whose value turns out impossible
        still counts.
        """
        limits = self.low.limits
        names = [n for n in names if n not in self.forbid]
        optional = sum(1 for n in names if n not in required)
        counting = self.min_props > 0 or self.max_props is not None or bool(self.dep_required)
        if counting and optional <= limits.max_counted_optional_properties:
            return
        if self.low.property_order == "any" and len(names) <= limits.max_any_order_properties:
            return
        self._check_copies(len(names), next((i for i, n in enumerate(names) if n in required), len(names)))

    def _object(self, layout: Layout, depth: int) -> Node:
        low = self.low
        sub = depth + 1
        ordered: dict[str, None] = {}  # the names in order of first appearance
        for comp in self.obj:
            ordered.update(dict.fromkeys(comp.props))
        ordered.update(dict.fromkeys(self.required))
        for name, deps in self.dep_required.items():
            ordered.update(dict.fromkeys((name, *sorted(deps))))
        names = list(ordered)
        required = set(self.required)
        self._check_named(names, required)
        members: list[tuple[str, Node, bool]] = []
        for name in names:
            req = name in required
            allowed = name not in self.forbid
            if allowed and self.prop_names:
                try:
                    allowed = low.check(name, self.prop_names)
                except _Undecided:
                    self._unsupported(
                        self.prop_names[0].ptr.rsplit("/", 1)[0], "propertyNames", "cannot be checked"
                    )
            value: Node = NOTHING
            if allowed:
                locs, _ = self._value_locs(name)
                value = low.lower(locs, layout, sub)
            if is_nothing(value):
                if req:
                    return NOTHING
                continue
            key = quoted(lx.string_literal_content(name))
            members.append((name, concat(key, layout.colon, value), req))
        extra = None if self._closed() else self._extra_member(names, layout, sub)
        return self._sequence(members, extra, layout, depth)

    def _closed(self) -> bool:
        """Whether extra keys are left out: closed objects, and no merged schema decides them.

        ``additionalProperties``, ``patternProperties`` and ``unevaluatedProperties``
        (each makes a component with ``additional`` or ``patterns``) decide which
        extra keys an object takes; where none of the conjunction's schemas has
        one, a closed object takes only the keys it names.
        """
        if not self.low.closed_objects:
            return False
        return not any(c.additional is not None or c.patterns for c in self.obj)

    def _key_language(self, names: list[str]) -> Node | None:
        """Keys that are not ``names`` and satisfy ``propertyNames`` (None: unsupported)."""
        low = self.low
        base = lx.any_string_content()
        pn = None
        if self.prop_names:
            plain, _, false = low.expand(self.prop_names)
            if false:
                return NOTHING
            norm = _Norm(low)
            for loc in plain:
                if any(loc.has(k) for k in ("anyOf", "oneOf", "not", "if")) or loc.extra:
                    self._unsupported(
                        self.prop_names[0].ptr.rsplit("/", 1)[0],
                        "propertyNames",
                        "with applicators is not supported",
                    )
                    return base if not names else None
                norm.add(loc)
            if "string" not in norm.types:
                return NOTHING
            if norm.enum is not None:
                strs = [v for v in norm.enum if isinstance(v, str) and v not in names]
                try:
                    strs = [v for v in strs if low.check(v, plain)]
                except _Undecided:
                    pass
                return alt(*(lx.string_literal_content(s) for s in strs))
            pn = norm.string_content()
        taken = [*names, *sorted(self.forbid)]
        if not taken:
            return base if pn is None else pn
        if pn is None:
            direct = other_keys_content(taken, low.limits)
            if direct is not None:
                return direct
        lang = lx.difference(
            base if pn is None else pn, alt(*(lx.string_literal_content(n) for n in taken)), low.limits
        )
        return lang

    def _extra_member(self, names: list[str], layout: Layout, sub: int) -> Node | None:
        low = self.low
        comps = self.obj
        patterns = [(pat, ploc, p, i) for i, c in enumerate(comps) for pat, ploc, p in c.patterns]
        colon = layout.colon
        most = low.limits.max_pattern_properties
        if len(patterns) > most:
            self._unsupported(
                patterns[0][2].rsplit("/", 2)[0],
                "patternProperties",
                f"with more than {most} patterns is not supported (limits.max_pattern_properties)",
            )
            patterns = []
        regions: list[tuple[Node | None, list[Loc]]] = []
        base_lang = self._key_language(names)
        if base_lang is None:
            ptr = self.ptr
            self._unsupported(
                ptr, "additionalProperties", "cannot exclude the named properties from the extra keys"
            )
            return None
        if is_nothing(base_lang):
            return None
        pattern_nodes = [low.pattern_node(pat, p) for pat, _, p, _ in patterns]
        if any(n is None for n in pattern_nodes):
            self._unsupported(self.ptr, "patternProperties", "has a pattern that is not enforced")
            return None
        for mask in range(1 << len(patterns)):
            lang: Node = base_lang
            locs: list[Loc] = []
            for j, (_, ploc, _, _) in enumerate(patterns):
                pn = pattern_nodes[j]
                assert pn is not None
                if mask >> j & 1:
                    lang = lx.intersect(lang, pn, low.limits)
                    locs.append(ploc)
                else:
                    lang = lx.difference(lang, pn, low.limits)
            if patterns and lx.is_empty(lang, low.limits):
                continue
            for i, c in enumerate(comps):
                if (
                    not any(mask >> j & 1 for j, pat in enumerate(patterns) if pat[3] == i)
                    and c.additional is not None
                ):
                    locs.append(c.additional)
            regions.append((lang, locs))
        parts = []
        for region_lang, region_locs in regions:
            val = low.lower(region_locs, layout, sub)
            if is_nothing(val) or region_lang is None or is_nothing(region_lang):
                continue
            parts.append(concat(quoted(region_lang), colon, val))
        if not parts:
            return None
        return alt(*parts)

    def _sequence(
        self, members: list[tuple[str, Node, bool]], extra: Node | None, layout: Layout, depth: int
    ) -> Node:
        sep = layout.sep(depth)
        n_req = sum(1 for _, _, r in members if r)
        counting = self.min_props > 0 or self.max_props is not None
        deps = {k: v for k, v in self.dep_required.items() if any(m[0] == k for m in members)}
        if counting or deps:
            optional_idx = [i for i, m in enumerate(members) if not m[2]]
            most = self.low.limits.max_counted_optional_properties
            if len(optional_idx) <= most:
                return self._enumerated(members, extra, layout, depth, optional_idx, deps)
            kw = "dependentRequired" if deps else "minProperties"
            self._unsupported(
                self.ptr, kw, f"is not enforced with more than {most} optional properties (limits.max_counted_optional_properties)"
            )
        if self.low.property_order == "any" and 1 < len(members) <= self.low.limits.max_any_order_properties:
            return self._any_order(members, extra, layout, depth)
        self._check_copies(len(members), next((i for i, m in enumerate(members) if m[2]), len(members)))
        more = star(concat(sep, extra)) if extra is not None else EMPTY
        tail: Node = more
        tails: list[Node] = [EMPTY] * (len(members) + 1)
        tails[len(members)] = tail
        # nested (not flattened) nodes: linear time and a DAG of linear size
        for i in range(len(members) - 1, -1, -1):
            piece = concat(sep, members[i][1])
            tail = _cat(_cat(more, piece if members[i][2] else optional(piece)), tail)
            tails[i] = tail
        heads: Node = NOTHING
        for i in range(len(members) - 1, -1, -1):
            start = _cat(members[i][1], tails[i + 1])
            heads = start if members[i][2] else _or(start, heads)
        if extra is not None:
            heads = alt(heads, concat(extra, tails[0]))
        return container("{", "}", heads, n_req == 0, layout, depth)

    def _enumerated(
        self,
        members: list[tuple[str, Node, bool]],
        extra: Node | None,
        layout: Layout,
        depth: int,
        optional_idx: list[int],
        deps: dict[str, set[str]],
    ) -> Node:
        sep = layout.sep(depth)
        alts: list[Node] = []
        empty_ok = False
        lo, hi = self.min_props, self.max_props
        for mask in range(1 << len(optional_idx)):
            chosen = {optional_idx[j] for j in range(len(optional_idx)) if mask >> j & 1}
            present = [i for i, m in enumerate(members) if m[2] or i in chosen]
            present_names = {members[i][0] for i in present}
            if any(k in present_names and not deps[k] <= present_names for k in deps):
                continue
            count = len(present)
            x_lo = max(0, lo - count)
            x_hi = None if hi is None else hi - count
            if x_hi is not None and x_hi < 0:
                continue
            if extra is None:
                if x_lo > 0:
                    continue
                x_hi = 0
            seq = [members[i][1] for i in present]
            if self.low.property_order == "any" and 1 < len(seq) <= 4:
                for perm in itertools.permutations(seq):
                    body = [perm[0]]
                    for x in perm[1:]:
                        body += [sep, x]
                    if extra is not None and x_hi != 0:
                        body.append(repeat(concat(sep, extra), x_lo, x_hi))
                    alts.append(concat(*body))
                continue
            if not seq:
                if x_lo == 0:
                    empty_ok = True
                if x_hi == 0:
                    continue
                assert extra is not None
                alts.append(
                    concat(
                        extra,
                        repeat(concat(sep, extra), max(0, x_lo - 1), None if x_hi is None else x_hi - 1),
                    )
                )
                continue
            body = [seq[0]]
            for s in seq[1:]:
                body += [sep, s]
            if extra is not None and x_hi != 0:
                body.append(repeat(concat(sep, extra), x_lo, x_hi))
            alts.append(concat(*body))
        return container("{", "}", alt(*alts), empty_ok, layout, depth)

    def _any_order(
        self, members: list[tuple[str, Node, bool]], extra: Node | None, layout: Layout, depth: int
    ) -> Node:
        sep = layout.sep(depth)
        more = star(concat(sep, extra)) if extra is not None else EMPTY
        memo: dict[tuple[frozenset[int], bool], Node] = {}

        def perm(rem: frozenset[int], first: bool) -> Node:
            key = (rem, first)
            hit = memo.get(key)
            if hit is not None:
                return hit
            parts: list[Node] = []
            if not first and not any(members[i][2] for i in rem):
                parts.append(EMPTY)
            for i in sorted(rem):
                parts.append(concat(EMPTY if first else sep, members[i][1], more, perm(rem - {i}, False)))
            node = alt(*parts)
            memo[key] = node
            return node

        everything = frozenset(range(len(members)))
        heads = perm(everything, True)
        if extra is not None:
            heads = alt(heads, concat(extra, more, perm(everything, False)))
        n_req = sum(1 for m in members if m[2])
        return container("{", "}", heads, n_req == 0, layout, depth)


def _cat(a: Node, b: Node) -> Node:
    """``a`` then ``b`` without flattening (constant time)."""
    if isinstance(a, Empty):
        return b
    if isinstance(b, Empty):
        return a
    if is_nothing(a) or is_nothing(b):
        return NOTHING
    return Concat((a, b))


def _or(a: Node, b: Node) -> Node:
    """``a`` or ``b`` without flattening (constant time)."""
    if is_nothing(a):
        return b
    if is_nothing(b):
        return a
    if isinstance(a, Empty) or isinstance(b, Empty):
        return alt(a, b)
    return Alt((a, b))


def _below(hi: tuple[Any, bool] | None, lo: tuple[Any, bool] | None) -> bool:
    if hi is None or lo is None:
        return False
    return hi[0] < lo[0] or (hi[0] == lo[0] and (hi[1] or lo[1]))


def _string_enum(values: list[str], limits: Any) -> Node:
    """A large enum of strings as one acyclic automaton.

    Each value is accepted as ``json.dumps`` writes it, with and without
    ``ensure_ascii``; other spellings (needless escapes) are not.
    """
    texts = {json.dumps(v, ensure_ascii=False) for v in values}
    texts |= {json.dumps(v) for v in values}
    return dfa_to_ir(choices_to_dfa(sorted(texts), limits))
