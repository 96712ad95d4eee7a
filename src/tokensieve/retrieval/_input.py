"""Turning user catalogs (fixed, padded or ragged) into one padded token array."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._errors import CatalogError

__all__ = ["Catalog", "normalize_catalog", "token_dtype"]


@dataclass
class Catalog:
    """A validated catalog.

    Attributes
    ----------
    tokens
        ``(N, L)`` array (``uint16`` or ``int32``); positions at or after an
        item's length hold ``eos`` (or anything when ``eos`` is ``None``).
    lengths
        ``(N,)`` ``int64`` item lengths, all ``>= 1``.
    eos
        End-of-sequence token id, or ``None`` when every item has length ``L``
        and no end token was asked for.
    """

    tokens: np.ndarray
    lengths: np.ndarray
    eos: int | None


def token_dtype(num_columns: int) -> np.dtype:
    """Smallest unsigned/signed dtype holding token ids ``< num_columns``."""
    return np.dtype(np.uint16) if num_columns <= 1 << 16 else np.dtype(np.int32)


def _to_array(seqs: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Return a 2-D integer array and, for ragged input, the lengths."""
    if hasattr(seqs, "detach") and hasattr(seqs, "cpu"):  # a torch tensor
        seqs = seqs.detach().cpu().numpy()
    if isinstance(seqs, np.ndarray) and seqs.dtype != object:
        return seqs, None
    try:
        arr = np.asarray(seqs)
    except ValueError:  # inhomogeneous shape: ragged input
        arr = None
    if arr is not None and arr.dtype != object:
        return arr, None
    return _ragged(seqs)


def _ragged(seqs: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        items = list(seqs)
        lengths = np.fromiter((len(s) for s in items), dtype=np.int64, count=len(items))
        flat = np.fromiter(itertools.chain.from_iterable(items), dtype=np.int64, count=int(lengths.sum()))
    except (TypeError, ValueError, OverflowError) as exc:
        raise CatalogError("seqs must be an (N, L) integer array or a sequence of integer sequences") from exc
    n = len(items)
    width = int(lengths.max()) if n else 0
    out = np.full((n, max(width, 1)), -1, dtype=np.int64)
    if flat.size:
        rows = np.repeat(np.arange(n), lengths)
        offsets = np.cumsum(lengths) - lengths
        cols = np.arange(flat.size) - np.repeat(offsets, lengths)
        out[rows, cols] = flat
    return out, lengths


def normalize_catalog(
    seqs: Any,
    vocab_size: int,
    *,
    eos_token: int | None,
    lengths: Any = None,
    pad_token: int | None = -1,
) -> Catalog:
    """Validate a catalog and bring it into :class:`Catalog` form.

    Parameters
    ----------
    seqs
        ``(N, L)`` integer array (fixed length, or padded with ``pad_token``
        after each item's end), or a sequence of integer sequences (ragged).
    vocab_size
        Number of codebook tokens ``V``; item tokens must lie in ``[0, V)``.
    eos_token
        End token id in ``[0, V]``; ``None`` picks ``V`` when lengths vary and
        no end token otherwise.
    lengths
        Optional ``(N,)`` item lengths for a padded 2-D array (entries after
        the length are ignored); overrides ``pad_token``.
    pad_token
        Value marking padding in a 2-D array (trailing positions only).

    Returns
    -------
    Catalog

    Raises
    ------
    CatalogError
        On wrong dimensions or dtypes, empty catalogs or items, out-of-range
        tokens, items containing the end token, or padding in the middle.
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1:
        raise CatalogError(f"vocab_size must be a positive integer, got {vocab_size!r}")
    vocab_size = int(vocab_size)
    arr, ragged_lengths = _to_array(seqs)
    if arr.ndim == 1 and arr.shape[0] == 0:
        raise CatalogError("the catalog is empty: give at least one sequence")
    if arr.ndim != 2:
        raise CatalogError(
            f"seqs must be 2-D (N items, L tokens) or a sequence of sequences; got an array of shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise CatalogError(f"seqs must hold integer token ids, got dtype {arr.dtype}")
    n, width = arr.shape
    if n == 0:
        raise CatalogError("the catalog is empty: give at least one sequence")
    if width == 0:
        raise CatalogError("catalog sequences must have at least one token")
    lens = _lengths(arr, ragged_lengths, lengths, pad_token)
    fixed = bool(lens.min() == width)
    if eos_token is None:
        eos = None if fixed else vocab_size
    else:
        if isinstance(eos_token, bool) or not isinstance(eos_token, (int, np.integer)):
            raise CatalogError(f"eos_token must be an integer or None, got {eos_token!r}")
        eos = int(eos_token)
        if not 0 <= eos <= vocab_size:
            raise CatalogError(f"eos_token must lie in [0, vocab_size={vocab_size}], got {eos}")
    num_columns = vocab_size + 1 if eos == vocab_size else vocab_size
    dtype = token_dtype(num_columns)
    inside = None if fixed else np.arange(width) < lens[:, None]
    _check_values(arr, inside, vocab_size, eos)
    if fixed:
        tokens = arr.astype(dtype, copy=False)
    else:
        assert inside is not None and eos is not None  # lengths vary, so there is an end token
        tokens = np.where(inside, arr, eos).astype(dtype)
    return Catalog(tokens=np.ascontiguousarray(tokens), lengths=lens, eos=eos)


def _lengths(arr: np.ndarray, ragged: np.ndarray | None, lengths: Any, pad_token: int | None) -> np.ndarray:
    n, width = arr.shape
    if lengths is not None:
        lens = np.asarray(lengths)
        if lens.shape != (n,) or not np.issubdtype(lens.dtype, np.integer):
            raise CatalogError(
                f"lengths must be an integer array of shape ({n},), got {lens.dtype} {lens.shape}"
            )
        lens = lens.astype(np.int64)
    elif ragged is not None:
        lens = ragged
    elif pad_token is not None and (arr == pad_token).any():
        is_pad = arr == pad_token
        lens = width - is_pad.sum(axis=1, dtype=np.int64)
        trailing = np.arange(width) >= lens[:, None]
        bad = np.flatnonzero((is_pad != trailing).any(axis=1))
        if bad.size:
            raise CatalogError(
                f"padding (pad_token={pad_token}) must only follow the last token; row {int(bad[0])} "
                f"is {arr[bad[0]].tolist()}"
            )
    else:
        return np.full(n, width, dtype=np.int64)
    if lens.size and (lens.min() < 1 or lens.max() > width):
        row = int(np.flatnonzero((lens < 1) | (lens > width))[0])
        raise CatalogError(f"every item needs 1..{width} tokens; item {row} has {int(lens[row])}")
    return lens


def _check_values(arr: np.ndarray, inside: np.ndarray | None, vocab_size: int, eos: int | None) -> None:
    if inside is None:
        lo, hi = int(arr.min()), int(arr.max())
    else:
        lo = int(np.where(inside, arr, 0).min())
        hi = int(np.where(inside, arr, 0).max())
    if lo < 0 or hi >= vocab_size:
        bad = (arr < 0) | (arr >= vocab_size)
        if inside is not None:
            bad &= inside
        row, col = (int(x[0]) for x in np.nonzero(bad))
        raise CatalogError(
            f"token ids must lie in [0, vocab_size={vocab_size}); item {row} has {int(arr[row, col])} at position {col}"
        )
    if eos is not None and eos < vocab_size:
        hit = arr == eos
        if inside is not None:
            hit &= inside
        if hit.any():
            row, col = (int(x[0]) for x in np.nonzero(hit))
            raise CatalogError(
                f"item {row} contains the end token {eos} at position {col}; pick an eos_token no item uses"
            )
