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
import threading
from typing import Any

import numpy as np

from . import _checks as checks
from . import _io
from . import _numpy_step as nps
from ._build import Layout, build_layout
from ._errors import CatalogError
from ._input import _lengths, _to_array, normalize_catalog
from ._tables import StepTables, build_tables
from .filter import ItemFilter

__all__ = ["StaticIndex"]

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
        self._tables: StepTables = build_tables(
            layout, vocab_size=vocab_size, eos_token=eos_token, dense_depth=dense_depth, max_length=max_length
        )
        self.row_ptr = layout.row_ptr
        self.edge_token = layout.edge_token
        self.level_start = layout.level_start
        self.level_width = layout.level_width
        self.item_rank = layout.item_rank
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
        return self._tables.vocab_size

    @property
    def eos_token(self) -> int | None:
        """End token id, or ``None`` for a fixed-length catalog without one."""
        return self._tables.eos

    @property
    def num_columns(self) -> int:
        """Columns the masks cover: ``V + 1`` when the end token is ``V``, else ``V``."""
        return self._tables.num_columns

    @property
    def bitmask_words(self) -> int:
        """Words per bitmask row, ``ceil(num_columns / 32)``."""
        return self._tables.words

    @property
    def num_levels(self) -> int:
        """Decoding steps: the longest item's length, plus one with an end token."""
        return self._tables.num_levels

    @property
    def max_length(self) -> int:
        """Tokens in the longest item."""
        return self._tables.max_length

    @property
    def num_sequences(self) -> int:
        """Items given at build time, duplicates included (the length of filter vectors)."""
        return self._tables.num_sequences

    @property
    def num_unique(self) -> int:
        """Distinct sequences in the catalog."""
        return self._tables.num_unique

    @property
    def num_nodes(self) -> int:
        """Trie nodes, including terminals and the END node."""
        return self._tables.num_nodes

    @property
    def end_node(self) -> int | None:
        """Node reached by the end token (``None`` without an end token)."""
        return self._tables.end

    @property
    def dense_depth(self) -> int:
        """Number of levels served from packed per-node masks (after the automatic extension)."""
        return self._tables.dense_depth

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
        t = self._tables
        return {
            "csr": int(self.row_ptr.nbytes + self.edge_token.nbytes),
            "dense": int(sum(m.nbytes for m in t.dense_mask) + sum(c.nbytes for c in t.layout.dense_child)),
            "items": 0 if self.item_rank is None else int(self.item_rank.nbytes),
            "levels": int(
                self.level_start.nbytes
                + self.level_width.nbytes
                + t.bit_value.nbytes
                + t.low_bits_of_token.nbytes
                + t.word_of_token.nbytes
                + t.root_child.nbytes
                + t.byte_of_token.nbytes
                + t.byte_value.nbytes
            ),
            "patterns": int(sum(sum(a.nbytes for a in p) for p in t.slot_patterns.values())),
            "filter_support": sum(int(r.nbytes) for r in t.support),
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
        t = self._tables
        if type(nodes) is not np.ndarray and _is_torch(nodes):
            from . import _torch_step as tst

            tst.fill_bitmask(t, nodes, level, bitmask, filt, check)
            return bitmask
        if check:
            if type(level) is not int or not 0 <= level < t.num_levels:
                level = checks.check_level(t, level)
            if type(nodes) is not np.ndarray or nodes.dtype is not _INT64 or nodes.ndim != 1:
                nodes = checks.check_nodes(t, nodes, level)
            # The range check's ``nodes - level_start`` is the dense levels' row number.
            lo, count, _ = t.level_bounds[level]
            local = nodes - lo
            if np.count_nonzero(local.view(_UINT64) >= count):
                checks.raise_bad_nodes(t, nodes, level)
            if (
                type(bitmask) is not np.ndarray
                or bitmask.dtype is not _INT32
                or bitmask.ndim != 2
                or bitmask.shape[0] != len(nodes)
                or bitmask.shape[1] < t.words
            ):
                checks.check_bitmask(t, bitmask, len(nodes))
            self._last.gathered = nps.fill_bitmask(t, nodes, level, bitmask, filt, local, nodes.tobytes())
        else:
            nps.fill_bitmask(t, nodes, level, bitmask, filt)
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
        t = self._tables
        if type(nodes) is not np.ndarray and _is_torch(nodes):
            from . import _torch_step as tst

            return tst.next_nodes(t, nodes, tokens, level, check)
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
                nodes = checks.check_nodes(t, nodes, level)
                level = int(level)
            # Sparse levels need no range check: an out-of-range token matches
            # no child, so it is reported as not allowed (with its range).
            dense = level < t.dense_depth
            if (
                type(tokens) is not np.ndarray
                or tokens.dtype is not _INT64
                or tokens.shape != nodes.shape
                or (dense and np.count_nonzero(tokens.view(_UINT64) >= t.num_columns_u64))
            ):
                tokens = checks.check_tokens(t, tokens, len(nodes), values=dense)
        return nps.next_nodes(t, nodes, tokens, level, check, gathered)

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
        t = self._tables
        if not isinstance(nodes, np.ndarray) and _is_torch(nodes):
            from . import _torch_step as tst

            tst.apply_mask(t, logits, nodes, level, filt, check)
            return logits
        if check:
            nodes = checks.check_nodes(t, nodes, level)
            checks.check_logits(t, logits, len(nodes))
        nps.apply_mask(t, logits, nodes, level, filt)
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
        return nps.contains(self._tables, arr, lens)

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
        _io.write_index(path, self._tables)

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
        layout, meta = _io.read_index(os.fspath(path), mmap=mmap)
        return cls(layout, **meta)
