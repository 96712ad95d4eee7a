"""What a caller of the batch engine holds: sampling parameters, step outputs, request handles.

A :class:`RequestHandle` is filled by the engine's thread and read by the
caller, either blocking (``for out in handle``) or from an asyncio event loop
(``async for out in handle``), which never blocks the loop: the engine wakes
the loop with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

from ..errors import TokensieveError

__all__ = ["FINISH_REASONS", "QueueFull", "RequestHandle", "SamplingParams", "StepOutput"]

#: The values of :attr:`RequestHandle.finish_reason` once a request is over.
FINISH_REASONS = ("stop", "length", "cancelled", "error")


class QueueFull(TokensieveError):
    """The engine's bounded queue of waiting requests is full; try again later."""


@dataclass
class SamplingParams:
    """How one request is decoded.

    Attributes
    ----------
    temperature
        0 for greedy decoding; otherwise the softmax temperature.
    top_p
        Nucleus sampling: draw from the smallest set of most likely tokens
        whose probability reaches ``top_p`` (1: all tokens).
    max_tokens
        Most output tokens (a stop token is not counted). A constrained
        output is complete however few there are, as long as the constraint's
        shortest output fits.
    seed
        Seed of the request's own random generator (``None``: a fresh one).
        The same seed gives the same tokens whatever else is in the batch.
    stop
        Strings that end the output; the text ends before the first of them.
    logprobs
        Report each chosen token's log-probability.
    top_logprobs
        Also report this many most likely tokens with their log-probabilities.
    ignore_eos
        Never choose a stop token (unconstrained requests only; for
        benchmarks that need outputs of a fixed length).

    Notes
    -----
    Log-probabilities are those of the model's distribution at temperature 1
    after the constraint's mask (tokens the constraint forbids have none).

    Raises
    ------
    ValueError
        For values out of range.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 128
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    logprobs: bool = False
    top_logprobs: int = 0
    ignore_eos: bool = False

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise ValueError(f"temperature must be a finite number >= 0, not {t!r}")
        p = self.top_p
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
            raise ValueError(f"top_p must be a number in (0, 1], not {p!r}")
        m = self.max_tokens
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(f"max_tokens must be a positive integer, not {m!r}")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise ValueError(f"seed must be an integer or None, not {self.seed!r}")
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        if not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError("stop must be a list of non-empty strings")
        k = self.top_logprobs
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 20:
            raise ValueError(f"top_logprobs must be an integer from 0 to 20, not {k!r}")


@dataclass(frozen=True)
class StepOutput:
    """One token of a request's output.

    Attributes
    ----------
    token_id
        The token (``None`` for a last piece of text released at the end
        without a token of its own: text held back while it could have
        started a stop string, or an incomplete UTF-8 character).
    text
        The new whole characters of the output (may be empty: the token
        ends in the middle of a character, or the text is held back while it
        may start a stop string).
    logprob
        The token's log-probability (when asked for).
    top_logprobs
        The most likely ``(token id, log-probability)`` pairs (when asked for).
    forced
        Whether the constraint allowed only this token (appended without
        sampling; its log-probability under the mask is 0).
    """

    token_id: int | None
    text: str
    logprob: float | None = None
    top_logprobs: list[tuple[int, float]] | None = None
    forced: bool = False


class RequestHandle:
    """A submitted request: its outputs as they come, and its result.

    Attributes
    ----------
    finish_reason : str or None
        ``"stop"``, ``"length"``, ``"cancelled"`` or ``"error"``; ``None``
        while running.
    num_prompt_tokens : int
        Tokens in the prompt.
    token_ids : list of int
        The output's tokens so far (a stop token excluded).
    text : str
        The output's text so far (what has been released to the outputs).
    error : BaseException or None
        What ended the request when ``finish_reason`` is ``"error"``.
    forced_tokens : int
        Output tokens appended without sampling (jump-forward and planned
        completions).
    """

    def __init__(self, num_prompt_tokens: int, on_cancel: Callable[[], None] | None = None) -> None:
        self.num_prompt_tokens = int(num_prompt_tokens)
        self.finish_reason: str | None = None
        self.token_ids: list[int] = []
        self.text = ""
        self.error: BaseException | None = None
        self.forced_tokens = 0
        self._outputs: list[StepOutput] = []
        self._cond = threading.Condition()
        self._wakers: list[Callable[[], None]] = []
        self._cancelled = False
        self._on_cancel = on_cancel

    # ------------------------------------------------------------------ API
    @property
    def num_output_tokens(self) -> int:
        """Tokens in the output so far."""
        return len(self.token_ids)

    @property
    def done(self) -> bool:
        """Whether the request is over (``finish_reason`` is set)."""
        return self.finish_reason is not None

    @property
    def cancel_requested(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancelled

    def cancel(self) -> None:
        """Stop the request; its slot is freed at the engine's next step."""
        self._cancelled = True
        if self._on_cancel is not None:
            self._on_cancel()

    def __iter__(self) -> Iterator[StepOutput]:
        """The outputs, blocking until each arrives; ends when the request is over."""
        i = 0
        while True:
            with self._cond:
                while i >= len(self._outputs) and self.finish_reason is None:
                    self._cond.wait()
                items = self._outputs[i:]
                done = self.finish_reason is not None
            i += len(items)
            yield from items
            if done:
                return

    def __aiter__(self) -> AsyncIterator[StepOutput]:
        """The outputs for ``async for``; waiting never blocks the event loop."""
        return self._aiter()

    def result(self, timeout: float | None = None) -> str:
        """Wait for the request to end and return its text.

        Parameters
        ----------
        timeout
            Seconds to wait at most (``None``: no limit).

        Returns
        -------
        str

        Raises
        ------
        TimeoutError
            When the request is still running after ``timeout`` seconds.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: self.finish_reason is not None, timeout):
                raise TimeoutError("the request is still running")
        return self.text

    def __repr__(self) -> str:
        return (
            f"RequestHandle(prompt={self.num_prompt_tokens}, output={self.num_output_tokens}, "
            f"finish_reason={self.finish_reason!r})"
        )

    # ------------------------------------------------- engine side (one thread)
    def _publish(
        self, outputs: list[StepOutput], finish: str | None = None, error: BaseException | None = None
    ) -> None:
        with self._cond:
            self._outputs.extend(outputs)
            if finish is not None and self.finish_reason is None:
                self.error = error
                self.finish_reason = finish
            self._cond.notify_all()
            wakers = list(self._wakers)
        for wake in wakers:
            wake()

    async def _aiter(self) -> AsyncIterator[StepOutput]:
        loop = asyncio.get_running_loop()
        event = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop was closed meanwhile
                loop.call_soon_threadsafe(event.set)

        with self._cond:
            self._wakers.append(wake)
        try:
            i = 0
            while True:
                event.clear()
                with self._cond:
                    items = self._outputs[i:]
                    done = self.finish_reason is not None
                i += len(items)
                for item in items:
                    yield item
                if done:
                    return
                await event.wait()
        finally:
            with self._cond:
                self._wakers.remove(wake)
