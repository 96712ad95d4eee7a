"""Constrained decoding inside a real vLLM: tokensieve's logits processor beside vLLM's own backends.

Run with the vLLM environment's interpreter (``bash scripts/install-vllm.sh``)::

    .venv-vllm/bin/python benchmarks/vllm_bench.py [--json-schemas 8] [--max-tokens 96]

The same model (the converted SmolLM2-135M-Instruct), prompts and sampling
(temperature 0.7, fixed seeds) go through vLLM with no constraint, with
tokensieve (``extra_args["structured_outputs"]``), and with vLLM's built-in
``xgrammar`` and ``guidance`` backends (``SamplingParams.structured_outputs``;
the backend is an engine setting, so each gets an engine of its own, all
carrying the tokensieve processor so that only the constraint differs). The
workloads are schemas from the JSON Schema corpus (``benchmarks/data``) and
the grammar workloads (``grammar_workloads.py``: GBNF for tokensieve and
xgrammar, the same language in Lark for guidance), at 1 request at a time
and 16 at once. Per cell it prints output tokens/s, the share of outputs
valid for their constraint (``jsonschema``; ``lark`` for grammars; an output
cut by ``--max-tokens`` counts as invalid for every backend alike), and, once
per backend, the time to first token of a schema never seen before (a
one-token request, median of three fresh schemas).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PROCESSOR = "tokensieve.integrations.vllm:LogitsProcessor"
_FRESH: list[int] = []


def load_schemas(count: int) -> list[tuple[str, dict[str, Any]]]:
    """The first schemas of each corpus file in turn, ``count`` in all."""
    groups = []
    for path in sorted((HERE / "data" / "json_schemas").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        groups.append([(row["name"], row["schema"]) for row in rows])
    picked: list[tuple[str, dict[str, Any]]] = []
    depth = 0
    while len(picked) < count and any(depth < len(g) for g in groups):
        picked.extend(g[depth] for g in groups if depth < len(g))
        depth += 1
    return picked[:count]


def make_jobs(schemas: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    from grammar_workloads import GRAMMAR_WORKLOADS

    jobs: list[dict[str, Any]] = []
    for name, schema in schemas:
        jobs.append(
            {"workload": "json", "name": name, "prompt": f"Give an example {name} as JSON.", "json": schema}
        )
    for workload in GRAMMAR_WORKLOADS:
        jobs.append(
            {
                "workload": "grammar",
                "name": workload.name,
                "prompt": f"Write a short example in the {workload.name} language.",
                "gbnf": workload.gbnf,
                "lark": workload.lark,
            }
        )
    return jobs


def sampling(job: dict[str, Any], backend: str, seed: int, max_tokens: int) -> Any:
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    base: dict[str, Any] = {"max_tokens": max_tokens, "temperature": 0.7, "seed": seed}
    if backend == "none":
        return SamplingParams(**base)
    if backend == "tokensieve":
        spec = {"json": job["json"]} if "json" in job else {"grammar": job["gbnf"], "grammar_syntax": "gbnf"}
        return SamplingParams(**base, extra_args={"structured_outputs": spec})
    if "json" in job:
        params = StructuredOutputsParams(json=job["json"])
    else:
        params = StructuredOutputsParams(grammar=job["lark"] if backend == "guidance" else job["gbnf"])
    return SamplingParams(**base, structured_outputs=params)


def is_valid(job: dict[str, Any], completion: Any) -> bool:
    import jsonschema
    import lark

    if completion.finish_reason != "stop":
        return False
    try:
        if "json" in job:
            jsonschema.validate(json.loads(completion.text), job["json"])
        else:
            lark.Lark(job["lark"], parser="earley").parse(completion.text)
    except Exception:
        return False
    return True


def run_cell(
    llm: Any, jobs: list[dict[str, Any]], backend: str, concurrency: int, max_tokens: int, refused: set[int]
) -> dict[str, Any]:
    """Run ``jobs`` ``concurrency`` at a time; a request the backend refuses joins ``refused`` and is left out."""
    prompts = [chat(llm, job["prompt"]) for job in jobs]
    todo = [i for i in range(len(jobs)) if i not in refused]
    done: list[tuple[int, Any]] = []
    before = processor_stats()
    start = time.perf_counter()
    for lo in range(0, len(todo), concurrency):
        chunk = todo[lo : lo + concurrency]
        try:
            params = [sampling(jobs[i], backend, i, max_tokens) for i in chunk]
            outputs = llm.generate([prompts[i] for i in chunk], params, use_tqdm=False)
        except Exception:  # one refused request fails its whole call: find it alone
            if len(chunk) > 1:
                raise
            refused.update(chunk)
            continue
        done.extend(zip(chunk, outputs, strict=True))
    elapsed = time.perf_counter() - start
    after = processor_stats()
    steps = after["steps"] - before["steps"]
    tokens = sum(len(o.outputs[0].token_ids) for _, o in done)
    valid = sum(1 for i, o in done if is_valid(jobs[i], o.outputs[0]))  # for "none": valid by chance
    return {
        "backend": backend,
        "concurrency": concurrency,
        "requests": len(jobs),
        "refused": len(refused),
        "tokens": tokens,
        "seconds": elapsed,
        "tokens_per_s": tokens / elapsed if elapsed else 0.0,
        "valid": valid,
        "finished": sum(1 for _, o in done if o.outputs[0].finish_reason == "stop"),
        # the processor's own time per step (mask fills, token steps, compile waits), tokensieve rows only
        "processor_ms_per_step": 1000 * (after["seconds"] - before["seconds"]) / steps if steps else None,
        "compile_wait_s": after["wait_seconds"] - before["wait_seconds"],
    }


def processor_stats() -> dict[str, float]:
    """What the tokensieve processor in the engine process has counted so far (see ``LogitsProcessor.stats``)."""
    path = Path(os.environ["TOKENSIEVE_VLLM_STATS"])
    if not path.is_file():
        return {"steps": 0, "rows": 0, "seconds": 0.0, "wait_seconds": 0.0}
    return dict(json.loads(path.read_text()))


def first_token_seconds(llm: Any, backend: str, runs: int = 3) -> float:
    """Median wall time of a one-token request whose schema no engine has seen."""
    times = []
    for k in range(runs):
        _FRESH.append(k)  # a bound no schema had before makes a different language, not just a new name
        schema = {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "name": {"type": "string", "maxLength": 20 + len(_FRESH)},
            },
            "required": ["id", "name"],
        }
        job = {"prompt": "Give a record as JSON.", "json": schema}
        params = sampling(job, backend, k, 1)
        start = time.perf_counter()
        llm.generate([chat(llm, job["prompt"])], [params], use_tqdm=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def chat(llm: Any, text: str) -> str:
    tokenizer = llm.get_tokenizer()
    return str(
        tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
    )


def engine(model: str, backend: str) -> Any:
    from vllm import LLM

    return LLM(
        model=model,
        dtype="float32",
        enforce_eager=True,
        max_model_len=1024,
        max_num_seqs=16,
        seed=0,
        kv_cache_memory_bytes=1 << 30,
        structured_outputs_config={"backend": backend if backend in ("xgrammar", "guidance") else "xgrammar"},
        logits_processors=[PROCESSOR],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="Hugging Face model folder (default: the converted SmolLM2)")
    parser.add_argument("--json-schemas", type=int, default=8, help="schemas taken from the corpus")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--backends", default="none,tokensieve,xgrammar,guidance")
    parser.add_argument("--concurrency", default="1,16")
    parser.add_argument("--json-out", help="write the rows as JSON here too")
    args = parser.parse_args()
    if args.model is None:
        from tokensieve.runtime import convert_model

        args.model = str(convert_model(progress=False))
    jobs = make_jobs(load_schemas(args.json_schemas))
    backends = args.backends.split(",")
    levels = sorted(int(c) for c in args.concurrency.split(","))
    rows: list[dict[str, Any]] = []
    # the engine process inherits this and its tokensieve processor writes its counters there
    os.environ["TOKENSIEVE_VLLM_STATS"] = str(Path(tempfile.mkdtemp(prefix="vllm-bench-")) / "stats.json")
    # one engine for the backends that need no engine setting of their own, one for guidance
    plan = [[b for b in backends if b != "guidance"], [b for b in backends if b == "guidance"]]
    for group in plan:
        if not group:
            continue
        llm = engine(args.model, group[-1])
        chat(llm, "warm")  # the tokenizer, before any timing
        llm.generate([chat(llm, "Hi.")], use_tqdm=False)
        for backend in group:
            ttft = None if backend == "none" else first_token_seconds(llm, backend)
            for workload in ("json", "grammar"):
                chosen = [job for job in jobs if job["workload"] == workload]
                refused: set[int] = set()
                for level in levels:  # ascending: one at a time first finds the refused requests
                    row = run_cell(llm, chosen, backend, level, args.max_tokens, refused)
                    row.update(workload=workload, new_schema_first_token_s=ttft)
                    rows.append(row)
                    per_step = row["processor_ms_per_step"]
                    print(
                        f"{backend:10s} {workload:7s} x{level:<3d} {row['tokens_per_s']:7.1f} tok/s  "
                        f"valid {row['valid']}/{row['requests']}  finished {row['finished']}  refused {row['refused']}  "
                        + ("" if per_step is None else f"processor {per_step:.2f} ms/step  ")
                        + f"tokens {row['tokens']}  {row['seconds']:.1f} s"
                        + ("" if ttft is None else f"  first token (new schema) {ttft * 1000:.0f} ms"),
                        flush=True,
                    )
        llm.llm_engine.engine_core.shutdown()
        del llm
        gc.collect()
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
