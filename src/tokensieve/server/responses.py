"""Responses from the engine's outputs: whole bodies, or server-sent events.

A :class:`Decoding` holds one request's samples in the engine. Its
:meth:`~Decoding.steps` merges the samples' outputs as they come (never
blocking the event loop) into their :class:`ChoiceState`; :meth:`~Decoding.body`
builds the whole response, and :func:`stream_chat` and :func:`stream_completion`
the events of a streamed one (``text/event-stream``, encoded with FastAPI's
``format_sse_event``, ending with ``data: [DONE]``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi.sse import format_sse_event

from ..errors import LimitExceeded
from .choices import ChoiceState
from .config import ServerConfig
from .constraints import Compiled, ConstraintCache
from .errors import APIError, error_body
from .metrics import ServerMetrics
from .protocol import (
    AssistantMessage,
    ChatChoice,
    ChatCompletion,
    ChatCompletionChunk,
    ChoiceLogprobs,
    ChunkChoice,
    ChunkDelta,
    Completion,
    CompletionChoice,
    CompletionLogprobs,
    ToolCall,
    ToolCallDelta,
    ToolCallFunction,
    Usage,
)

__all__ = ["UNENFORCED_HEADER", "Decoding", "Job", "ServerState", "stream_chat", "stream_completion"]

#: Response header listing what of a lenient constraint is not enforced (JSON list).
UNENFORCED_HEADER = "X-Tokensieve-Unenforced"


@dataclass
class ServerState:
    """What the routes share: the model, the engine, the constraint cache, the metrics."""

    config: ServerConfig
    loaded: Any
    engine: Any
    constraints: ConstraintCache
    metrics: ServerMetrics
    model_id: str
    created: int
    context_length: int


@dataclass
class Job:
    """A request after validation: its prompt, its samples' parameters and its constraint."""

    prompt_ids: list[int]
    params: list[Any]
    compiled: Compiled | None
    tools: str | None
    logprobs: bool

    def headers(self) -> dict[str, str]:
        """The response headers (:data:`UNENFORCED_HEADER` for a lenient constraint)."""
        if self.compiled is None or not self.compiled.unenforced:
            return {}
        return {UNENFORCED_HEADER: json.dumps(list(self.compiled.unenforced))}

    def extra(self) -> dict[str, Any]:
        """Extra top-level response fields: ``unenforced``, where something is."""
        if self.compiled is None or not self.compiled.unenforced:
            return {}
        return {"unenforced": list(self.compiled.unenforced)}

    def choice_extra(self, st: ChoiceState) -> dict[str, Any]:
        """``complete``: for a constrained sample, whether its tokens are a whole member of the language."""
        if self.compiled is None:
            return {}
        return {"complete": st.complete(self.compiled.grammar)}


async def merged(handles: list[Any]) -> AsyncIterator[tuple[int, Any]]:
    """(sample index, output) from every handle as they come; (index, None) when one ends.

    Leaving early (the client went away) cancels every handle: the engine
    frees their slots at its next step.
    """
    queue: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()

    async def pump(i: int, h: Any) -> None:
        try:
            async for step in h:
                await queue.put((i, step))
        finally:
            await queue.put((i, None))

    tasks = [asyncio.create_task(pump(i, h)) for i, h in enumerate(handles)]
    try:
        left = len(handles)
        while left:
            item = await queue.get()
            if item[1] is None:
                left -= 1
            yield item
    finally:
        for t in tasks:
            t.cancel()
        for h in handles:
            h.cancel()


def _failure(handle: Any) -> APIError | None:
    if handle.finish_reason != "error":
        return None
    err = handle.error
    if isinstance(err, LimitExceeded):
        return APIError(400, f"generation failed: {err}", param="max_tokens", code="limit_exceeded")
    return APIError(500, f"generation failed: {err}", code="generation_error")


@dataclass
class Decoding:
    """One request's samples in the engine, read into their :class:`ChoiceState`."""

    state: ServerState
    job: Job
    handles: list[Any]
    choices: list[ChoiceState]
    rid: str
    started: float = field(default_factory=time.perf_counter)
    created: int = field(default_factory=lambda: int(time.time()))

    async def steps(self) -> AsyncIterator[tuple[int, bool]]:
        """(sample, True) after each output a sample took in; (sample, False) when it ends."""
        first = True
        async for i, step in merged(self.handles):
            if step is None:
                yield i, False
                continue
            if first:
                self.state.metrics.time_to_first_token.observe(time.perf_counter() - self.started)
                first = False
            st = self.choices[i]
            st.add(step, with_logprobs=self.job.logprobs)
            if st.stopped:
                self.handles[i].cancel()
            yield i, True

    def usage(self) -> Usage:
        """Token counts (recorded in the metrics once per request)."""
        prompt = len(self.job.prompt_ids)
        completion = sum(st.num_tokens for st in self.choices)
        self.state.metrics.prompt_tokens.inc(prompt)
        self.state.metrics.completion_tokens.inc(completion)
        return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)

    def body(self, chat: bool) -> ChatCompletion | Completion:
        """The whole response, once every sample has ended.

        Raises
        ------
        APIError
            When a sample failed.
        """
        for h in self.handles:
            failure = _failure(h)
            if failure is not None:
                raise failure
        pairs = list(zip(self.choices, self.handles, strict=True))
        s = self.state
        if chat:
            chats = [self._chat_choice(st, h) for st, h in pairs]
            return ChatCompletion(
                id=self.rid,
                created=self.created,
                model=s.model_id,
                choices=chats,
                usage=self.usage(),
                **self.job.extra(),
            )
        texts = [self._completion_choice(st, h) for st, h in pairs]
        return Completion(
            id=self.rid,
            created=self.created,
            model=s.model_id,
            choices=texts,
            usage=self.usage(),
            **self.job.extra(),
        )

    def _chat_choice(self, st: ChoiceState, handle: Any) -> ChatChoice:
        st.read(st.pending(final=True))
        calls = [ToolCall(id=i, function=ToolCallFunction(name=n, arguments=a)) for i, n, a in st.tool_calls]
        content = st.reader.content if st.reader is not None else st.text
        message = AssistantMessage(
            content=None if calls and not content else content, tool_calls=calls or None
        )
        return ChatChoice(
            index=st.index,
            message=message,
            finish_reason=st.finish_reason(handle.finish_reason),
            logprobs=ChoiceLogprobs(content=st.logprobs) if st.logprobs else None,
            **self.job.choice_extra(st),
        )

    def _completion_choice(self, st: ChoiceState, handle: Any) -> CompletionChoice:
        st.pending(final=True)
        logprobs = None
        if st.logprobs:
            offsets, at = [], 0
            for lp in st.logprobs:
                offsets.append(at)
                at += len(lp.token)
            logprobs = CompletionLogprobs(
                tokens=[lp.token for lp in st.logprobs],
                token_logprobs=[lp.logprob for lp in st.logprobs],
                top_logprobs=[{t.token: t.logprob for t in lp.top_logprobs} for lp in st.logprobs],
                text_offset=offsets,
            )
        return CompletionChoice(
            index=st.index,
            text=st.text,
            finish_reason=st.finish_reason(handle.finish_reason),
            logprobs=logprobs,
            **self.job.choice_extra(st),
        )


def _sse(model: Any) -> bytes:
    return format_sse_event(data_str=model.model_dump_json(exclude_none=True))


def _sse_error(exc: APIError) -> bytes:
    body = error_body(exc.status, exc.message, param=exc.param, code=exc.code)
    return format_sse_event(data_str=json.dumps(body))


def _deltas(st: ChoiceState, piece: str) -> list[ChunkDelta]:
    out = []
    for event in st.read(piece):
        if event[0] == "content":
            out.append(ChunkDelta(content=event[1]))
        elif event[0] == "call":
            call = ToolCallDelta(
                index=event[1], id=event[2], type="function", function={"name": event[3], "arguments": ""}
            )
            out.append(ChunkDelta(tool_calls=[call]))
        else:
            out.append(
                ChunkDelta(tool_calls=[ToolCallDelta(index=event[1], function={"arguments": event[2]})])
            )
    return out


async def stream_chat(d: Decoding, include_usage: bool) -> AsyncIterator[bytes]:
    """The events of a streamed chat response."""
    s = d.state

    def chunk(i: int, delta: ChunkDelta, reason: str | None = None, **extra: Any) -> bytes:
        choice = ChunkChoice(index=i, delta=delta, finish_reason=reason, **extra)
        return _sse(
            ChatCompletionChunk(
                id=d.rid, created=d.created, model=s.model_id, choices=[choice], **d.job.extra()
            )
        )

    for st in d.choices:
        yield chunk(st.index, ChunkDelta(role="assistant", content=""))
    sent = [0] * len(d.choices)  # logprobs sent per sample
    async for i, stepped in d.steps():
        st, h = d.choices[i], d.handles[i]
        if stepped:
            fresh = st.logprobs[sent[i] :]
            sent[i] = len(st.logprobs)
            logprobs = ChoiceLogprobs(content=fresh) if fresh else None
            deltas = _deltas(st, st.pending(final=False)) or ([ChunkDelta()] if logprobs else [])
            for k, delta in enumerate(deltas):
                yield chunk(i, delta, logprobs=logprobs if k == 0 else None)
            continue
        failure = _failure(h)
        if failure is not None:
            yield _sse_error(failure)
            continue
        for delta in _deltas(st, st.pending(final=True)):
            yield chunk(i, delta)
        yield chunk(i, ChunkDelta(), st.finish_reason(h.finish_reason), **d.job.choice_extra(st))
    usage = d.usage()
    if include_usage:
        yield _sse(
            ChatCompletionChunk(id=d.rid, created=d.created, model=s.model_id, choices=[], usage=usage)
        )
    yield format_sse_event(data_str="[DONE]")


async def stream_completion(d: Decoding, include_usage: bool) -> AsyncIterator[bytes]:
    """The events of a streamed completion response."""
    s = d.state

    def event(choice: CompletionChoice) -> bytes:
        return _sse(
            Completion(id=d.rid, created=d.created, model=s.model_id, choices=[choice], **d.job.extra())
        )

    async for i, stepped in d.steps():
        st, h = d.choices[i], d.handles[i]
        if stepped:
            piece = st.pending(final=False)
            if piece:
                yield event(CompletionChoice(index=i, text=piece))
            continue
        failure = _failure(h)
        if failure is not None:
            yield _sse_error(failure)
            continue
        reason = st.finish_reason(h.finish_reason)
        yield event(
            CompletionChoice(
                index=i, text=st.pending(final=True), finish_reason=reason, **d.job.choice_extra(st)
            )
        )
    usage = d.usage()
    if include_usage:
        yield _sse(Completion(id=d.rid, created=d.created, model=s.model_id, choices=[], usage=usage))
    yield format_sse_event(data_str="[DONE]")
