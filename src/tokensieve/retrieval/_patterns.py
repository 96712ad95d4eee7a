"""Slot patterns: the sparse levels' shapes as one byte per node, and their offset tables.

A sparse level at most :data:`PATTERN_MAX_WIDTH` wide with many multi-child
nodes keeps, per node, the id of its slot pattern (its child count, and which
neighbouring children share a mask byte). The numpy step reads a batch's slot
offsets from these tables with one ``take`` (see ``_numpy_step``); the index
builds the ids once per level (:func:`slot_patterns`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["PATTERN_MAX_WIDTH", "PATTERN_MIN_MULTI", "PatternSlots", "narrow_width", "slot_patterns"]

#: Widest sparse level served by slot patterns (``2 ** width`` pattern ids fit a uint8).
PATTERN_MAX_WIDTH = 8
#: Fewest nodes with more than one child (a fraction of the level) for slot patterns:
#: levels below it are served by the one-child path.
PATTERN_MIN_MULTI = 1 / 256
#: A slot offset past every edge array: a ``take`` there raises ``IndexError``.
_FAR = 1 << 48


def slot_patterns(
    row_ptr: np.ndarray, edge_token: np.ndarray, lo: int, hi: int, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Slot-pattern ids of the nodes ``lo <= n < hi`` (one level) and the pattern offsets.

    A node with ``c >= 1`` children whose mask bytes (``token >> 3``) are all
    distinct has pattern ``c - 1`` (below ``width``); one whose children ``j``
    and ``j + 1`` share a byte for the set bits ``j`` of ``s != 0`` has
    pattern ``width + 2 ** (c - 1) - c + s - 1`` (``width`` or more, so one
    ``max`` tells a batch with shared bytes); a childless node has pattern
    ``2 ** width - 1``.

    Returns
    -------
    info : numpy.ndarray
        ``(hi - lo,)`` uint8 pattern id per node.
    offsets : numpy.ndarray
        ``(2 ** width, width)`` int64 slot offsets from the node's first edge:
        ``min(j, c - 1)``, or a far offset (no edge there) for the childless
        pattern.
    """
    starts = row_ptr[lo : hi + 1].astype(np.int64)
    count = np.diff(starts)
    shared = np.zeros(hi - lo, dtype=np.int64)
    e0, e1 = int(starts[0]), int(starts[-1])
    if e1 - e0 > 1:
        byte = edge_token[e0:e1] >> 3
        same = byte[1:] == byte[:-1]
        first = np.zeros(e1 - e0, dtype=bool)
        first[starts[:-1][count > 0] - e0] = True
        same &= ~first[1:]  # a pair across two nodes shares nothing
        edge = np.flatnonzero(same) + e0
        if edge.size:
            node = np.searchsorted(starts, edge, side="right") - 1
            np.bitwise_or.at(shared, node, np.left_shift(1, edge - starts[node]))
    c = np.maximum(count, 1)
    ids = np.where(shared == 0, c - 1, width + np.left_shift(1, c - 1) - c + shared - 1)
    ids[count == 0] = (1 << width) - 1
    slots = np.arange(width)
    offsets = np.full((1 << width, width), _FAR, dtype=np.int64)
    for k in range(1, width + 1):
        first_shared = width + (1 << (k - 1)) - k
        for pattern in (slice(k - 1, k), slice(first_shared, first_shared + (1 << (k - 1)) - 1)):
            offsets[pattern] = np.minimum(slots, k - 1)
    return ids.astype(np.uint8), offsets


def narrow_width(histogram: np.ndarray, rows: int) -> int:
    """Slots per row for the first try at a slot-pattern level of ``rows`` rows.

    ``histogram[c]`` counts the level's nodes with ``c`` children. A batch
    with a row of more children is retried at the level's full width, which
    costs about two slots per row more; a row is taken to sit on a node with
    ``c`` children with a probability proportional to ``c * histogram[c]``
    (the items below it). Returns the width with the least expected cost.
    """
    width = len(histogram) - 1
    weight = histogram * np.arange(width + 1)
    total = max(int(weight.sum()), 1)
    best, best_cost = width, float(width)
    for w in range(1, width):
        wider = float(weight[w + 1 :].sum()) / total  # a row needs more than w slots
        cost = w + (1.0 - math.exp(-rows * wider)) * (width - w + 2)
        if cost < best_cost:
            best, best_cost = w, cost
    return best


class PatternSlots:
    """The slot offsets of some slot patterns at one width, bound for a row count.

    Attributes
    ----------
    width
        Slots per row.
    table
        One ``width * 8``-byte item per pattern id (the ids served, from 0):
        a 1-D ``take`` of the rows' pattern ids gives every row's int64 edge
        offsets, and raises ``IndexError`` for any other id.
    row
        ``rows * width`` row number of every flat position.
    row_base
        ``row * width`` per row: the flat position of each row's first slot.
    byte_offsets
        ``row * 4 * words`` for every flat position (the row's first mask byte).
    """

    __slots__ = ("byte_offsets", "row", "row_base", "table", "width")

    def __init__(self, offsets: np.ndarray, rows: int, words: int) -> None:
        self.width = width = offsets.shape[1]
        as_items = np.dtype((np.void, 8 * width))
        self.table = np.ascontiguousarray(offsets, dtype=np.int64).view(as_items).reshape(-1)
        base = np.arange(rows, dtype=np.int64)
        self.row = np.repeat(base, width)
        self.row_base = base * width
        self.byte_offsets = np.repeat(base * (4 * words), width)
