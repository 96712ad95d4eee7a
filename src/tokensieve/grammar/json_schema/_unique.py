"""``uniqueItems`` over a small finite set of items, as one automaton that tracks the items used.

Spelling out every sequence of distinct items costs as many automaton states
as there are sequences (``n!`` orders). Here a state is *(items used so far,
position inside the current item or what follows it)*: ``2**n`` subsets times
the states of the items and of the text after an item, built at once with numpy,
brackets included.

The items' automata run side by side (a product) so that a state knows which
items are still possible and which one, if any, is complete. An item may only
start or go on while some item it can still become is unused. After an item,
the separator and the closing text (blanks and ``]``) run side by side too,
each only where the count of items allows it: the separator below the most
items, the closing text from the fewest on. At a complete item the first bytes
of what follows are merged into the state, and at a complete separator or
opening the next item's first bytes; this is exact as long as the merged bytes
do not overlap (true for JSON: a value never goes on with a blank, a comma or
a bracket, nor starts with one). Overlaps, or too many states, give ``None``
and the caller reports ``uniqueItems`` as not enforced.

The result is minimised once and embedded whole: the blanks before ``]`` and
those before the next ``,`` are told apart here, so the schema's automaton
splices it in without determinising it again.
"""

from __future__ import annotations

import numpy as np

from ...automata.build import ir_to_dfa
from ...automata.dfa import ByteDFA
from ...automata.ops import dfa_to_ir, minimal_class_dfa
from ...ir.nodes import Automaton, Node
from ...limits import Limits

__all__ = ["unique_array_automaton"]


def _byte_classes(dfas: list[ByteDFA]) -> tuple[np.ndarray, np.ndarray]:
    """``(first, class_of_byte)``: the bytes that no automaton of ``dfas`` tells apart, as classes.

    ``first[c]`` is the smallest byte of class ``c``; classes are numbered in that order.
    """
    columns = np.concatenate([d.transitions for d in dfas], axis=0).T  # (256, all states)
    _, first, inverse = np.unique(columns, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[np.asarray(inverse).reshape(-1)]


def _side_by_side(
    items: list[ByteDFA], first: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Automata side by side on the byte classes whose smallest bytes are ``first``: ``(table, alive, done)``.

    ``table`` ``(P, C)``: product transitions (-1: none), state 0 the start;
    ``alive[p]``: bit set of the automata still running in ``p``; ``done[p]``:
    the one complete in ``p`` (-1: none). ``None`` when two end together.
    """
    tables = [d.transitions.take(first, axis=1).astype(np.int64) for d in items]
    width = first.size
    dead = np.full(width, -1, dtype=np.int64)
    start = tuple(int(d.start) for d in items)
    ids = {start: 0}
    order = [start]
    rows: list[np.ndarray] = []
    for tup in order:
        cols = np.stack([tables[i][q] if q >= 0 else dead for i, q in enumerate(tup)])  # (n, C)
        row = np.full(width, -1, dtype=np.int64)
        live = np.flatnonzero((cols >= 0).any(axis=0))
        if live.size:
            uniq, inverse = np.unique(cols[:, live].T, axis=0, return_inverse=True)
            targets = []
            for nxt in map(tuple, uniq.tolist()):
                j = ids.get(nxt)
                if j is None:
                    j = ids[nxt] = len(order)
                    order.append(nxt)
                targets.append(j)
            row[live] = np.asarray(targets, dtype=np.int64)[inverse.reshape(-1)]
        rows.append(row)
    alive = np.zeros(len(order), dtype=np.int64)
    done = np.full(len(order), -1, dtype=np.int64)
    for p, tup in enumerate(order):
        for i, q in enumerate(tup):
            if q < 0:
                continue
            alive[p] |= 1 << i
            if items[i].accepting[q]:
                if done[p] >= 0:
                    return None  # two items spell the same text
                done[p] = i
    return np.stack(rows), alive, done


def _merge(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """Rows ``a`` and ``b`` (targets, -1: none) as one, or ``None`` where both have a byte."""
    both = (a >= 0) & (b >= 0)
    if both.any():
        return None
    return np.where(a >= 0, a, b)


def unique_array_automaton(
    items: list[Node],
    sep: Node,
    open_: Node,
    close: Node,
    empty: Node | None,
    lo: int,
    hi: int | None,
    limits: Limits | None = None,
) -> Automaton | None:
    """Arrays ``open_ item sep item ... close`` of distinct items, between ``lo`` and ``hi`` of them.

    Parameters
    ----------
    items
        The spellings of each item (distinct items, disjoint languages).
    sep
        The separator between two items.
    open_, close
        The text before the first item (``[`` and blanks) and after the last
        (blanks and ``]``).
    empty
        The spelling of the empty array, allowed as well (``None``: not allowed).
    lo, hi
        Bounds on the number of items (``hi=None``: at most all of them); the
        non-empty arrays have at least one.
    limits
        Resource bounds for compiling the pieces.

    Returns
    -------
    Automaton or None
        The minimal automaton, ``None`` when it would exceed
        :attr:`~tokensieve.Limits.max_unique_states` states or the pieces' first and last bytes
        overlap (not exact).
    """
    n = len(items)
    if n == 0 or n > 15:
        return None
    item_dfas = [ir_to_dfa(x, limits) for x in items]
    after_dfas = [ir_to_dfa(sep, limits), ir_to_dfa(close, limits)]  # done: 0 sep, 1 close
    opening_dfas = [ir_to_dfa(open_, limits)] + ([ir_to_dfa(empty, limits)] if empty is not None else [])
    first, class_of_byte = _byte_classes(item_dfas + after_dfas + opening_dfas)
    width = first.size
    product = _side_by_side(item_dfas, first)
    after = _side_by_side(after_dfas, first)
    opening = _side_by_side(opening_dfas, first)  # done: 0 open, 1 the empty array
    if product is None or after is None or opening is None:
        return None
    table_i, alive_i, done_i = product
    table_a, alive_a, done_a = after
    table_o, _, done_o = opening
    if done_a[0] >= 0:
        return None  # an empty separator or closing text: items would run together
    p_count, a_count, o_count = table_i.shape[0], table_a.shape[0], table_o.shape[0]
    local = p_count + a_count
    subsets = 1 << n
    if o_count + subsets * local > (limits or Limits()).max_unique_states:
        return None
    top = n if hi is None else min(hi, n)
    least = max(lo, 1)
    s_ids = np.arange(subsets, dtype=np.int64)
    used = np.bitwise_count(s_ids.astype(np.uint64)).astype(np.int64)
    # what may follow an item, by the count of items so far: bit 0 the separator, bit 1 the end
    allowed = np.where(used < top, 1, 0) | np.where(used >= least, 2, 0)
    base = o_count + s_ids[:, None] * local  # (subsets, 1)
    table = np.full((o_count + subsets * local, width), -1, dtype=np.int32)
    accepting = np.zeros(o_count + subsets * local, dtype=bool)

    def kept(t: np.ndarray, alive: np.ndarray, allow: np.ndarray, offset: int) -> np.ndarray:
        """Targets ``t`` (C,) of a product from every subset, at ``offset`` in the subset's states:
        kept where a running automaton of the target is one the subset allows (bit sets)."""
        safe = np.maximum(t, 0)
        ok = (t >= 0)[None, :] & ((alive[safe][None, :] & allow[:, None]) != 0)
        return np.where(ok, base + offset + safe[None, :], -1)

    def item_row(t: np.ndarray) -> np.ndarray:
        """Item-product targets: kept while an unused item is still possible."""
        return kept(t, alive_i, ~s_ids, 0)

    def after_row(t: np.ndarray) -> np.ndarray:
        """Follow-up targets: kept while a follow-up the count of items allows is running."""
        return kept(t, alive_a, allowed, p_count)

    grid = table[o_count:].reshape(subsets, local, width)  # a view: (subset, local state, byte class)
    final = accepting[o_count:].reshape(subsets, local)
    first_item = item_row(table_i[0])
    after_start = after_row(table_a[0])
    for p in range(p_count):
        row = item_row(table_i[p])
        v = int(done_i[p])
        if v >= 0:  # item v complete: on with its follow-up, from the subset that holds it
            fresh = (s_ids >> v) & 1 == 0
            grown = np.where(fresh, s_ids | (1 << v), 0)
            follow = np.where(fresh[:, None], after_start[grown], -1)
            merged = _merge(row, follow)
            if merged is None:
                return None
            row = merged
        grid[:, p] = row
    for a in range(a_count):
        row = after_row(table_a[a])
        if done_a[a] == 0:  # a complete separator: the next item
            merged = _merge(row, np.where((allowed[:, None] & 1) != 0, first_item, -1))
            if merged is None:
                return None
            row = merged
        elif done_a[a] == 1:  # the closing bracket
            final[:, p_count + a] = (allowed & 2) != 0
        grid[:, p_count + a] = row
    for o in range(o_count):
        row = table_o[o]
        if done_o[o] == 0:  # the opening complete: the first item
            merged = _merge(row, first_item[0])
            if merged is None:
                return None
            row = merged
        elif done_o[o] == 1:
            accepting[o] = True
        table[o] = row
    return dfa_to_ir(minimal_class_dfa(table, accepting, class_of_byte, 0))
