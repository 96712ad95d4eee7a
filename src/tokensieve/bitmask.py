"""Token bitmasks in the ecosystem's layout.

A bitmask is an ``int32`` array of shape ``(batch, ceil(vocab_size / 32))``; token
``t`` is allowed in row ``r`` iff ``(mask[r, t >> 5] >> (t & 31)) & 1``. The same
layout is used by xgrammar, llguidance and vLLM, so masks can be passed between
them. Functions accept numpy arrays or torch tensors; torch is imported only when
a tensor is passed.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Literal

import numpy as np

__all__ = [
    "allocate_token_bitmask",
    "copy_friendly",
    "friendly_zeros",
    "apply_token_bitmask_inplace",
    "bitmask_size",
    "bitmask_to_bool",
    "bool_to_bitmask",
]


#: Copies whose destination lies 4 to 28 bytes past the source, modulo a 4 KiB page,
#: run about ten times slower on x86 (loads alias the stores just made: "4K
#: aliasing"). Cached masks are placed on 64-byte boundaries that are not page
#: boundaries, and bitmasks on 64-byte boundaries: no pair then falls in that
#: window, nor does a cached mask with a bitmask from the system allocator's large
#: blocks (16 bytes past a page) or from torch (64-byte aligned).
_ALIGN = 64
_PAGE = 4096


def _aligned(count: int, *, avoid_page_start: bool, zeros: bool = False) -> tuple[np.ndarray, int]:
    """``count`` ``int32`` words starting on a 64-byte boundary (not a page start if asked), and their address."""
    raw = (np.zeros if zeros else np.empty)(count + 2 * _ALIGN // 4, dtype=np.int32)
    address = raw.__array_interface__["data"][0]
    skip = (-address) % _ALIGN
    if avoid_page_start and (address + skip) % _PAGE == 0:
        skip += _ALIGN
    return raw[skip // 4 : skip // 4 + count], address + skip


def _aligned_empty(shape: tuple[int, ...], *, avoid_page_start: bool) -> np.ndarray:
    """An uninitialised ``int32`` array starting on a 64-byte boundary (not a page start if asked)."""
    count = 1
    for n in shape:
        count *= n
    return _aligned(count, avoid_page_start=avoid_page_start)[0].reshape(shape)


class _Slab:
    """Zeroed rows of one width, handed out from a shared block (no per-row address lookup)."""

    #: rows per block: a block stays alive while any of its rows is referenced
    ROWS = 16

    def __init__(self, width: int) -> None:
        self.width = width
        self.stride = -(-width // (_ALIGN // 4)) * (_ALIGN // 4)  # words, a multiple of 64 bytes
        self._rows: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self) -> np.ndarray:
        with self._lock:
            if not self._rows:
                self._refill()
            return self._rows.pop()

    def _refill(self) -> None:
        # the first row is off a page start; later rows that land on one are skipped
        block, address = _aligned(self.ROWS * self.stride, avoid_page_start=True, zeros=True)
        for k in range(self.ROWS - 1, -1, -1):
            start = k * self.stride
            if (address + 4 * start) % _PAGE:
                self._rows.append(block[start : start + self.width])


_SLABS: dict[int, _Slab] = {}


def friendly_zeros(shape: int | tuple[int, ...], dtype: type = np.int32) -> np.ndarray:
    """Zeros placed like :func:`copy_friendly` places masks (``int32`` or ``uint32``).

    Parameters
    ----------
    shape
        The array's shape; each row of a 2-D array is a mask.
    dtype
        ``numpy.int32`` or ``numpy.uint32``.

    Returns
    -------
    numpy.ndarray
        A contiguous zero array starting on a 64-byte boundary that is not a page start.
    """
    if isinstance(shape, int):
        slab = _SLABS.get(shape)
        if slab is None:
            slab = _SLABS.setdefault(shape, _Slab(shape))
        out = slab.take()
    else:
        out = _aligned_empty(tuple(shape), avoid_page_start=True)
        out.fill(0)
    return out if dtype is np.int32 else out.view(dtype)


def copy_friendly(mask: np.ndarray) -> np.ndarray:
    """``mask`` itself when it sits where copies from it are fast, else a copy that does.

    Parameters
    ----------
    mask
        A packed ``int32`` mask row, about to be cached and copied into bitmasks
        many times.

    Returns
    -------
    numpy.ndarray
        ``mask`` or an equal contiguous array on a 64-byte boundary that is not a
        page boundary (read-only if ``mask`` was).
    """
    address = mask.__array_interface__["data"][0]
    if mask.flags.c_contiguous and address % _ALIGN == 0 and address % _PAGE != 0:
        return mask
    out = _aligned_empty(mask.shape, avoid_page_start=True)
    out[...] = mask
    if not mask.flags.writeable:
        out.setflags(write=False)
    return out


def bitmask_size(vocab_size: int) -> int:
    """Number of int32 words needed for ``vocab_size`` tokens."""
    return (int(vocab_size) + 31) // 32


def allocate_token_bitmask(
    batch_size: int, vocab_size: int, *, backend: Literal["numpy", "torch"] = "numpy"
) -> Any:
    """Allocate a bitmask with every token allowed.

    Parameters
    ----------
    batch_size
        Number of rows.
    vocab_size
        Vocabulary size (may exceed the tokenizer's real token count).
    backend
        ``"numpy"`` for an ``np.ndarray`` or ``"torch"`` for a CPU ``torch.Tensor``.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        ``int32`` array of shape ``(batch_size, ceil(vocab_size / 32))`` filled with -1.
    """
    if batch_size < 0 or vocab_size < 0:
        raise ValueError("batch_size and vocab_size must be non-negative")
    shape = (int(batch_size), bitmask_size(vocab_size))
    if backend == "numpy":
        out = _aligned_empty(shape, avoid_page_start=False)
        out.fill(-1)
        return out
    if backend == "torch":
        torch = _import_torch()
        return torch.full(shape, -1, dtype=torch.int32)
    raise ValueError(f"backend must be 'numpy' or 'torch', not {backend!r}")


def bitmask_to_bool(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """Expand a numpy bitmask ``(..., W)`` to booleans ``(..., vocab_size)``."""
    mask = np.ascontiguousarray(bitmask, dtype=np.int32)
    bits = np.unpackbits(mask.view(np.uint8), axis=-1, bitorder="little")
    return bits[..., :vocab_size].astype(bool)


def bool_to_bitmask(allowed: np.ndarray) -> np.ndarray:
    """Pack booleans ``(..., V)`` into an int32 bitmask ``(..., ceil(V/32))``."""
    allowed = np.asarray(allowed, dtype=bool)
    v = allowed.shape[-1]
    words = bitmask_size(v)
    padded = np.zeros(allowed.shape[:-1] + (words * 32,), dtype=bool)
    padded[..., :v] = allowed
    return np.packbits(padded, axis=-1, bitorder="little").view(np.int32)


def apply_token_bitmask_inplace(
    logits: Any, bitmask: Any, *, indices: Any | None = None, vocab_size: int | None = None
) -> None:
    """Set the logits of disallowed tokens to ``-inf``, in place.

    Parameters
    ----------
    logits
        ``(batch, V)`` or ``(V,)`` float array (numpy) or tensor (torch, any device).
    bitmask
        ``(batch, W)`` or ``(W,)`` int32 bitmask of the same kind as ``logits``.
    indices
        Optional rows of ``logits`` to mask; row ``i`` of the bitmask applies to
        ``logits[indices[i]]``. By default row ``i`` applies to row ``i``.
    vocab_size
        Number of logit columns to consider (defaults to ``logits.shape[-1]``);
        columns beyond ``32 * W`` are masked too.

    Raises
    ------
    ValueError
        On a wrong dtype or incompatible shapes, with the fix in the message.
    """
    if isinstance(logits, np.ndarray):
        _apply_numpy(logits, bitmask, indices, vocab_size)
        return
    torch = _import_torch()
    if not isinstance(logits, torch.Tensor):
        raise ValueError("logits must be a numpy array or a torch tensor")
    _apply_torch(torch, logits, bitmask, indices, vocab_size)


def _check_shapes(lshape: tuple[int, ...], bshape: tuple[int, ...], has_indices: bool) -> None:
    if len(lshape) not in (1, 2) or len(bshape) not in (1, 2):
        raise ValueError(
            f"logits must be (batch, V) or (V,), bitmask (batch, W) or (W,); got {lshape} and {bshape}"
        )
    if not has_indices and len(lshape) == 2 and len(bshape) == 2 and bshape[0] != lshape[0]:
        raise ValueError(
            f"bitmask has {bshape[0]} rows but logits has {lshape[0]}; pass indices= to map rows"
        )


def _apply_numpy(logits: np.ndarray, bitmask: Any, indices: Any, vocab_size: int | None) -> None:
    if not isinstance(bitmask, np.ndarray):
        raise ValueError("bitmask must be a numpy array when logits is one")
    if bitmask.dtype != np.int32:
        raise ValueError(f"bitmask dtype must be int32, got {bitmask.dtype}; use allocate_token_bitmask()")
    _check_shapes(logits.shape, bitmask.shape, indices is not None)
    lg = logits if logits.ndim == 2 else logits[None, :]
    bm = bitmask if bitmask.ndim == 2 else bitmask[None, :]
    v = lg.shape[1] if vocab_size is None else min(int(vocab_size), lg.shape[1])
    allowed = bitmask_to_bool(bm, bm.shape[1] * 32)
    if allowed.shape[1] < v:
        pad = np.zeros((allowed.shape[0], v - allowed.shape[1]), dtype=bool)
        allowed = np.concatenate([allowed, pad], axis=1)
    allowed = allowed[:, :v]
    rows = np.arange(bm.shape[0]) if indices is None else np.asarray(indices, dtype=np.int64)
    if len(rows) != bm.shape[0]:
        raise ValueError(f"indices has {len(rows)} entries but bitmask has {bm.shape[0]} rows")
    sub = lg[rows, :v]
    sub[~allowed] = -np.inf
    lg[rows, :v] = sub


#: Per device, the bit of each token within its byte (``uint8``, little-endian
#: hosts) or within its word (``int32``), built once.
_BIT_TABLES: dict[Any, Any] = {}


def _bit_table(torch: Any, device: Any) -> Any:
    table = _BIT_TABLES.get(device)
    if table is None:
        if sys.byteorder == "little":  # byte k of word w holds tokens 32 w + 8 k .. 32 w + 8 k + 7
            table = torch.tensor([1 << j for j in range(8)], dtype=torch.uint8, device=device)
        else:
            bits = [(1 << j) - (1 << 32 if j == 31 else 0) for j in range(32)]
            table = torch.tensor(bits, dtype=torch.int32, device=device)
        table = _BIT_TABLES.setdefault(device, table)
    return table


def _apply_torch(torch: Any, logits: Any, bitmask: Any, indices: Any, vocab_size: int | None) -> None:
    if isinstance(bitmask, np.ndarray):
        bitmask = torch.from_numpy(np.ascontiguousarray(bitmask))
    if bitmask.dtype != torch.int32:
        raise ValueError(f"bitmask dtype must be torch.int32, got {bitmask.dtype}")
    _check_shapes(tuple(logits.shape), tuple(bitmask.shape), indices is not None)
    lg = logits if logits.dim() == 2 else logits.unsqueeze(0)
    bm = bitmask if bitmask.dim() == 2 else bitmask.unsqueeze(0)
    bm = bm.to(lg.device, non_blocking=True)
    v = lg.shape[1] if vocab_size is None else min(int(vocab_size), lg.shape[1])
    cols = min(v, 32 * bm.shape[1])  # columns past 32 * W are disallowed
    if indices is None:
        _mask_columns(torch, lg, bm, cols, v)
        return
    rows = torch.as_tensor(indices, device=lg.device, dtype=torch.long)
    if rows.numel() != bm.shape[0]:
        raise ValueError(f"indices has {rows.numel()} entries but bitmask has {bm.shape[0]} rows")
    sub = lg[rows, :v]
    _mask_columns(torch, sub, bm, cols, v)
    lg[rows, :v] = sub


def _mask_columns(torch: Any, lg: Any, bm: Any, cols: int, v: int) -> None:
    """Mask ``lg[:, :cols]`` by ``bm`` and set ``lg[:, cols:v]`` to ``-inf``.

    Three kernels (and with the bit table, compare with 0, masked fill) and no
    host synchronisation.
    """
    if cols:
        table = _bit_table(torch, lg.device)
        units = bm.contiguous().view(torch.uint8) if table.dtype == torch.uint8 else bm
        disallowed = (units.unsqueeze(-1) & table).eq(0).view(bm.shape[0], 32 * bm.shape[1])
        if cols < disallowed.shape[1]:
            disallowed = disallowed[:, :cols]
        (lg if cols == lg.shape[1] else lg[:, :cols]).masked_fill_(disallowed, float("-inf"))
    if cols < v:
        lg[:, cols:v] = float("-inf")


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on environment
        raise ImportError("this needs torch: pip install 'tokensieve[torch]'") from exc
    return torch
