"""Decode-time item filters ("only items in stock"), without rebuilding the index.

An :class:`ItemFilter` turns a boolean vector over the catalog's items into
(1) a prefix sum over the unique sequences in lexicographic order and (2)
filtered copies of the dense levels' packed masks. Every trie node owns a
contiguous range of those ranks (see ``_support``), so a sparse step tests each
gathered edge with two table lookups: ``prefix[hi] - prefix[lo] > 0``.

Costs
-----
* once per index (first filter): per-node rank ranges, ``8 * num_nodes`` bytes
  and one vectorised pass per level;
* per filter: O(num_sequences) for the prefix sum plus O(children of the dense
  levels) for the filtered packed tables (about ``V * dense-level nodes`` bits);
* per step: dense levels cost exactly what they cost without a filter (another
  table is gathered); sparse levels add three gathers over the ``rows x width``
  slice (ranges, prefix values) and one comparison — O(1) per edge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._build import dense_tables
from ._errors import CatalogError
from ._tables import HasTables, filter_support

__all__ = ["ItemFilter"]


class ItemFilter:
    """Allow only some catalog items at decode time.

    Parameters
    ----------
    index
        The index whose items ``allowed`` refers to.
    allowed
        Boolean vector of length ``index.num_sequences`` in build order. A
        sequence is producible iff at least one item with that sequence is
        allowed. An all-false vector is valid: nothing can be produced (only
        rows that already finished keep their end token).

    Attributes
    ----------
    index : StaticIndex
    prefix : numpy.ndarray
        ``(num_unique + 2,)`` prefix sum of allowed unique sequences; rank
        ``num_unique`` is a virtual always-allowed slot used by the END node.
    dense_mask : list of numpy.ndarray
        Filtered packed masks of the dense levels.
    num_allowed : int
        Allowed items (duplicates counted).
    """

    def __init__(self, index: HasTables, allowed: Any) -> None:
        t = index._tables
        if t.layout.item_rank is None:
            raise CatalogError(
                "item filters need the item map: build the index with item_map=True (the default)"
            )
        if hasattr(allowed, "detach") and hasattr(allowed, "cpu"):
            allowed = allowed.detach().cpu().numpy()
        allowed = np.asarray(allowed)
        if allowed.shape != (t.num_sequences,):
            raise CatalogError(
                f"allowed must have shape ({t.num_sequences},) (one flag per catalog item), got {allowed.shape}"
            )
        if allowed.dtype != bool:
            if not np.issubdtype(allowed.dtype, np.integer):
                raise CatalogError(f"allowed must be a boolean vector, got dtype {allowed.dtype}")
            allowed = allowed != 0
        self.index = index
        self.num_allowed = int(np.count_nonzero(allowed))
        ranges = filter_support(t)
        num_unique = t.num_unique
        flags = np.zeros(num_unique + 1, dtype=bool)
        flags[t.layout.item_rank[allowed]] = True
        flags[num_unique] = True  # the END node's virtual item
        self.prefix = np.zeros(num_unique + 2, dtype=ranges.dtype)
        np.cumsum(flags, out=self.prefix[1:])
        # Children of the dense levels are the nodes above depth dense_depth + 1.
        upto = t.starts[t.dense_depth + 1]
        bounds = ranges[:upto]
        alive = self.prefix[bounds[:, 1]] > self.prefix[bounds[:, 0]]
        self.dense_mask, _ = dense_tables(
            t.row_ptr,
            t.edge_token,
            t.layout.level_start,
            t.dense_depth,
            t.num_columns,
            t.eos,
            alive,
            with_rank=False,
        )
        self._torch: dict[str, Any] = {}

    @property
    def nbytes(self) -> int:
        """Bytes held by this filter (the shared per-node ranges are the index's)."""
        return int(self.prefix.nbytes + sum(m.nbytes for m in self.dense_mask))

    def __repr__(self) -> str:
        return f"ItemFilter(num_allowed={self.num_allowed} of {self.index._tables.num_sequences})"
