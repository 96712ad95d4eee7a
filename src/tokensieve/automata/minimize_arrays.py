"""Trimming and minimisation of large DFAs over byte classes, on arrays.

The array counterparts of :mod:`.minimize` for automata of more than
:data:`SMALL_EDGES` transitions, where numpy's per-call cost pays off:
:class:`EdgeDFA` holds the transitions as sorted ``(source, class, target)``
arrays, :func:`trim_edges` drops states that cannot reach acceptance and
:func:`minimize_edges` gives the minimal automaton, numbered as
:func:`~tokensieve.automata.minimize.minimize` numbers it.
"""

from __future__ import annotations

import numpy as np

from .arrays import mix, search, segment_sums, spans
from .determinize import Row
from .kernels import minimize_kernel
from .minimize import minimize

__all__ = ["SMALL_EDGES", "EdgeDFA", "minimize_edges", "trim_edges"]

#: Automata with at most this many transitions are minimised by the list-based
#: code above; numpy's per-call overhead only pays off beyond.
SMALL_EDGES = 4096

_ACC = np.uint64(0x9E3779B97F4A7C15)
# a transition's key: the target's class shifted left by this, or'ed with the byte class
_SHIFT = np.uint64(9)
_CORE = np.int64(1) << 40  # target class of "some state on or before a cycle"
# levels of at most this many states are done in plain Python
_NARROW = 32
#: :func:`_hopcroft` goes on in plain Python once a round has at most this many pending states
_NARROW_ROUND = 16


class EdgeDFA:
    """A partial DFA over byte classes as arrays: ``(source, class, target)`` sorted by ``(source, class)``.

    Attributes
    ----------
    num_states : int
    src, cls, dst : numpy.ndarray
        ``int64`` transitions, sorted by ``(src, cls)``.
    accepting : numpy.ndarray
        ``bool (num_states,)``.
    start : int
    """

    __slots__ = ("num_states", "src", "cls", "dst", "accepting", "start")

    def __init__(
        self,
        num_states: int,
        src: np.ndarray,
        cls: np.ndarray,
        dst: np.ndarray,
        accepting: np.ndarray,
        start: int = 0,
    ) -> None:
        self.num_states = int(num_states)
        self.src = src
        self.cls = cls
        self.dst = dst
        self.accepting = accepting
        self.start = int(start)

    @classmethod
    def from_rows(cls, rows: list[Row], accepting: list[bool], start: int = 0) -> EdgeDFA:
        """The arrays of a list-based automaton."""
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        flat = np.array([x for r in rows for e in r for x in e], dtype=np.int64).reshape(-1, 2)
        src = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
        return cls(
            len(rows), src, flat[:, 0].copy(), flat[:, 1].copy(), np.array(accepting, dtype=bool), start
        )

    def to_rows(self) -> tuple[list[Row], list[bool]]:
        """``(rows, accepting)`` as the list-based functions take them."""
        ptr = np.searchsorted(self.src, np.arange(self.num_states + 1)).tolist()
        pairs = list(zip(self.cls.tolist(), self.dst.tolist(), strict=True))
        return [pairs[ptr[s] : ptr[s + 1]] for s in range(self.num_states)], self.accepting.tolist()

    def ptr(self) -> np.ndarray:
        """``ptr[s] .. ptr[s + 1] - 1``: the transitions of state ``s``."""
        return np.searchsorted(self.src, np.arange(self.num_states + 1))


def _restrict_edges(dfa: EdgeDFA, keep: np.ndarray) -> EdgeDFA:
    """The sub-automaton on the states ``keep`` (a bool mask), renumbered in order."""
    idx = np.flatnonzero(keep)
    renum = np.full(dfa.num_states, -1, dtype=np.int64)
    renum[idx] = np.arange(len(idx))
    ok = keep[dfa.src] & keep[dfa.dst]
    return EdgeDFA(
        len(idx),
        renum[dfa.src[ok]],
        dfa.cls[ok],
        renum[dfa.dst[ok]],
        dfa.accepting[idx],
        int(renum[dfa.start]),
    )


def trim_edges(dfa: EdgeDFA, reachable: bool = True) -> EdgeDFA | None:
    """Remove the states that cannot reach acceptance (and, unless ``reachable``, the unreachable ones).

    Returns
    -------
    EdgeDFA or None
        The survivors in their old order (start included), or ``None`` when
        the language is empty.
    """
    n = dfa.num_states
    if not reachable:
        keep = search(dfa.ptr(), dfa.dst, np.array([dfa.start], dtype=np.int64), n)
        if not keep.all():
            dfa = _restrict_edges(dfa, keep)
            n = dfa.num_states
    order = np.argsort(dfa.dst, kind="stable")
    rptr = np.searchsorted(dfa.dst[order], np.arange(n + 1))
    alive = search(rptr, dfa.src[order], np.flatnonzero(dfa.accepting), n)
    if not alive[dfa.start]:
        return None
    if alive.all():
        return dfa
    return _restrict_edges(dfa, alive)


def minimize_edges(dfa: EdgeDFA) -> EdgeDFA:
    """Minimise a trimmed partial DFA given as arrays.

    Once the automata kernels are loaded (:mod:`.kernels`), by the JIT kernel
    of :mod:`._minimize_kernel` (Hopcroft's algorithm for partial DFAs, exact).
    Until then, on arrays: the states that reach no cycle get their classes level by level from
    the sinks up (Revuz: two such states are equivalent iff they agree on
    acceptance and on the class of the target of each transition); the
    others are refined by Hopcroft's algorithm, one round per batch of
    pending splitters, on a refinable partition held in arrays. Signatures
    are hashed to 64 bits; the final partition is checked to be a congruence
    respecting acceptance (hash collisions can only merge, so it is then the
    coarsest), else the list-based :func:`minimize` is used.

    Returns
    -------
    EdgeDFA
        Minimal, numbered breadth-first from the start state (0), successors
        by increasing class, as :func:`minimize` numbers.
    """
    n = dfa.num_states
    src, cls, dst, acc = dfa.src, dfa.cls, dfa.dst, dfa.accepting
    ptr = dfa.ptr()
    kernel = minimize_kernel()
    if kernel is not None:
        count, q_src, q_cls, q_dst, q_acc = kernel(
            n, _plain(ptr, np.int64), _plain(cls, np.int64), _plain(dst, np.int64), _plain(acc, np.bool_), dfa.start
        )
        return EdgeDFA(count, q_src, q_cls, q_dst, q_acc, 0)
    block = _classes(n, ptr, src, cls, dst, acc)
    if block is None or not _is_congruence(block, ptr, src, cls, dst, acc):
        rows, accepting = dfa.to_rows()
        rows2, acc2 = minimize(rows, accepting, dfa.start)
        return EdgeDFA.from_rows(rows2, acc2)
    return _quotient(block, ptr, cls, dst, acc, dfa.start)


def _plain(values: np.ndarray, dtype: type) -> np.ndarray:
    """``values`` as a writable, contiguous array of ``dtype`` (the kernel is loaded for those only)."""
    return np.require(values, dtype, ("C", "W"))


def _classes(
    n: int, ptr: np.ndarray, src: np.ndarray, cls: np.ndarray, dst: np.ndarray, acc: np.ndarray
) -> np.ndarray | None:
    """Each state's equivalence class (hashed signatures; see :func:`minimize_edges`)."""
    order = np.argsort(dst, kind="stable")
    r_src = src[order]
    rptr = np.searchsorted(dst[order], np.arange(n + 1))
    ucls = cls.astype(np.uint64)
    acc_h = np.where(acc, _ACC, np.uint64(0))
    # Revuz on the states that reach no cycle, level by level from the sinks
    remaining = np.diff(ptr)
    cid = np.full(n, -1, dtype=np.int64)
    cid_l = [-1] * n  # the same, for the narrow levels done in plain Python
    lists: tuple[list[int], ...] | None = None
    count = 0
    frontier = np.flatnonzero(remaining == 0)
    while len(frontier):
        if len(frontier) <= _NARROW:
            # a narrow level (long chains): exact keys in plain Python beat numpy's call overhead
            if lists is None:
                lists = (
                    ptr.tolist(),
                    cls.tolist(),
                    dst.tolist(),
                    rptr.tolist(),
                    r_src.tolist(),
                    acc.tolist(),
                )
            ptr_l, cls_l, dst_l, rptr_l, rsrc_l, acc_l = lists
            ids: dict[tuple[object, ...], int] = {}
            preds_l: list[int] = []
            for x in frontier.tolist():
                a, b = ptr_l[x], ptr_l[x + 1]
                key = (acc_l[x], tuple(cls_l[a:b]), tuple([cid_l[t] for t in dst_l[a:b]]))
                c = ids.get(key)
                if c is None:
                    c = ids[key] = count + len(ids)
                cid_l[x] = c
                preds_l.extend(rsrc_l[rptr_l[x] : rptr_l[x + 1]])
            count += len(ids)
            cid[frontier] = [cid_l[x] for x in frontier.tolist()]
            if len(preds_l) > 1:
                preds, dec = np.unique(np.array(preds_l, dtype=np.int64), return_counts=True)
            else:
                preds, dec = np.array(preds_l, dtype=np.int64), np.ones(len(preds_l), dtype=np.int64)
        else:
            idx, counts = spans(ptr, frontier)
            keys = (cid[dst[idx]].astype(np.uint64) << _SHIFT) | ucls[idx]
            h = acc_h[frontier] + segment_sums(mix(keys), counts)
            uniq, inverse = np.unique(h, return_inverse=True)
            got = count + inverse.reshape(-1)
            cid[frontier] = got
            for x, c in zip(frontier.tolist(), got.tolist(), strict=True):
                cid_l[x] = c
            count += len(uniq)
            ridx, _ = spans(rptr, frontier)
            preds, dec = np.unique(r_src[ridx], return_counts=True)
        remaining[preds] -= dec
        frontier = preds[remaining[preds] == 0]
    core = np.flatnonzero(cid < 0)
    if not len(core):
        return cid
    # the others: the initial partition by acceptance and (class, class of target or "core") per transition
    m = len(core)
    local = np.full(n, -1, dtype=np.int64)
    local[core] = np.arange(m)
    idx, counts = spans(ptr, core)
    tc = cid[dst[idx]]
    keys = (np.where(tc < 0, _CORE, tc).astype(np.uint64) << _SHIFT) | ucls[idx]
    h = acc_h[core] + segment_sums(mix(keys), counts)
    inner = tc < 0  # transitions between core states
    e_src = np.repeat(np.arange(m, dtype=np.int64), counts)[inner]
    e_cls = cls[idx][inner]
    e_dst = local[dst[idx][inner]]
    sub = _hopcroft(m, h, e_src, e_cls, e_dst)
    cid[core] = count + sub
    return cid


def _hopcroft(m: int, h0: np.ndarray, e_src: np.ndarray, e_cls: np.ndarray, e_dst: np.ndarray) -> np.ndarray:
    """Coarsest refinement of the partition by ``h0`` that is stable for the transitions given.

    A refinable partition: ``elems`` lists the states block by block, block
    ``b`` occupying ``elems[first[b]:end[b]]``, and ``where[s]`` is the index of
    state ``s`` in ``elems``. A round takes every pending block as a splitter
    at once, hashes each predecessor's set of (class, splitter) pairs, splits
    every touched block by those hashes, moves the touched states to the front
    of their block's segment and queues every piece but the largest.
    """
    elems = np.argsort(h0, kind="stable")
    hs = h0[elems]
    heads = np.flatnonzero(np.r_[True, hs[1:] != hs[:-1]])
    nblocks = len(heads)
    first = np.zeros(m + 1, dtype=np.int64)
    end = np.zeros(m + 1, dtype=np.int64)
    first[:nblocks] = heads
    end[:nblocks] = np.r_[heads[1:], m]
    block = np.empty(m, dtype=np.int64)
    block[elems] = np.repeat(np.arange(nblocks), np.diff(np.r_[heads, m]))
    where = np.empty(m, dtype=np.int64)
    where[elems] = np.arange(m)
    order = np.argsort(e_dst, kind="stable")
    r_src, r_cls = e_src[order], e_cls[order].astype(np.uint64)
    rptr = np.searchsorted(e_dst[order], np.arange(m + 1))
    touched_mark = np.zeros(m, dtype=bool)
    # every block but the largest is a splitter (the transitions into the others,
    # or to no state, are told apart by the initial partition already)
    sizes = end[:nblocks] - first[:nblocks]
    largest = int(np.argmax(sizes))
    pending = np.concatenate([elems[: first[largest]], elems[end[largest] : m]])
    while len(pending):
        if len(pending) <= _NARROW_ROUND:
            # long chains split one state at a time: the rounds left are narrow, in plain Python
            return _finish_rounds(block, pending, r_src, r_cls, rptr)
        idx, counts = spans(rptr, pending)
        if not len(idx):
            break
        sig = mix((np.repeat(block[pending], counts).astype(np.uint64) << _SHIFT) | r_cls[idx])
        p = r_src[idx]
        o = np.argsort(p, kind="stable")
        ps = p[o]
        heads = np.flatnonzero(np.r_[True, ps[1:] != ps[:-1]])
        states = ps[heads]
        hp = segment_sums(sig[o], np.diff(np.r_[heads, len(ps)]))
        bp = block[states]
        o = np.lexsort((hp, bp))
        states, bp, hp = states[o], bp[o], hp[o]
        new_block = np.r_[True, bp[1:] != bp[:-1]]
        new_group = new_block | np.r_[True, hp[1:] != hp[:-1]]
        bheads = np.flatnonzero(new_block)
        k = np.diff(np.r_[bheads, len(states)])  # touched states per touched block
        tb = bp[bheads]
        size = end[tb] - first[tb]
        groups_per_block = np.add.reduceat(new_group.astype(np.int64), bheads)
        splits = (groups_per_block > 1) | (k < size)
        if not splits.any():
            pending = np.zeros(0, dtype=np.int64)
            continue
        # keep the touched states of the blocks that split
        sel = np.repeat(splits, k)
        states, bp, new_group = states[sel], bp[sel], new_group[sel]
        tb, k, size = tb[splits], k[splits], size[splits]
        s0 = first[tb]
        rem = size - k
        # move the touched states to the front of their block: swap the untouched
        # states found in the front part with the touched ones found behind it
        touched_mark[states] = True
        front = np.repeat(s0, k) + (np.arange(len(states)) - np.repeat(np.cumsum(k) - k, k))
        at_front = elems[front]
        holes = at_front[~touched_mark[at_front]]
        behind = where[states] >= np.repeat(s0 + k, k)
        out_pos = where[states[behind]]
        elems[out_pos] = holes
        where[holes] = out_pos
        elems[front] = states
        where[states] = front
        touched_mark[states] = False
        # pieces: the groups (in order) at the front, then the untouched rest
        gh = np.flatnonzero(new_group)
        gsize = np.diff(np.r_[gh, len(states)])
        g_block_idx = np.repeat(np.arange(len(tb)), k)[gh]
        g_start = front[gh]
        # the largest piece of each block keeps its number
        big = np.zeros(len(tb), dtype=np.int64)
        np.maximum.at(big, g_block_idx, gsize)
        rest_keeps = rem >= big
        # first group of maximal size in each block, when the rest does not keep
        is_max = gsize == big[g_block_idx]
        first_max = np.full(len(tb), len(gh), dtype=np.int64)
        np.minimum.at(first_max, g_block_idx, np.where(is_max, np.arange(len(gh)), len(gh)))
        keeps = np.zeros(len(gh), dtype=bool)
        keeper = first_max[~rest_keeps]
        keeps[keeper] = True
        # new numbers for the groups that do not keep, then for the rests that do not keep
        g_new = ~keeps
        n_g = int(g_new.sum())
        g_ids = np.empty(len(gh), dtype=np.int64)
        g_ids[keeps] = tb[g_block_idx[keeps]]
        g_ids[g_new] = nblocks + np.arange(n_g)
        nblocks += n_g
        r_new = ~rest_keeps & (rem > 0)
        n_r = int(r_new.sum())
        r_ids = nblocks + np.arange(n_r)
        nblocks += n_r
        # bounds
        first[g_ids] = g_start
        end[g_ids] = g_start + gsize
        rest_ids = np.where(rest_keeps, tb, -1)
        rest_ids[r_new] = r_ids
        has_rest = rem > 0
        first[rest_ids[has_rest]] = (s0 + k)[has_rest]
        end[rest_ids[has_rest]] = (s0 + size)[has_rest]
        # block numbers
        block[states] = np.repeat(g_ids, gsize)
        moved_rest = np.zeros(0, dtype=np.int64)
        if n_r:
            rs0 = (s0 + k)[r_new]
            rlen = rem[r_new]
            pos = np.repeat(rs0, rlen) + (
                np.arange(int(rlen.sum())) - np.repeat(np.cumsum(rlen) - rlen, rlen)
            )
            moved_rest = elems[pos]
            block[moved_rest] = np.repeat(r_ids, rlen)
        pending = np.concatenate([states[np.repeat(g_new, gsize)], moved_rest])
    return block


def _finish_rounds(
    block: np.ndarray, pending: np.ndarray, r_src: np.ndarray, r_cls: np.ndarray, rptr: np.ndarray
) -> np.ndarray:
    """The rounds of :func:`_hopcroft` from its current partition on, in plain Python.

    The same rounds: each state with a transition into a pending state is
    keyed by its block and the (block, class) pairs of those transitions
    (exact keys, not hashes); a block whose touched states differ in key, or
    that has untouched states, splits; its largest piece keeps its number (the
    untouched rest on a tie) and the other pieces are pending next. A round
    costs in proportion to the transitions into the pending states, not to
    the automaton, which pays when they are a handful (long chains split one
    state per round).
    """
    block_of = block.tolist()
    members: dict[int, set[int]] = {}
    for q, b in enumerate(block_of):
        members.setdefault(b, set()).add(q)
    next_id = max(members) + 1 if members else 0
    bounds, src_l, cls_l = rptr.tolist(), r_src.tolist(), r_cls.tolist()
    todo = pending.tolist()
    while todo:
        sigs: dict[int, list[tuple[int, int]]] = {}
        for p in todo:
            bp = block_of[p]
            for e in range(bounds[p], bounds[p + 1]):
                sigs.setdefault(src_l[e], []).append((bp, cls_l[e]))
        by_block: dict[int, dict[tuple[tuple[int, int], ...], list[int]]] = {}
        for q, sig in sigs.items():
            sig.sort()
            by_block.setdefault(block_of[q], {}).setdefault(tuple(sig), []).append(q)
        todo = []
        for b, groups in by_block.items():
            pieces = list(groups.values())
            touched = sum(len(g) for g in pieces)
            size = len(members[b])
            if len(pieces) == 1 and touched == size:
                continue
            rest = size - touched
            big = max(len(g) for g in pieces)
            old = members[b]
            if rest >= big:
                keeper = None  # the untouched rest keeps the number
                for g in pieces:
                    old.difference_update(g)
            else:
                keeper = next(i for i, g in enumerate(pieces) if len(g) == big)
                left = old
                for g in pieces:
                    left.difference_update(g)
                members[b] = set(pieces[keeper])
                if left:
                    members[next_id] = left
                    for q in left:
                        block_of[q] = next_id
                    todo.extend(left)
                    next_id += 1
            for i, g in enumerate(pieces):
                if i == keeper:
                    continue
                members[next_id] = set(g)
                for q in g:
                    block_of[q] = next_id
                todo.extend(g)
                next_id += 1
    return np.array(block_of, dtype=np.int64)


def _is_congruence(
    block: np.ndarray, ptr: np.ndarray, src: np.ndarray, cls: np.ndarray, dst: np.ndarray, acc: np.ndarray
) -> bool:
    """Whether every state agrees with its block's first state on acceptance and on each transition."""
    n = len(block)
    count = int(block.max()) + 1
    rep = np.full(count, n, dtype=np.int64)
    np.minimum.at(rep, block, np.arange(n))
    r = rep[block]
    if not np.array_equal(acc, acc[r]):
        return False
    deg = np.diff(ptr)
    if not np.array_equal(deg, deg[r]):
        return False
    mine = np.arange(len(src), dtype=np.int64)
    theirs = ptr[r][src] + (mine - ptr[src])
    return bool(np.array_equal(cls, cls[theirs]) and np.array_equal(block[dst], block[dst[theirs]]))


def _quotient(
    block: np.ndarray, ptr: np.ndarray, cls: np.ndarray, dst: np.ndarray, acc: np.ndarray, start: int
) -> EdgeDFA:
    """The quotient automaton, numbered breadth-first from the start's block."""
    n = len(block)
    count = int(block.max()) + 1
    rep = np.full(count, n, dtype=np.int64)
    np.minimum.at(rep, block, np.arange(n))
    # quotient transitions in terms of blocks
    q_ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(ptr[rep + 1] - ptr[rep], out=q_ptr[1:])
    idx, _ = spans(ptr, rep)
    q_cls = cls[idx]
    q_dst = block[dst[idx]]
    perm = _breadth_first(int(block[start]), q_ptr, q_dst)
    number = np.empty(count, dtype=np.int64)
    number[perm] = np.arange(count, dtype=np.int64)
    e, counts = spans(q_ptr, perm)
    return EdgeDFA(
        count,
        np.repeat(np.arange(count, dtype=np.int64), counts),
        q_cls[e],
        number[q_dst[e]],
        acc[rep[perm]],
        0,
    )


def _breadth_first(start: int, ptr: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The states in breadth-first order from ``start``, successors in edge order (all reachable).

    A level at a time: wide levels with array operations, narrow ones (long
    chains, one state per level) in plain Python, where numpy's per-call cost
    would dominate.
    """
    count = len(ptr) - 1
    seen = np.zeros(count, dtype=bool)
    seen[start] = True
    seen_l: list[bool] | None = None  # the same, for the narrow levels
    lists: tuple[list[int], list[int]] | None = None
    order = [np.array([start], dtype=np.int64)]
    frontier = order[0]
    while len(frontier):
        if len(frontier) <= _NARROW:
            if lists is None:
                lists = ptr.tolist(), dst.tolist()
            if seen_l is None:
                seen_l = seen.tolist()
            ptr_l, dst_l = lists
            got: list[int] = []
            for q in frontier.tolist():
                for t in dst_l[ptr_l[q] : ptr_l[q + 1]]:
                    if not seen_l[t]:
                        seen_l[t] = True
                        got.append(t)
            t_arr = np.array(got, dtype=np.int64)
            seen[t_arr] = True
        else:
            e, _ = spans(ptr, frontier)
            t_arr = dst[e]
            t_arr = t_arr[~seen[t_arr]]
            if len(t_arr) > 64:
                _, firsts = np.unique(t_arr, return_index=True)
                t_arr = t_arr[np.sort(firsts)]
            else:
                t_arr = np.array(list(dict.fromkeys(t_arr.tolist())), dtype=np.int64)
            seen[t_arr] = True
            if seen_l is not None:
                for t in t_arr.tolist():
                    seen_l[t] = True
        order.append(t_arr)
        frontier = t_arr
    return np.concatenate(order)
