"""The batched step on numpy arrays.

Every function reads the index's :class:`~._tables.StepTables` and works on
all rows at once with a fixed, small number of numpy calls; at 100-odd rows
one call costs 0.3-1 µs, so the call count is the cost.
Arrays that index a ``take`` are int64 wherever that is cheap (a ``take`` with
any other index dtype first casts its indices, and a ufunc over two dtypes
casts one operand), so tokens are widened to int64 once per gather and every
per-token table is read with them directly:

* dense levels: one gather of ``W`` packed words per row (filling), or one
  word, one child-table entry and a popcount per row (following a token);
* sparse levels: a fixed-width gather of the level's maximum branching factor
  ``B`` from the CSR token array, laid out flat (``rows * B``) with cached
  index patterns so that no call broadcasts; which slots lie inside their row
  is one look-up of the row's child count in a ``(B + 1, B)`` table, and the
  mask is one ``np.add.at`` of disjoint bit values (a node's tokens are
  distinct, so adding their bits equals or-ing them);
* sparse levels up to :data:`PATTERN_MAX_WIDTH` wide with many multi-child
  nodes keep one byte per node, the id of its *slot pattern* (child count,
  and which neighbouring children share a mask byte). A pattern's slot
  offsets repeat the node's last child in the slots past its end, so every
  slot writes a (byte, bit) pair of its own row and the mask is one plain
  assignment of bytes (a uint8 view of the int32 rows; a per-column table
  gives each token's byte, so the machine's byte order is respected). The
  offset tables are read with one 1-D ``take`` of the pattern ids (one
  ``8 * width``-byte item per pattern) and hold only the patterns they
  serve, so a batch they cannot serve raises ``IndexError`` instead of
  being tested: first a *narrow* table (rows with at most ``w`` children
  and no shared byte; ``w`` chosen from the level's child counts and the
  row count, see :func:`narrow_width`), then the full width, then every
  pattern: rows whose children share a byte have those slots adjacent
  (edges are sorted by token), so that batch is or-reduced per run of
  equal bytes (``np.bitwise_or.reduceat``) first. Batches with an END row
  or a childless node take the sparse path below. Following a token takes
  the row's first matching slot (``argmax``): a repeated slot holds the
  same edge;
* mostly-single sparse levels (few nodes with more than one child, like the
  level after the last "bushy" one of a semantic-ID catalog): when every row
  of a batch has exactly one child, only that child is read, as on a unary
  level; otherwise the batch takes the sparse path;
* unary levels (every node has exactly one child, fixed-length catalogs):
  node ``n``'s only edge is ``n + offset``, so a fill gathers one token per
  row and writes one bit, and following it is a comparison and ``+ 1``.

Filling returns what it gathered (a :data:`Gathered` tuple) so that following
the chosen tokens on the same rows needs no second gather.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._checks import raise_not_child
from ._patterns import PATTERN_MAX_WIDTH, PATTERN_MIN_MULTI, PatternSlots, narrow_width, slot_patterns
from ._tables import StepTables, child_count_histogram, filter_support, multi_child_fraction, row_index

if TYPE_CHECKING:
    from .filter import ItemFilter

__all__ = [
    "PATTERN_MAX_WIDTH",
    "PATTERN_MIN_MULTI",
    "Gathered",
    "PatternSlots",
    "SparsePlan",
    "allowed_bool",
    "apply_mask",
    "candidates",
    "contains",
    "dense_rows",
    "fill_bitmask",
    "follow",
    "narrow_width",
    "next_nodes",
    "slot_patterns",
    "sparse_plan",
]

_NEG_INF = -np.inf
_INT64 = np.dtype(np.int64)
_UINT8 = np.dtype(np.uint8)
# 0-d arrays: numpy converts them faster than Python ints in ufunc calls.
_ONE = np.array(1, dtype=np.int64)

#: What a fill gathered: ``(level, node bytes, kind, start, idx, tok, inside, plan)``.
#: ``kind`` is one of the ``_DENSE``, ``_UNARY``, ``_SINGLE``, ``_SPARSE``
#: constants; ``start`` is the dense row per row (dense), the edge per row
#: (unary), the first edge per row (single, sparse); ``idx``, ``tok`` and
#: ``inside`` are the flat slot arrays of a sparse gather (``tok`` also the
#: token per row of unary and single gathers).
Gathered = tuple[Any, ...]
_DENSE, _UNARY, _SINGLE, _SPARSE, _PATTERN = range(5)

_NO_PATTERNS = np.zeros(0, dtype=np.uint8)


class SparsePlan:
    """Everything one sparse (or unary) level needs for a given row count, bound once.

    Attributes
    ----------
    row, slot
        ``rows * width`` row number and slot number (int64) of every flat position.
    width
        The level's fixed slice width.
    inside_table
        ``(width + 1, width)`` bool: row ``c`` marks the first ``c`` slots
        (the slots inside a node with ``c`` children).
    single_first
        Whether a fill first tries the one-child-per-row path (few nodes of
        the level have more than one child).
    info
        The level's :func:`slot_patterns` ids (empty without slot patterns).
    narrow, wide, shared
        :class:`PatternSlots` of a slot-pattern level (else ``None``): the
        rows with at most ``narrow.width`` children and no shared byte (a
        width chosen for this row count by :func:`narrow_width`), the rows
        with no shared byte (``None`` when ``narrow`` is as wide as the
        level), and every row.
    words
        The index's mask words per row.
    """

    __slots__ = (
        "_offsets",
        "bit_value",
        "byte_of",
        "byte_value",
        "edge_token",
        "info",
        "inside_table",
        "narrow",
        "row",
        "row_end",
        "row_ptr",
        "rows",
        "shared",
        "single_first",
        "slot",
        "wide",
        "width",
        "word_of",
        "words",
    )

    def __init__(self, t: StepTables, rows: int, level: int) -> None:
        width = t.widths[level]
        self.rows = rows
        self.width = width
        self.row = np.repeat(np.arange(rows, dtype=np.int64), width)
        self.slot = np.tile(np.arange(width, dtype=np.int64), rows)
        self.inside_table = np.arange(width)[None, :] < np.arange(width + 1)[:, None]
        self.row_ptr = t.row_ptr
        self.row_end = t.row_end
        self.edge_token = t.edge_token
        self.bit_value = t.bit_value_i32
        self.word_of = t.word_of_token
        self.words = t.words
        patterns = t.slot_patterns.get(level)
        self.info: np.ndarray = _NO_PATTERNS
        self.narrow: PatternSlots | None = None
        self.wide: PatternSlots | None = None
        self.shared: PatternSlots | None = None
        if patterns is not None:
            self.info, offsets = patterns
            narrow = narrow_width(child_count_histogram(t, level), rows)
            # pattern ids below w are the rows with at most w children and no
            # shared byte (id = children - 1): a table of w entries refuses the others
            self.narrow = PatternSlots(offsets[:narrow, :narrow], rows, t.words)
            if narrow < width:
                self.wide = PatternSlots(offsets[:width], rows, t.words)
            self.shared = PatternSlots(offsets, rows, t.words)
        self.byte_value = t.byte_value
        self.byte_of = t.byte_of_token
        # Worth trying when a batch of this many rows is all one-child rows at
        # least about half of the time.
        self.single_first = width > 1 and multi_child_fraction(t, level) * rows < 0.5
        self._offsets: dict[tuple[int, int], np.ndarray] = {}

    def offsets(self, words: int, width: int | None = None) -> np.ndarray:
        """``row * words`` for every flat position (``width`` slots per row; default the level's)."""
        key = (words, self.width if width is None else width)
        off = self._offsets.get(key)
        if off is None:
            off = np.repeat(np.arange(self.rows, dtype=np.int64) * words, key[1])
            self._offsets[key] = off
        return off

    def gather(
        self, nodes: np.ndarray, start: np.ndarray | None = None, end: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``start`` per row (int64); flat ``idx`` (edge ids, int64), ``tok`` (int64) and ``inside`` per slot.

        ``start`` and ``end`` may pass the rows' CSR bounds when already read.
        """
        if start is None or end is None:
            start = self.row_ptr.take(nodes)
            end = self.row_end.take(nodes)
        count = end - start
        if start.dtype is not _INT64:
            start = start.astype(np.int64)
            count = count.astype(np.int64)
        idx = start.take(self.row)
        idx += self.slot
        tok = self.edge_token.take(idx).astype(np.int64)
        inside = self.inside_table.take(count, axis=0).reshape(-1)
        return start, idx, tok, inside


def sparse_plan(t: StepTables, rows: int, level: int) -> SparsePlan:
    """The :class:`SparsePlan` of ``rows`` rows at ``level`` (cached)."""
    plan = t.plans.get((rows, level))
    if plan is None:
        if len(t.plans) > 256:
            t.plans.clear()
        plan = SparsePlan(t, rows, level)
        t.plans[(rows, level)] = plan
    return plan


def _alive(t: StepTables, idx: np.ndarray, filt: ItemFilter) -> np.ndarray:
    """Whether the child of each edge in ``idx`` has an allowed item below it."""
    counts = filt.prefix.take(filter_support(t).take(idx + 1, axis=0))
    return counts[:, 1] > counts[:, 0]


def candidates(
    t: StepTables, nodes: np.ndarray, level: int, filt: ItemFilter | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The level's fixed-width CSR slice for every row, as ``(rows, B)`` arrays.

    Returns ``start`` (first edge of each row), ``idx`` (edge ids), ``tok``
    (their tokens, int64) and ``valid`` (slot inside the row and, with a
    filter, leading to an allowed item). The child of edge ``e`` is node ``e + 1``.
    """
    plan = sparse_plan(t, len(nodes), level)
    start, idx, tok, valid = plan.gather(nodes)
    if filt is not None:
        valid = valid & _alive(t, idx, filt)
    shape = (len(nodes), plan.width)
    return start, idx.reshape(shape), tok.reshape(shape), valid.reshape(shape)


def dense_rows(t: StepTables, nodes: np.ndarray, level: int) -> np.ndarray:
    """Row numbers in the level's dense tables (the END node: the extra last row)."""
    lo, _, count = t.level_bounds[level]
    local = nodes - lo
    if t.end is not None and level > 0:
        np.minimum(local, count, out=local)
    return local


def _scatter(bitmask: np.ndarray, flat: np.ndarray, bits: np.ndarray, accumulate: bool) -> None:
    """Zero ``bitmask`` and add (or, where equal ``flat`` carry equal ``bits``, write) int32 ``bits`` at flat word ``flat``.

    Adding int32 bit values wraps like or-ing them when they are disjoint.
    """
    contiguous = bitmask.flags.c_contiguous
    if contiguous:
        bitmask.fill(0)
        target = bitmask.ravel()
    else:
        target = np.zeros(bitmask.size, dtype=np.int32)
    if accumulate:
        np.add.at(target, flat, bits)
    else:
        target[flat] = bits
    if not contiguous:
        bitmask[...] = target.reshape(bitmask.shape)


def _wider_slots(plan: SparsePlan, local: np.ndarray) -> tuple[PatternSlots | None, np.ndarray]:
    """The first of the level's wide and shared slot tables that serves every row, and the rows' offsets.

    No table (``None`` and an empty array) when a row sits at the END node (no pattern id).
    """
    try:
        info = plan.info.take(local)
    except IndexError:
        return None, _NO_PATTERNS
    for slots in (plan.wide, plan.shared):
        if slots is not None:
            try:
                return slots, slots.table.take(info).view(_INT64)
            except IndexError:
                pass
    return None, _NO_PATTERNS


def _scatter_bytes_strided(bitmask: np.ndarray, flat: np.ndarray, values: np.ndarray) -> None:
    """Zero a non-contiguous ``bitmask`` and write uint8 ``values`` at flat byte ``flat`` of its rows.

    Equal ``flat`` must carry equal ``values``. Byte ``b`` of a row holds
    tokens ``8 * b' .. 8 * b' + 7`` where ``byte_of_token`` maps the token to
    ``b`` (the machine's byte order places it inside its int32 word). The
    contiguous case is written in place by :func:`fill_bitmask` itself.
    """
    target = np.zeros(bitmask.shape, dtype=np.int32)
    target.view(np.uint8).reshape(-1)[flat] = values
    bitmask[...] = target


def fill_bitmask(
    t: StepTables,
    nodes: np.ndarray,
    level: int,
    bitmask: np.ndarray,
    filt: ItemFilter | None,
    local: np.ndarray | None = None,
    key: bytes | None = None,
) -> Gathered:
    """Write one mask row per node into ``bitmask`` (int32, rows x >= W words).

    ``local`` may pass ``nodes - level_start[level]`` (int64, a fresh array the
    fill may modify), already computed by the caller's range check; ``key``
    (the node ids' bytes) is stored in the returned :data:`Gathered`.
    """
    rows, words = bitmask.shape
    if level < t.dense_depth:
        table = t.dense_mask[level] if filt is None else filt.dense_mask[level]
        if local is None:
            local = dense_rows(t, nodes, level)
        elif t.end is not None and level > 0:
            np.minimum(local, t.level_bounds[level][2], out=local)
        if words == t.words and bitmask.flags.c_contiguous:
            table.take(local, axis=0, out=bitmask)
        else:
            bitmask[:, : t.words] = table.take(local, axis=0)
            bitmask[:, t.words :] = 0
        return (level, key, _DENSE, local, None, None, None, None)
    plan = t.plans.get((rows, level)) or sparse_plan(t, rows, level)
    slots = plan.narrow
    if slots is not None and filt is None:  # a slot-pattern level
        if local is None:
            local = nodes - t.level_bounds[level][0]
        try:
            info = plan.info.take(local)  # IndexError: a row at the END node
            idx = slots.table.take(info).view(_INT64)  # IndexError: more children, a shared byte, none
        except IndexError:
            slots, idx = _wider_slots(plan, local)
        if slots is not None:
            idx += plan.row_ptr.take(nodes).astype(_INT64).take(slots.row)
            try:
                tok = plan.edge_token.take(idx)  # IndexError: a row without children
            except IndexError:
                slots = None
        if slots is not None:
            tok = tok.astype(_INT64)
            value = plan.byte_value.take(tok)
            flat = plan.byte_of.take(tok)
            flat += slots.byte_offsets if words == plan.words else plan.offsets(4 * words, slots.width)
            if slots is plan.shared:
                # equal bytes are adjacent (tokens sorted per row): or each run into one value
                run = np.empty(flat.size, dtype=bool)
                run[0] = True
                np.not_equal(flat[1:], flat[:-1], out=run[1:])
                at = np.flatnonzero(run)
                flat = flat.take(at)
                value = np.bitwise_or.reduceat(value, at)
            # slots past a row's children repeat its last (byte, bit): plain assignment
            if bitmask.flags.c_contiguous:
                bitmask.fill(0)
                bitmask.view(_UINT8).reshape(-1)[flat] = value
            else:
                _scatter_bytes_strided(bitmask, flat, value)
            return (level, key, _PATTERN, slots, idx, tok, None, plan)
    off = t.unary_offset[level]
    if off is not None:
        idx = nodes + off
        tok = t.edge_token.take(idx).astype(np.int64)
        bits = plan.bit_value.take(tok)
        if filt is not None:
            bits *= _alive(t, idx, filt)
        flat = plan.word_of.take(tok)
        flat += plan.offsets(words)
        _scatter(bitmask, flat, bits, False)  # one bit per row: no accumulation needed
        return (level, key, _UNARY, idx, None, tok, None, plan)
    start = plan.row_ptr.take(nodes)
    end = plan.row_end.take(nodes)
    if plan.single_first:
        first = start + _ONE  # int64: the first child, and the edge after the first
        if not np.count_nonzero(end != first):  # every row has exactly one child
            first -= _ONE
            tok = plan.edge_token.take(first).astype(np.int64)
            bits = plan.bit_value.take(tok)
            if filt is not None:
                bits *= _alive(t, first, filt)
            flat = plan.word_of.take(tok)
            flat += plan.offsets(words, 1)
            _scatter(bitmask, flat, bits, False)
            return (level, key, _SINGLE, first, None, tok, None, plan)
    start, idx, tok, inside = plan.gather(nodes, start, end)
    valid = inside if filt is None else inside & _alive(t, idx, filt)
    bits = plan.bit_value.take(tok)
    bits *= valid
    flat = plan.word_of.take(tok)
    flat += plan.offsets(words)
    _scatter(bitmask, flat, bits, True)
    return (level, key, _SPARSE, start, idx, tok, inside, plan)


def allowed_bool(t: StepTables, nodes: np.ndarray, level: int, filt: ItemFilter | None) -> np.ndarray:
    """Boolean ``(rows, num_columns)`` matrix of the allowed tokens."""
    bitmask = np.empty((len(nodes), t.words), dtype=np.int32)
    fill_bitmask(t, nodes, level, bitmask, filt)
    bits = np.unpackbits(bitmask.view(np.uint8), axis=1, count=t.num_columns, bitorder="little")
    return bits.view(bool)


def apply_mask(
    t: StepTables, logits: np.ndarray, nodes: np.ndarray, level: int, filt: ItemFilter | None
) -> None:
    """Set disallowed logits to ``-inf`` in place."""
    ncols = t.num_columns
    cols = logits.shape[1]
    if level < t.dense_depth:
        allowed = allowed_bool(t, nodes, level, filt)
        if cols < ncols:  # the end column is omitted
            allowed = allowed[:, :cols]
        np.copyto(logits[:, : allowed.shape[1]], _NEG_INF, where=~allowed)
        logits[:, ncols:] = _NEG_INF
        return
    _, _, tok, valid = candidates(t, nodes, level, filt)
    if cols < ncols:  # the end column (the largest token) is omitted: never a target
        valid &= tok < cols
        tok = np.minimum(tok, cols - 1)
    rows = row_index(t, len(nodes))
    keep = logits[rows, tok]
    keep[~valid] = _NEG_INF
    # Slots outside a row repeat slot 0 (same column, same value), so the
    # scatter below never writes two different values to one cell.
    tok = np.where(valid, tok, tok[:, :1])
    keep = np.where(valid, keep, keep[:, :1])
    logits.fill(_NEG_INF)
    logits[rows, tok] = keep


def _follow_dense(
    t: StepTables, nodes: np.ndarray, tokens: np.ndarray, level: int, local: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Dense-level children and a "present" word per row (nonzero iff the token is a child).

    ``tokens`` must lie in ``[0, num_columns)``; ``local`` is :func:`dense_rows` when known.
    """
    if level == 0:
        nxt = t.root_child.take(tokens)
        return nxt, nxt
    pos = dense_rows(t, nodes, level) if local is None else local
    pos = pos * t.words_0d
    pos += t.word_of_token.take(tokens)
    word = t.dense_mask_u32[level].take(pos)
    present = word & t.bit_value.take(tokens)
    word &= t.low_bits_of_token.take(tokens)
    nxt = t.dense_child_flat[level].take(pos).astype(np.int64)
    nxt += np.bitwise_count(word)
    return nxt, present


def follow(t: StepTables, nodes: np.ndarray, tokens: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
    """Children reached by ``tokens`` (int64) and a bool "token is a child" per row.

    The end token always leads to the END node. Rows whose token is not a
    child get an arbitrary node id (see the returned flags).
    """
    if level < t.dense_depth:
        nxt, present = _follow_dense(t, nodes, tokens, level)
        found = present != 0
    else:
        plan = sparse_plan(t, len(nodes), level)
        start, _, tok, inside = plan.gather(nodes)
        hit = tok == tokens.take(plan.row)
        hit &= inside
        hit = hit.reshape(len(nodes), plan.width)
        found = hit.any(axis=1)
        nxt = start + hit.argmax(axis=1)
        nxt += _ONE
    if t.end is not None:
        np.copyto(nxt, t.end, where=tokens == t.eos)
    return nxt, found


def contains(t: StepTables, arr: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Which rows of ``arr`` (``(M, L)`` int, the first ``lens`` entries of each a sequence) are catalog items.

    Every row walks from the root along its tokens (and the end token, if
    any); a token outside the vocabulary, the end token inside a sequence, or
    a length the catalog cannot have makes the row false.
    """
    m, width = arr.shape
    extra = 0 if t.eos is None else 1
    ok = (lens >= 1) & (lens <= t.max_length)
    if t.eos is None:
        ok &= lens == t.max_length
    steps = min(width + extra, t.num_levels)
    toks = np.full((m, steps), -1, dtype=np.int64)
    toks[:, : min(width, steps)] = arr[:, : min(width, steps)]
    inside = np.arange(steps) < lens[:, None]
    toks[~inside] = -1
    bad = inside & ((toks < 0) | (toks >= t.vocab_size))
    if t.eos is not None:
        bad |= inside & (toks == t.eos)
    ok &= ~bad.any(axis=1)
    if t.eos is not None:
        rows = np.flatnonzero(ok)
        toks[rows, lens[rows]] = t.eos
    toks[toks < 0] = 0
    need = lens + extra
    nodes = np.zeros(m, dtype=np.int64)
    for level in range(steps):
        rows = np.flatnonzero(ok & (level < need))
        if rows.size == 0:
            break
        nxt, found = follow(t, nodes[rows], toks[rows, level], level)
        ok[rows[~found]] = False
        nodes[rows] = np.where(found, nxt, 0)
    return ok


def next_nodes(
    t: StepTables,
    nodes: np.ndarray,
    tokens: np.ndarray,
    level: int,
    check: bool,
    gathered: Gathered | None = None,
) -> np.ndarray:
    """Children reached by ``tokens`` (int64); with ``check``, raise on tokens that are not children.

    ``gathered`` (from :func:`fill_bitmask` on the same rows and level) saves the gather.
    """
    rows = len(nodes)
    if gathered is None:
        if level < t.dense_depth:
            nxt, present = _follow_dense(t, nodes, tokens, level)
            ok = np.count_nonzero(present) == rows
        elif t.unary_offset[level] is not None:
            idx = nodes + t.unary_offset[level]
            ok = np.count_nonzero(t.edge_token.take(idx) == tokens) == rows
            nxt = idx + _ONE
        else:
            plan = sparse_plan(t, rows, level)
            nxt, ok = _next_sparse(plan, tokens, *plan.gather(nodes))
    else:
        kind = gathered[2]
        if kind == _PATTERN:
            _, _, _, slots, idx, tok, _, _ = gathered
            hit = tok == tokens.take(slots.row)
            # the first slot holding the token: the slots past a node's children
            # repeat its last child (the same edge), so any hit leads to the same node
            pos = hit.reshape(rows, slots.width).argmax(axis=1)
            pos += slots.row_base
            ok = np.count_nonzero(hit.take(pos)) == rows
            nxt = idx.take(pos)
            nxt += _ONE
        elif kind == _DENSE:
            nxt, present = _follow_dense(t, nodes, tokens, level, gathered[3])
            ok = np.count_nonzero(present) == rows
        elif kind == _SPARSE:
            _, _, _, start, idx, tok, inside, plan = gathered
            nxt, ok = _next_sparse(plan, tokens, start, idx, tok, inside)
        else:  # unary or single: one edge per row
            ok = np.count_nonzero(gathered[5] == tokens) == rows
            nxt = gathered[3] + _ONE
    if t.end is not None:
        np.copyto(nxt, t.end, where=tokens == t.eos)
    if check and not ok:
        _, found = follow(t, nodes, tokens, level)
        raise_not_child(t, nodes, tokens, level, found)
    return nxt


def _next_sparse(
    plan: SparsePlan,
    tokens: np.ndarray,
    start: np.ndarray,
    idx: np.ndarray,
    tok: np.ndarray,
    inside: np.ndarray,
) -> tuple[np.ndarray, bool]:
    """Children reached by ``tokens`` from a sparse gather, and whether every row found its token."""
    hit = tok == tokens.take(plan.row)
    hit &= inside
    # at most one hit per row (a node's tokens are distinct), in row order
    pos = hit.nonzero()[0]  # hit is 1-D
    if pos.size == plan.rows:
        nxt = idx.take(pos)
        nxt += _ONE
        return nxt, True
    nxt = start + hit.reshape(plan.rows, plan.width).argmax(axis=1)
    nxt += _ONE
    return nxt, False
