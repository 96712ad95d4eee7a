"""Lowering of the object constraints of a merged conjunction to IR.

The named properties become a sequence in the schema's order (optional ones
as alternatives of the tails that follow them), or every order with
``property_order="any"`` (spelled out up to ``max_any_order_properties``
members, past it a rule that tracks the members seen), or the spelled-out subsets that enforce
``minProperties``/``maxProperties``; the keys that are not named become the
extra member (``additionalProperties``, ``patternProperties``,
``propertyNames``).
"""

from __future__ import annotations

import itertools

from ...errors import LimitExceeded
from ...ir.grammar import Unordered
from ...ir.nodes import EMPTY, NOTHING, Node, concat, is_nothing, optional, repeat, star
from . import _lexical as lx
from ._lexical import Layout, alt, container, container_parts, quoted
from ._load import Loc
from ._merged import Merged
from ._other_keys import other_keys_content
from ._values import _Undecided

__all__ = ["ObjectLowering"]


class ObjectLowering(Merged):
    """The object part of :class:`_norm._Norm`."""

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
        """Refuse a sequence of ``count`` properties, ``prefix`` optional ones first, too costly to build.

        The members that may come first (the optional ones before the first
        required one, and it) are each written about ``log2(prefix + 1)``
        times (see :meth:`_sequence`), the others once: bounded by a two
        hundredth of ``max_nfa_states`` (5,000 members with the defaults, about
        450 optional properties in a row; compiling such an object takes a
        few seconds).
        """
        copies = count + (prefix + 1) * (prefix + 1).bit_length()
        budget = max(1000, self.low.limits.max_nfa_states // 200)
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
        if self.low.property_order == "any":
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
            norm = type(self)(low)  # a fresh conjunction of the same class
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
                self.ptr,
                kw,
                f"is not enforced with more than {most} optional properties (limits.max_counted_optional_properties)",
            )
        if self.low.property_order == "any" and len(members) > 1:
            if len(members) <= self.low.limits.max_any_order_properties:
                return self._any_order(members, extra, layout, depth)
            # each member a parse stack after the "{" (see compile/unordered_frames.py): within max_stacks
            most = self.low.limits.max_stacks // 2
            if len(members) <= most:
                return self._unordered(members, extra, layout, depth)
            self.low.note(
                f"{self.ptr or '/'}: property_order 'any' is not enforced past {most} properties "
                "(limits.max_stacks / 2): the schema's order"
            )
        prefix = next((i for i, m in enumerate(members) if m[2]), len(members))
        self._check_copies(len(members), prefix)
        more = star(concat(sep, extra)) if extra is not None else EMPTY

        def after(a: int, b: int) -> Node:
            """Members ``a`` to ``b - 1`` once an item was written: each with its separator."""
            parts: list[Node] = []
            for _, member, required in members[a:b]:
                piece = concat(sep, member)
                parts += [piece if required else optional(piece), more]
            return concat(*parts)

        def first(a: int, b: int) -> Node:
            """The first item among members ``a`` to ``b - 1`` (all optional but maybe the last),
            then the rest of them after it.

            Halving keeps the IR at ``O(n log n)`` members and ``O(log n)`` deep; spelling out
            the rest of the object after each possible first item grew quadratically.
            """
            if b - a == 1:
                return concat(members[a][1], more)
            mid = (a + b) // 2
            return alt(concat(first(a, mid), after(mid, b)), first(mid, b))

        # the first item is a member up to the first required one, or an extra key
        last = min(prefix, len(members) - 1)
        heads = concat(first(0, last + 1), after(last + 1, len(members))) if members else NOTHING
        if extra is not None:
            heads = alt(heads, concat(extra, more, after(0, len(members))))
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

    def _unordered(
        self, members: list[tuple[str, Node, bool]], extra: Node | None, layout: Layout, depth: int
    ) -> Node:
        """The members in any order, each at most once: a rule of the grammar's ``unordered`` (see
        :class:`~tokensieve.ir.grammar.Unordered`), which tracks the members seen rather than
        spelling out their orders (``n!``, see :meth:`_any_order`)."""
        low = self.low
        n_req = sum(1 for m in members if m[2])
        opening, closing, empty = container_parts("{", "}", n_req == 0, layout, depth)
        refs = [low.add_rule(member) for _, member, _ in members]
        extra_ref = None if extra is None else low.add_rule(extra)
        sep_ref, close_ref = low.add_rule(layout.sep(depth)), low.add_rule(closing)
        one = alt(*refs, *(() if extra_ref is None else (extra_ref,)))
        # the body: a superset (repeats allowed) that names the rules; the automata stage runs the rule
        ref = low.add_rule(concat(one, star(concat(sep_ref, one)), close_ref))
        low.unordered[ref.name] = Unordered(
            tuple(r.name for r in refs),
            tuple(m[2] for m in members),
            None if extra_ref is None else extra_ref.name,
            sep_ref.name,
            close_ref.name,
        )
        return alt(concat(opening, ref), *(() if empty is None else (empty,)))
