"""The batched step on torch tensors (CPU or CUDA), shaped like the numpy one.

The index's arrays are copied to each device once and cached. Masks of sparse
levels are built with ``scatter_add_`` of disjoint bit values in int64 and then
reinterpreted as int32 words; following a token on a dense level uses the
stored per-word rank prefix plus a SWAR popcount (torch has no popcount op).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ._checks import check_level, check_nodes, raise_not_child
from ._errors import CatalogError
from ._tables import StepTables, filter_support

if TYPE_CHECKING:
    from .filter import ItemFilter

__all__ = ["allowed_bool", "apply_mask", "candidates", "fill_bitmask", "follow", "next_nodes", "tables"]

_SIGN = 1 << 31


@dataclass
class _Tables:
    row_ptr: torch.Tensor
    edge_token: torch.Tensor
    slot_range: torch.Tensor
    bit_value: torch.Tensor
    low_bits: torch.Tensor
    shifts: torch.Tensor
    dense_mask: list[torch.Tensor]
    dense_child: list[torch.Tensor]
    ranges: torch.Tensor | None = None


def _tensor(a: np.ndarray, device: torch.device, dtype: torch.dtype | None = None) -> torch.Tensor:
    arr = np.ascontiguousarray(a)
    if arr.dtype == np.uint16 or arr.dtype == np.uint32:
        arr = arr.astype(np.int32 if arr.dtype == np.uint16 else np.int64)
    if not arr.flags.writeable:
        arr = arr.copy()
    dt = torch.from_numpy(arr)
    return dt.to(device=device, dtype=dtype or dt.dtype)


def tables(st: StepTables, device: torch.device) -> _Tables:
    """The index's arrays on ``device`` (built once per device)."""
    key = str(device)
    dt = st.device.get(key)
    if dt is None:
        dt = _Tables(
            row_ptr=_tensor(st.row_ptr, device, torch.int64),
            edge_token=_tensor(st.edge_token, device, torch.int32),
            slot_range=torch.arange(max(st.pad, 1), dtype=torch.int64, device=device),
            bit_value=_tensor(st.bit_value.astype(np.int64), device),
            low_bits=_tensor(st.low_bits_of_token.astype(np.int64), device),
            shifts=torch.arange(32, dtype=torch.int32, device=device),
            dense_mask=[_tensor(m, device) for m in st.dense_mask],
            dense_child=[_tensor(c.reshape(-1), device, torch.int64) for c in st.layout.dense_child],
        )
        st.device[key] = dt
    return dt


def _ranges(st: StepTables, dt: _Tables, device: torch.device) -> torch.Tensor:
    if dt.ranges is None:
        dt.ranges = _tensor(filter_support(st), device, torch.int64)
    return dt.ranges


def _filter_tables(filt: ItemFilter, device: torch.device) -> tuple[torch.Tensor, list[torch.Tensor]]:
    key = str(device)
    got = filt._torch.get(key)
    if got is None:
        got = (_tensor(filt.prefix, device, torch.int64), [_tensor(m, device) for m in filt.dense_mask])
        filt._torch[key] = got
    return got


def _popcount32(x: torch.Tensor) -> torch.Tensor:
    x = x - ((x >> 1) & 0x55555555)
    x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F
    return ((x * 0x01010101) & 0xFFFFFFFF) >> 24


def candidates(
    st: StepTables, nodes: torch.Tensor, level: int, filt: ItemFilter | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fixed-width CSR slice per row: ``start``, ``idx``, ``tok`` (int64), ``valid``."""
    dt = tables(st, nodes.device)
    start = dt.row_ptr[nodes]
    end = dt.row_ptr[nodes + 1]
    idx = start[:, None] + dt.slot_range[: st.widths[level]]
    tok = dt.edge_token[idx].long()
    valid = idx < end[:, None]
    if filt is not None:
        prefix, _ = _filter_tables(filt, nodes.device)
        counts = prefix[_ranges(st, dt, nodes.device)[idx + 1]]
        valid &= counts[..., 1] > counts[..., 0]
    return start, idx, tok, valid


def _dense_rows(st: StepTables, nodes: torch.Tensor, level: int) -> torch.Tensor:
    local = nodes - st.starts[level]
    if st.end is not None and level > 0:
        local = local.clamp(max=st.counts[level])
    return local


def _fill(
    st: StepTables, nodes: torch.Tensor, level: int, bitmask: torch.Tensor, filt: ItemFilter | None
) -> None:
    rows, words = bitmask.shape
    if level < st.dense_depth:
        dt = tables(st, nodes.device)
        table = dt.dense_mask[level] if filt is None else _filter_tables(filt, nodes.device)[1][level]
        bitmask[:, : st.words] = table.index_select(0, _dense_rows(st, nodes, level))
        if words > st.words:
            bitmask[:, st.words :] = 0
        return
    dt = tables(st, nodes.device)
    _, _, tok, valid = candidates(st, nodes, level, filt)
    bits = dt.bit_value[tok] * valid
    base = torch.arange(rows, device=nodes.device, dtype=torch.int64)[:, None] * words
    flat = (tok >> 5) + base
    acc = torch.zeros(rows * words, dtype=torch.int64, device=nodes.device)
    acc.scatter_add_(0, flat.reshape(-1), bits.reshape(-1))
    bitmask.copy_(((acc ^ _SIGN) - _SIGN).view(rows, words))


def fill_bitmask(
    st: StepTables, nodes: torch.Tensor, level: int, bitmask: Any, filt: ItemFilter | None, check: bool
) -> None:
    """Torch version of :meth:`StaticIndex.fill_bitmask`."""
    if check:
        nodes = _check_nodes(st, nodes, level)
        if not isinstance(bitmask, torch.Tensor) or bitmask.dtype != torch.int32 or bitmask.dim() != 2:
            raise CatalogError("bitmask must be a 2-D torch.int32 tensor when nodes is a tensor")
        if bitmask.shape[0] != nodes.shape[0] or bitmask.shape[1] < st.words:
            raise CatalogError(
                f"bitmask has shape {tuple(bitmask.shape)}; need ({nodes.shape[0]}, >= {st.words})"
            )
        if bitmask.device != nodes.device:
            raise CatalogError(f"bitmask is on {bitmask.device} but nodes on {nodes.device}")
    _fill(st, nodes, level, bitmask, filt)


def allowed_bool(st: StepTables, nodes: torch.Tensor, level: int, filt: ItemFilter | None) -> torch.Tensor:
    """Boolean ``(rows, num_columns)`` tensor of allowed tokens."""
    dt = tables(st, nodes.device)
    bitmask = torch.empty((nodes.shape[0], st.words), dtype=torch.int32, device=nodes.device)
    _fill(st, nodes, level, bitmask, filt)
    bits = ((bitmask.unsqueeze(-1) >> dt.shifts) & 1).bool()
    return bits.reshape(nodes.shape[0], 32 * st.words)[:, : st.num_columns]


def apply_mask(
    st: StepTables, logits: Any, nodes: torch.Tensor, level: int, filt: ItemFilter | None, check: bool
) -> None:
    """Torch version of :meth:`StaticIndex.apply_mask_`."""
    if check:
        nodes = _check_nodes(st, nodes, level)
        if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or not logits.is_floating_point():
            raise CatalogError("logits must be a 2-D float tensor when nodes is a tensor")
        if logits.shape[0] != nodes.shape[0] or logits.shape[1] < st.min_logit_columns:
            raise CatalogError(
                f"logits has shape {tuple(logits.shape)}; need ({nodes.shape[0]}, >= num_columns={st.num_columns})"
            )
        if logits.device != nodes.device:
            raise CatalogError(f"logits is on {logits.device} but nodes on {nodes.device}")
    ncols = st.num_columns
    cols = logits.shape[1]
    if level < st.dense_depth:
        allowed = allowed_bool(st, nodes, level, filt)
        if cols < ncols:  # the end column is omitted
            allowed = allowed[:, :cols]
        logits[:, : allowed.shape[1]].masked_fill_(~allowed, float("-inf"))
        logits[:, ncols:] = float("-inf")
        return
    _, _, tok, valid = candidates(st, nodes, level, filt)
    if cols < ncols:  # the end column (the largest token) is omitted: never a target
        valid &= tok < cols
        tok = tok.clamp(max=cols - 1)
    keep = logits.gather(1, tok).masked_fill(~valid, float("-inf"))
    tok = torch.where(valid, tok, tok[:, :1])
    keep = torch.where(valid, keep, keep[:, :1])
    logits.fill_(float("-inf"))
    logits.scatter_(1, tok, keep)


def follow(
    st: StepTables, nodes: torch.Tensor, tokens: torch.Tensor, level: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Children reached by ``tokens`` and a bool "token is a child" per row."""
    dt = tables(st, nodes.device)
    if level < st.dense_depth:
        local = _dense_rows(st, nodes, level)
        pos = local * st.words + (tokens >> 5)
        word = dt.dense_mask[level].reshape(-1)[pos].long() & 0xFFFFFFFF
        found = ((word >> (tokens & 31)) & 1).bool()
        below = _popcount32(word & dt.low_bits[tokens])
        nxt = dt.dense_child[level][pos] + below
    else:
        start, _, tok, valid = candidates(st, nodes, level, None)
        hit = (tok == tokens[:, None]) & valid
        nxt = start + hit.int().argmax(dim=1) + 1
        found = hit.any(dim=1)
    if st.end is not None and st.eos is not None:
        nxt = torch.where(tokens.eq(st.eos), st.end, nxt)
    return nxt, found


def next_nodes(st: StepTables, nodes: torch.Tensor, tokens: Any, level: int, check: bool) -> torch.Tensor:
    """Torch version of :meth:`StaticIndex.next_nodes`."""
    if check:
        nodes = _check_nodes(st, nodes, level)
        if not isinstance(tokens, torch.Tensor):
            tokens = torch.as_tensor(np.asarray(tokens), device=nodes.device)
        if tokens.shape != nodes.shape or tokens.is_floating_point() or tokens.dtype == torch.bool:
            raise CatalogError(f"tokens must be an integer tensor of shape {tuple(nodes.shape)}")
        tokens = tokens.to(device=nodes.device, dtype=torch.int64)
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= st.num_columns):
            raise CatalogError(f"tokens must lie in [0, num_columns={st.num_columns})")
    nxt, found = follow(st, nodes, tokens, level)
    if check and not bool(found.all()):
        raise_not_child(st, nodes.cpu(), tokens.cpu(), level, found.cpu())
    return nxt


def _check_nodes(st: StepTables, nodes: torch.Tensor, level: Any) -> torch.Tensor:
    level = check_level(st, level)
    if nodes.dim() != 1 or nodes.is_floating_point() or nodes.dtype == torch.bool:
        raise CatalogError(f"nodes must be a 1-D integer tensor, got {nodes.dtype} {tuple(nodes.shape)}")
    nodes = nodes.long()
    if nodes.numel():
        lo, hi = st.starts[level], st.starts[level + 1]
        if int(nodes.min()) < lo or int(nodes.max()) >= hi:
            check_nodes(st, nodes.cpu().numpy(), level)
    return nodes
