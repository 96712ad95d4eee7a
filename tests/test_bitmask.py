"""Bitmask layout and apply_token_bitmask_inplace on numpy and torch."""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve import allocate_token_bitmask, apply_token_bitmask_inplace
from tokensieve.bitmask import bitmask_to_bool, bool_to_bitmask

#: numpy, torch on CPU tensors, torch on CUDA tensors (skipped without CUDA)
BACKENDS = ["numpy", "torch-cpu", "torch-cuda"]
TORCH_DEVICES = ["cpu", "cuda"]


def _torch_device(name: str):
    """torch and ``torch.device(name)``; skips without torch, or for "cuda" without a GPU."""
    torch = pytest.importorskip("torch")
    if name == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA is not available: torch.cuda.is_available() is False")
    return torch, torch.device(name)


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


@pytest.mark.parametrize("backend", ["numpy", "torch"])
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
    if backend.startswith("torch"):
        torch, device = _torch_device(backend.split("-")[1])
        t_logits = torch.from_numpy(logits.copy()).to(device)
        apply_token_bitmask_inplace(t_logits, torch.from_numpy(mask).to(device), indices=indices)
        got = t_logits.cpu().numpy()
    else:
        got = logits.copy()
        apply_token_bitmask_inplace(got, mask, indices=indices)
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("device", TORCH_DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1, 131072), (3, 1000), (5, 70)])
def test_torch_apply_equals_numpy(device: str, dtype: str, shape: tuple[int, int]) -> None:
    """Large vocabularies, half dtypes, a bitmask narrower or wider than the logits, numpy or
    tensor bitmasks, and tensor indices: the torch path equals the numpy path."""
    torch, dev = _torch_device(device)
    rows, v = shape
    rng = np.random.default_rng(v + rows)
    logits = rng.normal(size=(rows, v)).astype(np.float32)
    allowed = rng.random((rows, v)) < 0.3
    for words, vocab_size, indices in [
        ((v + 31) // 32, None, None),
        ((v + 31) // 32 - 1, None, None),  # columns past 32 * W are masked
        ((v + 31) // 32 + 2, v - 7, list(range(rows))[::-1]),
    ]:
        if words <= 0:
            continue
        mask = np.full((rows, words), -1, dtype=np.int32)
        packed = bool_to_bitmask(allowed)
        n = min(words, packed.shape[1])
        mask[:, :n] = packed[:, :n]
        expected = torch.from_numpy(logits).to(getattr(torch, dtype)).float().numpy()
        apply_token_bitmask_inplace(expected, mask, indices=indices, vocab_size=vocab_size)
        for bitmask in (mask, torch.from_numpy(mask).to(dev)):  # a numpy bitmask is copied over
            t = torch.from_numpy(logits).to(device=dev, dtype=getattr(torch, dtype))
            idx = None if indices is None else torch.tensor(indices, device=dev)
            apply_token_bitmask_inplace(t, bitmask, indices=idx, vocab_size=vocab_size)
            assert t.dtype == getattr(torch, dtype) and t.device.type == dev.type
            assert np.array_equal(t.float().cpu().numpy(), expected)
        one = torch.from_numpy(logits[0].copy()).to(dev)  # 1-D logits and bitmask
        apply_token_bitmask_inplace(one, torch.from_numpy(mask[0].copy()).to(dev), vocab_size=vocab_size)
        row = logits[:1].copy()
        apply_token_bitmask_inplace(row, mask[:1], vocab_size=vocab_size)
        assert np.array_equal(one.cpu().numpy(), row[0])


def test_cuda_apply_does_not_synchronise() -> None:
    """With logits, bitmask and indices on the GPU, the apply makes no host sync.

    ``torch.cuda.set_sync_debug_mode("warn")`` turns synchronising CUDA calls into
    warnings; the first call (which copies the bit table to the GPU) is a warm-up.
    """
    import warnings

    torch, dev = _torch_device("cuda")
    rng = np.random.default_rng(3)
    logits = torch.from_numpy(rng.normal(size=(4, 1000)).astype(np.float32)).to(dev)
    mask = torch.from_numpy(bool_to_bitmask(rng.random((4, 1000)) < 0.5)).to(dev)
    indices = torch.tensor([2, 0, 3, 1], device=dev)
    permuted = mask[indices]
    expect = logits.cpu().numpy()
    apply_token_bitmask_inplace(expect, mask.cpu().numpy())

    def calls() -> None:
        apply_token_bitmask_inplace(logits, mask)
        apply_token_bitmask_inplace(logits, mask[:, :20])  # columns past 640 are masked
        apply_token_bitmask_inplace(logits, permuted, indices=indices, vocab_size=900)
        apply_token_bitmask_inplace(logits[0], mask[0])

    calls()
    torch.cuda.synchronize()
    expect[:, 640:] = -np.inf
    assert np.array_equal(logits.cpu().numpy(), expect)
    previous = torch.cuda.get_sync_debug_mode()
    try:
        torch.cuda.set_sync_debug_mode("warn")
        with warnings.catch_warnings(record=True) as control:
            warnings.simplefilter("always")
            float(logits[0, 0])  # a host sync: the mode must report it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            calls()
    finally:
        torch.cuda.set_sync_debug_mode(previous)

    def syncs(records: list) -> list[str]:
        return [
            f"{w.filename}:{w.lineno}: {w.message}" for w in records if "synchroniz" in str(w.message).lower()
        ]

    assert syncs(control), "set_sync_debug_mode('warn') reported no sync for a float() of a CUDA tensor"
    assert not syncs(caught), "host syncs in apply_token_bitmask_inplace:\n" + "\n".join(syncs(caught))
    assert np.array_equal(logits.cpu().numpy(), expect)


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
