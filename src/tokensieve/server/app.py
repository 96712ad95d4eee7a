"""The FastAPI application: routes, authentication, generation and streaming.

:func:`create_app` builds the application around a loaded model and a batch
engine. Requests are read into pydantic models, their constraint compiled in
a worker (:mod:`tokensieve.server.constraints`), their samples submitted to
the engine, and the engine's outputs awaited without blocking the event loop,
either collected into one response or streamed as server-sent events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.sse import EventSourceResponse, format_sse_event
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from ..errors import TokensieveError
from ..runtime.engine import Engine, QueueFull, SamplingParams
from .choices import ChoiceState
from .config import ServerConfig
from .constraints import Compiled, ConstraintCache, constraint_spec, tool_mode
from .errors import APIError, BodyLimit, error_body, install_error_handlers
from .metrics import ServerMetrics
from .protocol import (
    AssistantMessage,
    ChatChoice,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChoiceLogprobs,
    ChunkChoice,
    ChunkDelta,
    Completion,
    CompletionChoice,
    CompletionLogprobs,
    CompletionRequest,
    ModelCard,
    ModelList,
    ToolCall,
    ToolCallDelta,
    ToolCallFunction,
    Usage,
)
from .tools import chat_messages

__all__ = ["ServerState", "create_app"]

logger = logging.getLogger("tokensieve")

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
class _Job:
    """A request after validation: its prompt, samples and constraint."""

    prompt_ids: list[int]
    params: list[SamplingParams]
    compiled: Compiled | None
    tools: str | None
    logprobs: bool


def _model_id(loaded: Any, config: ServerConfig) -> str:
    if config.served_model_name:
        return config.served_model_name
    source = getattr(loaded, "source", None)
    name = getattr(source, "name", None) or "model"
    return str(name).removesuffix(".gguf").split(".Q")[0]


def create_app(config: ServerConfig, *, loaded: Any = None, engine: Any = None) -> FastAPI:
    """The application, serving ``loaded`` through ``engine``.

    Parameters
    ----------
    config
        Options and limits.
    loaded
        A :class:`~tokensieve.runtime.LoadedModel` (default: loaded from
        ``config.model`` when the application starts).
    engine
        A batch engine over ``loaded`` (default: made at start-up with
        ``config.max_batch``, ``max_queue`` and ``threads``; shut down, with
        the requests in flight drained, when the application stops).

    Returns
    -------
    fastapi.FastAPI
    """
    holder: dict[str, ServerState] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        model = loaded
        if model is None:
            from ..runtime import load_model

            model = await run_in_threadpool(
                load_model, config.model, cache_dir=config.cache_dir, progress=True
            )
        own_engine = engine is None
        options: dict[str, Any] = {} if config.weights is None else {"weights": config.weights}
        eng = engine or Engine(
            model, max_batch=config.max_batch, max_queue=config.max_queue, threads=config.threads, **options
        )
        metrics = ServerMetrics(eng.stats)

        def on_compiled(kind: str, seconds: float) -> None:
            metrics.compile_seconds.labels(kind).observe(seconds)

        from ..compile import GrammarCompiler
        from ..runtime import cache_root

        compiler = GrammarCompiler(
            model.tokenizer_info, cache_dir=cache_root(config.cache_dir) / "grammars", max_cached_grammars=512
        )
        cache = ConstraintCache(
            compiler,
            workers=config.compile_workers,
            timeout_s=config.compile_timeout_s,
            on_compiled=on_compiled,
        )
        context = int(getattr(eng, "max_len", 0) or 0) or int(
            getattr(getattr(model.model, "config", None), "max_position_embeddings", 0) or 0
        )
        holder["state"] = ServerState(
            config, model, eng, cache, metrics, _model_id(model, config), int(time.time()), context
        )
        app.state.server = holder["state"]
        logger.info("serving %s", holder["state"].model_id)
        try:
            yield
        finally:
            cache.shutdown()
            if own_engine:
                await run_in_threadpool(eng.shutdown, True)

    app = FastAPI(title="tokensieve", lifespan=lifespan)
    install_error_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)

    @app.middleware("http")
    async def authenticate(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if config.api_key is not None and request.url.path.startswith("/v1/"):
            header = request.headers.get("authorization", "")
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not secrets.compare_digest(token.strip(), config.api_key):
                return APIError(401, "missing or wrong API key", code="invalid_api_key").response()
        response = await call_next(request)
        state = holder.get("state")
        if state is not None and request.url.path.startswith("/v1/"):
            state.metrics.requests.labels(request.url.path, str(response.status_code)).inc()
        return response

    def state() -> ServerState:
        return holder["state"]

    @app.get("/health")
    async def health() -> dict[str, Any]:
        s = state()
        return {"status": "ok", "model": s.model_id, "engine": s.engine.stats()}

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(state().metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/models")
    async def models() -> ModelList:
        s = state()
        return ModelList(data=[ModelCard(id=s.model_id, created=s.created)])

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(req: ChatCompletionRequest, request: Request) -> Response:
        s = state()
        _check_model(s, req.model)
        mode, tools = tool_mode(req)
        for m in req.messages:
            if isinstance(m.content, list) and any(p.type != "text" for p in m.content):
                raise APIError(
                    400, "only text content parts are supported", param="messages", code="invalid_request"
                )
        messages = chat_messages(req.messages, tools if mode != "none" else None)
        prompt = await run_in_threadpool(_chat_prompt, s.loaded.tokenizer, messages)
        top = req.top_logprobs or 0
        job = await _prepare(s, req, prompt, req.max_completion_tokens or req.max_tokens, req.logprobs, top)
        job.tools = None if mode == "none" else mode
        return await _respond(s, req, request, job, chat=True)

    @app.post("/v1/completions", response_model=None)
    async def completions(req: CompletionRequest, request: Request) -> Response:
        s = state()
        _check_model(s, req.model)
        if isinstance(req.prompt, list) and len(req.prompt) != 1:
            raise APIError(400, "prompt must be one string", param="prompt", code="invalid_request")
        text = req.prompt if isinstance(req.prompt, str) else req.prompt[0]
        prompt = await run_in_threadpool(_plain_prompt, s.loaded.tokenizer, text)
        top = req.logprobs or 0
        job = await _prepare(s, req, prompt, req.max_tokens, req.logprobs is not None, top)
        return await _respond(s, req, request, job, chat=False)

    return app


def _chat_prompt(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    from ..runtime.generate import build_prompt_ids

    return build_prompt_ids(tokenizer, messages)


def _plain_prompt(tokenizer: Any, text: str) -> list[int]:
    from ..runtime.generate import build_prompt_ids

    return build_prompt_ids(tokenizer, text, chat=False)


def _check_model(s: ServerState, model: str) -> None:
    if model != s.model_id:
        raise APIError(
            404,
            f"the model {model!r} does not exist; this server serves {s.model_id!r}",
            param="model",
            code="model_not_found",
        )


async def _prepare(
    s: ServerState,
    req: ChatCompletionRequest | CompletionRequest,
    prompt: list[int],
    max_tokens: int | None,
    logprobs: bool,
    top_logprobs: int,
) -> _Job:
    cfg = s.config
    if req.n > cfg.max_n:
        raise APIError(
            400, f"n={req.n} is more than the limit max_n={cfg.max_n}", param="n", code="n_too_large"
        )
    budget = max_tokens or cfg.default_max_tokens
    if budget > cfg.max_tokens_limit:
        raise APIError(
            400,
            f"max_tokens={budget} is more than the limit max_tokens_limit={cfg.max_tokens_limit}",
            param="max_tokens",
            code="max_tokens_too_large",
        )
    if s.context_length and len(prompt) + budget > s.context_length:
        if max_tokens is not None or len(prompt) >= s.context_length:
            raise APIError(
                400,
                f"the prompt's {len(prompt)} tokens and max_tokens={budget} exceed the model's context of "
                f"{s.context_length} tokens",
                param="max_tokens",
                code="context_length_exceeded",
            )
        budget = s.context_length - len(prompt)
    spec = constraint_spec(
        req,
        closed_objects=cfg.closed_objects,
        max_schema_bytes=cfg.max_schema_bytes,
        limits=s.constraints.compiler.limits,
    )
    compiled = None
    if spec is not None:
        compiled = await s.constraints.get(spec)
        (s.metrics.cache_hits if compiled.cached else s.metrics.cache_misses).inc()
        s.metrics.constrained.labels(spec.kind).inc()
    temperature = 1.0 if req.temperature is None else req.temperature
    top_p = 1.0 if req.top_p is None else req.top_p
    try:
        params = _sampling(req, temperature, top_p, budget, logprobs, top_logprobs)
    except ValueError as exc:
        raise APIError(400, f"invalid sampling parameters: {exc}", code="invalid_request") from None
    return _Job(prompt, params, compiled, None, logprobs)


def _sampling(
    req: ChatCompletionRequest | CompletionRequest,
    temperature: float,
    top_p: float,
    budget: int,
    logprobs: bool,
    top_logprobs: int,
) -> list[SamplingParams]:
    return [
        SamplingParams(
            temperature=temperature,
            top_p=top_p,
            max_tokens=budget,
            seed=None if req.seed is None else req.seed + i,
            stop=req.stop_list(),
            logprobs=logprobs,
            top_logprobs=top_logprobs,
        )
        for i in range(req.n)
    ]


def _submit(s: ServerState, job: _Job) -> list[Any]:
    handles: list[Any] = []
    grammar = None if job.compiled is None else job.compiled.grammar
    try:
        for params in job.params:
            handles.append(s.engine.submit(job.prompt_ids, params, grammar))
    except (TokensieveError, ValueError) as exc:
        for h in handles:
            h.cancel()
        if isinstance(exc, QueueFull):
            raise APIError(
                429,
                "the server is busy: its request queue is full; retry later",
                code="queue_full",
                headers={"Retry-After": str(s.config.retry_after_s)},
            ) from None
        param = "max_tokens" if getattr(exc, "limit", None) == "max_tokens" else None
        raise APIError(400, str(exc), param=param, code="invalid_request") from None
    return handles


def _headers(job: _Job) -> dict[str, str]:
    if job.compiled is None or not job.compiled.unenforced:
        return {}
    return {UNENFORCED_HEADER: json.dumps(list(job.compiled.unenforced))}


async def _merged(handles: list[Any]) -> AsyncIterator[tuple[int, Any]]:
    """(sample index, step) from every handle as they come; (index, None) when one ends."""
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


async def _respond(
    s: ServerState, req: ChatCompletionRequest | CompletionRequest, request: Request, job: _Job, *, chat: bool
) -> Response:
    handles = _submit(s, job)
    vocab = s.loaded.tokenizer_info.decoded_vocab
    states = [
        ChoiceState(i, req.stop_list(), job.tools, vocab, p.max_tokens) for i, p in enumerate(job.params)
    ]
    rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
    started = time.perf_counter()
    if req.stream:
        stream = _stream_chat if chat else _stream_completion
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        events = stream(s, rid, handles, states, job, include_usage, started)
        return EventSourceResponse(events, headers=_headers(job))

    async def watch() -> None:
        while not await request.is_disconnected():
            await asyncio.sleep(0.25)
        for h in handles:
            h.cancel()

    watcher = asyncio.create_task(watch())
    first = True
    try:
        async for i, step in _merged(handles):
            if step is None:
                continue
            if first:
                s.metrics.time_to_first_token.observe(time.perf_counter() - started)
                first = False
            states[i].add(step, with_logprobs=job.logprobs)
            if states[i].stopped:
                handles[i].cancel()
    finally:
        watcher.cancel()
    _raise_errors(handles)
    usage = _usage(s, job, states)
    extra = _extra(job)
    if chat:
        choices = [_chat_choice(st, h, job) for st, h in zip(states, handles, strict=False)]
        body: Any = ChatCompletion(
            id=rid, created=int(time.time()), model=s.model_id, choices=choices, usage=usage, **extra
        )
    else:
        body = Completion(
            id=rid,
            created=int(time.time()),
            model=s.model_id,
            choices=[_completion_choice(st, h, job) for st, h in zip(states, handles, strict=False)],
            usage=usage,
            **extra,
        )
    return Response(
        body.model_dump_json(exclude_none=True), media_type="application/json", headers=_headers(job)
    )


def _raise_errors(handles: list[Any]) -> None:
    for h in handles:
        if h.finish_reason == "error":
            err = h.error
            if err is not None and hasattr(err, "limit"):
                raise APIError(400, f"generation failed: {err}", param="max_tokens", code="limit_exceeded")
            raise APIError(500, f"generation failed: {err}", code="generation_error")


def _usage(s: ServerState, job: _Job, states: list[ChoiceState]) -> Usage:
    completion = sum(st.num_tokens for st in states)
    s.metrics.prompt_tokens.inc(len(job.prompt_ids))
    s.metrics.completion_tokens.inc(completion)
    prompt = len(job.prompt_ids)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


def _extra(job: _Job) -> dict[str, Any]:
    if job.compiled is None or not job.compiled.unenforced:
        return {}
    return {"unenforced": list(job.compiled.unenforced)}


def _choice_extra(st: ChoiceState, job: _Job) -> dict[str, Any]:
    """``complete``: for a constrained sample, whether its tokens are a whole member of the language."""
    if job.compiled is None:
        return {}
    return {"complete": st.complete(job.compiled.grammar)}


def _chat_choice(st: ChoiceState, handle: Any, job: _Job) -> ChatChoice:
    st.read(st.pending(final=True))
    calls = [ToolCall(id=i, function=ToolCallFunction(name=n, arguments=a)) for i, n, a in st.tool_calls]
    content = st.reader.content if st.reader is not None else st.text
    message = AssistantMessage(content=None if calls and not content else content, tool_calls=calls or None)
    return ChatChoice(
        index=st.index,
        message=message,
        finish_reason=st.finish_reason(handle.finish_reason),
        logprobs=ChoiceLogprobs(content=st.logprobs) if st.logprobs else None,
        **_choice_extra(st, job),
    )


def _completion_choice(st: ChoiceState, handle: Any, job: _Job) -> CompletionChoice:
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
        **_choice_extra(st, job),
    )


def _sse(model: Any) -> bytes:
    return format_sse_event(data_str=model.model_dump_json(exclude_none=True))


def _sse_error(exc: APIError) -> bytes:
    return format_sse_event(
        data_str=json.dumps(error_body(exc.status, exc.message, param=exc.param, code=exc.code))
    )


async def _stream_chat(
    s: ServerState,
    rid: str,
    handles: list[Any],
    states: list[ChoiceState],
    job: _Job,
    include_usage: bool,
    started: float,
) -> AsyncIterator[bytes]:
    created = int(time.time())

    def chunk(
        i: int,
        delta: ChunkDelta,
        reason: str | None = None,
        logprobs: Any = None,
        extra: dict[str, Any] | None = None,
    ) -> bytes:
        choice = ChunkChoice(index=i, delta=delta, finish_reason=reason, logprobs=logprobs, **(extra or {}))
        return _sse(
            ChatCompletionChunk(id=rid, created=created, model=s.model_id, choices=[choice], **_extra(job))
        )

    def deltas(st: ChoiceState, piece: str) -> list[ChunkDelta]:
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

    for st in states:
        yield chunk(st.index, ChunkDelta(role="assistant", content=""))
    first = True
    async for i, step in _merged(handles):
        st = states[i]
        if step is not None:
            if first:
                s.metrics.time_to_first_token.observe(time.perf_counter() - started)
                first = False
            before = len(st.logprobs)
            st.add(step, with_logprobs=job.logprobs)
            logprobs = ChoiceLogprobs(content=st.logprobs[before:]) if len(st.logprobs) > before else None
            pieces = deltas(st, st.pending(final=False))
            for k, delta in enumerate(pieces):
                yield chunk(i, delta, logprobs=logprobs if k == 0 else None)
            if not pieces and logprobs is not None:
                yield chunk(i, ChunkDelta(), logprobs=logprobs)
            if st.stopped:
                handles[i].cancel()
            continue
        h = handles[i]
        if h.finish_reason == "error":
            try:
                _raise_errors([h])
            except APIError as exc:
                yield _sse_error(exc)
            continue
        for delta in deltas(st, st.pending(final=True)):
            yield chunk(i, delta)
        reason = st.finish_reason(h.finish_reason)
        yield chunk(i, ChunkDelta(), reason, extra=_choice_extra(st, job))
    if include_usage:
        usage = _usage(s, job, states)
        yield _sse(ChatCompletionChunk(id=rid, created=created, model=s.model_id, choices=[], usage=usage))
    else:
        _usage(s, job, states)
    yield format_sse_event(data_str="[DONE]")


async def _stream_completion(
    s: ServerState,
    rid: str,
    handles: list[Any],
    states: list[ChoiceState],
    job: _Job,
    include_usage: bool,
    started: float,
) -> AsyncIterator[bytes]:
    created = int(time.time())

    def event(choice: CompletionChoice, usage: Usage | None = None) -> bytes:
        return _sse(
            Completion(
                id=rid, created=created, model=s.model_id, choices=[choice], usage=usage, **_extra(job)
            )
        )

    first = True
    async for i, step in _merged(handles):
        st = states[i]
        if step is not None:
            if first:
                s.metrics.time_to_first_token.observe(time.perf_counter() - started)
                first = False
            st.add(step, with_logprobs=False)
            piece = st.pending(final=False)
            if piece:
                yield event(CompletionChoice(index=i, text=piece))
            if st.stopped:
                handles[i].cancel()
            continue
        h = handles[i]
        if h.finish_reason == "error":
            try:
                _raise_errors([h])
            except APIError as exc:
                yield _sse_error(exc)
            continue
        reason = st.finish_reason(h.finish_reason)
        yield event(
            CompletionChoice(
                index=i, text=st.pending(final=True), finish_reason=reason, **_choice_extra(st, job)
            )
        )
    usage = _usage(s, job, states)
    if include_usage:
        yield _sse(Completion(id=rid, created=created, model=s.model_id, choices=[], usage=usage))
    yield format_sse_event(data_str="[DONE]")
