"""A continuous-batching engine: many requests, one forward pass per step.

Requests wait in a bounded queue and join the batch between steps, each in a
cache slot of its own (see :mod:`tokensieve.runtime.runner`); rows that finish
or are cancelled leave at the next step, and the last row moves into the freed
slot so the active rows always fill slots ``0..n-1``. A step is:

1. the masks of every constrained row are filled in one
   :class:`~tokensieve.BatchGrammarMatcher` call on a helper thread, while
2. the model runs the new rows' prompts (one padded forward pass) and every
   other row's next tokens (one more);
3. each row then picks its token from its masked logits with its own
   ``torch.Generator`` and its own token budget (see
   :mod:`tokensieve.runtime.sampling`), and when the constraint allows only one
   token next, those tokens are appended at once (jump-forward) and fed to the
   model together at the next step (a row's state, its tokens taken, its text
   released at stop strings and its end are :mod:`tokensieve.runtime.rows`'s).

A constraint may be passed as a ``concurrent.futures.Future`` (a grammar
compiled elsewhere): the request waits in the queue, without holding a slot or
the batch, until it resolves.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..bitmask import apply_token_bitmask_inplace, bitmask_size
from ..errors import LimitExceeded, TokensieveError, VocabularyError
from ..matcher import BatchGrammarMatcher, GrammarMatcher
from .model import LoadedModel
from .requests import QueueFull, RequestHandle, SamplingParams, StepOutput
from .rows import MAX_FORCED as MAX_FORCED
from .rows import Row, RowAdvancer
from .runner import DEFAULT_WEIGHTS, make_runner, set_threads
from .sampling import BudgetCheck, draw_rows

__all__ = ["DEFAULT_MAX_LEN", "Engine", "QueueFull", "RequestHandle", "SamplingParams", "StepOutput"]

logger = logging.getLogger("tokensieve")

#: Tokens (prompt and output) one sequence may hold by default.
DEFAULT_MAX_LEN = 2048


class Engine:
    """Decodes many requests at once on one model, in a thread of its own.

    Parameters
    ----------
    model
        The loaded model (see :func:`~tokensieve.runtime.load_model`).
    max_batch
        Most requests decoded at once (cache slots).
    max_queue
        Most requests waiting for a slot; :meth:`submit` raises
        :class:`QueueFull` beyond it.
    threads
        torch's CPU threads (process-wide). ``None``: 1 for models under half a
        billion parameters (their steps are too small to share, and spinning
        threads collapse when other processes use the cores), else torch's
        default.
    weights
        ``"bf16"`` (default), ``"int8"`` or ``"fp32"`` for Llama-family models
        (see :mod:`tokensieve.runtime.llama`).
    max_len
        Most tokens (prompt and output) per request.

    Examples
    --------
    >>> engine = Engine(load_model())  # doctest: +SKIP
    >>> handle = engine.submit(ids, SamplingParams(max_tokens=16, seed=1))  # doctest: +SKIP
    >>> "".join(out.text for out in handle)  # doctest: +SKIP
    """

    def __init__(
        self,
        model: LoadedModel,
        *,
        max_batch: int = 16,
        max_queue: int = 64,
        threads: int | None = None,
        weights: str = DEFAULT_WEIGHTS,
        max_len: int = DEFAULT_MAX_LEN,
    ) -> None:
        import torch

        if max_batch < 1 or max_queue < 0:
            raise ValueError("max_batch must be at least 1 and max_queue at least 0")
        self._torch = torch
        self.model = model
        self.max_batch = int(max_batch)
        self.max_queue = int(max_queue)
        self.threads = set_threads(torch, model.model, threads)
        self.runner = make_runner(model.model, weights=weights, max_slots=self.max_batch, max_len=max_len)
        self.weights = self.runner.weights
        self.max_len = self.runner.max_len
        info = model.tokenizer_info
        self._stop_ids = sorted(t for t in info.stop_token_set if t < int(self.runner.vocab_size))
        self._width = max(int(self.runner.vocab_size), int(info.vocab_size))
        self._bitmask = np.zeros((self.max_batch, bitmask_size(self._width)), dtype=np.int32)
        self._batch_matcher = BatchGrammarMatcher(max_threads=1)
        self._mask_pool = ThreadPoolExecutor(1, thread_name_prefix="tokensieve-masks")
        self._queue: deque[Row] = deque()
        self._rows: list[Row] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._drain = True
        self._stats: Counter[str] = Counter()
        self._batch_sizes: Counter[int] = Counter()
        self._advancer = RowAdvancer(
            model.tokenizer, info.decoded_vocab, info.stop_token_set, self._stats, self._cond
        )
        self._thread = threading.Thread(target=self._loop, name="tokensieve-engine", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ API
    def submit(
        self, prompt_ids: Sequence[int], params: SamplingParams, constraint: Any = None
    ) -> RequestHandle:
        """Queue a request.

        Parameters
        ----------
        prompt_ids
            The prompt's token ids (see :func:`~tokensieve.runtime.build_prompt_ids`).
        params
            How to decode it.
        constraint
            ``None``, a grammar compiled for this model's vocabulary, or a
            ``concurrent.futures.Future`` that resolves to one (an exception
            from it ends the request with ``finish_reason == "error"``).

        Returns
        -------
        RequestHandle

        Raises
        ------
        QueueFull
            When ``max_queue`` requests are waiting already.
        LimitExceeded
            When the prompt and ``max_tokens`` exceed ``max_len``, or
            ``max_tokens`` is below the constraint's shortest output.
        VocabularyError
            For token ids outside the vocabulary, or a grammar compiled for a
            smaller vocabulary or one no output of which the vocabulary can spell.
        TokensieveError
            After :meth:`shutdown`.
        """
        if not isinstance(params, SamplingParams):
            raise TypeError("params must be a SamplingParams")
        prompt = [int(t) for t in prompt_ids]
        if not prompt:
            raise VocabularyError("the prompt has no tokens")
        bad = [t for t in prompt if not 0 <= t < self._width]
        if bad:
            raise VocabularyError(
                f"prompt token id {bad[0]} is outside the vocabulary (0..{self._width - 1})"
            )
        if len(prompt) + params.max_tokens > self.max_len:
            raise LimitExceeded(
                "max_len",
                self.max_len,
                f"the prompt's {len(prompt)} tokens and max_tokens={params.max_tokens} do not fit",
            )
        if constraint is not None and not isinstance(constraint, Future):
            self._check_constraint(constraint, params)
        handle = RequestHandle(len(prompt), on_cancel=self._wake)
        row = Row(handle, prompt, params, constraint)
        with self._cond:
            if self._stopping:
                raise TokensieveError("the engine is shut down")
            if len(self._queue) >= self.max_queue:
                raise QueueFull(f"{len(self._queue)} requests are waiting (max_queue={self.max_queue})")
            self._queue.append(row)
            self._stats["submitted"] += 1
            self._cond.notify_all()
        if isinstance(constraint, Future):
            constraint.add_done_callback(lambda _: self._wake())
        return handle

    def shutdown(self, drain: bool = True) -> None:
        """Stop the engine's thread.

        Parameters
        ----------
        drain
            Finish the running and waiting requests first; otherwise they end
            with ``finish_reason == "cancelled"``.
        """
        with self._cond:
            self._stopping = True
            self._drain = self._drain and drain
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        self._mask_pool.shutdown(wait=True)
        self._batch_matcher.close()

    def stats(self) -> dict[str, Any]:
        """Counters of the engine's work so far.

        Returns
        -------
        dict
            ``active`` and ``queued`` requests now; ``steps`` taken;
            ``batch_sizes`` (rows per step: number of steps); ``prompt_tokens``,
            ``output_tokens`` and ``forced_tokens`` processed; ``mask_rows`` (masks
            filled), ``mask_seconds`` (time filling them, beside the forward pass) and
            ``mask_wait_seconds`` (time steps waited for masks after it); ``submitted``,
            ``finished`` and ``finish_reasons``; ``weights``, ``threads``,
            ``max_batch``, ``max_queue``, ``max_len``.
        """
        with self._cond:
            reasons = {k.split(":", 1)[1]: v for k, v in self._stats.items() if k.startswith("finish:")}
            return {
                "active": sum(1 for row in self._rows if not row.handle.done),
                "queued": len(self._queue),
                "steps": self._stats["steps"],
                "batch_sizes": dict(sorted(self._batch_sizes.items())),
                "prompt_tokens": self._stats["prompt_tokens"],
                "output_tokens": self._stats["output_tokens"],
                "forced_tokens": self._stats["forced_tokens"],
                "mask_rows": self._stats["mask_rows"],
                "mask_seconds": self._stats["mask_ns"] / 1e9,
                "mask_wait_seconds": self._stats["mask_wait_ns"] / 1e9,
                "submitted": self._stats["submitted"],
                "finished": sum(reasons.values()),
                "finish_reasons": reasons,
                "weights": self.weights,
                "threads": self.threads,
                "max_batch": self.max_batch,
                "max_queue": self.max_queue,
                "max_len": self.max_len,
            }

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown(drain=False)

    # ------------------------------------------------------------ the thread
    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _loop(self) -> None:
        try:
            with self._torch.inference_mode():
                self._run()
        except BaseException as exc:  # pragma: no cover - a bug in the engine itself
            logger.exception("the engine's thread failed")
            self._fail_all(exc)
            raise
        self._fail_all(None)

    def _run(self) -> None:
        while True:
            with self._cond:
                new = self._admit()
                while not self._rows and not self._stopping:
                    self._cond.wait()
                    new = self._admit()
                if self._stopping and (not self._drain or (not self._rows and not self._queue)):
                    return
            if self._rows:
                rows = list(self._rows)
                try:
                    self._step(rows, len(rows) - len(new))
                except Exception as exc:
                    logger.exception("a step failed")
                    for row in rows:
                        self._advancer.finish(row, "error", [], exc)
                self._drop_finished()
            elif self._queue:  # only requests whose grammar is not ready: wait for a wake-up
                with self._cond:
                    self._cond.wait(0.05)

    def _fail_all(self, exc: BaseException | None) -> None:
        with self._cond:
            rows = list(self._rows) + list(self._queue)
            self._rows.clear()
            self._queue.clear()
            self._stopping = True
        for row in rows:
            self._advancer.finish(row, "error" if exc is not None else "cancelled", [], exc)

    def _admit(self) -> list[Row]:
        """Move ready requests from the queue into free slots (called with the lock held)."""
        new: list[Row] = []
        kept: deque[Row] = deque()
        while self._queue:
            row = self._queue.popleft()
            if row.handle.cancel_requested:
                self._advancer.finish(row, "cancelled", [])
                continue
            if len(self._rows) >= self.max_batch:
                kept.append(row)
                continue
            if isinstance(row.constraint, Future):
                if not row.constraint.done():
                    kept.append(row)
                    continue
                try:
                    row.constraint = row.constraint.result()
                    self._check_constraint(row.constraint, row.params)
                except BaseException as exc:
                    self._advancer.finish(row, "error", [], exc)
                    continue
            if row.constraint is not None:
                row.matcher = GrammarMatcher(row.constraint, terminate_without_stop_token=True)
                row.budget = BudgetCheck(row.constraint)
            self._rows.append(row)
            new.append(row)
        self._queue = kept
        return new

    def _check_constraint(self, compiled: Any, params: SamplingParams) -> None:
        if not hasattr(compiled, "tokenizer_info") or not hasattr(compiled, "step_bytes"):
            raise TypeError("constraint must be a grammar compiled with GrammarCompiler (or a Future of one)")
        if len(self.model.tokenizer) > int(compiled.vocab_size):
            raise VocabularyError(
                f"the grammar was compiled for {compiled.vocab_size} tokens but the model's tokenizer has "
                f"{len(self.model.tokenizer)}: compile it with this model's compiler"
            )
        BudgetCheck(compiled).check_start(compiled.start_state, params.max_tokens)

    def _fill_masks(self, matchers: list[GrammarMatcher], constrained: list[int]) -> None:
        """Fill the constrained rows' masks in one batch call, counting its time and rows."""
        t0 = time.perf_counter_ns()
        self._batch_matcher.fill_next_token_bitmask(matchers, self._bitmask, constrained)
        self._stats["mask_ns"] += time.perf_counter_ns() - t0
        self._stats["mask_rows"] += len(constrained)

    def _step(self, rows: list[Row], old: int) -> None:
        torch = self._torch
        constrained: list[int] = []
        matchers: list[GrammarMatcher] = []
        for i, row in enumerate(rows):
            if row.matcher is not None:
                constrained.append(i)
                matchers.append(row.matcher)
        masks = None
        if constrained:
            masks = self._mask_pool.submit(self._fill_masks, matchers, constrained)
        parts = []
        try:
            if old:
                parts.append(
                    self.runner.forward(0, [r.pending for r in rows[:old]], [r.length for r in rows[:old]])
                )
            if len(rows) > old:
                parts.append(
                    self.runner.forward(old, [r.pending for r in rows[old:]], [0] * (len(rows) - old))
                )
        finally:
            if masks is not None:
                waited = time.perf_counter()
                masks.result()
                # time the step spent waiting for masks after the forward pass: the part of the
                # mask work that did not overlap the model
                self._stats["mask_wait_ns"] += int((time.perf_counter() - waited) * 1e9)
        logits = parts[0] if len(parts) == 1 else torch.cat(parts)
        for row in rows:
            fed = len(row.pending)
            if row.length == 0:
                self._stats["prompt_tokens"] += fed
            row.length += fed
            row.pending = []
        if constrained:
            apply_token_bitmask_inplace(
                logits[:, : self._bitmask.shape[1] * 32], self._bitmask[constrained], indices=constrained
            )
        with self._cond:
            self._stats["steps"] += 1
            self._batch_sizes[len(rows)] += 1
        logprobs = {
            i: torch.log_softmax(logits[i], dim=-1)
            for i, row in enumerate(rows)
            if row.params.logprobs or row.params.top_logprobs
        }
        for i, row in enumerate(rows):
            if row.params.ignore_eos and row.matcher is None:
                logits[i, self._stop_ids] = -float("inf")
        first = draw_rows(
            torch,
            logits,
            [r.params.temperature for r in rows],
            [r.params.top_p for r in rows],
            [r.generator for r in rows],
        )
        for i, row in enumerate(rows):
            if row.handle.cancel_requested:
                self._advancer.finish(row, "cancelled", [])
                continue
            try:
                self._advancer.advance(row, logits[i], first[i], logprobs.get(i))
            except Exception as exc:
                logger.exception("a request failed")
                self._advancer.finish(row, "error", [], exc)

    def _drop_finished(self) -> None:
        """Free the slots of finished rows, moving the last rows into them."""
        with self._cond:
            rows = self._rows
            i = 0
            while i < len(rows):
                if rows[i].handle.done:
                    last = rows.pop()
                    if i < len(rows):
                        self.runner.move_slot(len(rows), i, last.length)
                        rows[i] = last
                else:
                    i += 1
