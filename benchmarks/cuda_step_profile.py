"""Where the CUDA step of a STATIC index spends its time, and what a CUDA graph saves.

Builds the headline catalog (``--n`` random semantic IDs of length ``--length``
over ``--vocab`` tokens), puts ``--rows`` rows on the prefixes of random items,
and per level times ``fill_bitmask`` + ``next_nodes`` with ``check=False`` on
CUDA tensors:

* **kernels** — GPU kernels (and copies/fills) one call launches, counted with
  ``torch.profiler``;
* **eager synced µs** — median of ``--iters`` calls, each followed by
  ``torch.cuda.synchronize()`` (host clock);
* **eager loop µs/call** — host time per call over ``--iters`` back-to-back
  calls and one synchronisation;
* **graph replay synced µs** / **graph loop µs/call** — the same call captured
  once in a ``torch.cuda.CUDAGraph`` (possible because ``check=False`` makes no
  host sync) and replayed; **graph == eager** checks the replay's bitmask and
  next nodes against an eager call.

First line: torch's cost per call on this host (``x.add_(1)`` on 140 floats)
and of an idle ``torch.cuda.synchronize()``.

Usage::

    python benchmarks/cuda_step_profile.py                       # N = 1e6, L = 8, V = 2048; 140 and 2048 rows
    python benchmarks/cuda_step_profile.py --rows 1120 --iters 500

Needs CUDA.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tokensieve.retrieval import StaticIndex


def events_median(fn: Callable[[], Any], iters: int = 300) -> float:
    """Median µs between CUDA events around one call."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    pairs = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)
    ]
    for a, b in pairs:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in pairs) * 1e3


def loop_us(fn: Callable[[], Any], iters: int = 500) -> float:
    """Host µs per call over back-to-back calls and one synchronisation."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / iters * 1e6


def synced_median(fn: Callable[[], Any], iters: int = 300) -> float:
    """Median host µs of one call followed by a synchronisation."""
    samples = []
    for _ in range(20):
        fn()
        torch.cuda.synchronize()
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e6


def profile_level(ix: StaticIndex, level: int, nodes_np: np.ndarray, toks_np: np.ndarray, iters: int) -> str:
    dev = torch.device("cuda")
    rows = len(nodes_np)
    nodes = torch.from_numpy(nodes_np).to(dev)
    toks = torch.from_numpy(toks_np).to(dev)
    bm = torch.zeros((rows, ix.bitmask_words), dtype=torch.int32, device=dev)

    def step() -> Any:
        ix.fill_bitmask(nodes, level, bm, check=False)
        return ix.next_nodes(nodes, toks, level, check=False)

    step()
    torch.cuda.synchronize()
    kernels: Any
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
    except Exception as exc:  # report, go on
        kernels = f"? ({type(exc).__name__})"
    eager_sync = synced_median(step, iters)
    eager_loop = loop_us(step, iters)
    same: Any
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step()
        ref = step()
        bm_ref = bm.clone()
        bm.zero_()
        graph.replay()
        torch.cuda.synchronize()
        same = bool(torch.equal(out, ref) and torch.equal(bm, bm_ref))
        graph_sync = f"{synced_median(graph.replay, iters):.1f}"
        graph_loop = f"{loop_us(graph.replay, iters):.1f}"
    except Exception as exc:  # report, go on
        graph_sync, graph_loop, same = "—", "—", f"failed: {type(exc).__name__}: {str(exc)[:120]}"
    return (
        f"| {rows} | {level} | {kernels} | {eager_sync:.1f} | {eager_loop:.1f} | {graph_sync} | "
        f"{graph_loop} | {same} |"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=float, default=1e6, help="catalog size")
    p.add_argument("--length", type=int, default=8, help="semantic-ID length")
    p.add_argument("--vocab", type=int, default=2048, help="codebook size")
    p.add_argument("--rows", type=int, nargs="*", default=[140, 2048], help="rows (batch x beam)")
    p.add_argument("--iters", type=int, default=300, help="timed calls per figure")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("needs CUDA: torch.cuda.is_available() is False")
        return 1
    dev = torch.device("cuda")
    x = torch.zeros(140, device=dev)
    print(
        f"{torch.cuda.get_device_name(dev)}; torch {torch.__version__}; numpy {np.__version__}\n\n"
        f"host: x.add_(1) on 140 floats: loop {loop_us(lambda: x.add_(1), 5000):.1f} µs/call, "
        f"CUDA events {events_median(lambda: x.add_(1)):.1f} µs; "
        f"idle torch.cuda.synchronize(): {synced_median(lambda: None):.1f} µs\n",
        flush=True,
    )
    rng = np.random.default_rng(args.seed)
    seqs = rng.integers(0, args.vocab, (int(args.n), args.length), dtype=np.int64)
    ix = StaticIndex.from_sequences(seqs, args.vocab)
    print(
        "| rows | level | kernels | eager synced µs | eager loop µs/call | graph replay synced µs "
        "| graph loop µs/call | graph == eager |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for rows in args.rows:
        items = seqs[rng.integers(0, len(seqs), rows)]
        nodes_np = np.zeros(rows, dtype=np.int64)
        for level in range(ix.num_levels):
            toks_np = items[:, level].astype(np.int64)
            print(profile_level(ix, level, nodes_np, toks_np, args.iters), flush=True)
            nodes_np = ix.next_nodes(nodes_np, toks_np, level)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
