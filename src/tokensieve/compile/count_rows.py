"""Packed rows of the tokens whose count of something is at most a bound.

The masks derived from another state's (the copies of a layout place, the
later layers of a counted string) keep the tokens whose count (leading blanks,
units begun) fits the state's room: one AND with a row of this kind.
"""

from __future__ import annotations

import threading

import numpy as np

from .._arrays import or_distinct_bits

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

    Notes
    -----
    :meth:`sparse` keeps only the tokens whose count is not 0, for counts that
    few tokens have (a place of a unit that few tokens can be read from).
    """

    def __init__(self, counts: np.ndarray, num_words: int) -> None:
        counts = np.asarray(counts)
        #: the largest count (0 for none)
        self.longest = int(counts.max(initial=0))
        self._counts: np.ndarray | None = counts.astype(np.int16 if self.longest < 1 << 15 else np.int64)
        self._ids: np.ndarray = np.zeros(0, dtype=np.int32)  # the sparse form: unused
        self._sorted_counts: np.ndarray = np.zeros(0, dtype=np.int16)
        self._num_words = num_words
        # tokens per count; the tokens over ``n`` are those over the largest count that is at most
        # ``n``, so one row per distinct count will do
        self._index(np.bincount(self._counts, minlength=1))

    @classmethod
    def sparse(cls, ids: np.ndarray, counts: np.ndarray, num_words: int) -> CountRows:
        """The rows of the tokens ``ids`` with these (positive) ``counts``, every other token's count 0.

        Holds the tokens by count (about 6 bytes each) rather than a count per token of the vocabulary.
        """
        counts = np.asarray(counts, dtype=np.int64)
        if counts.size and counts.min() <= 0:
            raise ValueError("the counts of a sparse CountRows are positive")
        self = cls.__new__(cls)
        self.longest = int(counts.max(initial=0))
        self._counts = None
        order = np.argsort(counts, kind="stable")
        self._ids = np.asarray(ids, dtype=np.int32).take(order)
        self._sorted_counts = counts.take(order).astype(np.int16 if self.longest < 1 << 15 else np.int64)
        self._num_words = num_words
        self._index(np.bincount(self._sorted_counts, minlength=1))
        return self

    def _index(self, per_count: np.ndarray) -> None:
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
            row = self._row_over(at)
            row.setflags(write=False)
            with self._lock:
                row = self._rows.setdefault(at, row)
        return row

    def _row_over(self, at: int) -> np.ndarray:
        """A new packed row clearing the tokens whose count is over ``at``."""
        counts = self._counts
        if int(self._over[at + 1]) > _FEW_IDS:  # most tokens: packbits beats their bits one by one
            flags = np.zeros(self._num_words * 32, dtype=bool)
            if counts is None:
                flags[self._listed_over(at)] = True
            else:
                np.greater(counts, at, out=flags[: counts.size])
            row = np.packbits(flags, bitorder="little").view(np.int32)
            np.invert(row, out=row)
            return row
        ids = self._listed_over(at) if counts is None else np.flatnonzero(np.greater(counts, at))
        over = np.zeros(self._num_words, dtype=np.int32)
        bits = np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)).view(np.int32)
        or_distinct_bits(over, ids >> 5, bits)
        return np.invert(over)

    def _listed_over(self, at: int) -> np.ndarray:
        """The tokens listed (:meth:`sparse`) whose count is over ``at`` (``int64``)."""
        return self._ids[int(np.searchsorted(self._sorted_counts, at, side="right")) :].astype(np.int64)

    @property
    def nbytes(self) -> int:
        """Bytes held by the memoised rows and the counts."""
        with self._lock:
            rows = sum(r.nbytes for r in self._rows.values())
        held = (
            self._ids.nbytes
            + self._sorted_counts.nbytes
            + (0 if self._counts is None else self._counts.nbytes)
        )
        return int(held + self._over.nbytes + self._distinct.nbytes + rows)
