"""Array helpers of the automaton builders, and the work counter of the subset constructions.

Automata here are often held in CSR form: the edges of node ``x`` are
``nxt[ptr[x]:ptr[x + 1]]``. :func:`spans` gathers many nodes' edge ranges at
once, :func:`search` finds what a set of nodes reaches, :func:`mix` and
:func:`segment_sums` hash sets of integers to 64 bits (sums of mixed
elements, so a set's hash does not depend on its order), and
:func:`same_segments` compares sets whose hashes agree.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from .._arrays import sorted_unique
from ..errors import LimitExceeded
from ..limits import Limits

__all__ = [
    "Work",
    "csr",
    "mix",
    "same_segments",
    "search",
    "segment_sums",
    "spans",
    "too_many_states",
]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix(x: np.ndarray) -> np.ndarray:
    """A 64-bit mixing function (the finaliser of SplitMix64), elementwise and wrapping."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def spans(ptr: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``ptr[x] .. ptr[x + 1] - 1`` for each ``x`` of ``xs``, concatenated, and their counts."""
    lo = ptr[xs]
    counts = ptr[xs + 1] - lo
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), counts
    ends = np.cumsum(counts)
    idx = np.arange(total, dtype=np.int64) + np.repeat(lo - ends + counts, counts)
    return idx, counts


def search(ptr: np.ndarray, nxt: np.ndarray, seeds: np.ndarray, n: int) -> np.ndarray:
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
            frontier = search_some(*views, frontier.tolist())
            continue
        idx, _ = spans(ptr, frontier)
        t = nxt[idx]
        t = t[~seen[t]]
        if len(t) > 64:
            t = sorted_unique(t)
        else:
            t = np.array(sorted(set(t.tolist())), dtype=np.int64)
        seen[t] = True
        frontier = t
    return seen


def search_some(ptr: memoryview, nxt: memoryview, seen: memoryview, stack: list[int]) -> np.ndarray:
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


def segment_sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Wrapping ``uint64`` sums of consecutive segments of ``values`` of the given lengths."""
    cs = np.zeros(len(values) + 1, dtype=np.uint64)
    np.cumsum(values, out=cs[1:])
    ends = np.cumsum(counts)
    return cs[ends] - cs[ends - counts]


def csr(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, flat)``: the lists concatenated, list ``i`` at ``flat[ptr[i]:ptr[i + 1]]``."""
    lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(ptr[-1]))
    return ptr, flat


def same_segments(
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
    ia, _ = spans(a_ptr, a_segs)
    ib, _ = spans(b_ptr, b_segs)
    return bool(np.array_equal(a_vals[ia], b_vals[ib]))

class Work:
    """The steps a construction has taken, against ``limits.max_compile_work``.

    Parameters
    ----------
    limit
        The most steps allowed.
    """

    __slots__ = ("done", "limit")

    def __init__(self, limit: int) -> None:
        self.done = 0
        self.limit = limit

    def add(self, steps: int) -> None:
        """Count ``steps`` more.

        Raises
        ------
        LimitExceeded
            When the steps so far exceed the limit.
        """
        self.done += steps
        if self.done > self.limit:
            raise LimitExceeded("max_compile_work", self.limit, "the automaton is too costly to build")


def too_many_states(limits: Limits) -> LimitExceeded:
    """The error of a deterministic automaton over ``limits.max_dfa_states`` states."""
    return LimitExceeded(
        "max_dfa_states",
        limits.max_dfa_states,
        f"the deterministic automaton would have more than {limits.max_dfa_states} states",
    )
