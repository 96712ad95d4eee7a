"""Run one untrusted input with a time limit and measure it.

An input may end in two ways only: a compiled constraint (or a loaded
vocabulary) that works, or a :class:`tokensieve.TokensieveError` subclass.
Anything else (another exception, a run past the time limit) is reported as
such, never raised, so that the caller decides what a finding is.

The time limit is a ``SIGALRM`` timer, so it interrupts Python code only
(numpy calls finish first); it is armed only in the main thread.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import (
    GrammarCompiler,
    GrammarError,
    GrammarMatcher,
    LimitExceeded,
    SchemaError,
    TokenizerInfo,
    TokensieveError,
    VocabularyError,
)

__all__ = [
    "Outcome",
    "TimedOut",
    "error_is_located",
    "run_bounded",
    "run_isolated",
    "start_mask_allows_something",
    "tiny_compiler",
    "tiny_info",
    "time_limit",
]


class TimedOut(BaseException):
    """Raised by the alarm inside the run (a BaseException, so no ``except Exception`` eats it)."""


@dataclass
class Outcome:
    """What one input did.

    Attributes
    ----------
    kind
        ``"ok"``, ``"typed"`` (a TokensieveError), ``"untyped"`` (any other
        exception), ``"timeout"``.
    error
        The exception, if any.
    value
        What the call returned, if it returned.
    seconds, peak_bytes
        Wall time and peak traced memory (0 when memory was not traced).
    """

    kind: str
    error: BaseException | None
    value: Any
    seconds: float
    peak_bytes: int

    def describe(self) -> str:
        """One line: the kind and the error's type and first line."""
        if self.error is None:
            return self.kind
        first = str(self.error).splitlines()[0] if str(self.error) else ""
        return f"{self.kind}: {type(self.error).__name__}: {first[:160]}"


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`TimedOut` in the main thread after ``seconds`` (no limit elsewhere)."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def _alarm(signum: int, frame: Any) -> None:
        raise TimedOut(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_bounded(fn: Callable[[], Any], *, seconds: float = 20.0, trace_memory: bool = False) -> Outcome:
    """Call ``fn`` under a time limit and sort its ending.

    Parameters
    ----------
    fn
        The work: compile, load, and any check of the result.
    seconds
        The time limit.
    trace_memory
        Measure the peak of Python and numpy allocations with ``tracemalloc``
        (slower).
    """
    if trace_memory:
        tracemalloc.start()
        tracemalloc.reset_peak()
    start = time.perf_counter()
    value: Any = None
    error: BaseException | None = None
    try:
        with time_limit(seconds):
            value = fn()
        kind = "ok"
    except TimedOut as e:
        kind, error = "timeout", e
    except TokensieveError as e:
        kind, error = "typed", e
    except RecursionError as e:  # not an Exception subclass we allow, but must not kill the run
        kind, error = "untyped", e
    except Exception as e:  # noqa: BLE001 - sorting every ending is the point
        kind, error = "untyped", e
    elapsed = time.perf_counter() - start
    peak = 0
    if trace_memory:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return Outcome(kind, error, value, elapsed, peak)


def error_is_located(error: BaseException) -> bool:
    """Whether a typed error names the limit it hit or the place of the problem."""
    if isinstance(error, LimitExceeded):
        return bool(error.limit)
    if isinstance(error, GrammarError):
        # a position, or the rules involved ("rule 'x'", "a -> b -> a")
        return (
            error.position is not None
            or error.line is not None
            or "'" in error.message
            or "->" in error.message
        )
    if isinstance(error, SchemaError):
        return error.pointer is not None
    if isinstance(error, VocabularyError):
        return bool(str(error))
    return False


def tiny_info() -> TokenizerInfo:
    """The tiny byte-level vocabulary with EOS as the stop token."""
    vocab = make_tiny_vocab()
    return TokenizerInfo(vocab, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])


def tiny_compiler(**kwargs: Any) -> GrammarCompiler:
    """A compiler over :func:`tiny_info`, default limits, no cache of compiled grammars."""
    return GrammarCompiler(tiny_info(), cache_enabled=False, **kwargs)


def start_mask_allows_something(compiled: Any) -> bool:
    """Whether a fresh matcher offers at least one token or the stop token."""
    matcher = GrammarMatcher(compiled)
    return bool(matcher.next_token_mask().any())


@dataclass
class Isolated:
    """What one input did in a child process.

    Attributes
    ----------
    kind
        As :attr:`Outcome.kind`, or ``"crashed"`` (the child died, e.g. by a
        signal) and ``"timeout"`` (killed past the limit).
    error_type, message
        The exception's class name and first line ("" when none).
    located
        Whether a typed error names its limit or position.
    seconds
        Wall time of the call in the child (the limit when killed).
    peak_rss_bytes
        The child's peak resident memory less its resident memory before the
        call: what the call added.
    """

    kind: str
    error_type: str
    message: str
    located: bool
    seconds: float
    peak_rss_bytes: int


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_isolated(fn: Callable[[], Any], *, seconds: float = 20.0) -> Isolated:
    """Call ``fn`` in a forked child with a hard time limit and measure its peak memory.

    The child is killed when it runs past ``seconds`` (plus one second for
    the alarm inside it to answer first); its peak resident memory comes from
    ``wait4``.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report, leave without cleanup
        os.close(read_end)
        try:
            base = _rss_bytes()
            out = run_bounded(fn, seconds=seconds)
            message = str(out.error).splitlines()[0][:300] if out.error is not None and str(out.error) else ""
            report = (
                out.kind,
                type(out.error).__name__ if out.error is not None else "",
                message,
                out.kind == "typed" and out.error is not None and error_is_located(out.error),
                out.seconds,
                base,
            )
            os.write(write_end, pickle.dumps(report))
        finally:
            os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds + 1.0
    killed = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            killed = True
            break
        ready, _, _ = select.select([read_end], [], [], left)
        if ready:
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(read_end)
    _, status, usage = os.wait4(pid, 0)
    peak = usage.ru_maxrss * 1024  # kilobytes on Linux
    if killed:
        return Isolated("timeout", "", f"killed after {seconds + 1.0} s", False, seconds, peak)
    if not chunks:
        return Isolated("crashed", "", f"child ended with status {status}", False, 0.0, peak)
    kind, error_type, message, located, elapsed, base = pickle.loads(b"".join(chunks))
    return Isolated(kind, error_type, message, located, elapsed, max(0, peak - base))
