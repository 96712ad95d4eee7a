"""Trimming and minimisation of large DFAs over byte classes, on arrays.

The counterparts of :mod:`.minimize` for automata of more than
:data:`SMALL_EDGES` transitions (or fewer, once the kernels are loaded):
:class:`EdgeDFA` holds the transitions as sorted ``(source, class, target)``
arrays, :func:`trim_edges` drops states that cannot reach acceptance and
:func:`minimize_edges` gives the minimal automaton (a JIT kernel), numbered as
:func:`~tokensieve.automata.minimize.minimize` numbers it.
"""

from __future__ import annotations

import numpy as np

from .arrays import search
from .determinize import Row
from .kernels import minimize_kernel

__all__ = ["SMALL_EDGES", "EdgeDFA", "minimize_edges", "trim_edges"]

#: Automata with at most this many transitions are minimised by the list-based
#: code above; numpy's per-call overhead only pays off beyond.
SMALL_EDGES = 4096


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
    """Minimise a trimmed partial DFA given as arrays, by the JIT kernel of :mod:`._minimize_kernel`
    (Hopcroft's algorithm for partial DFAs; loaded now if it is not yet, see :mod:`.kernels`).

    Returns
    -------
    EdgeDFA
        Minimal, numbered breadth-first from the start state (0), successors
        by increasing class, as :func:`~tokensieve.automata.minimize.minimize` numbers.
    """
    kernel = minimize_kernel(wait=True)
    assert kernel is not None
    count, src, cls, dst, acc = kernel(
        dfa.num_states,
        _plain(dfa.ptr(), np.int64),
        _plain(dfa.cls, np.int64),
        _plain(dfa.dst, np.int64),
        _plain(dfa.accepting, np.bool_),
        dfa.start,
    )
    return EdgeDFA(count, src, cls, dst, acc, 0)


def _plain(values: np.ndarray, dtype: type) -> np.ndarray:
    """``values`` as a writable, contiguous array of ``dtype`` (the kernel is loaded for those only)."""
    return np.require(values, dtype, ("C", "W"))
