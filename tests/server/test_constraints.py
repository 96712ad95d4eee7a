"""Constraint fields of requests, compiled for the real SmolLM2 vocabulary (no model run).

The languages are checked by matching strings whose validity JSON Schema and
the patterns themselves decide.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tokensieve.compile import GrammarCompiler
from tokensieve.matcher import GrammarMatcher
from tokensieve.server.constraints import constraint_spec
from tokensieve.server.errors import APIError
from tokensieve.server.protocol import ChatCompletionRequest
from tokensieve.server.tools import ToolCallReader
from tokensieve.vocab import TokenizerInfo

pytestmark = pytest.mark.slow

CITY = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
}


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    from runtime.model_support import converted_default_model

    folder = converted_default_model()
    return GrammarCompiler(TokenizerInfo.from_file(folder / "tokenizer.json"))


def _spec(**fields: Any) -> Any:
    req = ChatCompletionRequest.model_validate(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}
    )
    return constraint_spec(req, closed_objects=True, max_schema_bytes=1 << 16)


def _accepts(compiled: Any, text: str) -> bool:
    matcher = GrammarMatcher(compiled)
    return matcher.accept_string(text) and matcher.is_completed()


def test_closed_objects_by_default_and_the_opt_out(compiler: GrammarCompiler) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "c", "schema": CITY, "strict": True}}
    extra = '{"name":"Oslo","population":700000,"area":454}'
    plain = '{"name":"Oslo","population":700000}'
    closed, _ = _spec(response_format=fmt).build(compiler)
    opened, _ = _spec(response_format=fmt, closed_objects=False).build(compiler)
    assert _accepts(closed, plain) and _accepts(opened, plain)
    assert not _accepts(closed, extra)
    assert _accepts(opened, extra)  # JSON Schema's own default allows the extra key


def test_tool_grammar_language(compiler: GrammarCompiler) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "add",
                "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            },
        },
        {"type": "function", "function": {"name": "ping"}},
    ]
    call = '<tool_call>{"name":"add","arguments":{"a":2}}</tool_call>'
    ping = '<tool_call>{"name":"ping","arguments":{}}</tool_call>'
    required, _ = _spec(tools=tools, tool_choice="required").build(compiler)
    single, _ = _spec(tools=tools, tool_choice="required", parallel_tool_calls=False).build(compiler)
    auto, _ = _spec(tools=tools, tool_choice="auto").build(compiler)
    named, _ = _spec(tools=tools, tool_choice={"type": "function", "function": {"name": "ping"}}).build(
        compiler
    )
    assert _accepts(required, call) and _accepts(required, call + "\n" + ping)
    assert _accepts(single, call) and not _accepts(single, call + "\n" + ping)
    assert not _accepts(required, '<tool_call>{"name":"add","arguments":{"a":"2"}}</tool_call>')
    assert not _accepts(required, '<tool_call>{"name":"sub","arguments":{"a":2}}</tool_call>')
    assert not _accepts(required, '<tool_call>{"name":"add","arguments":{"a":2,"b":3}}</tool_call>')
    assert not _accepts(required, "Hello")
    assert _accepts(auto, "Hello <b>there</b>") and _accepts(auto, call) and not _accepts(auto, "<b>")
    assert _accepts(named, ping) and not _accepts(named, call)


def test_tool_call_reader_pieces_equal_the_whole() -> None:
    text = '<tool_call>{"name":"add","arguments":{"a":"}</tool_call>","b":[1,{"c":2}]}}</tool_call>\n<tool_call>{"name":"ping","arguments":{}}</tool_call>'
    whole = ToolCallReader(auto=False)
    whole.feed(text)
    pieces = ToolCallReader(auto=False)
    for ch in text:
        pieces.feed(ch)
    expected = [("add", {"a": "}</tool_call>", "b": [1, {"c": 2}]}), ("ping", {})]
    for reader in (whole, pieces):
        assert [(c.name, json.loads(c.arguments)) for c in reader.calls] == expected
    auto = ToolCallReader(auto=True)
    auto.feed("Hi <there>")
    assert auto.content == "Hi <there>" and not auto.calls


def test_one_constraint_per_request() -> None:
    with pytest.raises(APIError) as info:
        _spec(guided_regex="a", structured_outputs={"choice": ["b"]})
    assert info.value.status == 400 and "one constraint" in info.value.message
    with pytest.raises(APIError):
        _spec(tool_choice="required")  # no tools
    with pytest.raises(APIError):
        _spec(
            tools=[{"type": "function", "function": {"name": "f"}}],
            tool_choice={"type": "function", "function": {"name": "g"}},
        )


def test_history_with_tool_calls_is_written_in_the_call_syntax() -> None:
    from tokensieve.server.tools import CALL_CLOSE, CALL_OPEN, chat_messages

    req = ChatCompletionRequest.model_validate(
        {
            "model": "m",
            "tools": [{"type": "function", "function": {"name": "add"}}],
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "2+3?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a":2,"b":3}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "5"},
            ],
        }
    )
    out = chat_messages(req.messages, req.tools)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool"]
    assert out[0]["content"].startswith("Be brief.") and '"name": "add"' in out[0]["content"]
    call = out[2]["content"]
    assert call.startswith(CALL_OPEN) and call.endswith(CALL_CLOSE)
    assert json.loads(call[len(CALL_OPEN) : -len(CALL_CLOSE)]) == {
        "name": "add",
        "arguments": {"a": 2, "b": 3},
    }
