"""Cold compiles: each (engine, constraint) measured in a process forked after set-up.

The headline compile figure of the JSON Schema, regex and grammar benchmarks
is the first compile of a constraint in a fresh process after imports and
per-vocabulary set-up, for every engine alike. The driver gets it by forking:
the parent imports the engines, loads the vocabulary and sets every engine up
(tokenizer objects, token tries, tokensieve's frame-walk kernel), and never
compiles anything itself. For each (engine, constraint) it forks a child, whose
state is exactly that of a process that has done the set-up and nothing else:
no process-wide memo of automata, no per-vocabulary table filled by an earlier
compile, no compiled-grammar cache. The child

1. compiles the constraint and walks the valid examples once (the **cold**
   repetition: compile, compile + first mask, per-token times of this first
   walk, which for a lazy engine include every first visit);
2. walks the invalid examples (if any) over the same compiled object, each until the
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
engines' masks can be compared across processes, or whole (``full_masks``, in
rows the child writes before it compiles) where an oracle judges the tokens
the engines dispute.

**An empty JIT cache.** tokensieve's frame walks of rule networks run in a
numba kernel compiled once per machine (``cache=True``), loaded in the set-up
(``peers.py``). With ``NUMBA_CACHE_DIR`` set to a new empty folder for the
whole run, the parent compiles the kernel during set-up (reported as set-up
time) and every child inherits it: the compile figures do not change. The first
run after installation is measured with ``empty_jit_cache``: the set-up leaves
the kernel out (:func:`kernel_not_preloaded`) and every child sets its own new
empty cache folder before numba is imported, so its first rule-network walk
starts compiling the kernel in a background thread, as in a fresh server's
first request, and the child's cold figures include what that costs it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import pickle
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from harness import EngineResult, MaskStore, Walk, fmt, geomean, iter_rows, run_engine_workload
from peers import Engine
from workloads import Workload

__all__ = [
    "ColdResult", "DigestStore", "add_cold_arguments", "failed", "jit_cache_note", "kernel_not_preloaded", "render_cold_table", "run_cold",
    "run_cold_workloads",
]


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
    budget_s: float, comparable: np.ndarray, full_masks: bool,
) -> ColdResult:
    started = time.perf_counter()
    store: MaskStore | DigestStore = DigestStore(comparable)
    if full_masks:  # rows written now, before the compile (see MaskStore)
        store = MaskStore(sum(len(w.token_ids) + 1 for w in walks), engine.bitmask.shape[1])
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
        return _measure(engine, workload, walks, invalid, repeat, budget_s, store, started)
    except _Budget:
        where = f"the cold compile took {compile_ms[0]:,.0f} ms" if compile_ms else "during the cold compile"
        return ColdResult(
            engine.name, workload.name, error=f"ran past the budget of {budget_s:g} s ({where})", timed_out=True
        )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _measure(
    engine: Engine, workload: Workload, walks: list[Walk], invalid: list[list[int]], repeat: int,
    budget_s: float, store: MaskStore | DigestStore, started: float,
) -> ColdResult:
    out = ColdResult(engine.name, workload.name)
    cold = run_engine_workload(
        engine, workload, walks, 1, log=False, store=store, keep_compiled=True  # type: ignore[arg-type]
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
    *,
    full_masks: bool = False,
    empty_jit_cache: bool = False,
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
    full_masks
        Keep the cold walk's masks whole (for an oracle's judgement of disputed tokens),
        not as digests.
    empty_jit_cache
        Give the child a new empty ``NUMBA_CACHE_DIR`` before anything runs (removed when it
        ends); the kernels must not be loaded in this process (see :func:`kernel_not_preloaded`).
    """
    if empty_jit_cache and _KERNEL_MODULE in sys.modules:
        raise RuntimeError("the frame-walk kernel is loaded already: set up inside kernel_not_preloaded()")
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        code = 0
        folder = _new_jit_cache() if empty_jit_cache else None
        try:
            payload: Any = _child(engine, workload, walks, invalid, repeat, budget_s, comparable, full_masks)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            payload = ColdResult(engine.name, workload.name, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
            traceback.print_exc(limit=3)
            code = 1
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
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


def run_cold_workloads(
    engines: Sequence[Engine],
    workloads: Sequence[Workload],
    walks: dict[str, list[Walk]],
    repeat: int,
    budget_s: float,
    comparable: np.ndarray,
    empty_jit_cache: bool = False,
) -> list[ColdResult]:
    """:func:`run_cold` for every workload and engine, whole masks kept, progress on stderr (no invalid examples)."""
    results = []
    for w in workloads:
        print(f"workload {w.name}", file=sys.stderr)
        for engine in engines:
            r = run_cold(engine, w, walks[w.name], [], repeat, budget_s, comparable,
                         full_masks=True, empty_jit_cache=empty_jit_cache)
            results.append(r)
            if r.compiled and r.cold is not None:
                warm = fmt(r.warm.median("first_mask_ms")) if r.warm else "—"
                print(f"  {engine.name:<10} cold {fmt(r.cold.median('first_mask_ms'))} ms, warm {warm} ms, "
                      f"mean {fmt(r.cold.median('mean'))} µs/token, failures {r.cold.failure_count}", file=sys.stderr)
            else:
                print(f"  {engine.name:<10} {r.error}", file=sys.stderr)
    return results


def add_cold_arguments(parser: argparse.ArgumentParser) -> None:
    """``--repeat`` and ``--budget`` as the regex and grammar benchmarks take them."""
    parser.add_argument(
        "--repeat", type=int, default=5,
        help="repetitions per engine and workload in one process: the first cold, the others warm (default: 5)",
    )
    parser.add_argument(
        "--budget", type=float, default=300.0,
        help="wall-clock seconds per engine and workload (compile, walks, warm repetitions while half of it "
        "lasts); past it the workload counts as failed for that engine (default: 300)",
    )


def failed(results: Sequence[ColdResult]) -> bool:
    """Whether any engine errored, ran past its budget or failed a walk check in any repetition."""
    return any(not r.compiled or (r.cold is not None and r.cold.failure_count)
               or (r.warm is not None and r.warm.failure_count) for r in results)


#: the columns of the regex and grammar reports: (label, repetition, statistic); cold figures first,
#: the warm ones (medians over the repetitions after the first, in the same process) beside them
_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("cold compile ms", "cold", "compile_ms"),
    ("cold compile + 1st mask ms", "cold", "first_mask_ms"),
    ("warm compile + 1st mask ms", "warm", "first_mask_ms"),
    ("mean µs", "cold", "mean"),
    ("p50 µs", "cold", "p50"),
    ("p99 µs", "cold", "p99"),
    ("max µs", "cold", "max"),
    ("warm mean µs", "warm", "mean"),
    ("warm p99 µs", "warm", "p99"),
)
#: the ratios ours/peer shown on every row (indices into _COLUMNS): cold compile + 1st mask, mean, p99
_ROW_RATIOS = (1, 3, 5)


def _figure(r: ColdResult | None, repetition: str, statistic: str) -> float | None:
    if r is None or not r.compiled:
        return None
    part = r.cold if repetition == "cold" else r.warm
    return None if part is None else part.median(statistic)


def render_cold_table(
    results: Sequence[ColdResult], engines: Sequence[str], workloads: Sequence[Workload], baseline: str = "ours"
) -> list[str]:
    """Markdown lines: one row per workload and engine, then the geometric means of ours/peer.

    Cold figures are of the first repetition of each child (compile, first
    mask, per-token times of its walk), warm ones the medians over the others.
    """
    has_baseline = baseline in engines and len(engines) > 1
    header = ["workload", "engine", *(label for label, _, _ in _COLUMNS), "steps", "failures"]
    if has_baseline:
        header += [f"{baseline}/peer {_COLUMNS[i][0].removesuffix(' ms').removesuffix(' µs')}" for i in _ROW_RATIOS]
    lines = ["| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
    ratios: dict[str, list[list[float]]] = {e: [[] for _ in _COLUMNS] for e in engines}
    for w, name, r, base in iter_rows(results, workloads, engines, baseline):
        if not r.compiled or r.cold is None:
            lines.append(f"| {w.name} | {name} | error: {r.error} |" + " |" * (len(header) - 3))
            continue
        values = [_figure(r, rep, stat) for _, rep, stat in _COLUMNS]
        steps = r.cold.token_stats[0].count if r.cold.token_stats else 0
        failures = r.cold.failure_count + (r.warm.failure_count if r.warm else 0)
        cells = [w.name, name, *(fmt(v) for v in values), str(steps), str(failures)]
        if has_baseline:
            quotients = [
                None if name == baseline or v is None or not b else b / v
                for v, b in zip(values, (_figure(base, rep, stat) for _, rep, stat in _COLUMNS), strict=True)
            ]
            for i, q in enumerate(quotients):
                if q is not None:
                    ratios[name][i].append(q)
            cells += ["—" if quotients[i] is None else f"{quotients[i]:.2f}" for i in _ROW_RATIOS]
        lines.append("| " + " | ".join(cells) + " |")
    if has_baseline:
        lines += [
            "",
            f"Geometric mean over workloads of {baseline}/peer (below 1: {baseline} is faster):",
            "",
            "| peer | workloads | " + " | ".join(label for label, _, _ in _COLUMNS) + " |",
            "|---|---:|" + "---:|" * len(_COLUMNS),
        ]
        for name in engines:
            if name == baseline:
                continue
            means = [geomean(q) for q in ratios[name]]
            lines.append(f"| {name} | {len(ratios[name][1])} | "
                         + " | ".join("—" if g is None else f"{g:.2f}" for g in means) + " |")
    return lines


#: the module of tokensieve's numba kernel (imported when the kernel is loaded)
_KERNEL_MODULE = "tokensieve.compile._frame_kernel"


def _new_jit_cache() -> str:
    """Point numba's cache at a new empty folder (numba reads it on import, or here if imported)."""
    folder = tempfile.mkdtemp(prefix="numba-cache-")
    os.environ["NUMBA_CACHE_DIR"] = folder
    numba = sys.modules.get("numba")
    if numba is not None:
        numba.config.CACHE_DIR = folder
    return folder


@contextlib.contextmanager
def kernel_not_preloaded() -> Iterator[None]:
    """Set engines up inside this block to leave tokensieve's frame-walk kernel unloaded.

    ``peers.py`` loads the kernel in tokensieve's set-up so that no compile pays
    for it; inside this block that load does nothing, and the first rule-network
    walk of each child loads (or, with an empty cache, compiles) it instead.
    """
    try:
        from tokensieve.compile import frame_walk
    except ImportError:  # a tokensieve without the kernel: nothing to leave out
        yield
        return
    saved = frame_walk.load_kernel
    frame_walk.load_kernel = lambda: None  # type: ignore[assignment]
    try:
        yield
    finally:
        frame_walk.load_kernel = saved


def _cache_state_at_start() -> str:
    folder = os.environ.get("NUMBA_CACHE_DIR", "")
    return "empty" if folder and os.path.isdir(folder) and not os.listdir(folder) else "as found"


#: the state of the JIT cache when this module was imported (before any set-up could fill it)
_CACHE_AT_START = _cache_state_at_start()


def jit_cache_note(empty_per_child: bool = False) -> str:
    """Whether tokensieve runs numba kernels, and where their on-disk cache is.

    tokensieve's set-up (``peers.py``) loads its frame-walk kernel, compiling it
    first when the cache is empty: with ``NUMBA_CACHE_DIR`` set to a new empty
    folder for the run, that cost is in the set-up time and no child pays it
    (the note says the cache was empty at start). ``empty_per_child``: the run
    gave every child a new empty cache and left the kernel out of the set-up.
    """
    if empty_per_child:
        return ("kernel not loaded in the set-up; every child starts with a new empty NUMBA_CACHE_DIR "
                "and compiles the frame-walk kernel on its first rule-network walk (in a background thread)")
    if "numba" not in sys.modules:
        return "tokensieve does not use numba: no JIT cache to empty"
    folder = os.environ.get("NUMBA_CACHE_DIR", "")
    return f"numba in use; NUMBA_CACHE_DIR={folder or '(default: beside the modules)'}, {_CACHE_AT_START} at start"
