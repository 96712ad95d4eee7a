"""JSON Schema benchmark: tokensieve against xgrammar and llguidance on the schema corpus.

Usage::

    python benchmarks/json_bench.py [--vocab tekken|smollm2] [--engines ours,xgrammar,llguidance]
                                    [--groups api,tools,...] [--schemas NAME,...] [--limit N]
                                    [--repeat N] [--json out.json] [--per-schema]

Every schema of ``benchmarks/data/json_schemas/*.jsonl`` is compiled by every
engine (a fresh compiler per repetition) and its example instances, written
with ``json.dumps(instance, ensure_ascii=False)``, are walked token by token
with the same timed loop and checks as the regex benchmark (``harness.py``).
The EOS oracle is ``jsonschema``: the text so far is complete iff it parses as
JSON and validates (formats checked). Prints per-group tables (geometric means
over the group's schemas), the corpus-wide geometric means and ratios, walk
failures and compile errors, and how often the engines' masks differ.
See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import EngineResult, MaskStore, compare_masks, fmt, prepare_walks, run_engine_workload
from peers import describe_engines, engine_names, run_metadata, set_up_engines
from vocabs import VOCAB_NAMES, Vocab, load_vocab
from workloads import Workload

CORPUS_DIR = Path(__file__).resolve().parent / "data" / "json_schemas"
JSON_ENGINES = ("ours", "xgrammar", "llguidance")
#: engines that run only when named: ours with every mask but the first computed while decoding
OPTIONAL_ENGINES = ("ours-lazy",)

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s\"<>\\^`{|}]*$")


@dataclass(frozen=True)
class SchemaWorkload(Workload):
    """A corpus schema as a benchmark workload (``kind="json_schema"``).

    ``constraint`` holds the schema as JSON text; ``examples`` the serialised
    instances walked; ``schema`` the schema itself and ``group`` its corpus group.
    """

    schema: Any = field(default=None, compare=False, hash=False)
    group: str = ""


def load_corpus(groups: Sequence[str] | None = None) -> list[SchemaWorkload]:
    """The corpus as workloads, in file order, optionally only some groups."""
    out = []
    for path in sorted(CORPUS_DIR.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            if groups and record["group"] not in groups:
                continue
            out.append(
                SchemaWorkload(
                    name=record["name"],
                    kind="json_schema",  # type: ignore[arg-type]
                    constraint=json.dumps(record["schema"], ensure_ascii=False),
                    examples=tuple(json.dumps(e, ensure_ascii=False) for e in record["examples"]),
                    schema=record["schema"],
                    group=record["group"],
                )
            )
    return out


def schema_validator(schema: Any) -> Any:
    """``jsonschema`` draft 2020-12 validator with format checking (``uri`` by a small pattern)."""
    from jsonschema import Draft202012Validator, FormatChecker

    checker = FormatChecker()
    checker.checks("uri")(lambda v: not isinstance(v, str) or _URI.match(v) is not None)
    return Draft202012Validator(schema, format_checker=checker)


def completion_oracle(workload: SchemaWorkload) -> Callable[[bytes], bool]:
    """``complete(text)``: the text parses as JSON and is valid under the schema."""
    validator = schema_validator(workload.schema)

    def complete(data: bytes) -> bool:
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return False
        return bool(validator.is_valid(value))

    return complete


# --------------------------------------------------------------------------- aggregation


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


_METRICS = (
    ("compile_ms", "compile ms"),
    ("first_mask_ms", "compile + 1st mask ms"),
    ("mean", "mean µs"),
    ("p50", "p50 µs"),
    ("p99", "p99 µs"),
    ("max", "max µs"),
)
_RATIOS = (("compile_ms", "compile"), ("first_mask_ms", "1st mask"), ("mean", "mean"), ("p50", "p50"), ("p99", "p99"))


def _ok(r: EngineResult | None) -> bool:
    return r is not None and r.error is None and bool(r.token_stats)


def summary_rows(
    results: list[EngineResult], engines: Sequence[str], workloads: Sequence[SchemaWorkload], label: str
) -> tuple[list[str], list[str]]:
    """Table rows (one per engine) and ratio rows (one per peer) for a set of schemas."""
    index = {(r.workload, r.engine): r for r in results}
    rows, ratio_rows = [], []
    for name in engines:
        rs = [index.get((w.name, name)) for w in workloads]
        ran = [r for r in rs if r is not None]
        good = [r for r in ran if _ok(r)]
        errors = sum(1 for r in ran if r.error is not None)
        walk_fail = sum(1 for r in ran if r.failure_count)
        steps = sum(r.token_stats[0].count for r in good)
        cells = [label, name, f"{len(good)}/{len(ran)}"]
        cells += [fmt(_geomean([r.median(m) for r in good])) for m, _ in _METRICS]
        cells += [str(steps), str(walk_fail), str(errors)]
        rows.append("| " + " | ".join(cells) + " |")
        if name == "ours" or "ours" not in engines:
            continue
        pairs = [
            (index.get((w.name, "ours")), index.get((w.name, name)))
            for w in workloads
        ]
        both = [(a, b) for a, b in pairs if _ok(a) and _ok(b)]
        ratio_cells = [label, name, str(len(both))]
        for metric, _ in _RATIOS:
            q = _geomean([a.median(metric) / b.median(metric) for a, b in both if b.median(metric)])  # type: ignore[union-attr,operator]
            ratio_cells.append("—" if q is None else f"{q:.2f}")
        ratio_rows.append("| " + " | ".join(ratio_cells) + " |")
    return rows, ratio_rows


def render(
    results: list[EngineResult],
    engines: Sequence[str],
    workloads: Sequence[SchemaWorkload],
    diffs: list[Any],
    skipped: dict[str, str],
    per_schema: bool,
) -> str:
    """The markdown report: per-group and corpus-wide geometric means, ratios, failures."""
    groups = list(dict.fromkeys(w.group for w in workloads))
    lines = [
        "Geometric means over the schemas of each group (only schemas the engine compiled and walked; "
        "`ok` = compiled/attempted; `walk fail` = schemas with at least one failed walk check; "
        "`errors` = schemas the engine could not compile):",
        "",
        "| group | engine | ok | " + " | ".join(label for _, label in _METRICS) + " | steps | walk fail | errors |",
        "|---|---|---:|" + "---:|" * (len(_METRICS) + 3),
    ]
    all_ratio_rows = []
    for g in groups:
        ws = [w for w in workloads if w.group == g]
        rows, ratio_rows = summary_rows(results, engines, ws, g)
        lines += rows
        all_ratio_rows += ratio_rows
    rows, ratio_rows = summary_rows(results, engines, workloads, "**all**")
    lines += rows
    all_ratio_rows += ratio_rows
    if "ours" in engines and len(engines) > 1:
        lines += [
            "",
            "Geometric mean of ours/peer over the schemas both engines compiled and walked (below 1: ours is faster):",
            "",
            "| group | peer | schemas | " + " | ".join(label for _, label in _RATIOS) + " |",
            "|---|---|---:|" + "---:|" * len(_RATIOS),
        ]
        lines += all_ratio_rows
    if skipped:
        lines += ["", "Skipped engines:", ""] + [f"- {n}: {why}" for n, why in skipped.items()]

    lines += ["", "### Correctness", "", "Walk failures (a valid instance's next token not in the mask, EOS bit wrong, "
              "token rejected, or no termination after EOS):", ""]
    failing = [r for r in results if r.failure_count]
    for r in failing:
        lines.append(f"- {r.workload}/{r.engine}: {r.failure_count} failures, e.g. {r.failures[0][:300]}")
    if not failing:
        lines.append("- none: every engine accepted every example of every schema it compiled.")
    errors = [r for r in results if r.error]
    lines += ["", "Compile errors:", ""]
    if errors:
        by_engine: dict[str, list[EngineResult]] = {}
        for r in errors:
            by_engine.setdefault(r.engine, []).append(r)
        for name, rs in by_engine.items():
            lines.append(f"- {name}: {len(rs)} schemas")
            lines += [f"  - {r.workload}: {r.error}" for r in rs[:40]]
            if len(rs) > 40:
                lines.append(f"  - ... and {len(rs) - 40} more")
    else:
        lines.append("- none.")
    if diffs:
        pairs = list(dict.fromkeys((d.engine_a, d.engine_b) for d in diffs))
        lines += ["", "Mask agreement: steps on which two engines' masks differ (regular tokens and EOS), per group:", ""]
        lines.append("| group | " + " | ".join(f"{a} vs {b}" for a, b in pairs) + " |")
        lines.append("|---|" + "---:|" * len(pairs))
        group_of = {w.name: w.group for w in workloads}
        for g in [*groups, "**all**"]:
            cells = []
            for a, b in pairs:
                ds = [d for d in diffs if (d.engine_a, d.engine_b) == (a, b) and (g == "**all**" or group_of[d.workload] == g)]
                cells.append(f"{sum(d.steps_differing for d in ds)}/{sum(d.steps_compared for d in ds)}")
            lines.append(f"| {g} | " + " | ".join(cells) + " |")
    if per_schema:
        lines += ["", "### Per schema", "", "| schema | engine | compile ms | 1st mask ms | mean µs | p50 µs | p99 µs | max µs | steps | failures |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        index = {(r.workload, r.engine): r for r in results}
        for w in workloads:
            for name in engines:
                r = index.get((w.name, name))
                if r is None:
                    continue
                if r.error:
                    lines.append(f"| {w.name} | {name} | error: {r.error[:120]} |||||||| ")
                    continue
                cells = [fmt(r.median(m)) for m, _ in _METRICS]
                lines.append(f"| {w.name} | {name} | " + " | ".join(cells) + f" | {r.token_stats[0].count if r.token_stats else 0} | {r.failure_count} |")
    return "\n".join(lines)


def mask_differences(
    results: list[EngineResult], vocab: Vocab, workloads: Sequence[SchemaWorkload], walks: dict[str, Any]
) -> list[Any]:
    """Pairwise counts of steps with differing masks (disputed tokens are not judged for JSON)."""
    diffs, _disputes, _notes = compare_masks(results, vocab, workloads, walks, oracle_for=lambda w, v: None)
    return diffs


# --------------------------------------------------------------------------- main


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--vocab", choices=VOCAB_NAMES, default="tekken", help="vocabulary (default: tekken)")
    parser.add_argument("--engines", default=",".join(JSON_ENGINES), help="comma-separated engines")
    parser.add_argument("--groups", default="", help="comma-separated corpus groups (default: all)")
    parser.add_argument("--schemas", default="", help="comma-separated schema names (default: all)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N schemas of each group")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per engine and schema (default: 3)")
    parser.add_argument("--json", type=Path, default=None, help="also write every measurement to this JSON file")
    parser.add_argument("--per-schema", action="store_true", help="also print one row per schema and engine")
    parser.add_argument(
        "--max-memory-gb",
        type=float,
        default=0,
        help="cap the process's address space (RLIMIT_AS) so that a compilation that exhausts memory fails "
        "with MemoryError (reported as a compile error) instead of the process being killed",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def _json_compiler_missing(name: str) -> str | None:
    """Skip our engine while the installed tokensieve has no JSON Schema compiler."""
    if not name.startswith("ours"):
        return None
    import tokensieve

    if not hasattr(tokensieve.GrammarCompiler, "compile_json_schema"):
        return "tokensieve has no GrammarCompiler.compile_json_schema yet"
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the report; returns 1 if any walk check failed."""
    args = _parse_args(argv)
    names = engine_names(args.engines, JSON_ENGINES + OPTIONAL_ENGINES)
    if names is None:
        return 2
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    workloads = load_corpus(groups or None)
    if args.schemas:
        wanted = {s.strip() for s in args.schemas.split(",") if s.strip()}
        unknown = wanted - {w.name for w in workloads}
        if unknown:
            print(f"unknown schemas: {sorted(unknown)}", file=sys.stderr)
            return 2
        workloads = [w for w in workloads if w.name in wanted]
    if args.limit:
        seen: dict[str, int] = {}
        kept = []
        for w in workloads:
            seen[w.group] = seen.get(w.group, 0) + 1
            if seen[w.group] <= args.limit:
                kept.append(w)
        workloads = kept
    if not workloads:
        print("no schemas selected", file=sys.stderr)
        return 2

    if args.max_memory_gb:
        import resource

        limit = int(args.max_memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    t = time.perf_counter()
    vocab = load_vocab(args.vocab)
    print(f"vocabulary {vocab.name}: {vocab.vocab_size} ids, loaded in {time.perf_counter() - t:.2f} s", file=sys.stderr)
    walks = {w.name: prepare_walks(w, vocab, completion_oracle(w)) for w in workloads}

    engines, skipped, setup_s = set_up_engines(names, vocab, _json_compiler_missing)

    # every mask recorded goes into rows written before any timing (see harness.MaskStore)
    steps_to_record = sum(len(x.token_ids) + 1 for ws in walks.values() for x in ws)
    store = MaskStore(steps_to_record * len(engines), (vocab.vocab_size + 31) // 32)
    results: list[EngineResult] = []
    started = time.perf_counter()
    for i, w in enumerate(workloads):
        print(f"[{i + 1}/{len(workloads)}] {w.group}/{w.name} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        for engine in engines:
            results.append(run_engine_workload(engine, w, walks[w.name], args.repeat, store=store))

    diffs = mask_differences(results, vocab, workloads, walks)
    ran = [e.name for e in engines]
    report = render(results, ran, workloads, diffs, skipped, args.per_schema)
    steps = sum(len(x.token_ids) + 1 for ws in walks.values() for x in ws)
    options = "; ".join(f"{e.name}: {getattr(e, 'json_note', '')}" for e in engines)
    examples = sum(len(ws) for ws in walks.values())
    print(
        f"# JSON Schema benchmark: {vocab.name} ({vocab.vocab_size} tokens), {len(workloads)} schemas, "
        f"{examples} instances, {steps} steps per engine and repetition, {args.repeat} repetitions, medians\n\n"
        + describe_engines(engines, setup_s)
        + f"Options: {options}. "
        f"gc disabled during timed repetitions. Python {platform.python_version()}, {os.cpu_count()} CPUs. "
        f"Wall time {time.perf_counter() - started:.0f} s.\n"
    )
    print(report)

    if args.json is not None:
        payload = {
            **run_metadata(vocab, args.repeat),
            "engines": {
                e.name: {"dist": e.dist, "version": e.version, "setup_s": setup_s[e.name], "json": getattr(e, "json_note", "")}
                for e in engines
            },
            "skipped": skipped,
            "schemas": {w.name: {"group": w.group, "examples": len(w.examples)} for w in workloads},
            "results": [r.summary() for r in results],
            "differences": [d.__dict__ for d in diffs],
            "markdown": report,
        }
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    return 1 if any(r.failure_count for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

