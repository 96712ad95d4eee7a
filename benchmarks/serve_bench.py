"""Throughput and latency of ``tokensieve serve`` under concurrent clients.

Starts the server (or uses one at ``--base-url``) and drives it with the
``openai`` client's streaming API: for every workload and every number of
concurrent clients, each client sends ``--requests`` requests one after the
other. Workloads:

- ``free``: unconstrained chat;
- ``schema``: the same ``json_schema`` every time (compiled once, then cached);
- ``new-schema``: a schema no request has used before (compiled on arrival);
- ``tools``: two tools with ``tool_choice="required"``.

Reported per (workload, clients): output tokens per second over the run,
time to first token (p50, p99) and inter-token latency (p50, p99) over every
request's chunks, and each constrained workload's throughput as a ratio of the
unconstrained one at the same concurrency. Usage::

    python benchmarks/serve_bench.py                       # clients 1,4,16, 2 requests each
    python benchmarks/serve_bench.py --clients 1,4 --requests 3 --max-tokens 48
    python benchmarks/serve_bench.py --base-url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai

CITY = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "population": {"type": "integer", "minimum": 0},
        "country": {"type": "string", "maxLength": 40},
        "landmarks": {"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 3},
    },
    "required": ["name", "population", "country", "landmarks"],
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "maxLength": 30},
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city", "unit"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": 60},
                    "limit": {"type": "integer", "maximum": 20},
                },
                "required": ["query", "limit"],
            },
        },
    },
]
_fresh = itertools.count()


def _new_schema() -> dict[str, Any]:
    n = next(_fresh)
    schema = json.loads(json.dumps(CITY))
    schema["properties"][f"note_{os.getpid()}_{n}"] = {"type": "string", "maxLength": 20 + n % 7}
    return schema


def _request(workload: str) -> dict[str, Any]:
    if workload == "free":
        return {"messages": [{"role": "user", "content": "Describe a large city in a few sentences."}]}
    if workload in ("schema", "new-schema"):
        schema = CITY if workload == "schema" else _new_schema()
        return {
            "messages": [{"role": "user", "content": "Describe a large city as JSON."}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "city", "schema": schema, "strict": True},
            },
        }
    return {
        "messages": [{"role": "user", "content": "What is the weather in Lisbon?"}],
        "tools": TOOLS,
        "tool_choice": "required",
    }


@dataclass
class Sample:
    """One request's timings."""

    ttft: float
    gaps: list[float]
    tokens: int


@dataclass
class Run:
    """One (workload, clients) cell."""

    workload: str
    clients: int
    seconds: float = 0.0
    samples: list[Sample] = field(default_factory=list)

    @property
    def tokens_per_s(self) -> float:
        return sum(s.tokens for s in self.samples) / self.seconds if self.seconds else 0.0


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


async def _one(client: openai.AsyncOpenAI, model: str, workload: str, max_tokens: int, seed: int) -> Sample:
    t0 = time.perf_counter()
    arrivals: list[float] = []
    tokens = 0
    stream = await client.chat.completions.create(
        model=model,
        max_tokens=max_tokens,
        seed=seed,
        temperature=1.0,
        stream=True,
        stream_options={"include_usage": True},
        **_request(workload),
    )
    async for chunk in stream:
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        for choice in chunk.choices:
            d = choice.delta
            if d.content or (
                d.tool_calls
                and any(c.function and (c.function.arguments or c.function.name) for c in d.tool_calls)
            ):
                arrivals.append(time.perf_counter())
    if not arrivals:
        arrivals = [time.perf_counter()]
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    return Sample(arrivals[0] - t0, gaps, tokens)


async def _run(
    base_url: str, api_key: str, model: str, workload: str, clients: int, requests: int, max_tokens: int
) -> Run:
    client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=600)
    run = Run(workload, clients)
    seeds = itertools.count()

    async def worker() -> list[Sample]:
        return [await _one(client, model, workload, max_tokens, next(seeds)) for _ in range(requests)]

    t0 = time.perf_counter()
    results = await asyncio.gather(*(worker() for _ in range(clients)))
    run.seconds = time.perf_counter() - t0
    run.samples = [s for r in results for s in r]
    await client.close()
    return run


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server(max_batch: int, options: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tokensieve",
            "serve",
            "--port",
            str(port),
            "--max-batch",
            str(max_batch),
            "--log-level",
            "warning",
            *options,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                return proc, base + "/v1"
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not start")


def _table(runs: list[Run]) -> str:
    free = {r.clients: r.tokens_per_s for r in runs if r.workload == "free"}
    lines = [
        "| workload | clients | requests | output tok/s | vs free | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        ttft = [s.ttft * 1e3 for s in r.samples]
        gaps = [g * 1e3 for s in r.samples for g in s.gaps]
        ratio = r.tokens_per_s / free[r.clients] if free.get(r.clients) else float("nan")
        lines.append(
            f"| {r.workload} | {r.clients} | {len(r.samples)} | {r.tokens_per_s:.1f} | {ratio:.2f} | "
            f"{_pct(ttft, 0.5):.0f} | {_pct(ttft, 0.99):.0f} | {_pct(gaps, 0.5):.1f} | {_pct(gaps, 0.99):.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints a markdown table on stdout."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base-url", help="an already running server's /v1 address (default: start one)")
    p.add_argument("--api-key", default="none")
    p.add_argument("--clients", default="1,4,16", help="comma-separated numbers of concurrent clients")
    p.add_argument("--requests", type=int, default=2, help="requests per client")
    p.add_argument("--max-tokens", type=int, default=48)
    p.add_argument("--workloads", default="free,schema,new-schema,tools")
    p.add_argument("--serve-options", default="", help="more options for the server it starts, as one string")
    p.add_argument("--json", metavar="PATH", help="also write every sample as JSON")
    args = p.parse_args(argv)
    clients = [int(c) for c in args.clients.split(",")]
    proc = None
    base = args.base_url
    if base is None:
        proc, base = _start_server(max(clients), shlex.split(args.serve_options))
    try:
        model = httpx.get(
            base + "/models", headers={"Authorization": f"Bearer {args.api_key}"}, timeout=10
        ).json()["data"][0]["id"]
        asyncio.run(
            _run(base, args.api_key, model, "schema", 1, 1, args.max_tokens)
        )  # warm-up: first compile, first steps
        runs = []
        for n in clients:
            for workload in args.workloads.split(","):
                run = asyncio.run(
                    _run(base, args.api_key, model, workload, n, args.requests, args.max_tokens)
                )
                print(f"{workload} x{n}: {run.tokens_per_s:.1f} tok/s", file=sys.stderr, flush=True)
                runs.append(run)
        stats = httpx.get(base.removesuffix("/v1") + "/health", timeout=10).json().get("engine", {})
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
    print(_table(runs))
    print(f"\nengine batch sizes (rows per step: steps): {stats.get('batch_sizes')}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(
                [
                    {
                        "workload": r.workload,
                        "clients": r.clients,
                        "seconds": r.seconds,
                        "samples": [s.__dict__ for s in r.samples],
                    }
                    for r in runs
                ],
                out,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
