"""Masks computed ahead in a background thread, after a compile has returned.

A compile returns as soon as its first mask is known; the masks worth
computing ahead (the ``"auto"`` budget of :class:`~tokensieve.compile.compiler.GrammarCompiler`)
are left to one daemon thread per process, which takes the compiled grammars
in the order they were compiled and walks each within its budget, while the
caller decodes. A mask the decoding thread needs before the thread has walked
it is computed on the spot, as without precomputing; both threads store what
they compute, and a compiled grammar's memo of masks is safe for that (its
mutations hold its lock).

The thread holds a grammar only weakly: a grammar dropped before its turn is
skipped. Its walks hold the interpreter lock in numpy calls and between them,
so they compete with the decoding thread for it; the thread releases it between
chunks of a walk (see :class:`~tokensieve.compile.token_masks.WalkBudget`), and a
job's walks stop at its budget like the compile-time walks did.
"""

from __future__ import annotations

import logging
import queue
import threading
import weakref
from typing import Protocol

__all__ = ["Precomputable", "submit", "wait_idle"]

logger = logging.getLogger(__name__)


class Precomputable(Protocol):
    """What the thread calls: a compiled grammar's budgeted walks."""

    def precompute_ahead(self, budget_s: float | None, budget_work: int | None) -> bool: ...


_jobs: queue.Queue[tuple[weakref.ReferenceType[Precomputable], float | None, int | None]] = queue.Queue()
_lock = threading.Lock()
_thread: threading.Thread | None = None


def submit(grammar: Precomputable, budget_s: float | None, budget_work: int | None) -> None:
    """Queue ``grammar``'s walks ahead, bounded by ``budget_s`` seconds and ``budget_work`` units of work."""
    global _thread
    _jobs.put((weakref.ref(grammar), budget_s, budget_work))
    with _lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="tokensieve-precompute", daemon=True)
            _thread.start()


def wait_idle(timeout: float | None = None) -> bool:
    """Wait until every queued grammar has been walked; ``False`` if ``timeout`` seconds went first.

    For tests and benchmarks that must know when the background work is done;
    decoding never needs to wait (a mask not walked yet is computed on use).
    """
    if timeout is None:
        _jobs.join()
        return True
    done = threading.Event()

    def wait() -> None:
        _jobs.join()
        done.set()

    threading.Thread(target=wait, daemon=True).start()
    return done.wait(timeout)


def _run() -> None:
    while True:
        ref, budget_s, budget_work = _jobs.get()
        try:
            grammar = ref()
            if grammar is not None:
                grammar.precompute_ahead(budget_s, budget_work)
                del grammar
        except Exception:  # a failed walk ahead costs its masks, computed on use instead
            logger.exception("walking masks ahead failed")
        finally:
            _jobs.task_done()
