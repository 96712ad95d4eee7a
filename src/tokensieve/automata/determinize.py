"""Subset construction over byte equivalence classes.

The bytes are first split into classes that no byte range of the NFA tells apart
(``[0-9]+`` has three: below ``0``, the digits, above ``9``), so each DFA state
lists its transitions per class instead of per byte. The NFA's epsilon closures are computed
once per target node; a DFA state is the set of byte nodes (and possibly the
accepting node) it stands for, kept as a Python integer bit set when the NFA is
small and as a frozenset otherwise.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from .._arrays import sorted_unique
from ..errors import LimitExceeded
from ..limits import Limits
from .nfa import ByteNFA, Ranges

__all__ = ["ClassDFA", "Row", "determinize"]

#: Transitions of one state: ``(class, target)`` pairs in increasing class order.
Row = list[tuple[int, int]]

# NFAs with at most this many byte nodes use integer bit sets for DFA states.
_DENSE_MAX = 2048

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """A 64-bit mixing function (the finaliser of SplitMix64), elementwise and wrapping."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def _spans(ptr: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``ptr[x] .. ptr[x + 1] - 1`` for each ``x`` of ``xs``, concatenated, and their counts."""
    lo = ptr[xs]
    counts = ptr[xs + 1] - lo
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), counts
    ends = np.cumsum(counts)
    idx = np.arange(total, dtype=np.int64) + np.repeat(lo - ends + counts, counts)
    return idx, counts


def _search(ptr: np.ndarray, nxt: np.ndarray, seeds: np.ndarray, n: int) -> np.ndarray:
    """States reachable from ``seeds`` along ``ptr``/``nxt`` adjacency (bool mask), frontier by frontier.

    A narrow frontier (long chains of states) is followed in plain Python for a
    bounded number of transitions, and what is left of it goes back to the
    numpy levels.
    """
    seen = np.zeros(n, dtype=bool)
    seen[seeds] = True
    frontier = seeds
    views = None
    while len(frontier):
        if len(frontier) <= _NARROW_SEARCH:
            if views is None:
                views = (
                    np.ascontiguousarray(ptr, dtype=np.int64).data,
                    np.ascontiguousarray(nxt, dtype=np.int64).data,
                    seen.data,
                )
            frontier = _search_some(*views, frontier.tolist())
            continue
        idx, _ = _spans(ptr, frontier)
        t = nxt[idx]
        t = t[~seen[t]]
        if len(t) > 64:
            t = sorted_unique(t)
        else:
            t = np.array(sorted(set(t.tolist())), dtype=np.int64)
        seen[t] = True
        frontier = t
    return seen


def _search_some(ptr: memoryview, nxt: memoryview, seen: memoryview, stack: list[int]) -> np.ndarray:
    """Depth first from ``stack`` (states already seen), marking ``seen``, for at most
    ``_SEARCH_STEPS`` transitions; returns the states found but not yet followed."""
    steps = 0
    while stack and steps < _SEARCH_STEPS:
        q = stack.pop()
        lo, hi = ptr[q], ptr[q + 1]
        steps += hi - lo
        for e in range(lo, hi):
            t = nxt[e]
            if not seen[t]:
                seen[t] = True
                stack.append(t)
    return np.array(stack, dtype=np.int64)


#: frontiers of at most this many states are followed in plain Python, this many transitions at a time
_NARROW_SEARCH = 32
_SEARCH_STEPS = 4096


def _segment_sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Wrapping ``uint64`` sums of consecutive segments of ``values`` of the given lengths."""
    cs = np.zeros(len(values) + 1, dtype=np.uint64)
    np.cumsum(values, out=cs[1:])
    ends = np.cumsum(counts)
    return cs[ends] - cs[ends - counts]


class ClassDFA:
    """A DFA over byte classes, as produced by :func:`determinize`.

    Attributes
    ----------
    lengths : list of int or numpy.ndarray
        ``lengths[s]``: the number of transitions of state ``s``.
    classes, targets : list of int or numpy.ndarray
        The transitions ``(class, target)`` of all states, state by state,
        each state's by increasing class; classes not listed have no transition.
        Lists from the small-automaton path, int64 arrays from the array path.
    accepting : list of bool or numpy.ndarray
    class_of_byte : numpy.ndarray
        ``int64 (256,)``: the class of each byte.
    start : int
        Always 0.
    """

    __slots__ = ("lengths", "classes", "targets", "accepting", "class_of_byte", "start")

    def __init__(
        self,
        lengths: list[int] | np.ndarray,
        classes: list[int] | np.ndarray,
        targets: list[int] | np.ndarray,
        accepting: list[bool] | np.ndarray,
        class_of_byte: np.ndarray,
    ) -> None:
        self.lengths = lengths
        self.classes = classes
        self.targets = targets
        self.accepting = accepting
        self.class_of_byte = class_of_byte
        self.start = 0

    @property
    def num_classes(self) -> int:
        """Number of byte classes."""
        return int(self.class_of_byte[-1]) + 1

    @property
    def num_states(self) -> int:
        """Number of states."""
        return len(self.lengths)

    @property
    def rows(self) -> list[Row]:
        """``rows[s]``: the ``(class, target)`` transitions of state ``s``."""
        pairs = list(zip(self.classes, self.targets, strict=True))
        rows: list[Row] = []
        at = 0
        for n in self.lengths:
            rows.append(pairs[at : at + n])
            at += n
        return rows


class _Work:
    __slots__ = ("done", "limit")

    def __init__(self, limit: int) -> None:
        self.done = 0
        self.limit = limit

    def add(self, steps: int) -> None:
        self.done += steps
        if self.done > self.limit:
            raise LimitExceeded("max_compile_work", self.limit, "the automaton is too costly to build")


def _closure_fn(nfa: ByteNFA, pidx: list[int], accept_pos: int, work: _Work) -> Callable[[int], list[int]]:
    ranges, eps, accept = nfa.ranges, nfa.eps, nfa.accept
    memo: dict[int, list[int]] = {}

    def closure(t: int) -> list[int]:
        res = memo.get(t)
        if res is not None:
            return res
        res = []
        if ranges[t] is not None:
            res.append(pidx[t])
        else:
            seen = {t}
            stack = [t]
            while stack:
                x = stack.pop()
                if ranges[x] is not None:
                    res.append(pidx[x])
                    continue
                if x == accept:
                    res.append(accept_pos)
                for y in eps[x]:  # type: ignore[union-attr]
                    if y not in seen:
                        seen.add(y)
                        stack.append(y)
            work.add(len(seen))
        memo[t] = res
        return res

    return closure


def determinize(nfa: ByteNFA, limits: Limits | None = None) -> ClassDFA:
    """Subset construction of a byte NFA.

    Parameters
    ----------
    nfa
        The automaton (see :func:`~tokensieve.automata.nfa.build_nfa`).
    limits
        ``max_dfa_states`` and ``max_compile_work`` apply.

    Returns
    -------
    ClassDFA
        Every state is reachable from state 0; states that cannot reach
        acceptance only occur when ``nfa.has_dead``.

    Raises
    ------
    LimitExceeded
        When the DFA would exceed ``limits.max_dfa_states`` states, or the
        construction ``limits.max_compile_work`` steps.
    """
    limits = limits or Limits()
    node_ranges, out = nfa.ranges, nfa.out
    positions = [i for i, r in enumerate(node_ranges) if r is not None]
    num_pos = len(positions)
    pidx = [-1] * len(node_ranges)
    for k, node in enumerate(positions):
        pidx[node] = k

    # byte classes: cut the byte range at every range boundary
    distinct: set[Ranges] = set()
    for node in positions:
        rs_node = node_ranges[node]
        assert rs_node is not None  # positions are byte nodes
        distinct.add(rs_node)
    cut_set = {0, 256}
    for rs in distinct:
        for lo, hi in rs:
            cut_set.add(lo)
            cut_set.add(hi + 1)
    cuts = sorted(cut_set)
    index_of_cut = {c: i for i, c in enumerate(cuts)}
    class_of_byte = np.searchsorted(np.asarray(cuts[:-1]), np.arange(256), side="right") - 1
    classes_of: dict[Ranges, tuple[int, ...]] = {}
    for rs in distinct:
        cs: list[int] = []
        for lo, hi in rs:
            cs.extend(range(index_of_cut[lo], index_of_cut[hi + 1]))
        classes_of[rs] = tuple(cs)

    work = _Work(limits.max_compile_work)
    closure = _closure_fn(nfa, pidx, num_pos, work)
    num_classes = len(cuts) - 1
    if num_pos <= _DENSE_MAX:
        pos_classes = [classes_of[node_ranges[node]] for node in positions]  # type: ignore[index]
        start = closure(nfa.start)
        follows = [closure(out[node]) for node in positions]
        res = _subsets_dense(start, follows, pos_classes, num_classes, limits, work)
        return ClassDFA(*res, class_of_byte)
    targets = np.array([nfa.start] + [out[node] for node in positions], dtype=np.int64)
    # the class lists of the positions, expanded from those of the distinct ranges
    range_list = list(classes_of)
    range_id = {rs: i for i, rs in enumerate(range_list)}
    r_ptr, r_flat = _csr([classes_of[rs] for rs in range_list])
    pos_range = np.fromiter((range_id[node_ranges[node]] for node in positions), dtype=np.int64, count=num_pos)  # type: ignore[index]
    r_idx, r_counts = _spans(r_ptr, pos_range)
    c_ptr = np.zeros(num_pos + 1, dtype=np.int64)
    np.cumsum(r_counts, out=c_ptr[1:])
    c_ptr_cls = r_flat[r_idx]
    cl_ptr, cl_flat = _closures(nfa, targets, np.array(pidx, dtype=np.int64), num_pos, closure, work)
    try:
        arrays = _subsets_arrays(cl_ptr, cl_flat, c_ptr, c_ptr_cls, num_pos, num_classes, limits, work)
    except _Collision:  # two subsets hashed alike: exact sets in plain Python
        flat = cl_flat.tolist()
        bounds = cl_ptr.tolist()
        sets = [flat[bounds[i] : bounds[i + 1]] for i in range(len(targets))]
        pos_classes = [classes_of[node_ranges[node]] for node in positions]  # type: ignore[index]
        res = _subsets_sparse(sets[0], sets[1:], pos_classes, limits, _Work(limits.max_compile_work))
        return ClassDFA(*res, class_of_byte)
    return ClassDFA(*arrays, class_of_byte)


#: The array construction expands at most this many states per batch (a level of the
#: breadth-first search, or a slice of it): larger batches sort arrays that leave the cache.
_BATCH_STATES = 2048

#: Epsilon paths longer than this are followed by the per-node search.
_DEEP = 256


def _closures(
    nfa: ByteNFA,
    targets: np.ndarray,
    pidx: np.ndarray,
    accept_pos: int,
    closure: Callable[[int], list[int]],
    work: _Work,
) -> tuple[np.ndarray, np.ndarray]:
    """The epsilon closures of ``targets`` as ``(ptr, positions)``, all at once.

    A breadth-first search over ``(target, node)`` pairs, one step of every
    search per round; a sorted array of the pairs seen so far stops the
    cycles. Searches still running after :data:`_DEEP` rounds are finished by
    ``closure`` (the per-node search).
    """
    n = nfa.num_nodes
    is_byte = np.fromiter((r is not None for r in nfa.ranges), dtype=bool, count=n)
    eps_ptr, eps_to = _csr([e if e is not None else () for e in nfa.eps])
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
        idx, cnt = _spans(eps_ptr, node[eps])
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


def _too_many(limits: Limits) -> LimitExceeded:
    return LimitExceeded(
        "max_dfa_states",
        limits.max_dfa_states,
        f"the deterministic automaton would have more than {limits.max_dfa_states} states",
    )


def _subsets_dense(
    start: list[int],
    follows: list[list[int]],
    pos_classes: list[tuple[int, ...]],
    num_classes: int,
    limits: Limits,
    work: _Work,
) -> tuple[list[int], list[int], list[int], list[bool]]:
    num_pos = len(follows)
    accept_bit = 1 << num_pos
    # per position, indexed by bit_length() of its bit: follow mask and classes
    fmask = [0] * (num_pos + 2)
    pclasses: list[tuple[int, ...]] = [()] * (num_pos + 2)
    for k, f in enumerate(follows):
        m = 0
        for q in f:
            m |= 1 << q
        fmask[k + 1] = m
        pclasses[k + 1] = pos_classes[k]
    cmask = [0] * num_classes
    for k in range(num_pos):
        bit = 1 << k
        for c in pos_classes[k]:
            cmask[c] |= bit
    live = [(c, m) for c, m in enumerate(cmask) if m]
    num_live = len(live)
    s0 = 0
    for q in start:
        s0 |= 1 << q
    ids = {s0: 0}
    states = [s0]
    lengths: list[int] = []
    classes: list[int] = []
    dsts: list[int] = []
    union_of: dict[int, int] = {}
    max_states = limits.max_dfa_states
    steps = 0
    i = 0
    while i < len(states):
        state = states[i]
        i += 1
        if 2 * state.bit_count() <= num_live:
            # few positions: group their follow sets by class
            targets: dict[int, int] = {}
            y: int = state & ~accept_bit
            while y:
                low = y & -y
                y ^= low
                k = low.bit_length()
                follow = fmask[k]
                for c in pclasses[k]:
                    targets[c] = targets.get(c, 0) | follow
                steps += 1
            pairs = sorted(targets.items()) if len(targets) > 1 else targets.items()
        else:
            # many positions: per class, the union of the follow sets of the matching ones
            pairs = []
            for c, m in live:
                x = state & m
                if not x:
                    continue
                target = union_of.get(x)
                if target is None:
                    target = 0
                    y = x
                    while y:
                        low = y & -y
                        target |= fmask[low.bit_length()]
                        y ^= low
                        steps += 1
                    union_of[x] = target
                pairs.append((c, target))
        for c, target in pairs:
            j = ids.get(target)
            if j is None:
                j = len(states)
                if j >= max_states:
                    raise _too_many(limits)
                ids[target] = j
                states.append(target)
            classes.append(c)
            dsts.append(j)
        lengths.append(len(pairs))
        if steps > 4096:
            work.add(steps)
            steps = 0
    return lengths, classes, dsts, [bool(s & accept_bit) for s in states]


def _subsets_sparse(
    start: list[int],
    follows: list[list[int]],
    pos_classes: list[tuple[int, ...]],
    limits: Limits,
    work: _Work,
) -> tuple[list[int], list[int], list[int], list[bool]]:
    num_pos = len(follows)
    fsets = [frozenset(f) for f in follows]
    s0 = frozenset(start)
    ids = {s0: 0}
    states = [s0]
    lengths: list[int] = []
    classes: list[int] = []
    targets: list[int] = []
    max_states = limits.max_dfa_states
    i = 0
    while i < len(states):
        state = states[i]
        i += 1
        buckets: dict[int, list[frozenset[int]]] = {}
        for p in state:
            if p == num_pos:
                continue
            f = fsets[p]
            for c in pos_classes[p]:
                b = buckets.get(c)
                if b is None:
                    buckets[c] = [f]
                else:
                    b.append(f)
        steps = len(state)
        for c in sorted(buckets):
            fl = buckets[c]
            target = fl[0] if len(fl) == 1 else frozenset().union(*fl)
            steps += len(target)
            j = ids.get(target)
            if j is None:
                j = len(states)
                if j >= max_states:
                    raise _too_many(limits)
                ids[target] = j
                states.append(target)
            classes.append(c)
            targets.append(j)
        lengths.append(len(buckets))
        work.add(steps)
    return lengths, classes, targets, [num_pos in s for s in states]


class _Collision(Exception):
    """Two different subsets hashed alike."""


_SALT = np.uint64(0x2545F4914F6CDD1D)


def _csr(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, flat)``: the lists concatenated, list ``i`` at ``flat[ptr[i]:ptr[i + 1]]``."""
    lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(ptr[-1]))
    return ptr, flat


def _same_segments(
    a_vals: np.ndarray,
    a_ptr: np.ndarray,
    a_segs: np.ndarray,
    b_vals: np.ndarray,
    b_ptr: np.ndarray,
    b_segs: np.ndarray,
) -> bool:
    """Whether segment ``a_segs[i]`` of ``a_vals`` equals segment ``b_segs[i]`` of ``b_vals`` for every ``i``."""
    if not len(a_segs):
        return True
    if not np.array_equal(a_ptr[a_segs + 1] - a_ptr[a_segs], b_ptr[b_segs + 1] - b_ptr[b_segs]):
        return False
    ia, _ = _spans(a_ptr, a_segs)
    ib, _ = _spans(b_ptr, b_segs)
    return bool(np.array_equal(a_vals[ia], b_vals[ib]))


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
    set of the one position just read, so :func:`_subsets_arrays` registers
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
    f_hash = _segment_sums(mixed[f_pos], f_len) + _mix(f_len.astype(np.uint64))
    uh, first = np.unique(f_hash[live], return_index=True)
    reps = live[first]
    # the (class, follow position) pairs the expansion of a subset adds per position in it
    weight = np.append(np.diff(c_ptr) * f_len, 0)  # the acceptance mark adds none
    r_idx, _ = _spans(f_ptr, reps)
    if int(weight[f_pos[r_idx]].sum()) > budget:
        return none
    same = reps[np.searchsorted(uh, f_hash[live])]
    if not _same_segments(f_pos, f_ptr, live, f_pos, f_ptr, same):
        raise _Collision
    new = uh != np.uint64(s0_hash)
    if not new.all():
        s0_ptr = np.array([0, len(s0)], dtype=np.int64)
        if not _same_segments(f_pos, f_ptr, reps[~new], s0, s0_ptr, np.zeros(1, dtype=np.int64)):
            raise _Collision
        uh, reps = uh[new], reps[new]
    return uh, reps


def _subsets_arrays(
    cl_ptr: np.ndarray,
    cl_pos: np.ndarray,
    c_ptr: np.ndarray,
    c_cls: np.ndarray,
    num_pos: int,
    num_classes: int,
    limits: Limits,
    work: _Work,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Subset construction one breadth-first level at a time, on arrays.

    A level's states are expanded to ``(state, class, follow position)``
    triples, sorted and deduplicated; each ``(state, class)`` run is a target
    subset, hashed to 64 bits. Subsets with equal hashes are compared element
    by element (a mismatch raises :class:`_Collision`), so the automaton is
    exactly the one of the list-based construction, with the empty target
    subsets (dead ends) left out. Returns ``(lengths, classes, targets,
    accepting)`` as arrays. ``cl_ptr``/``cl_pos``: the start subset, then the
    follow set of each position (sorted); ``c_ptr``/``c_cls``: the classes of
    each position.
    """
    width = num_pos + 1  # position num_pos marks acceptance
    f_ptr, f_pos = cl_ptr[1:] - cl_ptr[1], cl_pos[cl_ptr[1] :]
    mixed = _mix(np.arange(width, dtype=np.uint64) + _SALT)
    max_states = limits.max_dfa_states
    # the subsets found so far, state by state: pool[ptr[s]:ptr[s + 1]] (sorted)
    s0 = cl_pos[: cl_ptr[1]]
    s0_len = np.array([len(s0)], dtype=np.int64)
    s0_hash = int((_segment_sums(mixed[s0], s0_len) + _mix(s0_len.astype(np.uint64)))[0])
    uh, reps = _follow_sets(f_ptr, f_pos, c_ptr, mixed, num_pos, s0, s0_hash, (work.limit - work.done) // 4)
    r_idx, r_len = _spans(f_ptr, reps)
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
        idx, cnt = _spans(ptr, np.arange(lo, hi, dtype=np.int64))
        sp = pool[idx]
        owner = np.repeat(np.arange(hi - lo, dtype=np.int64), cnt)
        keep = sp < num_pos
        sp, owner = sp[keep], owner[keep]
        ci, ccnt = _spans(c_ptr, sp)
        sc = np.repeat(owner * num_classes, ccnt) + c_cls[ci]
        fi, fcnt = _spans(f_ptr, np.repeat(sp, ccnt))
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
        h = _segment_sums(mixed[f], seg_len) + _mix(seg_len.astype(np.uint64))
        uh, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        rep = first[inverse]
        other = np.flatnonzero(rep != np.arange(len(rep)))
        if not _same_segments(f, seg_ptr, other, f, seg_ptr, rep[other]):
            raise _Collision
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
            if not _same_segments(f, seg_ptr, first[fa], pool, ptr, tid[fa]):
                raise _Collision
        if fresh:
            n_new = len(fresh)
            if count + n_new > cap:
                raise _too_many(limits)
            segs = first[np.array(fresh, dtype=np.int64)]
            new_idx, new_len = _spans(seg_ptr, segs)
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
    keep = _search(ptr, targets, np.zeros(1, dtype=np.int64), n)
    kept = int(np.count_nonzero(keep))
    if kept > max_states:
        raise _too_many(limits)
    if kept == n:
        return lengths, classes, targets, accepting
    new_id = np.cumsum(keep) - 1
    edge_keep = np.repeat(keep, lengths)
    return lengths[keep], classes[edge_keep], new_id[targets[edge_keep]], accepting[keep]
