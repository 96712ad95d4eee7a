"""Generation with the real model under every corpus schema, checked with ``jsonschema``.

Usage::

    python benchmarks/json_generation.py [--seeds 3] [--groups api,tools] [--schemas NAME,...]
                                         [--limit N] [--batch 8] [--max-new-tokens 768]
                                         [--temperature 0.8] [--json out.json]

SmolLM2-135M-Instruct (the default local model) writes one instance per
(schema, seed): every schema of ``benchmarks/data/json_schemas`` is compiled
with ``compile_json_schema(schema, strict=False)`` for the model's vocabulary,
and ``model.generate`` samples under
:class:`~tokensieve.integrations.transformers.TokensieveLogitsProcessor`, with
one grammar (one matcher) per batch row. Rows are batched across schemas, left
padded; seed ``s`` seeds torch before each batch (``s * 100003 + batch index``).

Each output (the tokens before the stop token) is decoded, parsed with
``json.loads`` and validated with ``jsonschema`` (draft 2020-12, formats
checked). An output that did not reach the stop token within
``--max-new-tokens`` is counted as *hit max tokens* (an unfinished prefix,
not expected to parse). Every finished output must parse and validate; an
invalid one is listed with its errors. Violations of keywords that the
compiler reported in ``unenforced`` are counted apart.

Prints a markdown summary per group and overall; exit status 1 when any
finished output is invalid on an enforced keyword, or a row failed.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import re
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from json_bench import HAND_WRITTEN_GROUPS

CORPUS_DIR = Path(__file__).resolve().parent / "data" / "json_schemas"
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s\"<>\\^`{|}]*$")


@dataclass
class Outcome:
    """One generated instance."""

    schema: str
    group: str
    seed: int
    status: str  # "valid", "invalid", "invalid-unenforced", "unparsed", "max-tokens", "error"
    tokens: int = 0
    text: str = ""
    errors: list[str] = field(default_factory=list)


def load_corpus(groups: list[str] | None = None) -> list[dict[str, Any]]:
    """Corpus records (``name``, ``group``, ``description``, ``schema``, ``examples``) in file order."""
    out = []
    for path in sorted(CORPUS_DIR.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                record = json.loads(line)
                if not groups or record["group"] in groups:
                    out.append(record)
    return out


def validator(schema: Any) -> Any:
    """Draft 2020-12 validator with format checking (``uri`` by a small pattern)."""
    from jsonschema import Draft202012Validator, FormatChecker

    checker = FormatChecker()
    checker.checks("uri")(lambda v: not isinstance(v, str) or _URI.match(v) is not None)
    return Draft202012Validator(schema, format_checker=checker)


def prompt_for(record: dict[str, Any]) -> str:
    """A short user message: what the object is and its top-level fields."""
    props = list(record["schema"].get("properties", {}))
    fields = f" Fields: {', '.join(props)}." if props else ""
    return f"Write one realistic JSON object for: {record['description']}.{fields} Answer with JSON only."


def _unenforced_keywords(unenforced: tuple[str, ...] | list[str]) -> set[str]:
    """Keywords named in ``compiled.unenforced`` entries (``"<pointer>: <keyword> <why>"``)."""
    words = set()
    for entry in unenforced:
        pointer, _, rest = entry.partition(": ")
        if rest:
            words.add(rest.split()[0])
        words.add(pointer.rstrip("/").rsplit("/", 1)[-1])
    return words


def classify(
    record: dict[str, Any], seed: int, data: bytes, finished: bool, unenforced: set[str], n_tokens: int
) -> Outcome:
    """Parse and validate one output."""
    text = data.decode("utf-8", errors="replace")
    base = Outcome(record["name"], record["group"], seed, "", n_tokens, text)
    if not finished:
        base.status = "max-tokens"
        return base
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        base.status = "unparsed"
        base.errors = [str(exc)]
        return base
    errors = list(validator(record["schema"]).iter_errors(value))
    if not errors:
        base.status = "valid"
        return base
    base.errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.validator}: {e.message[:200]}" for e in errors[:5]]
    base.status = "invalid-unenforced" if all(e.validator in unenforced for e in errors) else "invalid"
    return base


def run(
    records: list[dict[str, Any]],
    seeds: list[int],
    *,
    batch: int,
    max_new_tokens: int,
    temperature: float,
    budget_s: float = 0.0,
    log: bool = True,
) -> tuple[list[Outcome], dict[str, Any]]:
    """Generate and check one instance per (schema, seed); returns the outcomes and timing facts.

    With ``budget_s > 0``, no batch starts once generation has run that long
    (rows go seed by seed, so the first seed covers every schema first).
    """
    import torch

    from tokensieve import LimitExceeded, SchemaError
    from tokensieve.integrations.transformers import TokensieveLogitsProcessor
    from tokensieve.runtime import build_prompt_ids, load_model

    t0 = time.perf_counter()
    loaded = load_model(progress=False)
    load_s = time.perf_counter() - t0
    info = loaded.tokenizer_info
    tokenizer, model = loaded.tokenizer, loaded.model
    vocab = info.decoded_vocab
    stops = [int(t) for t in info.stop_token_ids]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]

    unenforced: dict[str, set[str]] = {}
    outcomes: list[Outcome] = []
    compile_s: dict[str, float] = {}
    not_compiled: dict[str, str] = {}
    # Grammars are compiled per batch and dropped after it: 244 compiled schemas
    # with their mask caches do not fit in memory together (a large string
    # automaton alone holds a (states, 256) transition table).
    compiled: dict[str, Any] = {}
    compiling = [0.0]  # seconds spent compiling, recompilations included

    def compile_for(record: dict[str, Any]) -> Any:
        name = record["name"]
        if name in compiled:
            return compiled[name]
        if name in not_compiled:
            return None
        t = time.perf_counter()
        try:
            c = loaded.compiler.compile_json_schema(record["schema"], strict=False)
        except (SchemaError, LimitExceeded, MemoryError) as exc:
            not_compiled[name] = f"{type(exc).__name__}: {exc}"
            if log:
                print(f"  {name}: not compiled: {exc}", file=sys.stderr)
            return None
        finally:
            compiling[0] += time.perf_counter() - t
        if name not in compile_s:
            compile_s[name] = time.perf_counter() - t
            if log:
                print(f"  compiled {name} in {compile_s[name]:.2f} s", file=sys.stderr)
        unenforced[name] = _unenforced_keywords(getattr(c, "unenforced", ()))
        return c

    rows = [(r, s) for s in seeds for r in records]
    gen_tokens = 0
    t_gen = time.perf_counter()
    not_run = 0
    for b in range(0, len(rows), batch):
        if budget_s and time.perf_counter() - t_gen > budget_s:
            not_run = len(rows) - b
            if log:
                print(f"  time budget spent: {not_run} of {len(rows)} rows not generated", file=sys.stderr)
            break
        batch_grammars = {r["name"]: compile_for(r) for r, _ in rows[b : b + batch]}
        compiled.clear()
        compiled.update({k: v for k, v in batch_grammars.items() if v is not None})
        loaded.compiler.clear_cache()
        gc.collect()
        chunk = []
        for r, s in rows[b : b + batch]:
            if r["name"] in compiled:
                chunk.append((r, s))
            else:
                outcomes.append(Outcome(r["name"], r["group"], s, "error", errors=[not_compiled[r["name"]]]))
        if not chunk:
            continue
        seed = chunk[0][1]
        prompts = [build_prompt_ids(tokenizer, prompt_for(r)) for r, _ in chunk]
        width = max(len(p) for p in prompts)
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        processor = TokensieveLogitsProcessor([compiled[r["name"]] for r, _ in chunk])
        torch.manual_seed(seed * 100003 + b)
        t = time.perf_counter()
        try:
            with torch.inference_mode():
                out = model.generate(
                    input_ids=input_ids,
                    attention_mask=attention,
                    logits_processor=[processor],
                    do_sample=True,
                    temperature=temperature,
                    top_k=0,
                    top_p=1.0,
                    max_new_tokens=max_new_tokens,
                    eos_token_id=stops,
                    pad_token_id=pad,
                )
        except Exception as exc:  # noqa: BLE001 - a failing batch is reported, the run goes on
            for r, s in chunk:
                outcomes.append(Outcome(r["name"], r["group"], s, "error", errors=[f"{type(exc).__name__}: {exc}"]))
            print(f"  batch {b // batch}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        generated = out[:, width:].tolist()
        for (r, s), ids in zip(chunk, generated, strict=True):
            finished = False
            kept: list[int] = []
            for t_id in ids:
                if t_id in stops:
                    finished = True
                    break
                kept.append(t_id)
            gen_tokens += len(kept)
            data = b"".join(bytes(vocab[t_id]) for t_id in kept)
            outcome = classify(r, s, data, finished, unenforced[r["name"]], len(kept))
            outcomes.append(outcome)
            if log and outcome.status not in ("valid", "max-tokens"):
                print(f"  {r['name']} seed {s}: {outcome.status}: {outcome.errors[:2]} {outcome.text[:200]!r}", file=sys.stderr)
        if log:
            done = min(b + batch, len(rows))
            print(
                f"[{done}/{len(rows)}] batch of {len(chunk)} in {time.perf_counter() - t:.1f} s "
                f"({Counter(o.status for o in outcomes)})",
                file=sys.stderr,
            )
    facts = {
        "model_load_s": round(load_s, 1),
        "compile_s_total": round(sum(compile_s.values()), 1),
        "generate_s": round(time.perf_counter() - t_gen - compiling[0], 1),
        "generated_tokens": gen_tokens,
        "torch_threads": torch.get_num_threads(),
        "rows_not_run": not_run,
    }
    return outcomes, facts


STATUSES = ("valid", "invalid", "invalid-unenforced", "unparsed", "max-tokens", "error")


def render(outcomes: list[Outcome], facts: dict[str, Any], args: argparse.Namespace) -> str:
    """Markdown summary: counts per group and overall, then every non-valid finished output."""
    groups = list(dict.fromkeys(o.group for o in outcomes))
    lines = [
        f"SmolLM2-135M-Instruct, {len({o.schema for o in outcomes})} schemas × {len(args.seed_list)} seeds, "
        f"temperature {args.temperature}, max {args.max_new_tokens} new tokens, batches of {args.batch}; "
        f"model load {facts['model_load_s']} s, compile {facts['compile_s_total']} s, "
        f"generation {facts['generate_s']} s for {facts['generated_tokens']} tokens "
        f"({facts['torch_threads']} torch threads, Python {platform.python_version()}).",
        *(
            [f"Stopped at the time budget: {facts['rows_not_run']} (schema, seed) rows were not generated."]
            if facts.get("rows_not_run")
            else []
        ),
        "",
        "| group | generated | finished | parsed | valid | invalid | invalid (unenforced keyword only) | hit max tokens | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for g in [*groups, None]:
        os_ = [o for o in outcomes if g is None or o.group == g]
        c = Counter(o.status for o in os_)
        generated = len(os_) - c["error"]
        finished = generated - c["max-tokens"]
        parsed = finished - c["unparsed"]
        label = "**all**" if g is None else g
        lines.append(
            f"| {label} | {generated} | {finished} | {parsed} | {c['valid']} | {c['invalid']} | "
            f"{c['invalid-unenforced']} | {c['max-tokens']} | {c['error']} |"
        )
    bad = [o for o in outcomes if o.status in ("invalid", "invalid-unenforced", "unparsed", "error")]
    if bad:
        lines += ["", "Outputs that are not valid, and errors:", ""]
        for o in bad:
            lines.append(f"- {o.schema} (seed {o.seed}): {o.status}: {'; '.join(o.errors)[:300]} — `{o.text[:160]}`")
    hit = [o for o in outcomes if o.status == "max-tokens"]
    if hit:
        lines += ["", f"Hit max tokens: {', '.join(sorted({f'{o.schema} (seed {o.seed}, {o.tokens} tokens)' for o in hit}))}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the generation check and print the summary."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds per schema (default 3: seeds 0, 1, 2)")
    parser.add_argument(
        "--groups", default="", help="comma-separated corpus groups (default: the hand-written ones)"
    )
    parser.add_argument("--schemas", default="", help="comma-separated schema names (default: all)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N schemas of each group")
    parser.add_argument("--batch", type=int, default=8, help="rows per model.generate call (default 8)")
    parser.add_argument("--max-new-tokens", type=int, default=768, help="token budget per output (default 768)")
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature (default 0.8)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    parser.add_argument("--json", type=Path, default=None, help="also write every output to this JSON file")
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=0,
        help="start no batch after this many minutes of generation (0: no budget); the report says what was left",
    )
    parser.add_argument(
        "--max-memory-gb",
        type=float,
        default=0,
        help="cap the address space (RLIMIT_AS): a compilation that exhausts it is reported as an error",
    )
    args = parser.parse_args(argv)
    args.seed_list = list(range(args.seeds))
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    records = load_corpus(groups or list(HAND_WRITTEN_GROUPS))
    if args.schemas:
        wanted = {s.strip() for s in args.schemas.split(",") if s.strip()}
        records = [r for r in records if r["name"] in wanted]
    if args.limit:
        seen: Counter[str] = Counter()
        kept = []
        for r in records:
            seen[r["group"]] += 1
            if seen[r["group"]] <= args.limit:
                kept.append(r)
        records = kept
    if not records:
        print("no schemas selected", file=sys.stderr)
        return 2
    if args.max_memory_gb:
        import resource

        limit = int(args.max_memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    outcomes, facts = run(
        records,
        args.seed_list,
        batch=args.batch,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        budget_s=args.budget_minutes * 60,
    )
    report = render(outcomes, facts, args)
    print(report)
    if args.json is not None:
        args.json.write_text(
            json.dumps({"facts": facts, "outcomes": [asdict(o) for o in outcomes], "markdown": report}, indent=1, ensure_ascii=False),
            encoding="utf-8",
        )
    failed = any(o.status in ("invalid", "unparsed", "error") for o in outcomes)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
