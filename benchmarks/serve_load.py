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
- ``refusal``: ``--batch-clients`` streams decode free text throughout, in
  alternating windows of ``--window`` seconds: none refused, then refused
  constraints of one kind (too costly, too large, invalid, unenforceable under
  ``strict``, bad grammar; each one new) arriving one every
  ``--refusal-every`` seconds, or all kinds back to back; ``--rounds`` pairs
  per kind. Reported: the streams' inter-token latency with and without, and
  the median over rounds of each pair's ratio (the machine's drift between
  rounds cancels out);
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
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import jsonschema
from serve_bench import _pct
from serve_traffic import (
    MODEL,
    REFUSAL_KINDS,
    SCHEMAS,
    Result,
    ask,
    call,
    children,
    fmt,
    new_schema,
    refusal,
    rss_kib,
    start_server,
)

MIX = {"free": 28, "schema": 24, "tools": 14, "grammar": 12, "new_schema": 5, "refused": 10, "leave": 7}


Sample = tuple[float, int, int, int]  # seconds, server RSS, with its children, compiled constraints (KiB)


async def _sample_memory(base: str, pid: int, every: float, out: list[Sample], stop: asyncio.Event) -> None:
    t0 = time.perf_counter()
    async with httpx.AsyncClient(timeout=30) as client:
        while not stop.is_set():
            own = rss_kib(pid)
            total = own + sum(rss_kib(c) for c in children(pid))
            try:
                health = (await client.get(base + "/health")).json()
                kept = int(health.get("constraints", {}).get("memory_bytes", 0)) // 1024
            except (httpx.HTTPError, ValueError):
                kept = -1
            out.append((time.perf_counter() - t0, own, total, kept))
            try:
                await asyncio.wait_for(stop.wait(), every)
            except asyncio.TimeoutError:
                pass


async def phase_load(
    base: str, pid: int, clients: int, duration: float, max_tokens: int, seed: int, mix: dict[str, int]
) -> dict[str, Any]:
    """``clients`` clients sending ``mix`` (kind: weight) for ``duration`` seconds, with memory sampled."""
    results: list[Result] = []
    memory: list[Sample] = []
    stop = asyncio.Event()
    kinds, weights = zip(*((k, w) for k, w in mix.items() if w > 0), strict=True)
    deadline = time.perf_counter() + duration

    async def client_loop(i: int, client: httpx.AsyncClient) -> None:
        rng = random.Random(seed * 1000 + i)
        while time.perf_counter() < deadline:
            kind = rng.choices(kinds, weights)[0]
            body, stream = ask(kind, rng, max_tokens)
            try:
                results.append(await call(client, base, kind, body, stream, 3 if kind == "leave" else None))
            except httpx.HTTPError as exc:  # a dropped connection counts as a failure
                results.append(Result(kind, -1, text=type(exc).__name__))

    limits = httpx.Limits(max_connections=clients + 8, max_keepalive_connections=clients + 8)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        sampler = asyncio.create_task(_sample_memory(base, pid, 1.0, memory, stop))
        t0 = time.perf_counter()
        await asyncio.gather(*(client_loop(i, client) for i in range(clients)))
        seconds = time.perf_counter() - t0
        stop.set()
        await sampler
    return {"seconds": seconds, "results": results, "memory": memory}


def judge_memory(memory: list[Sample], warmup_fraction: float = 0.2) -> dict[str, Any]:
    """Medians of the first and last thirds after warm-up, and whether the last is within 5%."""
    if len(memory) < 6:
        return {"flat": None}
    end = memory[-1][0]
    after = [m for m in memory if m[0] >= warmup_fraction * end]
    third = max(1, len(after) // 3)
    out: dict[str, Any] = {"samples": len(memory), "warmup_s": warmup_fraction * end}
    for col, name in ((1, "server"), (2, "total"), (3, "constraints")):
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
        bodies = [ask("new_schema", rng, 48)[0] for _ in range(count)]
        results = await asyncio.gather(*(call(client, base, "flood", b, False) for b in bodies))
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


async def phase_refusal(
    base: str, streams: int, window: float, rounds: int, max_tokens: int, every: float
) -> dict[str, Any]:
    """Inter-token latency of ``streams`` free-text streams that decode throughout, in alternating
    windows: none refused, then refused constraints of one kind arriving one every ``every`` seconds
    (all kinds back to back for ``back_to_back``); ``rounds`` pairs of windows per kind.

    Each kind's ratio is the median over its rounds of (p50 or p99 with refusals) / (p50 or p99 of
    the window just before, without), so that the machine's drift between rounds cancels out.
    """
    counter = itertools.count()
    arrivals: list[tuple[float, float]] = []  # (time, gap since the stream's previous token)
    periods: list[tuple[str, bool, float, float, Counter[int]]] = []
    done = asyncio.Event()
    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=streams + 8)) as client:

        async def stream_loop(i: int) -> None:
            rng = random.Random(i)
            while not done.is_set():
                r = await call(client, base, "free", ask("free", rng, max_tokens)[0], True)
                t = r.start + (r.ttft or 0.0)
                for gap in r.gaps:
                    t += gap
                    arrivals.append((t, gap))

        async def driver() -> None:
            await asyncio.sleep(3.0)  # every stream is decoding
            for kind in [*REFUSAL_KINDS, "back_to_back"]:
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    await asyncio.sleep(window)
                    periods.append((kind, False, t0, time.perf_counter(), Counter()))
                    t0 = time.perf_counter()
                    refused: Counter[int] = Counter()
                    while time.perf_counter() < t0 + window:
                        sent = time.perf_counter()
                        body = {
                            "model": MODEL,
                            "messages": [{"role": "user", "content": "x"}],
                            "max_tokens": 8,
                        }
                        n = next(counter)
                        body.update(refusal(REFUSAL_KINDS[n % 5] if kind == "back_to_back" else kind, n))
                        r = await call(client, base, "refused", body, False)
                        refused[r.status if r.error_shape else -r.status] += 1
                        if kind != "back_to_back":
                            await asyncio.sleep(max(0.0, every - (time.perf_counter() - sent)))
                    periods.append((kind, True, t0, time.perf_counter(), refused))
            done.set()

        await asyncio.gather(driver(), *(stream_loop(i) for i in range(streams)))

    def window_gaps(start: float, end: float) -> list[float]:
        return [g for t, g in arrivals if start + 0.2 <= t < end]

    out: dict[str, Any] = {}
    for kind in [*REFUSAL_KINDS, "back_to_back"]:
        mine = [p for p in periods if p[0] == kind]
        pairs = list(zip(mine[0::2], mine[1::2], strict=True))
        p50, p99, refused, off_all, on_all = [], [], Counter[int](), [], []
        for off, on in pairs:
            g_off, g_on = window_gaps(off[2], off[3]), window_gaps(on[2], on[3])
            off_all += g_off
            on_all += g_on
            refused.update(on[4])
            if g_off and g_on:
                p50.append(_pct(g_on, 0.5) / _pct(g_off, 0.5))
                p99.append(_pct(g_on, 0.99) / _pct(g_off, 0.99))
        out[kind] = {
            "refused": dict(refused),
            "tokens_off": len(off_all),
            "tokens_on": len(on_all),
            "itl_p50_ms_off": _pct(off_all, 0.5) * 1e3,
            "itl_p50_ms_on": _pct(on_all, 0.5) * 1e3,
            "itl_p99_ms_off": _pct(off_all, 0.99) * 1e3,
            "itl_p99_ms_on": _pct(on_all, 0.99) * 1e3,
            "p50_ratio": statistics.median(p50) if p50 else float("nan"),
            "p99_ratio": statistics.median(p99) if p99 else float("nan"),
        }
    return out


def refusal_table(out: dict[str, Any]) -> str:
    """The refusal phase as markdown."""
    lines = [
        "| refused constraints | refusals (status: count) | tokens without / with | ITL p50 ms without / with "
        "| ITL p99 ms without / with | p50 ratio (median of rounds) | p99 ratio |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for kind, row in out.items():
        lines.append(
            f"| {kind} | {row['refused']} | {row['tokens_off']} / {row['tokens_on']} | "
            f"{row['itl_p50_ms_off']:.1f} / {row['itl_p50_ms_on']:.1f} | "
            f"{row['itl_p99_ms_off']:.1f} / {row['itl_p99_ms_on']:.1f} | "
            f"{row['p50_ratio']:.2f} | {row['p99_ratio']:.2f} |"
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
    other, other_base = start_server(["--cache-dir", str(folder), *options], folder / "second.log")
    try:
        known = SCHEMAS
        fresh = [new_schema("shared") for _ in range(count)]
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
                    "response_format": fmt(schema),
                }
                a, b = await asyncio.gather(
                    *(call(client, u, "cache", body, False) for u in (base, other_base))
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
            asyncio.create_task(call(client, base, k, ask(k, rng, max_tokens)[0], True))
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


def memory_table(memory: list[Sample], rows: int = 10) -> str:
    """RSS at evenly spaced times, as markdown."""
    lines = [
        "| time s | server RSS MiB | with compile processes MiB | compiled constraints kept MiB |",
        "|---:|---:|---:|---:|",
    ]
    step = max(1, len(memory) // rows)
    for t, own, total, kept in memory[::step] + ([memory[-1]] if (len(memory) - 1) % step else []):
        lines.append(f"| {t:.0f} | {own / 1024:.0f} | {total / 1024:.0f} | {kept / 1024:.0f} |")
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
    p.add_argument("--window", type=float, default=5.0, help="seconds of each refusal-phase window")
    p.add_argument("--rounds", type=int, default=3, help="pairs of windows per kind of refusal")
    p.add_argument("--refusal-every", type=float, default=0.5, help="seconds between paced refusals")
    p.add_argument("--serve-options", default="--max-batch 16 --max-queue 64")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--mix", default="", help="weights to change, as kind=weight,... (default " + str(MIX) + ")"
    )
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = p.parse_args(argv)
    phases = args.phases.split(",")
    mix = dict(MIX)
    for item in filter(None, args.mix.split(",")):
        kind, _, weight = item.partition("=")
        if kind not in MIX:
            p.error(f"--mix: no kind {kind!r} (kinds: {', '.join(MIX)})")
        mix[kind] = int(weight)
    from tokensieve.runtime import cache_root

    folder = Path(tempfile.mkdtemp(prefix="serve-load-"))
    (folder / "models").symlink_to(cache_root() / "models", target_is_directory=True)
    options = args.serve_options.split()
    proc, base = start_server(["--cache-dir", str(folder), *options], folder / "server.log")
    report: dict[str, Any] = {"command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])])}

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def run(name: str, work: Any, render: Any = None) -> None:
        try:
            report[name] = work()
        except Exception as exc:  # a phase that fails is reported, and the others still run
            report[name] = {"failed": f"{type(exc).__name__}: {exc}"}
            render = None
        text = render(report[name]) if render is not None else json.dumps(report[name])
        print(f"## {name}\n\n{text}\n", flush=True)

    try:
        if "load" in phases:
            say(f"load: {args.clients} clients for {args.duration:.0f} s")
            load = asyncio.run(
                phase_load(base, proc.pid, args.clients, args.duration, args.max_tokens, args.seed, mix)
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
            before = rss_kib(proc.pid)

            def flood() -> dict[str, Any]:
                out = asyncio.run(phase_flood(base, args.flood))
                out["rss_growth_mib"] = (rss_kib(proc.pid) - before) / 1024
                return out

            run("flood", flood)
        if "refusal" in phases:
            say(f"refusal: {args.batch_clients} streams, {args.rounds} rounds of {args.window:.0f} s windows")
            run(
                "refusal",
                lambda: asyncio.run(
                    phase_refusal(base, args.batch_clients, args.window, args.rounds, 64, args.refusal_every)
                ),
                refusal_table,
            )
        if "cache" in phases:
            say("cache: damage every entry, second server on the same folder")
            run("cache", lambda: asyncio.run(phase_cache(base, folder, options, 6)))
        if "sigterm" in phases:
            say("sigterm: streams in flight")
            run("sigterm", lambda: asyncio.run(phase_sigterm(proc, base, 16, 48)))
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
