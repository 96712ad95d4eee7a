"""Faults the server must survive: a flood of new constraints, clients that leave mid-stream,
constraints refused while a batch decodes, SIGTERM with streams in flight, and a grammar
cache on disk that is damaged, written by several processes at once or shared by two servers.

The disk-cache checks run at the compiler's level on a small vocabulary, their oracle a
compile without any disk cache; the others run through real ``tokensieve serve``
processes with the real model, their outputs checked with ``jsonschema``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import numpy as np
import pytest
from server.server_support import MODEL_ID, ServerProcess
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, GrammarMatcher, TokenizerInfo
from tokensieve.server.constraints import ConstraintCache, ConstraintSpec, constraint_spec
from tokensieve.server.errors import APIError
from tokensieve.server.protocol import ChatCompletionRequest

TESTS = Path(__file__).resolve().parent.parent

REGEX_A = r"[a-z]{3,12}@(example|test)\.(com|org)"
REGEX_B = r"\(?[0-9]{3}\)? [0-9]{3}-[0-9]{4}"
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "n": {"type": "integer", "minimum": 0}},
    "required": ["name", "n"],
    "additionalProperties": False,
}
GRAMMAR = 'root ::= "(" root ")" | "x" | "[" root ("," root)* "]"'


# --- the disk cache, at the compiler's level ---------------------------------------------------


def tiny_info() -> TokenizerInfo:
    vocab = make_tiny_vocab()
    return TokenizerInfo(
        vocab, vocab_size=len(vocab) + 3, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )


@pytest.fixture(scope="module")
def info() -> TokenizerInfo:
    return tiny_info()


def _compile(compiler: GrammarCompiler, which: str) -> Any:
    if which == "a":
        return compiler.compile_regex(REGEX_A)
    if which == "b":
        return compiler.compile_regex(REGEX_B)
    if which == "schema":
        return compiler.compile_json_schema(SCHEMA)
    return compiler.compile_grammar(GRAMMAR)


def _walk_masks(compiled: Any, seed: int, steps: int = 24) -> list[bytes]:
    """The masks met along a seeded random walk through the allowed tokens."""
    rng = random.Random(seed)
    m = GrammarMatcher(compiled)
    masks = []
    for _ in range(steps):
        packed = np.asarray(m.next_token_mask(), dtype=np.int32)
        masks.append(packed.tobytes())
        allowed = np.flatnonzero(np.unpackbits(packed.view(np.uint8), bitorder="little"))
        if m.is_terminated() or len(allowed) == 0:
            break
        assert m.accept_token(int(allowed[rng.randrange(len(allowed))]))
    return masks


@pytest.fixture(scope="module")
def plain(info: TokenizerInfo) -> dict[str, list[list[bytes]]]:
    """Each constraint's masks along three walks, compiled without a disk cache."""
    compiler = GrammarCompiler(info)
    return {
        w: [_walk_masks(_compile(compiler, w), s) for s in range(3)] for w in ("a", "b", "schema", "grammar")
    }


def _entries(folder: Path) -> set[Path]:
    return set(folder.glob("*.tsg"))


def test_entry_moved_under_another_key_is_a_miss_not_another_mask(
    tmp_path: Path, info: TokenizerInfo, plain: dict[str, list[list[bytes]]]
) -> None:
    assert plain["a"][0][0] != plain["b"][0][0]  # the two constraints' masks differ from the start
    GrammarCompiler(info, cache_dir=tmp_path).compile_regex(REGEX_A)
    (entry_a,) = _entries(tmp_path)
    GrammarCompiler(info, cache_dir=tmp_path).compile_regex(REGEX_B)
    (entry_b,) = _entries(tmp_path) - {entry_a}
    shutil.copyfile(entry_a, entry_b)  # a whole, well-formed entry under the wrong name
    compiler = GrammarCompiler(info, cache_dir=tmp_path)
    compiled = _compile(compiler, "b")
    assert compiler.disk_cache is not None and compiler.disk_cache.misses == 1
    assert [_walk_masks(compiled, s) for s in range(3)] == plain["b"]
    assert GrammarMatcher(compiled).accept_string("(555) 123-4567")
    assert not GrammarMatcher(compiled).accept_string("abc@test.org")
    again = GrammarCompiler(info, cache_dir=tmp_path)
    _compile(again, "b")
    assert again.disk_cache is not None and again.disk_cache.hits == 1  # rebuilt, whole


def _vandalise(folder: Path, rng: random.Random) -> None:
    files = sorted(_entries(folder))
    if not files:
        return
    path = rng.choice(files)
    how = rng.choice(["truncate", "flip", "swap", "garbage", "delete"])
    try:
        data = path.read_bytes()
        if how == "truncate":
            path.write_bytes(data[: rng.randrange(max(1, len(data)))])
        elif how == "flip" and data:
            i = rng.randrange(len(data))
            path.write_bytes(data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :])
        elif how == "swap":
            path.write_bytes(rng.choice(files).read_bytes())
        elif how == "garbage":
            path.write_bytes(rng.randbytes(rng.randrange(200)))
        else:
            path.unlink()
    except OSError:  # the entry went away under us (rewritten or evicted)
        pass


def test_concurrent_damage_and_writers_never_give_a_wrong_mask(
    tmp_path: Path, info: TokenizerInfo, plain: dict[str, list[list[bytes]]]
) -> None:
    stop = threading.Event()
    found: list[tuple[str, bool]] = []
    counts = {"hits": 0, "misses": 0}
    lock = threading.Lock()

    def vandal() -> None:
        rng = random.Random(7)
        while not stop.is_set():
            _vandalise(tmp_path, rng)
            time.sleep(0.002)

    def compiles(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(12):
            which = rng.choice(["a", "b", "schema", "grammar"])
            compiler = GrammarCompiler(info, cache_dir=tmp_path)  # no compiled grammar in memory
            masks = [_walk_masks(_compile(compiler, which), s) for s in range(3)]
            assert compiler.disk_cache is not None
            with lock:
                found.append((which, masks == plain[which]))
                counts["hits"] += compiler.disk_cache.hits
                counts["misses"] += compiler.disk_cache.misses

    workers = [threading.Thread(target=compiles, args=(s,)) for s in range(3)]
    damage = threading.Thread(target=vandal)
    damage.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    damage.join()
    assert len(found) == 36
    assert all(same for _, same in found), [w for w, same in found if not same]
    assert counts["misses"] > 0 and counts["hits"] > 0  # both paths were taken


# runs in a fresh interpreter: compiles the constraints and prints their walks' masks
SCRIPT = """
import hashlib, json, sys
sys.path.insert(0, {tests!r})
from server.test_faults import _compile, _walk_masks, tiny_info
from tokensieve import GrammarCompiler
from tokensieve.compile.disk_cache import code_digest
compiler = GrammarCompiler(tiny_info(), cache_dir={folder!r})
out = {{}}
for which in {order!r}:
    masks = [_walk_masks(_compile(compiler, which), s) for s in range(3)]
    out[which] = hashlib.sha256(repr(masks).encode()).hexdigest()
print(json.dumps([out, compiler.disk_cache.hits, compiler.disk_cache.misses, code_digest()]))
"""


def test_two_processes_share_one_cache_directory(tmp_path: Path, plain: dict[str, list[list[bytes]]]) -> None:
    import hashlib

    env = {**os.environ, "PYTHONHASHSEED": "random"}
    digests: set[str] = set()
    orders = [["a", "schema", "grammar", "b"], ["grammar", "b", "schema", "a"]]
    for _ in range(2):  # the first round writes the entries at the same time, the second reads them
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", SCRIPT.format(tests=str(TESTS), folder=str(tmp_path), order=order)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for order in orders
        ]
        results = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
        digests.update(r[3] for r in results)
        for masks, *_ in results:
            for which, digest in masks.items():
                assert digest == hashlib.sha256(repr(plain[which]).encode()).hexdigest(), which
    if len(digests) == 1:  # (source files edited between the rounds key new entries)
        assert sum(r[1] for r in results) == 8  # the second round read every entry
    assert len(_entries(tmp_path)) == 4 and not list(tmp_path.glob(".*.tmp"))


# --- the compile queue's bound, without the model ---------------------------------------------


def test_compile_queue_is_bounded_and_429_past_it() -> None:
    release = threading.Event()

    def slow(compiler: Any) -> tuple[Any, tuple[str, ...]]:
        release.wait(30)
        return "grammar", ()

    cache = ConstraintCache(object(), workers=1, max_pending=2, retry_after_s=3)
    specs = [ConstraintSpec("json_schema", "response_format", f"s{i}", slow) for i in range(4)]
    try:
        first, _ = cache.submit(specs[0])
        cache.submit(specs[1])  # waits for the one compile thread: still counted
        assert cache.pending == 2
        with pytest.raises(APIError) as refused:
            cache.submit(specs[2])
        err = refused.value
        assert (err.status, err.code, err.headers) == (429, "compile_queue_full", {"Retry-After": "3"})
        joined, cached = cache.submit(specs[0])  # a compile already under way is joined, not refused
        assert joined is first and cached
        release.set()
        assert first.result(30).grammar == "grammar"
        deadline = time.monotonic() + 30
        while cache.pending and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cache.pending == 0
        later, cached = cache.submit(specs[2])
        assert not cached and later.result(30).grammar == "grammar"
    finally:
        release.set()
        cache.shutdown()


def test_compiled_constraints_kept_within_their_memory_bound(info: TokenizerInfo) -> None:
    patterns = [f"[a-z]{{{n},{n + 20}}}@(example|test)\\.(com|org)" for n in range(1, 7)]
    plain = GrammarCompiler(info, cache_enabled=False)
    sizes = [plain.compile_regex(p).memory_size_bytes for p in patterns]
    bound = sizes[-1] + sizes[-2] + sizes[-3] // 2  # room for the last two, not three
    compiler = GrammarCompiler(info, cache_enabled=False)
    cache = ConstraintCache(compiler, max_bytes=bound)
    try:
        specs = [_spec(guided_regex=p) for p in patterns]
        for spec in specs:
            asyncio.run(cache.get(spec))
        assert cache.memory_bytes() <= bound
        assert cache.memory_bytes() > bound - sizes[-3]  # nothing more than needed went
        assert [cache.submit(s)[1] for s in reversed(specs[-2:])] == [True, True]  # kept
        assert not cache.submit(specs[0])[1]  # evicted: compiled again
    finally:
        cache.shutdown()


def _spec(**fields: Any) -> ConstraintSpec:
    req = ChatCompletionRequest.model_validate(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}
    )
    spec = constraint_spec(req, closed_objects=True, max_schema_bytes=1 << 20)
    assert spec is not None
    return spec


def test_refused_constraints_keep_the_compile_process_working(tmp_path: Path, info: TokenizerInfo) -> None:
    compiler = GrammarCompiler(info, cache_dir=tmp_path)
    cache = ConstraintCache(compiler, processes=1)
    try:
        refused = [
            (_spec(guided_regex="(a|b)*a(a|b){24}"), "constraint_too_costly", "max_dfa_states"),
            (
                _spec(guided_json={"type": "object", "properties": {"a": {"minimum": "x"}}}),
                "invalid_schema",
                "/properties/a/minimum",
            ),
            (_spec(guided_grammar='root ::= "a" missing'), "invalid_grammar", "line 1"),
        ]
        for spec, code, where in refused:  # each refused in the compile process, then here with its details
            with pytest.raises(APIError) as err:
                asyncio.run(cache.get(spec))
            assert (err.value.status, err.value.code) == (400, code) and where in err.value.message
        assert compiler.disk_cache is not None and compiler.disk_cache.hits == 0
        compiled = asyncio.run(cache.get(_spec(guided_regex=REGEX_B)))
        assert GrammarMatcher(compiled.grammar).accept_string("(555) 123-4567")
        assert compiler.disk_cache.hits == 1  # built by the compile process, read back from its entry
    finally:
        cache.shutdown()


# --- through the server, with the real model ----------------------------------------------------


def _shared_cache(folder: Path) -> Path:
    """A cache folder of its own for grammars, holding the converted model of the default one."""
    from tokensieve.runtime import cache_root

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models").symlink_to(cache_root() / "models", target_is_directory=True)
    return folder


@pytest.fixture(scope="module")
def cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _shared_cache(tmp_path_factory.mktemp("shared") / "cache")


@pytest.fixture(scope="module")
def fault_server(cache_folder: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(
        "--cache-dir",
        str(cache_folder),
        "--max-batch",
        "8",
        "--max-queue",
        "32",
        "--max-compile-queue",
        "2",
        "--max-tokens-limit",
        "64",
    )
    try:
        yield proc
    finally:
        proc.stop()


def _body(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL_ID,
        "messages": [{"role": "user", "content": "Describe a person."}],
        "max_tokens": 24,
        "seed": 1,
    }
    body.update(fields)
    return body


def _format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "out", "schema": schema, "strict": True}}


def _fresh_schema(tag: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            f"id_{tag}": {"type": "string", "pattern": "^[a-z]{1,12}@[a-z]{1,8}\\.(com|org)$"},
            "age": {"type": "integer", "minimum": 0, "maximum": 99},
        },
        "required": [f"id_{tag}", "age"],
        "additionalProperties": False,
    }


def _openai_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return dict(body["error"])


async def _stream(
    client: httpx.AsyncClient,
    base: str,
    body: dict[str, Any],
    started: list[int],
    *,
    leave_after: int | None = None,
) -> dict[str, Any]:
    """One streamed chat request: its text, finish reason, chunks and whether ``[DONE]`` came.

    Appends to ``started`` at its first chunk.
    """
    seen: dict[str, Any] = {"text": "", "finish": None, "chunks": 0, "done": False, "status": None}
    async with client.stream("POST", base + "/v1/chat/completions", json={**body, "stream": True}) as r:
        seen["status"] = r.status_code
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                seen["done"] = True
                break
            chunk = json.loads(line[6:])
            for choice in chunk["choices"]:
                seen["text"] += choice["delta"].get("content") or ""
                seen["finish"] = choice.get("finish_reason") or seen["finish"]
            seen["chunks"] += 1
            if seen["chunks"] == 1:
                started.append(1)
            if leave_after is not None and seen["chunks"] >= leave_after:
                break  # leaving the block closes the connection mid-stream
    return seen


async def _first_chunks(tasks: list[asyncio.Task[Any]], started: list[int]) -> None:
    """Wait until every stream has had its first chunk (or ended)."""
    deadline = time.monotonic() + 60
    while len(started) < len(tasks) and not all(t.done() for t in tasks) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


@pytest.mark.slow
@pytest.mark.model
def test_flood_of_new_schemas_is_429_past_the_compile_queue(fault_server: ServerProcess) -> None:
    tag = uuid.uuid4().hex[:8]
    schemas = [_fresh_schema(f"{tag}_{i}") for i in range(10)]

    async def flood() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=120) as c:
            return await asyncio.gather(
                *(
                    c.post(fault_server.base + "/v1/chat/completions", json=_body(response_format=_format(s)))
                    for s in schemas
                )
            )

    responses = asyncio.run(flood())
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {200, 429} and statuses.count(200) >= 2 and 429 in statuses, statuses
    for schema, r in zip(schemas, responses, strict=True):
        if r.status_code == 200:
            jsonschema.validate(json.loads(r.json()["choices"][0]["message"]["content"]), schema)
        else:
            err = _openai_error(r, 429)
            assert err["code"] == "compile_queue_full" and "max_compile_queue=2" in err["message"]
            assert int(r.headers["retry-after"]) >= 1
    refused = schemas[statuses.index(429)]
    retry = httpx.post(
        fault_server.base + "/v1/chat/completions", json=_body(response_format=_format(refused)), timeout=120
    )
    assert retry.status_code == 200, retry.text  # the queue drained: the same schema now passes
    jsonschema.validate(json.loads(retry.json()["choices"][0]["message"]["content"]), refused)


@pytest.mark.slow
@pytest.mark.model
def test_clients_leaving_mid_stream_and_refusals_mid_batch(fault_server: ServerProcess) -> None:
    base = fault_server.base
    story = {"messages": [{"role": "user", "content": "Tell a long story."}], "max_tokens": 48}
    refusals = [
        (_body(guided_regex="(a|b)*a(a|b){24}"), "constraint_too_costly"),
        (_body(response_format=_format({"type": "object", "minProperties": "two"})), "invalid_schema"),
        (_body(guided_grammar='root ::= "a" missing'), "invalid_grammar"),
        (_body(response_format=_format({"enum": ["x" * 300_000]})), "schema_too_large"),
        (_body(max_tokens=2, response_format=_format(_fresh_schema("short"))), None),  # no room to finish
    ]

    async def run() -> tuple[list[dict[str, Any]], list[httpx.Response], dict[str, Any]]:
        async with httpx.AsyncClient(timeout=120) as c:
            started: list[int] = []
            leaving = [
                asyncio.create_task(_stream(c, base, _body(seed=i, **story), started, leave_after=2))
                for i in range(4)
            ]
            staying = [
                asyncio.create_task(_stream(c, base, _body(seed=10 + i, **story), started)) for i in range(3)
            ]
            await _first_chunks(leaving + staying, started)
            answers = []
            for body, _ in refusals:  # refused while the batch decodes
                answers.append(await c.post(base + "/v1/chat/completions", json=body))
            done = await asyncio.gather(*leaving, *staying)
            deadline = time.monotonic() + 60
            engine = (await c.get(base + "/health")).json()["engine"]
            while (engine["active"] or engine["queued"]) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                engine = (await c.get(base + "/health")).json()["engine"]
            return list(done), answers, engine

    done, answers, engine = asyncio.run(run())
    for seen in done[:4]:
        assert seen["status"] == 200 and seen["chunks"] == 2 and not seen["done"]
    for seen in done[4:]:
        assert seen["status"] == 200 and seen["done"] and seen["finish"] in ("stop", "length")
    for (_, code), r in zip(refusals, answers, strict=True):
        err = _openai_error(r, 400)
        if code is not None:
            assert err["code"] == code
    assert engine["active"] == 0 and engine["queued"] == 0  # the slots of those who left are free
    later = httpx.post(base + "/v1/chat/completions", json=_body(max_tokens=4), timeout=120)
    assert later.status_code == 200


@pytest.mark.slow
@pytest.mark.model
def test_second_server_on_the_shared_cache_and_sigterm_with_streams_in_flight(
    fault_server: ServerProcess, cache_folder: Path
) -> None:
    grammars = cache_folder / "grammars"
    tag = uuid.uuid4().hex[:8]
    first, second = _fresh_schema(f"{tag}_first"), _fresh_schema(f"{tag}_second")

    def ask(server: ServerProcess, schema: dict[str, Any]) -> str:
        r = httpx.post(
            server.base + "/v1/chat/completions",
            json=_body(response_format=_format(schema), temperature=0),
            timeout=120,
        )
        assert r.status_code == 200, r.text
        text = str(r.json()["choices"][0]["message"]["content"])
        jsonschema.validate(json.loads(text), schema)
        return text

    before = _entries(grammars)
    first_text = ask(fault_server, first)
    first_entries = _entries(grammars) - before
    second_text = ask(fault_server, second)
    second_entries = _entries(grammars) - before - first_entries
    assert first_entries and second_entries
    for entry in second_entries:  # the first schema's whole entry under the second's name
        shutil.copyfile(next(iter(first_entries)), entry)
    other = ServerProcess("--cache-dir", str(cache_folder), "--max-batch", "4")
    try:
        assert ask(other, first) == first_text  # read from the entries the first server wrote
        assert ask(other, second) == second_text  # the misplaced entry is refused and rebuilt

        async def in_flight() -> list[dict[str, Any]]:
            async with httpx.AsyncClient(timeout=120) as c:
                started: list[int] = []
                body = _body(max_tokens=32, response_format=_format(first))
                tasks = [
                    asyncio.create_task(_stream(c, other.base, {**body, "seed": i}, started))
                    for i in range(3)
                ]
                await _first_chunks(tasks, started)
                other.terminate()  # SIGTERM while all three decode
                return list(await asyncio.gather(*tasks))

        for seen in asyncio.run(in_flight()):
            assert seen["status"] == 200 and seen["done"] and seen["finish"] in ("stop", "length")
            jsonschema.validate(json.loads(seen["text"]), first)
        assert other.proc.wait(timeout=60) in (0, -signal.SIGTERM)
    finally:
        other.stop()
