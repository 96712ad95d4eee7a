"""The JIT kernel of :func:`~tokensieve.automata.minimize_arrays.minimize_edges`.

Imported by :func:`~tokensieve.automata.kernels.load` (in the thread that loads
the walk kernels), so that importing :mod:`tokensieve` does not import numba;
compiled once per machine (``cache=True``) and run without the GIL.

The algorithm is Hopcroft's, in the form of Valmari and Lehtinen for partial
transition functions (*Efficient minimization of DFAs with partial transition
functions*, STACS 2008): two refinable partitions, one of the states (blocks)
and one of the transitions (cords: the transitions with one label into one
block), each split by the other until neither changes; ``O(m log n)`` for ``m``
transitions and ``n`` states. It needs every state reachable and able to reach
acceptance, which the callers' automata are (trimmed). The quotient is then
numbered breadth-first from the start state's block, successors in class
order, as :func:`~tokensieve.automata.minimize.minimize` numbers it.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _mark(e: int, elems: np.ndarray, loc: np.ndarray, set_of: np.ndarray, first: np.ndarray,
          marked: np.ndarray, touched: np.ndarray, n_touched: int) -> int:  # pragma: no cover - compiled
    """Move element ``e`` into the marked part at the front of its set; the new count of touched sets."""
    s = set_of[e]
    i = loc[e]
    j = first[s] + marked[s]
    elems[i] = elems[j]
    loc[elems[i]] = i
    elems[j] = e
    loc[e] = j
    if marked[s] == 0:
        touched[n_touched] = s
        n_touched += 1
    marked[s] += 1
    return n_touched


@njit(cache=True, nogil=True, inline="always")
def _split(count: int, elems: np.ndarray, set_of: np.ndarray, first: np.ndarray, past: np.ndarray,
           marked: np.ndarray, touched: np.ndarray, n_touched: int) -> int:  # pragma: no cover - compiled
    """Split every touched set into its marked and unmarked parts (the smaller one a new set); the new
    count of sets."""
    while n_touched > 0:
        n_touched -= 1
        s = touched[n_touched]
        j = first[s] + marked[s]
        if j == past[s]:
            marked[s] = 0
            continue
        if marked[s] <= past[s] - j:
            first[count] = first[s]
            past[count] = j
            first[s] = j
        else:
            past[count] = past[s]
            first[count] = j
            past[s] = j
        for i in range(first[count], past[count]):
            set_of[elems[i]] = count
        marked[s] = 0
        marked[count] = 0
        count += 1
    return count


@njit(cache=True, nogil=True)
def minimize_kernel(  # noqa: C901 - one algorithm, kept whole  # pragma: no cover - compiled
    n: int,
    ptr: np.ndarray,
    cls: np.ndarray,
    dst: np.ndarray,
    accepting: np.ndarray,
    start: int,
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The minimal automaton of a trimmed partial DFA, numbered breadth-first.

    ``ptr`` (``n + 1``), ``cls`` and ``dst`` are the transitions of state
    ``s`` at ``ptr[s]:ptr[s + 1]``, by increasing class (``int64``);
    ``accepting`` is ``bool (n,)``. Returns ``(count, src, cls, dst,
    accepting)`` of the quotient, sorted by ``(src, cls)``, state 0 the start.
    """
    m = dst.shape[0]
    size = max(n, m) + 1
    marked = np.zeros(size, dtype=np.int64)
    touched = np.empty(size, dtype=np.int64)
    tail = np.empty(m, dtype=np.int64)
    for s in range(n):
        for t in range(ptr[s], ptr[s + 1]):
            tail[t] = s
    # the blocks: one, then split by acceptance
    b_elems = np.arange(n, dtype=np.int64)
    b_loc = np.arange(n, dtype=np.int64)
    b_set = np.zeros(n, dtype=np.int64)
    b_first = np.zeros(n + 1, dtype=np.int64)
    b_past = np.zeros(n + 1, dtype=np.int64)
    b_past[0] = n
    b_count = 1
    n_touched = 0
    for s in range(n):
        if accepting[s]:
            n_touched = _mark(s, b_elems, b_loc, b_set, b_first, marked, touched, n_touched)
    b_count = _split(b_count, b_elems, b_set, b_first, b_past, marked, touched, n_touched)
    # the cords: the transitions by class (a counting sort)
    num_classes = 0
    for t in range(m):
        if cls[t] + 1 > num_classes:
            num_classes = cls[t] + 1
    per_class = np.zeros(num_classes + 1, dtype=np.int64)
    for t in range(m):
        per_class[cls[t] + 1] += 1
    for c in range(num_classes):
        per_class[c + 1] += per_class[c]
    c_elems = np.empty(m, dtype=np.int64)
    c_loc = np.empty(m, dtype=np.int64)
    c_set = np.empty(m, dtype=np.int64)
    c_first = np.zeros(m + 1, dtype=np.int64)
    c_past = np.zeros(m + 1, dtype=np.int64)
    fill = per_class[:-1].copy()
    for t in range(m):
        i = fill[cls[t]]
        fill[cls[t]] += 1
        c_elems[i] = t
        c_loc[t] = i
    c_count = 0
    for c in range(num_classes):
        if per_class[c + 1] > per_class[c]:
            c_first[c_count] = per_class[c]
            c_past[c_count] = per_class[c + 1]
            for i in range(per_class[c], per_class[c + 1]):
                c_set[c_elems[i]] = c_count
            c_count += 1
    # the transitions into each state
    in_ptr = np.zeros(n + 1, dtype=np.int64)
    for t in range(m):
        in_ptr[dst[t] + 1] += 1
    for s in range(n):
        in_ptr[s + 1] += in_ptr[s]
    in_fill = in_ptr[:-1].copy()
    incoming = np.empty(m, dtype=np.int64)
    for t in range(m):
        incoming[in_fill[dst[t]]] = t
        in_fill[dst[t]] += 1
    # refine each partition by the other until neither changes (every block but the first splits the cords)
    b = 1
    c = 0
    while c < c_count:
        n_touched = 0
        for i in range(c_first[c], c_past[c]):
            n_touched = _mark(tail[c_elems[i]], b_elems, b_loc, b_set, b_first, marked, touched, n_touched)
        b_count = _split(b_count, b_elems, b_set, b_first, b_past, marked, touched, n_touched)
        c += 1
        while b < b_count:
            n_touched = 0
            for i in range(b_first[b], b_past[b]):
                s = b_elems[i]
                for j in range(in_ptr[s], in_ptr[s + 1]):
                    n_touched = _mark(incoming[j], c_elems, c_loc, c_set, c_first, marked, touched, n_touched)
            c_count = _split(c_count, c_elems, c_set, c_first, c_past, marked, touched, n_touched)
            b += 1
    # the quotient, breadth-first from the start's block
    number = np.full(b_count, -1, dtype=np.int64)
    order = np.empty(b_count, dtype=np.int64)
    order[0] = b_set[start]
    number[b_set[start]] = 0
    found = 1
    edges = 0
    head = 0
    while head < found:
        rep = b_elems[b_first[order[head]]]
        head += 1
        for t in range(ptr[rep], ptr[rep + 1]):
            edges += 1
            nb = b_set[dst[t]]
            if number[nb] < 0:
                number[nb] = found
                order[found] = nb
                found += 1
    q_src = np.empty(edges, dtype=np.int64)
    q_cls = np.empty(edges, dtype=np.int64)
    q_dst = np.empty(edges, dtype=np.int64)
    q_acc = np.empty(found, dtype=np.bool_)
    e = 0
    for k in range(found):
        rep = b_elems[b_first[order[k]]]
        q_acc[k] = accepting[rep]
        for t in range(ptr[rep], ptr[rep + 1]):
            q_src[e] = k
            q_cls[e] = cls[t]
            q_dst[e] = number[b_set[dst[t]]]
            e += 1
    return found, q_src, q_cls, q_dst, q_acc
