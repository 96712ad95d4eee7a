"""The batched step on numpy arrays.

Every function works on all rows at once with a fixed, small number of numpy
calls; at 100-odd rows one call costs 0.3-1 µs, so the call count is the cost:

* dense levels: one gather of ``W`` packed words per row (filling), or one
  word, one child-table entry and a popcount per row (following a token);
* sparse levels: a fixed-width gather of the level's maximum branching factor
  ``B`` from the CSR token array, laid out flat (``rows * B``) with cached
  index patterns so that no call broadcasts; masks are built with one
  ``np.add.at`` of disjoint bit values (a node's tokens are distinct, so adding
  their bits equals or-ing them).

* unary levels (every node has exactly one child, fixed-length catalogs):
  node ``n``'s only edge is ``n + offset``, so a fill gathers one token per
  row and writes one bit, and following it is a comparison and ``+ 1``.

Filling a sparse level returns the gathered slice (:class:`Gathered`) so that
following the chosen tokens on the same rows needs no second gather.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .filter import ItemFilter
    from .index import StaticIndex

__all__ = [
    "Gathered",
    "SparsePlan",
    "allowed_bool",
    "apply_mask",
    "candidates",
    "fill_bitmask",
    "follow",
    "next_nodes",
]

_NEG_INF = -np.inf
# 0-d arrays: numpy converts them faster than Python ints in ufunc calls.
_FIVE = np.array(5, dtype=np.int64)
_ONE = np.array(1, dtype=np.int64)


class SparsePlan:
    """Everything one sparse level needs for a given row count, bound once.

    Attributes
    ----------
    row, slot
        ``rows * width`` row number and slot number of every flat position.
    width
        The level's fixed slice width.
    """

    __slots__ = ("_offsets", "bit_value", "edge_token", "row", "row_end", "row_ptr", "rows", "slot", "width")

    def __init__(self, ix: StaticIndex, rows: int, level: int) -> None:
        width = ix._level_width[level]
        self.rows = rows
        self.width = width
        self.row = np.repeat(np.arange(rows, dtype=np.int64), width)
        # Same dtype as the row offsets, so that adding them needs no cast.
        self.slot = np.tile(np.arange(width, dtype=ix.row_ptr.dtype), rows)
        self.row_ptr = ix.row_ptr
        self.row_end = ix._row_end
        self.edge_token = ix.edge_token
        self.bit_value = ix._bit_value
        self._offsets: dict[int, np.ndarray] = {}

    def offsets(self, words: int) -> np.ndarray:
        """``row * words`` for every flat position (first word of the row)."""
        off = self._offsets.get(words)
        if off is None:
            off = self.row * words
            self._offsets[words] = off
        return off

    def gather(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``start`` per row; flat ``idx`` (edge ids), ``tok`` (edge_token's dtype) and ``inside`` per slot."""
        start = self.row_ptr.take(nodes)
        idx = start.take(self.row)
        idx += self.slot
        tok = self.edge_token.take(idx)
        inside = idx < self.row_end.take(nodes).take(self.row)
        return start, idx, tok, inside


class Gathered:
    """What one fill gathered for some rows, reusable by :func:`next_nodes`."""

    __slots__ = ("idx", "inside", "level", "nodes", "start", "tok")

    def __init__(
        self,
        nodes: np.ndarray,
        level: int,
        start: np.ndarray,
        tok: np.ndarray | None,
        inside: np.ndarray | None,
        idx: np.ndarray | None = None,
    ) -> None:
        self.nodes = nodes.copy()
        self.level = level
        self.start = start
        self.tok = tok
        self.inside = inside
        self.idx = idx

    def matches(self, nodes: np.ndarray, level: int) -> bool:
        """Whether this was gathered for these node ids (by value) at this level."""
        return (
            level == self.level
            and nodes.shape == self.nodes.shape
            and not np.count_nonzero(nodes != self.nodes)
        )


def _alive(ix: StaticIndex, idx: np.ndarray, filt: ItemFilter) -> np.ndarray:
    """Whether the child of each edge in ``idx`` has an allowed item below it."""
    counts = filt.prefix.take(ix._filter_support().take(idx + 1, axis=0))
    return counts[:, 1] > counts[:, 0]


def candidates(
    ix: StaticIndex, nodes: np.ndarray, level: int, filt: ItemFilter | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The level's fixed-width CSR slice for every row, as ``(rows, B)`` arrays.

    Returns ``start`` (first edge of each row), ``idx`` (edge ids), ``tok``
    (their tokens) and ``valid`` (slot inside the row and, with a filter,
    leading to an allowed item). The child of edge ``e`` is node ``e + 1``.
    """
    plan = ix._plan(len(nodes), level)
    start, idx, tok, valid = plan.gather(nodes)
    tok = tok.astype(np.int64)
    if filt is not None:
        valid &= _alive(ix, idx, filt)
    shape = (len(nodes), plan.width)
    return start, idx.reshape(shape), tok.reshape(shape), valid.reshape(shape)


def _dense_rows(ix: StaticIndex, nodes: np.ndarray, level: int) -> np.ndarray:
    lo, _, count = ix._level_bounds[level]
    local = nodes - lo
    if ix._end is not None and level > 0:
        np.minimum(local, count, out=local)
    return local


def fill_bitmask(
    ix: StaticIndex, nodes: np.ndarray, level: int, bitmask: np.ndarray, filt: ItemFilter | None
) -> Gathered:
    """Write one mask row per node into ``bitmask`` (int32, rows x >= W words)."""
    rows, words = bitmask.shape
    if level < ix._dense_depth:
        table = ix._dense_mask[level] if filt is None else filt.dense_mask[level]
        local = _dense_rows(ix, nodes, level)
        if words == ix._words and bitmask.flags.c_contiguous:
            np.take(table, local, axis=0, out=bitmask)
        else:
            bitmask[:, : ix._words] = table.take(local, axis=0)
            bitmask[:, ix._words :] = 0
        return Gathered(nodes, level, local, None, None)
    plan = ix._plan(rows, level)
    off = ix._unary_offset[level]
    if off is not None:
        return _fill_unary(ix, nodes, level, bitmask, filt, plan, off)
    start, idx, tok, inside = plan.gather(nodes)
    valid = inside if filt is None else inside & _alive(ix, idx, filt)
    bits = plan.bit_value.take(tok)
    bits *= valid
    flat = tok >> _FIVE
    flat += plan.offsets(words)
    if bitmask.flags.c_contiguous:
        bitmask.fill(0)
        np.add.at(bitmask.view(np.uint32).reshape(-1), flat, bits)
    else:
        tmp = np.zeros(rows * words, dtype=np.uint32)
        np.add.at(tmp, flat, bits)
        bitmask[...] = tmp.view(np.int32).reshape(rows, words)
    return Gathered(nodes, level, start, tok, inside, idx)


def _fill_unary(
    ix: StaticIndex,
    nodes: np.ndarray,
    level: int,
    bitmask: np.ndarray,
    filt: ItemFilter | None,
    plan: SparsePlan,
    off: np.ndarray,
) -> Gathered:
    """:func:`fill_bitmask` on a unary level: node ``n``'s only edge is ``n + off``."""
    rows, words = bitmask.shape
    idx = nodes + off
    tok = ix.edge_token.take(idx)
    bits = plan.bit_value.take(tok)
    if filt is not None:
        bits *= _alive(ix, idx, filt)
    flat = tok >> _FIVE
    flat += plan.offsets(words)
    if bitmask.flags.c_contiguous:
        bitmask.fill(0)
        bitmask.view(np.uint32).put(flat, bits)  # one bit per row: no accumulation needed
    else:
        tmp = np.zeros(rows * words, dtype=np.uint32)
        tmp.put(flat, bits)
        bitmask[...] = tmp.view(np.int32).reshape(rows, words)
    return Gathered(nodes, level, idx, tok, None)


def allowed_bool(ix: StaticIndex, nodes: np.ndarray, level: int, filt: ItemFilter | None) -> np.ndarray:
    """Boolean ``(rows, num_columns)`` matrix of the allowed tokens."""
    bitmask = np.empty((len(nodes), ix._words), dtype=np.int32)
    fill_bitmask(ix, nodes, level, bitmask, filt)
    bits = np.unpackbits(bitmask.view(np.uint8), axis=1, count=ix._num_columns, bitorder="little")
    return bits.view(bool)


def apply_mask(
    ix: StaticIndex, logits: np.ndarray, nodes: np.ndarray, level: int, filt: ItemFilter | None
) -> None:
    """Set disallowed logits to ``-inf`` in place."""
    ncols = ix._num_columns
    cols = logits.shape[1]
    if level < ix._dense_depth:
        allowed = allowed_bool(ix, nodes, level, filt)
        if cols < ncols:  # the end column is omitted
            allowed = allowed[:, :cols]
        np.copyto(logits[:, : allowed.shape[1]], _NEG_INF, where=~allowed)
        logits[:, ncols:] = _NEG_INF
        return
    _, _, tok, valid = candidates(ix, nodes, level, filt)
    if cols < ncols:  # the end column (the largest token) is omitted: never a target
        valid &= tok < cols
        tok = np.minimum(tok, cols - 1)
    rows = ix._row_index(len(nodes))
    keep = logits[rows, tok]
    keep[~valid] = _NEG_INF
    # Slots outside a row repeat slot 0 (same column, same value), so the
    # scatter below never writes two different values to one cell.
    tok = np.where(valid, tok, tok[:, :1])
    keep = np.where(valid, keep, keep[:, :1])
    logits.fill(_NEG_INF)
    logits[rows, tok] = keep


def _follow_dense(
    ix: StaticIndex, nodes: np.ndarray, tokens: np.ndarray, level: int, local: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Dense-level children and a "present" word per row (nonzero iff the token is a child)."""
    if level == 0:
        nxt = ix._root_child.take(tokens)
        return nxt, nxt
    words = ix._words_0d
    pos = _dense_rows(ix, nodes, level) if local is None else local * words
    if local is None:
        pos *= words
    pos += tokens >> _FIVE
    word = ix._dense_mask_u32[level].take(pos)
    present = word & ix._bit_value.take(tokens)
    word &= ix._low_bits_of_token.take(tokens)
    nxt = ix._dense_child_flat[level].take(pos).astype(np.int64)
    nxt += np.bitwise_count(word)
    return nxt, present


def _sparse_hits(
    ix: StaticIndex, nodes: np.ndarray, tokens: np.ndarray, level: int, gathered: Gathered | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``start`` per row, flat edge ids, and flat "slot holds the row's token" flags (inside the row only)."""
    plan = ix._plan(len(nodes), level)
    if gathered is None or gathered.tok is None or gathered.inside is None or gathered.idx is None:
        start, idx, tok, inside = plan.gather(nodes)
    else:
        start, idx, tok, inside = gathered.start, gathered.idx, gathered.tok, gathered.inside
    hit = tok == tokens.take(plan.row)
    hit &= inside
    return start, idx, hit


def follow(
    ix: StaticIndex, nodes: np.ndarray, tokens: np.ndarray, level: int
) -> tuple[np.ndarray, np.ndarray]:
    """Children reached by ``tokens`` (int64) and a bool "token is a child" per row.

    The end token always leads to the END node. Rows whose token is not a
    child get an arbitrary node id (see the returned flags).
    """
    if level < ix._dense_depth:
        nxt, present = _follow_dense(ix, nodes, tokens, level)
        found = present != 0
    else:
        start, _, hit = _sparse_hits(ix, nodes, tokens, level, None)
        hit = hit.reshape(len(nodes), ix._level_width[level])
        found = hit.any(axis=1)
        nxt = start + hit.argmax(axis=1)
        nxt += 1
    if ix._end is not None:
        np.copyto(nxt, ix._end, where=tokens == ix._eos)
    return nxt, found


def next_nodes(
    ix: StaticIndex,
    nodes: np.ndarray,
    tokens: np.ndarray,
    level: int,
    check: bool,
    gathered: Gathered | None = None,
) -> np.ndarray:
    """Children reached by ``tokens``; with ``check``, raise on tokens that are not children.

    ``gathered`` (from :func:`fill_bitmask` on the same rows) saves the gather.
    """
    rows = len(nodes)
    if level < ix._dense_depth:
        local = None if gathered is None else gathered.start
        nxt, present = _follow_dense(ix, nodes, tokens, level, local)
        ok = np.count_nonzero(present) == rows
    elif ix._unary_offset[level] is not None:
        if gathered is not None and gathered.tok is not None:
            idx, tok = gathered.start, gathered.tok
        else:
            idx = nodes + ix._unary_offset[level]
            tok = ix.edge_token.take(idx)
        ok = np.count_nonzero(tok == tokens) == rows
        nxt = idx + _ONE
    else:
        start, idx, hit = _sparse_hits(ix, nodes, tokens, level, gathered)
        # at most one hit per row (a node's tokens are distinct), in row order
        pos = hit.nonzero()[0]  # hit is 1-D
        ok = pos.size == rows
        if ok:
            nxt = idx.take(pos) + _ONE  # int64 (a 0-d int64 operand sets the result type)
        else:
            nxt = start + hit.reshape(rows, ix._level_width[level]).argmax(axis=1)
            nxt += _ONE
    if ix._end is not None:
        np.copyto(nxt, ix._end, where=tokens == ix._eos)
    if check and not ok:
        _, found = follow(ix, nodes, tokens, level)
        ix._raise_not_child(nodes, tokens, level, found)
    return nxt
