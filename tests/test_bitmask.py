"""Bitmask layout and apply_token_bitmask_inplace on numpy and torch."""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve import allocate_token_bitmask, apply_token_bitmask_inplace
from tokensieve.bitmask import bitmask_to_bool, bool_to_bitmask

BACKENDS = ["numpy", "torch"]


def _reference_allowed(mask: np.ndarray, vocab_size: int) -> np.ndarray:
    # the ecosystem's definition, token by token
    out = np.zeros((mask.shape[0], vocab_size), dtype=bool)
    for r in range(mask.shape[0]):
        for t in range(vocab_size):
            out[r, t] = (int(mask[r, t >> 5]) >> (t & 31)) & 1
    return out


@pytest.mark.parametrize("vocab_size", [1, 31, 32, 33, 100, 1000])
def test_pack_unpack_match_reference_layout(vocab_size: int) -> None:
    rng = np.random.default_rng(vocab_size)
    allowed = rng.random((3, vocab_size)) < 0.4
    mask = bool_to_bitmask(allowed)
    assert mask.dtype == np.int32 and mask.shape == (3, (vocab_size + 31) // 32)
    assert np.array_equal(_reference_allowed(mask, vocab_size), allowed)
    assert np.array_equal(bitmask_to_bool(mask, vocab_size), allowed)


@pytest.mark.parametrize("backend", BACKENDS)
def test_allocate_allows_everything(backend: str) -> None:
    if backend == "torch":
        pytest.importorskip("torch")
    mask = allocate_token_bitmask(2, 70, backend=backend)
    arr = np.asarray(mask)
    assert arr.shape == (2, 3) and arr.dtype == np.int32
    assert (arr == -1).all()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("with_indices", [False, True])
def test_apply_sets_disallowed_to_minus_inf(backend: str, with_indices: bool) -> None:
    rng = np.random.default_rng(0)
    v = 77
    logits = rng.normal(size=(4, v + 3)).astype(np.float32)  # padded logits beyond the mask
    allowed = rng.random((2 if with_indices else 4, v)) < 0.5
    mask = bool_to_bitmask(allowed)
    indices = [3, 1] if with_indices else None
    expected = logits.copy()
    rows = indices if with_indices else range(4)
    for i, r in enumerate(rows):
        full = np.zeros(v + 3, dtype=bool)
        full[:v] = allowed[i]
        expected[r, ~full] = -np.inf
    if backend == "torch":
        torch = pytest.importorskip("torch")
        t_logits = torch.from_numpy(logits.copy())
        apply_token_bitmask_inplace(t_logits, torch.from_numpy(mask), indices=indices)
        got = t_logits.numpy()
    else:
        got = logits.copy()
        apply_token_bitmask_inplace(got, mask, indices=indices)
    assert np.array_equal(got, expected)


def test_apply_rejects_wrong_dtype_and_shape() -> None:
    logits = np.zeros((2, 64), dtype=np.float32)
    with pytest.raises(ValueError, match="int32"):
        apply_token_bitmask_inplace(logits, np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="rows"):
        apply_token_bitmask_inplace(logits, np.zeros((3, 2), dtype=np.int32))
    with pytest.raises(ValueError):
        allocate_token_bitmask(1, 10, backend="jax")  # type: ignore[arg-type]


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


@pytest.mark.parametrize("rows", [1, 3, 64])
def test_numpy_bitmasks_start_on_64_byte_boundaries(rows: int) -> None:
    """Copies of cached masks into them never fall in the 4K-aliasing window (see copy_friendly)."""
    for _ in range(20):
        mask = allocate_token_bitmask(rows, 131072)
        assert _address(mask) % 64 == 0 and mask.flags.c_contiguous


@pytest.mark.parametrize("offset", [0, 1, 4, 16, 17, 1024])
def test_copy_friendly_places_masks_off_page_starts(offset: int) -> None:
    from tokensieve.bitmask import copy_friendly

    base = np.arange(4096 + 2048, dtype=np.int32)
    src = base[offset : offset + 4096]
    src.setflags(write=False)
    out = copy_friendly(src)
    address = _address(out)
    assert address % 64 == 0 and address % 4096 != 0
    assert np.array_equal(out, src) and not out.flags.writeable
    assert copy_friendly(out) is out  # already well placed: kept
