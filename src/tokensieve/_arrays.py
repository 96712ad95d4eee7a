"""Array helpers shared by the pipeline stages.

``numpy.unique(a)`` with no other output hashes integer arrays in recent numpy
releases, which is several times slower than a sort for the sizes the mask walks
handle (numpy 2.4 on this project's machines: 100,000 ``int64`` values, about
10 ms hashed against 2 ms sorted; a million, 1 s against 20 ms). With
``return_inverse`` or ``return_index`` numpy sorts, and is fine.
"""

from __future__ import annotations

import numpy as np

__all__ = ["concat_ranges", "or_distinct_bits", "sorted_unique"]

#: lists of at most this many bits are or-ed in by a plain loop (see :func:`or_distinct_bits`)
_LOOP_MAX = 5
#: bit lists at least this long are or-ed in by a ``bincount`` (see :func:`or_distinct_bits`)
_BINCOUNT_MIN = 256
#: ... when they fill at least one word in this many (a ``bincount`` costs a pass over the whole row)
_BINCOUNT_DENSITY = 8


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """The sorted distinct values of ``a``, flattened (``numpy.unique(a)``), by a sort.

    Parameters
    ----------
    a
        Any array; it is flattened.

    Returns
    -------
    numpy.ndarray
        1-D, sorted, distinct, of ``a``'s dtype.
    """
    s = np.sort(a, axis=None)
    if s.size > 1:
        keep = np.empty(s.size, dtype=bool)
        keep[0] = True
        np.not_equal(s[1:], s[:-1], out=keep[1:])
        s = s[keep]
    return s


def concat_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(starts[i], starts[i] + lengths[i])`` over ``i``, without a Python loop.

    Parameters
    ----------
    starts, lengths
        ``int64`` arrays of the same length; lengths are not negative.

    Returns
    -------
    numpy.ndarray
        ``int64``, ``lengths.sum()`` long.
    """
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if ends.size else 0
    pos = np.repeat(starts - ends + lengths, lengths)
    pos += np.arange(total, dtype=np.int64)
    return pos


def or_distinct_bits(out: np.ndarray, words: np.ndarray, bits: np.ndarray) -> None:
    """``out[words[i]] |= bits[i]`` for every ``i``, where no ``(word, bit)`` pair repeats.

    ``np.bitwise_or.at`` costs tens of nanoseconds per element; for long lists a
    ``bincount`` is several times faster: distinct bits of one word add up to
    their union, exactly, in float64. ``out`` is ``int32`` or ``uint32``.
    """
    if words.size <= _LOOP_MAX:  # a few: a plain loop (ufunc.at costs microseconds per call)
        for w, b in zip(words.tolist(), bits.tolist(), strict=True):
            out[w] |= b
        return
    if words.size < _BINCOUNT_MIN or words.size * _BINCOUNT_DENSITY < out.size:
        np.bitwise_or.at(out, words, bits)  # few bits, or sparse in a long row: ``at`` is linear in them
        return
    weights = bits.view(np.uint32) if bits.dtype == np.int32 else bits
    union = np.bincount(words, weights=weights, minlength=out.size).astype(np.uint32)
    out |= union.view(out.dtype)
