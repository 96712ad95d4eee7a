"""Vectorised construction of the STATIC layout from a validated catalog.

The items are sorted once (packed into ``uint64`` keys); every trie level is
then read off the sorted unique items: item ``i`` starts a new node at depth
``d`` iff its longest common prefix with item ``i - 1`` is shorter than ``d``
and it is at least ``d`` tokens long (counting the end token). Nodes are
numbered breadth-first (root 0, then depth 1, ...), children in token order, so
the edges listed in CSR order are exactly the nodes 1, 2, ... in order: edge
``e`` leads to node ``e + 1`` and no "next node" column is stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._arrays import sorted_unique
from ._input import Catalog

__all__ = ["Layout", "build_layout", "dense_tables"]

#: Refuse dense tables larger than this (bytes), with a hint to lower dense_depth.
MAX_DENSE_BYTES = 4 << 30
#: Levels past ``dense_depth`` become dense automatically only if this wide.
AUTO_DENSE_MIN_WIDTH = 8


@dataclass
class Layout:
    """Arrays of a built index (see :class:`StaticIndex` for their meaning)."""

    row_ptr: np.ndarray
    edge_token: np.ndarray
    level_start: np.ndarray
    level_width: np.ndarray
    item_rank: np.ndarray | None
    dense_mask: list[np.ndarray]
    dense_child: list[np.ndarray]
    num_unique: int
    num_sequences: int


def _sort_items(tokens: np.ndarray, num_columns: int) -> np.ndarray:
    """Permutation sorting the rows of ``tokens`` lexicographically."""
    n, width = tokens.shape
    bits = max(1, int(num_columns - 1).bit_length())
    per_key = 64 // bits
    keys = []
    for first in range(0, width, per_key):
        key = np.zeros(n, dtype=np.uint64)
        cols = range(first, min(first + per_key, width))
        for j, col in enumerate(cols):
            shift = np.uint64(bits * (per_key - 1 - j))
            key |= tokens[:, col].astype(np.uint64) << shift
        keys.append(key)
    order = np.argsort(keys[0])
    if len(keys) > 1:
        head = keys[0][order]
        tie = np.flatnonzero(head[1:] == head[:-1])
        if tie.size:
            members = sorted_unique(np.concatenate((tie, tie + 1)))
            sub = order[members]
            perm = np.lexsort([k[sub] for k in reversed(keys)])
            order[members] = sub[perm]
    return order


def _parent_degrees(
    first: np.ndarray, prev_first: np.ndarray, lcp: np.ndarray, elen: np.ndarray, d: int, fixed: bool
) -> np.ndarray:
    """Children per depth-(d-1) node, given the first items of the depth-d nodes.

    A depth-(d-1) node has children iff its first item reaches depth d; that
    item then also starts its first child, and it is the only depth-d start
    whose common prefix with the previous item is shorter than ``d - 1``.
    """
    if d == 1:
        return np.array([first.size], dtype=np.int64)
    new_parent = np.flatnonzero(lcp[first] < d - 1)
    per_parent = np.diff(np.append(new_parent, first.size))
    if fixed:
        return per_parent
    deg = np.zeros(prev_first.size, dtype=np.int64)
    deg[elen[prev_first] >= d] = per_parent
    return deg


def _dense_depth(
    dense_depth: int,
    widths: np.ndarray,
    counts: list[int],
    num_levels: int,
    words: int,
    csr_bytes: int,
    budget: float,
    eos: bool,
) -> int:
    """``dense_depth``, extended over following wide levels while their tables fit the budget.

    A dense level costs ``W`` mask words and ``W`` child ids per node; it is
    taken when the level is at least :data:`AUTO_DENSE_MIN_WIDTH` wide (a
    fixed-width read of a wide level is the slow case) and all dense tables
    together stay within ``budget`` times the CSR's bytes.
    """
    depth = min(dense_depth, num_levels)
    per_row = words * 8
    used = sum((counts[d] + eos) * per_row for d in range(depth))
    while depth < num_levels and widths[depth] >= AUTO_DENSE_MIN_WIDTH:
        cost = (counts[depth] + eos) * per_row
        if used + cost > budget * csr_bytes:
            break
        used += cost
        depth += 1
    return depth


def build_layout(
    catalog: Catalog, vocab_size: int, dense_depth: int, dense_budget: float, *, item_map: bool = True
) -> Layout:
    """Build the CSR transition matrix, level tables and dense tables."""
    tokens, lengths, eos = catalog.tokens, catalog.lengths, catalog.eos
    n, width = tokens.shape
    num_columns = vocab_size + 1 if eos == vocab_size else vocab_size
    order = _sort_items(tokens, num_columns)
    sorted_rows = tokens[order]
    new = np.ones(n, dtype=bool)
    np.any(sorted_rows[1:] != sorted_rows[:-1], axis=1, out=new[1:])
    rank_dtype = np.int32 if n < 2**31 - 1 else np.int64
    item_rank = np.empty(n, dtype=rank_dtype)
    item_rank[order] = np.cumsum(new, dtype=rank_dtype) - 1
    uniq = sorted_rows[new]
    del sorted_rows
    num_unique = len(uniq)
    elen = lengths[order[new]] + (0 if eos is None else 1)
    lcp = np.zeros(num_unique, dtype=np.int64)
    if num_unique > 1:
        lcp[1:] = np.argmax(uniq[1:] != uniq[:-1], axis=1)
    depth_max = width + (0 if eos is None else 1)

    counts = [1]
    degrees = []
    edge_tokens = []
    prev_first = np.zeros(1, dtype=np.int64)
    fixed = bool(elen.min() == depth_max)
    for d in range(1, depth_max + 1):
        starts = lcp < d
        if not fixed:
            starts &= elen >= d
        first = np.flatnonzero(starts)
        del starts
        if d <= width:
            tok = uniq[first, d - 1]
        else:
            tok = np.full(first.size, eos, dtype=uniq.dtype)
        edge_tokens.append(tok)
        degrees.append(_parent_degrees(first, prev_first, lcp, elen, d, fixed))
        counts.append(first.size)
        prev_first = first
    degrees.append(np.zeros(counts[-1], dtype=np.int64))

    level_start = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=level_start[1:])
    num_real = int(level_start[-1])
    deg = np.concatenate(degrees)
    widths = np.array([int(x.max()) if x.size else 0 for x in degrees], dtype=np.int64)
    if eos is not None:
        deg = np.append(deg, 1)  # END: a single end-token edge
        edge_tokens.append(np.array([eos], dtype=uniq.dtype))
        widths = np.maximum(widths, 1)
    num_levels = depth_max
    num_edges = int(deg.sum())
    ptr_dtype = np.int32 if num_edges + int(widths.max()) + 2 < 2**31 else np.int64
    csr_bytes = deg.size * np.dtype(ptr_dtype).itemsize + num_edges * np.dtype(uniq.dtype).itemsize
    words = (num_columns + 31) // 32
    dense_depth = _dense_depth(
        dense_depth, widths, counts, num_levels, words, csr_bytes, dense_budget, eos is not None
    )
    pad = int(widths[dense_depth:num_levels].max(initial=1))
    row_ptr = np.zeros(deg.size + 1, dtype=ptr_dtype)
    np.cumsum(deg, out=row_ptr[1:])
    edge_token = np.zeros(num_edges + pad, dtype=uniq.dtype)
    edge_token[:num_edges] = np.concatenate(edge_tokens)
    assert num_edges == num_real - 1 + (0 if eos is None else 1)

    masks, ranks = dense_tables(row_ptr, edge_token, level_start, dense_depth, num_columns, eos, alive=None)
    return Layout(
        row_ptr=row_ptr,
        edge_token=edge_token,
        level_start=level_start,
        level_width=widths[:num_levels],
        item_rank=item_rank if item_map else None,
        dense_mask=masks,
        dense_child=ranks,
        num_unique=num_unique,
        num_sequences=n,
    )


def dense_tables(
    row_ptr: np.ndarray,
    edge_token: np.ndarray,
    level_start: np.ndarray,
    depth: int,
    num_columns: int,
    eos: int | None,
    alive: np.ndarray | None,
    *,
    with_rank: bool = True,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Packed child masks and child-id tables of the nodes at depths ``< depth``.

    Row ``k`` of level ``d`` describes node ``level_start[d] + k``; with an end
    token there is one extra last row for the END node (mask: the end token).
    ``child[k, w]`` is the node id of the first child whose token lies in word
    ``w`` or later (the first child's id plus the number of children in words
    ``< w``), so the child reached by token ``t`` is ``child[k, t >> 5]`` plus
    the number of set bits below ``t`` in word ``t >> 5``. ``alive`` (bool per
    node id, optional) drops children whose subtree has no allowed item.
    """
    words = (num_columns + 31) // 32
    masks: list[np.ndarray] = []
    ranks: list[np.ndarray] = []
    for d in range(depth):
        lo, hi = int(level_start[d]), int(level_start[d + 1])
        rows = hi - lo + (0 if eos is None else 1)
        if rows * words * 6 > MAX_DENSE_BYTES:
            raise ValueError(
                f"dense tables for level {d} would take {rows * words * 6 / 2**30:.1f} GiB; lower dense_depth"
            )
        e0, e1 = int(row_ptr[lo]), int(row_ptr[hi])
        tok = edge_token[e0:e1].astype(np.int64)
        parent = np.repeat(np.arange(hi - lo), np.diff(row_ptr[lo : hi + 1]).astype(np.int64))
        if alive is not None:
            keep = alive[e0 + 1 : e1 + 1]
            tok, parent = tok[keep], parent[keep]
        if eos is not None:
            tok = np.append(tok, eos)
            parent = np.append(parent, rows - 1)
        flat = parent * words + (tok >> 5)
        weight = np.ldexp(1.0, (tok & 31).astype(np.int32))
        summed = np.bincount(flat, weights=weight, minlength=rows * words)
        mask = summed.astype(np.uint32).view(np.int32).reshape(rows, words)
        masks.append(mask)
        if with_rank:
            pop = np.bitwise_count(mask.view(np.uint32))
            child = np.zeros((rows, words), dtype=row_ptr.dtype)
            np.cumsum(pop[:, :-1], axis=1, out=child[:, 1:], dtype=row_ptr.dtype)
            first = row_ptr[lo : lo + rows] + 1  # the END row's first edge is its end-token edge
            child += first[:, None].astype(row_ptr.dtype)
            ranks.append(child)
    return masks, ranks
