"""Where a DFA's computed masks are kept: packed rows, and batches' token lists packed on first use.

A walk of many states returns a :class:`~tokensieve.compile.mask_batch.MaskBatch`:
its masks packed at once when they fit in a few megabytes, otherwise kept as
token lists and packed when first asked for. Packed rows are memoised, least
recently stored first, within the grammar's ``max_mask_cache_bytes``; the
batches are forgotten together once they hold half of it. Short token lists
may also be kept as their distinct words and bits (see
:meth:`CompiledGrammar.fill_row <tokensieve.compile.compiled_grammar.CompiledGrammar.fill_row>`).

Reads of :attr:`MaskCache.masks` take no lock; every change and every look-up
of a batch holds the cache's lock (another thread may forget the batches).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ..bitmask import copy_friendly
from .mask_batch import MaskBatch

__all__ = ["MaskCache"]

#: precomputed masks are packed at once while they take at most this many bytes
_PACK_AT_ONCE_BYTES = 8 << 20


class MaskCache:
    """The masks of one automaton's states computed so far.

    Parameters
    ----------
    num_states
        States of the automaton.
    num_words
        Width of a mask, in ``int32`` words.
    max_bytes
        Bytes of packed masks kept at most (token lists: half of it).

    Attributes
    ----------
    masks : OrderedDict of int to numpy.ndarray
        Packed read-only masks by state, least recently stored first.
    known : numpy.ndarray
        ``bool (S,)``: whether a state's mask is in :attr:`masks` or a batch.
    sparse : dict
        Short token lists by state, as (distinct words, their bits).
    """

    def __init__(self, num_states: int, num_words: int, max_bytes: int) -> None:
        self._num_words = num_words
        self._max_bytes = max_bytes
        # packed masks, least recently stored first
        self.masks: OrderedDict[int, np.ndarray] = OrderedDict()
        self._mask_sizes: dict[int, int] = {}
        self._mask_bytes = 0
        # token lists from batched walks, packed on first use: state -> (batch, index)
        self._batches: list[MaskBatch] = []
        self._batch_of = np.full(num_states, -1, dtype=np.int32)
        self._index_in_batch = np.zeros(num_states, dtype=np.int32)
        self._list_bytes = 0
        # short token lists as (distinct words, their bits), see fill_row; counted in _list_bytes
        self.sparse: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.known = np.zeros(num_states, dtype=bool)  # in masks or a batch
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """Bytes of the packed masks and the token lists kept."""
        return self._mask_bytes + self._list_bytes

    def keep_sparse(self, state: int, sparse: tuple[np.ndarray, np.ndarray]) -> None:
        """Keep ``state``'s short token list as its distinct words and bits, unless its batch was forgotten."""
        with self._lock:
            if self._batch_of[state] >= 0:  # not forgotten meanwhile
                self.sparse[state] = sparse
                self._list_bytes += sparse[0].nbytes + sparse[1].nbytes

    def batch_entry(self, state: int) -> tuple[MaskBatch | None, int]:
        """The batch holding ``state``'s mask (``None`` if none does) and its index there."""
        with self._lock:  # the batches may be dropped by another thread
            batch_id = int(self._batch_of[state])
            batch = self._batches[batch_id] if batch_id >= 0 else None
            return batch, int(self._index_in_batch[state])

    def keep_packed(self, state: int, mask: np.ndarray) -> None:
        """Memoise ``mask``, just packed from ``state``'s token list (read-only from now on)."""
        mask.setflags(write=False)
        self.store(state, mask, friendly=True)

    def add_batch(self, batch: MaskBatch) -> None:
        """Keep a batch's masks, packed at once when they fit in a few megabytes.

        Dense and packed rows go to the mask cache; the others are indexed.
        """
        if batch.packed is None and len(batch) * self._num_words * 4 <= _PACK_AT_ONCE_BYTES:
            batch.pack()
        for index, mask in batch.dense.items():
            mask.setflags(write=False)
            self.store(int(batch.states[index]), mask)
        if batch.packed is not None:  # rows of the batch: their memory is counted with it
            for index, state in enumerate(batch.states.tolist()):
                self.store(state, batch.packed[index], counted=False)
        with self._lock:
            batch_id = len(self._batches)
            self._batches.append(batch)
            self._batch_of[batch.states] = batch_id
            self._index_in_batch[batch.states] = np.arange(len(batch), dtype=np.int32)
            self.known[batch.states] = True
            self._list_bytes += batch.nbytes
            if self._list_bytes > self._max_bytes // 2:
                # forget every batch (its masks are recomputed when needed), and the rows shared with one
                for s in [s for s, size in self._mask_sizes.items() if not size]:
                    del self.masks[s], self._mask_sizes[s]
                self._batches.clear()
                self._batch_of[:] = -1
                self.sparse.clear()
                self._list_bytes = 0
                self.known[:] = False
                if self.masks:
                    self.known[np.fromiter(self.masks, dtype=np.int64)] = True

    def store(self, state: int, mask: np.ndarray, counted: bool = True, friendly: bool = False) -> None:
        """Memoise ``mask``; ``counted=False`` for rows whose memory a batch already accounts for.

        ``friendly``: ``mask`` was made by :func:`~tokensieve.bitmask.friendly_zeros`, so it
        already sits where copies from it are fast.
        """
        if not friendly:
            placed = copy_friendly(mask)
            if placed is not mask:  # a slow place to copy from: the copy is counted
                mask, counted = placed, True
        size = mask.nbytes if counted else 0
        with self._lock:
            if state in self.masks:
                return
            self.masks[state] = mask
            self._mask_sizes[state] = size
            self.known[state] = True
            self._mask_bytes += size
            while self._mask_bytes > self._max_bytes and len(self.masks) > 1:
                old_state, _ = self.masks.popitem(last=False)
                self._mask_bytes -= self._mask_sizes.pop(old_state)
                self.known[old_state] = self._batch_of[old_state] >= 0
