"""tokensieve as a logits processor of vLLM's V1 engine.

vLLM picks its structured-output backend from a fixed list, so tokensieve
plugs in through the engine's supported extension point, custom logits
processors. Start vLLM with the processor and give each request its
constraint in ``SamplingParams.extra_args["structured_outputs"]`` (vLLM's own
field names, see :mod:`tokensieve.integrations._vllm_requests`)::

    from vllm import LLM, SamplingParams

    llm = LLM(model=FOLDER, logits_processors=["tokensieve.integrations.vllm:LogitsProcessor"])
    params = SamplingParams(max_tokens=200, extra_args={"structured_outputs": {"json": schema}})
    print(llm.generate([prompt], params)[0].outputs[0].text)

or ``vllm serve FOLDER --logits-processors tokensieve.integrations.vllm:LogitsProcessor``
with ``extra_body={"vllm_xargs": {"structured_outputs": json.dumps({"regex": "..."})}}``
in the OpenAI client. Requests without the key are left alone, so constrained
and free rows share a batch.

How a step goes: vLLM reports the batch's changes before each forward pass
(:meth:`LogitsProcessor.update_state`); a new row's constraint is then handed
to a compile thread, so the compile runs beside the forward pass. When the
logits are ready (:meth:`LogitsProcessor.apply`), each constrained row's
matcher takes the tokens its request sampled since the last step (read then,
after vLLM has filled in asynchronously scheduled tokens), the masks of every
constrained row are filled in one :class:`~tokensieve.BatchGrammarMatcher`
call, and applied on the logits' device.

A row whose grammar is not compiled yet when its first logits arrive waits
for it: vLLM samples a token for every row of every step and keeps it in the
output, so the only alternatives to waiting are a token the constraint may
refuse or a filler token in the model's context and output. Waiting holds
the step, but only for a constraint never seen before (compiled grammars are
cached per vocabulary) and only for what its compile did not already overlap.
A constraint that fails to compile in the engine (a size limit), or a row
whose token its grammar refuses, is logged and ends at once: its mask holds
only the stop tokens.
"""

from __future__ import annotations

import json
import logging
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality
from vllm.v1.sample.logits_processor import LogitsProcessor as _VllmLogitsProcessor

from ..bitmask import apply_token_bitmask_inplace, bitmask_size, bool_to_bitmask
from ..errors import TokensieveError
from ..matcher import BatchGrammarMatcher, GrammarMatcher
from ._vllm_requests import (
    EXTRA_ARGS_KEY,
    ConstraintError,
    check_constraint,
    compile_constraint,
    constraint_from_extra_args,
)
from ._vllm_vocab import compiler_for, tokenizer_info_for_config

if TYPE_CHECKING:
    from vllm import SamplingParams
    from vllm.config import VllmConfig

__all__ = ["EXTRA_ARGS_KEY", "LogitsProcessor"]

logger = logging.getLogger("tokensieve")

#: How long a row waits for its grammar before it is ended (seconds; ``TOKENSIEVE_VLLM_COMPILE_TIMEOUT``).
DEFAULT_COMPILE_TIMEOUT_S = 120.0


@dataclass
class _Row:
    """One constrained request in the persistent batch."""

    output: list[int]
    future: Future[Any] | None = None
    matcher: GrammarMatcher | None = None
    seen: int = 0
    error: str | None = None


class LogitsProcessor(_VllmLogitsProcessor):
    """Masks each constrained row's logits to the tokens its constraint allows.

    vLLM builds one instance per engine with the arguments below; pass the
    class (or ``"tokensieve.integrations.vllm:LogitsProcessor"``) in
    ``logits_processors``.

    Parameters
    ----------
    vllm_config
        The engine's configuration: the model's tokenizer, logits width and
        largest batch come from it.
    device
        Where the logits live.
    is_pin_memory
        Whether host buffers may be pinned.

    Raises
    ------
    VocabularyError
        When the model's tokenizer cannot be read.
    """

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool) -> None:
        self._device = torch.device(device)
        self._info = tokenizer_info_for_config(vllm_config.model_config)
        self._compiler = compiler_for(self._info)
        self._words = bitmask_size(self._info.vocab_size)
        rows = int(vllm_config.scheduler_config.max_num_seqs)
        self._bitmask = np.zeros((rows, self._words), dtype=np.int32)
        stop_only = np.zeros(self._words * 32, dtype=bool)
        stop_only[self._info.stop_token_ids] = True
        self._stop_only = bool_to_bitmask(stop_only)
        self._rows: dict[int, _Row] = {}
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="tokensieve-compile")
        self._batch = BatchGrammarMatcher(max_threads=1)
        #: time spent in :meth:`apply` (``seconds``, of it ``wait_seconds`` waiting for compiles), the
        #: steps and constrained rows it masked; also written to ``$TOKENSIEVE_VLLM_STATS`` when set
        self.stats: dict[str, float] = {"steps": 0, "rows": 0, "seconds": 0.0, "wait_seconds": 0.0}
        self._stats_path = os.environ.get("TOKENSIEVE_VLLM_STATS")
        self.compile_timeout_s = float(
            os.environ.get("TOKENSIEVE_VLLM_COMPILE_TIMEOUT", DEFAULT_COMPILE_TIMEOUT_S)
        )

    # ------------------------------------------------------------------ vLLM's interface
    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Check a request's constraint when vLLM admits it (a ``ValueError`` becomes a 400).

        The constraint is read and its front end run (a schema lowered, a
        pattern or grammar parsed), so bad input is refused before the request
        reaches the engine.

        Raises
        ------
        ValueError
            For a malformed ``structured_outputs`` value, a schema, pattern or
            grammar that tokensieve refuses (the message says where), or a
            request that also asks for vLLM's own structured outputs.
        """
        constraint = constraint_from_extra_args(sampling_params.extra_args)
        if constraint is None:
            return
        if getattr(sampling_params, "structured_outputs", None) is not None:
            raise ConstraintError(
                f"extra_args[{EXTRA_ARGS_KEY!r}] and vLLM's own structured outputs were both given; use one"
            )
        try:
            check_constraint(constraint)
        except TokensieveError as exc:
            raise ConstraintError(f"extra_args[{EXTRA_ARGS_KEY!r}]: {exc}") from None

    def is_argmax_invariant(self) -> bool:
        """``False``: the mask changes which token is most likely."""
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        """Follow the batch's rows (removed, added, moved, in vLLM's order) and start new compiles."""
        if batch_update is None:
            return
        rows = self._rows
        for index in batch_update.removed:
            rows.pop(index, None)
        for index, params, _prompt, output in batch_update.added:
            row = self._new_row(params, output)
            if row is None:
                rows.pop(index, None)
            else:
                rows[index] = row
        for a, b, direction in batch_update.moved:
            row_a = rows.pop(a, None)
            row_b = rows.pop(b, None)
            if row_a is not None:
                rows[b] = row_a
            if row_b is not None and direction == MoveDirectionality.SWAP:
                rows[a] = row_b

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        """Mask the constrained rows of ``logits`` in place and return them."""
        if not self._rows:
            return logits
        start = time.perf_counter()
        height = int(logits.shape[0])
        indices: list[int] = []
        matchers: list[GrammarMatcher] = []
        ended: list[int] = []
        for index in sorted(self._rows):
            if index >= height:
                continue
            row = self._rows[index]
            matcher = self._ready(row)
            if matcher is not None:
                self._advance(row, matcher)
            if row.matcher is None:  # failed to compile, or a refused token
                ended.append(index)
            else:
                indices.append(index)
                matchers.append(row.matcher)
        count = len(indices) + len(ended)
        if count == 0:
            self._count(start, 0)
            return logits
        if len(self._bitmask) < count:
            self._bitmask = np.zeros((count, self._words), dtype=np.int32)
        bitmask = self._bitmask[:count]
        if matchers:
            self._batch.fill_next_token_bitmask(matchers, bitmask, range(len(matchers)))
        bitmask[len(matchers) :] = self._stop_only
        rows_t = torch.from_numpy(bitmask)
        target = torch.tensor(indices + ended, dtype=torch.long)
        if logits.device.type != "cpu":
            rows_t = rows_t.to(logits.device, non_blocking=True)
            target = target.to(logits.device, non_blocking=True)
        apply_token_bitmask_inplace(logits, rows_t, indices=target)
        self._count(start, count)
        return logits

    def _count(self, start: float, rows: int) -> None:
        stats = self.stats
        stats["steps"] += 1
        stats["rows"] += rows
        stats["seconds"] += time.perf_counter() - start
        if self._stats_path:
            with open(self._stats_path + ".tmp", "w") as out:
                json.dump(stats, out)
            os.replace(self._stats_path + ".tmp", self._stats_path)

    # ------------------------------------------------------------------ rows
    def _new_row(self, params: SamplingParams, output: list[int]) -> _Row | None:
        try:
            constraint = constraint_from_extra_args(params.extra_args)
        except ConstraintError as exc:  # validate_params refuses these; a direct engine call may not
            logger.error("tokensieve: a request's constraint was refused: %s", exc)
            return _Row(output=output, error=str(exc))
        if constraint is None:
            return None
        # one compile thread: a constraint sent again while it compiles waits and then hits the compiler's cache
        return _Row(output=output, future=self._pool.submit(compile_constraint, self._compiler, constraint))

    def _ready(self, row: _Row) -> GrammarMatcher | None:
        """The row's matcher, waiting for its compile if needed (``None`` once the row has failed)."""
        if row.matcher is not None or row.error is not None:
            return row.matcher
        assert row.future is not None
        waited = time.perf_counter()
        try:
            compiled = row.future.result(timeout=self.compile_timeout_s)
        except FutureTimeout:
            row.error = f"the constraint did not compile within {self.compile_timeout_s:g} s"
        except Exception as exc:  # a compile error ends this request, never the engine
            row.error = f"the constraint cannot be compiled: {exc}"
        else:
            row.matcher = GrammarMatcher(compiled)
        row.future = None
        self.stats["wait_seconds"] += time.perf_counter() - waited
        if row.error is not None:
            logger.error("tokensieve: request ended: %s", row.error)
        return row.matcher

    def _advance(self, row: _Row, matcher: GrammarMatcher) -> None:
        """Feed the matcher the tokens its request sampled since the last step."""
        output = row.output
        while row.seen < len(output):
            token = output[row.seen]
            if token < 0:  # a placeholder of asynchronous scheduling, not filled in yet
                return
            if matcher.is_terminated():
                row.seen = len(output)  # a stop token was taken (ignore_eos): only stop tokens follow
                return
            if not matcher.accept_token(token):
                row.error = (
                    f"token {token} at output position {row.seen} is not allowed by the constraint "
                    "(another logits processor changed the choice)"
                )
                logger.error("tokensieve: request ended: %s", row.error)
                row.matcher = None
                return
            row.seen += 1
