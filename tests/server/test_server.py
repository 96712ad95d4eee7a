"""The server end to end: a real ``tokensieve serve`` process, the real model, the real ``openai`` client.

Outputs are checked with independent oracles: ``jsonschema`` for schemas and
tool arguments, ``re`` for patterns and grammars, the choice list itself.
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import re
import signal
import time
from typing import Any

import httpx
import jsonschema
import openai
import pytest
from server.server_support import API_KEY, MODEL_ID, ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.model]

CITY = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 30},
        "population": {"type": "integer", "minimum": 0},
        "country": {"type": "string", "maxLength": 30},
    },
    "required": ["name", "population", "country"],
}
PERSON = {
    "type": "object",
    "properties": {
        "first_name": {"type": "string", "minLength": 1, "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "role": {"enum": ["admin", "user", "guest"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 2},
    },
    "required": ["first_name", "age", "role", "tags"],
    "additionalProperties": False,
}
POINT = {
    "type": "object",
    "properties": {
        "x": {"type": "number", "minimum": -10, "maximum": 10},
        "ok": {"type": "boolean"},
        "label": {"type": ["string", "null"], "pattern": "^[a-z]{1,8}$"},
    },
    "required": ["x", "ok", "label"],
}
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
}
ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer", "minimum": -1000, "maximum": 1000}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather in a city", "parameters": WEATHER},
    },
    {"type": "function", "function": {"name": "add", "description": "Add two integers", "parameters": ADD}},
]
TOOL_SCHEMAS = {"get_weather": WEATHER, "add": ADD}


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base + "/v1", api_key=API_KEY, max_retries=0, timeout=120)


def _schema_format(schema: dict[str, Any], strict: bool = True) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "out", "schema": schema, "strict": strict}}


def _chat(client: openai.OpenAI, content: str, **kw: Any) -> Any:
    kw.setdefault("max_tokens", 40)
    return client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": content}], **kw
    )


def _named_keys_only(value: Any, schema: dict[str, Any]) -> None:
    """Objects hold no keys beyond those their schema names (checked recursively)."""
    if isinstance(value, dict):
        named = schema.get("properties", {})
        assert set(value) <= set(named), f"unnamed keys {set(value) - set(named)}"
        for key, item in value.items():
            _named_keys_only(item, named[key])


def test_models_and_health(client: openai.OpenAI, server: ServerProcess) -> None:
    assert [m.id for m in client.models.list().data] == [MODEL_ID]
    health = httpx.get(server.base + "/health", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "ok"


def test_strict_json_schema_outputs_validate(client: openai.OpenAI) -> None:
    prompts = {"city": "Describe a large city as JSON.", "person": "Invent a user.", "point": "Give a point."}
    cases = [
        (name, schema, seed)
        for name, schema in (("city", CITY), ("person", PERSON), ("point", POINT))
        for seed in (1, 2)
    ]
    with concurrent.futures.ThreadPoolExecutor(len(cases)) as pool:
        futures = {
            pool.submit(
                _chat,
                client,
                prompts[name],
                response_format=_schema_format(schema),
                seed=seed,
                temperature=1.0,
            ): (
                name,
                schema,
            )
            for name, schema, seed in cases
        }
        for fut, (_name, schema) in futures.items():
            response = fut.result()
            choice = response.choices[0]
            assert choice.finish_reason in ("stop", "length")
            value = json.loads(choice.message.content)
            jsonschema.validate(value, schema)
            _named_keys_only(value, schema)  # the schema is silent about additionalProperties: closed
            assert response.usage.completion_tokens <= 40
            assert choice.model_extra["complete"] is True
            assert (
                response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens
            )


def test_output_cut_by_max_tokens_is_still_complete(client: openai.OpenAI) -> None:
    schema = {
        "type": "object",
        "properties": {"story": {"type": "string", "minLength": 40}},
        "required": ["story"],
    }
    for stream in (False, True):
        kw: dict[str, Any] = {
            "response_format": _schema_format(schema),
            "max_tokens": 12,
            "seed": 7,
            "temperature": 1.0,
        }
        if stream:
            text, _, reason, _ = _reassemble(_chat(client, "Tell a long story.", stream=True, **kw))
        else:
            choice = _chat(client, "Tell a long story.", **kw).choices[0]
            text, reason = choice.message.content, choice.finish_reason
            assert choice.model_extra["complete"] is True
        assert reason == "length"
        jsonschema.validate(json.loads(text), schema)


def test_disconnected_client_frees_its_slot(client: openai.OpenAI, server: ServerProcess) -> None:
    def cancelled() -> int:
        return int(
            httpx.get(server.base + "/health", timeout=10)
            .json()["engine"]["finish_reasons"]
            .get("cancelled", 0)
        )

    before = cancelled()
    stream = _chat(client, "Tell a very long story.", max_tokens=400, stream=True, seed=0)
    for _ in zip(range(3), stream, strict=False):
        pass
    stream.close()
    deadline = time.monotonic() + 20
    while cancelled() == before:
        assert time.monotonic() < deadline, "the request went on after its client left"
        time.sleep(0.2)


def test_strict_refuses_what_it_cannot_enforce_and_lenient_reports_it(
    client: openai.OpenAI, server: ServerProcess
) -> None:
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "(?<=a)b"}},
        "required": ["code"],
    }
    with pytest.raises(openai.BadRequestError) as info:
        _chat(client, "A code.", response_format=_schema_format(schema, strict=True))
    err = info.value.body
    assert err["param"] == "response_format.json_schema.schema"
    assert "/properties/code/pattern" in err["message"]
    raw = httpx.post(
        server.base + "/v1/chat/completions",
        headers={"Authorization": f"Bearer {API_KEY}"},
        json={
            "model": MODEL_ID,
            "messages": [{"role": "user", "content": "A code."}],
            "max_tokens": 20,
            "seed": 0,
            "response_format": _schema_format(schema, strict=False),
        },
        timeout=120,
    )
    assert raw.status_code == 200
    unenforced = json.loads(raw.headers["x-tokensieve-unenforced"])
    assert raw.json()["unenforced"] == unenforced
    assert any("/properties/code" in item and "pattern" in item for item in unenforced)
    value = json.loads(raw.json()["choices"][0]["message"]["content"])
    assert isinstance(value["code"], str)  # the other keywords still hold


def _check_calls(message: Any, allowed: set[str]) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for call in message.tool_calls:
        assert call.type == "function" and call.id.startswith("call_")
        assert call.function.name in allowed
        args = json.loads(call.function.arguments)
        jsonschema.validate(args, TOOL_SCHEMAS[call.function.name])
        _named_keys_only(args, TOOL_SCHEMAS[call.function.name])
        calls.append((call.function.name, args))
    return calls


@pytest.mark.parametrize("seed", [0, 5])
def test_tool_choice_required_and_named(client: openai.OpenAI, seed: int) -> None:
    response = _chat(client, "What is the weather in Paris?", tools=TOOLS, tool_choice="required", seed=seed)
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert len(_check_calls(choice.message, {"get_weather", "add"})) >= 1
    named = {"type": "function", "function": {"name": "add"}}
    response = _chat(
        client, "What is 2 plus 3?", tools=TOOLS, tool_choice=named, seed=seed, parallel_tool_calls=False
    )
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [name for name, _ in _check_calls(choice.message, {"add"})] == ["add"]


def test_tool_choice_auto_is_text_or_valid_calls(client: openai.OpenAI) -> None:
    seen = set()
    for seed, question in ((0, "What is the weather in Paris?"), (1, "Say hello.")):
        choice = _chat(client, question, tools=TOOLS, tool_choice="auto", seed=seed, max_tokens=30).choices[0]
        if choice.message.tool_calls:
            assert choice.finish_reason == "tool_calls"
            _check_calls(choice.message, {"get_weather", "add"})
            seen.add("calls")
        else:
            assert choice.finish_reason in ("stop", "length")
            assert choice.message.content is not None and not choice.message.content.startswith("<")
            seen.add("text")
    assert seen


def _reassemble(stream: Any) -> tuple[str, list[tuple[str, str]], str | None, Any]:
    text, calls, reason, usage = "", {}, None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            text += delta.content or ""
            for call in delta.tool_calls or []:
                entry = calls.setdefault(call.index, ["", ""])
                entry[0] += call.function.name or "" if call.function else ""
                entry[1] += call.function.arguments or "" if call.function else ""
            reason = choice.finish_reason or reason
    return text, [tuple(calls[i]) for i in sorted(calls)], reason, usage


def test_stream_reassembles_to_the_same_output(client: openai.OpenAI) -> None:
    kw: dict[str, Any] = {"seed": 11, "temperature": 1.0}
    whole = _chat(client, "Describe a city.", response_format=_schema_format(CITY), **kw)
    text, calls, reason, usage = _reassemble(
        _chat(
            client,
            "Describe a city.",
            response_format=_schema_format(CITY),
            stream=True,
            stream_options={"include_usage": True},
            **kw,
        )
    )
    assert text == whole.choices[0].message.content and not calls
    assert reason == whole.choices[0].finish_reason
    assert usage is not None and usage.completion_tokens == whole.usage.completion_tokens

    whole = _chat(client, "Weather in Oslo?", tools=TOOLS, tool_choice="required", **kw)
    text, calls, reason, _ = _reassemble(
        _chat(client, "Weather in Oslo?", tools=TOOLS, tool_choice="required", stream=True, **kw)
    )
    expected = [(c.function.name, c.function.arguments) for c in whole.choices[0].message.tool_calls]
    assert calls == expected and reason == "tool_calls" == whole.choices[0].finish_reason
    assert text == ""


def _max_batch_seen(server: ServerProcess) -> int:
    metrics = httpx.get(server.base + "/metrics", timeout=10).text
    sizes = [
        int(k)
        for k, count in re.findall(r'^tokensieve_engine_batch_sizes\{key="(\d+)"\} (\S+)$', metrics, re.M)
        if float(count) > 0
    ]
    return max(sizes, default=0)


def test_eight_concurrent_requests_decode_in_one_batch(client: openai.OpenAI, server: ServerProcess) -> None:
    def one(i: int) -> Any:
        return _chat(
            client, f"Count to {i + 3}.", seed=i, max_tokens=24, response_format=_schema_format(POINT)
        )

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(one, range(8)))
    for response in responses:
        jsonschema.validate(json.loads(response.choices[0].message.content), POINT)
    assert _max_batch_seen(server) >= 8
    metrics = httpx.get(server.base + "/metrics", timeout=10).text
    assert re.search(r"^tokensieve_completion_tokens_total [1-9]", metrics, re.M)
    assert re.search(r"^tokensieve_constraint_cache_hits_total [1-9]", metrics, re.M)
    # the engine's mask work: rows filled (8 constrained requests) and the time spent on them
    assert re.search(r"^tokensieve_engine_mask_rows [1-9]", metrics, re.M)
    assert re.search(r"^tokensieve_engine_mask_seconds [0-9.e+-]*[1-9]", metrics, re.M)


def test_structured_outputs_regex_choice_grammar(client: openai.OpenAI) -> None:
    date = r"\d{4}-[01]\d-[0-3]\d"
    out = (
        _chat(client, "When?", extra_body={"structured_outputs": {"regex": date}}, seed=1)
        .choices[0]
        .message.content
    )
    assert re.fullmatch(date, out)
    colors = ["red", "green", "light blue"]
    out = _chat(client, "A colour?", extra_body={"guided_choice": colors}, seed=1).choices[0].message.content
    assert out in colors
    gbnf = 'root ::= "(" num ("+" num)* ")"\nnum ::= [1-9] [0-9]?'
    out = (
        _chat(client, "A sum.", extra_body={"guided_grammar": gbnf}, seed=2, max_tokens=30)
        .choices[0]
        .message.content
    )
    assert re.fullmatch(r"\([1-9][0-9]?(\+[1-9][0-9]?)*\)", out)
    lark = 'start: WORD ("," WORD)*\nWORD: /[a-z]{1,6}/'
    out = _chat(
        client, "Some words.", extra_body={"structured_outputs": {"grammar": lark}}, seed=2, max_tokens=30
    )
    assert re.fullmatch(r"[a-z]{1,6}(,[a-z]{1,6})*", out.choices[0].message.content)


def test_completion_endpoint_logprobs_n_and_stop(client: openai.OpenAI) -> None:
    response = client.completions.create(
        model=MODEL_ID,
        prompt="The year was",
        max_tokens=8,
        n=2,
        seed=4,
        extra_body={"guided_regex": r" \d{4}"},
    )
    assert len(response.choices) == 2
    assert all(re.fullmatch(r" \d{4}", c.text) for c in response.choices)
    chat = _chat(
        client, "List three fruits.", max_tokens=12, logprobs=True, top_logprobs=3, seed=0, temperature=0
    )
    content = chat.choices[0].logprobs.content
    assert "".join(t.token for t in content) == chat.choices[0].message.content
    for t in content:
        assert t.logprob <= 0 and len(t.top_logprobs) == 3
        assert max(x.logprob for x in t.top_logprobs) >= t.logprob - 1e-4  # greedy takes the top one
        assert sum(math.exp(x.logprob) for x in t.top_logprobs) <= 1 + 1e-4
    stopped = _chat(client, "List three fruits.", max_tokens=12, seed=0, temperature=0, stop=[","])
    assert "," not in stopped.choices[0].message.content
    assert chat.choices[0].message.content.startswith(stopped.choices[0].message.content)


# ----------------------------------------------------------------- errors
def _post(
    server: ServerProcess, body: Any, *, raw: bytes | None = None, key: str = API_KEY
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx.post(server.base + "/v1/chat/completions", content=content, headers=headers, timeout=120)


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert "Traceback" not in body["error"]["message"]
    return body["error"]


def _request(**fields: Any) -> dict[str, Any]:
    return {"model": MODEL_ID, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, **fields}


def test_errors_have_their_status_and_openai_shape(server: ServerProcess) -> None:
    assert "JSON" in _error(_post(server, None, raw=b'{"model": "x", "messages": ['), 400)["message"]
    err = _error(_post(server, _request(temperature="hot")), 400)
    assert err["param"] == "temperature"
    err = _error(_post(server, _request(max_tokens=-3)), 400)
    assert err["param"] == "max_tokens"
    bad_schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": "zero"}}}
    err = _error(_post(server, _request(response_format=_schema_format(bad_schema))), 400)
    assert "/properties/a/minimum" in err["message"]
    err = _error(_post(server, _request(guided_regex=r"\d{4}-(\d{2}")), 400)
    assert err["param"] == "guided_regex" and "column" in err["message"]
    err = _error(_post(server, _request(guided_grammar='root ::= "a" missing')), 400)
    assert "line 1" in err["message"] or "missing" in err["message"]
    err = _error(_post(server, _request(guided_regex="(a|b)*a(a|b){24}")), 400)
    assert err["code"] == "constraint_too_costly" and "max_dfa_states" in err["message"]
    _error(_post(server, _request(messages=[{"role": "user", "content": "x" * 300_000}])), 413)
    err = _error(_post(server, _request(model="gpt-4o")), 404)
    assert err["param"] == "model"
    _error(_post(server, _request(), key="wrong"), 401)
    err = _error(_post(server, _request(n=1000)), 400)
    assert "max_n" in err["message"]
    err = _error(_post(server, _request(max_tokens=10**6)), 400)
    assert "max_tokens_limit" in err["message"]
    err = _error(_post(server, _request(guided_regex="a", guided_choice=["b"])), 400)
    assert "one constraint" in err["message"]
    err = _error(httpx.get(server.base + "/v1/nothing", headers={"Authorization": f"Bearer {API_KEY}"}), 404)
    assert err["code"] == "not_found"
    health = httpx.get(server.base + "/health", timeout=10)
    assert health.status_code == 200  # nothing above hurt the process


def test_queue_full_is_429_and_sigterm_drains() -> None:
    small = ServerProcess("--max-batch", "1", "--max-queue", "1", "--compile-timeout", "0.001")
    try:
        c = openai.OpenAI(base_url=small.base + "/v1", api_key="none", max_retries=0, timeout=120)
        slow = httpx.post(
            small.base + "/v1/chat/completions",
            json=_request(response_format=_schema_format(PERSON)),
            timeout=60,
        )
        err = _error(slow, 400)
        assert err["code"] == "constraint_too_costly" and "compile_timeout_s" in err["message"]
        first = _chat(c, "Tell a story.", max_tokens=40, stream=True, seed=0)
        next(iter(first))  # the first request is decoding
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            queued = pool.submit(_chat, c, "Tell a story.", max_tokens=5, seed=1)
            deadline = 0
            response = None
            while deadline < 50:
                response = httpx.post(small.base + "/v1/chat/completions", json=_request(), timeout=60)
                if response.status_code == 429:
                    break
                deadline += 1
            assert response is not None
            err = _error(response, 429)
            assert err["code"] == "queue_full" and int(response.headers["retry-after"]) >= 1
            small.terminate()  # SIGTERM while both are in flight: both finish
            text, _, reason, _ = _reassemble(first)
            assert reason in ("stop", "length")
            assert queued.result().choices[0].finish_reason in ("stop", "length")
        # uvicorn re-raises the signal once it has shut down
        assert small.proc.wait(timeout=60) in (0, -signal.SIGTERM)
    finally:
        small.stop()
