"""Lowering of the array constraints of a merged conjunction to IR.

``prefixItems``/``items`` become a sequence with bounded repetition;
``uniqueItems`` is spelled out over the distinct values an item may take, or
tracked by one automaton (``_unique``); ``contains`` with its bounds counts
the matching items.
"""

from __future__ import annotations

import math
from typing import Any

from ...ir.nodes import EMPTY, NOTHING, Node, concat, is_nothing, optional, repeat, star
from . import _lexical as lx
from ._lexical import Layout, alt, container
from ._load import Loc
from ._merged import Merged, _ArrComp
from ._unique import unique_array_automaton
from ._values import UNSUPPORTED, _Undecided, ckey

__all__ = ["ArrayLowering"]

#: ``uniqueItems``: past this many spelled-out orders times states per item, one automaton
#: tracks the set of items used instead (see :mod:`._unique`)
_SPELL_OUT_STATES = 20_000


class ArrayLowering(Merged):
    """The array part of :class:`_norm._Norm`."""

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
