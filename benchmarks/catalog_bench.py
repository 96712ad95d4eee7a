"""Catalog benchmark: a large list of product names as a choice constraint.

Usage::

    python benchmarks/catalog_bench.py [--vocab tekken|smollm2] [--sizes 10000,100000,1000000]
                                       [--engines ours,xgrammar,llguidance] [--repeat N]
                                       [--budget SECONDS] [--json out.json]

For every catalog size, a seeded list of distinct product-like strings ("Brand
line AB-1234 colour", 10 to 40 characters) is the constraint: the output must be
exactly one entry. tokensieve compiles it with ``compile_choices``; xgrammar gets
an EBNF grammar ``root ::= "entry 1" | "entry 2" | ...`` (its grammar compiler is
a little faster on it than on the equivalent regex); llguidance gets the escaped
alternation regex (its lexer builds the automaton lazily). Then a few entries of
the catalog are walked token by token, as in ``regex_bench.py`` (the same timed
loop and checks, from ``harness.py``).

Every (engine, size) pair runs in a child process with a wall-clock budget
(default 120 s for compilation plus walks, per repetition set); an engine that
exceeds it, runs out of memory or fails is reported with a note and skipped for
the larger sizes. Peak memory of each child is reported.

Correctness: the next token must be allowed, EOS must be allowed exactly after a
complete entry, and tokens that the engines disagree on are judged by an exact
oracle (is the text plus the token a prefix of some entry? binary search in the
sorted catalog).
"""

from __future__ import annotations

import argparse
import bisect
import json
import multiprocessing as mp
import os
import platform
import random
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from harness import EngineResult, Walk, compare_masks, prepare_walks, render_markdown, run_engine_workload
from peers import ENGINES, Engine, XgrammarEngine, engine_names, make_engine
from vocabs import VOCAB_NAMES, Vocab, load_vocab
from workloads import Workload

_BRANDS = (
    "Acme Globex Initech Umbrella Stark Wayne Wonka Hooli Vandelay Soylent Tyrell Cyberdyne Aperture "
    "Oscorp Monarch Nakatomi Virtucon Zorg Krusty Duff Gekko Massive Dynamic Pied Piper Prestige Sirius "
    "Veridian Ollivander Spacely Cogswell Nordvik Bluth Sterling Dunder Mifflin Rekall Weyland Yutani"
).split()
_LINES = (
    "phone laptop tablet monitor router camera speaker watch headset keyboard mouse drone printer "
    "charger console kettle toaster blender lamp heater fan vacuum scooter backpack jacket sneaker "
    "Pro Max Mini Air Ultra Lite Plus Neo Go Edge"
).split()
_COLOURS = (
    "black white silver red blue green gold graphite rose midnight navy olive sand coral teal "
    "amber ivory slate crimson"
).split()
_LETTERS = "ABCDEFGHJKLMNPRSTUVWXYZ"


def catalog(size: int, seed: int = 2024) -> list[str]:
    """``size`` distinct product-like strings of 10 to 40 characters, deterministic for a seed."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < size:
        parts = [rng.choice(_BRANDS)]
        if rng.random() < 0.8:
            parts.append(rng.choice(_LINES))
        code = "".join(rng.choice(_LETTERS) for _ in range(rng.randint(1, 3)))
        parts.append(f"{code}-{rng.randint(1, 99999)}")
        if rng.random() < 0.7:
            parts.append(rng.choice(_COLOURS))
        text = " ".join(parts)
        if 10 <= len(text) <= 40 and text not in seen:
            seen.add(text)
            out.append(text)
    return out


def _size_label(size: int) -> str:
    if size % 1_000_000 == 0:
        return f"catalog{size // 1_000_000}M"
    if size % 1000 == 0:
        return f"catalog{size // 1000}k"
    return f"catalog{size}"


def catalog_workload(size: int, examples: int, seed: int = 2024) -> Workload:
    """The catalog of ``size`` entries as a choice workload, with ``examples`` entries to walk."""
    items = catalog(size, seed)
    picked = random.Random(seed + 1).sample(items, min(examples, size))
    return Workload(name=_size_label(size), kind="choices", constraint=tuple(items), examples=tuple(picked))


class _PrefixOracle:
    """Exact oracles over a catalog: full entry, and prefix of some entry (binary search)."""

    def __init__(self, items: tuple[str, ...]) -> None:
        self.entries = sorted(s.encode("utf-8") for s in items)
        self.members = set(self.entries)

    def complete(self, data: bytes) -> bool:
        return data in self.members

    def viable(self, data: bytes) -> bool:
        i = bisect.bisect_left(self.entries, data)
        return i < len(self.entries) and self.entries[i].startswith(data)


class XgrammarEbnfEngine(XgrammarEngine):
    """xgrammar with the catalog as an EBNF alternation of string literals."""

    input_note = 'choice lists as an EBNF grammar root ::= "..." | "..." (compile_grammar)'

    def compile(self, workload: Workload) -> Any:
        if workload.kind != "choices":
            return super().compile(workload)
        ebnf = "root ::= " + " | ".join(json.dumps(c, ensure_ascii=False) for c in workload.constraint)
        return self._compiler.compile_grammar(ebnf)


def _make(name: str) -> Engine:
    return XgrammarEbnfEngine() if name == "xgrammar" else make_engine(name)


def _child(
    engine_name: str, vocab: Vocab, size: int, examples: int, repeat: int, conn: Any
) -> None:  # pragma: no cover - runs in a child process
    try:
        workload = catalog_workload(size, examples)
        oracle = _PrefixOracle(workload.constraint)  # type: ignore[arg-type]
        walks = prepare_walks(workload, vocab, complete=oracle.complete)
        engine = _make(engine_name)
        t = time.perf_counter()
        engine.setup(vocab)
        setup_s = time.perf_counter() - t
        result = run_engine_workload(engine, workload, walks, repeat, log=False)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        conn.send({"result": result, "setup_s": setup_s, "peak_mb": peak_mb, "version": engine.version})
    except BaseException as exc:  # report, never hang the parent
        conn.send(
            {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200], "trace": traceback.format_exc()}
        )
    finally:
        conn.close()


def _run_isolated(
    engine_name: str, vocab: Vocab, size: int, examples: int, repeat: int, budget: float
) -> dict[str, Any]:
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(engine_name, vocab, size, examples, repeat, child), daemon=True)
    t = time.perf_counter()
    proc.start()
    child.close()
    got: dict[str, Any] | None = None
    if parent.poll(budget):
        try:
            got = parent.recv()
        except EOFError:
            got = None
    proc.join(timeout=5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    elapsed = time.perf_counter() - t
    if got is None:
        if elapsed >= budget:
            return {"skipped": f"exceeded the {budget:.0f} s budget"}
        return {"skipped": f"the process died (exit code {proc.exitcode}; out of memory?)"}
    if "error" in got:
        return {"skipped": f"failed: {got['error']}"}
    return got


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", choices=VOCAB_NAMES, default="tekken", help="vocabulary (default: tekken)")
    parser.add_argument(
        "--sizes", default="10000,100000,1000000", help="catalog sizes (default: 10^4, 10^5, 10^6)"
    )
    parser.add_argument(
        "--engines",
        default="ours,xgrammar,llguidance",
        help="comma-separated engines (default: all but outlines)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per engine and size (default: 3)")
    parser.add_argument(
        "--examples", type=int, default=20, help="catalog entries walked per repetition (default: 20)"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=120.0,
        help="seconds per engine and size before it is skipped (default: 120)",
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every measurement to this JSON file"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the catalog benchmark and print the report; returns 1 if a correctness check failed."""
    args = _parse_args(argv)
    names = engine_names(args.engines, ENGINES)
    if names is None:
        return 2
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    vocab = load_vocab(args.vocab)
    print(f"vocabulary {vocab.name}: {vocab.vocab_size} ids", file=sys.stderr)

    skipped: dict[str, str] = {}
    available = []
    for n in names:
        reason = ENGINES[n].unavailable_reason()
        if reason is None:
            available.append(n)
        else:
            skipped[n] = reason
            print(f"skipping {n}: {reason}", file=sys.stderr)

    results: list[EngineResult] = []
    workloads: list[Workload] = []
    walks: dict[str, list[Walk]] = {}
    extra: list[dict[str, Any]] = []
    out_of_budget: dict[str, str] = {}
    versions: dict[str, str] = {}
    for size in sizes:
        t = time.perf_counter()
        workload = catalog_workload(size, args.examples)
        oracle = _PrefixOracle(workload.constraint)  # type: ignore[arg-type]
        workloads.append(workload)
        walks[workload.name] = prepare_walks(workload, vocab, complete=oracle.complete)
        chars = sum(len(c) for c in workload.constraint)
        print(
            f"{workload.name}: {size} entries, {chars / size:.1f} characters on average, "
            f"generated in {time.perf_counter() - t:.1f} s",
            file=sys.stderr,
        )
        for name in available:
            if name in out_of_budget:
                note = f"skipped: {out_of_budget[name]} at a smaller size"
                extra.append({"workload": workload.name, "engine": name, "note": note})
                print(f"  {name:<10} {note}", file=sys.stderr)
                continue
            got = _run_isolated(name, vocab, size, args.examples, args.repeat, args.budget)
            if "skipped" in got:
                out_of_budget[name] = got["skipped"]
                extra.append({"workload": workload.name, "engine": name, "note": got["skipped"]})
                print(f"  {name:<10} {got['skipped']}", file=sys.stderr)
                continue
            r: EngineResult = got["result"]
            versions[name] = got["version"]
            results.append(r)
            extra.append(
                {
                    "workload": workload.name,
                    "engine": name,
                    "setup_s": got["setup_s"],
                    "peak_mb": got["peak_mb"],
                    "note": r.error or "",
                }
            )
            print(
                f"  {name:<10} compile {r.median('compile_ms') or float('nan'):.1f} ms, "
                f"mean {r.median('mean') or float('nan'):.1f} µs/token, peak {got['peak_mb']:.0f} MB, "
                f"failures {r.failure_count}{', error ' + r.error if r.error else ''}",
                file=sys.stderr,
            )

    oracles = {w.name: _PrefixOracle(w.constraint) for w in workloads}  # type: ignore[arg-type]

    def oracle_for(workload: Workload, _vocab: Vocab):  # type: ignore[no-untyped-def]
        entries = oracles[workload.name]
        eos = vocab.eos_token_id

        def judge(prefix: bytes, token_id: int) -> bool:
            if token_id == eos:
                return entries.complete(prefix)
            return entries.viable(prefix + vocab.tokens[token_id])

        return judge

    diffs, disputes, notes = compare_masks(results, vocab, workloads, walks, oracle_for=oracle_for)
    report = render_markdown(
        results,
        available,
        workloads,
        diffs,
        disputes,
        notes,
        skipped,
        oracle_note="an exact oracle (the text plus the token is a prefix of some catalog entry)",
    )
    lines = [
        f"# Catalog benchmark: {vocab.name} ({vocab.vocab_size} tokens), {args.repeat} repetitions, medians",
        "",
        f"Engines: {', '.join(n + ' ' + versions.get(n, '?') for n in available)}. "
        f"Catalog entries walked per repetition: {args.examples}. Budget per engine and size: "
        f"{args.budget:.0f} s. Python {platform.python_version()}, {os.cpu_count()} CPUs.",
        "",
        report,
        "",
        "### Per engine and size",
        "",
        "| catalog | engine | tokenizer setup s | peak memory MB | note |",
        "|---|---|---:|---:|---|",
    ]
    for e in extra:
        setup = f"{e['setup_s']:.2f}" if "setup_s" in e else "—"
        peak = f"{e['peak_mb']:,.0f}" if "peak_mb" in e else "—"
        lines.append(f"| {e['workload']} | {e['engine']} | {setup} | {peak} | {e['note']} |")
    print("\n".join(lines))

    if args.json is not None:
        payload = {
            "vocab": {"name": vocab.name, "vocab_size": vocab.vocab_size},
            "sizes": sizes,
            "repeat": args.repeat,
            "examples": args.examples,
            "budget_s": args.budget,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "versions": versions,
            "results": [r.summary() for r in results],
            "per_engine": extra,
            "differences": [d.__dict__ for d in diffs],
            "disputes": [d.__dict__ for d in disputes],
            "notes": notes,
        }
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    failed = any(r.failure_count or r.error for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
