"""`StaticIndex`: a catalog of ID sequences as a CSR transition matrix.

Layout (all flat numpy arrays)
------------------------------
Nodes are the trie's prefixes, numbered breadth-first: the root is ``0``, the
depth-``d`` nodes are ``level_start[d] <= n < level_start[d + 1]`` in
lexicographic order. The CSR row of node ``n`` lists its children's tokens in
increasing order, ``edge_token[row_ptr[n]:row_ptr[n + 1]]``, and edge ``e``
leads to node ``e + 1`` (breadth-first numbering makes the edge list and the
node list the same sequence), so no "next node" column is stored.

Levels ``< dense_depth`` also keep a packed child mask per node (int32,
``W = ceil(num_columns / 32)`` words) and, per word, the id of the first child
whose token lies in that word or later (so following a token is O(1): that id
plus a popcount). Deeper levels are read through a fixed-width slice of the
CSR, ``level_width[level]`` entries (the level's largest branching factor) per
row; on a unary level (every node has exactly one child, no end token) node
``n``'s only edge is ``n + offset`` and nothing else is read.

Variable-length catalogs use an end token (``eos_token``, by default
``vocab_size``, i.e. one extra column): an item that ends at node ``n`` is an
edge ``n --eos--> terminal``. Following the end token always leads to the END
node (``end_node``), whose only allowed token is the end token again, so
finished rows of a batch can keep stepping.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import numpy as np

from . import _io
from . import _numpy_step as nps
from ._build import Layout, build_layout
from ._errors import CatalogError
from ._input import _lengths, _to_array, normalize_catalog
from ._support import item_ranges
from .filter import ItemFilter

__all__ = ["StaticIndex"]

_FORMAT_VERSION = 1
_INT64 = np.dtype(np.int64)
_INT32 = np.dtype(np.int32)
_UINT64 = np.dtype(np.uint64)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


class StaticIndex:
    """A constrained-decoding index over a fixed catalog of token sequences.

    Build it with :meth:`from_sequences` or :meth:`load`. Decoding rows carry
    node ids: start every row at :attr:`root`, and at step ``level`` call
    :meth:`fill_bitmask` (or :meth:`apply_mask_`) and then :meth:`next_nodes`
    with the chosen tokens. All step methods accept numpy arrays or torch
    tensors (CPU or CUDA) and work on every row at once.

    Attributes
    ----------
    row_ptr : numpy.ndarray
        ``(num_nodes + 1,)`` CSR row offsets (int32, or int64 for huge catalogs).
    edge_token : numpy.ndarray
        Child tokens in CSR order (``uint16``, or ``int32`` beyond 65,536
        columns), followed by padding for fixed-width reads.
    level_start : numpy.ndarray
        ``(num_depths + 1,)`` first node id of each depth.
    level_width : numpy.ndarray
        ``(num_levels,)`` largest number of children of a node at each level.
    item_rank : numpy.ndarray or None
        ``(num_sequences,)`` rank of each input item's sequence among the unique
        sequences in lexicographic order (used by item filters); ``None`` when
        built with ``item_map=False``.
    """

    root: int = 0

    def __init__(
        self,
        layout: Layout,
        *,
        vocab_size: int,
        eos_token: int | None,
        dense_depth: int,
        max_length: int,
    ) -> None:
        self.row_ptr = layout.row_ptr
        self.edge_token = layout.edge_token
        self.level_start = layout.level_start
        self.level_width = layout.level_width
        self.item_rank = layout.item_rank
        self._dense_mask = list(layout.dense_mask)
        self._dense_child = list(layout.dense_child)
        self._num_unique = int(layout.num_unique)
        self._num_sequences = int(layout.num_sequences)
        self._vocab_size = int(vocab_size)
        self._eos = None if eos_token is None else int(eos_token)
        self._max_length = int(max_length)
        self._num_levels = len(self.level_width)
        self._dense_depth = min(int(dense_depth), self._num_levels, len(self._dense_mask))
        self._num_columns = self._vocab_size + 1 if self._eos == self._vocab_size else self._vocab_size
        self._words = (self._num_columns + 31) // 32
        # Logits may omit the extra end column (``vocab_size`` columns only).
        self._min_logit_columns = self._vocab_size
        self._words_0d = np.array(self._words, dtype=np.int64)
        num_real = int(self.level_start[-1])
        self._end = num_real if self._eos is not None else None
        self._num_nodes = num_real + (1 if self._eos is not None else 0)
        # Plain-int copies and small lookup tables for the hot path.
        self._level_start = [int(x) for x in self.level_start]
        self._level_count = [
            b - a for a, b in zip(self._level_start[:-1], self._level_start[1:], strict=True)
        ]
        self._level_width = [int(x) for x in self.level_width]
        # (first id, count as uint64, count as int64) per depth, as 0-d arrays.
        self._level_bounds = [
            (np.array(a, dtype=np.int64), np.array(c, dtype=np.uint64), np.array(c, dtype=np.int64))
            for a, c in zip(self._level_start, self._level_count, strict=False)
        ]
        self._num_columns_u64 = np.array(self._num_columns, dtype=np.uint64)
        self._pad = len(self.edge_token) - int(self.row_ptr[-1])
        self._row_end = self.row_ptr[1:]
        self._dense_mask_u32 = [m.view(np.uint32).reshape(-1) for m in self._dense_mask]
        self._dense_child_flat = [c.reshape(-1) for c in self._dense_child]
        cols = np.arange(self._num_columns, dtype=np.uint32)
        self._bit_value = np.left_shift(np.uint32(1), cols & np.uint32(31))
        self._low_bits_of_token = self._bit_value - np.uint32(1)
        self._bit_value_i32 = self._bit_value.view(np.int32)
        # int64 word index of each column: per-token tables are read with int64
        # tokens (a ``take`` with any other index dtype casts its indices first).
        self._word_of_token = (cols >> np.uint32(5)).astype(np.int64)
        self._root_child = np.zeros(self._num_columns, dtype=np.int64)
        root_tokens = self.edge_token[: int(self.row_ptr[1])].astype(np.int64)
        self._root_child[root_tokens] = np.arange(1, root_tokens.size + 1)
        # Unary levels (sparse, every node has exactly one child, no END node):
        # node n's only edge is n + offset, so no CSR slice needs gathering.
        # (With one child per node, the level's edges are row_ptr[lo] .. row_ptr[lo] + count.)
        self._unary_offset: list[np.ndarray | None] = []
        for d in range(self._num_levels):
            lo, hi = self._level_start[d], self._level_start[d + 1]
            unary = (
                self._end is None
                and d >= self._dense_depth
                and self._level_width[d] == 1
                and hi > lo
                and int(self.row_ptr[hi]) - int(self.row_ptr[lo]) == hi - lo
            )
            self._unary_offset.append(np.array(int(self.row_ptr[lo]) - lo, dtype=np.int64) if unary else None)
        self._multi_child: dict[int, float] = {}
        self._child_counts: dict[int, np.ndarray] = {}
        # Slot patterns of the sparse levels with many multi-child nodes (see _numpy_step).
        self._slot_patterns: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for d in range(self._dense_depth, self._num_levels):
            if (
                self._unary_offset[d] is None
                and 2 <= self._level_width[d] <= nps.PATTERN_MAX_WIDTH
                and self._multi_child_fraction(d) >= nps.PATTERN_MIN_MULTI
            ):
                self._slot_patterns[d] = nps.slot_patterns(
                    self.row_ptr,
                    self.edge_token,
                    self._level_start[d],
                    self._level_start[d + 1],
                    self._level_width[d],
                )
        # Pattern levels scatter bytes: the byte of each column inside a mask row
        # (int32 words in the machine's byte order) and its bit value in that byte.
        self._byte_of_token = np.zeros(0, dtype=np.int64)
        self._byte_value = np.zeros(0, dtype=np.uint8)
        if self._slot_patterns:
            byte = cols.astype(np.int64) >> 3
            if sys.byteorder == "big":
                byte ^= 3
            self._byte_of_token = byte
            self._byte_value = np.left_shift(1, cols & np.uint32(7)).astype(np.uint8)
        self._plans: dict[tuple[int, int], nps.SparsePlan] = {}
        self._row_indices: dict[int, np.ndarray] = {}
        self._ranges: np.ndarray | None = None
        self._torch: dict[str, Any] = {}
        # The slice gathered by the last checked fill_bitmask of this thread,
        # reused by next_nodes on the same rows (see next_nodes).
        self._last = threading.local()

    # ------------------------------------------------------------------ build

    @classmethod
    def from_sequences(
        cls,
        seqs: Any,
        vocab_size: int,
        *,
        dense_depth: int = 2,
        eos_token: int | None = None,
        lengths: Any = None,
        pad_token: int | None = -1,
        dense_budget: float = 0.5,
        item_map: bool = True,
    ) -> StaticIndex:
        """Build an index from a catalog of token sequences (vectorised).

        Parameters
        ----------
        seqs
            ``(N, L)`` integer array of items (numpy, torch or nested lists);
            variable lengths either padded with ``pad_token`` after each item
            (or described by ``lengths``), or given as a sequence of sequences.
            Duplicates are allowed.
        vocab_size
            Codebook size ``V``; item tokens must lie in ``[0, V)``.
        dense_depth
            Number of leading levels served from packed per-node masks
            (level 0 is one row, level 1 at most ``V`` rows of ``W`` words).
            Following levels that are at least 8 wide are made dense too
            while all dense tables stay within ``dense_budget`` (see there).
        eos_token
            End token. ``None`` (default) uses ``vocab_size`` (one extra
            column) when lengths vary, and no end token when every item has
            the same length. An id ``< vocab_size`` must not occur in items.
        lengths
            Optional ``(N,)`` lengths for a padded 2-D ``seqs``.
        pad_token
            Padding value in a 2-D ``seqs`` (trailing positions only).
        dense_budget
            Largest size of all dense tables, as a fraction of the CSR's bytes,
            up to which levels past ``dense_depth`` are made dense
            automatically (a wide sparse level is the slow case of the step).
            ``0`` keeps exactly ``dense_depth`` dense levels.
        item_map
            Keep ``item_rank`` (4 bytes per item), which item filters need to
            read a per-item "allowed" vector. ``False`` saves that memory and
            makes :meth:`make_filter` raise.

        Returns
        -------
        StaticIndex

        Raises
        ------
        CatalogError
            On an empty catalog, wrong dimensions or dtypes, token ids outside
            ``[0, vocab_size)``, or an empty item.
        """
        if isinstance(dense_depth, bool) or not isinstance(dense_depth, (int, np.integer)) or dense_depth < 0:
            raise CatalogError(f"dense_depth must be a non-negative integer, got {dense_depth!r}")
        if (
            isinstance(dense_budget, bool)
            or not isinstance(dense_budget, (int, float))
            or not dense_budget >= 0
        ):
            raise CatalogError(f"dense_budget must be a non-negative number, got {dense_budget!r}")
        catalog = normalize_catalog(
            seqs, vocab_size, eos_token=eos_token, lengths=lengths, pad_token=pad_token
        )
        try:
            layout = build_layout(
                catalog, int(vocab_size), int(dense_depth), float(dense_budget), item_map=bool(item_map)
            )
        except ValueError as exc:
            raise CatalogError(str(exc)) from exc
        return cls(
            layout,
            vocab_size=int(vocab_size),
            eos_token=catalog.eos,
            dense_depth=len(layout.dense_mask),
            max_length=catalog.tokens.shape[1],
        )

    # ------------------------------------------------------------- properties

    @property
    def vocab_size(self) -> int:
        """Codebook size ``V`` given at build time."""
        return self._vocab_size

    @property
    def eos_token(self) -> int | None:
        """End token id, or ``None`` for a fixed-length catalog without one."""
        return self._eos

    @property
    def num_columns(self) -> int:
        """Columns the masks cover: ``V + 1`` when the end token is ``V``, else ``V``."""
        return self._num_columns

    @property
    def bitmask_words(self) -> int:
        """Words per bitmask row, ``ceil(num_columns / 32)``."""
        return self._words

    @property
    def num_levels(self) -> int:
        """Decoding steps: the longest item's length, plus one with an end token."""
        return self._num_levels

    @property
    def max_length(self) -> int:
        """Tokens in the longest item."""
        return self._max_length

    @property
    def num_sequences(self) -> int:
        """Items given at build time, duplicates included (the length of filter vectors)."""
        return self._num_sequences

    @property
    def num_unique(self) -> int:
        """Distinct sequences in the catalog."""
        return self._num_unique

    @property
    def num_nodes(self) -> int:
        """Trie nodes, including terminals and the END node."""
        return self._num_nodes

    @property
    def end_node(self) -> int | None:
        """Node reached by the end token (``None`` without an end token)."""
        return self._end

    @property
    def dense_depth(self) -> int:
        """Number of levels served from packed per-node masks (after the automatic extension)."""
        return self._dense_depth

    @property
    def nbytes(self) -> int:
        """Bytes of every array the index holds (see :meth:`memory_usage`)."""
        return sum(self.memory_usage().values())

    def memory_usage(self) -> dict[str, int]:
        """Bytes per component.

        Returns
        -------
        dict
            ``csr`` (row offsets and tokens), ``dense`` (packed masks and rank
            prefixes), ``items`` (``item_rank``), ``levels`` (small per-level
            tables and lookups), ``patterns`` (one byte per node of the sparse
            levels served by slot patterns, see the step notes in
            ``docs/retrieval.md``) and ``filter_support`` (per-node item
            ranges, built on the first :meth:`make_filter` call; 0 before).
        """
        return {
            "csr": int(self.row_ptr.nbytes + self.edge_token.nbytes),
            "dense": int(sum(m.nbytes for m in self._dense_mask) + sum(c.nbytes for c in self._dense_child)),
            "items": 0 if self.item_rank is None else int(self.item_rank.nbytes),
            "levels": int(
                self.level_start.nbytes
                + self.level_width.nbytes
                + self._bit_value.nbytes
                + self._low_bits_of_token.nbytes
                + self._word_of_token.nbytes
                + self._root_child.nbytes
                + self._byte_of_token.nbytes
                + self._byte_value.nbytes
            ),
            "patterns": int(sum(sum(a.nbytes for a in p) for p in self._slot_patterns.values())),
            "filter_support": 0 if self._ranges is None else int(self._ranges.nbytes),
        }

    def __repr__(self) -> str:
        return (
            f"StaticIndex(num_sequences={self.num_sequences}, num_unique={self.num_unique}, "
            f"vocab_size={self.vocab_size}, max_length={self.max_length}, eos_token={self.eos_token}, "
            f"num_nodes={self.num_nodes}, dense_depth={self.dense_depth}, nbytes={self.nbytes})"
        )

    # -------------------------------------------------------------- the step

    def initial_nodes(self, rows: int, *, like: Any = None) -> Any:
        """``rows`` root node ids (int64), as numpy or as a tensor on ``like``'s device."""
        if like is not None and _is_torch(like):
            import torch

            return torch.zeros(rows, dtype=torch.int64, device=like.device)
        return np.zeros(rows, dtype=np.int64)

    def fill_bitmask(
        self, nodes: Any, level: int, bitmask: Any, *, item_filter: Any = None, check: bool = True
    ) -> Any:
        """Fill one bitmask row per node with the tokens allowed next.

        Token ``t`` is allowed in row ``r`` iff ``(bitmask[r, t >> 5] >> (t & 31)) & 1``.
        Dense levels copy a packed row per node; sparse levels scatter the
        node's CSR slice. O(1) numpy/torch calls for all rows together.

        Parameters
        ----------
        nodes
            ``(rows,)`` integer node ids at depth ``level`` (numpy or torch).
        level
            Tokens emitted so far, ``0 <= level < num_levels``.
        bitmask
            ``(rows, >= bitmask_words)`` int32 array of the same kind as
            ``nodes``, overwritten (words past ``bitmask_words`` are zeroed).
        item_filter
            Optional :class:`ItemFilter` (or a boolean ``(num_sequences,)``
            vector, converted on the fly): only tokens that lead to an allowed
            item are set.
        check
            Validate arguments (costs a few reductions; on CUDA a device sync).

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``bitmask``.

        Raises
        ------
        CatalogError
            On a bad level, node ids not at that level, or a bad bitmask.
        """
        filt = None if item_filter is None else self._as_filter(item_filter)
        if type(nodes) is not np.ndarray and _is_torch(nodes):
            from . import _torch_step as tst

            tst.fill_bitmask(self, nodes, level, bitmask, filt, check)
            return bitmask
        if check:
            if type(level) is not int or not 0 <= level < self._num_levels:
                level = self._check_level(level)
            if type(nodes) is not np.ndarray or nodes.dtype is not _INT64 or nodes.ndim != 1:
                nodes = self._check_nodes(nodes, level)
            # The range check's ``nodes - level_start`` is the dense levels' row number.
            lo, count, _ = self._level_bounds[level]
            local = nodes - lo
            if np.count_nonzero(local.view(_UINT64) >= count):
                self._raise_bad_nodes(nodes, level)
            if (
                type(bitmask) is not np.ndarray
                or bitmask.dtype is not _INT32
                or bitmask.ndim != 2
                or bitmask.shape[0] != len(nodes)
                or bitmask.shape[1] < self._words
            ):
                self._check_bitmask(bitmask, len(nodes))
            self._last.gathered = nps.fill_bitmask(self, nodes, level, bitmask, filt, local, nodes.tobytes())
        else:
            nps.fill_bitmask(self, nodes, level, bitmask, filt)
        return bitmask

    def next_nodes(self, nodes: Any, tokens: Any, level: int, *, check: bool = True) -> Any:
        """Nodes reached from ``nodes`` (at ``level``) by the chosen ``tokens``.

        Parameters
        ----------
        nodes
            ``(rows,)`` node ids at depth ``level``.
        tokens
            ``(rows,)`` chosen tokens; each must be allowed for its row (the end
            token leads to :attr:`end_node`).
        level
            Depth of ``nodes``.
        check
            Validate arguments and that every token is allowed.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``(rows,)`` int64 node ids at ``level + 1``.

        Raises
        ------
        CatalogError
            On bad arguments or a token that is not allowed.

        Notes
        -----
        On numpy, when the previous checked :meth:`fill_bitmask` call of the
        same thread was for the same node ids and level, the slice it gathered
        is reused (one gather per step, as in STATIC); the node ids are
        compared by value, so changing them in between is safe.
        """
        if type(nodes) is not np.ndarray and _is_torch(nodes):
            from . import _torch_step as tst

            return tst.next_nodes(self, nodes, tokens, level, check)
        gathered = None
        if check:
            gathered = getattr(self._last, "gathered", None)
            if (
                gathered is not None
                and gathered[0] == level
                and type(nodes) is np.ndarray
                and nodes.dtype is _INT64
                and nodes.ndim == 1
                and gathered[1] == nodes.tobytes()
            ):
                self._last.gathered = None
            else:
                gathered = None
                nodes = self._check_nodes(nodes, level)
                level = int(level)
            # Sparse levels need no range check: an out-of-range token matches
            # no child, so it is reported as not allowed (with its range).
            dense = level < self._dense_depth
            if (
                type(tokens) is not np.ndarray
                or tokens.dtype is not _INT64
                or tokens.shape != nodes.shape
                or (dense and np.count_nonzero(tokens.view(_UINT64) >= self._num_columns_u64))
            ):
                tokens = self._check_tokens(tokens, len(nodes), values=dense)
        return nps.next_nodes(self, nodes, tokens, level, check, gathered)

    def apply_mask_(
        self, logits: Any, nodes: Any, level: int, *, item_filter: Any = None, check: bool = True
    ) -> Any:
        """Set the logits of tokens that leave the catalog to ``-inf``, in place.

        Parameters
        ----------
        logits
            ``(rows, C)`` float array or tensor with ``C >= num_columns``;
            columns ``>= num_columns`` are always masked. When the end token
            is the extra column ``vocab_size``, ``C == vocab_size`` is
            accepted too: the end column is then simply absent (rows whose
            only continuation is the end token get no finite logit).
        nodes
            ``(rows,)`` node ids at depth ``level``.
        level
            Depth of ``nodes``.
        item_filter
            Optional :class:`ItemFilter` or boolean vector over the items.
        check
            Validate arguments.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``logits``.
        """
        filt = self._as_filter(item_filter)
        if not isinstance(nodes, np.ndarray) and _is_torch(nodes):
            from . import _torch_step as tst

            tst.apply_mask(self, logits, nodes, level, filt, check)
            return logits
        if check:
            nodes = self._check_nodes(nodes, level)
            self._check_logits(logits, len(nodes))
        nps.apply_mask(self, logits, nodes, level, filt)
        return logits

    # ---------------------------------------------------------------- filters

    def make_filter(self, allowed: Any) -> ItemFilter:
        """An :class:`ItemFilter` that only lets allowed items be produced.

        Parameters
        ----------
        allowed
            Boolean vector of length :attr:`num_sequences` in build order.

        Returns
        -------
        ItemFilter
        """
        return ItemFilter(self, allowed)

    def _as_filter(self, item_filter: Any) -> ItemFilter | None:
        if item_filter is None:
            return None
        if isinstance(item_filter, ItemFilter):
            if item_filter.index is not self:
                raise CatalogError("item_filter was made for a different index")
            return item_filter
        return ItemFilter(self, item_filter)

    def _filter_support(self) -> np.ndarray:
        if self._ranges is None:
            self._ranges = item_ranges(self.row_ptr, self.level_start, self._end, self._num_unique, self._pad)
        return self._ranges

    # ------------------------------------------------------------- look-ups

    def contains(self, seq: Any) -> bool:
        """Whether ``seq`` (a 1-D token sequence, without end token) is a catalog item."""
        arr = np.asarray(seq)
        if arr.ndim != 1:
            raise CatalogError(
                f"contains() takes one 1-D sequence, got shape {arr.shape}; see contains_many()"
            )
        if arr.size == 0:
            return False
        # Explicit length: every entry is a token here (-1 is not padding).
        return bool(self.contains_many(arr[None, :], lengths=[arr.size])[0])

    def contains_many(self, seqs: Any, *, lengths: Any = None) -> np.ndarray:
        """Vectorised :meth:`contains` for an ``(M, L)`` array (or ragged list) of sequences.

        Parameters
        ----------
        seqs
            Sequences to look up; rows of a 2-D array may be padded with ``-1``
            (or described by ``lengths``).
        lengths
            Optional ``(M,)`` lengths.

        Returns
        -------
        numpy.ndarray
            ``(M,)`` bool.
        """
        arr, ragged = _to_array(seqs)
        if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.integer):
            raise CatalogError(f"contains_many() takes a 2-D integer array, got {arr.dtype} {arr.shape}")
        m, width = arr.shape
        if m == 0 or width == 0:
            return np.zeros(m, dtype=bool)
        lens = _lengths(arr, ragged, lengths, -1)
        extra = 0 if self._eos is None else 1
        ok = (lens >= 1) & (lens <= self._max_length)
        if self._eos is None:
            ok &= lens == self._max_length
        steps = min(width + extra, self._num_levels)
        toks = np.full((m, steps), -1, dtype=np.int64)
        toks[:, : min(width, steps)] = arr[:, : min(width, steps)]
        inside = np.arange(steps) < lens[:, None]
        toks[~inside] = -1
        bad = inside & ((toks < 0) | (toks >= self._vocab_size))
        if self._eos is not None:
            bad |= inside & (toks == self._eos)
        ok &= ~bad.any(axis=1)
        if self._eos is not None:
            rows = np.flatnonzero(ok)
            toks[rows, lens[rows]] = self._eos
        toks[toks < 0] = 0
        need = lens + extra
        nodes = np.zeros(m, dtype=np.int64)
        for level in range(steps):
            rows = np.flatnonzero(ok & (level < need))
            if rows.size == 0:
                break
            nxt, found = nps.follow(self, nodes[rows], toks[rows, level], level)
            ok[rows[~found]] = False
            nodes[rows] = np.where(found, nxt, 0)
        return ok

    # ------------------------------------------------------------- save/load

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to ``path``: ``.npz`` or ``.parquet``, by its suffix.

        Parameters
        ----------
        path
            ``*.npz``: an uncompressed ``.npz`` whose arrays are memory-mapped
            on load. ``*.parquet`` (or ``*.pq``): a Parquet file (needs
            pyarrow), one typed list column per array, zstd-compressed;
            decoded into memory on load.

        Raises
        ------
        CatalogError
            For any other suffix.
        ImportError
            For a Parquet path when pyarrow is not installed.
        """
        path = os.fspath(path)
        if not path.endswith((".npz", ".parquet", ".pq")):
            raise CatalogError(f"save() writes .npz or .parquet files; got {path!r}")
        arrays: dict[str, np.ndarray] = {
            "row_ptr": self.row_ptr,
            "edge_token": self.edge_token,
            "level_start": self.level_start,
            "level_width": self.level_width,
            "item_rank": np.zeros(0, dtype=np.int32) if self.item_rank is None else self.item_rank,
            "meta": np.array(
                [
                    _FORMAT_VERSION,
                    self._vocab_size,
                    -1 if self._eos is None else self._eos,
                    self._dense_depth,
                    self._max_length,
                    self._num_unique,
                    self._num_sequences,
                    self.item_rank is not None,
                ],
                dtype=np.int64,
            ),
        }
        for d, (m, c) in enumerate(zip(self._dense_mask, self._dense_child, strict=True)):
            arrays[f"dense_mask_{d}"] = m
            arrays[f"dense_child_{d}"] = c
        if path.endswith(".npz"):
            _io.save_npz(path, arrays)
        else:
            _io.save_parquet(path, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, mmap: bool = True) -> StaticIndex:
        """Read an index written by :meth:`save`.

        Parameters
        ----------
        path
            ``.npz`` or ``.parquet`` / ``.pq`` file written by :meth:`save`.
        mmap
            ``.npz``: map the arrays read-only instead of reading them into
            memory. Parquet: read through a memory map (the pages are still
            decoded into memory).

        Returns
        -------
        StaticIndex

        Raises
        ------
        CatalogError
            When the file cannot be read or holds no saved index.
        ImportError
            For a Parquet file when pyarrow is not installed.
        """
        name = os.fspath(path)
        if name.endswith((".parquet", ".pq")):
            arrays = _io.load_parquet(name, mmap=mmap)
        else:
            arrays = _io.load_npz(name, mmap=mmap)
        try:
            meta = [int(x) for x in arrays["meta"]]
            version, vocab, eos, dense_depth, max_length, num_unique, num_sequences, has_items = meta
            masks = [arrays[f"dense_mask_{d}"] for d in range(dense_depth)]
            children = [arrays[f"dense_child_{d}"] for d in range(dense_depth)]
            layout = Layout(
                row_ptr=arrays["row_ptr"],
                edge_token=arrays["edge_token"],
                level_start=np.asarray(arrays["level_start"]),
                level_width=np.asarray(arrays["level_width"]),
                item_rank=arrays["item_rank"] if has_items else None,
                dense_mask=masks,
                dense_child=children,
                num_unique=num_unique,
                num_sequences=num_sequences,
            )
        except (KeyError, ValueError) as exc:
            raise CatalogError(f"{os.fspath(path)!r} is not a saved StaticIndex: {exc}") from exc
        if version != _FORMAT_VERSION:
            raise CatalogError(f"unsupported index format version {version} (expected {_FORMAT_VERSION})")
        return cls(
            layout,
            vocab_size=vocab,
            eos_token=None if eos < 0 else eos,
            dense_depth=dense_depth,
            max_length=max_length,
        )

    # ------------------------------------------------------------ validation

    def _check_level(self, level: Any) -> int:
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
            raise CatalogError(f"level must be an integer, got {level!r}")
        if not 0 <= level < self._num_levels:
            raise CatalogError(
                f"level {level} is out of range: this index has levels 0..{self._num_levels - 1}"
            )
        return int(level)

    def _check_nodes(self, nodes: Any, level: Any) -> np.ndarray:
        if type(level) is not int or not 0 <= level < self._num_levels:
            level = self._check_level(level)
        if type(nodes) is not np.ndarray or nodes.dtype is not _INT64 or nodes.ndim != 1:
            nodes = np.asarray(nodes)
            if nodes.ndim != 1 or nodes.dtype.kind not in "iu":
                raise CatalogError(f"nodes must be a 1-D integer array, got {nodes.dtype} {nodes.shape}")
            nodes = nodes.astype(np.int64)
        # One pass: ids below the level wrap around to huge unsigned values.
        lo, count, _ = self._level_bounds[level]
        if np.count_nonzero((nodes - lo).view(_UINT64) >= count):
            self._raise_bad_nodes(nodes, level)
        return nodes

    def _raise_bad_nodes(self, nodes: np.ndarray, level: int) -> None:
        lo = self._level_start[level]
        hi = lo + self._level_count[level]
        ok = (nodes >= lo) & (nodes < hi)
        if self._end is not None and level > 0:
            ok |= nodes == self._end
        if not ok.all():
            row = int(np.flatnonzero(~ok)[0])
            raise CatalogError(
                f"node id {int(nodes[row])} (row {row}) is not a node of level {level} "
                f"(expected {lo}..{hi - 1}"
                + ("" if self._end is None or level == 0 else f" or end_node {self._end}")
                + "); node ids come from root and next_nodes()"
            )

    def _check_tokens(self, tokens: Any, rows: int, *, values: bool = True) -> np.ndarray:
        if type(tokens) is not np.ndarray or tokens.dtype is not _INT64:
            tokens = np.asarray(tokens)
            if tokens.dtype.kind not in "iu":
                raise CatalogError(f"tokens must be an integer array, got dtype {tokens.dtype}")
            tokens = tokens.astype(np.int64)
        if tokens.shape != (rows,):
            raise CatalogError(f"tokens must have shape ({rows},) (one per row), got {tokens.shape}")
        if values and np.count_nonzero(tokens.view(_UINT64) >= self._num_columns_u64):
            row = int(np.flatnonzero((tokens < 0) | (tokens >= self._num_columns))[0])
            raise CatalogError(
                f"token {int(tokens[row])} (row {row}) is outside [0, num_columns={self._num_columns})"
            )
        return tokens

    def _check_bitmask(self, bitmask: Any, rows: int) -> None:
        if not isinstance(bitmask, np.ndarray) or bitmask.dtype != np.int32 or bitmask.ndim != 2:
            raise CatalogError(
                "bitmask must be a 2-D int32 numpy array; use tokensieve.allocate_token_bitmask(rows, index.num_columns)"
            )
        if bitmask.shape[0] != rows or bitmask.shape[1] < self._words:
            raise CatalogError(
                f"bitmask has shape {bitmask.shape}; need ({rows}, >= {self._words}) for {rows} rows"
            )

    def _check_logits(self, logits: Any, rows: int) -> None:
        if (
            not isinstance(logits, np.ndarray)
            or logits.ndim != 2
            or not np.issubdtype(logits.dtype, np.floating)
        ):
            raise CatalogError("logits must be a 2-D float numpy array when nodes is a numpy array")
        if logits.shape[0] != rows or logits.shape[1] < self._min_logit_columns:
            raise CatalogError(
                f"logits has shape {logits.shape}; need ({rows}, >= num_columns={self._num_columns})"
                + (
                    ""
                    if self._min_logit_columns == self._num_columns
                    else f" or ({rows}, {self._vocab_size})"
                )
            )

    def _raise_not_child(self, nodes: Any, tokens: Any, level: int, found: Any) -> None:
        found = np.asarray(found.cpu() if hasattr(found, "cpu") else found)
        row = int(np.flatnonzero(~found)[0])
        node = int(nodes[row])
        token = int(tokens[row])
        if not 0 <= token < self._num_columns:
            raise CatalogError(f"token {token} (row {row}) is outside [0, num_columns={self._num_columns})")
        raise CatalogError(
            f"token {token} is not allowed at node {node} (row {row}, level {level}): "
            "no catalog item continues that way"
        )

    # --------------------------------------------------------- hot-path caches

    def _plan(self, rows: int, level: int) -> nps.SparsePlan:
        plan = self._plans.get((rows, level))
        if plan is None:
            if len(self._plans) > 256:
                self._plans.clear()
            plan = nps.SparsePlan(self, rows, level)
            self._plans[(rows, level)] = plan
        return plan

    def _multi_child_fraction(self, level: int) -> float:
        """Fraction of the level's nodes with more than one child (cached)."""
        got = self._multi_child.get(level)
        if got is None:
            lo, hi = self._level_start[level], self._level_start[level + 1]
            counts = np.diff(self.row_ptr[lo : hi + 1])
            got = float(np.count_nonzero(counts > 1)) / max(hi - lo, 1)
            self._multi_child[level] = got
        return got

    def _child_count_histogram(self, level: int) -> np.ndarray:
        """``histogram[c]``: nodes of the level with ``c`` children (cached)."""
        got = self._child_counts.get(level)
        if got is None:
            lo, hi = self._level_start[level], self._level_start[level + 1]
            counts = np.diff(self.row_ptr[lo : hi + 1])
            got = np.bincount(counts, minlength=self._level_width[level] + 1)
            self._child_counts[level] = got
        return got

    def _row_index(self, rows: int) -> np.ndarray:
        idx = self._row_indices.get(rows)
        if idx is None:
            if len(self._row_indices) > 64:
                self._row_indices.clear()
            idx = np.arange(rows, dtype=np.int64)[:, None]
            self._row_indices[rows] = idx
        return idx
