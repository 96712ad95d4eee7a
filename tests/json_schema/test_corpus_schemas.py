"""The real-world-style JSON Schema corpus in ``benchmarks/data/json_schemas``.

- every schema is a valid draft 2020-12 schema and every example instance is
  valid under it (``jsonschema``, formats checked): the corpus itself is sound;
- the ``.jsonl`` files are what ``build.py`` writes from the hand-written sources;
- every schema compiles with ``compile_json_schema`` (tiny vocabulary; the SmolLM2
  vocabulary in the ``slow`` test; a spread sample plus the schemas that once ran
  past the limits, or all with ``TOKENSIEVE_JSON_CORPUS=full``); and the compiled grammar accepts
  every example, token by token, with the stop token allowed exactly at the end.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import real_vocabs
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, GrammarMatcher, LimitExceeded, SchemaError, TokenizerInfo

jsonschema = pytest.importorskip("jsonschema")

CORPUS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "json_schemas"

#: Corpus schemas that once ran past the default limits (e-mail addresses and long texts with
#: ``maxLength``, inside arrays and recursive rules). Every schema must compile; these are
#: compiled by every run, beside the evenly spread sample.
ONCE_TOO_LARGE = (
    "user_list_response",
    "order",
    "product_full",
    "comment_thread",
    "send_email",
    "create_calendar_event",
)

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s\"<>\\^`{|}]*$")


def load_corpus() -> list[dict[str, Any]]:
    """Every record of every ``<group>.jsonl`` file, in file order."""
    records = []
    for path in sorted(CORPUS_DIR.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                records.append(json.loads(line))
    return records


CORPUS = load_corpus()


def _validator(schema: dict[str, Any]) -> Any:
    checker = jsonschema.FormatChecker()
    checker.checks("uri")(lambda v: not isinstance(v, str) or _URI.match(v) is not None)
    return jsonschema.Draft202012Validator(schema, format_checker=checker)


def test_corpus_shape() -> None:
    assert len(CORPUS) >= 200
    names = [r["name"] for r in CORPUS]
    assert len(set(names)) == len(names), "schema names must be unique"
    for record in CORPUS:
        assert set(record) == {"name", "group", "description", "schema", "examples"}, record["name"]
        assert 1 <= len(record["examples"]) <= 3, record["name"]
        assert record["schema"].get("$schema") == "https://json-schema.org/draft/2020-12/schema"


def test_schemas_are_valid_draft_2020_12() -> None:
    bad = []
    for record in CORPUS:
        try:
            jsonschema.Draft202012Validator.check_schema(record["schema"])
        except jsonschema.SchemaError as exc:
            bad.append(f"{record['name']}: {exc.message}")
    assert not bad, bad


def test_examples_are_valid_instances() -> None:
    bad = []
    for record in CORPUS:
        validator = _validator(record["schema"])
        for i, example in enumerate(record["examples"]):
            errors = [e.message for e in validator.iter_errors(example)]
            if errors:
                bad.append(f"{record['name']} example {i}: {errors[:2]}")
    assert not bad, bad


def test_examples_are_rejected_when_broken() -> None:
    """The validator used above is not vacuous: dropping a required key or adding an unknown one fails."""
    checked = 0
    for record in CORPUS:
        schema = record["schema"]
        required = schema.get("required")
        example = record["examples"][0]
        if not required or not isinstance(example, dict):
            continue
        validator = _validator(schema)
        broken = {k: v for k, v in example.items() if k != required[0]}
        assert not validator.is_valid(broken), record["name"]
        if schema.get("additionalProperties") is False:
            assert not validator.is_valid({**example, "unexpected_key_x": 1}), record["name"]
        checked += 1
    assert checked > 150


def test_corpus_files_are_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location("corpus_build", CORPUS_DIR / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    files = module.build()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in CORPUS_DIR.glob("*.jsonl")}
    assert set(files) == set(on_disk)
    stale = [name for name, text in files.items() if on_disk[name] != text]
    assert not stale, f"run python benchmarks/data/json_schemas/build.py ({stale} are stale)"


# --------------------------------------------------------------------------- compilation


def _require_compiler() -> None:
    if not hasattr(GrammarCompiler, "compile_json_schema"):
        pytest.skip("GrammarCompiler.compile_json_schema is not available")


def _texts(example: Any) -> list[str]:
    """The serialisations walked: compact-ish one line (UTF-8) and indented (ASCII escapes)."""
    return [json.dumps(example, ensure_ascii=False), json.dumps(example, indent=2)]


def _bit(mask: np.ndarray, token: int) -> bool:
    return bool((int(mask[token >> 5]) >> (token & 31)) & 1)


def _walk(compiled: Any, token_ids: list[int], eos: int, mask: np.ndarray) -> str | None:
    """Feed the tokens, then the stop token; ``None`` if accepted, else what went wrong.

    The mask is filled before the first token, every 7th token and at the end, and
    must contain the token that follows (the stop token only at the end).
    """
    matcher = GrammarMatcher(compiled)
    for i, token in enumerate(token_ids):
        if i % 7 == 0:
            matcher.fill_next_token_bitmask(mask, 0)
            if not _bit(mask[0], token):
                return f"token {i} ({token}) not in the mask"
            if _bit(mask[0], eos):
                return f"stop token allowed before token {i}"
        if not matcher.accept_token(token):
            return f"token {i} ({token}) rejected"
    matcher.fill_next_token_bitmask(mask, 0)
    if not _bit(mask[0], eos):
        return "stop token not allowed at the end"
    if not matcher.accept_token(eos) or not matcher.is_terminated():
        return "stop token not accepted"
    return None


def _compile_corpus(
    compiler: GrammarCompiler, tokenize: Any, eos: int, records: list[dict[str, Any]]
) -> tuple[list[str], dict[str, str], list[str]]:
    """Compile every schema of ``records`` (``strict=False``) and walk its examples.

    Returns ``(crashes, not_compiled, rejected)``: untyped exceptions, typed
    compile errors by schema name, and examples the compiled grammar refused.
    """
    crashes: list[str] = []
    not_compiled: dict[str, str] = {}
    rejected: list[str] = []
    mask = np.zeros((1, (compiler.tokenizer_info.vocab_size + 31) // 32), dtype=np.int32)
    for record in records:
        name = record["name"]
        try:
            compiled = compiler.compile_json_schema(record["schema"], strict=False)
        except (SchemaError, LimitExceeded) as exc:
            not_compiled[name] = f"{type(exc).__name__}: {exc}"
            continue
        except Exception as exc:  # noqa: BLE001 - the point is to catch untyped errors
            crashes.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        for i, example in enumerate(record["examples"]):
            for text in _texts(example):
                try:
                    problem = _walk(compiled, tokenize(text), eos, mask)
                except Exception as exc:  # noqa: BLE001
                    crashes.append(f"{name} example {i}: {type(exc).__name__}: {exc}")
                    break
                if problem is not None:
                    rejected.append(f"{name} example {i} {text[:60]!r}...: {problem}")
    return crashes, not_compiled, rejected


def _check(crashes: list[str], not_compiled: dict[str, str], rejected: list[str]) -> None:
    assert not crashes, "untyped errors:\n" + "\n".join(crashes[:20])
    assert not rejected, f"{len(rejected)} valid examples rejected:\n" + "\n".join(rejected[:20])
    assert not not_compiled, "schemas that do not compile:\n" + "\n".join(
        f"{n}: {w}" for n, w in not_compiled.items()
    )


def _sample(step: int) -> list[dict[str, Any]]:
    """Every ``step``-th schema, or all of them when ``TOKENSIEVE_JSON_CORPUS=full``.

    Compiling the whole corpus takes minutes, more than the test suite's budget,
    so by default a fixed, evenly spread sample is compiled.
    """
    if os.environ.get("TOKENSIEVE_JSON_CORPUS") == "full":
        return CORPUS
    sample = CORPUS[::step]
    return sample + [r for r in CORPUS if r["name"] in ONCE_TOO_LARGE and r not in sample]


def test_once_too_large_names_exist() -> None:
    assert set(ONCE_TOO_LARGE) <= {r["name"] for r in CORPUS}


def test_corpus_compiles_tiny_vocab() -> None:
    _require_compiler()
    vocab = make_tiny_vocab()
    info = TokenizerInfo(vocab, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL])
    byte_token = {vocab[i][0]: i for i in range(len(vocab)) if len(vocab[i]) == 1}

    def tokenize(text: str) -> list[int]:
        return [byte_token[b] for b in text.encode("utf-8")]

    _check(*_compile_corpus(GrammarCompiler(info), tokenize, EOS, _sample(20)))


@pytest.mark.slow
def test_corpus_compiles_smollm2() -> None:
    _require_compiler()
    pytest.importorskip("tokenizers")
    path = real_vocabs.smollm2_gguf()
    info = TokenizerInfo.from_file(str(path))
    tokenizer = _smollm2_tokenizer(path)
    eos = int(info.stop_token_ids[0])

    def tokenize(text: str) -> list[int]:
        ids = tokenizer(text)
        assert b"".join(bytes(info.decoded_vocab[i]) for i in ids) == text.encode("utf-8")
        return ids

    _check(*_compile_corpus(GrammarCompiler(info), tokenize, eos, _sample(10)))


def _smollm2_tokenizer(path: Path) -> Any:
    """Text → token ids with SmolLM2's byte-level BPE, built from the GGUF metadata."""
    import sys

    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        from vocabs import load_smollm2
    finally:
        sys.path.remove(str(bench))
    return load_smollm2().encode
