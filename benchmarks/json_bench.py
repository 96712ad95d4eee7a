"""JSON Schema benchmark: tokensieve against xgrammar and llguidance on the schema corpus.

Usage::

    python benchmarks/json_bench.py [--vocab tekken|smollm2] [--engines ours,xgrammar,llguidance]
                                    [--groups api,tools,realworld,...] [--schemas NAME,...] [--limit N]
                                    [--repeat N] [--budget S] [--max-memory-gb G] [--json out.json]
                                    [--per-schema]

Every schema of ``benchmarks/data/json_schemas/*.jsonl`` is compiled by every
engine in a process forked after imports and per-vocabulary set-up (``cold.py``):
the first compile there is the **cold** figure, the headline, and the repetitions
after it in the same process are the **warm** ones. The valid example instances,
written with ``json.dumps(instance, ensure_ascii=False)``, are walked token by
token with the same timed loop and checks as the regex benchmark (``harness.py``);
the EOS oracle is ``jsonschema``: the text so far is complete iff it parses as
JSON and validates (formats checked). The invalid instances must be refused
somewhere before the stop token. A schema counts as **passed** by an engine when
it compiled within the budget, every valid instance was accepted and every
invalid one refused. Prints per-group tables (geometric means over the group's
schemas), the corpus-wide geometric means and ratios, failures and compile
errors, and how often the engines' masks differ. See ``benchmarks/README.md``.
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

from cold import ColdResult, jit_cache_note, run_cold
from harness import comparable_words, fmt, prepare_walks
from peers import describe_engines, engine_names, run_metadata, set_up_engines
from vocabs import VOCAB_NAMES, load_vocab
from workloads import Workload

CORPUS_DIR = Path(__file__).resolve().parent / "data" / "json_schemas"
JSON_ENGINES = ("ours", "xgrammar", "llguidance")
#: the corpus groups written for this project (``realworld`` holds the imported public schemas)
HAND_WRITTEN_GROUPS = ("api", "catalog", "config", "defs", "events", "forms", "tools")
#: engines that run only when named: ours with every mask but the first computed while decoding, and
#: ours with its walks ahead before compile returns (not in the background)
OPTIONAL_ENGINES = ("ours-lazy", "ours-sync")

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s\"<>\\^`{|}]*$")


@dataclass(frozen=True)
class SchemaWorkload(Workload):
    """A corpus schema as a benchmark workload (``kind="json_schema"``).

    ``constraint`` holds the schema as JSON text; ``examples`` the serialised
    valid instances walked; ``invalid_examples`` the serialised invalid ones;
    ``schema`` the schema itself and ``group`` its corpus group.
    """

    schema: Any = field(default=None, compare=False, hash=False)
    group: str = ""
    invalid_examples: tuple[str, ...] = ()


def load_corpus(groups: Sequence[str] | None = None) -> list[SchemaWorkload]:
    """The corpus as workloads, in file order, optionally only some groups."""
    out = []
    for path in sorted(CORPUS_DIR.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").split("\n"):
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
                    invalid_examples=tuple(
                        json.dumps(e, ensure_ascii=False) for e in record.get("invalid_examples", ())
                    ),
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
    closing = frozenset(b'}]"0123456789el')

    def complete(data: bytes) -> bool:
        text = data.rstrip()
        if not text or text[-1] not in closing:  # a JSON text ends so; saves parsing every prefix
            return False
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return False
        return bool(validator.is_valid(value))

    return complete


# --------------------------------------------------------------------------- aggregation


def _geomean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None and v > 0]
    if not kept:
        return None
    return math.exp(sum(math.log(v) for v in kept) / len(kept))


#: (label, how to read it from a ColdResult): cold figures first, the warm ones beside them
_METRICS: tuple[tuple[str, Callable[[ColdResult], float | None]], ...] = (
    ("cold compile ms", lambda r: r.cold.median("compile_ms") if r.cold else None),
    ("cold compile + 1st mask ms", lambda r: r.cold.median("first_mask_ms") if r.cold else None),
    ("warm compile + 1st mask ms", lambda r: r.warm.median("first_mask_ms") if r.warm else None),
    ("mean µs", lambda r: r.cold.median("mean") if r.cold else None),
    ("p50 µs", lambda r: r.cold.median("p50") if r.cold else None),
    ("p99 µs", lambda r: r.cold.median("p99") if r.cold else None),
    ("max µs", lambda r: r.cold.median("max") if r.cold else None),
    ("warm mean µs", lambda r: r.warm.median("mean") if r.warm else None),
)
#: the ratios ours/peer reported (indices into _METRICS)
_RATIOS = (1, 2, 3, 4, 5, 6)


def summary_rows(
    results: list[ColdResult], engines: Sequence[str], workloads: Sequence[SchemaWorkload], label: str
) -> tuple[list[str], list[str]]:
    """Table rows (one per engine) and ratio rows (one per peer) for a set of schemas."""
    index = {(r.workload, r.engine): r for r in results}
    rows, ratio_rows = [], []
    for name in engines:
        ran = [r for w in workloads if (r := index.get((w.name, name))) is not None]
        good = [r for r in ran if r.valid_ok]
        cells = [
            label, name, str(len(ran)),
            str(sum(r.compiled for r in ran)), str(sum(r.passed for r in ran)),
            str(sum(r.timed_out for r in ran)),
            str(sum(r.compiled and not r.valid_ok for r in ran)),
            str(sum(bool(r.invalid_accepted) for r in ran)),
        ]
        cells += [fmt(_geomean([get(r) for r in good])) for _, get in _METRICS]
        rows.append("| " + " | ".join(cells) + " |")
        if name == "ours" or "ours" not in engines:
            continue
        both = [(a, b) for w in workloads
                if (a := index.get((w.name, "ours"))) and (b := index.get((w.name, name))) and a.valid_ok and b.valid_ok]
        ratio_cells = [label, name, str(len(both))]
        for i in _RATIOS:
            get = _METRICS[i][1]
            q = _geomean([x / y for a, b in both if (x := get(a)) and (y := get(b))])
            ratio_cells.append("—" if q is None else f"{q:.2f}")
        ratio_rows.append("| " + " | ".join(ratio_cells) + " |")
    return rows, ratio_rows


def mask_differences(results: list[ColdResult], workloads: Sequence[SchemaWorkload]) -> dict[tuple[str, str, str], tuple[int, int]]:
    """``(workload, engine a, engine b) -> (steps differing, steps compared)`` on the cold walks' masks."""
    by_workload: dict[str, list[ColdResult]] = {}
    for r in results:
        if r.cold is not None and r.cold.masks:
            by_workload.setdefault(r.workload, []).append(r)
    out = {}
    for w in workloads:
        rs = by_workload.get(w.name, [])
        for i, a in enumerate(rs):
            for b in rs[i + 1:]:
                assert a.cold is not None and b.cold is not None
                keys = set(a.cold.masks) & set(b.cold.masks)
                differing = sum(1 for k in keys if a.cold.masks[k] != b.cold.masks[k])
                out[(w.name, a.engine, b.engine)] = (differing, len(keys))
    return out


def render(
    results: list[ColdResult],
    engines: Sequence[str],
    workloads: Sequence[SchemaWorkload],
    diffs: dict[tuple[str, str, str], tuple[int, int]],
    skipped: dict[str, str],
    per_schema: bool,
) -> str:
    """The markdown report: per-group and corpus-wide counts and geometric means, ratios, failures."""
    groups = list(dict.fromkeys(w.group for w in workloads))
    lines = [
        "Per group and engine: `schemas` attempted; `compiled` within the budget; `passed` = compiled, every "
        "valid instance accepted token by token and every invalid one refused; `timeouts` = ran past the budget; "
        "`valid fail` = compiled but a walk check failed on a valid instance; `invalid acc` = accepted an invalid "
        "instance. Timings are geometric means over the schemas the engine compiled and walked without failure; "
        "**cold** = first compile in a fresh process after set-up (the headline), warm = the repetitions after it "
        "in the same process; per-token figures are of the cold walk (first visits included), `warm mean` of the "
        "warm ones.",
        "",
        "| group | engine | schemas | compiled | passed | timeouts | valid fail | invalid acc | "
        + " | ".join(label for label, _ in _METRICS) + " |",
        "|---|---|" + "---:|" * (6 + len(_METRICS)),
    ]
    all_ratio_rows = []
    for g in [*groups, "**all**"] if len(groups) > 1 else groups:
        ws = workloads if g == "**all**" else [w for w in workloads if w.group == g]
        rows, ratio_rows = summary_rows(results, engines, ws, g)
        lines += rows
        all_ratio_rows += ratio_rows
    if all_ratio_rows:
        lines += [
            "",
            "Geometric mean of ours/peer over the schemas both engines compiled and walked (below 1: ours is faster):",
            "",
            "| group | peer | schemas | " + " | ".join(_METRICS[i][0] for i in _RATIOS) + " |",
            "|---|---|---:|" + "---:|" * len(_RATIOS),
            *all_ratio_rows,
        ]
    if skipped:
        lines += ["", "Skipped engines:", ""] + [f"- {n}: {why}" for n, why in skipped.items()]
    lines += ["", "### Failures", ""]
    problems = False
    by_engine: dict[str, list[ColdResult]] = {}
    for r in results:
        by_engine.setdefault(r.engine, []).append(r)
    for name, rs in by_engine.items():
        errors = [r for r in rs if not r.compiled]
        walk = [r for r in rs if r.compiled and not r.valid_ok]
        accepted = [r for r in rs if r.invalid_accepted]
        if errors:
            problems = True
            lines.append(f"- {name}: {len(errors)} schemas not compiled")
            lines += [f"  - {r.workload} ({r.wall_s:.1f} s): {r.error}" for r in errors]
        if walk:
            problems = True
            lines.append(f"- {name}: {len(walk)} schemas with a failed walk check on a valid instance")
            lines += [f"  - {r.workload}: {r.cold.failure_count} failures, e.g. {r.cold.failures[0][:200]}" for r in walk if r.cold]
        if accepted:
            problems = True
            lines.append(f"- {name}: {len(accepted)} schemas with an invalid instance accepted")
            lines += [f"  - {r.workload}: invalid instance(s) {r.invalid_accepted} of {r.invalid_total}" for r in accepted]
    if not problems:
        lines.append("- none.")
    if diffs:
        pairs = list(dict.fromkeys((a, b) for _, a, b in diffs))
        lines += ["", "Mask agreement on the cold walks: steps on which two engines' masks differ (regular tokens and EOS):",
                  "", "| group | " + " | ".join(f"{a} vs {b}" for a, b in pairs) + " |", "|---|" + "---:|" * len(pairs)]
        group_of = {w.name: w.group for w in workloads}
        for g in [*groups, "**all**"]:
            cells = []
            for a, b in pairs:
                ds = [v for (n, x, y), v in diffs.items() if (x, y) == (a, b) and g in ("**all**", group_of[n])]
                cells.append(f"{sum(d for d, _ in ds)}/{sum(c for _, c in ds)}")
            lines.append(f"| {g} | " + " | ".join(cells) + " |")
    if per_schema:
        lines += ["", "### Per schema", "",
                  "| schema | engine | passed | " + " | ".join(label for label, _ in _METRICS) + " | steps | note |",
                  "|---|---|---|" + "---:|" * (len(_METRICS) + 1) + "---|"]
        index = {(r.workload, r.engine): r for r in results}
        for w in workloads:
            for name in engines:
                r = index.get((w.name, name))
                if r is None:
                    continue
                if not r.compiled:
                    lines.append(f"| {w.name} | {name} | no | " + " | ".join("—" for _ in _METRICS) + f" | — | {(r.error or '')[:100]} |")
                    continue
                note = "" if r.valid_ok else f"{r.cold.failure_count if r.cold else 0} walk failures"
                if r.invalid_accepted:
                    note += f" invalid accepted: {r.invalid_accepted}"
                steps = r.cold.token_stats[0].count if r.cold and r.cold.token_stats else 0
                lines.append(f"| {w.name} | {name} | {'yes' if r.passed else 'no'} | "
                             + " | ".join(fmt(get(r)) for _, get in _METRICS) + f" | {steps} | {note.strip()} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--vocab", choices=VOCAB_NAMES, default="tekken", help="vocabulary (default: tekken)")
    parser.add_argument("--engines", default=",".join(JSON_ENGINES), help="comma-separated engines")
    parser.add_argument("--groups", default="", help="comma-separated corpus groups (default: all)")
    parser.add_argument("--schemas", default="", help="comma-separated schema names (default: all)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N schemas of each group")
    parser.add_argument("--repeat", type=int, default=3,
                        help="repetitions per engine and schema in one process: the first cold, the others warm (default: 3)")
    parser.add_argument("--budget", type=float, default=20.0,
                        help="wall-clock seconds per engine and schema (compile, walks, warm repetitions); "
                        "past it the schema counts as failed (default: 20)")
    parser.add_argument("--json", type=Path, default=None, help="also write every measurement to this JSON file")
    parser.add_argument("--per-schema", action="store_true", help="also print one row per schema and engine")
    parser.add_argument(
        "--max-memory-gb",
        type=float,
        default=0,
        help="cap the address space (RLIMIT_AS, inherited by every child) so that a compilation that exhausts "
        "memory fails with MemoryError (reported as a compile error) instead of a process being killed",
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


def select_workloads(args: argparse.Namespace) -> list[SchemaWorkload] | None:
    """The schemas chosen by ``--groups``, ``--schemas`` and ``--limit`` (``None``: an unknown name)."""
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    workloads = load_corpus(groups or None)
    if args.schemas:
        wanted = {s.strip() for s in args.schemas.split(",") if s.strip()}
        unknown = wanted - {w.name for w in workloads}
        if unknown:
            print(f"unknown schemas: {sorted(unknown)}", file=sys.stderr)
            return None
        workloads = [w for w in workloads if w.name in wanted]
    if args.limit:
        seen: dict[str, int] = {}
        kept = []
        for w in workloads:
            seen[w.group] = seen.get(w.group, 0) + 1
            if seen[w.group] <= args.limit:
                kept.append(w)
        workloads = kept
    return workloads


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the report; returns 1 if any engine failed a walk check on a valid instance."""
    args = _parse_args(argv)
    names = engine_names(args.engines, JSON_ENGINES + OPTIONAL_ENGINES)
    if names is None:
        return 2
    workloads = select_workloads(args)
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
    invalid = {w.name: [vocab.tokenize(text) for text in w.invalid_examples] for w in workloads}
    comparable = comparable_words(vocab)

    engines, skipped, setup_s = set_up_engines(names, vocab, _json_compiler_missing)
    jit_note = jit_cache_note()
    results: list[ColdResult] = []
    started = time.perf_counter()
    for i, w in enumerate(workloads):
        print(f"[{i + 1}/{len(workloads)}] {w.group}/{w.name} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        for engine in engines:
            r = run_cold(engine, w, walks[w.name], invalid[w.name], args.repeat, args.budget, comparable)
            results.append(r)
            cold = fmt(r.cold.median("first_mask_ms")) if r.compiled and r.cold else "—"
            warm = fmt(r.warm.median("first_mask_ms")) if r.warm else "—"
            state = "passed" if r.passed else (r.error or "failed")[:80]
            print(f"  {engine.name:<10} cold {cold} ms, warm {warm} ms, {state}", file=sys.stderr)

    diffs = mask_differences(results, workloads)
    ran = [e.name for e in engines]
    report = render(results, ran, workloads, diffs, skipped, args.per_schema)
    steps = sum(len(x.token_ids) + 1 for ws in walks.values() for x in ws)
    options = "; ".join(f"{e.name}: {getattr(e, 'json_note', '')}" for e in engines)
    examples = sum(len(ws) for ws in walks.values())
    bad = sum(len(x) for x in invalid.values())
    print(
        f"# JSON Schema benchmark: {vocab.name} ({vocab.vocab_size} tokens), {len(workloads)} schemas, "
        f"{examples} valid instances ({steps} steps per engine and repetition), {bad} invalid instances; "
        f"each engine and schema in a process forked after set-up: 1 cold + up to {args.repeat - 1} warm "
        f"repetitions, budget {args.budget:.0f} s"
        + (f", address space capped at {args.max_memory_gb:g} GB" if args.max_memory_gb else "")
        + "\n\n"
        + describe_engines(engines, setup_s)
        + f"Options: {options}. JIT: {jit_note}. "
        f"gc disabled during timed repetitions. Python {platform.python_version()}, {os.cpu_count()} CPUs. "
        f"Wall time {time.perf_counter() - started:.0f} s.\n"
    )
    print(report)

    if args.json is not None:
        payload = {
            **run_metadata(vocab, args.repeat),
            "budget_s": args.budget,
            "jit": jit_note,
            "engines": {
                e.name: {"dist": e.dist, "version": e.version, "setup_s": setup_s[e.name], "json": getattr(e, "json_note", "")}
                for e in engines
            },
            "skipped": skipped,
            "schemas": {w.name: {"group": w.group, "examples": len(w.examples), "invalid": len(w.invalid_examples)}
                        for w in workloads},
            "results": [r.summary() for r in results],
            "differences": [
                {"workload": n, "engine_a": a, "engine_b": b, "steps_differing": d, "steps_compared": c}
                for (n, a, b), (d, c) in diffs.items()
            ],
            "markdown": report,
        }
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    return 1 if any(r.compiled and not r.valid_ok for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
