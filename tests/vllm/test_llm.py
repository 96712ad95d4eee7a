"""A real vLLM engine with tokensieve's logits processor: every constrained output is valid.

Oracles are independent of tokensieve: ``jsonschema`` for JSON Schemas,
``re.fullmatch`` for the regexes, membership for choices, and ``lark`` (an
Earley parser of the same language written in Lark) for the GBNF grammar.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytest.importorskip(
    "vllm.v1.sample.logits_processor",
    reason="vLLM is not installed in this interpreter: run `bash scripts/install-vllm.sh`, "
    "then `.venv-vllm/bin/python -m pytest -q tests/vllm`",
)
jsonschema = pytest.importorskip("jsonschema")
lark = pytest.importorskip("lark")

pytestmark = [pytest.mark.slow, pytest.mark.model]

SCHEMAS: dict[str, dict[str, Any]] = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 20},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "colors": {
                "type": "array",
                "items": {"enum": ["red", "green", "blue"]},
                "maxItems": 3,
                "uniqueItems": True,
            },
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    "status": {
        "type": "object",
        "properties": {
            "status": {"enum": ["active", "inactive", "banned"]},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "id": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 9999}, {"type": "null"}]},
        },
        "required": ["status", "score", "id"],
        "additionalProperties": False,
    },
    "points": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "x": {"type": "integer", "minimum": -99, "maximum": 99},
                "y": {"type": "integer", "minimum": -99, "maximum": 99},
            },
            "required": ["x", "y"],
            "additionalProperties": False,
        },
        "minItems": 1,
        "maxItems": 3,
    },
    "event": {
        "type": "object",
        "properties": {
            "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
            "done": {"type": "boolean"},
        },
        "required": ["date", "done"],
        "additionalProperties": False,
    },
}

REGEXES = {
    "phone": r"\(\d{3}\) \d{3}-\d{4}",
    "email": r"[a-z]{3,10}@[a-z]{3,8}\.(com|org|net)",
}
CHOICES = ["Paris", "London", "Berlin", "Madrid"]
GBNF = r"""
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= [0-9]{1,3} | "(" expr ")"
"""
LARK = r"""
start: expr
expr: term (("+" | "-") term)*
term: factor (("*" | "/") factor)*
factor: NUMBER | "(" expr ")"
NUMBER: /[0-9]{1,3}/
"""
FREE_PROMPT = "Name three fruits."


def chat(llm: Any, text: str) -> str:
    tokenizer = llm.get_tokenizer()
    return str(
        tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
    )


def params(constraint: Any, seed: int, *, max_tokens: int = 256, temperature: float = 0.8) -> Any:
    from vllm import SamplingParams

    extra = None if constraint is None else {"structured_outputs": constraint}
    return SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed, extra_args=extra)


@pytest.fixture(scope="module")
def mixed_batch(llm: Any) -> dict[str, list[Any]]:
    """One generate call: every kind of constraint, some as JSON text, beside unconstrained rows."""
    jobs: list[tuple[str, str, Any]] = []
    for name, schema in SCHEMAS.items():
        jobs.append((f"json:{name}", f"Write a JSON example of a {name}.", {"json": schema}))
        jobs.append(
            (
                f"json:{name}",
                f"Give a {name} as JSON.",
                json.dumps({"json": schema, "disable_any_whitespace": True}),
            )
        )
    jobs.append(("json_object", "Describe a car as a JSON object.", {"json_object": True}))
    for name, pattern in REGEXES.items():
        jobs.append((f"regex:{name}", f"Write a {name}.", {"regex": pattern}))
    jobs.append(("choice", "Which city is the capital of France?", json.dumps({"choice": CHOICES})))
    jobs.append(("choice", "Name a European capital.", {"choice": CHOICES}))
    jobs.append(("grammar", "Write an arithmetic expression.", {"grammar": GBNF, "grammar_syntax": "gbnf"}))
    jobs.append(("grammar", "Compute something with numbers.", {"grammar": GBNF}))
    jobs.append(("free", FREE_PROMPT, None))
    jobs.append(("free", "Say hello.", None))
    prompts = [chat(llm, prompt) for _, prompt, _ in jobs]
    sampling = [params(constraint, seed) for seed, (_, _, constraint) in enumerate(jobs)]
    sampling[-2] = params(None, 0, max_tokens=24, temperature=0.0)  # greedy, compared below
    outputs = llm.generate(prompts, sampling, use_tqdm=False)
    found: dict[str, list[Any]] = {}
    for (kind, _, _), out in zip(jobs, outputs, strict=True):
        found.setdefault(kind, []).append(out.outputs[0])
    return found


def finished(completion: Any) -> str:
    assert completion.finish_reason == "stop", (completion.finish_reason, completion.text)
    return str(completion.text)


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_json_schemas(mixed_batch: dict[str, list[Any]], name: str) -> None:
    completions = mixed_batch[f"json:{name}"]
    assert len(completions) == 2
    for completion in completions:
        jsonschema.validate(json.loads(finished(completion)), SCHEMAS[name])
    compact = finished(completions[1])
    assert json.dumps(json.loads(compact), separators=(",", ":"), ensure_ascii=False) == compact


def test_json_object(mixed_batch: dict[str, list[Any]]) -> None:
    (completion,) = mixed_batch["json_object"]
    assert isinstance(json.loads(finished(completion)), dict)


@pytest.mark.parametrize("name", list(REGEXES))
def test_regexes(mixed_batch: dict[str, list[Any]], name: str) -> None:
    (completion,) = mixed_batch[f"regex:{name}"]
    text = finished(completion)
    assert re.fullmatch(REGEXES[name], text), text


def test_choices(mixed_batch: dict[str, list[Any]]) -> None:
    for completion in mixed_batch["choice"]:
        assert finished(completion) in CHOICES


def test_gbnf_grammar(mixed_batch: dict[str, list[Any]]) -> None:
    parser = lark.Lark(LARK, parser="earley")
    for completion in mixed_batch["grammar"]:
        parser.parse(finished(completion))  # raises on any text outside the language


def test_free_rows_are_left_alone(llm: Any, mixed_batch: dict[str, list[Any]]) -> None:
    beside_constraints = mixed_batch["free"][0]
    (alone,) = llm.generate(
        [chat(llm, FREE_PROMPT)], [params(None, 0, max_tokens=24, temperature=0.0)], use_tqdm=False
    )
    assert beside_constraints.token_ids == alone.outputs[0].token_ids
    assert beside_constraints.text.strip()


def test_bad_constraints_are_refused_at_admission(llm: Any) -> None:
    from vllm.exceptions import VLLMValidationError  # what vLLM's server answers with a 400

    prompt = chat(llm, "Anything.")
    with pytest.raises(VLLMValidationError, match="column"):
        llm.generate([prompt], [params({"regex": "(ab"}, 0)], use_tqdm=False)
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": "(?<=a)b"}}}
    with pytest.raises(VLLMValidationError, match="/properties/x"):
        llm.generate([prompt], [params({"json": schema}, 0)], use_tqdm=False)
    with pytest.raises(VLLMValidationError, match="exactly one"):
        llm.generate([prompt], [params({"regex": "a", "choice": ["b"]}, 0)], use_tqdm=False)
    # the engine is still serving afterwards
    (out,) = llm.generate([prompt], [params({"choice": ["ok"]}, 0)], use_tqdm=False)
    assert finished(out.outputs[0]) == "ok"
