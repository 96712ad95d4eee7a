"""The tables a decoding step reads, built once per index from its layout.

:class:`StepTables` holds the index's arrays, the small per-level tables and
lookups derived from them, and the caches the steps fill as they run (sparse
plans, per-device tensors, per-node item ranges). The numpy and torch steps,
the argument checks and item filters take a :class:`StepTables` rather than
the index, so none of them depends on ``index.py``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ._build import Layout
from ._patterns import PATTERN_MAX_WIDTH, PATTERN_MIN_MULTI, slot_patterns
from ._support import item_ranges

__all__ = [
    "HasTables",
    "StepTables",
    "build_tables",
    "child_count_histogram",
    "filter_support",
    "multi_child_fraction",
    "row_index",
]


@dataclass(frozen=True, slots=True, eq=False)
class StepTables:
    """Everything the batched step reads (see :class:`StaticIndex` for the layout).

    Attributes
    ----------
    layout
        The index's arrays (see :class:`Layout`).
    row_ptr, edge_token, dense_mask
        The layout's CSR and the dense levels' packed child masks, read on every step.
    num_unique, num_sequences, vocab_size, eos, max_length
        Catalog sizes; ``eos`` is the end token or ``None``.
    num_levels, dense_depth, num_columns, words, min_logit_columns
        Decoding steps, dense levels, mask columns, words per mask row, and the
        fewest logit columns accepted (``vocab_size``: the end column may be absent).
    end, num_nodes
        The END node (``None`` without an end token) and the node count.
    starts, counts, widths
        Plain-int first node, node count and width of each level.
    level_bounds
        Per depth, ``(first id, count as uint64, count as int64)`` as 0-d arrays.
    pad, row_end
        Padding entries past the CSR for fixed-width reads; ``row_ptr[1:]``.
    dense_mask_u32, dense_child_flat
        Flat views of the dense tables for one-word reads.
    bit_value, bit_value_i32, low_bits_of_token, word_of_token
        Per column: its bit in its word (uint32 and int32), the bits below it,
        and its word (int64).
    root_child
        The root's child per column (0 where there is none).
    unary_offset
        Per level, ``n + offset`` is node ``n``'s only edge on a unary level, else ``None``.
    slot_patterns
        Slot-pattern ids and offsets of the levels served by them (``_patterns``).
    byte_of_token, byte_value
        Per column, its byte in a mask row and its bit in that byte (slot-pattern levels only).
    plans, row_indices, multi_child, child_counts, device, support
        Caches filled while stepping: sparse plans per (rows, level), row
        indices per row count, per-level child statistics, per-device
        tensors, and the per-node item ranges (one entry, built on first use).
    """

    layout: Layout
    row_ptr: np.ndarray
    edge_token: np.ndarray
    dense_mask: list[np.ndarray]
    num_unique: int
    num_sequences: int
    vocab_size: int
    eos: int | None
    max_length: int
    num_levels: int
    dense_depth: int
    num_columns: int
    words: int
    min_logit_columns: int
    words_0d: np.ndarray
    end: int | None
    num_nodes: int
    starts: list[int]
    counts: list[int]
    widths: list[int]
    level_bounds: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    num_columns_u64: np.ndarray
    pad: int
    row_end: np.ndarray
    dense_mask_u32: list[np.ndarray]
    dense_child_flat: list[np.ndarray]
    bit_value: np.ndarray
    low_bits_of_token: np.ndarray
    bit_value_i32: np.ndarray
    word_of_token: np.ndarray
    root_child: np.ndarray
    unary_offset: list[np.ndarray | None]
    slot_patterns: dict[int, tuple[np.ndarray, np.ndarray]]
    byte_of_token: np.ndarray
    byte_value: np.ndarray
    plans: dict[tuple[int, int], Any] = field(default_factory=dict)
    row_indices: dict[int, np.ndarray] = field(default_factory=dict)
    multi_child: dict[int, float] = field(default_factory=dict)
    child_counts: dict[int, np.ndarray] = field(default_factory=dict)
    device: dict[str, Any] = field(default_factory=dict)
    support: list[np.ndarray] = field(default_factory=list)


class HasTables(Protocol):
    """What item filters need of an index: its step tables."""

    _tables: StepTables


def build_tables(
    layout: Layout, *, vocab_size: int, eos_token: int | None, dense_depth: int, max_length: int
) -> StepTables:
    """Derive the step tables from a built (or loaded) layout.

    Parameters
    ----------
    layout
        The index's arrays.
    vocab_size, eos_token, max_length
        As given at build time.
    dense_depth
        Levels served from packed masks (capped at the levels and tables there are).

    Returns
    -------
    StepTables
    """
    row_ptr, edge_token, level_start = layout.row_ptr, layout.edge_token, layout.level_start
    eos = None if eos_token is None else int(eos_token)
    vocab = int(vocab_size)
    num_levels = len(layout.level_width)
    dense = min(int(dense_depth), num_levels, len(layout.dense_mask))
    num_columns = vocab + 1 if eos == vocab else vocab
    num_real = int(level_start[-1])
    end = num_real if eos is not None else None
    starts = [int(x) for x in level_start]
    counts = [b - a for a, b in zip(starts[:-1], starts[1:], strict=True)]
    widths = [int(x) for x in layout.level_width]
    cols = np.arange(num_columns, dtype=np.uint32)
    bit_value = np.left_shift(np.uint32(1), cols & np.uint32(31))
    root_child = np.zeros(num_columns, dtype=np.int64)
    root_tokens = edge_token[: int(row_ptr[1])].astype(np.int64)
    root_child[root_tokens] = np.arange(1, root_tokens.size + 1)
    # Unary levels (sparse, every node has exactly one child, no END node):
    # node n's only edge is n + offset, so no CSR slice needs gathering.
    # (With one child per node, the level's edges are row_ptr[lo] .. row_ptr[lo] + count.)
    unary: list[np.ndarray | None] = []
    for d in range(num_levels):
        lo, hi = starts[d], starts[d + 1]
        is_unary = (
            end is None
            and d >= dense
            and widths[d] == 1
            and hi > lo
            and int(row_ptr[hi]) - int(row_ptr[lo]) == hi - lo
        )
        unary.append(np.array(int(row_ptr[lo]) - lo, dtype=np.int64) if is_unary else None)
    # Slot patterns of the sparse levels with many multi-child nodes (see _patterns).
    multi: dict[int, float] = {}
    patterns: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for d in range(dense, num_levels):
        if unary[d] is None and 2 <= widths[d] <= PATTERN_MAX_WIDTH:
            multi[d] = _multi_child_fraction(row_ptr, starts[d], starts[d + 1])
            if multi[d] >= PATTERN_MIN_MULTI:
                patterns[d] = slot_patterns(row_ptr, edge_token, starts[d], starts[d + 1], widths[d])
    # Pattern levels scatter bytes: the byte of each column inside a mask row
    # (int32 words in the machine's byte order) and its bit value in that byte.
    byte_of_token = np.zeros(0, dtype=np.int64)
    byte_value = np.zeros(0, dtype=np.uint8)
    if patterns:
        byte_of_token = cols.astype(np.int64) >> 3
        if sys.byteorder == "big":
            byte_of_token ^= 3
        byte_value = np.left_shift(1, cols & np.uint32(7)).astype(np.uint8)
    return StepTables(
        layout=layout,
        row_ptr=row_ptr,
        edge_token=edge_token,
        dense_mask=list(layout.dense_mask),
        num_unique=int(layout.num_unique),
        num_sequences=int(layout.num_sequences),
        vocab_size=vocab,
        eos=eos,
        max_length=int(max_length),
        num_levels=num_levels,
        dense_depth=dense,
        num_columns=num_columns,
        words=(num_columns + 31) // 32,
        min_logit_columns=vocab,
        words_0d=np.array((num_columns + 31) // 32, dtype=np.int64),
        end=end,
        num_nodes=num_real + (1 if eos is not None else 0),
        starts=starts,
        counts=counts,
        widths=widths,
        level_bounds=[
            (np.array(a, dtype=np.int64), np.array(c, dtype=np.uint64), np.array(c, dtype=np.int64))
            for a, c in zip(starts, counts, strict=False)
        ],
        num_columns_u64=np.array(num_columns, dtype=np.uint64),
        pad=len(edge_token) - int(row_ptr[-1]),
        row_end=row_ptr[1:],
        dense_mask_u32=[m.view(np.uint32).reshape(-1) for m in layout.dense_mask],
        dense_child_flat=[c.reshape(-1) for c in layout.dense_child],
        bit_value=bit_value,
        low_bits_of_token=bit_value - np.uint32(1),
        bit_value_i32=bit_value.view(np.int32),
        # int64 word index of each column: per-token tables are read with int64
        # tokens (a ``take`` with any other index dtype casts its indices first).
        word_of_token=(cols >> np.uint32(5)).astype(np.int64),
        root_child=root_child,
        unary_offset=unary,
        slot_patterns=patterns,
        byte_of_token=byte_of_token,
        byte_value=byte_value,
        multi_child=multi,
    )


def _multi_child_fraction(row_ptr: np.ndarray, lo: int, hi: int) -> float:
    counts = np.diff(row_ptr[lo : hi + 1])
    return float(np.count_nonzero(counts > 1)) / max(hi - lo, 1)


def multi_child_fraction(t: StepTables, level: int) -> float:
    """Fraction of the level's nodes with more than one child (cached)."""
    got = t.multi_child.get(level)
    if got is None:
        got = _multi_child_fraction(t.row_ptr, t.starts[level], t.starts[level + 1])
        t.multi_child[level] = got
    return got


def child_count_histogram(t: StepTables, level: int) -> np.ndarray:
    """``histogram[c]``: nodes of the level with ``c`` children (cached)."""
    got = t.child_counts.get(level)
    if got is None:
        lo, hi = t.starts[level], t.starts[level + 1]
        counts = np.diff(t.row_ptr[lo : hi + 1])
        got = np.bincount(counts, minlength=t.widths[level] + 1)
        t.child_counts[level] = got
    return got


def filter_support(t: StepTables) -> np.ndarray:
    """Per-node item rank ranges (see ``_support``), built on the first call."""
    if not t.support:
        t.support.append(item_ranges(t.row_ptr, t.layout.level_start, t.end, t.num_unique, t.pad))
    return t.support[0]


def row_index(t: StepTables, rows: int) -> np.ndarray:
    """``(rows, 1)`` int64 row numbers (cached per row count)."""
    idx = t.row_indices.get(rows)
    if idx is None:
        if len(t.row_indices) > 64:
            t.row_indices.clear()
        idx = np.arange(rows, dtype=np.int64)[:, None]
        t.row_indices[rows] = idx
    return idx
