"""Latency of ``apply_token_bitmask_inplace`` on torch tensors (CUDA when available).

For every batch size and logits dtype: ``(batch, vocab)`` logits and a random
``int32`` bitmask ``(batch, ceil(vocab / 32))`` (about half the tokens allowed),
both on the device, then the median over ``--iters`` calls of:

* **call µs** — one ``apply_token_bitmask_inplace(logits, bitmask)``, timed on
  the GPU with a pair of CUDA events around it (so it includes the gaps while
  the host launches the call's kernels); on CPU, ``time.perf_counter``;
* **loop µs** — host time per call over a loop of ``--iters`` calls followed by
  one ``torch.cuda.synchronize()`` (back-to-back throughput);
* **numpy-mask call µs** — like *call µs*, but the bitmask is a numpy array,
  copied to the device inside the call (a mask filled on the host);
* **masked_fill_ µs** — ``logits.masked_fill_(disallowed, -inf)`` with a
  precomputed ``bool`` mask: the one pass over the logits that any
  implementation needs, for scale.

The logits are not refreshed between calls: masking logits that are already
masked does the same work.

Usage::

    python benchmarks/bitmask_bench.py                                   # V = 131072; batch 1, 16, 128; float32, bfloat16
    python benchmarks/bitmask_bench.py --batch 1 8 64 --vocab 32000 --dtype float16 --iters 500
    python benchmarks/bitmask_bench.py --device cpu --iters 50

Progress goes to stderr, the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from tokensieve import apply_token_bitmask_inplace


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def per_call(torch: Any, device: Any, fn: Callable[[], Any], iters: int, warmup: int) -> float:
    """Median seconds of one call (CUDA events on a GPU, perf_counter on CPU)."""
    for _ in range(warmup):
        fn()
    if device.type != "cuda":
        samples = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
        return statistics.median(samples)
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for s, e in zip(starts, ends, strict=True):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)) / 1e3


def loop(torch: Any, device: Any, fn: Callable[[], Any], iters: int, warmup: int) -> float:
    """Host seconds per call over ``iters`` back-to-back calls and one synchronisation."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - t0) / iters


def run_case(torch: Any, device: Any, batch: int, dtype: Any, rng: np.random.Generator, args: Any) -> str:
    """One table row: the four timings for ``(batch, args.vocab)`` logits of ``dtype``."""
    words = (args.vocab + 31) // 32
    mask_np = rng.integers(-(2**31), 2**31, (batch, words), dtype=np.int64).astype(np.int32)
    mask = torch.from_numpy(mask_np).to(device)
    source = torch.randn((batch, args.vocab), device=device).to(dtype)
    logits = source.clone()
    shifts = torch.arange(32, device=device, dtype=torch.int32)
    disallowed = ~((mask.unsqueeze(-1) >> shifts) & 1).bool().reshape(batch, -1)[:, : args.vocab]
    # correctness against the precomputed mask before timing
    apply_token_bitmask_inplace(logits, mask)
    assert torch.equal(logits, source.masked_fill(disallowed, float("-inf"))), "disagrees with the bool mask"
    logits.copy_(source)
    call = partial(apply_token_bitmask_inplace, logits, mask)
    call_np = partial(apply_token_bitmask_inplace, logits, mask_np)
    floor = partial(logits.masked_fill_, disallowed, float("-inf"))
    call_t = per_call(torch, device, call, args.iters, args.warmup)
    loop_t = loop(torch, device, call, args.iters, args.warmup)
    np_t = per_call(torch, device, call_np, args.iters, args.warmup)
    floor_t = per_call(torch, device, floor, args.iters, args.warmup)
    mb = batch * args.vocab * source.element_size() / 1e6
    name = str(dtype).removeprefix("torch.")
    return (
        f"| {batch} | {name} | {mb:,.1f} | {call_t * 1e6:,.1f} | {loop_t * 1e6:,.1f} | "
        f"{np_t * 1e6:,.1f} | {floor_t * 1e6:,.1f} |"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, nargs="*", default=[1, 16, 128], help="rows of logits")
    p.add_argument("--vocab", type=int, default=131072, help="logit columns")
    p.add_argument("--dtype", nargs="*", default=["float32", "bfloat16"], help="logits dtypes")
    p.add_argument("--iters", type=int, default=300, help="timed calls per figure")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    import torch

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    timer = "CUDA events" if device.type == "cuda" else "time.perf_counter"
    rng = np.random.default_rng(args.seed)
    print("# apply_token_bitmask_inplace benchmark\n")
    print(
        f"device {name}; torch {torch.__version__}; numpy {np.__version__}; V = {args.vocab:,}; "
        f"median of {args.iters} calls ({timer}); loop = host time per call over {args.iters} "
        "back-to-back calls and one synchronize\n"
    )
    print("| batch | dtype | logits MB | call µs | loop µs | numpy-mask call µs | masked_fill_ µs |")
    print("|---|---|---|---|---|---|---|")
    for dtype_name in args.dtype:
        for batch in args.batch:
            log(f"batch {batch} {dtype_name}")
            print(run_case(torch, device, batch, getattr(torch, dtype_name), rng, args), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
