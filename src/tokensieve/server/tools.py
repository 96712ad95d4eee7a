"""Tool calls: the prompt that lists the tools, the constraint, and reading calls back.

SmolLM2's chat template has no tool-call syntax, so the server uses this one
(the Hermes format that Qwen and others use), documented in ``docs/server.md``::

    <tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>

The tools are listed for the model in a system message (put before the
conversation's own system message, if any). A call's JSON is written
compactly, name first. Parallel calls follow one another, separated by a line
feed. With ``tool_choice`` ``"required"`` or a named function the output is
one call (or several, with ``parallel_tool_calls``) whose name is one of the
tools and whose arguments are valid for that tool's ``parameters``; with
``"auto"`` it is either such calls or text whose first character is not
``<``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ir import Grammar
from ..ir import nodes as ir
from ..limits import Limits
from .protocol import ChatMessage, Tool

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "ToolCallReader",
    "chat_messages",
    "new_call_id",
    "tool_call_schema",
    "tool_grammar",
    "tools_system_prompt",
]

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
_RULE_PREFIX = "tool_call__"


def new_call_id() -> str:
    """A fresh tool-call id (``call_`` and 24 hex digits)."""
    return "call_" + uuid.uuid4().hex[:24]


def tools_system_prompt(tools: Sequence[Tool]) -> str:
    """The system message that lists the tools and the call syntax.

    Parameters
    ----------
    tools
        The request's tools.

    Returns
    -------
    str
    """
    listed = "\n".join(
        json.dumps(t.function.model_dump(exclude_none=True), ensure_ascii=False) for t in tools
    )
    return (
        "You can call functions. Their signatures, one per line, in JSON Schema:\n"
        f"<tools>\n{listed}\n</tools>\n"
        "To call a function, answer with a JSON object holding its name and arguments between tags:\n"
        f'{CALL_OPEN}{{"name":"<function-name>","arguments":{{<arguments>}}}}{CALL_CLOSE}'
    )


def chat_messages(messages: Sequence[ChatMessage], tools: Sequence[Tool] | None) -> list[dict[str, str]]:
    """The conversation as ``{"role", "content"}`` pairs for the chat template.

    Assistant tool calls of the history are written in the call syntax; a
    ``developer`` message is a system message; the tool list goes first.

    Parameters
    ----------
    messages
        The request's messages.
    tools
        The request's tools (``None``: no tool message).

    Returns
    -------
    list of dict
    """
    out: list[dict[str, str]] = []
    if tools:
        out.append({"role": "system", "content": tools_system_prompt(tools)})
    for m in messages:
        role = "system" if m.role == "developer" else m.role
        text = m.text()
        if m.tool_calls:
            calls = [
                f'{CALL_OPEN}{{"name":{json.dumps(c.function.name)},"arguments":{c.function.arguments}}}{CALL_CLOSE}'
                for c in m.tool_calls
            ]
            text = (text + "\n" if text else "") + "\n".join(calls)
        if out and role == "system" and out[-1]["role"] == "system" and len(out) == 1 and tools:
            out[-1] = {"role": "system", "content": text + "\n\n" + out[-1]["content"]}
            continue
        out.append({"role": role, "content": text})
    return out


def tool_call_schema(tools: Sequence[Tool]) -> dict[str, Any]:
    """The JSON Schema of one call's object: a tool's name with arguments valid for it.

    Parameters
    ----------
    tools
        The tools a call may name (at least one).

    Returns
    -------
    dict
    """
    branches = []
    for t in tools:
        params = t.function.parameters
        if params is None or params == {}:
            params = {"type": "object"}
        branches.append(
            {
                "type": "object",
                "properties": {"name": {"const": t.function.name}, "arguments": params},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def tool_grammar(
    tools: Sequence[Tool],
    *,
    auto: bool,
    parallel: bool,
    strict: bool,
    closed: bool,
    limits: Limits,
) -> tuple[Grammar, tuple[str, ...]]:
    """The grammar of the output: tool calls (or, with ``auto``, text instead).

    Parameters
    ----------
    tools
        The tools a call may name.
    auto
        Also allow text whose first character is not ``<``, or nothing.
    parallel
        Allow several calls, separated by line feeds.
    strict
        Refuse argument schemas that cannot be enforced exactly.
    closed
        Objects whose schema is silent about ``additionalProperties`` take
        only the keys it names.
    limits
        Bounds for the schema's lowering.

    Returns
    -------
    (Grammar, tuple of str)
        The grammar, and what of the argument schemas is not enforced.

    Raises
    ------
    SchemaError
        For an invalid argument schema (pointer under ``/anyOf/i/properties/arguments``).
    """
    from ..grammar.json_schema import schema_to_grammar

    inner, unenforced = schema_to_grammar(
        tool_call_schema(tools), whitespace="compact", strict=strict, closed_objects=closed, limits=limits
    )
    rules = dict(inner.rules)
    names = {k: _RULE_PREFIX + k for k in ("call", "root")}
    while any(n in rules for n in names.values()):
        names = {k: "_" + v for k, v in names.items()}
    call = ir.concat(ir.literal(CALL_OPEN), ir.RuleRef(inner.root), ir.literal(CALL_CLOSE))
    rules[names["call"]] = call
    ref = ir.RuleRef(names["call"])
    calls = ir.concat(ref, ir.star(ir.concat(ir.literal("\n"), ref))) if parallel else ref
    if auto:
        any_char = ir.char_class([(0, 0x10FFFF)])
        first = ir.char_class([(ord("<"), ord("<"))], negate=True)
        text = ir.optional(ir.concat(first, ir.star(any_char)))
        calls = ir.alt(calls, text)
    rules[names["root"]] = calls
    return Grammar(rules, names["root"]), unenforced


@dataclass
class _Call:
    id: str
    name: str
    arguments: str = ""


@dataclass
class ToolCallReader:
    """Reads tool calls out of generated text, whole or piece by piece.

    :meth:`feed` takes the text as it is generated and returns what can be
    told so far: ``("content", text)``, ``("call", index, id, name)`` when a
    call's name is known, ``("arguments", index, text)`` for a piece of its
    arguments. Fed the whole output at once it returns the same events,
    merged, so streamed and whole responses agree by construction.

    Parameters
    ----------
    auto
        The output may be text instead of calls (decided by its first character).
    """

    auto: bool
    calls: list[_Call] = field(default_factory=list)
    content: str = ""
    _mode: str = "start"
    _buffer: str = ""
    _depth: int = 0
    _in_string: bool = False
    _escape: bool = False

    def feed(self, text: str) -> list[tuple[Any, ...]]:
        """Read more output; returns the events it completes (see the class)."""
        events: list[tuple[Any, ...]] = []
        self._buffer += text
        while self._buffer:
            if self._mode == "start":
                if self.auto and not self._buffer.startswith("<"):
                    self._mode = "content"
                    continue
                self._mode = "calls"
            elif self._mode == "content":
                self.content += self._buffer
                events.append(("content", self._buffer))
                self._buffer = ""
            elif self._mode == "calls":
                if not self._read_header(events):
                    break
            elif self._mode == "arguments":
                self._read_arguments(events)
            elif self._mode == "close":
                end = self._buffer.find(CALL_CLOSE)
                if end < 0:
                    break
                self._buffer = self._buffer[end + len(CALL_CLOSE) :]
                self._mode = "calls"
        return events

    def _read_header(self, events: list[tuple[Any, ...]]) -> bool:
        start = self._buffer.find(CALL_OPEN)
        if start < 0:
            if self._buffer.strip():
                self._buffer = self._buffer[-len(CALL_OPEN) :]
            return False
        rest = self._buffer[start + len(CALL_OPEN) :]
        key = rest.find('"arguments"')
        if key < 0:
            return False
        colon = rest.find(":", key + len('"arguments"'))
        if colon < 0:
            return False
        try:
            name = json.loads(rest[:key].strip().lstrip("{").rstrip().rstrip(",").split(":", 1)[1])
        except (ValueError, IndexError):
            name = ""
        call = _Call(new_call_id(), str(name))
        self.calls.append(call)
        events.append(("call", len(self.calls) - 1, call.id, call.name))
        self._buffer = rest[colon + 1 :].lstrip()
        self._mode = "arguments"
        self._depth, self._in_string, self._escape = 0, False, False
        return True

    def _read_arguments(self, events: list[tuple[Any, ...]]) -> None:
        call = self.calls[-1]
        end = None
        for i, ch in enumerate(self._buffer):
            if self._in_string:
                if self._escape:
                    self._escape = False
                elif ch == "\\":
                    self._escape = True
                elif ch == '"':
                    self._in_string = False
            elif ch == '"':
                self._in_string = True
            elif ch in "{[":
                self._depth += 1
            elif ch in "}]":
                self._depth -= 1
                if self._depth == 0:
                    end = i + 1
                    break
        piece = self._buffer if end is None else self._buffer[:end]
        if piece:
            call.arguments += piece
            events.append(("arguments", len(self.calls) - 1, piece))
        self._buffer = "" if end is None else self._buffer[end:]
        if end is not None:
            self._mode = "close"
