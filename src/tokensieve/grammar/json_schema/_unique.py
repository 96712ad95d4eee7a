"""``uniqueItems`` over a small finite set of items, as one automaton that tracks the items used.

Spelling out every sequence of distinct items costs as many automaton states
as there are sequences (``n!`` orders). Here a state is *(items used so far,
position inside the current item or separator)*: ``2**n`` subsets times the
states of the items and of the separator, built at once with numpy.

The items' automata run side by side (a product) so that a state knows which
items are still possible and which one, if any, is complete. An item may only
start or go on while some item it can still become is unused; at a complete
item the separator's first bytes are merged into the state (the next item's
first bytes after a complete separator), which is exact as long as the merged
bytes do not overlap (true for JSON: a value never goes on with a blank or a
comma, nor starts with one). Overlaps, or too many states, give ``None`` and the
caller reports ``uniqueItems`` as not enforced.
"""

from __future__ import annotations

import numpy as np

from ...automata.build import ir_to_dfa
from ...automata.dfa import ByteDFA
from ...automata.ops import automaton_to_dfa, dfa_to_ir
from ...limits import Limits
from ..ir import Automaton, Node

__all__ = ["MAX_UNIQUE_STATES", "unique_items_automaton"]

#: Subsets times item and separator states at most this many (before minimisation).
MAX_UNIQUE_STATES = 1 << 15


def _item_product(items: list[ByteDFA]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The items' automata side by side: ``(table, alive, done)``.

    ``table`` ``(P, 256)``: product transitions (-1: none), state 0 the start;
    ``alive[p]``: bit set of the items still possible in ``p``; ``done[p]``: the
    item complete in ``p`` (-1: none). ``None`` when two items end together.
    """
    tables = [d.transitions.astype(np.int64) for d in items]
    dead = np.full(256, -1, dtype=np.int64)
    start = tuple(int(d.start) for d in items)
    ids = {start: 0}
    order = [start]
    rows: list[np.ndarray] = []
    for tup in order:
        cols = np.stack([tables[i][q] if q >= 0 else dead for i, q in enumerate(tup)])  # (n, 256)
        row = np.full(256, -1, dtype=np.int64)
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


def unique_items_automaton(
    items: list[Node], sep: Node, lo: int, hi: int | None, limits: Limits | None = None
) -> Automaton | None:
    """Non-empty sequences ``item sep item ...`` of distinct items, between ``lo`` and ``hi`` of them.

    Parameters
    ----------
    items
        The spellings of each item (distinct items, disjoint languages).
    sep
        The separator between two items.
    lo, hi
        Bounds on the number of items (``hi=None``: at most all of them); at least one.
    limits
        Resource bounds for compiling the pieces.

    Returns
    -------
    Automaton or None
        ``None`` when the automaton would exceed :data:`MAX_UNIQUE_STATES`
        states or the pieces' first and last bytes overlap (not exact).
    """
    n = len(items)
    if n == 0 or n > 15:
        return None
    lits = [ir_to_dfa(x, limits) for x in items]
    product = _item_product(lits)
    if product is None:
        return None
    table_i, alive, done = product
    sep_dfa = ir_to_dfa(sep, limits)
    table_s = sep_dfa.transitions.astype(np.int64)
    accept_s = np.asarray(sep_dfa.accepting, dtype=bool)
    p_count, m_count = table_i.shape[0], table_s.shape[0]
    local = p_count + m_count
    subsets = 1 << n
    if subsets * local > MAX_UNIQUE_STATES:
        return None
    top = n if hi is None else min(hi, n)
    least = max(lo, 1)
    s_ids = np.arange(subsets, dtype=np.int64)
    used = np.array([bin(s).count("1") for s in range(subsets)], dtype=np.int64)
    table = np.full((subsets, local, 256), -1, dtype=np.int64)
    accepting = np.zeros((subsets, local), dtype=bool)
    base = s_ids[:, None] * local  # (subsets, 1)

    def item_row(t: np.ndarray) -> np.ndarray:
        """Item-product targets ``t`` (256,) from every subset: kept while an unused item is still possible."""
        safe = np.maximum(t, 0)
        ok = (t >= 0)[None, :] & ((alive[safe][None, :] & ~s_ids[:, None]) != 0)
        return np.where(ok, base + safe[None, :], -1)

    sep_start_row = table_s[sep_dfa.start]
    for p in range(p_count):
        row = item_row(table_i[p])
        v = int(done[p])
        if v >= 0:
            fresh = (s_ids >> v) & 1 == 0
            count = used + 1
            accepting[:, p] = fresh & (count >= least) & (count <= top)
            go_on = fresh & (count < top)
            after = np.where(
                (sep_start_row >= 0)[None, :] & go_on[:, None],
                (s_ids | (1 << v))[:, None] * local + p_count + np.maximum(sep_start_row, 0)[None, :],
                -1,
            )
            merged = _merge(row, after)
            if merged is None:
                return None
            row = merged
        table[:, p] = row
    start_row = item_row(table_i[0])
    for m in range(m_count):
        t = table_s[m]
        row = np.where((t >= 0)[None, :], base + p_count + np.maximum(t, 0)[None, :], np.int64(-1))
        if accept_s[m]:
            merged = _merge(row, start_row)
            if merged is None:
                return None
            row = merged
        table[:, p_count + m] = row
    raw = ByteDFA(table.reshape(subsets * local, 256), accepting.reshape(-1), 0)
    return dfa_to_ir(automaton_to_dfa(dfa_to_ir(raw)))


def bracketed(node: Node, limits: Limits | None = None) -> Automaton:
    """``node`` (an array with its brackets) as one embedded automaton."""
    return dfa_to_ir(ir_to_dfa(node, limits))
