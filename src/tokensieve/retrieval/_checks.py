"""Argument checks of the step methods, each raising a :class:`CatalogError` that says where.

Shared by the numpy path (``index.py``) and the torch path (``_torch_step``);
every function reads the index's :class:`StepTables` only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._errors import CatalogError
from ._tables import StepTables

__all__ = [
    "check_bitmask",
    "check_level",
    "check_logits",
    "check_nodes",
    "check_tokens",
    "raise_bad_nodes",
    "raise_not_child",
]

_INT64 = np.dtype(np.int64)
_UINT64 = np.dtype(np.uint64)


def check_level(t: StepTables, level: Any) -> int:
    """``level`` as an int, or a :class:`CatalogError` when it is not a level of the index."""
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
        raise CatalogError(f"level must be an integer, got {level!r}")
    if not 0 <= level < t.num_levels:
        raise CatalogError(f"level {level} is out of range: this index has levels 0..{t.num_levels - 1}")
    return int(level)


def check_nodes(t: StepTables, nodes: Any, level: Any) -> np.ndarray:
    """``nodes`` as a 1-D int64 array of nodes at ``level`` (or the END node), else raise."""
    if type(level) is not int or not 0 <= level < t.num_levels:
        level = check_level(t, level)
    if type(nodes) is not np.ndarray or nodes.dtype is not _INT64 or nodes.ndim != 1:
        nodes = np.asarray(nodes)
        if nodes.ndim != 1 or nodes.dtype.kind not in "iu":
            raise CatalogError(f"nodes must be a 1-D integer array, got {nodes.dtype} {nodes.shape}")
        nodes = nodes.astype(np.int64)
    # One pass: ids below the level wrap around to huge unsigned values.
    lo, count, _ = t.level_bounds[level]
    if np.count_nonzero((nodes - lo).view(_UINT64) >= count):
        raise_bad_nodes(t, nodes, level)
    return nodes


def raise_bad_nodes(t: StepTables, nodes: np.ndarray, level: int) -> None:
    """Raise for the first node that is neither at ``level`` nor the END node (if any is)."""
    lo = t.starts[level]
    hi = lo + t.counts[level]
    ok = (nodes >= lo) & (nodes < hi)
    if t.end is not None and level > 0:
        ok |= nodes == t.end
    if not ok.all():
        row = int(np.flatnonzero(~ok)[0])
        raise CatalogError(
            f"node id {int(nodes[row])} (row {row}) is not a node of level {level} "
            f"(expected {lo}..{hi - 1}"
            + ("" if t.end is None or level == 0 else f" or end_node {t.end}")
            + "); node ids come from root and next_nodes()"
        )


def check_tokens(t: StepTables, tokens: Any, rows: int, *, values: bool = True) -> np.ndarray:
    """``tokens`` as ``(rows,)`` int64; with ``values``, each in ``[0, num_columns)``."""
    if type(tokens) is not np.ndarray or tokens.dtype is not _INT64:
        tokens = np.asarray(tokens)
        if tokens.dtype.kind not in "iu":
            raise CatalogError(f"tokens must be an integer array, got dtype {tokens.dtype}")
        tokens = tokens.astype(np.int64)
    if tokens.shape != (rows,):
        raise CatalogError(f"tokens must have shape ({rows},) (one per row), got {tokens.shape}")
    if values and np.count_nonzero(tokens.view(_UINT64) >= t.num_columns_u64):
        row = int(np.flatnonzero((tokens < 0) | (tokens >= t.num_columns))[0])
        raise CatalogError(
            f"token {int(tokens[row])} (row {row}) is outside [0, num_columns={t.num_columns})"
        )
    return tokens


def check_bitmask(t: StepTables, bitmask: Any, rows: int) -> None:
    """Raise unless ``bitmask`` is a 2-D int32 array of ``rows`` rows and enough words."""
    if not isinstance(bitmask, np.ndarray) or bitmask.dtype != np.int32 or bitmask.ndim != 2:
        raise CatalogError(
            "bitmask must be a 2-D int32 numpy array; use tokensieve.allocate_token_bitmask(rows, index.num_columns)"
        )
    if bitmask.shape[0] != rows or bitmask.shape[1] < t.words:
        raise CatalogError(f"bitmask has shape {bitmask.shape}; need ({rows}, >= {t.words}) for {rows} rows")


def check_logits(t: StepTables, logits: Any, rows: int) -> None:
    """Raise unless ``logits`` is a 2-D float array of ``rows`` rows and enough columns."""
    if not isinstance(logits, np.ndarray) or logits.ndim != 2 or not np.issubdtype(logits.dtype, np.floating):
        raise CatalogError("logits must be a 2-D float numpy array when nodes is a numpy array")
    if logits.shape[0] != rows or logits.shape[1] < t.min_logit_columns:
        raise CatalogError(
            f"logits has shape {logits.shape}; need ({rows}, >= num_columns={t.num_columns})"
            + ("" if t.min_logit_columns == t.num_columns else f" or ({rows}, {t.vocab_size})")
        )


def raise_not_child(t: StepTables, nodes: Any, tokens: Any, level: int, found: Any) -> None:
    """Raise for the first row whose token is not a child of its node (``found`` false)."""
    found = np.asarray(found.cpu() if hasattr(found, "cpu") else found)
    row = int(np.flatnonzero(~found)[0])
    node = int(nodes[row])
    token = int(tokens[row])
    if not 0 <= token < t.num_columns:
        raise CatalogError(f"token {token} (row {row}) is outside [0, num_columns={t.num_columns})")
    raise CatalogError(
        f"token {token} is not allowed at node {node} (row {row}, level {level}): "
        "no catalog item continues that way"
    )
