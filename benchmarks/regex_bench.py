"""Regex and choice-list benchmark: tokensieve against xgrammar, llguidance and outlines-core.

Usage::

    python benchmarks/regex_bench.py [--vocab tekken|smollm2] [--engines ours,xgrammar,llguidance,outlines]
                                     [--workloads date,email,...] [--repeat N] [--budget S] [--json out.json]

Every engine compiles every workload in a process forked after imports and
per-vocabulary set-up (``cold.py``): the first compile there is the **cold**
figure, the headline, and the repetitions after it in the same process are the
**warm** ones. Prints a markdown table (per workload and engine: cold compile,
cold and warm compile + first mask, per-token mask time mean/p50/p99/max of the
cold walk, warm mean and p99, ratios ours/peer measured in the same run), then a
correctness report (disallowed tokens, EOS errors, and mask differences between
engines on the cold walks). See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from cold import add_cold_arguments, failed, render_cold_table, run_cold_workloads
from harness import comparable_words, compare_masks, prepare_walks, render_correctness
from peers import ENGINES, describe_engines, engine_names, run_metadata, set_up_engines
from vocabs import VOCAB_NAMES, load_vocab
from workloads import WORKLOADS


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", choices=VOCAB_NAMES, default="tekken", help="vocabulary (default: tekken)")
    parser.add_argument(
        "--engines",
        default=",".join(ENGINES),
        help=f"comma-separated engines to run (default: {','.join(ENGINES)}); missing ones are skipped",
    )
    parser.add_argument(
        "--workloads",
        default=",".join(w.name for w in WORKLOADS),
        help="comma-separated workloads (default: all)",
    )
    add_cold_arguments(parser)
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every measurement to this JSON file"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the report; returns 1 if any correctness check failed."""
    args = _parse_args(argv)
    names = engine_names(args.engines, ENGINES)
    if names is None:
        return 2
    wanted = [n.strip() for n in args.workloads.split(",") if n.strip()]
    known = {w.name: w for w in WORKLOADS}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        print(f"unknown workloads {unknown}; expected some of {', '.join(known)}", file=sys.stderr)
        return 2
    workloads = [known[n] for n in wanted]

    t = time.perf_counter()
    vocab = load_vocab(args.vocab)
    print(
        f"vocabulary {vocab.name}: {vocab.vocab_size} ids, loaded in {time.perf_counter() - t:.2f} s",
        file=sys.stderr,
    )
    walks = {w.name: prepare_walks(w, vocab) for w in workloads}

    engines, skipped, setup_s = set_up_engines(names, vocab)

    started = time.perf_counter()
    results = run_cold_workloads(engines, workloads, walks, args.repeat, args.budget, comparable_words(vocab))
    cold = [r.cold for r in results if r.compiled and r.cold is not None]
    diffs, disputes, notes = compare_masks(cold, vocab, workloads, walks)
    ran = [e.name for e in engines]
    lines = render_cold_table(results, ran, workloads)
    if skipped:
        lines += ["", "Skipped engines:", "", *(f"- {n}: {why}" for n, why in skipped.items())]
    report = "\n".join(lines + render_correctness(cold, workloads, diffs, disputes, notes))
    steps = {w.name: sum(len(x.token_ids) + 1 for x in walks[w.name]) for w in workloads}
    print(
        f"# Regex benchmark: {vocab.name} ({vocab.vocab_size} tokens); each engine and workload in a process "
        f"forked after set-up: 1 cold + up to {args.repeat - 1} warm repetitions (medians), "
        f"budget {args.budget:g} s\n\n"
        + describe_engines(engines, setup_s)
        + f"Steps per walk: {', '.join(f'{k} {v}' for k, v in steps.items())}. Cold = the first compile in "
        "the child and the per-token times of its walk; warm = medians over the repetitions after it. "
        f"gc disabled during timed repetitions. Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs. Wall time {time.perf_counter() - started:.0f} s.\n"
    )
    print(report)

    if args.json is not None:
        payload = {
            **run_metadata(vocab, args.repeat),
            "budget_s": args.budget,
            "engines": {
                e.name: {
                    "dist": e.dist,
                    "version": e.version,
                    "setup_s": setup_s[e.name],
                    "caching": e.caching_note,
                    "input": e.input_note,
                }
                for e in engines
            },
            "skipped": skipped,
            "workloads": {
                w.name: {"kind": w.kind, "regex": w.as_regex()[:500], "examples": list(w.examples)}
                for w in workloads
            },
            "results": [r.summary() for r in results],
            "differences": [d.__dict__ for d in diffs],
            "disputes": [d.__dict__ for d in disputes],
            "notes": notes,
            "markdown": report,
        }
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)

    return 1 if failed(results) else 0


if __name__ == "__main__":
    sys.exit(main())
