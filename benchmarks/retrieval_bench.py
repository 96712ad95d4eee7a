"""STATIC retrieval index benchmark: build, memory and per-step latency.

For every catalog (N random semantic IDs of length L over a V-token codebook):

* **build**: ``StaticIndex.from_sequences`` wall time (the first build, and the
  fastest of ``--build-repeat`` builds for N <= 1e6) and ``nbytes`` next to the
  CSR + packed dense bytes it holds;
* per (batch x beam) shape and per level, the fastest (``--stat min``, the
  default: other processes only ever add time, so the minimum is the best
  estimate of the cost on a shared machine) or the median of ``--repeat``
  timed batches of:

  - **constraint** — ``fill_bitmask`` + ``next_nodes`` for all rows (the
    per-step constraint work through the public API, argument checks on);
  - **HF+dict** — ``transformers``' ``PrefixConstrainedLogitsProcessor`` with a
    dict-of-dicts trie: what ``prefix_allowed_tokens_fn`` users run (per row:
    walk the prefix from the root, list the children, mask the row);
  - **dict/row** — the plain per-row reading: per row, walk the prefix from
    the root of a dict-of-dicts trie and set that row's allowed tokens in a
    boolean mask (one numpy assignment per row), then one ``packbits``;
  - **dict** — a leaner dict-trie baseline: the same per-row walk, but one
    batched numpy assignment and one ``packbits`` for all rows (a bitmask, like
    ours);
  - **beam step** — one full constrained beam-search step: log-softmax over
    ``(rows, V)`` float32 logits, masking, top-k over ``beam x candidates`` per
    query and the new node ids; **HF beam step** is log-softmax, the HF
    processor and top-k in torch;
  - with ``--torch-cpu``: constraint and beam step on CPU tensors; with
    ``torch.cuda`` available: the same on CUDA tensors (synchronised).

Rows at level ``l`` sit on the prefixes of randomly drawn catalog items (level
0: all at the root). The dict trie is built only for ``N <= --dict-max-n`` (it
costs about 250 bytes of Python objects per node); larger catalogs show "—".
Every dict mask is checked against the index's mask before timing.

Usage::

    python benchmarks/retrieval_bench.py                     # quick subset (N=1e5, 1e6; L=8; V=2048)
    python benchmarks/retrieval_bench.py --full              # every N, L, V and shape
    python benchmarks/retrieval_bench.py --n 1e6 --length 8 --vocab 2048 --shapes 2x70

Progress goes to stderr, the markdown tables to stdout.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tokensieve.retrieval import StaticIndex
from tokensieve.retrieval.beam import _NumpyOps, _Search, _TorchOps

QUICK = {"n": [10**5, 10**6], "length": [8], "vocab": [2048], "shapes": ["2x70", "8x16"]}
FULL = {
    "n": [10**5, 10**6, 10**7],
    "length": [4, 8],
    "vocab": [256, 1024, 2048, 8192],
    "shapes": ["2x70", "8x16"],
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


STAT: Callable[[list[float]], float] = min
BATCH_TIME = 0.002


def measure(fn: Callable[[], Any], *, repeat: int, min_time: float | None = None) -> float:
    """Seconds per call: :data:`STAT` over ``repeat`` batches of calls (each batch >= ``min_time``)."""
    min_time = BATCH_TIME if min_time is None else min_time
    fn()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t0 >= min_time or number >= 1 << 16:
            break
        number *= 2
    samples = []
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            samples.append((time.perf_counter() - t0) / number)
    finally:
        gc.enable()
    return STAT(samples)


# ------------------------------------------------------------------ baselines


def build_dict_trie(seqs: np.ndarray) -> dict:
    root: dict = {}
    for seq in seqs.tolist():
        node = root
        for t in seq:
            node = node.setdefault(t, {})
    return root


def dict_bitmask(trie: dict, history: np.ndarray, vocab: int) -> np.ndarray:
    """Bitmask rows from the dict trie: a prefix walk per row, one batched assignment."""
    rows: list[int] = []
    cols: list[int] = []
    for r, prefix in enumerate(history.tolist()):
        node = trie
        for t in prefix:
            node = node[t]
        children = list(node)
        cols += children
        rows += [r] * len(children)
    words = (vocab + 31) // 32
    allowed = np.zeros((history.shape[0], words * 32), dtype=bool)
    allowed[rows, cols] = True
    return np.packbits(allowed, axis=1, bitorder="little").view(np.int32)


def dict_bitmask_per_row(trie: dict, history: np.ndarray, vocab: int) -> np.ndarray:
    """Bitmask rows from the dict trie, one row at a time (walk, then assign that row)."""
    words = (vocab + 31) // 32
    allowed = np.zeros((history.shape[0], words * 32), dtype=bool)
    for r, prefix in enumerate(history.tolist()):
        node = trie
        for t in prefix:
            node = node[t]
        allowed[r, list(node)] = True
    return np.packbits(allowed, axis=1, bitorder="little").view(np.int32)


def hf_processor(trie: dict, beam: int) -> Any:
    """transformers' PrefixConstrainedLogitsProcessor over the dict trie (None without transformers)."""
    try:
        from transformers.generation.logits_process import PrefixConstrainedLogitsProcessor
    except ImportError:
        return None

    def allowed_tokens(batch_id: int, sent: Any) -> list[int]:
        node = trie
        for t in sent.tolist():
            node = node[t]
        return list(node)

    return PrefixConstrainedLogitsProcessor(allowed_tokens, beam)


def hf_beam_step(proc: Any, torch: Any, ids: Any, logits: Any, scores: Any, batch: int, beam: int) -> Any:
    """One Hugging Face-style beam step: log-softmax, the processor, top-k per query."""
    logp = proc(ids, torch.log_softmax(logits, dim=-1))
    vocab = logp.shape[1]
    top, idx = torch.topk((logp + scores[:, None]).view(batch, beam * vocab), beam, dim=1)
    parent = (torch.arange(batch)[:, None] * beam + idx // vocab).view(-1)
    return torch.cat([ids[parent], (idx % vocab).view(-1, 1)], dim=1), top


# ------------------------------------------------------------------ states


@dataclass
class LevelState:
    level: int
    nodes: np.ndarray
    history: np.ndarray
    tokens: np.ndarray


def level_states(
    index: StaticIndex, seqs: np.ndarray, rows: int, rng: np.random.Generator
) -> list[LevelState]:
    items = seqs[rng.integers(0, len(seqs), rows)]
    nodes = np.zeros(rows, dtype=np.int64)
    out = []
    for level in range(index.num_levels):
        tokens = items[:, level].astype(np.int64)
        out.append(LevelState(level, nodes, items[:, :level].astype(np.int64), tokens))
        nodes = index.next_nodes(nodes, tokens, level)
    return out


@dataclass
class Backend:
    """How to run our side on one kind of array."""

    name: str
    ops: Any
    to: Callable[[np.ndarray], Any]
    sync: Callable[[], None]
    check: bool


def time_constraint(index: StaticIndex, st: LevelState, be: Backend, repeat: int) -> float:
    nodes, tokens = be.to(st.nodes), be.to(st.tokens)
    bitmask = be.to(np.zeros((len(st.nodes), index.bitmask_words), dtype=np.int32))

    def pair() -> None:
        index.fill_bitmask(nodes, st.level, bitmask, check=be.check)
        index.next_nodes(nodes, tokens, st.level, check=be.check)
        be.sync()

    return measure(pair, repeat=repeat)


def time_beam_step(
    index: StaticIndex, st: LevelState, logits: np.ndarray, batch: int, beam: int, be: Backend, repeat: int
) -> float:
    search = _Search(index, be.ops, batch, beam, False, None)
    fields = (
        be.to(st.nodes),
        be.to(np.zeros(batch * beam)),
        be.to(np.full(batch * beam, st.level, dtype=np.int64)),
        be.to(st.history),
    )
    lg = be.to(logits)

    def step() -> None:
        search.nodes, search.scores, search.lengths, search.history = fields
        search.step(lg, st.level)
        be.sync()

    return measure(step, repeat=repeat)


def time_baselines(
    trie: dict | None,
    proc: Any,
    st: LevelState,
    logits: np.ndarray,
    batch: int,
    beam: int,
    vocab: int,
    repeat: int,
) -> tuple[float | None, float | None, float | None, float | None]:
    if trie is None:
        return None, None, None, None
    dict_t = measure(lambda: dict_bitmask(trie, st.history, vocab), repeat=repeat)
    row_t = measure(lambda: dict_bitmask_per_row(trie, st.history, vocab), repeat=repeat)
    if proc is None:
        return None, row_t, dict_t, None
    import torch

    ids = torch.from_numpy(st.history)
    logits_t = torch.from_numpy(logits)
    zeros = torch.zeros(len(st.nodes))
    hf_t = measure(lambda: proc(ids, logits_t), repeat=repeat)
    hf_step = measure(lambda: hf_beam_step(proc, torch, ids, logits_t, zeros, batch, beam), repeat=repeat)
    return hf_t, row_t, dict_t, hf_step


# ------------------------------------------------------------------ report


def fmt_us(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e6:,.1f}"


def fmt_ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{a / b:,.0f}×"


def torch_backends(args: argparse.Namespace) -> list[Backend]:
    out: list[Backend] = []
    try:
        import torch
    except ImportError:
        return out
    if args.torch_cpu:
        cpu = torch.device("cpu")
        out.append(
            Backend(
                "torch cpu",
                _TorchOps(cpu),
                lambda a: torch.from_numpy(np.ascontiguousarray(a)),
                lambda: None,
                True,
            )
        )
    if not args.no_cuda and torch.cuda.is_available():
        dev = torch.device("cuda")
        out.append(
            Backend(
                "cuda",
                _TorchOps(dev),
                lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(dev),
                torch.cuda.synchronize,
                False,
            )
        )
    return out


def run_catalog(
    n: int,
    length: int,
    vocab: int,
    shapes: list[tuple[int, int]],
    args: argparse.Namespace,
    extra: list[Backend],
) -> list[str]:
    rng = np.random.default_rng(args.seed)
    log(f"catalog N={n:,} L={length} V={vocab}: sampling")
    seqs = rng.integers(0, vocab, (n, length), dtype=np.int64)
    builds = []
    index: StaticIndex | None = None
    for _ in range(args.build_repeat if n <= 10**6 else 1):
        index = None
        gc.collect()
        t0 = time.perf_counter()
        index = StaticIndex.from_sequences(seqs, vocab, dense_depth=args.dense_depth)
        builds.append(time.perf_counter() - t0)
    assert index is not None
    peak = None
    if args.trace_memory:
        import tracemalloc

        index = None
        gc.collect()
        tracemalloc.start()
        index = StaticIndex.from_sequences(seqs, vocab, dense_depth=args.dense_depth)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    mem = index.memory_usage()
    held = mem["csr"] + mem["dense"]
    log(f"  built in {builds[0]:.2f} s, {index.nbytes / 1e6:.1f} MB")
    trie = None
    dict_build = None
    if n <= args.dict_max_n and not args.no_dict:
        t0 = time.perf_counter()
        trie = build_dict_trie(seqs)
        dict_build = time.perf_counter() - t0
        log(f"  dict trie built in {dict_build:.1f} s")
    lines = [
        f"### N={n:,} L={length} V={vocab}",
        "",
        f"- build: first {builds[0]:.2f} s, fastest {min(builds):.2f} s of {len(builds)}"
        + ("" if dict_build is None else f" (dict trie: {dict_build:.1f} s)")
        + (
            ""
            if peak is None
            else f"; build peak {peak / 1e9:.2f} GB of numpy/Python allocations (tracemalloc)"
        ),
        f"- memory: nbytes {index.nbytes / 1e6:,.1f} MB = {index.nbytes / held:.3f} × the CSR + dense data "
        f"({mem['csr'] / 1e6:,.1f} + {mem['dense'] / 1e6:,.1f} MB) with the item map "
        f"({mem['items'] / 1e6:,.1f} MB), {(index.nbytes - mem['items']) / held:.3f} × without (item_map=False)",
        f"- {index.num_nodes:,} nodes; level widths {index.level_width.tolist()}; dense levels < {index.dense_depth}",
        "",
    ]
    header = (
        "| batch×beam | level | kind | width | constraint µs | HF+dict µs | HF/ours | dict/row µs | row/ours "
        "| dict µs | dict/ours | beam step µs | HF beam step µs | HF/ours |"
    )
    header += "".join(f" {be.name} constraint µs | {be.name} beam step µs |" for be in extra)
    lines += [header, "|" + "---|" * (14 + 2 * len(extra))]
    numpy_be = Backend("numpy", _NumpyOps(), lambda a: a, lambda: None, True)
    for batch, beam in shapes:
        rows = batch * beam
        states = level_states(index, seqs, rows, rng)
        logits = rng.standard_normal((rows, index.num_columns), dtype=np.float32)
        proc = hf_processor(trie, beam) if trie is not None else None
        for st in states:
            if trie is not None:
                got = index.fill_bitmask(st.nodes, st.level, np.zeros((rows, index.bitmask_words), np.int32))
                assert np.array_equal(got, dict_bitmask(trie, st.history, vocab)), (
                    "dict trie and index disagree"
                )
                assert np.array_equal(got, dict_bitmask_per_row(trie, st.history, vocab))
            ours = time_constraint(index, st, numpy_be, args.repeat)
            ours_step = time_beam_step(index, st, logits, batch, beam, numpy_be, args.repeat)
            hf_t, row_t, dict_t, hf_step = time_baselines(
                trie, proc, st, logits, batch, beam, vocab, args.baseline_repeat
            )
            kind = "dense" if st.level < index.dense_depth else "sparse"
            row = (
                f"| {batch}×{beam} | {st.level} | {kind} | {int(index.level_width[st.level])} | {fmt_us(ours)} | "
                f"{fmt_us(hf_t)} | {fmt_ratio(hf_t, ours)} | {fmt_us(row_t)} | {fmt_ratio(row_t, ours)} | "
                f"{fmt_us(dict_t)} | {fmt_ratio(dict_t, ours)} | "
                f"{fmt_us(ours_step)} | {fmt_us(hf_step)} | {fmt_ratio(hf_step, ours_step)} |"
            )
            for be in extra:
                c = time_constraint(index, st, be, args.repeat)
                s = time_beam_step(index, st, logits, batch, beam, be, args.repeat)
                row += f" {fmt_us(c)} | {fmt_us(s)} |"
            lines.append(row)
            log(row)
    lines.append("")
    return lines


def parse_sizes(values: list[str] | None, default: list[int]) -> list[int]:
    if not values:
        return default
    return [int(float(v)) for item in values for v in item.split(",")]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--full", action="store_true", help="every N, L, V and shape (long; needs ~10 GB)")
    p.add_argument("--n", nargs="*", help="catalog sizes, e.g. 1e5 1e6 (default: 1e5 1e6)")
    p.add_argument("--length", nargs="*", help="semantic-ID lengths (default: 8)")
    p.add_argument("--vocab", nargs="*", help="codebook sizes (default: 2048)")
    p.add_argument("--shapes", default=None, help="comma-separated BATCHxBEAM (default: 2x70,8x16)")
    p.add_argument("--repeat", type=int, default=25, help="timed batches per figure (each >= 2 ms)")
    p.add_argument(
        "--batch-time",
        type=float,
        default=0.002,
        help="seconds per timed batch (shorter batches are interrupted less often on a busy machine)",
    )
    p.add_argument(
        "--baseline-repeat", type=int, default=7, help="timed batches per dict-trie / Hugging Face figure"
    )
    p.add_argument(
        "--stat", choices=["min", "median"], default="min", help="statistic over the timed batches"
    )
    p.add_argument("--build-repeat", type=int, default=3, help="builds per catalog of up to 1e6 items")
    p.add_argument("--dense-depth", type=int, default=2)
    p.add_argument("--dict-max-n", type=float, default=1e6, help="largest N for which the dict trie is built")
    p.add_argument("--no-dict", action="store_true", help="skip the dict-trie baselines")
    p.add_argument("--torch-cpu", action="store_true", help="also time the torch path on CPU tensors")
    p.add_argument("--no-cuda", action="store_true", help="skip CUDA timings even when CUDA is available")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--trace-memory", action="store_true", help="one more build under tracemalloc to report its peak"
    )
    p.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch intra-op threads (default 1, like numpy's single-threaded step; 0 keeps torch's default)",
    )
    args = p.parse_args(argv)
    global STAT, BATCH_TIME
    BATCH_TIME = args.batch_time
    STAT = min if args.stat == "min" else statistics.median
    if args.torch_threads > 0:
        try:
            import torch

            torch.set_num_threads(args.torch_threads)
        except ImportError:
            pass
    preset = FULL if args.full else QUICK
    ns = parse_sizes(args.n, preset["n"])
    lengths = parse_sizes(args.length, preset["length"])
    vocabs = parse_sizes(args.vocab, preset["vocab"])
    spec = args.shapes or ",".join(preset["shapes"])
    shapes = [(int(b), int(k)) for b, k in (s.lower().split("x") for s in spec.split(","))]
    extra = torch_backends(args)
    print("# STATIC retrieval index benchmark\n")
    print(
        f"numpy {np.__version__}; {args.stat} of {args.repeat} timed batches of >= {args.batch_time * 1e3:g} ms ({args.baseline_repeat} for the baselines); rows = batch × beam; "
        "constraint = fill_bitmask + next_nodes (checked); "
        f"torch threads: {args.torch_threads or 'default'}; "
        f"extra backends: {', '.join(be.name for be in extra) or 'none (no CUDA)'}\n"
    )
    for length in lengths:
        for vocab in vocabs:
            for n in ns:
                for line in run_catalog(n, length, vocab, shapes, args, extra):
                    print(line)
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
