"""How compile-time walks are bounded: a budget of work or time, and walks in chunks.

A walk of many states at once holds a frontier of (trie node, state) pairs for
all of them; :func:`walk_in_chunks` walks them a chunk at a time, restrictive
states first, halving a chunk whose frontier would grow too large
(:class:`FrontierTooLarge`), and stops when a :class:`WalkBudget` is spent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import numpy as np

__all__ = ["FrontierTooLarge", "WalkBudget", "WorkMeter", "walk_in_chunks"]


class WorkMeter(Protocol):
    """What measures the work of walks: the mask builder.

    See :meth:`TokenMaskBuilder.work_done <tokensieve.compile.token_masks.TokenMaskBuilder.work_done>`.
    """

    def work_done(self) -> int:
        """The work of this thread's walks so far, in (trie node, automaton state) pairs."""
        ...


class WalkBudget:
    """When compile-time walks stop: after some work, or some time, whichever comes first.

    Parameters
    ----------
    builder
        What measures the work: the mask builder (:class:`WorkMeter`).
    work
        Work units (see :class:`WorkMeter`) from now; ``None``: no bound.
    seconds
        Seconds from now; ``None``: no bound. A bound in work gives the same
        result on every machine, one in time only on machines as fast.
    """

    def __init__(self, builder: WorkMeter, work: int | None = None, seconds: float | None = None) -> None:
        self._meter = builder.work_done
        self._until = None if work is None else builder.work_done() + work
        self._deadline = None if seconds is None else time.perf_counter() + seconds

    @classmethod
    def bounded(cls, builder: WorkMeter, work: int | None, seconds: float | None) -> WalkBudget | None:
        """The budget of ``work`` units or ``seconds``, ``None`` when neither bounds anything."""
        if work is None and seconds is None:
            return None
        return cls(builder, work, seconds)

    def spent(self) -> bool:
        """Whether the work or the time is used up."""
        if self._deadline is not None and time.perf_counter() > self._deadline:
            return True
        return self._until is not None and self._meter() >= self._until


class FrontierTooLarge(Exception):
    """A walk of several states would hold too many (trie node, state) pairs: walk fewer at once."""


def walk_in_chunks(
    states: np.ndarray,
    permissive: np.ndarray,
    sizes: tuple[int, int],
    walk: Callable[[np.ndarray], None],
    budget: WalkBudget | None = None,
) -> bool:
    """Call ``walk`` on chunks of ``states``: restrictive states first, then permissive ones.

    ``sizes``: states per chunk, restrictive and permissive (a permissive
    state's frontier holds thousands of nodes: fewer of them per walk). A chunk
    whose walk raises :class:`FrontierTooLarge` is walked again in halves (a
    walk of one state must not raise). Returns ``False`` if the ``budget``
    was spent before every chunk was walked.
    """
    flags = permissive.take(states)
    strict, loose = states[~flags], states[flags]
    chunks = [strict[i : i + sizes[0]] for i in range(0, strict.size, sizes[0])]
    chunks += [loose[i : i + sizes[1]] for i in range(0, loose.size, sizes[1])]
    chunks.reverse()
    while chunks:
        if budget is not None and budget.spent():
            return False
        chunk = chunks.pop()
        try:
            walk(chunk)
        except FrontierTooLarge:
            half = chunk.size // 2
            chunks += [chunk[half:], chunk[:half]]
    return True
