"""The requests ``benchmarks/serve_load.py`` sends, and how it reads the answers and the server.

A mix of request kinds (free text, cached and new JSON schemas, tools,
regex/choice/grammar constraints, refused constraints), one call streamed or
not with its timings, the resident memory of a process and its children
(``/proc``), and a ``tokensieve serve`` started on a free port.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from serve_bench import TOOLS, _free_port

__all__ = [
    "MODEL",
    "REFUSAL_KINDS",
    "REFUSED",
    "SCHEMAS",
    "Result",
    "ask",
    "call",
    "children",
    "fmt",
    "new_schema",
    "refusal",
    "rss_kib",
    "start_server",
]

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
SCHEMAS: list[dict[str, Any]] = [
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


def fmt(schema: Any, name: str = "out") -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def new_schema(tag: str) -> dict[str, Any]:
    schema = json.loads(json.dumps(CITY))
    n = next(_fresh)
    schema["properties"][f"note_{tag}_{n}"] = {"type": "string", "maxLength": 10 + n % 13}
    schema["required"].append(f"note_{tag}_{n}")
    return schema


def ask(kind: str, rng: random.Random, max_tokens: int) -> tuple[dict[str, Any], bool]:
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
        body["response_format"] = fmt(rng.choice(SCHEMAS))
    elif kind == "new_schema":
        body["response_format"] = fmt(new_schema(f"{os.getpid()}"))
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


def error_shape(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and set(body) == {"error"}
        and isinstance(body["error"], dict)
        and set(body["error"]) == {"message", "type", "param", "code"}
    )


async def call(
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
            res.error_shape = error_shape(r.json())
        else:
            res.done = True
            res.text = r.json()["choices"][0]["message"].get("content") or ""
        return res
    arrivals: list[float] = []
    async with client.stream("POST", base + "/v1/chat/completions", json={**body, "stream": True}) as r:
        res.status = r.status_code
        res.retry_after = r.headers.get("retry-after")
        if r.status_code >= 400:
            res.error_shape = error_shape(json.loads(await r.aread()))
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


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def refusal(kind: str, n: int) -> dict[str, Any]:
    """The ``n``-th distinct refused constraint of ``kind`` (so that no compile is shared)."""
    if kind == "costly_regex":
        return {"guided_regex": f"id{n}(a|b)*a(a|b){{24}}"}
    if kind == "too_large":
        return {"response_format": fmt({"enum": ["x" * 300_000, n]})}
    if kind == "invalid_schema":
        return {"response_format": fmt({"type": "object", "properties": {f"p{n}": {"minLength": "two"}}})}
    if kind == "unenforceable":
        return {"response_format": fmt({"type": "string", "pattern": f"(?<=a)b{{{n % 50 + 1}}}"})}
    return {"guided_grammar": f'root ::= "a{n}" missing'}


REFUSAL_KINDS = ["costly_regex", "too_large", "invalid_schema", "unenforceable", "grammar_syntax"]


def start_server(options: list[str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``tokensieve serve`` on a free port, its output in ``log``, waited for."""
    port = _free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tokensieve",
                "serve",
                "--port",
                str(port),
                "--log-level",
                "warning",
                *options,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    if proc.poll() is None:
        proc.kill()
    raise RuntimeError(
        f"the server did not start ({proc.wait()}):\n{log.read_text(errors='replace')[-3000:]}"
    )
