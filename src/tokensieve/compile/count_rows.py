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
        # 16 bits when they hold the counts: numpy's stable sort of those is a radix sort
        self._counts = counts.astype(np.int16 if self.longest < 1 << 15 else np.int64)
        self._num_words = num_words
        self._sorted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._rows: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def _order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The tokens with a count, largest first (those over ``n`` are a prefix), their counts, and the
        distinct counts (0 included): the tokens over ``n`` are those over the largest of them that is
        at most ``n``, so one row per distinct count will do. Sorted on first use."""
        known = self._sorted
        if known is None:
            counts: np.ndarray = self._counts
            order = np.argsort(np.negative(counts), kind="stable")
            order = order[: int(np.count_nonzero(counts))]
            descending = counts.take(order).astype(np.int64)
            known = (order, descending, np.unique(np.concatenate([[0], descending])))
            self._sorted = known
        return known

    @property
    def distinct(self) -> np.ndarray:
        """The distinct counts, ascending, 0 first (``int64``)."""
        return self._order()[2]

    def at_most(self, n: int) -> np.ndarray | None:
        """Packed ``int32`` mask of the tokens whose count is at most ``n``.

        ``None`` when that is every token (``n >= longest``). Memoised per
        distinct count, read-only; the words past the vocabulary's end are set.
        """
        if n >= self.longest:
            return None
        ids, descending, distinct = self._order()
        at = int(np.searchsorted(distinct, n, side="right")) - 1  # the largest count <= n
        row = self._rows.get(at)
        if row is None:
            # the prefix of tokens (sorted by decreasing count) whose count is over ``n``
            ids = ids[: int(np.searchsorted(-descending, -n, side="left"))]
            if ids.size > _FEW_IDS:  # most tokens: one comparison and packbits beat their bits one by one
                flags = np.zeros(self._num_words * 32, dtype=bool)
                np.greater(self._counts, n, out=flags[: self._counts.size])
                row = np.packbits(flags, bitorder="little").view(np.int32)
                np.invert(row, out=row)
            else:
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
        """Bytes held by the memoised rows and the sorted tokens."""
        with self._lock:
            rows = sum(r.nbytes for r in self._rows.values())
        known = self._sorted
        order = 0 if known is None else sum(a.nbytes for a in known)
        return int(self._counts.nbytes + order + rows)
