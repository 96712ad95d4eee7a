"""JSON Schema to grammar IR: conjunctions of subschemas merged, applicators distributed.

A subschema is lowered together with every schema it must satisfy at the same
place (``allOf`` members, ``$ref`` targets and siblings): :func:`Lowerer.lower`
takes such a *conjunction*, expands references and ``allOf``, distributes the
disjunctive applicators (``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``,
``dependentSchemas``) over their branches, and merges the rest into one
:class:`_Norm` (types, bounds, properties...), which becomes IR. Conjunctions
reached through ``$ref`` become grammar rules keyed by the schemas they
conjoin, so recursive schemas become recursive rules and everything else is
inlined by the automaton stage.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from typing import Any

from ...automata.build import ir_to_dfa
from ...errors import GrammarError, LimitExceeded, SchemaError
from ...ir.grammar import Unordered
from ...ir.nodes import NOTHING, Node, RuleRef, is_nothing
from ...limits import Limits
from . import _lexical as lx
from ._check import check
from ._lexical import Layout, alt
from ._load import Loc, Registry, _RemoteRef, synthetic
from ._negate import negate
from ._norm import _Norm
from ._values import (
    ANNOTATIONS,
    UNSUPPORTED,
    _Undecided,
)


class Lowerer:
    """Lowers one schema document; collects rules and unenforced keywords."""

    def __init__(
        self,
        root: Any,
        *,
        layout: Layout,
        property_order: str,
        strict: bool,
        limits: Limits,
        relax_bounds: int | None = None,
        closed_objects: bool = False,
    ) -> None:
        self.reg = Registry(root)
        self.layout = layout
        self.flex = (
            Layout("flexible", 0, layout.max_whitespace, layout.runs_counted_later)
            if layout.mode == "indent"
            else layout
        )
        self.property_order = property_order
        self.relax_bounds = relax_bounds
        #: objects whose merged schemas are silent about extra keys take none
        self.closed_objects = closed_objects
        self.strict = strict
        self.limits = limits
        self.rules: dict[str, Node] = {}
        #: rules that stand for an object's members in any order (see ir.Unordered)
        self.unordered: dict[str, Unordered] = {}
        self._rule_names: dict[Any, str] = {}
        self._plain_memo: dict[tuple[Any, ...], Node] = {}  # see _lower_plain
        self._active: set[Any] = set()
        self._unenforced: dict[str, None] = {}
        self._depth = 0
        self._work = 0
        self._dfa_cache: dict[Node, Any] = {}

    # ------------------------------------------------------------ reporting
    def unsupported(self, pointer: str, keyword: str, why: str) -> None:
        """Raise (strict) or record a keyword that is not enforced exactly."""
        path = f"{pointer}/{keyword}" if keyword else pointer
        if self.strict:
            raise SchemaError(f"{keyword} {why}" if keyword else why, path)
        self._unenforced[f"{path or '/'}: {keyword} {why}"] = None

    def note(self, text: str) -> None:
        self._unenforced[text] = None

    @property
    def unenforced(self) -> tuple[str, ...]:
        return tuple(self._unenforced)

    def _tick(self, n: int = 1) -> None:
        self._work += n
        if self._work > self.limits.max_schema_work:
            raise LimitExceeded(
                "max_schema_work",
                self.limits.max_schema_work,
                "the schema expands to too many subschemas (combinations of anyOf/oneOf/allOf branches)",
            )

    def add_rule(self, body: Node) -> RuleRef:
        """A new rule of ``body``, as a reference."""
        name = f"u{len(self.rules)}"
        while name in self.rules:
            name += "_"
        self.rules[name] = body
        if len(self.rules) > self.limits.max_grammar_rules:
            raise LimitExceeded("max_grammar_rules", self.limits.max_grammar_rules, "the schema needs too many rules")
        return RuleRef(name)

    # ----------------------------------------------------------- any value
    def any_value(self, layout: Layout) -> Node:
        """Any JSON value (a recursive rule)."""
        if layout.mode == "indent":
            self.note(
                "/: indent layout is not enforced inside values of unconstrained type (flexible whitespace)"
            )
            layout = self.flex
        name = f"json_value_{layout.mode}"
        if name not in self.rules:
            self.rules.update(lx.any_value_rules(layout, name))
        return RuleRef(name)

    # --------------------------------------------------------------- lower
    def lower_root(self) -> Node:
        node = self.lower([self.reg.root_loc], self.layout, 0)
        if is_nothing(node):
            raise SchemaError("the schema admits no value", "")
        return node

    def expand(self, locs: list[Loc]) -> tuple[list[Loc], bool, bool]:
        """``$ref`` and ``allOf`` expanded: (plain schemas, whether a reference was followed, false seen).

        The plain schemas come in document order, depth first: a ``$ref``'s target
        before the keywords beside it, a schema's own keywords before its ``allOf``
        members, each member's expansion before the next member's. Properties
        merged from several schemas are laid out in this order, the order in which
        they first appear (``allOf: [{"$ref": base}, {"properties": extra}]``
        takes the base's properties first, as the instances written for such
        schemas do).
        """
        todo = deque(locs)
        seen: set[Any] = set()
        plain: list[Loc] = []
        used_ref = False
        while todo:
            loc = todo.popleft()
            ident = loc.ident()
            if ident in seen:
                continue
            seen.add(ident)
            if len(seen) > self.limits.max_schema_work:
                raise LimitExceeded(
                    "max_schema_work", self.limits.max_schema_work, "a conjunction of too many subschemas"
                )
            node = loc.node
            if node is True:
                continue
            if node is False:
                return [], used_ref, True
            if not isinstance(node, dict):
                raise SchemaError(f"a schema is an object or a boolean, not {type(node).__name__}", loc.ptr)
            if loc.has("$ref"):
                ref = node["$ref"]
                if not isinstance(ref, str):
                    raise SchemaError("$ref must be a string", loc.ptr + "/$ref")
                todo.appendleft(loc.without("$ref"))
                try:
                    target = self.reg.resolve(ref, loc, loc.ptr + "/$ref")
                except _RemoteRef as exc:
                    self.unsupported(loc.ptr, "$ref", f"{ref!r} points outside the document (not fetched)")
                    del exc
                    continue
                todo.appendleft(target)
                used_ref = True
                continue
            if loc.has("allOf"):
                members = node["allOf"]
                if not isinstance(members, list) or not members:
                    raise SchemaError("allOf must be a non-empty array of schemas", loc.ptr + "/allOf")
                todo.extendleft(loc.child("allOf", i) for i in reversed(range(len(members))))
                todo.appendleft(loc.without("allOf"))
                continue
            for kw in ("$dynamicRef", "$recursiveRef"):
                if loc.has(kw):
                    self.unsupported(loc.ptr, kw, UNSUPPORTED[kw])
                    loc = loc.without(kw)
            plain.append(loc)
        return plain, used_ref, False

    def lower(self, locs: list[Loc], layout: Layout, depth: int) -> Node:
        """IR for the values that satisfy every schema in ``locs``, at nesting ``depth``."""
        self._depth += 1
        if layout.mode != "indent":
            depth = 0  # the layout does not depend on the depth: share rules across depths
        try:
            if self._depth > self.limits.max_nesting_depth:
                raise LimitExceeded(
                    "max_nesting_depth",
                    self.limits.max_nesting_depth,
                    f"the schema nests deeper than {self.limits.max_nesting_depth} levels",
                )
            self._tick()
            plain, used_ref, false = self.expand(locs)
            if false:
                return NOTHING
            # what is left of a referencing schema ({"$ref": ...} alone) constrains nothing: without
            # it, every reference to one target conjoins the same schemas and shares one rule
            plain = [loc for loc in plain if not _vacuous(loc)]
            if not used_ref:
                return self._lower_plain(plain, layout, depth)
            base_key = tuple(sorted((loc.ident() for loc in plain), key=repr))
            if layout.mode == "indent" and base_key in self._active:
                ptrs = ", ".join(sorted({loc.ptr or "/" for loc in plain})) or "/"
                self.note(
                    f"{ptrs}: $ref indent layout is not enforced inside recursive references (flexible whitespace)"
                )
                layout, depth = self.flex, 0
            key = (base_key, layout.mode, depth)
            name = self._rule_names.get(key)
            if name is not None:
                return RuleRef(name)
            name = f"s{len(self._rule_names)}"
            self._rule_names[key] = name
            if len(self._rule_names) > self.limits.max_grammar_rules:
                raise LimitExceeded(
                    "max_grammar_rules", self.limits.max_grammar_rules, "the schema needs too many rules"
                )
            self._active.add(base_key)
            try:
                body = self._lower_plain(plain, layout, depth)
            finally:
                self._active.discard(base_key)
            self.rules[name] = body
            return RuleRef(name)
        finally:
            self._depth -= 1

    def _lower_plain(self, plain: list[Loc], layout: Layout, depth: int) -> Node:
        """:meth:`_lower_conjunction`, memoised by the schemas (in order) and the layout: a subschema met
        again (the value schemas of each region of an object's extra keys, a definition inlined in
        many places) is lowered once. Not with an indent layout, whose lowering of a reference depends
        on the references being lowered around it (see :meth:`lower`)."""
        if layout.mode == "indent":
            return self._lower_conjunction(plain, layout, depth)
        key = (tuple(loc.ident() for loc in plain), layout)
        hit = self._plain_memo.get(key)
        if hit is None:
            hit = self._plain_memo[key] = self._lower_conjunction(plain, layout, depth)
        return hit

    def _lower_conjunction(self, plain: list[Loc], layout: Layout, depth: int) -> Node:
        if not plain:
            return self.any_value(layout)
        for i, loc in enumerate(plain):
            rest = plain[:i] + plain[i + 1 :]
            branches = self._distribute(loc, rest)
            if branches is not None:
                self._tick(len(branches))
                return alt(*(self.lower(b, layout, depth) for b in branches))
        norm = _Norm(self)
        for loc in plain:
            norm.add(loc)
        if norm.is_trivial():
            return self.any_value(layout)
        return norm.lower(layout, depth)

    def _distribute(self, loc: Loc, rest: list[Loc]) -> list[list[Loc]] | None:
        """The branches of the first disjunctive applicator of ``loc`` (None: it has none)."""
        node = loc.node
        for kw in ("anyOf", "oneOf"):
            if loc.has(kw):
                members = node[kw]
                if not isinstance(members, list) or not members:
                    raise SchemaError(f"{kw} must be a non-empty array of schemas", f"{loc.ptr}/{kw}")
                self._check_branches(kw, members, loc.ptr)
                base = [*rest, loc.without(kw)]
                branches = [[*base, loc.child(kw, i)] for i in range(len(members))]
                if kw == "oneOf" and len(branches) > 1 and not self._disjoint(branches):
                    children = [loc.child(kw, i) for i in range(len(members))]
                    if len(children) <= 8 and all(self.negate(c) is not None for c in children):
                        # exactly one: each branch with the negations of the others
                        return [
                            [
                                *base,
                                c,
                                *(
                                    synthetic(o.ptr, o.base, ("oneOf-not", o.ident()), neg=o)
                                    for o in children
                                    if o is not c
                                ),
                            ]
                            for c in children
                        ]
                    self.unsupported(loc.ptr, "oneOf", "branches may overlap: compiled as anyOf")
                return branches
        if loc.has("not"):
            negs = self.negate(loc.child("not"))
            base = [*rest, loc.without("not")]
            if negs is None:
                self.unsupported(loc.ptr, "not", "is too complex to negate")
                return [base]
            return [[*base, *n] for n in negs]
        for name, value in loc.extra:
            if name == "neg":
                negs = self.negate(value)
                base = [
                    *rest,
                    Loc(
                        loc.ptr,
                        loc.node,
                        loc.base,
                        loc.omit,
                        tuple(e for e in loc.extra if e[0] != "neg"),
                        loc.key + ("-neg",),
                    ),
                ]
                if negs is None:
                    self.unsupported(value.ptr, "", "is too complex to negate")
                    return [base]
                return [[*base, *n] for n in negs]
        if loc.has("if"):
            base = [*rest, loc.without("if").without("then").without("else")]
            if not (loc.has("then") or loc.has("else")):
                return [base]
            cond = loc.child("if")
            then = [loc.child("then")] if loc.has("then") else []
            other = [loc.child("else")] if loc.has("else") else []
            negs = self.negate(cond)
            if negs is None:
                self.unsupported(loc.ptr, "if", "condition is too complex to negate")
                return [base]
            return [[*base, cond, *then]] + [[*base, *n, *other] for n in negs]
        for kw in ("dependentSchemas", "dependencies", "dependentRequired"):
            if loc.has(kw):
                deps = node[kw]
                if not isinstance(deps, dict):
                    raise SchemaError(f"{kw} must be an object", f"{loc.ptr}/{kw}")
                if not deps:
                    return [[*rest, loc.without(kw)]]
                name, value = next(iter(deps.items()))
                base = [*rest, self._without_dep(loc, kw, name)]
                absent = [*base, synthetic(loc.ptr, loc.base, ("forbid", kw, name), forbid=(name,))]
                if isinstance(value, (dict, bool)) and kw != "dependentRequired":
                    required = Loc(loc.ptr, {"required": [name]}, loc.base, key=("dep", kw, name))
                    return [[*base, required, loc.child(kw, name)], absent]
                if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                    raise SchemaError(f"{kw} values must be arrays of strings", f"{loc.ptr}/{kw}/{name}")
                required = Loc(loc.ptr, {"required": [name, *value]}, loc.base, key=("dep", kw, name))
                return [[*base, required], absent]
        return None

    def _check_branches(self, kw: str, members: list[Any], ptr: str) -> None:
        """Refuse an ``anyOf``/``oneOf`` of more members than ``max_schema_branches`` before lowering any.

        Members that list their values (``const``, ``enum``) are not counted.
        """
        most = self.limits.max_schema_branches
        if len(members) <= most:
            return
        counted = sum(1 for m in members if not (isinstance(m, dict) and ("const" in m or "enum" in m)))
        if counted > most:
            raise LimitExceeded(
                "max_schema_branches", most, f"{ptr}/{kw} has {counted} members that are not constants"
            )

    def _without_dep(self, loc: Loc, kw: str, name: str) -> Loc:
        node = dict(loc.node)
        node[kw] = {k: v for k, v in loc.node[kw].items() if k != name}
        if not node[kw]:
            node.pop(kw)
        marker = "dependentSchemas" if kw != "dependentRequired" else ""
        return Loc(loc.ptr, node, loc.base, loc.omit, loc.extra, loc.key + (("dep-", kw, name, marker),))

    # ----------------------------------------------------------- oneOf
    def summary(self, locs: list[Loc]) -> _Norm | None:
        try:
            plain, _, false = self.expand(locs)
        except SchemaError:
            return None
        if false:
            return None
        norm = _Norm(self, summary=True)
        for loc in plain:
            norm.add(loc)
        return norm

    def _disjoint(self, branches: list[list[Loc]]) -> bool:
        strict, self.strict = self.strict, False
        saved = dict(self._unenforced)
        try:
            sums = [self.summary(b) for b in branches]
        finally:
            self.strict = strict
            self._unenforced = saved
        live = [x for x in sums if x is not None]
        keys = [x.const_keys() for x in live]
        if all(k is not None for k in keys):
            seen: set[Any] = set()
            for k in keys:
                assert k is not None
                if seen & k:
                    return False
                seen |= k
            return True
        if len(live) > 300:
            return False
        for a, b in itertools.combinations(range(len(sums)), 2):
            sa, sb = sums[a], sums[b]
            if sa is None or sb is None:
                continue  # an unsatisfiable branch overlaps nothing
            if not sa.disjoint_from(sb):
                return False
        return True

    # -------------------------------------------------------- annotations
    def evaluated(
        self, loc: Loc, what: str, names: dict[str, None], patterns: dict[str, None], level: int
    ) -> bool:
        """Properties (or item counts) that ``loc`` and its in-place subschemas evaluate.

        Fills ``names``/``patterns`` (for items: the prefix lengths in ``names``)
        and returns True when every property (item) is evaluated. Raises
        :class:`_Undecided` for annotations that depend on the instance
        (``anyOf``, ``oneOf``, ``if``, ``contains``, ``dependentSchemas``, dynamic references).
        """
        if level > self.limits.max_schema_indirection:
            raise _Undecided("deeply nested references")
        node = loc.node
        if not isinstance(node, dict):
            return False
        own = level > 0  # the schema's own unevaluated keyword does not count for itself
        if any(isinstance(k, tuple) and k[:1] == ("dep-",) and k[-1] for k in loc.key):
            raise _Undecided("dependentSchemas")
        for kw in node:
            if kw in ("anyOf", "oneOf", "if", "dependentSchemas", "$dynamicRef", "$recursiveRef"):
                raise _Undecided(kw)
        if what == "props":
            if "additionalProperties" in node or (own and "unevaluatedProperties" in node):
                return True
            if isinstance(node.get("properties"), dict):
                names.update(dict.fromkeys(node["properties"]))
            if isinstance(node.get("patternProperties"), dict):
                patterns.update(dict.fromkeys(node["patternProperties"]))
        else:
            if "contains" in node:
                raise _Undecided("contains")
            items = node.get("items")
            if isinstance(items, (dict, bool)) or (own and "unevaluatedItems" in node):
                return True
            prefix = node.get("prefixItems", items if isinstance(items, list) else None)
            if isinstance(prefix, list):
                names[str(len(prefix))] = None
        if isinstance(node.get("$ref"), str):
            try:
                target = self.reg.resolve(node["$ref"], loc, loc.ptr + "/$ref")
            except _RemoteRef:
                raise _Undecided("a remote $ref") from None
            if self.evaluated(target, what, names, patterns, level + 1):
                return True
        if isinstance(node.get("allOf"), list):
            for i in range(len(node["allOf"])):
                if self.evaluated(loc.child("allOf", i), what, names, patterns, level + 1):
                    return True
        return False

    # ------------------------------------------------------------ negation
    def negate(self, loc: Loc, level: int = 0) -> list[list[Loc]] | None:
        """¬loc as a disjunction of conjunctions, or None when not expressible (see :func:`._negate.negate`)."""
        return negate(self.reg, self.limits, loc, level)

    # -------------------------------------------------------------- checks
    def dfa_accepts(self, node: Node, data: bytes) -> bool:
        """Whether the regular ``node`` matches ``data`` exactly."""
        dfa = self._dfa_cache.get(node)
        if dfa is None:
            try:
                dfa = ir_to_dfa(node, self.limits)
            except GrammarError:
                dfa = False
            self._dfa_cache[node] = dfa
        if dfa is False or dfa is True:
            return False
        state = dfa.start
        table = dfa.transitions
        for b in data:
            state = int(table[state, b])
            if state < 0:
                return False
        return bool(dfa.accepting[state])

    def pattern_node(self, pattern: str, pointer: str) -> Node | None:
        """The string contents that ``pattern`` (at ``pointer``) matches, or ``None`` when it is not enforced.

        A malformed pattern is a :class:`SchemaError`; so is a valid one that
        uses a construct not supported here (a lookahead, a backreference, a
        script property) unless ``strict`` is off, in which case it is
        reported in ``unenforced`` and ``None`` is returned, for the caller
        to leave the pattern out (a larger language, never a smaller one).
        """
        try:
            node = lx.pattern_content(pattern, self.limits)
        except GrammarError as exc:
            if self.strict or not exc.unsupported:
                raise SchemaError(f"pattern {pattern!r} is not supported: {exc.message}", pointer) from None
            self.note(f"{pointer}: pattern {pattern!r} is not enforced: {exc.message}")
            return None
        return node

    def pattern_matches(self, pattern: str, text: str, pointer: str) -> bool:
        node = self.pattern_node(pattern, pointer)
        if node is None:
            raise _Undecided(pointer)
        return self.dfa_accepts(node, json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8"))

    def check(self, value: Any, locs: list[Loc], level: int = 0) -> bool:
        """Whether ``value`` satisfies every schema in ``locs`` (see :func:`._check.check`)."""
        return check(self, value, locs, level)


def _vacuous(loc: Loc) -> bool:
    """Whether every keyword of ``loc`` left to lower is an annotation (it admits every value)."""
    node = loc.node
    return isinstance(node, dict) and not loc.extra and all(k in ANNOTATIONS or k in loc.omit for k in node)
