"""The local runtime's speed: the model step, the batch engine, plain transformers and vLLM.

Usage::

    python benchmarks/runtime_bench.py [--tokens 32] [--formats bf16,int8,fp32]
                                       [--concurrency 1,4,16] [--threads 1]
                                       [--no-vllm] [--json out.json]

Everything runs on SmolLM2-135M-Instruct (the default model, its converted
Hugging Face folder) in one process, except vLLM, which runs in its own
environment (``.venv-vllm`` at the repository root, made by
``scripts/install-vllm.sh``) as a subprocess on the same folder and prompts;
it is skipped with a note where that environment is missing.

Measured, in one run:

- **memory bandwidth**: reading a 512 MB float32 tensor (``torch.sum``), the
  physical limit: a decoding step reads every weight once, so one sequence
  cannot decode faster than bandwidth / weight bytes tokens per second;
- **transformers**: ``model.generate`` (greedy, the same prompt), prefill and
  decode tokens/s;
- per weight format, **the model step alone**
  (:class:`~tokensieve.runtime.llama.FastLlama`): prefill tokens/s on the
  prompt, single-stream decode tokens/s;
- per weight format, **the engine**: 1, 4 and 16 concurrent requests, free
  text (``ignore_eos``, so every request decodes ``--tokens`` tokens) and
  JSON-Schema-constrained, output tokens per second of wall time from the
  first submit to the last token (prefill included);
- **vLLM on the CPU** (when installed): 1 and 16 concurrent requests, free text
  (``ignore_eos``) and with its own JSON-Schema structured outputs.

The machine may be shared: every figure is the median of ``--repeat`` runs,
and ratios are taken between figures of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"

PROMPTS = [
    "Write a long story about a lighthouse keeper.",
    "Explain how a steam engine works, step by step.",
    "Describe a walk through a busy market in the morning.",
    "Tell me about the history of the bicycle.",
]
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "city": {"type": "string", "maxLength": 40},
        "hobbies": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 4},
    },
    "required": ["name", "age", "city", "hobbies"],
    "additionalProperties": False,
}
JSON_PROMPT = "Describe a person as JSON with name, age, city and hobbies."
#: The fixed text whose perplexity measures each weight format's quality.
QUALITY_TEXT = (
    "The lighthouse stood at the end of a long stone pier, and every evening the keeper climbed "
    "its hundred and twelve steps to light the lamp. Ships passing in the night relied on its beam "
    "to find the harbour entrance, which was narrow and guarded by rocks on both sides. In winter, "
    "storms came in from the west, and waves broke over the pier so that the keeper had to wait for "
    "a lull before he could cross. He kept a logbook in which he wrote down the weather, the ships "
    "he saw, and the hours the lamp burned. Over the years the logbook grew into a record of the "
    "town itself: its fishing boats, its ferries, and the families who waited on the quay."
)


def _median(samples: list[float]) -> float:
    return float(statistics.median(samples))


def memory_bandwidth(repeat: int) -> float:
    """GB/s reading a 512 MB float32 tensor."""
    import torch

    data = torch.ones(128 * 1024 * 1024)
    data.sum()
    samples = []
    for _ in range(max(3, repeat)):
        t0 = time.perf_counter()
        data.sum()
        samples.append(data.numel() * 4 / (time.perf_counter() - t0) / 1e9)
    return _median(samples)


def transformers_generate(loaded: Any, prompt_ids: list[int], tokens: int, repeat: int) -> dict[str, float]:
    """Prefill and decode tokens/s of plain ``model.generate`` (greedy, no early stop)."""
    import torch

    ids = torch.tensor([prompt_ids])
    model = loaded.model
    pad = loaded.tokenizer.eos_token_id

    def run(n: int) -> float:
        t0 = time.perf_counter()
        with torch.inference_mode():
            model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=pad)
        return time.perf_counter() - t0

    run(2)
    first = _median([run(1) for _ in range(repeat)])
    whole = _median([run(tokens) for _ in range(repeat)])
    weight_bytes = sum(
        m.weight.numel() * m.weight.element_size() for m in model.modules() if isinstance(m, torch.nn.Linear)
    )
    return {
        "prefill_tps": len(prompt_ids) / first,
        "decode_tps": (tokens - 1) / max(whole - first, 1e-9),
        "weight_bytes": float(weight_bytes),
    }


def model_step(loaded: Any, fmt: str, prompt_ids: list[int], tokens: int, repeat: int) -> dict[str, float]:
    """Prefill and single-stream decode tokens/s of the model step alone."""
    from tokensieve.runtime.llama import FastLlama

    fast = FastLlama(loaded.model, weights=fmt, max_slots=1, max_len=len(prompt_ids) + tokens + 1)
    fast.forward(0, [prompt_ids], [0])
    prefill, decode = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        logits = fast.forward(0, [prompt_ids], [0])
        prefill.append(len(prompt_ids) / (time.perf_counter() - t0))
        token = int(logits[0].argmax())
        t0 = time.perf_counter()
        for i in range(tokens):
            token = int(fast.forward(0, [[token]], [len(prompt_ids) + i])[0].argmax())
        decode.append(tokens / (time.perf_counter() - t0))
    return {"prefill_tps": _median(prefill), "decode_tps": _median(decode), "weight_bytes": fast.weight_bytes}


def perplexity(loaded: Any, fmt: str | None, ids: list[int]) -> float:
    """Perplexity of the fixed text under transformers (``fmt`` None) or the model step in ``fmt``."""
    import torch

    from tokensieve.runtime.llama import FastLlama

    with torch.inference_mode():
        if fmt is None:
            logits = loaded.model(torch.tensor([ids])).logits[0].float()
        else:
            fast = FastLlama(loaded.model, weights=fmt, max_slots=1, max_len=len(ids))
            logits = fast.forward(0, [ids], [0], every_position=True)
        nll = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]))
    return float(torch.exp(nll))


def engine_throughput(
    engine: Any, prompts: list[list[int]], concurrency: int, tokens: int, compiled: Any, repeat: int
) -> dict[str, float]:
    """Output tokens/s of ``concurrency`` requests decoded together (wall time, prefill included)."""
    from tokensieve.runtime.engine import SamplingParams

    samples, steps, outputs = [], [], []
    for r in range(repeat):
        before = engine.stats()["steps"]
        t0 = time.perf_counter()
        handles = [
            engine.submit(
                prompts[i % len(prompts)],
                SamplingParams(
                    temperature=0.8, seed=1000 * r + i, max_tokens=tokens, ignore_eos=compiled is None
                ),
                compiled,
            )
            for i in range(concurrency)
        ]
        for handle in handles:
            handle.result()
            if handle.error is not None:
                raise handle.error
        elapsed = time.perf_counter() - t0
        total = sum(h.num_output_tokens for h in handles)
        samples.append(total / elapsed)
        steps.append(engine.stats()["steps"] - before)
        outputs.append(total / concurrency)
    return {"tps": _median(samples), "steps": _median(steps), "tokens_per_request": _median(outputs)}


_VLLM_SCRIPT = r"""
import json, sys, time
from vllm import LLM, SamplingParams
try:
    from vllm.sampling_params import StructuredOutputsParams
except ImportError:
    StructuredOutputsParams = None

def main():
    cfg = json.loads(sys.argv[1])
    llm = LLM(model=cfg["model"], dtype=cfg["dtype"], enforce_eager=True, max_model_len=1024,
              kv_cache_memory_bytes=1 << 30, seed=0)
    out = {}
    for conc in cfg["concurrency"]:
        for kind in ("free", "json"):
            if kind == "json" and StructuredOutputsParams is None:
                continue
            extra = {}
            if kind == "json":
                extra["structured_outputs"] = StructuredOutputsParams(json=cfg["schema"])
            params = [SamplingParams(temperature=0.8, seed=i, max_tokens=cfg["tokens"],
                                     ignore_eos=(kind == "free"), **extra) for i in range(conc)]
            prompts = [{"prompt_token_ids": cfg["prompts"][i % len(cfg["prompts"])]} for i in range(conc)]
            if kind == "json":
                prompts = [{"prompt_token_ids": cfg["json_prompt"]} for _ in range(conc)]
            llm.generate(prompts[:1], params[:1], use_tqdm=False)
            t0 = time.perf_counter()
            res = llm.generate(prompts, params, use_tqdm=False)
            elapsed = time.perf_counter() - t0
            total = sum(len(r.outputs[0].token_ids) for r in res)
            out[f"{kind}_{conc}"] = total / elapsed
    print("RESULT " + json.dumps(out), flush=True)

if __name__ == "__main__":
    main()
"""


def vllm_throughput(
    folder: Path,
    prompts: list[list[int]],
    json_prompt: list[int],
    tokens: int,
    concurrency: list[int],
    threads: int,
) -> dict[str, Any]:
    """vLLM-on-CPU output tokens/s, free and JSON-constrained, from its own environment."""
    if not VLLM_PYTHON.exists():
        return {"skipped": f"{VLLM_PYTHON} not found (scripts/install-vllm.sh makes it)"}
    cfg = {
        "model": str(folder),
        "dtype": "bfloat16",
        "prompts": prompts,
        "json_prompt": json_prompt,
        "tokens": tokens,
        "concurrency": concurrency,
        "schema": SCHEMA,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(_VLLM_SCRIPT)
        script = handle.name
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    try:
        proc = subprocess.run(
            [str(VLLM_PYTHON), script, json.dumps(cfg)],
            capture_output=True,
            text=True,
            timeout=1200,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"skipped": "vLLM did not finish within 20 minutes"}
    finally:
        os.unlink(script)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT ") :]))
    log = Path(tempfile.gettempdir()) / "tokensieve-vllm-bench.log"
    log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    errors = [line for line in (proc.stderr or "").splitlines() if "Error" in line]
    tail = errors[-3:] or (proc.stderr or proc.stdout).strip().splitlines()[-5:]
    return {"skipped": f"vLLM failed (exit {proc.returncode}, log in {log}): " + " | ".join(tail)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=48, help="output tokens per request (default 48)")
    parser.add_argument("--formats", default="bf16,int8,fp32", help="weight formats (default all)")
    parser.add_argument("--concurrency", default="1,4,16", help="concurrent requests (default 1,4,16)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure; the median is kept")
    parser.add_argument("--no-vllm", action="store_true", help="skip vLLM")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)

    import torch

    from tokensieve.runtime import build_prompt_ids, load_model
    from tokensieve.runtime.engine import Engine

    torch.set_num_threads(args.threads)
    formats = [f for f in args.formats.split(",") if f]
    levels = [int(c) for c in args.concurrency.split(",") if c]
    loaded = load_model(progress=False)
    prompts = [build_prompt_ids(loaded.tokenizer, p) for p in PROMPTS]
    json_prompt = build_prompt_ids(loaded.tokenizer, JSON_PROMPT)
    compiled = loaded.compiler.compile_json_schema(SCHEMA)
    results: dict[str, Any] = {"tokens": args.tokens, "threads": args.threads, "cpu": _cpu_name()}

    def note(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    note("memory bandwidth ...")
    results["bandwidth_gbs"] = memory_bandwidth(args.repeat)
    note("transformers generate ...")
    results["transformers"] = transformers_generate(loaded, prompts[0], args.tokens, args.repeat)
    text_ids = list(loaded.tokenizer(QUALITY_TEXT)["input_ids"])
    results["perplexity"] = {"transformers": perplexity(loaded, None, text_ids), "tokens": len(text_ids)}
    for fmt in formats:
        results["perplexity"][fmt] = perplexity(loaded, fmt, text_ids)
    for fmt in formats:
        note(f"{fmt}: model step ...")
        results[f"step_{fmt}"] = model_step(loaded, fmt, prompts[0], args.tokens, args.repeat)
        engine = Engine(
            loaded, max_batch=max(levels), max_queue=max(levels), threads=args.threads, weights=fmt
        )
        try:
            for level in levels:
                for kind, constraint, ps in (("free", None, prompts), ("json", compiled, [json_prompt])):
                    note(f"{fmt}: engine, {level} {kind} ...")
                    engine_throughput(
                        engine, ps, 1, args.tokens, constraint, 1
                    )  # warm the grammar and the step
                    results[f"engine_{fmt}_{kind}_{level}"] = engine_throughput(
                        engine, ps, level, args.tokens, constraint, args.repeat
                    )
        finally:
            engine.shutdown(drain=False)
    if not args.no_vllm:
        note("vLLM (loads for a minute or more) ...")
        vllm_levels = sorted({1, max(levels)})
        results["vllm"] = vllm_throughput(
            loaded.path, prompts, json_prompt, args.tokens, vllm_levels, args.threads
        )
    print(render(results, formats, levels))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f" ({os.cpu_count()} CPUs)"
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs"


def render(results: dict[str, Any], formats: list[str], levels: list[int]) -> str:
    """The figures as markdown tables."""
    hf = results["transformers"]
    bw = results["bandwidth_gbs"]
    hf_mb = hf["weight_bytes"] / 1e6
    ppl = results["perplexity"]
    lines = [
        f"Perplexity of a fixed text ({ppl['tokens']} tokens): transformers {ppl['transformers']:.3f}, "
        + ", ".join(f"{fmt} {ppl[fmt]:.3f} ({ppl[fmt] / ppl['transformers'] - 1:+.2%})" for fmt in formats)
        + ".",
        "",
        f"SmolLM2-135M-Instruct, {results['tokens']} output tokens per request, "
        f"{results['threads']} thread(s), {results['cpu']}; memory bandwidth {bw:.1f} GB/s.",
        "",
        "| single stream | weights read per token | bandwidth bound | prefill tokens/s | decode tokens/s | decode vs transformers |",
        "|---|---|---|---|---|---|",
        f"| transformers generate (fp32) | {hf_mb:.0f} MB | {bw * 1e3 / hf_mb:.0f} tokens/s | {hf['prefill_tps']:.0f} | "
        f"{hf['decode_tps']:.1f} | 1.00 |",
    ]
    for fmt in formats:
        step = results[f"step_{fmt}"]
        mb = step["weight_bytes"] / 1e6
        lines.append(
            f"| model step, {fmt} | {mb:.0f} MB | {bw * 1e3 / mb:.0f} tokens/s | {step['prefill_tps']:.0f} | "
            f"{step['decode_tps']:.1f} | {step['decode_tps'] / hf['decode_tps']:.2f} |"
        )
    lines += [
        "",
        "Engine output tokens/s (wall time from the first submit, prefill included); in brackets: "
        "times the same format's 1-request figure; json/free: constrained over free text at the same concurrency.",
        "",
        "| weights | concurrency | free text | JSON Schema | json/free |",
        "|---|---|---|---|---|",
    ]
    for fmt in formats:
        base = results[f"engine_{fmt}_free_{levels[0]}"]["tps"]
        for level in levels:
            free = results[f"engine_{fmt}_free_{level}"]["tps"]
            js = results[f"engine_{fmt}_json_{level}"]["tps"]
            lines.append(
                f"| {fmt} | {level} | {free:.1f} ({free / base:.1f}x) | {js:.1f} | {js / free:.2f} |"
            )
    vllm = results.get("vllm")
    if vllm is not None:
        lines.append("")
        if "skipped" in vllm:
            lines.append(f"vLLM: skipped: {vllm['skipped']}")
        else:
            lines += [
                "| vLLM (bf16) | concurrency | free text | JSON Schema | ours bf16 free / vLLM free |",
                "|---|---|---|---|---|",
            ]
            for key in sorted(k for k in vllm if k.startswith("free_")):
                level = int(key.split("_")[1])
                ours = results.get(f"engine_bf16_free_{level}", {}).get("tps")
                ratio = f"{ours / vllm[key]:.2f}" if ours else "-"
                js = vllm.get(f"json_{level}")
                lines.append(
                    f"| vLLM | {level} | {vllm[key]:.1f} | {js:.1f} | {ratio} |"
                    if js
                    else f"| vLLM | {level} | {vllm[key]:.1f} | - | {ratio} |"
                )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
