"""Subset construction over byte equivalence classes.

The bytes are first split into classes that no byte range of the NFA tells apart
(``[0-9]+`` has three: below ``0``, the digits, above ``9``), so each DFA state
lists its transitions per class instead of per byte. A DFA state is the set of
byte nodes (and possibly the accepting node) it stands for: for small NFAs a
Python integer bit set, built in plain Python (the epsilon closures computed
once per target node); larger ones go to the JIT kernels of
:mod:`._subset_kernel` (see :mod:`.kernels`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..limits import Limits
from .arrays import Work, csr, spans, too_many_states
from .kernels import subset_kernels
from .nfa import ByteNFA, Ranges

__all__ = ["ClassDFA", "Row", "determinize"]

#: Transitions of one state: ``(class, target)`` pairs in increasing class order.
Row = list[tuple[int, int]]

# NFAs with at most this many byte nodes use integer bit sets for DFA states...
_DENSE_MAX = 2048
# ...or, once the kernels are loaded (see .kernels), this many; the larger ones go to the kernels
_KERNEL_MIN = 16


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


def _closure_fn(nfa: ByteNFA, pidx: list[int], accept_pos: int, work: Work) -> Callable[[int], list[int]]:
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

    work = Work(limits.max_compile_work)
    closure = _closure_fn(nfa, pidx, num_pos, work)
    num_classes = len(cuts) - 1
    kernels = subset_kernels(wait=num_pos > _DENSE_MAX)
    if kernels is None or num_pos <= _KERNEL_MIN:
        pos_classes = [classes_of[node_ranges[node]] for node in positions]  # type: ignore[index]
        start = closure(nfa.start)
        follows = [closure(out[node]) for node in positions]
        res = _subsets_dense(start, follows, pos_classes, num_classes, limits, work)
        return ClassDFA(*res, class_of_byte)
    targets = np.array([nfa.start] + [out[node] for node in positions], dtype=np.int64)
    # the class lists of the positions, expanded from those of the distinct ranges
    range_list = list(classes_of)
    range_id = {rs: i for i, rs in enumerate(range_list)}
    r_ptr, r_flat = csr([classes_of[rs] for rs in range_list])
    pos_range = np.fromiter((range_id[node_ranges[node]] for node in positions), dtype=np.int64, count=num_pos)  # type: ignore[index]
    r_idx, r_counts = spans(r_ptr, pos_range)
    c_ptr = np.zeros(num_pos + 1, dtype=np.int64)
    np.cumsum(r_counts, out=c_ptr[1:])
    c_ptr_cls = r_flat[r_idx]
    return ClassDFA(*_subsets_by_kernel(kernels, nfa, targets, pidx, c_ptr, c_ptr_cls, num_classes, limits, work),
                    class_of_byte)


def _subsets_by_kernel(
    kernels: tuple[Callable[..., Any], Callable[..., Any]],
    nfa: ByteNFA,
    targets: np.ndarray,
    pidx: list[int],
    c_ptr: np.ndarray,
    c_cls: np.ndarray,
    num_classes: int,
    limits: Limits,
    work: Work,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The subset construction by the JIT kernels of :mod:`._subset_kernel`: ``(lengths, classes,
    targets, accepting)``."""
    closures_kernel, subsets_kernel = kernels
    num_pos = int(c_ptr.shape[0]) - 1
    eps_ptr, eps_to = csr([e if e is not None else () for e in nfa.eps])
    cl_ptr, cl_pos, steps = closures_kernel(
        targets, np.array(pidx, dtype=np.int64), nfa.accept, num_pos, eps_ptr, eps_to
    )
    work.add(steps)
    status, steps, lengths, classes, dsts, accepting = subsets_kernel(
        cl_ptr, cl_pos, c_ptr, np.require(c_cls, np.int64, ("C", "W")), num_pos, num_classes,
        limits.max_dfa_states, work.limit - work.done,
    )
    work.add(steps)  # raises past the limit
    if status != 0:
        raise too_many_states(limits)
    return lengths, classes, dsts, accepting


def _subsets_dense(
    start: list[int],
    follows: list[list[int]],
    pos_classes: list[tuple[int, ...]],
    num_classes: int,
    limits: Limits,
    work: Work,
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
                    raise too_many_states(limits)
                ids[target] = j
                states.append(target)
            classes.append(c)
            dsts.append(j)
        lengths.append(len(pairs))
        if steps > 4096:
            work.add(steps)
            steps = 0
    return lengths, classes, dsts, [bool(s & accept_bit) for s in states]
