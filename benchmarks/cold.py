"""Cold compiles: each (engine, constraint) measured in a process forked after set-up.

The headline compile figure of the JSON Schema benchmark is the first compile
of a constraint in a fresh process after imports and per-vocabulary set-up,
for every engine alike. The driver gets it by forking: the parent imports the
engines, loads the vocabulary and sets every engine up (tokenizer objects,
token tries), and never compiles anything itself. For each (engine, schema) it
forks a child, whose state is exactly that of a process that has done the
set-up and nothing else: no process-wide memo of automata, no per-vocabulary
table filled by an earlier compile, no compiled-grammar cache. The child

1. compiles the schema and walks the valid examples once (the **cold**
   repetition: compile, compile + first mask, per-token times of this first
   walk, which for a lazy engine include every first visit);
2. walks the invalid examples over the same compiled object, each until the
   engine refuses a token or the stop token (rejected, as it should be) or
   accepts the whole text and the stop token (accepted: a failure);
3. repeats compile and walk ``repeat - 1`` times in the same process (the
   **warm** repetitions: every memo the first compile filled is warm, as in a
   server that has seen the schema's parts before), while half its budget lasts;

and sends its results back through a pipe. Each child has a wall-clock budget
for all of it: an alarm stops it when the budget is spent (noting how long the
cold compile took, if it finished), and the parent kills a child still running
15 s later (a call into native code that does not return). Either way the
schema counts as failed for that engine, with the time noted. Memory is bounded by the
process-wide ``RLIMIT_AS`` the caller sets, which children inherit.

Forking copies the parent's pages copy-on-write, so a child pays a page fault
the first time it writes a page the parent set up (a fresh process would pay one
for every page it touches). The masks of the cold walk are kept as digests of
the bits every engine must agree on (regular tokens and EOS), so that two
engines' masks can be compared across processes.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import select
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from harness import EngineResult, Walk, run_engine_workload
from peers import Engine
from workloads import Workload

__all__ = ["ColdResult", "DigestStore", "run_cold", "jit_cache_note"]


class DigestStore:
    """Keeps a digest of each recorded mask's comparable bits instead of the mask itself."""

    def __init__(self, comparable: np.ndarray) -> None:
        self._comparable = comparable.view(np.uint32)

    def keep(self, row: np.ndarray) -> bytes:
        """The digest of ``row``'s bits on regular tokens and EOS."""
        return hashlib.blake2b((row.view(np.uint32) & self._comparable).tobytes(), digest_size=16).digest()


class _Discard:
    """A store that keeps nothing (masks of warm repetitions are not compared)."""

    def keep(self, row: np.ndarray) -> None:
        return None


@dataclass
class ColdResult:
    """One engine on one schema: the cold repetition, the warm ones, the invalid walks."""

    engine: str
    workload: str
    error: str | None = None
    timed_out: bool = False
    wall_s: float = 0.0
    cold: EngineResult | None = None
    warm: EngineResult | None = None
    invalid_total: int = 0
    invalid_accepted: list[int] = field(default_factory=list)

    @property
    def compiled(self) -> bool:
        """The cold compile finished without error."""
        return self.error is None and self.cold is not None and self.cold.error is None

    @property
    def valid_ok(self) -> bool:
        """Every valid example was walked without a failed check."""
        return self.compiled and self.cold is not None and self.cold.failure_count == 0

    @property
    def passed(self) -> bool:
        """Compiled, every valid example accepted and every invalid one rejected."""
        return self.valid_ok and not self.invalid_accepted

    def summary(self) -> dict[str, Any]:
        """JSON-ready record."""
        return {
            "engine": self.engine,
            "workload": self.workload,
            "error": self.error,
            "timed_out": self.timed_out,
            "wall_s": self.wall_s,
            "cold": self.cold.summary() if self.cold else None,
            "warm": self.warm.summary() if self.warm else None,
            "invalid_total": self.invalid_total,
            "invalid_accepted": self.invalid_accepted,
            "passed": self.passed,
        }


def _bit(mask: np.ndarray, token_id: int) -> bool:
    return bool((int(mask[token_id >> 5]) >> (token_id & 31)) & 1)


def rejects(engine: Engine, compiled: Any, token_ids: list[int]) -> bool:
    """Whether the engine refuses the text somewhere: a token or the stop token outside the mask, or not accepted."""
    assert engine.vocab is not None
    eos = engine.vocab.eos_token_id
    row = engine.bitmask[0]
    matcher = engine.matcher(compiled)
    for token_id in [*token_ids, eos]:
        matcher.fill()
        if not _bit(row, token_id) or not matcher.accept(token_id):
            return True
    return not matcher.is_terminated()


#: seconds a child may run past its budget (its own alarm stops it at the budget) before it is killed
_GRACE_S = 15.0


class _Budget(BaseException):
    """Raised in a child by its alarm when the budget is spent (not an ``Exception``: the harness lets it through)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Budget


def _child(
    engine: Engine, workload: Workload, walks: list[Walk], invalid: list[list[int]], repeat: int,
    budget_s: float, comparable: np.ndarray,
) -> ColdResult:
    started = time.perf_counter()
    compile_ms: list[float] = []
    compile_once = engine.compile

    def timed_compile(w: Workload) -> Any:
        t = time.perf_counter()
        compiled = compile_once(w)
        compile_ms.append((time.perf_counter() - t) * 1e3)
        return compiled

    engine.compile = timed_compile  # type: ignore[method-assign]
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, budget_s)
    try:
        return _measure(engine, workload, walks, invalid, repeat, budget_s, comparable, started)
    except _Budget:
        where = f"the cold compile took {compile_ms[0]:,.0f} ms" if compile_ms else "during the cold compile"
        return ColdResult(
            engine.name, workload.name, error=f"ran past the budget of {budget_s:g} s ({where})", timed_out=True
        )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _measure(
    engine: Engine, workload: Workload, walks: list[Walk], invalid: list[list[int]], repeat: int,
    budget_s: float, comparable: np.ndarray, started: float,
) -> ColdResult:
    out = ColdResult(engine.name, workload.name)
    cold = run_engine_workload(
        engine, workload, walks, 1, log=False, store=DigestStore(comparable), keep_compiled=True  # type: ignore[arg-type]
    )
    out.cold = cold
    if cold.error is not None:
        return out
    out.invalid_total = len(invalid)
    out.invalid_accepted = [i for i, ids in enumerate(invalid) if not rejects(engine, cold.compiled, ids)]
    cold.compiled = None
    warm: EngineResult | None = None
    for _ in range(repeat - 1):
        if time.perf_counter() - started > budget_s / 2:
            break
        one = run_engine_workload(engine, workload, walks, 1, log=False, store=_Discard())  # type: ignore[arg-type]
        if warm is None:
            warm = one
        else:
            warm.compile_ms += one.compile_ms
            warm.first_mask_ms += one.first_mask_ms
            warm.token_stats += one.token_stats
            warm.failure_count += one.failure_count
    if warm is not None:
        warm.masks = {}
    out.warm = warm
    return out


def run_cold(
    engine: Engine,
    workload: Workload,
    walks: list[Walk],
    invalid: list[list[int]],
    repeat: int,
    budget_s: float,
    comparable: np.ndarray,
) -> ColdResult:
    """Measure ``engine`` on ``workload`` in a forked child (see the module docstring).

    Parameters
    ----------
    engine
        A set-up engine of this (parent) process; it must not have compiled anything.
    workload, walks
        The constraint and its valid examples as token walks.
    invalid
        Token ids of the invalid examples.
    repeat
        Repetitions in the child: the first is cold, the others warm.
    budget_s
        Wall-clock seconds the child may take before it is killed.
    comparable
        ``uint32`` words of the ids whose mask bits are compared (regular tokens and EOS).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        code = 0
        try:
            payload: Any = _child(engine, workload, walks, invalid, repeat, budget_s, comparable)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            payload = ColdResult(engine.name, workload.name, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
            traceback.print_exc(limit=3)
            code = 1
        try:
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view):]
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = started + budget_s + _GRACE_S
    timed_out = False
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read_fd], [], [], min(left, 1.0))
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    wall = time.perf_counter() - started
    if timed_out:
        return ColdResult(
            engine.name, workload.name, error=f"killed after {wall:.0f} s (past the budget of {budget_s:g} s)",
            timed_out=True, wall_s=wall,
        )
    try:
        result: ColdResult = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - a child killed by the kernel (memory) sends nothing
        if os.WIFSIGNALED(status):
            why = f"killed by signal {os.WTERMSIG(status)}"
        else:
            why = f"exit status {os.WEXITSTATUS(status)}, no result"
        return ColdResult(engine.name, workload.name, error=f"child died ({why})", wall_s=wall)
    result.wall_s = wall
    if result.cold is not None and result.cold.error is not None and result.error is None:
        result.error = result.cold.error
    return result


def jit_cache_note() -> str:
    """Whether tokensieve runs numba kernels, and where their on-disk cache is.

    Once tokensieve compiles kernels with numba (``cache=True``), the first
    compile after installation also pays for compiling them. Run the benchmark
    with ``NUMBA_CACHE_DIR`` set to a new empty folder to measure that: every
    forked child starts without the kernels in memory, and the first child to
    need one compiles it and writes it there (later children load it).
    """
    if "numba" not in sys.modules:
        return "tokensieve does not use numba: no JIT cache to empty"
    folder = os.environ.get("NUMBA_CACHE_DIR", "")
    state = "empty" if folder and os.path.isdir(folder) and not os.listdir(folder) else "as found"
    return f"numba in use; NUMBA_CACHE_DIR={folder or '(default: beside the modules)'}, {state} at start"
