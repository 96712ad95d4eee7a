"""The continuous-batching engine on the real SmolLM2 model.

Oracles: the same request decoded alone (batch independence), ``jsonschema``
and ``re.fullmatch`` (constrained outputs), the same request without its stop
string (stop strings), transformers' own forward (log-probabilities).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from concurrent.futures import Future

import jsonschema
import pytest

from tokensieve import LimitExceeded, TokensieveError
from tokensieve.runtime import LoadedModel, build_prompt_ids
from tokensieve.runtime.engine import Engine, QueueFull, SamplingParams

pytestmark = [pytest.mark.slow, pytest.mark.model, pytest.mark.xdist_group("smollm2")]

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
DATE = r"\d{4}-\d{2}-\d{2}"


@pytest.fixture(scope="module")
def engine(smollm2: LoadedModel) -> Iterator[Engine]:
    eng = Engine(smollm2, max_batch=8, max_queue=8)
    yield eng
    eng.shutdown(drain=False)


def _prompt(loaded: LoadedModel, text: str) -> list[int]:
    return build_prompt_ids(loaded.tokenizer, text)


def test_batched_requests_give_the_tokens_they_give_alone(smollm2: LoadedModel, engine: Engine) -> None:
    person = smollm2.compiler.compile_json_schema(PERSON)
    date = smollm2.compiler.compile_regex(DATE)
    requests = [
        (
            _prompt(smollm2, "Describe a person."),
            SamplingParams(temperature=1.0, seed=3, max_tokens=24),
            person,
        ),
        (
            _prompt(smollm2, "Tell me about cats."),
            SamplingParams(temperature=0.8, seed=4, max_tokens=12),
            None,
        ),
        (
            _prompt(smollm2, "When did it happen?"),
            SamplingParams(temperature=1.2, seed=5, max_tokens=16),
            date,
        ),
        (_prompt(smollm2, "Hi"), SamplingParams(temperature=0.0, max_tokens=10), None),
    ]
    alone = []
    for ids, params, constraint in requests:
        handle = engine.submit(ids, params, constraint)
        handle.result(timeout=120)
        alone.append(list(handle.token_ids))
    handles = [engine.submit(ids, params, constraint) for ids, params, constraint in requests]
    for handle in handles:
        handle.result(timeout=120)
    assert [h.token_ids for h in handles] == alone
    sizes = engine.stats()["batch_sizes"]
    assert max(sizes) >= 3  # they really shared steps
    assert jsonschema.validate(json.loads(handles[0].text), PERSON) is None
    assert re.fullmatch(DATE, handles[2].text)


def test_constrained_rows_stay_valid_beside_free_text(smollm2: LoadedModel, engine: Engine) -> None:
    person = smollm2.compiler.compile_json_schema(PERSON)
    before = engine.stats()
    ids = _prompt(smollm2, "Describe a person as JSON.")
    handles = []
    for i in range(6):
        # small budgets for some: the output must still be complete
        params = SamplingParams(temperature=1.3, seed=100 + i, max_tokens=14 if i % 2 else 40)
        handles.append(engine.submit(ids, params, person if i % 3 else None))
    for i, handle in enumerate(handles):
        text = handle.result(timeout=120)
        assert handle.finish_reason in ("stop", "length") and handle.error is None
        if i % 3:
            jsonschema.validate(json.loads(text), PERSON)
            assert handle.num_output_tokens <= handle_budget(i)
    after = engine.stats()
    # four constrained rows, each with at least one mask filled; the time is counted
    assert after["mask_rows"] - before["mask_rows"] >= 4
    assert after["mask_seconds"] > before["mask_seconds"]
    assert after["mask_wait_seconds"] >= before["mask_wait_seconds"]


def handle_budget(i: int) -> int:
    return 14 if i % 2 else 40


def test_streamed_text_joins_to_the_output_sync_and_async(smollm2: LoadedModel, engine: Engine) -> None:
    ids = _prompt(smollm2, "Write a sentence about the sea.")
    handle = engine.submit(ids, SamplingParams(temperature=0.9, seed=8, max_tokens=20))
    pieces = [out.text for out in handle]
    assert "".join(pieces) == handle.text and len(pieces) >= 2
    assert handle.finish_reason in ("stop", "length") and handle.num_output_tokens <= 20

    async def consume() -> tuple[str, int]:
        again = engine.submit(ids, SamplingParams(temperature=0.9, seed=8, max_tokens=20))
        ticks = 0
        text = ""
        async for out in again:
            text += out.text
            ticks += 1
            await asyncio.sleep(0)
        return text, ticks

    text, _ = asyncio.run(consume())
    assert text == handle.text  # same seed, same output


def test_stop_string_ends_the_text_before_it(smollm2: LoadedModel, engine: Engine) -> None:
    ids = _prompt(smollm2, "Tell me about the moon.")
    full = engine.submit(ids, SamplingParams(temperature=0.0, max_tokens=30)).result(timeout=120)
    assert len(full) > 20
    stop = full[12:15]  # ends the text at its first occurrence, at or before character 12
    handle = engine.submit(ids, SamplingParams(temperature=0.0, max_tokens=30, stop=["zzz", stop]))
    streamed = "".join(out.text for out in handle)
    assert handle.finish_reason == "stop"
    assert handle.text == streamed == full[: full.index(stop)]


def test_cancel_frees_the_slot(smollm2: LoadedModel) -> None:
    eng = Engine(smollm2, max_batch=1, max_queue=4)
    try:
        ids = _prompt(smollm2, "Write a long story.")
        first = eng.submit(ids, SamplingParams(temperature=1.0, seed=1, max_tokens=500))
        second = eng.submit(ids, SamplingParams(temperature=0.0, max_tokens=4))
        for _ in first:  # wait until the first one is decoding
            break
        first.cancel()
        second.result(timeout=60)
        assert first.finish_reason == "cancelled" and first.num_output_tokens < 500
        assert second.finish_reason == "length" and second.num_output_tokens == 4
    finally:
        eng.shutdown(drain=False)


def test_queue_limit_and_pending_grammars(smollm2: LoadedModel) -> None:
    eng = Engine(smollm2, max_batch=2, max_queue=2)
    try:
        ids = _prompt(smollm2, "When?")
        ready: Future = Future()
        failing: Future = Future()
        waiting = eng.submit(ids, SamplingParams(temperature=0.0, max_tokens=12), ready)
        broken = eng.submit(ids, SamplingParams(max_tokens=12), failing)
        with pytest.raises(QueueFull):
            eng.submit(ids, SamplingParams(max_tokens=4))
        failing.set_exception(ValueError("bad grammar"))
        broken.result(timeout=30)
        assert broken.finish_reason == "error" and isinstance(broken.error, ValueError)
        # a request whose grammar is not ready does not hold up the others
        free = eng.submit(ids, SamplingParams(temperature=0.0, max_tokens=5))
        free.result(timeout=60)
        assert not waiting.done and free.finish_reason == "length"
        ready.set_result(smollm2.compiler.compile_regex(DATE))
        assert re.fullmatch(DATE, waiting.result(timeout=60))
        stats = eng.stats()
        assert stats["finish_reasons"] == {"error": 1, "length": 1, "stop": 1}
    finally:
        eng.shutdown(drain=True)
    with pytest.raises(TokensieveError, match="shut down"):
        eng.submit(ids, SamplingParams(max_tokens=4))


def test_bad_requests_are_refused_at_submit(smollm2: LoadedModel, engine: Engine) -> None:
    date = smollm2.compiler.compile_regex(DATE)
    ids = _prompt(smollm2, "When?")
    with pytest.raises(LimitExceeded, match="max_tokens"):
        engine.submit(ids, SamplingParams(max_tokens=3), date)
    with pytest.raises(LimitExceeded, match="max_len"):
        engine.submit(ids, SamplingParams(max_tokens=engine.max_len))
    with pytest.raises(TokensieveError, match="outside the vocabulary"):
        engine.submit([10**9], SamplingParams())
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0)


def test_logprobs_follow_the_models_distribution(smollm2: LoadedModel, engine: Engine) -> None:
    import torch

    ids = _prompt(smollm2, "Name a colour.")
    handle = engine.submit(ids, SamplingParams(temperature=0.0, max_tokens=3, logprobs=True, top_logprobs=3))
    outs = [out for out in handle if out.token_id is not None]
    with torch.inference_mode():
        ref = torch.log_softmax(smollm2.model(torch.tensor([ids])).logits[0, -1].float(), dim=-1)
    first = outs[0]
    assert first.token_id == int(torch.argmax(ref))
    assert first.logprob == pytest.approx(float(ref[first.token_id]), abs=0.15)  # bf16 weights
    assert first.top_logprobs is not None and first.top_logprobs[0][0] == first.token_id
    assert [t for t, _ in first.top_logprobs] == [int(t) for t in torch.topk(ref, 3).indices]


def test_fixed_keys_are_jumped_over(smollm2: LoadedModel, engine: Engine) -> None:
    compact = smollm2.compiler.compile_json_schema(PERSON, whitespace="compact")
    ids = _prompt(smollm2, "Describe a person as JSON.")
    before = engine.stats()["steps"]
    handles = [
        engine.submit(ids, SamplingParams(temperature=0.7, seed=s, max_tokens=40), compact) for s in range(2)
    ]
    for handle in handles:
        value = json.loads(handle.result(timeout=120))
        jsonschema.validate(value, PERSON)
        assert list(value) == ["name", "age"]
        # the keys and the punctuation around them come without sampling: '"name":"' at least
        assert handle.forced_tokens >= 3, handle.token_ids
    steps = engine.stats()["steps"] - before
    assert steps < max(h.num_output_tokens for h in handles) + 1  # forced tokens share model steps
