"""Packed rows of the tokens whose count of something is at most a bound.

The masks derived from another state's (the copies of a layout place, the
later layers of a counted string) keep the tokens whose count (leading blanks,
units begun) fits the state's room: one AND with a row of this kind.
"""

from __future__ import annotations

import threading

import numpy as np

from .token_masks import or_distinct_bits

__all__ = ["CountRows"]

#: rows that clear more tokens than this are packed from a comparison of every count
_FEW_IDS = 4096


class CountRows:
    """The tokens of a vocabulary by a count per token, as packed rows ``count <= n``.

    Parameters
    ----------
    counts
        ``(V,)`` non-negative integers, one per token id (0 for the tokens never to clear).
    num_words
        Width of a packed mask in ``int32`` words (the words past ``V`` are never cleared).
    """

    def __init__(self, counts: np.ndarray, num_words: int) -> None:
        counts = np.asarray(counts)
        #: the largest count (0 for none)
        self.longest = int(counts.max(initial=0))
        self._counts = counts.astype(np.int16 if self.longest < 1 << 15 else np.int64)
        self._num_words = num_words
        # tokens per count; the tokens over ``n`` are those over the largest count that is at most
        # ``n``, so one row per distinct count will do
        per_count = np.bincount(self._counts, minlength=1)
        self._over = per_count[::-1].cumsum()[::-1]  # tokens with at least each count
        self._distinct = np.union1d(np.flatnonzero(per_count), [0]).astype(np.int64)
        self._rows: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    @property
    def distinct(self) -> np.ndarray:
        """The distinct counts, ascending, 0 first (``int64``)."""
        return self._distinct

    def at_most(self, n: int) -> np.ndarray | None:
        """Packed ``int32`` mask of the tokens whose count is at most ``n``.

        ``None`` when that is every token (``n >= longest``). Memoised per
        distinct count, read-only; the words past the vocabulary's end are set.
        """
        if n >= self.longest:
            return None
        distinct = self.distinct
        at = int(distinct[int(np.searchsorted(distinct, n, side="right")) - 1])  # the largest count <= n
        row = self._rows.get(at)
        if row is None:
            if int(self._over[at + 1]) > _FEW_IDS:  # most tokens: packbits beats their bits one by one
                flags = np.zeros(self._num_words * 32, dtype=bool)
                np.greater(self._counts, at, out=flags[: self._counts.size])
                row = np.packbits(flags, bitorder="little").view(np.int32)
                np.invert(row, out=row)
            else:
                ids = np.flatnonzero(np.greater(self._counts, at))
                over = np.zeros(self._num_words, dtype=np.int32)
                bits = np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)).view(np.int32)
                or_distinct_bits(over, ids >> 5, bits)
                row = np.invert(over)
            row.setflags(write=False)
            with self._lock:
                row = self._rows.setdefault(at, row)
        return row

    @property
    def nbytes(self) -> int:
        """Bytes held by the memoised rows and the counts."""
        with self._lock:
            rows = sum(r.nbytes for r in self._rows.values())
        return int(self._counts.nbytes + self._over.nbytes + self._distinct.nbytes + rows)
