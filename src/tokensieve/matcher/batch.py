"""BatchGrammarMatcher: masks and token acceptance for many sequences in one call."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .matcher import GrammarMatcher

__all__ = ["BatchGrammarMatcher"]


class BatchGrammarMatcher:
    """Fills a ``(batch, ceil(V/32))`` bitmask for many matchers at once.

    Each matcher's mask comes from its compiled grammar's memo (one row copy
    when the state was seen before); rows are written with a single fancy
    assignment. Masks that are not memoised yet are computed on a thread pool:
    the trie walks run in numpy, which releases the GIL.

    Parameters
    ----------
    max_threads
        Threads used for cache misses (1: compute them in the calling thread).
    """

    def __init__(self, max_threads: int = 4) -> None:
        self.max_threads = max(1, int(max_threads))
        self._pool: ThreadPoolExecutor | None = None

    def fill_next_token_bitmask(
        self,
        matchers: Sequence[GrammarMatcher],
        bitmask: Any,
        indices: Sequence[int] | None = None,
    ) -> None:
        """Write matcher ``i``'s allowed tokens into row ``indices[i]`` (default: row ``i``).

        Parameters
        ----------
        matchers
            The matchers, one per row to fill.
        bitmask
            ``int32 (batch, ceil(V/32))`` numpy array or torch tensor.
        indices
            Target rows; defaults to ``range(len(matchers))``.
        """
        if indices is None:
            indices = range(len(matchers))
        if len(indices) != len(matchers):
            raise ValueError(f"{len(matchers)} matchers but {len(indices)} indices")
        if not matchers:
            return
        if self.max_threads > 1 and len(matchers) > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_threads, thread_name_prefix="tokensieve-mask")
            masks = list(self._pool.map(lambda m: m.next_token_mask(), matchers))
        else:
            masks = [m.next_token_mask() for m in matchers]
        width = max(mask.shape[0] for mask in masks)
        rows = np.zeros((len(masks), width), dtype=np.int32)
        for i, mask in enumerate(masks):
            rows[i, : mask.shape[0]] = mask
        idx = np.asarray(list(indices), dtype=np.int64)
        if isinstance(bitmask, np.ndarray):
            if bitmask.dtype != np.int32 or bitmask.ndim != 2 or bitmask.shape[1] < width:
                raise ValueError(
                    f"bitmask must be int32 (batch, >= {width}); got {bitmask.dtype} {bitmask.shape}"
                )
            bitmask[idx, :width] = rows
            bitmask[idx, width:] = 0
            return
        import torch

        if not isinstance(bitmask, torch.Tensor) or bitmask.dtype != torch.int32:
            raise ValueError("bitmask must be an int32 numpy array or torch tensor")
        src = torch.from_numpy(rows)
        bitmask[torch.from_numpy(idx).to(bitmask.device), :width] = src.to(bitmask.device)
        bitmask[torch.from_numpy(idx).to(bitmask.device), width:] = 0

    @staticmethod
    def accept_token(matchers: Sequence[GrammarMatcher], tokens: Sequence[int]) -> list[bool]:
        """Feed ``tokens[i]`` to ``matchers[i]``; the result of each ``accept_token``."""
        if len(matchers) != len(tokens):
            raise ValueError(f"{len(matchers)} matchers but {len(tokens)} tokens")
        return [m.accept_token(int(t)) for m, t in zip(matchers, tokens, strict=True)]

    def close(self) -> None:
        """Shut the thread pool down."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> BatchGrammarMatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
