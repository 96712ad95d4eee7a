"""``tokensieve serve`` under sustained load and faults.

Starts a server (with a grammar cache folder of its own, beside the converted
model of the default cache), then runs these phases one after the other:

- ``load``: ``--clients`` concurrent clients for ``--duration`` seconds, each
  sending one request after the other from a mix of free text, cached JSON
  schemas, tools, regex/choice/grammar constraints, new schemas, requests that
  break a limit (each must be a 400 in OpenAI's error shape) and streams the
  client leaves after a few chunks. Reported: responses per kind and status
  (5xx must be 0), time to first token and inter-token latency of the streamed
  ones (p50, p99), and the server's resident memory sampled every second
  (server process, and with its compile processes), judged flat when the
  median of the last third after warm-up is within 5% of the first third's;
- ``flood``: ``--flood`` new schemas at once: each a 200, or a 429 with
  ``Retry-After`` past the compile queue;
- ``refusal``: ``--batch-clients`` streams decoding free text, alone, then
  while refused constraints of one kind (too costly, too large, invalid,
  unenforceable under ``strict``, bad grammar; each one new) arrive one every
  ``--refusal-every`` seconds, then while all kinds arrive back to back: the
  streams' inter-token latency in each window;
- ``cache``: every entry of the grammar cache damaged (bytes flipped,
  truncated, another entry's bytes, garbage), then a second server on the same
  folder and the first one given the same schemas (greedy, same seed) while
  both compile a set of new ones at once: their outputs must be equal and valid
  (``jsonschema``);
- ``sigterm``: streams in flight when the server gets SIGTERM: they must all
  finish with a ``finish_reason`` and ``[DONE]``, and the server exit.

Usage::

    python benchmarks/serve_load.py                          # 64 clients, 600 s of load
    python benchmarks/serve_load.py --duration 240 --json load.json
    python benchmarks/serve_load.py --phases load --duration 30 --clients 8
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonschema
from serve_bench import TOOLS, _pct, _start_server

MODEL = "SmolLM2-135M-Instruct"
CITY = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 30},
        "population": {"type": "integer", "minimum": 0},
        "country": {"type": "string", "maxLength": 30},
    },
    "required": ["name", "population", "country"],
}
CONTACT = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "pattern": "^[a-z]{1,10}@[a-z]{1,8}\\.(com|org)$"},
        "phone": {"type": "string", "pattern": "^\\+[0-9]{2} [0-9]{3} [0-9]{4}$"},
        "priority": {"enum": ["low", "normal", "high"]},
    },
    "required": ["email", "phone", "priority"],
    "additionalProperties": False,
}
ITEMS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"sku": {"type": "string", "maxLength": 8}, "qty": {"type": "integer"}},
    },
    "maxItems": 3,
}
SCHEMAS = [
    CITY,
    CONTACT,
    ITEMS,
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
]
GBNF = 'root ::= item ("," item){0,3}\nitem ::= [a-z]{1,6} "=" [0-9]{1,3}'
# what breaks a limit or is refused: each must be a 400 in OpenAI's error shape
REFUSED: list[dict[str, Any]] = [
    {"guided_regex": "(a|b)*a(a|b){24}"},  # past max_dfa_states
    {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "big", "schema": {"enum": ["x" * 300_000]}},
        }
    },
    {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "bad", "schema": {"minLength": "two"}},
        }
    },
    {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "lb", "strict": True, "schema": {"type": "string", "pattern": "(?<=a)b"}},
        }
    },
    {"guided_grammar": 'root ::= "a" missing'},
    {"n": 1000},
    {"max_tokens": 10**6},
    {
        "max_tokens": 2,
        "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": CITY}},
    },
]
_fresh = itertools.count()


def _fmt(schema: Any, name: str = "out") -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def _new_schema(tag: str) -> dict[str, Any]:
    schema = json.loads(json.dumps(CITY))
    n = next(_fresh)
    schema["properties"][f"note_{tag}_{n}"] = {"type": "string", "maxLength": 10 + n % 13}
    schema["required"].append(f"note_{tag}_{n}")
    return schema


def _ask(kind: str, rng: random.Random, max_tokens: int) -> tuple[dict[str, Any], bool]:
    """A request body of ``kind`` and whether it is streamed."""
    user = {"role": "user", "content": "Describe a large city."}
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [user],
        "max_tokens": max_tokens,
        "seed": rng.randrange(1 << 30),
    }
    if kind in ("free", "leave"):
        user["content"] = "Tell a short story about a city."
    elif kind == "schema":
        body["response_format"] = _fmt(rng.choice(SCHEMAS))
    elif kind == "new_schema":
        body["response_format"] = _fmt(_new_schema(f"{os.getpid()}"))
    elif kind == "tools":
        user["content"] = "What is the weather in Lisbon, and what is 2 plus 3?"
        body.update(tools=TOOLS, tool_choice=rng.choice(["auto", "required"]))
    elif kind == "grammar":
        body.update(
            rng.choice(
                [
                    {"guided_regex": "[A-Z][a-z]{2,10}, (19|20)[0-9]{2}"},
                    {"guided_choice": ["north", "south", "east", "west"]},
                    {"guided_grammar": GBNF},
                ]
            )
        )
    elif kind == "refused":
        body.update(rng.choice(REFUSED))
        return body, False
    return body, kind != "grammar" or rng.random() < 0.5


MIX = {"free": 28, "schema": 24, "tools": 14, "grammar": 12, "new_schema": 5, "refused": 10, "leave": 7}


@dataclass
class Result:
    """One request's outcome."""

    kind: str
    status: int
    ttft: float | None = None
    gaps: list[float] = field(default_factory=list)
    done: bool = False
    finish: str | None = None
    text: str = ""
    error_shape: bool = True
    retry_after: str | None = None
    start: float = 0.0


def _error_shape(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and set(body) == {"error"}
        and isinstance(body["error"], dict)
        and set(body["error"]) == {"message", "type", "param", "code"}
    )


async def _call(
    client: httpx.AsyncClient,
    base: str,
    kind: str,
    body: dict[str, Any],
    stream: bool,
    leave_after: int | None = None,
) -> Result:
    t0 = time.perf_counter()
    res = Result(kind, 0, start=t0)
    if not stream:
        r = await client.post(base + "/v1/chat/completions", json=body)
        res.status = r.status_code
        res.retry_after = r.headers.get("retry-after")
        if r.status_code >= 400:
            res.error_shape = _error_shape(r.json())
        else:
            res.done = True
            res.text = r.json()["choices"][0]["message"].get("content") or ""
        return res
    arrivals: list[float] = []
    async with client.stream("POST", base + "/v1/chat/completions", json={**body, "stream": True}) as r:
        res.status = r.status_code
        res.retry_after = r.headers.get("retry-after")
        if r.status_code >= 400:
            res.error_shape = _error_shape(json.loads(await r.aread()))
            return res
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                res.done = True
                break
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices", []):
                delta = choice.get("delta", {})
                piece = delta.get("content") or ""
                calls = delta.get("tool_calls") or []
                if piece or any((c.get("function") or {}).get("arguments") for c in calls):
                    arrivals.append(time.perf_counter())
                res.text += piece
                res.finish = choice.get("finish_reason") or res.finish
            if leave_after is not None and len(arrivals) >= leave_after:
                break  # the client leaves mid-stream
    if arrivals:
        res.ttft = arrivals[0] - t0
        res.gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    return res


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return found


async def _sample_memory(
    pid: int, every: float, out: list[tuple[float, int, int]], stop: asyncio.Event
) -> None:
    t0 = time.perf_counter()
    while not stop.is_set():
        own = _rss_kib(pid)
        total = own + sum(_rss_kib(c) for c in _children(pid))
        out.append((time.perf_counter() - t0, own, total))
        try:
            await asyncio.wait_for(stop.wait(), every)
        except asyncio.TimeoutError:
            pass


async def phase_load(
    base: str, pid: int, clients: int, duration: float, max_tokens: int, seed: int
) -> dict[str, Any]:
    """``clients`` clients sending the mix for ``duration`` seconds, with memory sampled."""
    results: list[Result] = []
    memory: list[tuple[float, int, int]] = []
    stop = asyncio.Event()
    kinds, weights = zip(*MIX.items(), strict=True)
    deadline = time.perf_counter() + duration

    async def client_loop(i: int, client: httpx.AsyncClient) -> None:
        rng = random.Random(seed * 1000 + i)
        while time.perf_counter() < deadline:
            kind = rng.choices(kinds, weights)[0]
            body, stream = _ask(kind, rng, max_tokens)
            try:
                results.append(await _call(client, base, kind, body, stream, 3 if kind == "leave" else None))
            except httpx.HTTPError as exc:  # a dropped connection counts as a failure
                results.append(Result(kind, -1, text=type(exc).__name__))

    limits = httpx.Limits(max_connections=clients + 8, max_keepalive_connections=clients + 8)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        sampler = asyncio.create_task(_sample_memory(pid, 1.0, memory, stop))
        t0 = time.perf_counter()
        await asyncio.gather(*(client_loop(i, client) for i in range(clients)))
        seconds = time.perf_counter() - t0
        stop.set()
        await sampler
    return {"seconds": seconds, "results": results, "memory": memory}


def judge_memory(memory: list[tuple[float, int, int]], warmup_fraction: float = 0.2) -> dict[str, Any]:
    """Medians of the first and last thirds after warm-up, and whether the last is within 5%."""
    if len(memory) < 6:
        return {"flat": None}
    end = memory[-1][0]
    after = [m for m in memory if m[0] >= warmup_fraction * end]
    third = max(1, len(after) // 3)
    out: dict[str, Any] = {"samples": len(memory), "warmup_s": warmup_fraction * end}
    for col, name in ((1, "server"), (2, "total")):
        first = statistics.median(m[col] for m in after[:third]) / 1024
        last = statistics.median(m[col] for m in after[-third:]) / 1024
        out[name] = {
            "first_mib": first,
            "last_mib": last,
            "growth": last / first - 1 if first else float("nan"),
        }
    out["flat"] = all(out[n]["growth"] <= 0.05 for n in ("server", "total"))
    return out


async def phase_flood(base: str, count: int) -> dict[str, Any]:
    """``count`` new schemas at once."""
    rng = random.Random(1)
    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=count + 8)) as client:
        bodies = [_ask("new_schema", rng, 48)[0] for _ in range(count)]
        results = await asyncio.gather(*(_call(client, base, "flood", b, False) for b in bodies))
    statuses = Counter(r.status for r in results)
    bad_429 = sum(1 for r in results if r.status == 429 and not (r.retry_after and r.error_shape))
    invalid = 0
    for body, r in zip(bodies, results, strict=True):
        if r.status == 200:
            try:
                jsonschema.validate(json.loads(r.text), body["response_format"]["json_schema"]["schema"])
            except (ValueError, jsonschema.ValidationError):
                invalid += 1
    return {
        "statuses": dict(statuses),
        "429_without_retry_after_or_shape": bad_429,
        "invalid_outputs": invalid,
    }


def refusal(kind: str, n: int) -> dict[str, Any]:
    """The ``n``-th distinct refused constraint of ``kind`` (so that no compile is shared)."""
    if kind == "costly_regex":
        return {"guided_regex": f"id{n}(a|b)*a(a|b){{24}}"}
    if kind == "too_large":
        return {"response_format": _fmt({"enum": ["x" * 300_000, n]})}
    if kind == "invalid_schema":
        return {"response_format": _fmt({"type": "object", "properties": {f"p{n}": {"minLength": "two"}}})}
    if kind == "unenforceable":
        return {"response_format": _fmt({"type": "string", "pattern": f"(?<=a)b{{{n % 50 + 1}}}"})}
    return {"guided_grammar": f'root ::= "a{n}" missing'}


REFUSAL_KINDS = ["costly_regex", "too_large", "invalid_schema", "unenforceable", "grammar_syntax"]


async def phase_refusal(
    base: str, streams: int, window: float, max_tokens: int, every: float
) -> dict[str, Any]:
    """Inter-token latency of ``streams`` free-text streams: alone, while refused constraints of each
    kind arrive one every ``every`` seconds (a window each), and while all kinds arrive back to back."""
    out: dict[str, Any] = {}
    counter = itertools.count()
    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=streams + 8)) as client:
        for name in ["alone", *REFUSAL_KINDS, "back_to_back", "alone_again"]:
            deadline = time.perf_counter() + window
            gaps: list[float] = []
            refused: Counter[int] = Counter()

            async def stream_loop(i: int, deadline: float = deadline, gaps: list[float] = gaps) -> None:
                rng = random.Random(i)
                while time.perf_counter() < deadline:
                    r = await _call(client, base, "free", _ask("free", rng, max_tokens)[0], True)
                    gaps.extend(r.gaps)

            async def refusals(
                kind: str, deadline: float = deadline, refused: Counter[int] = refused
            ) -> None:
                await asyncio.sleep(1.0)  # the streams are decoding
                while time.perf_counter() < deadline:
                    t0 = time.perf_counter()
                    body = {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "max_tokens": 8}
                    n = next(counter)
                    body.update(refusal(REFUSAL_KINDS[n % 5] if kind == "back_to_back" else kind, n))
                    r = await _call(client, base, "refused", body, False)
                    refused[r.status if r.error_shape else -r.status] += 1
                    if kind != "back_to_back":
                        await asyncio.sleep(max(0.0, every - (time.perf_counter() - t0)))

            tasks = [stream_loop(i) for i in range(streams)]
            if name not in ("alone", "alone_again"):
                tasks.append(refusals(name))
            await asyncio.gather(*tasks)
            out[name] = {
                "gaps": len(gaps),
                "itl_p50_ms": _pct(gaps, 0.5) * 1e3,
                "itl_p99_ms": _pct(gaps, 0.99) * 1e3,
            }
            if refused:
                out[name]["refused"] = dict(refused)
    base_p50 = (out["alone"]["itl_p50_ms"] + out["alone_again"]["itl_p50_ms"]) / 2
    base_p99 = (out["alone"]["itl_p99_ms"] + out["alone_again"]["itl_p99_ms"]) / 2
    for name in [*REFUSAL_KINDS, "back_to_back"]:
        out[name]["p50_ratio"] = out[name]["itl_p50_ms"] / base_p50
        out[name]["p99_ratio"] = out[name]["itl_p99_ms"] / base_p99
    return out


def refusal_table(out: dict[str, Any]) -> str:
    """The refusal phase as markdown."""
    lines = [
        "| window | refusals (status: count) | tokens | ITL p50 ms | ITL p99 ms | p50 vs alone | p99 vs alone |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in out.items():
        lines.append(
            f"| {name} | {row.get('refused', '')} | {row['gaps']} | {row['itl_p50_ms']:.1f} | "
            f"{row['itl_p99_ms']:.1f} | {row.get('p50_ratio', 1):.2f} | {row.get('p99_ratio', 1):.2f} |"
        )
    return "\n".join(lines)


def damage_cache(folder: Path, rng: random.Random) -> Counter[str]:
    """Damage every entry of the grammar cache in one of four ways."""
    entries = sorted(folder.glob("*.tsg"))
    done: Counter[str] = Counter()
    for i, path in enumerate(entries):
        data = path.read_bytes()
        how = ["flip", "truncate", "swap", "garbage"][i % 4]
        if how == "flip":
            j = rng.randrange(len(data))
            data = data[:j] + bytes([data[j] ^ 0x10]) + data[j + 1 :]
        elif how == "truncate":
            data = data[: len(data) // 3]
        elif how == "swap" and len(entries) > 1:
            data = entries[(i + 1) % len(entries)].read_bytes()
        else:
            data = rng.randbytes(256)
        path.write_bytes(data)
        done[how] += 1
    return done


async def phase_cache(base: str, folder: Path, options: list[str], count: int) -> dict[str, Any]:
    """A damaged cache, a second server on it, both given the same known and new schemas."""
    damaged = damage_cache(folder / "grammars", random.Random(3))
    other, other_base = start_server(["--cache-dir", str(folder), *options])
    try:
        known = SCHEMAS
        fresh = [_new_schema("shared") for _ in range(count)]
        mismatched = invalid = 0
        async with httpx.AsyncClient(timeout=300) as client:

            async def both(schema: dict[str, Any]) -> None:
                nonlocal mismatched, invalid
                body = {
                    "model": MODEL,
                    "messages": [{"role": "user", "content": "Describe a large city as JSON."}],
                    "max_tokens": 48,
                    "temperature": 0,
                    "seed": 0,
                    "response_format": _fmt(schema),
                }
                a, b = await asyncio.gather(
                    *(_call(client, u, "cache", body, False) for u in (base, other_base))
                )
                texts = []
                for r in (a, b):
                    try:
                        assert r.status == 200
                        jsonschema.validate(json.loads(r.text), schema)
                        texts.append(r.text)
                    except (AssertionError, ValueError, jsonschema.ValidationError):
                        invalid += 1
                mismatched += len(texts) == 2 and texts[0] != texts[1]

            await asyncio.gather(*(both(s) for s in known))  # the second server reads the damaged entries
            await asyncio.gather(*(both(s) for s in fresh))  # both write the same new entries at once
        rebuilt = len(list((folder / "grammars").glob("*.tsg")))
    finally:
        other.send_signal(signal.SIGTERM)
        code = other.wait(timeout=120)
    return {
        "damaged": dict(damaged),
        "schemas": len(known) + len(fresh),
        "mismatched": mismatched,
        "invalid": invalid,
        "entries_after": rebuilt,
        "second_server_exit": code,
    }


async def phase_sigterm(
    proc: subprocess.Popen[bytes], base: str, streams: int, max_tokens: int
) -> dict[str, Any]:
    """SIGTERM with ``streams`` streams in flight."""
    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=streams + 8)) as client:
        rng = random.Random(9)
        tasks = [
            asyncio.create_task(_call(client, base, k, _ask(k, rng, max_tokens)[0], True))
            for k in itertools.islice(itertools.cycle(["free", "schema", "tools"]), streams)
        ]
        while True:  # every stream has been admitted by the engine
            stats = (await client.get(base + "/health")).json()["engine"]
            if stats["active"] + stats["queued"] >= streams or all(t.done() for t in tasks):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        t0 = time.perf_counter()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    code = await asyncio.to_thread(proc.wait, 120)
    finished = sum(
        1
        for r in results
        if isinstance(r, Result) and r.done and r.finish in ("stop", "length", "tool_calls")
    )
    return {"streams": streams, "finished": finished, "exit": code, "drain_s": time.perf_counter() - t0}


def start_server(options: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """``tokensieve serve`` on a free port, waited for; its address without ``/v1``."""
    proc, v1 = _start_server(16, options)  # a --max-batch in ``options`` comes later and wins
    return proc, v1.removesuffix("/v1")


def load_table(load: dict[str, Any]) -> str:
    """Responses per kind and status, and latencies of the streamed ones, as markdown."""
    results: list[Result] = load["results"]
    by_kind: dict[str, Counter[int]] = {}
    for r in results:
        by_kind.setdefault(r.kind, Counter())[r.status] += 1
    statuses = sorted({r.status for r in results})
    lines = [
        "| kind | requests | " + " | ".join(str(s) for s in statuses) + " | bad error shape |",
        "|---|---:|" + "---:|" * len(statuses) + "---:|",
    ]
    for kind, counts in sorted(by_kind.items()):
        bad = sum(1 for r in results if r.kind == kind and not r.error_shape)
        row = " | ".join(str(counts.get(s, 0)) for s in statuses)
        lines.append(f"| {kind} | {sum(counts.values())} | {row} | {bad} |")
    total = Counter(r.status for r in results)
    lines.append(
        f"| all | {len(results)} | " + " | ".join(str(total[s]) for s in statuses) + " | "
        f"{sum(1 for r in results if not r.error_shape)} |"
    )
    streamed = [r for r in results if r.ttft is not None and r.kind != "leave"]
    ttft = [r.ttft * 1e3 for r in streamed if r.ttft is not None]
    gaps = [g * 1e3 for r in streamed for g in r.gaps]
    lines += [
        "",
        f"{len(results)} requests in {load['seconds']:.0f} s ({len(results) / load['seconds']:.1f}/s); "
        f"5xx: {sum(n for s, n in total.items() if s >= 500)}; connection failures: {total.get(-1, 0)}",
        f"streamed (left-early excluded): {len(streamed)}; TTFT p50 {_pct(ttft, 0.5):.0f} ms, "
        f"p99 {_pct(ttft, 0.99):.0f} ms; ITL p50 {_pct(gaps, 0.5):.1f} ms, p99 {_pct(gaps, 0.99):.1f} ms",
    ]
    return "\n".join(lines)


def memory_table(memory: list[tuple[float, int, int]], rows: int = 8) -> str:
    """RSS at evenly spaced times, as markdown."""
    lines = ["| time s | server RSS MiB | with compile processes MiB |", "|---:|---:|---:|"]
    step = max(1, len(memory) // rows)
    for t, own, total in memory[::step] + ([memory[-1]] if len(memory) % step != 1 else []):
        lines.append(f"| {t:.0f} | {own / 1024:.0f} | {total / 1024:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the phases; prints markdown on stdout, progress on stderr."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--duration", type=float, default=600.0, help="seconds of the load phase")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--phases", default="load,flood,refusal,cache,sigterm")
    p.add_argument("--flood", type=int, default=200, help="new schemas sent at once in the flood phase")
    p.add_argument("--batch-clients", type=int, default=12, help="streams in the refusal phase")
    p.add_argument("--window", type=float, default=15.0, help="seconds of each refusal-phase window")
    p.add_argument("--refusal-every", type=float, default=0.5, help="seconds between paced refusals")
    p.add_argument("--serve-options", default="--max-batch 16 --max-queue 64")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = p.parse_args(argv)
    phases = args.phases.split(",")
    from tokensieve.runtime import cache_root

    folder = Path(tempfile.mkdtemp(prefix="serve-load-"))
    (folder / "models").symlink_to(cache_root() / "models", target_is_directory=True)
    options = args.serve_options.split()
    proc, base = start_server(["--cache-dir", str(folder), *options])
    report: dict[str, Any] = {"command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])])}

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    try:
        if "load" in phases:
            say(f"load: {args.clients} clients for {args.duration:.0f} s")
            load = asyncio.run(
                phase_load(base, proc.pid, args.clients, args.duration, args.max_tokens, args.seed)
            )
            report["memory"] = judge_memory(load["memory"])
            print("## load\n\n" + load_table(load) + "\n\n" + memory_table(load["memory"]))
            print(f"\nmemory after warm-up: {json.dumps(report['memory'])}\n", flush=True)
            report["load"] = {
                "seconds": load["seconds"],
                "statuses": dict(Counter(f"{r.kind}:{r.status}" for r in load["results"])),
                "ttft_ms": [
                    r.ttft * 1e3 for r in load["results"] if r.ttft is not None and r.kind != "leave"
                ],
                "memory": load["memory"],
            }
        if "flood" in phases:
            say(f"flood: {args.flood} new schemas at once")
            report["flood"] = asyncio.run(phase_flood(base, args.flood))
            print(f"## flood\n\n{json.dumps(report['flood'])}\n", flush=True)
        if "refusal" in phases:
            say(f"refusal: {args.batch_clients} streams, windows of {args.window:.0f} s")
            report["refusal"] = asyncio.run(
                phase_refusal(base, args.batch_clients, args.window, 64, args.refusal_every)
            )
            print("## refusal\n\n" + refusal_table(report["refusal"]) + "\n", flush=True)
        if "cache" in phases:
            say("cache: damage every entry, second server on the same folder")
            report["cache"] = asyncio.run(phase_cache(base, folder, options, 6))
            print(f"## cache\n\n{json.dumps(report['cache'])}\n", flush=True)
        if "sigterm" in phases:
            say("sigterm: streams in flight")
            report["sigterm"] = asyncio.run(phase_sigterm(proc, base, 16, 48))
            print(f"## sigterm\n\n{json.dumps(report['sigterm'])}\n", flush=True)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
