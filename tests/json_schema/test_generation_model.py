"""The real model writes valid instances under corpus schemas (``jsonschema`` is the oracle).

Twenty small schemas of the corpus (tool arguments, events, forms, catalog
entries) × two samples each are generated in one batched ``model.generate`` call
through :class:`~tokensieve.integrations.transformers.TokensieveLogitsProcessor`
(one grammar per row). Every row that reaches the stop token within the budget
must parse as JSON and validate, formats included, except on keywords the
compiler reported in ``unenforced``; most rows must finish.
The full corpus run is ``benchmarks/json_generation.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.model]

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
jsonschema = pytest.importorskip("jsonschema")

from runtime.model_support import shared_model  # noqa: E402

from tokensieve import GrammarCompiler  # noqa: E402
from tokensieve.runtime import build_prompt_ids  # noqa: E402

CORPUS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "json_schemas"

#: Small schemas (short outputs) spread over the groups.
SCHEMAS = (
    "get_current_weather",
    "set_timer",
    "convert_currency",
    "calculate",
    "translate_text",
    "classify_intent",
    "control_light",
    "set_thermostat",
    "kubectl_scale",
    "rate_limit_user",
    "get_stock_price",
    "play_music",
    "click_event",
    "experiment_exposure",
    "ride_request",
    "delivery_quote",
    "flight_status",
    "newsletter_signup",
    "product_basic",
    "cache_config",
)
SEEDS = (0, 1)
MAX_NEW_TOKENS = 160
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s\"<>\\^`{|}]*$")


def _records() -> list[dict[str, Any]]:
    by_name = {}
    for path in sorted(CORPUS_DIR.glob("*.jsonl")):
        # split at line feeds only: splitlines() also splits at U+2028 and other characters
        # that JSON strings may hold unescaped
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                record = json.loads(line)
                by_name[record["name"]] = record
    return [by_name[name] for name in SCHEMAS]


def _validator(schema: Any) -> Any:
    checker = jsonschema.FormatChecker()
    checker.checks("uri")(lambda v: not isinstance(v, str) or _URI.match(v) is not None)
    return jsonschema.Draft202012Validator(schema, format_checker=checker)


def _unenforced_keywords(schema: Any, unenforced: Any) -> set[tuple[int, str]]:
    """(id of the subschema, keyword) for each keyword the compiler reported as not enforced.

    Each report starts with the JSON pointer of its keyword (``/properties/b/format: ...``);
    an error of ``jsonschema`` is ignored only when it comes from that very keyword of that
    very subschema (``ValidationError.schema`` is the subschema object, also through ``$ref``).
    """
    out = set()
    for line in unenforced:
        pointer = line.split(": ", 1)[0]
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
        assert parts, f"a report without a keyword pointer: {line!r}"
        node = schema
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        out.add((id(node), parts[-1]))
    return out


def test_unenforced_reports_name_one_keyword_of_one_subschema() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "format": "email"}, "b": {"type": "string", "format": "email"}},
    }
    skipped = _unenforced_keywords(schema, ["/properties/a/format: format 'email' is enforced in part"])
    assert skipped == {(id(schema["properties"]["a"]), "format")}
    errors = list(_validator(schema).iter_errors({"a": "x", "b": "y"}))
    kept = [e for e in errors if (id(e.schema), str(e.validator)) not in skipped]
    assert [list(e.absolute_path) for e in kept] == [["b"]]


def test_generated_instances_validate() -> None:
    if not hasattr(GrammarCompiler, "compile_json_schema"):
        pytest.skip("GrammarCompiler.compile_json_schema is not available")
    from tokensieve.integrations.transformers import TokensieveLogitsProcessor

    loaded = shared_model()
    tokenizer, model, info = loaded.tokenizer, loaded.model, loaded.tokenizer_info
    stops = [int(t) for t in info.stop_token_ids]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]
    records = _records()
    compiled = {r["name"]: loaded.compiler.compile_json_schema(r["schema"], strict=False) for r in records}

    rows = [(r, seed) for seed in SEEDS for r in records]
    prompts = []
    for r, _ in rows:
        fields = ", ".join(r["schema"].get("properties", {}))
        prompts.append(
            build_prompt_ids(tokenizer, f"Write a JSON object for: {r['description']}. Fields: {fields}.")
        )
    width = max(len(p) for p in prompts)
    input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    processor = TokensieveLogitsProcessor([compiled[r["name"]] for r, _ in rows])
    torch.manual_seed(20240911)
    with torch.inference_mode():
        out = model.generate(
            input_ids=input_ids,
            attention_mask=attention,
            logits_processor=[processor],
            do_sample=True,
            temperature=0.8,
            top_k=0,
            top_p=1.0,
            max_new_tokens=MAX_NEW_TOKENS,
            eos_token_id=stops,
            pad_token_id=pad,
        )

    finished = 0
    problems = []
    for (record, seed), ids in zip(rows, out[:, width:].tolist(), strict=True):
        kept = []
        for t in ids:
            if t in stops:
                break
            kept.append(t)
        else:
            continue  # the budget ran out: an unfinished prefix
        finished += 1
        text = b"".join(bytes(info.decoded_vocab[t]) for t in kept).decode("utf-8")
        try:
            value = json.loads(text)
        except ValueError as exc:
            problems.append(f"{record['name']} seed {seed}: does not parse ({exc}): {text!r}")
            continue
        skipped = _unenforced_keywords(record["schema"], getattr(compiled[record["name"]], "unenforced", ()))
        errors = [
            e
            for e in _validator(record["schema"]).iter_errors(value)
            if (id(e.schema), str(e.validator)) not in skipped
        ]
        if errors:
            problems.append(f"{record['name']} seed {seed}: {errors[0].message}: {text!r}")
    assert not problems, "\n".join(problems)
    assert finished >= 0.75 * len(rows), (
        f"only {finished} of {len(rows)} outputs finished within {MAX_NEW_TOKENS} tokens"
    )
