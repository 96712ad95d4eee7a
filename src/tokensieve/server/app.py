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
import logging
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.sse import EventSourceResponse
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from ..errors import TokensieveError
from ..runtime.engine import Engine, QueueFull, SamplingParams
from .choices import ChoiceState
from .config import ServerConfig
from .constraints import ConstraintCache, constraint_spec, tool_mode
from .errors import APIError, BodyLimit, install_error_handlers
from .metrics import ServerMetrics
from .protocol import (
    ChatCompletionRequest,
    CompletionRequest,
    ErrorResponse,
    ModelCard,
    ModelList,
)
from .responses import Decoding, Job, ServerState, stream_chat, stream_completion
from .tools import chat_messages

__all__ = ["ServerState", "create_app"]

logger = logging.getLogger("tokensieve")

# documented for the OpenAPI document: every failure is one of these, in OpenAI's shape
# (a "4XX" entry also stands in for FastAPI's own 422, which this server never sends)
_ERRORS: dict[int | str, dict[str, Any]] = {
    "4XX": {
        "model": ErrorResponse,
        "description": "the request is refused: 400 invalid, 401 no or wrong key, 404 unknown model or "
        "path, 413 body too large, 429 busy (with Retry-After)",
    },
    "5XX": {"model": ErrorResponse, "description": "an internal failure"},
}


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

        # the compiled constraints are kept by the ConstraintCache, within its memory bound
        compiler = GrammarCompiler(
            model.tokenizer_info, cache_dir=cache_root(config.cache_dir) / "grammars", cache_enabled=False
        )
        cache = ConstraintCache(
            compiler,
            workers=config.compile_workers,
            timeout_s=config.compile_timeout_s,
            on_compiled=on_compiled,
            processes=config.compile_processes,
            max_pending=config.max_compile_queue,
            max_bytes=config.constraint_cache_mib << 20,
            retry_after_s=config.retry_after_s,
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
        kept = {"compiling": s.constraints.pending, "memory_bytes": s.constraints.memory_bytes()}
        return {"status": "ok", "model": s.model_id, "engine": s.engine.stats(), "constraints": kept}

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(state().metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/models", responses=_ERRORS)
    async def models() -> ModelList:
        s = state()
        return ModelList(data=[ModelCard(id=s.model_id, created=s.created)])

    @app.post("/v1/chat/completions", response_model=None, responses=_ERRORS)
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

    @app.post("/v1/completions", response_model=None, responses=_ERRORS)
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

    try:
        return build_prompt_ids(tokenizer, messages)
    except Exception as exc:  # the chat template refused the conversation
        raise APIError(
            400, f"the chat template cannot render these messages: {exc}", param="messages"
        ) from None


def _plain_prompt(tokenizer: Any, text: str) -> list[int]:
    from ..runtime.generate import build_prompt_ids

    try:
        return build_prompt_ids(tokenizer, text, chat=False)
    except ValueError as exc:
        raise APIError(400, str(exc), param="prompt", code="invalid_request") from None


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
) -> Job:
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
    spec = constraint_spec(req, closed_objects=cfg.closed_objects, max_schema_bytes=cfg.max_schema_bytes)
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
    return Job(prompt, params, compiled, None, logprobs)


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


def _submit(s: ServerState, job: Job) -> list[Any]:
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


async def _respond(
    s: ServerState, req: ChatCompletionRequest | CompletionRequest, request: Request, job: Job, *, chat: bool
) -> Response:
    handles = _submit(s, job)
    vocab = s.loaded.tokenizer_info.decoded_vocab
    choices = [
        ChoiceState(i, req.stop_list(), job.tools, vocab, p.max_tokens) for i, p in enumerate(job.params)
    ]
    d = Decoding(s, job, handles, choices, ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex)
    if req.stream:
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        events = (stream_chat if chat else stream_completion)(d, include_usage)
        return EventSourceResponse(events, headers=job.headers())

    async def watch() -> None:
        while not await request.is_disconnected():
            await asyncio.sleep(0.25)
        for h in handles:
            h.cancel()

    watcher = asyncio.create_task(watch())
    try:
        async for _ in d.steps():
            pass
    finally:
        watcher.cancel()
    body = d.body(chat)
    return Response(
        body.model_dump_json(exclude_none=True), media_type="application/json", headers=job.headers()
    )
