"""Array helpers of the automaton builders, and the work counter of the subset construction.

Automata here are often held in CSR form: the edges of node ``x`` are
``nxt[ptr[x]:ptr[x + 1]]``. :func:`spans` gathers many nodes' edge ranges at
once, and :func:`search` finds what a set of nodes reaches.
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
    "search",
    "spans",
    "too_many_states",
]

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


def csr(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, flat)``: the lists concatenated, list ``i`` at ``flat[ptr[i]:ptr[i + 1]]``."""
    lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(ptr[-1]))
    return ptr, flat


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
