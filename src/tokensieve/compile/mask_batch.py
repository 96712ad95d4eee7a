"""The masks of several states from one walk, packed or kept as token lists (:class:`MaskBatch`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._arrays import or_distinct_bits
from ..bitmask import friendly_zeros

if TYPE_CHECKING:
    from .trie_tables import TrieTables

__all__ = ["MaskBatch"]

_EMPTY = np.zeros(0, dtype=np.int64)


class MaskBatch:
    """Masks of several states, computed by one walk.

    A mask with many tokens is packed at once (``dense``); the others are kept
    as lists of ``(word, bit)`` pairs (token ``t`` is word ``t >> 5``, bit
    ``1 << (t & 31)``) and packed on demand by :meth:`mask` (a couple of
    microseconds), or all together by :meth:`pack` (then ``packed`` holds
    every row).

    Attributes
    ----------
    states : numpy.ndarray
        ``int64 (k,)``: the states, in the order they were requested.
    accepting : numpy.ndarray
        ``bool (k,)``.
    starts, words, bits : numpy.ndarray
        The allowed tokens of ``states[i]`` are ``words[starts[i]:starts[i + 1]]``
        (``int64``) and ``bits[...]`` (``uint32``), in no particular order, stop
        tokens not included; empty for the dense states.
    dense : dict
        index into ``states`` -> packed ``int32 (num_words,)`` row, stop tokens included.
    """

    def __init__(
        self,
        states: np.ndarray,
        accepting: np.ndarray,
        starts: np.ndarray,
        words: np.ndarray,
        bits: np.ndarray,
        dense: dict[int, np.ndarray],
        builder: TrieTables,
    ) -> None:
        self.states = states
        self.accepting = accepting
        self.starts = starts
        self.words = words
        self.bits = bits
        self.dense = dense
        self.packed: np.ndarray | None = None
        self._num_words = builder.num_words
        self._stop_words = builder._stop_words
        self._stop_bits = builder._stop_bits
        self._stop_pairs = builder.stop_pairs

    def __len__(self) -> int:
        return int(self.states.shape[0])

    @property
    def nbytes(self) -> int:
        """Memory held by the token lists, or by the packed rows once :meth:`pack` ran."""
        if self.packed is not None:
            return int(self.packed.nbytes)
        return int(self.starts.nbytes + self.words.nbytes + self.bits.nbytes)

    def pack(self) -> None:
        """Pack every mask now (:meth:`pack_all`) and keep the rows; the token lists are dropped."""
        packed = self.pack_all()
        packed.setflags(write=False)
        self.packed = packed
        self.words = self.bits = _EMPTY
        self.starts = np.zeros(1, dtype=np.int64)
        self.dense = {}

    def listed(self, index: int) -> bool:
        """Whether the mask of ``states[index]`` is kept as a token list (packed by :meth:`mask` on each call)."""
        return self.packed is None and index not in self.dense

    def mask(self, index: int) -> np.ndarray:
        """The packed ``int32 (num_words,)`` row of ``states[index]`` (a new array for token lists)."""
        if self.packed is not None:
            return self.packed[index]
        row = self.dense.get(index)
        if row is not None:
            return row
        out = friendly_zeros(self._num_words, np.uint32)
        self._write_list(index, out)
        return out.view(np.int32)

    def _write_list(self, index: int, out: np.ndarray) -> np.ndarray:
        """OR the token list of ``states[index]`` into the zeroed ``uint32`` row ``out``.

        Stop tokens are added where the state is accepting. Returns the list's
        words (a slice of :attr:`words`, without the stop words).
        """
        lo, hi = int(self.starts[index]), int(self.starts[index + 1])
        words = self.words[lo:hi]
        or_distinct_bits(out, words, self.bits[lo:hi])
        if self.accepting[index]:
            for word, bit in self._stop_pairs:
                out[word] |= bit
        return words

    def pairs(self, index: int) -> int:
        """How many ``(word, bit)`` pairs the token list of ``states[index]`` holds."""
        return int(self.starts[index + 1] - self.starts[index])

    def fill_sparse(self, index: int, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Write the listed mask of ``states[index]`` into ``row``; return it as ``(words, bits)``.

        ``row`` is ``int32 (num_words,)`` and is cleared first. The result
        rewrites the same row by ``row[words] = bits`` after clearing it: a
        word listed twice carries its whole union both times. Stop tokens are
        included where the state is accepting. Meant for short lists (the bits
        are merged by :func:`or_distinct_bits`, a couple of microseconds).
        """
        row.fill(0)
        words = self._write_list(index, row.view(np.uint32))
        if self.accepting[index] and self._stop_pairs:
            words = np.concatenate((words, self._stop_words))
        else:
            words = words.copy()
        return words, row.take(words)

    def pack_all(self) -> np.ndarray:
        """Every mask of the batch as one packed ``int32 (k, num_words)`` array."""
        k, w = len(self), self._num_words
        stride = -(-w // 16) * 16  # rows start on 64-byte boundaries
        padded = friendly_zeros((k, stride), np.uint32)
        flat = padded.reshape(-1)
        out = padded[:, :w]
        if self.words.size:
            owner = np.repeat(np.arange(k, dtype=np.int64) * stride, np.diff(self.starts))
            or_distinct_bits(flat, owner + self.words, self.bits)
        rows = np.flatnonzero(self.accepting)
        if rows.size and self._stop_words.size:
            np.bitwise_or.at(
                flat,
                (rows[:, None] * stride + self._stop_words[None, :]).reshape(-1),
                np.tile(self._stop_bits, rows.size),
            )
        for index, row in self.dense.items():
            out[index] = row.view(np.uint32)
        return out.view(np.int32)

