"""A stand-in for the runtime's batch engine: the same interface, one request at a time.

Used only while :mod:`tokensieve.runtime.engine` is not available. Requests
wait in a bounded queue and are decoded one after another with
:func:`tokensieve.runtime.generate.stream_constrained` on a worker thread
(``top_p`` is not applied here).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import TokensieveError

__all__ = ["Engine", "QueueFull", "RequestHandle", "SamplingParams", "StepOutput"]


@dataclass
class SamplingParams:
    """How one request samples."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    logprobs: bool = False
    top_logprobs: int = 0


class QueueFull(TokensieveError):
    """The engine's queue is full."""


@dataclass
class StepOutput:
    """One generated token."""

    token_id: int
    text: str
    logprob: float | None
    top_logprobs: list[tuple[int, float]]


class RequestHandle:
    """The outputs of one submitted request, iterable from a thread or a coroutine."""

    def __init__(self, prompt_ids: list[int], params: SamplingParams, constraint: Any) -> None:
        self.prompt_ids = prompt_ids
        self.params = params
        self.constraint = constraint
        self.finish_reason: str | None = None
        self.num_prompt_tokens = len(prompt_ids)
        self.num_output_tokens = 0
        self.token_ids: list[int] = []
        self.text = ""
        self.error: BaseException | None = None
        self.cancelled = False
        self._items: deque[StepOutput] = deque()
        self._cond = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def cancel(self) -> None:
        """Stop decoding this request at its next step."""
        self.cancelled = True

    def _notify(self) -> None:
        for loop, event in list(self._waiters):
            loop.call_soon_threadsafe(event.set)
        self._cond.notify_all()

    def _push(self, item: StepOutput) -> None:
        with self._cond:
            self._items.append(item)
            self._notify()

    def _finish(self, reason: str, error: BaseException | None = None) -> None:
        with self._cond:
            self.error = error
            self.finish_reason = reason
            self._notify()

    def __iter__(self) -> Iterator[StepOutput]:
        while True:
            with self._cond:
                while not self._items and self.finish_reason is None:
                    self._cond.wait()
                if self._items:
                    item = self._items.popleft()
                else:
                    return
            yield item

    async def __aiter__(self) -> AsyncIterator[StepOutput]:
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._cond:
            self._waiters.append(entry)
        try:
            while True:
                with self._cond:
                    item = self._items.popleft() if self._items else None
                    done = self.finish_reason is not None
                    if item is None and not done:
                        event.clear()
                if item is not None:
                    yield item
                elif done:
                    return
                else:
                    await event.wait()
        finally:
            with self._cond:
                self._waiters.remove(entry)


class Engine:
    """Decodes submitted requests one at a time (see the module)."""

    def __init__(
        self, model: Any, *, max_batch: int = 16, max_queue: int = 64, threads: int | None = None, **_: Any
    ) -> None:
        import torch

        torch.set_num_threads(threads or 1)
        self.model = model
        self._queue: queue.Queue[RequestHandle | None] = queue.Queue(maxsize=max_queue)
        self._stats = {"active": 0, "completed": 0, "steps": 0}
        self._batch_sizes: dict[int, int] = {}
        self._thread = threading.Thread(target=self._loop, name="tokensieve-engine", daemon=True)
        self._thread.start()

    def submit(self, prompt_ids: list[int], params: SamplingParams, constraint: Any = None) -> RequestHandle:
        """Queue a request; raises :class:`QueueFull` when the queue is full."""
        handle = RequestHandle(list(prompt_ids), params, constraint)
        try:
            self._queue.put_nowait(handle)
        except queue.Full:
            raise QueueFull("the request queue is full") from None
        return handle

    def stats(self) -> dict[str, Any]:
        """Active rows, queue length, steps by batch size."""
        return {**self._stats, "queue_length": self._queue.qsize(), "batch_sizes": dict(self._batch_sizes)}

    def shutdown(self, drain: bool = True) -> None:
        """Stop after the queued requests (``drain``) or at once."""
        if not drain:
            while True:
                try:
                    h = self._queue.get_nowait()
                except queue.Empty:
                    break
                if h is not None:
                    h._finish("cancelled")
        self._queue.put(None)
        self._thread.join(timeout=60)

    def _loop(self) -> None:
        while True:
            handle = self._queue.get()
            if handle is None:
                return
            self._stats["active"] = 1
            try:
                self._run(handle)
            except BaseException as exc:  # reported on the handle, never kills the loop
                handle._finish("error", exc)
            finally:
                self._stats["active"] = 0
                self._stats["completed"] += 1

    def _run(self, handle: RequestHandle) -> None:
        import torch

        from ..runtime.generate import stream_constrained

        constraint = handle.constraint
        if isinstance(constraint, concurrent.futures.Future):
            constraint = constraint.result()
        if constraint is None:
            constraint = self.model.compiler.compile_regex(r"[\s\S]*")
        params = handle.params
        model = self.model.model
        state: dict[str, Any] = {"past": None}
        logprob_rows: list[Any] = []

        def next_logits(token: int | None) -> Any:
            if handle.cancelled:
                raise _Cancelled
            with torch.inference_mode():
                ids = handle.prompt_ids if token is None else [token]
                out = model(input_ids=torch.tensor([ids]), past_key_values=state["past"], use_cache=True)
                state["past"] = out.past_key_values
                logits = out.logits[0, -1]
                if params.logprobs:
                    logprob_rows.append(torch.log_softmax(logits.float(), dim=-1))
                self._stats["steps"] += 1
                self._batch_sizes[1] = self._batch_sizes.get(1, 0) + 1
                return logits

        stream = stream_constrained(
            next_logits,
            constraint,
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            seed=params.seed,
            num_prompt_tokens=len(handle.prompt_ids),
        )
        emitted = 0
        try:
            for piece in stream:
                new = stream.token_ids[emitted:]
                for j, tok in enumerate(new):
                    k = emitted + j
                    lp, top = None, []
                    if params.logprobs and k < len(logprob_rows):
                        row = logprob_rows[k]
                        lp = float(row[tok])
                        if params.top_logprobs:
                            vals, idx = torch.topk(row, params.top_logprobs)
                            top = [(int(i), float(v)) for i, v in zip(idx, vals, strict=False)]
                    text = piece if j == len(new) - 1 else ""
                    handle.token_ids.append(tok)
                    handle.text += text
                    handle.num_output_tokens += 1
                    handle._push(StepOutput(tok, text, lp, top))
                emitted += len(new)
                stop = next((s for s in params.stop if s in handle.text), None)
                if stop is not None:
                    handle.text = handle.text[: handle.text.index(stop)]
                    handle._finish("stop")
                    return
        except _Cancelled:
            handle._finish("cancelled")
            return
        handle._finish(stream.finish_reason or "stop")


class _Cancelled(Exception):
    pass
