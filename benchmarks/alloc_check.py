"""How the memory a benchmark keeps between compiles changes tokensieve's compile timings.

Usage::

    python benchmarks/alloc_check.py [--vocab tekken|smollm2] [--keep N] [--groups api,tools,...]

Compiles every schema of the JSON corpus with tokensieve alone, one fresh
process per mode, and times compile plus first mask (the garbage collector off
while timing, as in ``harness.py``). Between two compiles the harness of
``json_bench.py`` records the masks of the walks, ``N`` rows per schema (780 by
default: about three engines' steps per schema on the corpus). The modes:

* ``none``: nothing kept;
* ``fresh``: each row copied into an array of its own, kept to the end (what the
  harness did before :class:`harness.MaskStore`);
* ``store``: each row written into rows allocated and written before the first
  compile (:class:`harness.MaskStore`).

Prints the geometric mean of each mode and its ratio to ``none``, and the page
faults of the timed sections. A ratio well above 1 for ``fresh`` means first
touches of memory are slow on this machine, and that a benchmark which grows
the process between compiles would charge that to the compiles.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import resource
import subprocess
import sys
import time

import numpy as np
from json_bench import HAND_WRITTEN_GROUPS, load_corpus
from vocabs import VOCAB_NAMES, load_vocab

MODES = ("none", "fresh", "store")


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def run_mode(mode: str, vocab_name: str, keep: int, groups: list[str] | None) -> dict[str, float]:
    """Compile the corpus in this process in ``mode``; geometric mean (ms) and faults of the timed sections."""
    import tokensieve

    vocab = load_vocab(vocab_name)
    info = tokensieve.TokenizerInfo.from_file(str(vocab.path), stop_token_ids=[vocab.eos_token_id])
    words = (vocab.vocab_size + 31) // 32
    bitmask = np.zeros((1, words), dtype=np.int32)
    workloads = load_corpus(groups)
    store = np.ones((len(workloads) * keep, words), dtype=np.uint32) if mode == "store" else None
    kept: list[np.ndarray] = []
    times: list[float] = []
    faults = 0
    for i, w in enumerate(workloads):
        gc.collect()
        gc.disable()
        f0 = _faults()
        t0 = time.perf_counter()
        compiled = tokensieve.GrammarCompiler(info).compile_json_schema(w.schema, strict=False)
        tokensieve.GrammarMatcher(compiled).fill_next_token_bitmask(bitmask, 0)
        times.append(time.perf_counter() - t0)
        faults += _faults() - f0
        gc.enable()
        del compiled
        row = bitmask[0].view(np.uint32)
        if mode == "fresh":
            kept.extend(row.copy() for _ in range(keep))
        elif store is not None:
            store[i * keep : (i + 1) * keep] = row
    timed = times[1:]  # the first compile also builds the vocabulary's tables
    geo = math.exp(sum(math.log(t) for t in timed) / len(timed)) * 1e3
    return {"geomean_ms": geo, "faults": float(faults)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", default="tekken", choices=VOCAB_NAMES)
    parser.add_argument("--keep", type=int, default=780, help="mask rows kept per schema")
    parser.add_argument("--groups", default="", help="corpus groups (by default the hand-written ones)")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one mode, in this process
    args = parser.parse_args(argv)
    groups = [g.strip() for g in args.groups.split(",") if g.strip()] or list(HAND_WRITTEN_GROUPS)
    if args.mode:
        print(json.dumps(run_mode(args.mode, args.vocab, args.keep, groups)))
        return 0
    got = {}
    for mode in MODES:
        cmd = [sys.executable, __file__, "--mode", mode, "--vocab", args.vocab, "--keep", str(args.keep)]
        if args.groups:
            cmd += ["--groups", args.groups]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        got[mode] = json.loads(out.strip().splitlines()[-1])
    print(f"{args.vocab}, {args.keep} mask rows kept per schema; compile + first mask, geometric mean")
    print("| mode | ms | / none | page faults while timed |")
    print("|---|---:|---:|---:|")
    for mode in MODES:
        r = got[mode]
        ratio = r["geomean_ms"] / got["none"]["geomean_ms"]
        print(f"| {mode} | {r['geomean_ms']:.1f} | {ratio:.2f} | {int(r['faults']):,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
