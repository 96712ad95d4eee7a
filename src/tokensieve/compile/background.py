"""Masks computed ahead in a background thread, after a compile has returned.

A compile returns once its first mask is known and the first part of the
masks worth computing ahead is walked (the ``"auto"`` budget of
:class:`~tokensieve.compile.compiler.GrammarCompiler`; the first part is all
of a small automaton's); the rest of that budget is left to one daemon thread
per process, which takes the compiled grammars
in the order they were compiled and walks each within its budget, while the
caller decodes. A mask the decoding thread needs before the thread has walked
it is computed on the spot, as without precomputing; both threads store what
they compute, and a compiled grammar's memo of masks is safe for that (its
mutations hold its lock).

The thread holds a grammar only weakly: a grammar dropped before its turn is
skipped. Its walks hold the interpreter lock in numpy calls and between them,
so they compete with the decoding thread for it: the thread lets go of it
between chunks of a walk, and while it walks the interpreter's switch interval
is :data:`SWITCH_INTERVAL_S` (restored when the queue is empty), so that a
decoding step waits for the lock at most about that long, not the default
5 ms. A job's walks stop at its budget like the compile-time walks did.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import weakref
from typing import Protocol

__all__ = ["Precomputable", "in_walker", "start", "submit", "wait_idle"]

logger = logging.getLogger(__name__)


class Precomputable(Protocol):
    """What the thread calls: a compiled grammar's budgeted walks."""

    def precompute_ahead(self, budget_s: float | None, budget_work: int | None) -> bool: ...


#: the interpreter's switch interval while the thread walks, in seconds: a decoding thread that
#: wants the interpreter lock back waits at most about this long (the default, 5 ms, would be a
#: decoding step's worst case)
SWITCH_INTERVAL_S = 0.0002

_jobs: queue.Queue[tuple[weakref.ReferenceType[Precomputable], float | None, int | None]] = queue.Queue()
_lock = threading.Lock()
_thread: threading.Thread | None = None


def _forget_after_fork() -> None:
    """A forked child has no thread and must not share the parent's queue or its locks."""
    global _jobs, _lock, _thread
    _jobs = queue.Queue()
    _lock = threading.Lock()
    _thread = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def in_walker() -> bool:
    """Whether the calling thread is this process's thread of walks ahead."""
    return _thread is not None and threading.current_thread() is _thread


def start() -> None:
    """Start the thread if it is not running (a few milliseconds on a busy machine: compilers do it
    when they are made, so that no compile waits for it)."""
    global _thread
    with _lock:
        if _thread is None or not _thread.is_alive():  # not started, or started before a fork
            _thread = threading.Thread(target=_run, name="tokensieve-precompute", daemon=True)
            _thread.start()


def submit(grammar: Precomputable, budget_s: float | None, budget_work: int | None) -> None:
    """Queue ``grammar``'s walks ahead for the thread (started if it is not running).

    Parameters
    ----------
    grammar
        A compiled grammar; held weakly until its turn.
    budget_s
        Seconds its walks may take (``None``: no bound in time).
    budget_work
        Units of walking work its walks may do (``None``: no bound in work).
    """
    _jobs.put((weakref.ref(grammar), budget_s, budget_work))
    start()


def wait_idle(timeout: float | None = None) -> bool:
    """Wait until every queued grammar has been walked.

    For tests and benchmarks that must know when the background work is done;
    decoding never needs to wait (a mask not walked yet is computed on use).

    Parameters
    ----------
    timeout
        Seconds to wait at most (``None``: until done).

    Returns
    -------
    bool
        ``False`` if ``timeout`` seconds went first.
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
    original: float | None = None  # the switch interval before the thread changed it
    while True:
        ref, budget_s, budget_work = _jobs.get()
        grammar = None
        try:
            grammar = ref()
            if grammar is not None:
                if original is None:
                    original = sys.getswitchinterval()
                    sys.setswitchinterval(min(original, SWITCH_INTERVAL_S))
                grammar.precompute_ahead(budget_s, budget_work)
        except Exception:  # a failed walk ahead costs its masks, computed on use instead
            logger.exception("walking masks ahead failed")
        finally:
            grammar = None
            if original is not None and _jobs.unfinished_tasks <= 1:  # nothing queued behind this job
                sys.setswitchinterval(original)
                original = None
            _jobs.task_done()
