"""Per-node item ranges, the data behind decode-time item filters.

Unique catalog sequences are ranked in lexicographic order (the end token is
compared by its id like any token), which is the depth-first order of the
trie's terminals (nodes with no children: leaves, and the nodes an end token
leads to). The terminals below a node therefore have consecutive ranks, so
each node owns a rank range ``[lo, hi)``. With a prefix sum over an "allowed"
vector indexed by rank, "does this subtree hold an allowed item" is two
lookups and a subtraction.
"""

from __future__ import annotations

import numpy as np

__all__ = ["item_ranges"]


def item_ranges(
    row_ptr: np.ndarray, level_start: np.ndarray, end_node: int | None, num_unique: int, pad: int
) -> np.ndarray:
    """``(num_nodes + 1 + pad, 2)`` int array of ``[lo, hi)`` rank ranges.

    Computed from the CSR alone: terminal counts bottom-up, then range starts
    top-down, one vectorised pass per level. The END node and the (virtual)
    target of its end-token edge get ``[num_unique, num_unique + 1)``: filters
    mark that extra rank allowed, so finished rows always keep the end token.
    Rows past the last node are padding for fixed-width gathers.
    """
    num_real = int(level_start[-1])
    dtype = np.int32 if num_unique < 2**31 - 2 else np.int64
    deg = np.diff(row_ptr[: num_real + 1]).astype(np.int64)
    count = np.zeros(num_real, dtype=np.int64)
    depths = len(level_start) - 1
    for d in range(depths - 1, -1, -1):
        lo, hi = int(level_start[d]), int(level_start[d + 1])
        seg = deg[lo:hi]
        if d + 1 < depths:
            c_lo, c_hi = int(level_start[d + 1]), int(level_start[d + 2])
            csum = np.zeros(c_hi - c_lo + 1, dtype=np.int64)
            np.cumsum(count[c_lo:c_hi], out=csum[1:])
            first = row_ptr[lo:hi].astype(np.int64) + 1 - c_lo
            count[lo:hi] = csum[first + seg] - csum[first]
        count[lo:hi] += seg == 0
    start = np.zeros(num_real, dtype=np.int64)
    for d in range(depths - 1):
        lo, hi = int(level_start[d]), int(level_start[d + 1])
        c_lo, c_hi = int(level_start[d + 1]), int(level_start[d + 2])
        seg = deg[lo:hi]
        csum = np.zeros(c_hi - c_lo + 1, dtype=np.int64)
        np.cumsum(count[c_lo:c_hi], out=csum[1:])
        first = row_ptr[lo:hi].astype(np.int64) + 1 - c_lo
        offset = np.repeat(start[lo:hi] - csum[first], seg)
        start[c_lo:c_hi] = offset + csum[:-1]
    extra = 1 if end_node is not None else 0
    out = np.zeros((num_real + extra + 1 + pad, 2), dtype=dtype)
    out[:num_real, 0] = start
    out[:num_real, 1] = start + count
    if end_node is not None:
        out[num_real : num_real + 2] = (num_unique, num_unique + 1)
    return out
