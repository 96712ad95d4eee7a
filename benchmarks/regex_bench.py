"""Regex and choice-list benchmark: tokensieve against xgrammar, llguidance and outlines-core.

Usage::

    python benchmarks/regex_bench.py [--vocab tekken|smollm2] [--engines ours,xgrammar,llguidance,outlines]
                                     [--workloads date,email,...] [--repeat N] [--json out.json]

Prints a markdown table (per workload and engine: median compile time, compile +
first mask, per-token mask time mean/p50/p99/max, ratios ours/peer measured in
the same run), then a correctness report (disallowed tokens, EOS errors, and
mask differences between engines). See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from harness import compare_masks, prepare_walks, render_markdown, run_engine_workload
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
    parser.add_argument(
        "--repeat", type=int, default=5, help="repetitions per engine and workload (default: 5)"
    )
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

    results = []
    for w in workloads:
        print(f"workload {w.name}", file=sys.stderr)
        for engine in engines:
            results.append(run_engine_workload(engine, w, walks[w.name], args.repeat))

    diffs, disputes, notes = compare_masks(results, vocab, workloads, walks)
    ran = [e.name for e in engines]
    report = render_markdown(results, ran, workloads, diffs, disputes, notes, skipped)
    steps = {w.name: sum(len(x.token_ids) + 1 for x in walks[w.name]) for w in workloads}
    print(
        f"# Regex benchmark: {vocab.name} ({vocab.vocab_size} tokens), {args.repeat} repetitions, medians\n\n"
        + describe_engines(engines, setup_s)
        + f"Steps per walk repetition: {', '.join(f'{k} {v}' for k, v in steps.items())}. "
        f"gc disabled during timed repetitions. Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs.\n"
    )
    print(report)

    if args.json is not None:
        payload = {
            **run_metadata(vocab, args.repeat),
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

    failed = any(r.failure_count or r.error for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
