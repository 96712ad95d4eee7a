"""The disk cache of built automata (``GrammarCompiler(cache_dir=...)``).

A second process compiling the same constraints reads their automata from the
folder (counted as hits, not misses) and gets the same masks, acceptance and
unenforced reports as a compile without a cache; a truncated, altered or
planted entry is a miss that is built and written again; the folder stays
within its bound.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, GrammarMatcher, TokenizerInfo
from tokensieve.compile.disk_cache import DiskCache

TESTS = Path(__file__).resolve().parent.parent

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]{2,12}$"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "uniqueItems": True},
    },
    "required": ["name"],
    "additionalProperties": False,
}
GRAMMAR = 'root ::= "(" root ")" | "x"'
REGEX = r"[a-z]{3,40}@(example|test)\.(com|org)"

# runs in a fresh interpreter: compiles the three constraints and prints what it saw
SCRIPT = """
import hashlib, json, sys
sys.path.insert(0, {tests!r})
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab
from tokensieve import GrammarCompiler, GrammarMatcher, TokenizerInfo
vocab = make_tiny_vocab()
info = TokenizerInfo(vocab, vocab_size=len(vocab) + 3, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])
compiler = GrammarCompiler(info, cache_dir={folder!r})
out = {{}}
for name, compiled, text in (
    ("schema", compiler.compile_json_schema(json.loads({schema!r}), strict=False), '{{"name": "ab", "age": 3}}'),
    ("grammar", compiler.compile_grammar({grammar!r}), "((x))"),
    ("regex", compiler.compile_regex({regex!r}), "abc@test.org"),
):
    m = GrammarMatcher(compiled)
    ok = m.accept_string(text) and m.is_completed()
    mask = compiled.token_mask(compiled.start_state)
    out[name] = [hashlib.sha256(mask.tobytes()).hexdigest(), ok, list(compiled.unenforced)]
out["hits"] = compiler.disk_cache.hits
out["misses"] = compiler.disk_cache.misses
print(json.dumps(out))
"""


def _run(folder: Path) -> dict:
    code = SCRIPT.format(
        tests=str(TESTS), folder=str(folder), schema=json.dumps(SCHEMA), grammar=GRAMMAR, regex=REGEX
    )
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def info() -> TokenizerInfo:
    vocab = make_tiny_vocab()
    return TokenizerInfo(
        vocab, vocab_size=len(vocab) + 3, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )


def test_second_process_starts_warm(tmp_path: Path) -> None:
    first = _run(tmp_path)
    assert (first["hits"], first["misses"]) == (0, 3)
    assert len(list(tmp_path.glob("*.tsg"))) == 3
    second = _run(tmp_path)
    assert (second["hits"], second["misses"]) == (3, 0)
    for name in ("schema", "grammar", "regex"):
        assert second[name] == first[name]
        assert first[name][1]  # the text is accepted
    assert any("uniqueItems" in u for u in second["schema"][2])  # reported from the entry too


def _all_masks(compiled) -> list[bytes]:
    return [compiled.token_mask(s).tobytes() for s in range(min(compiled.num_states, 200))]


def test_hit_gives_the_same_grammar_as_no_cache(tmp_path: Path, info: TokenizerInfo) -> None:
    plain = GrammarCompiler(info).compile_json_schema(SCHEMA, strict=False)
    GrammarCompiler(info, cache_dir=tmp_path).compile_json_schema(SCHEMA, strict=False)
    warm = GrammarCompiler(info, cache_dir=tmp_path)
    compiled = warm.compile_json_schema(SCHEMA, strict=False)
    assert warm.disk_cache is not None and warm.disk_cache.hits == 1
    assert compiled.dfa.same_as(plain.dfa)
    assert _all_masks(compiled) == _all_masks(plain)
    assert compiled.unenforced == plain.unenforced


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "flipped":
        i = len(data) - 7
        path.write_bytes(data[:i] + bytes([data[i] ^ 0x40]) + data[i + 1 :])
    elif how == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(b"not a cache entry at all")


@pytest.mark.parametrize("how", ["truncated", "flipped", "empty", "garbage"])
def test_damaged_entry_is_a_miss_and_rebuilt(tmp_path: Path, info: TokenizerInfo, how: str) -> None:
    GrammarCompiler(info, cache_dir=tmp_path).compile_regex(REGEX)
    (entry,) = tmp_path.glob("*.tsg")
    good = entry.read_bytes()
    _damage(entry, how)
    compiler = GrammarCompiler(info, cache_dir=tmp_path)
    compiled = compiler.compile_regex(REGEX)
    assert compiler.disk_cache is not None
    assert (compiler.disk_cache.hits, compiler.disk_cache.misses) == (0, 1)
    m = GrammarMatcher(compiled)
    assert m.accept_string("abc@test.org") and m.is_completed()
    assert entry.read_bytes() == good  # written again, whole
    again = GrammarCompiler(info, cache_dir=tmp_path)
    again.compile_regex(REGEX)
    assert again.disk_cache is not None and again.disk_cache.hits == 1


def test_planted_entry_cannot_run_code(tmp_path: Path) -> None:
    from tokensieve.compile import disk_cache

    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    payload = pickle.dumps(Evil())
    cache = DiskCache(tmp_path)
    tag = disk_cache._key_tag("k")
    cache.path("k").write_bytes(disk_cache._MAGIC + tag + disk_cache._checksum(tag, payload) + payload)
    assert cache.get("k") is None
    assert not marker.exists()
    assert not cache.path("k").exists()


def test_size_bound_removes_least_recently_used(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, max_bytes=3_000)
    for i in range(6):
        cache.put(f"k{i}", np.full(200, i, dtype=np.int32))  # about 900 bytes each
        os.utime(cache.path(f"k{i}"), (i, i))
    total = sum(p.stat().st_size for p in tmp_path.glob("*.tsg"))
    assert total <= 3_000
    assert cache.get("k5") is not None and cache.get("k0") is None
    cache.put("big", np.zeros(10_000, dtype=np.int64))  # larger than the bound: not written
    assert not cache.path("big").exists()


def test_concurrent_writers_leave_whole_entries(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    values = [np.full(50_000, i, dtype=np.int64) for i in range(4)]
    seen: list[object] = []

    def write(i: int) -> None:
        for _ in range(10):
            cache.put("same", values[i])

    def read() -> None:
        for _ in range(40):
            seen.append(cache.get("same"))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    threads.append(threading.Thread(target=read))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for value in seen:
        assert value is None or any(np.array_equal(value, v) for v in values)
    assert not list(tmp_path.glob("*.tmp"))
    final = cache.get("same")
    assert any(np.array_equal(final, v) for v in values)
