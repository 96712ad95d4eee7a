"""The JIT kernels of :func:`~tokensieve.automata.determinize.determinize` for large NFAs.

Imported by :func:`~tokensieve.automata.kernels.load`, so that importing
:mod:`tokensieve` does not import numba; compiled once per machine
(``cache=True``) and run without the GIL.

:func:`closures_kernel` finds the epsilon closures of NFA nodes, a depth-first
search each; :func:`subsets_kernel` is the subset construction itself, the
plain algorithm: states in the order they are found, each state's positions
grouped by byte class, each group's follow sets united (a stamp per position
drops repeats; a group of one position takes the state of its follow set
when it was found before, as it mostly is) into a sorted subset, looked up in an open-addressing table of
64-bit hashes and compared element by element on a hash match, so the
automaton is exact.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: statuses of :func:`subsets_kernel`
OK, TOO_MANY_STATES, TOO_MUCH_WORK = 0, 1, 2

_MULT = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def closures_kernel(  # pragma: no cover - compiled
    targets: np.ndarray,
    pidx: np.ndarray,
    accept_node: int,
    accept_pos: int,
    eps_ptr: np.ndarray,
    eps_to: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, int]:
    """The epsilon closure of each node of ``targets``: ``(ptr, positions, work)``, each closure sorted.

    ``pidx[x]`` is the position of byte node ``x`` (-1: an epsilon node, whose
    successors are ``eps_to[eps_ptr[x]:eps_ptr[x + 1]]``); the accepting
    node counts as position ``accept_pos``. ``work``: the nodes visited.
    """
    n = pidx.shape[0]
    stamp = np.zeros(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    ptr = np.zeros(targets.shape[0] + 1, dtype=np.int64)
    out = np.empty(max(16, 2 * targets.shape[0]), dtype=np.int64)
    used = 0
    work = 0
    for i in range(targets.shape[0]):
        start = used
        mark = i + 1
        top = 0
        stack[top] = targets[i]
        top += 1
        stamp[targets[i]] = mark
        while top > 0:
            top -= 1
            x = stack[top]
            work += 1
            if used + 2 > out.shape[0]:
                grown = np.empty(2 * out.shape[0], dtype=np.int64)
                grown[:used] = out[:used]
                out = grown
            if pidx[x] >= 0:
                out[used] = pidx[x]
                used += 1
                continue
            if x == accept_node:
                out[used] = accept_pos
                used += 1
            for j in range(eps_ptr[x], eps_ptr[x + 1]):
                y = eps_to[j]
                if stamp[y] != mark:
                    stamp[y] = mark
                    stack[top] = y
                    top += 1
        out[start:used].sort()
        ptr[i + 1] = used
    return ptr, out[:used].copy(), work


@njit(cache=True, nogil=True, inline="always")
def _hash(values: np.ndarray, lo: int, hi: int) -> np.uint64:  # pragma: no cover - compiled
    h = np.uint64(hi - lo) * _MULT
    for i in range(lo, hi):
        h = (h ^ np.uint64(values[i])) * _MULT
        h ^= h >> np.uint64(29)
    return h


@njit(cache=True, nogil=True, inline="always")
def _grown(a: np.ndarray, need: int) -> np.ndarray:  # pragma: no cover - compiled
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True, nogil=True)
def subsets_kernel(  # noqa: C901 - one algorithm, kept whole  # pragma: no cover - compiled
    cl_ptr: np.ndarray,
    cl_pos: np.ndarray,
    c_ptr: np.ndarray,
    c_cls: np.ndarray,
    num_pos: int,
    num_classes: int,
    max_states: int,
    max_work: int,
) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Subset construction: ``(status, work, lengths, classes, targets, accepting)``.

    ``cl_ptr``/``cl_pos``: the start subset, then the follow set of each
    position (sorted); ``c_ptr``/``c_cls``: the byte classes of each position;
    position ``num_pos`` marks acceptance. States are numbered in the order
    they are found, from the start subset (0); each state's transitions by
    increasing class, dead ends left out. ``status`` is :data:`OK`, or
    :data:`TOO_MANY_STATES` past ``max_states`` states, or
    :data:`TOO_MUCH_WORK` past ``max_work`` steps (positions read and follow
    positions united), with the arrays then incomplete.
    """
    # the subsets: pool[s_ptr[s]:s_ptr[s + 1]]
    pool = np.empty(max(1024, 4 * cl_ptr[1]), dtype=np.int64)
    s_ptr = np.zeros(1025, dtype=np.int64)
    start_len = cl_ptr[1]
    pool[:start_len] = cl_pos[:start_len]
    s_ptr[1] = start_len
    count = 1
    cap = 1 << 12
    table_hash = np.zeros(cap, dtype=np.uint64)
    table_id = np.full(cap, -1, dtype=np.int64)
    h0 = _hash(pool, 0, start_len)
    table_hash[h0 & np.uint64(cap - 1)] = h0
    table_id[h0 & np.uint64(cap - 1)] = 0
    lengths = np.zeros(1024, dtype=np.int64)
    classes = np.empty(4096, dtype=np.int64)
    targets = np.empty(4096, dtype=np.int64)
    n_edges = 0
    # per class: the positions of the state being expanded that read it (a list per class, by counting)
    class_count = np.zeros(num_classes + 1, dtype=np.int64)
    class_fill = np.zeros(num_classes, dtype=np.int64)
    pairs = np.empty(1024, dtype=np.int64)
    stamp = np.zeros(num_pos + 1, dtype=np.int64)
    single = np.full(num_pos, -1, dtype=np.int64)  # per position: the state of its follow set, once found
    mark = 0
    work = 0
    s = 0
    while s < count:
        lo, hi = s_ptr[s], s_ptr[s + 1]
        # count the (class, position) pairs of the state, then place them by class
        class_count[:] = 0
        n_pairs = 0
        for i in range(lo, hi):
            p = pool[i]
            if p == num_pos:
                continue
            for k in range(c_ptr[p], c_ptr[p + 1]):
                class_count[c_cls[k] + 1] += 1
                n_pairs += 1
        work += hi - lo
        for c in range(num_classes):
            class_count[c + 1] += class_count[c]
        pairs = _grown(pairs, n_pairs)
        for c in range(num_classes):
            class_fill[c] = class_count[c]
        for i in range(lo, hi):
            p = pool[i]
            if p == num_pos:
                continue
            for k in range(c_ptr[p], c_ptr[p + 1]):
                c = c_cls[k]
                pairs[class_fill[c]] = p
                class_fill[c] += 1
        out = 0
        for c in range(num_classes):
            a, b = class_count[c], class_count[c + 1]
            if a == b:
                continue
            if b - a == 1 and single[pairs[a]] >= 0:  # one position: its follow set's state, found before
                classes = _grown(classes, n_edges + 1)
                targets = _grown(targets, n_edges + 1)
                classes[n_edges] = c
                targets[n_edges] = single[pairs[a]]
                n_edges += 1
                out += 1
                work += 1
                continue
            # the union of the follow sets, appended at the end of the pool (kept if it is new)
            mark += 1
            base = s_ptr[count]
            used = base
            for i in range(a, b):
                p = pairs[i]
                f_lo, f_hi = cl_ptr[p + 1], cl_ptr[p + 2]
                work += f_hi - f_lo
                pool = _grown(pool, used + f_hi - f_lo)
                for j in range(f_lo, f_hi):
                    q = cl_pos[j]
                    if stamp[q] != mark:
                        stamp[q] = mark
                        pool[used] = q
                        used += 1
            if used == base:
                continue
            if b - a > 1:
                pool[base:used].sort()
            h = _hash(pool, base, used)
            slot = h & np.uint64(cap - 1)
            target = -1
            while table_id[slot] >= 0:
                if table_hash[slot] == h:
                    t = table_id[slot]
                    t_lo, t_hi = s_ptr[t], s_ptr[t + 1]
                    if t_hi - t_lo == used - base:
                        same = True
                        for j in range(used - base):
                            if pool[t_lo + j] != pool[base + j]:
                                same = False
                                break
                        if same:
                            target = t
                            break
                slot = (slot + np.uint64(1)) & np.uint64(cap - 1)
            if target < 0:
                if count >= max_states:
                    return TOO_MANY_STATES, work, lengths[:s], classes[:n_edges], targets[:n_edges], np.zeros(0, dtype=np.bool_)
                target = count
                table_hash[slot] = h
                table_id[slot] = target
                count += 1
                s_ptr = _grown(s_ptr, count + 1)
                s_ptr[count] = used
                if 2 * count > cap:  # rehash into a table twice the size
                    cap *= 2
                    table_hash = np.zeros(cap, dtype=np.uint64)
                    table_id = np.full(cap, -1, dtype=np.int64)
                    for t in range(count):
                        ht = _hash(pool, s_ptr[t], s_ptr[t + 1])
                        st = ht & np.uint64(cap - 1)
                        while table_id[st] >= 0:
                            st = (st + np.uint64(1)) & np.uint64(cap - 1)
                        table_hash[st] = ht
                        table_id[st] = t
            if b - a == 1:
                single[pairs[a]] = target
            classes = _grown(classes, n_edges + 1)
            targets = _grown(targets, n_edges + 1)
            classes[n_edges] = c
            targets[n_edges] = target
            n_edges += 1
            out += 1
        lengths = _grown(lengths, s + 1)
        lengths[s] = out
        s += 1
        if work > max_work:
            return TOO_MUCH_WORK, work, lengths[:s], classes[:n_edges], targets[:n_edges], np.zeros(0, dtype=np.bool_)
    accepting = np.zeros(count, dtype=np.bool_)
    for t in range(count):
        accepting[t] = s_ptr[t + 1] > s_ptr[t] and pool[s_ptr[t + 1] - 1] == num_pos
    return OK, work, lengths[:count].copy(), classes[:n_edges].copy(), targets[:n_edges].copy(), accepting
