"""The cyclic garbage collector held off while an automaton or grammar is built.

Building the automata of a large grammar allocates millions of short-lived
container objects (IR nodes, tuples, lists, dicts), nearly all freed by
reference counting. Each allocation past the collector's thresholds still
starts a collection, and the full ones traverse every container of the
process (a vocabulary's tables included): on the real-world JSON schemas
they took 15 to 25 % of a cold compile. :func:`gc_paused` turns the collector
off for the duration of a build and back on afterwards, when it was on; the
few cycles a build leaves (closures that call themselves) wait for the next
collection.

Pauses nest, and may overlap across threads: the collector is turned back on
when the last one ends, and only if it was on when the first began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0
_resume = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector off within the ``with`` block.

    Yields
    ------
    None
    """
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
