"""The model step the engine calls: :class:`~tokensieve.runtime.llama.FastLlama` or plain transformers.

Both runners take the same call: ``forward(first_slot, chunks, starts)``
runs each row's new tokens in its own cache slot and returns the logits after
each row's last token. Llama-family models run on
:class:`~tokensieve.runtime.llama.FastLlama`; any other model folder runs on
:class:`TransformersRunner`, one row at a time through ``transformers`` with
a cache per slot (correct, not fast).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from .llama import WEIGHT_FORMATS, FastLlama, supports

__all__ = [
    "DEFAULT_WEIGHTS",
    "SMALL_MODEL_PARAMETERS",
    "ModelRunner",
    "TransformersRunner",
    "make_runner",
    "set_threads",
]

logger = logging.getLogger("tokensieve")

#: The weight format used when none is named: bfloat16 decodes a batch of 16
#: rows in about the time of one row and keeps greedy outputs of float32 (see
#: docs/runtime.md); int8 is slightly faster for a single row only.
DEFAULT_WEIGHTS = "bf16"

#: Models below this many parameters run on one thread by default.
SMALL_MODEL_PARAMETERS = 500_000_000


class ModelRunner(Protocol):
    """What the engine needs from a model step."""

    max_slots: int
    max_len: int
    vocab_size: int
    weights: str

    def forward(self, first_slot: int, chunks: Sequence[Sequence[int]], starts: Sequence[int]) -> Any:
        """Logits ``(rows, vocab)`` after each row's last new token."""
        ...  # pragma: no cover

    def move_slot(self, src: int, dst: int, length: int) -> None:
        """Copy slot ``src``'s first ``length`` cached positions into ``dst``."""
        ...  # pragma: no cover

    @property
    def weight_bytes(self) -> int:
        """Bytes of weights one forward pass reads."""
        ...  # pragma: no cover


class TransformersRunner:
    """Any ``transformers`` causal LM, one row at a time, a ``past_key_values`` per slot.

    Parameters
    ----------
    model
        The model (evaluation mode).
    max_slots, max_len
        As for :class:`~tokensieve.runtime.llama.FastLlama`.
    """

    weights = "model"

    def __init__(self, model: Any, *, max_slots: int, max_len: int) -> None:
        import torch

        self._torch = torch
        self.model = model
        self.max_slots = int(max_slots)
        self.max_len = int(max_len)
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self._past: list[Any] = [None] * self.max_slots
        self.weight_bytes = sum(int(p.numel() * p.element_size()) for p in model.parameters())

    def forward(self, first_slot: int, chunks: Sequence[Sequence[int]], starts: Sequence[int]) -> Any:
        """See :meth:`tokensieve.runtime.llama.FastLlama.forward`."""
        torch = self._torch
        device = getattr(self.model, "device", torch.device("cpu"))
        rows = []
        with torch.inference_mode():
            for i, (chunk, start) in enumerate(zip(chunks, starts, strict=True)):
                slot = first_slot + i
                if start + len(chunk) > self.max_len:
                    raise ValueError(
                        f"a sequence of {start + len(chunk)} tokens exceeds max_len={self.max_len}"
                    )
                past = None if start == 0 else self._past[slot]
                ids = torch.tensor([list(chunk)], dtype=torch.long, device=device)
                out = self.model(input_ids=ids, past_key_values=past, use_cache=True)
                self._past[slot] = out.past_key_values
                rows.append(out.logits[0, -1].to(device="cpu", dtype=torch.float32))
        return torch.stack(rows)

    def move_slot(self, src: int, dst: int, length: int) -> None:
        """Hand slot ``src``'s cache to ``dst``."""
        if src != dst:
            self._past[dst] = self._past[src]
            self._past[src] = None


def make_runner(model: Any, *, weights: str | None, max_slots: int, max_len: int) -> ModelRunner:
    """The fastest runner for ``model``.

    Parameters
    ----------
    model
        A ``transformers`` causal LM.
    weights
        ``"fp32"``, ``"bf16"`` or ``"int8"`` for Llama-family models
        (``None``: :data:`DEFAULT_WEIGHTS`); other models run as loaded.
    max_slots, max_len
        Sequences held at once, and tokens per sequence.

    Returns
    -------
    ModelRunner

    Raises
    ------
    ValueError
        For an unknown weight format.
    """
    if weights is not None and weights not in WEIGHT_FORMATS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHT_FORMATS)}, not {weights!r}")
    if supports(model):
        return FastLlama(model, weights=weights or DEFAULT_WEIGHTS, max_slots=max_slots, max_len=max_len)
    if weights not in (None, "fp32"):
        logger.warning(
            "weights=%s is offered for Llama-family models only; running the model as loaded", weights
        )
    return TransformersRunner(model, max_slots=max_slots, max_len=max_len)


def set_threads(torch: Any, model: Any, threads: int | None) -> int:
    """Set torch's CPU threads (process-wide); returns the number in use.

    Parameters
    ----------
    torch
        The torch module.
    model
        The model (its size decides the default).
    threads
        The number to use; ``None``: 1 for models under
        :data:`SMALL_MODEL_PARAMETERS` (their steps are too small to share, and
        spinning threads collapse when other processes use the cores), else
        torch's default.

    Returns
    -------
    int
    """
    if threads is not None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        torch.set_num_threads(int(threads))
    else:
        try:
            size = sum(int(p.numel()) for p in model.parameters())
        except Exception:  # pragma: no cover - exotic model objects
            size = SMALL_MODEL_PARAMETERS
        if size < SMALL_MODEL_PARAMETERS:
            torch.set_num_threads(1)
    return int(torch.get_num_threads())
