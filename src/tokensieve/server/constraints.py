"""From a request's constraint fields to a compiled grammar, compiled off the event loop.

A request names at most one constraint: ``response_format`` (``json_schema``
or ``json_object``), vLLM's ``structured_outputs`` or one of the older
``guided_*`` fields, or tool calls (``tools`` with ``tool_choice`` other than
``"none"``). :func:`constraint_spec` reads it into a :class:`ConstraintSpec`
(kind, cache key, how to compile it); :class:`ConstraintCache` compiles specs
in worker threads, shares one compile between the requests that ask for the
same spec at once, keeps the results keyed by (constraint, options), and
bounds each compile's wait.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import logging
import multiprocessing
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import GrammarError, LimitExceeded, TokensieveError
from .errors import APIError, constraint_error
from .protocol import ChatCompletionRequest, CompletionRequest, ToolChoiceFunction
from .tools import tool_grammar

logger = logging.getLogger("tokensieve")

__all__ = ["Compiled", "ConstraintCache", "ConstraintSpec", "constraint_spec", "tool_mode"]

Compiler = Any  # tokensieve.compile.GrammarCompiler


@dataclass(frozen=True)
class Compiled:
    """A compiled constraint and what of it is not enforced."""

    grammar: Any
    unenforced: tuple[str, ...]
    cached: bool
    compile_seconds: float


@dataclass(frozen=True)
class ConstraintSpec:
    """A constraint read from a request, not yet compiled.

    Attributes
    ----------
    kind
        ``json_schema``, ``regex``, ``choice``, ``grammar`` or ``tools``.
    param
        The request field that holds it (named in errors).
    key
        Identifies (constraint, options) for the cache.
    build
        Compiles it with a :class:`~tokensieve.GrammarCompiler`; returns the
        compiled grammar and what is not enforced.
    """

    kind: str
    param: str
    key: str
    build: Callable[[Compiler], tuple[Any, tuple[str, ...]]]


def tool_mode(req: ChatCompletionRequest) -> tuple[str, list[Any]]:
    """How a chat request uses its tools: the mode and the tools a call may name.

    Returns
    -------
    (str, list)
        ``"none"`` (no constraint from tools), ``"auto"`` or ``"required"``
        (a named function is ``"required"`` over that one tool).

    Raises
    ------
    APIError
        For a ``tool_choice`` without tools, or naming a function not in them.
    """
    tools = req.tools or []
    choice = req.tool_choice
    if not tools:
        if choice not in (None, "none"):
            raise APIError(400, "tool_choice needs tools", param="tool_choice", code="invalid_request")
        return "none", []
    if choice is None:
        choice = "auto"
    if isinstance(choice, ToolChoiceFunction):
        named = [t for t in tools if t.function.name == choice.function.name]
        if not named:
            raise APIError(
                400,
                f"tool_choice names {choice.function.name!r}, which is not among the tools",
                param="tool_choice",
                code="invalid_request",
            )
        return "required", named
    return choice, list(tools)


def _schema_bytes(schema: Any) -> int:
    try:
        return len(json.dumps(schema, ensure_ascii=False)) if not isinstance(schema, str) else len(schema)
    except (TypeError, ValueError, RecursionError):
        raise APIError(400, "the schema is not JSON", code="invalid_schema") from None


def _json_spec(schema: Any, param: str, *, strict: bool, closed: bool, max_bytes: int) -> ConstraintSpec:
    size = _schema_bytes(schema)
    if size > max_bytes:
        raise APIError(
            400,
            f"the schema in {param} has {size} bytes, more than the limit max_schema_bytes={max_bytes}",
            param=param,
            code="schema_too_large",
        )
    key = json.dumps([schema, strict, closed], sort_keys=False, ensure_ascii=False, default=repr)
    return ConstraintSpec("json_schema", param, key, functools.partial(_build_json, schema, strict, closed))


# The builds are module-level functions bound with functools.partial, so that a
# spec can be sent to a compile process (see ConstraintCache).
def _build_json(schema: Any, strict: bool, closed: bool, compiler: Compiler) -> tuple[Any, tuple[str, ...]]:
    compiled = compiler.compile_json_schema(
        schema, whitespace="compact", strict=strict, closed_objects=closed
    )
    return compiled, tuple(compiled.unenforced)


def _build_grammar(text: str, syntax: str | None, compiler: Compiler) -> tuple[Any, tuple[str, ...]]:
    order = [syntax] if syntax else (["gbnf", "ebnf"] if "::=" in text else ["lark", "gbnf", "ebnf"])
    first: GrammarError | None = None
    for name in order:
        try:
            return compiler.compile_grammar(text, syntax=name), ()
        except GrammarError as exc:
            first = first or exc
    assert first is not None
    raise first


def _build_with(method: str, value: Any, compiler: Compiler) -> tuple[Any, tuple[str, ...]]:
    return getattr(compiler, method)(value), ()


def _build_tools(
    tools: list[Any], mode: str, parallel: bool, strict: bool, closed: bool, compiler: Compiler
) -> tuple[Any, tuple[str, ...]]:
    grammar, unenforced = tool_grammar(
        tools, auto=mode == "auto", parallel=parallel, strict=strict, closed=closed, limits=compiler.limits
    )
    return compiler.compile_grammar(grammar), unenforced


def _grammar_spec(text: str, syntax: str | None, param: str) -> ConstraintSpec:
    key = json.dumps(["grammar", syntax, text])
    return ConstraintSpec("grammar", param, key, functools.partial(_build_grammar, text, syntax))


def _extension_spec(
    req: ChatCompletionRequest | CompletionRequest, closed: bool, max_bytes: int
) -> list[ConstraintSpec]:
    found: list[ConstraintSpec] = []
    so = req.structured_outputs
    sources: list[tuple[str, str, Any]] = []
    if so is not None:
        for name in ("json", "regex", "choice", "grammar"):
            value = getattr(so, "json_" if name == "json" else name)
            if value is not None:
                sources.append((name, f"structured_outputs.{name}", value))
    for name in ("json", "regex", "choice", "grammar"):
        value = getattr(req, f"guided_{name}")
        if value is not None:
            sources.append((name, f"guided_{name}", value))
    syntax = req.grammar_syntax or (so.grammar_syntax if so is not None else None)
    for name, param, value in sources:
        if name == "json":
            schema = json.loads(value) if isinstance(value, str) and _is_json(value) else value
            found.append(_json_spec(schema, param, strict=False, closed=closed, max_bytes=max_bytes))
        elif name == "regex":
            found.append(
                ConstraintSpec(
                    "regex",
                    param,
                    json.dumps(["regex", value]),
                    functools.partial(_build_with, "compile_regex", value),
                )
            )
        elif name == "choice":
            if not value:
                raise APIError(400, f"{param} needs at least one choice", param=param, code="invalid_request")
            found.append(
                ConstraintSpec(
                    "choice",
                    param,
                    json.dumps(["choice", value]),
                    functools.partial(_build_with, "compile_choices", value),
                )
            )
        else:
            found.append(_grammar_spec(value, syntax, param))
    return found


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def constraint_spec(
    req: ChatCompletionRequest | CompletionRequest,
    *,
    closed_objects: bool,
    max_schema_bytes: int,
) -> ConstraintSpec | None:
    """The request's constraint, or ``None`` for free text.

    Parameters
    ----------
    req
        The request.
    closed_objects
        The server's default for objects whose schema is silent about
        ``additionalProperties`` (a request's ``closed_objects`` overrides it).
    max_schema_bytes
        Largest schema accepted, as JSON text.

    Raises
    ------
    APIError
        For two constraints at once, a ``json_schema`` format without its
        schema, a schema over the size limit, or bad ``tool_choice``.
    """
    closed = closed_objects if req.closed_objects is None else req.closed_objects
    found = _extension_spec(req, closed, max_schema_bytes)
    fmt = req.response_format
    if fmt is not None and fmt.type == "json_schema":
        if fmt.json_schema is None:
            raise APIError(
                400, "response_format of type json_schema needs json_schema", param="response_format"
            )
        found.append(
            _json_spec(
                fmt.json_schema.schema_,
                "response_format.json_schema.schema",
                strict=bool(fmt.json_schema.strict),
                closed=closed,
                max_bytes=max_schema_bytes,
            )
        )
    elif fmt is not None and fmt.type == "json_object":
        found.append(
            _json_spec(
                {"type": "object"}, "response_format", strict=False, closed=False, max_bytes=max_schema_bytes
            )
        )
    if isinstance(req, ChatCompletionRequest):
        mode, tools = tool_mode(req)
        if mode != "none":
            strict = all(t.function.strict is True for t in tools)
            parallel = req.parallel_tool_calls
            for t in tools:
                _schema_bytes_checked(t.function.parameters, max_schema_bytes)

            key = json.dumps(
                [[t.function.model_dump(exclude_none=True) for t in tools], mode, parallel, strict, closed],
                default=repr,
            )
            build = functools.partial(_build_tools, tools, mode, parallel, strict, closed)
            found.append(ConstraintSpec("tools", "tools", key, build))
    if len(found) > 1:
        names = ", ".join(s.param for s in found)
        raise APIError(400, f"a request takes one constraint, not several: {names}", param=found[1].param)
    return found[0] if found else None


def _schema_bytes_checked(schema: Any, max_bytes: int) -> None:
    if schema is not None and _schema_bytes(schema) > max_bytes:
        raise APIError(
            400,
            f"a tool's parameters schema is larger than the limit max_schema_bytes={max_bytes}",
            param="tools",
            code="schema_too_large",
        )


_worker_compiler: Any = None
_COMPILE_NICENESS = 10


def _init_worker(info: Any, cache_dir: Any, limits: Any) -> None:
    global _worker_compiler
    from ..compile import GrammarCompiler

    if hasattr(os, "nice"):  # where cores are few, the engine's steps come before compiles
        os.nice(_COMPILE_NICENESS)

    # it only fills the disk cache: nothing compiled is kept in its memory
    _worker_compiler = GrammarCompiler(
        info, limits=limits, cache_dir=cache_dir, precompute=False, cache_enabled=False
    )


Failure = tuple[type[TokensieveError], tuple[Any, ...], dict[str, Any]]


def _warm(build: Callable[[Compiler], Any] | None) -> Failure | None:
    """In a compile process: build the automaton, which lands in the disk cache.

    A constraint refused with a :class:`~tokensieve.TokensieveError` comes back
    as its class, arguments and attributes: the error classes take other
    arguments than those they pickle with, so an error raised across the
    process boundary would fail to unpickle and break the process pool. Other
    failures are left to the compile in the server's process.
    """
    if build is None:
        return None
    try:
        build(_worker_compiler)
    except TokensieveError as exc:
        return type(exc), exc.args, dict(vars(exc))
    except Exception:
        logger.debug("the compile process failed; the server's process compiles it", exc_info=True)
    return None


def _rebuilt(failure: Failure) -> TokensieveError:
    """The error a compile process reported, as raised there."""
    cls, args, attributes = failure
    exc = cls.__new__(cls)
    Exception.__init__(exc, *args)
    exc.__dict__.update(attributes)
    return exc


class ConstraintCache:
    """Compiles constraints in worker threads; one compile per (constraint, options).

    Parameters
    ----------
    compiler
        The :class:`~tokensieve.GrammarCompiler` of the served model.
    workers
        Compile threads (a compile never runs on the event loop).
    max_entries
        Compiled constraints kept (least recently used go first).
    max_bytes
        Memory the kept constraints may hold (their automata and the token
        masks computed so far, as ``memory_size_bytes`` counts them); past
        it, after a new compile, the least recently used go first
        (``None``: no bound).
    timeout_s
        Longest a request waits for its constraint's compile; past it the
        request fails with a 400 naming the limit (the compile goes on and
        its result is kept for the next request).
    on_compiled
        Called with (kind, seconds) after each compile that was not a cache hit.
    max_pending
        Most compiles running or waiting for a compile thread at once
        (``None``: no bound). A request whose constraint needs a new compile
        past it gets a 429 ``compile_queue_full`` with ``Retry-After``;
        requests for a constraint already compiled or compiling still join it.
    retry_after_s
        The ``Retry-After`` of that 429, in seconds.
    processes
        Compile processes (``0``: none). Where the compiler has a disk cache,
        a new constraint's automaton is built in one of them (lowering and
        automaton construction, most of a compile, then run beside the
        engine's thread instead of contending with it for the interpreter)
        and read back from the disk cache; only the token masks are computed
        in this process. A constraint refused there is refused with the same
        error without compiling it again here; other failures are left to the
        compile here, and a pool whose process died is started again.
    """

    def __init__(
        self,
        compiler: Compiler,
        *,
        workers: int = 2,
        max_entries: int = 512,
        timeout_s: float = 60.0,
        on_compiled: Callable[[str, float], None] | None = None,
        processes: int = 0,
        max_pending: int | None = None,
        retry_after_s: int = 1,
        max_bytes: int | None = None,
    ) -> None:
        self.compiler = compiler
        self.timeout_s = timeout_s
        self.max_entries = max_entries
        self.max_pending = max_pending
        self.max_bytes = max_bytes
        self.retry_after_s = retry_after_s
        self._pending = 0
        self._on_compiled = on_compiled
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="tokensieve-compile")
        self._entries: OrderedDict[str, concurrent.futures.Future[Compiled]] = OrderedDict()
        self._lock = threading.RLock()  # a compile done already runs its callback at once, under it
        self._procs: concurrent.futures.ProcessPoolExecutor | None = None
        self._processes = processes
        if processes > 0 and getattr(compiler, "disk_cache", None) is not None:
            self._procs = self._start_processes()

    def _start_processes(self) -> concurrent.futures.ProcessPoolExecutor:
        procs = concurrent.futures.ProcessPoolExecutor(
            self._processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(self.compiler.tokenizer_info, self.compiler.disk_cache.directory, self.compiler.limits),
        )
        procs.submit(_warm, None)  # start the processes now, not at the first compile
        return procs

    def _in_process(self, spec: ConstraintSpec) -> None:
        """Build ``spec``'s automaton in a compile process (a pool that broke is started again)."""
        procs = self._procs
        if procs is None:
            return
        try:
            failure = procs.submit(_warm, spec.build).result()
        except concurrent.futures.process.BrokenProcessPool:
            logger.warning(
                "a compile process died while compiling %s; starting the compile processes again", spec.param
            )
            with self._lock:
                if self._procs is procs:
                    procs.shutdown(wait=False, cancel_futures=True)
                    self._procs = self._start_processes()
            return
        except Exception:  # reported by the compile here, with its details
            logger.debug("the compile process failed on %s; compiling here", spec.param)
            return
        if failure is not None:
            raise _rebuilt(failure)

    @property
    def pending(self) -> int:
        """Compiles running or waiting for a compile thread."""
        return self._pending

    def submit(self, spec: ConstraintSpec) -> tuple[concurrent.futures.Future[Compiled], bool]:
        """Start (or join) the compile of ``spec``; returns its future and whether it was cached.

        Raises
        ------
        APIError
            429 ``compile_queue_full`` when ``spec`` needs a new compile and
            ``max_pending`` compiles are already running or waiting.
        """
        key = f"{spec.kind}\x00{spec.key}"
        with self._lock:
            fut = self._entries.get(key)
            if fut is not None and not (fut.done() and fut.exception() is not None):
                self._entries.move_to_end(key)
                return fut, True
            if self.max_pending is not None and self._pending >= self.max_pending:
                raise APIError(
                    429,
                    f"the server is busy: {self._pending} constraints are compiling, the limit "
                    f"max_compile_queue={self.max_pending}; retry later",
                    param=spec.param,
                    code="compile_queue_full",
                    headers={"Retry-After": str(self.retry_after_s)},
                )
            self._pending += 1
            fut = self._pool.submit(self._run, spec)
            fut.add_done_callback(self._finished)
            self._entries[key] = fut
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
            return fut, False

    def _finished(self, fut: concurrent.futures.Future[Compiled]) -> None:
        with self._lock:
            self._pending -= 1
            self._evict()

    def memory_bytes(self) -> int:
        """Memory held by the compiled constraints kept."""
        with self._lock:
            return sum(size for _, size in self._sizes())

    def _sizes(self) -> list[tuple[str, int]]:
        found = []
        for key, fut in self._entries.items():
            if fut.done() and fut.exception() is None:
                found.append((key, int(getattr(fut.result().grammar, "memory_size_bytes", 0))))
        return found

    def _evict(self) -> None:
        """Drop the least recently used compiled constraints while they hold more than ``max_bytes``."""
        if self.max_bytes is None:
            return
        sizes = self._sizes()
        total = sum(size for _, size in sizes)
        for key, size in sizes[:-1]:  # the most recent one stays, whatever its size
            if total <= self.max_bytes:
                break
            del self._entries[key]
            total -= size

    def _run(self, spec: ConstraintSpec) -> Compiled:
        t0 = time.perf_counter()
        self._in_process(spec)
        grammar, unenforced = spec.build(self.compiler)
        seconds = time.perf_counter() - t0
        if self._on_compiled is not None:
            self._on_compiled(spec.kind, seconds)
        return Compiled(grammar, tuple(unenforced), False, seconds)

    async def get(self, spec: ConstraintSpec) -> Compiled:
        """The compiled constraint, waited for without blocking the event loop.

        Raises
        ------
        APIError
            400 for a constraint that does not compile (with the pointer,
            position or limit), or whose compile takes longer than ``timeout_s``.
        """
        fut, cached = self.submit(spec)
        try:
            result = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(fut)), self.timeout_s)
        except asyncio.TimeoutError:
            raise APIError(
                400,
                f"the constraint in {spec.param} took longer than the limit compile_timeout_s={self.timeout_s:g} "
                "to compile",
                param=spec.param,
                code="constraint_too_costly",
            ) from None
        except TokensieveError as exc:
            raise constraint_error(exc, spec.param) from None
        except RecursionError:
            raise constraint_error(
                LimitExceeded("max_nesting_depth", 0, "the constraint nests too deeply"), spec.param
            ) from None
        except (TypeError, ValueError) as exc:
            raise APIError(400, f"invalid constraint in {spec.param}: {exc}", param=spec.param) from None
        if cached:
            return Compiled(result.grammar, result.unenforced, True, 0.0)
        return result

    def shutdown(self) -> None:
        """Stop the compile threads (compiles in progress finish)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._procs is not None:
            self._procs.shutdown(wait=False, cancel_futures=True)
