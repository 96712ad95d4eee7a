"""Array helpers shared by the pipeline stages.

``numpy.unique(a)`` with no other output hashes integer arrays in recent numpy
releases, which is several times slower than a sort for the sizes the mask walks
handle (numpy 2.4 on this project's machines: 100,000 ``int64`` values, about
10 ms hashed against 2 ms sorted; a million, 1 s against 20 ms). With
``return_inverse`` or ``return_index`` numpy sorts, and is fine.
"""

from __future__ import annotations

import numpy as np

__all__ = ["concat_ranges", "sorted_unique"]


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
