"""Subset construction on arrays, for NFAs too large for integer bit sets.

:func:`closures` computes the epsilon closures of many NFA nodes at once;
:func:`subsets_arrays` expands one breadth-first level of DFA states at a
time as sorted, deduplicated ``(state, class, follow position)`` triples,
hashing each target subset to 64 bits and comparing the subsets whose hashes
agree (a mismatch raises :class:`Collision`, and the caller falls back to the
exact list-based construction).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._arrays import sorted_unique
from ..limits import Limits
from .arrays import Work, csr, mix, same_segments, search, segment_sums, spans, too_many_states
from .nfa import ByteNFA

__all__ = ["Collision", "closures", "subsets_arrays"]

#: The array construction expands at most this many states per batch (a level of the
#: breadth-first search, or a slice of it): larger batches sort arrays that leave the cache.
_BATCH_STATES = 2048

#: Epsilon paths longer than this are followed by the per-node search.
_DEEP = 256


def closures(
    nfa: ByteNFA,
    targets: np.ndarray,
    pidx: np.ndarray,
    accept_pos: int,
    closure: Callable[[int], list[int]],
    work: Work,
) -> tuple[np.ndarray, np.ndarray]:
    """The epsilon closures of ``targets`` as ``(ptr, positions)``, all at once.

    A breadth-first search over ``(target, node)`` pairs, one step of every
    search per round; a sorted array of the pairs seen so far stops the
    cycles. Searches still running after :data:`_DEEP` rounds are finished by
    ``closure`` (the per-node search).
    """
    n = nfa.num_nodes
    is_byte = np.fromiter((r is not None for r in nfa.ranges), dtype=bool, count=n)
    eps_ptr, eps_to = csr([e if e is not None else () for e in nfa.eps])
    src = np.arange(len(targets), dtype=np.int64)
    node = targets
    seen = np.sort(src * n + node)
    out_src: list[np.ndarray] = []
    out_pos: list[np.ndarray] = []
    visited = len(seen)
    rounds = 0
    while len(src):
        rounds += 1
        if rounds > _DEEP:
            break
        byte = is_byte[node]
        out_src.append(src[byte])
        out_pos.append(pidx[node[byte]])
        hit = node == nfa.accept
        if hit.any():
            out_src.append(src[hit])
            out_pos.append(np.full(int(hit.sum()), accept_pos, dtype=np.int64))
        eps = ~byte
        idx, cnt = spans(eps_ptr, node[eps])
        keys = sorted_unique(np.repeat(src[eps] * n, cnt) + eps_to[idx])
        if len(keys) and len(seen):
            at = np.minimum(np.searchsorted(seen, keys), len(seen) - 1)
            keys = keys[seen[at] != keys]
        visited += len(keys)
        work.add(len(keys))
        seen = np.sort(np.concatenate([seen, keys]), kind="stable")
        src = keys // n
        node = keys - src * n
    deep = sorted_unique(src)
    if len(deep):  # long epsilon paths: redo those searches one by one
        keep_src = np.concatenate(out_src)
        keep_pos = np.concatenate(out_pos)
        keep = ~np.isin(keep_src, deep)
        out_src, out_pos = [keep_src[keep]], [keep_pos[keep]]
        targets_l = targets.tolist()
        for i in deep.tolist():
            got = closure(targets_l[i])
            out_src.append(np.full(len(got), i, dtype=np.int64))
            out_pos.append(np.array(got, dtype=np.int64))
    all_src = np.concatenate(out_src)
    all_pos = np.concatenate(out_pos)
    order = np.lexsort((all_pos, all_src))
    ptr = np.searchsorted(all_src[order], np.arange(len(targets) + 1))
    return ptr, all_pos[order]


class Collision(Exception):
    """Two different subsets hashed alike."""


_SALT = np.uint64(0x2545F4914F6CDD1D)


def _follow_sets(
    f_ptr: np.ndarray,
    f_pos: np.ndarray,
    c_ptr: np.ndarray,
    mixed: np.ndarray,
    num_pos: int,
    s0: np.ndarray,
    s0_hash: int,
    budget: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct nonempty follow sets other than the start subset: (hashes, a position of each).

    In the automata that schemas and grammars make, most states are the follow
    set of the one position just read, so :func:`subsets_arrays` registers
    them all up front and expands them in one batch instead of one
    breadth-first level (often of one or two states) at a time; the
    unreachable ones are dropped at the end. When expanding them all would
    cost more than ``budget`` steps (automata whose states are mostly unions),
    none are returned and the construction goes level by level.
    """
    none = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    f_len = np.diff(f_ptr)
    live = np.flatnonzero(f_len > 0)
    if not len(live):
        return none
    f_hash = segment_sums(mixed[f_pos], f_len) + mix(f_len.astype(np.uint64))
    uh, first = np.unique(f_hash[live], return_index=True)
    reps = live[first]
    # the (class, follow position) pairs the expansion of a subset adds per position in it
    weight = np.append(np.diff(c_ptr) * f_len, 0)  # the acceptance mark adds none
    r_idx, _ = spans(f_ptr, reps)
    if int(weight[f_pos[r_idx]].sum()) > budget:
        return none
    same = reps[np.searchsorted(uh, f_hash[live])]
    if not same_segments(f_pos, f_ptr, live, f_pos, f_ptr, same):
        raise Collision
    new = uh != np.uint64(s0_hash)
    if not new.all():
        s0_ptr = np.array([0, len(s0)], dtype=np.int64)
        if not same_segments(f_pos, f_ptr, reps[~new], s0, s0_ptr, np.zeros(1, dtype=np.int64)):
            raise Collision
        uh, reps = uh[new], reps[new]
    return uh, reps


def subsets_arrays(
    cl_ptr: np.ndarray,
    cl_pos: np.ndarray,
    c_ptr: np.ndarray,
    c_cls: np.ndarray,
    num_pos: int,
    num_classes: int,
    limits: Limits,
    work: Work,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Subset construction one breadth-first level at a time, on arrays.

    A level's states are expanded to ``(state, class, follow position)``
    triples, sorted and deduplicated; each ``(state, class)`` run is a target
    subset, hashed to 64 bits. Subsets with equal hashes are compared element
    by element (a mismatch raises :class:`Collision`), so the automaton is
    exactly the one of the list-based construction, with the empty target
    subsets (dead ends) left out. Returns ``(lengths, classes, targets,
    accepting)`` as arrays. ``cl_ptr``/``cl_pos``: the start subset, then the
    follow set of each position (sorted); ``c_ptr``/``c_cls``: the classes of
    each position.
    """
    width = num_pos + 1  # position num_pos marks acceptance
    f_ptr, f_pos = cl_ptr[1:] - cl_ptr[1], cl_pos[cl_ptr[1] :]
    mixed = mix(np.arange(width, dtype=np.uint64) + _SALT)
    max_states = limits.max_dfa_states
    # the subsets found so far, state by state: pool[ptr[s]:ptr[s + 1]] (sorted)
    s0 = cl_pos[: cl_ptr[1]]
    s0_len = np.array([len(s0)], dtype=np.int64)
    s0_hash = int((segment_sums(mixed[s0], s0_len) + mix(s0_len.astype(np.uint64)))[0])
    uh, reps = _follow_sets(f_ptr, f_pos, c_ptr, mixed, num_pos, s0, s0_hash, (work.limit - work.done) // 4)
    r_idx, r_len = spans(f_ptr, reps)
    pool = np.empty(max(1024, 2 * (len(s0) + len(r_idx))), dtype=np.int64)
    pool[: len(s0)] = s0
    pool[len(s0) : len(s0) + len(r_idx)] = f_pos[r_idx]
    count = 1 + len(reps)
    ptr = np.zeros(max(1024, 2 * count + 1), dtype=np.int64)
    ptr[1] = len(s0)
    np.cumsum(r_len, out=ptr[2 : count + 1])
    ptr[2 : count + 1] += len(s0)
    accepting = [bool(len(s0)) and int(s0[-1]) == num_pos]
    accepting.extend((f_pos[f_ptr[reps + 1] - 1] == num_pos).tolist())
    ids = dict(zip(uh.tolist(), range(1, count), strict=True))
    ids[s0_hash] = 0
    lengths: list[np.ndarray] = []
    classes: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    cap = max_states + len(reps)  # the follow sets may be unreachable: counted at the end
    lo, hi = 0, min(count, _BATCH_STATES)
    while lo < hi:
        idx, cnt = spans(ptr, np.arange(lo, hi, dtype=np.int64))
        sp = pool[idx]
        owner = np.repeat(np.arange(hi - lo, dtype=np.int64), cnt)
        keep = sp < num_pos
        sp, owner = sp[keep], owner[keep]
        ci, ccnt = spans(c_ptr, sp)
        sc = np.repeat(owner * num_classes, ccnt) + c_cls[ci]
        fi, fcnt = spans(f_ptr, np.repeat(sp, ccnt))
        work.add(len(fi) + len(sp))
        key = sorted_unique(np.repeat(sc * width, fcnt) + f_pos[fi])
        if not len(key):  # no transitions at all
            lengths.append(np.zeros(hi - lo, dtype=np.int64))
            lo, hi = hi, min(count, hi + _BATCH_STATES)
            continue
        sc = key // width
        f = key - sc * width
        heads = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
        seg_ptr = np.r_[heads, len(key)]
        seg_len = np.diff(seg_ptr)
        seg_sc = sc[heads]
        h = segment_sums(mixed[f], seg_len) + mix(seg_len.astype(np.uint64))
        uh, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        rep = first[inverse]
        other = np.flatnonzero(rep != np.arange(len(rep)))
        if not same_segments(f, seg_ptr, other, f, seg_ptr, rep[other]):
            raise Collision
        # look the distinct subsets up
        tid = np.empty(len(uh), dtype=np.int64)
        fresh: list[int] = []
        found: list[int] = []
        for i, hv in enumerate(uh.tolist()):
            j = ids.get(hv)
            if j is None:
                j = ids[hv] = count + len(fresh)
                fresh.append(i)
            else:
                found.append(i)
            tid[i] = j
        if found:
            fa = np.array(found, dtype=np.int64)
            if not same_segments(f, seg_ptr, first[fa], pool, ptr, tid[fa]):
                raise Collision
        if fresh:
            n_new = len(fresh)
            if count + n_new > cap:
                raise too_many_states(limits)
            segs = first[np.array(fresh, dtype=np.int64)]
            new_idx, new_len = spans(seg_ptr, segs)
            vals = f[new_idx]
            used = int(ptr[count])
            need = used + len(vals)
            if need > len(pool):
                pool = np.concatenate([pool, np.empty(max(need, 2 * len(pool)) - len(pool), dtype=np.int64)])
            pool[used:need] = vals
            if count + n_new + 1 > len(ptr):
                ptr = np.concatenate(
                    [ptr, np.zeros(max(count + n_new + 1, 2 * len(ptr)) - len(ptr), dtype=np.int64)]
                )
            np.cumsum(new_len, out=ptr[count + 1 : count + n_new + 1])
            ptr[count + 1 : count + n_new + 1] += used
            accepting.extend((f[seg_ptr[segs + 1] - 1] == num_pos).tolist())
            count += n_new
        state = seg_sc // num_classes
        lengths.append(np.bincount(state, minlength=hi - lo))
        classes.append(seg_sc - state * num_classes)
        targets.append(tid[inverse])
        lo, hi = hi, min(count, hi + _BATCH_STATES)
    return _reachable_part(
        np.concatenate(lengths),
        np.concatenate(classes),
        np.concatenate(targets),
        np.array(accepting, dtype=bool),
        max_states,
        limits,
    )


def _reachable_part(
    lengths: np.ndarray,
    classes: np.ndarray,
    targets: np.ndarray,
    accepting: np.ndarray,
    max_states: int,
    limits: Limits,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The states reachable from state 0, renumbered in their order, with their transitions."""
    n = len(lengths)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    keep = search(ptr, targets, np.zeros(1, dtype=np.int64), n)
    kept = int(np.count_nonzero(keep))
    if kept > max_states:
        raise too_many_states(limits)
    if kept == n:
        return lengths, classes, targets, accepting
    new_id = np.cumsum(keep) - 1
    edge_keep = np.repeat(keep, lengths)
    return lengths[keep], classes[edge_keep], new_id[targets[edge_keep]], accepting[keep]
