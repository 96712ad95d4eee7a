"""The torch path, on CPU tensors and (where a GPU exists) CUDA tensors, equals the numpy path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokensieve.bitmask import bitmask_to_bool
from tokensieve.retrieval import CatalogError, StaticIndex, constrained_beam_search

torch = pytest.importorskip("torch")

_NO_CUDA = "CUDA is not available: torch.cuda.is_available() is False"
#: every test runs on CPU tensors, and on CUDA tensors where a GPU exists
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason=_NO_CUDA)),
]


@st.composite
def cases(draw):
    vocab = draw(st.sampled_from([2, 5, 32, 33, 65]))
    variable = draw(st.booleans())
    max_len = draw(st.integers(1, 4))
    items = [
        draw(st.lists(st.integers(0, vocab - 1), min_size=1 if variable else max_len, max_size=max_len))
        for _ in range(draw(st.integers(1, 20)))
    ]
    allowed = draw(st.none() | st.lists(st.booleans(), min_size=len(items), max_size=len(items)))
    return items, vocab, (draw(st.integers(0, 3)), draw(st.sampled_from([0.0, 100.0]))), allowed


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_torch_steps_equal_numpy_steps(device, case):
    items, vocab, dense, allowed = case
    index = StaticIndex.from_sequences(items, vocab, dense_depth=dense[0], dense_budget=dense[1])
    filt = None if allowed is None else index.make_filter(np.array(allowed))
    rng = np.random.default_rng(0)
    nodes = np.zeros(1, dtype=np.int64)
    for level in range(index.num_levels):
        if nodes.size == 0:
            break
        tn = torch.from_numpy(nodes).to(device)
        bm = index.fill_bitmask(
            nodes, level, np.zeros((len(nodes), index.bitmask_words), np.int32), item_filter=filt
        )
        tb = torch.zeros((len(nodes), index.bitmask_words + 1), dtype=torch.int32, device=device)
        index.fill_bitmask(tn, level, tb, item_filter=filt)
        assert tb.device == tn.device
        assert np.array_equal(tb.cpu().numpy()[:, :-1], bm) and not tb[:, -1].any()
        logits = rng.standard_normal((len(nodes), index.num_columns + 1))
        a = logits.copy()
        index.apply_mask_(a, nodes, level, item_filter=filt)
        b = torch.from_numpy(logits.copy()).to(device)
        index.apply_mask_(b, tn, level, item_filter=filt)
        assert np.array_equal(a, b.cpu().numpy())
        if index.eos_token == vocab:  # logits without the end column
            a = logits[:, :vocab].copy()
            index.apply_mask_(a, nodes, level, item_filter=filt)
            b = torch.from_numpy(logits[:, :vocab].copy()).to(device)
            index.apply_mask_(b, tn, level, item_filter=filt)
            assert np.array_equal(a, b.cpu().numpy())
        full = index.fill_bitmask(nodes, level, np.zeros((len(nodes), index.bitmask_words), np.int32))
        rows, toks = np.nonzero(bitmask_to_bool(full, index.num_columns))
        expect = index.next_nodes(nodes[rows], toks, level)
        got = index.next_nodes(
            torch.from_numpy(nodes[rows]).to(device), torch.from_numpy(toks).to(device), level
        )
        assert got.dtype == torch.int64 and got.device == tn.device
        assert np.array_equal(got.cpu().numpy(), expect)
        nodes = np.unique(expect[expect != (index.end_node if index.end_node is not None else -1)])


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(1, 5), st.booleans())
def test_torch_beam_search_equals_numpy(device, case, beam, normalize):
    items, vocab, dense, allowed = case
    index = StaticIndex.from_sequences(items, vocab, dense_depth=dense[0], dense_budget=dense[1])

    def model(prefix, step):  # row r's logits depend on row r's prefix (and query) only
        out = np.empty((prefix.shape[0], index.num_columns))
        for r, row in enumerate(np.asarray(prefix).tolist()):
            seed = hash((r // beam, tuple(row))) % 2**32
            out[r] = np.random.default_rng(seed).standard_normal(index.num_columns)
        return out

    kwargs = {"batch_size": 2, "beam_width": beam, "length_normalize": normalize, "item_filter": allowed}
    a = constrained_beam_search(model, index, **kwargs)

    def torch_model(prefix, step):
        assert prefix.device.type == device
        return torch.from_numpy(model(prefix.cpu().numpy(), step)).to(device)

    b = constrained_beam_search(torch_model, index, backend="torch", device=device, **kwargs)
    assert a.sequences == b.sequences
    for x, y in zip(a.scores, b.scores, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_errors(device):
    index = StaticIndex.from_sequences([[1, 2], [3, 4]], 5)
    root = torch.zeros(1, dtype=torch.int64, device=device)
    with pytest.raises(CatalogError, match="int32"):
        index.fill_bitmask(root, 0, torch.zeros((1, 1), dtype=torch.int64, device=device))
    with pytest.raises(CatalogError, match="not a node"):
        index.fill_bitmask(
            torch.tensor([5], device=device), 0, torch.zeros((1, 1), dtype=torch.int32, device=device)
        )
    with pytest.raises(CatalogError, match="not allowed"):
        index.next_nodes(root, torch.tensor([2], device=device), 0)
    with pytest.raises(CatalogError, match="num_columns"):
        index.next_nodes(root, torch.tensor([9], device=device), 0)
    with pytest.raises(CatalogError, match="logits"):
        index.apply_mask_(torch.zeros((1, 2), device=device), root, 0)
    assert index.initial_nodes(2, like=root).device == root.device
    if root.device.type == "cuda":
        with pytest.raises(CatalogError, match="is on cpu"):
            index.fill_bitmask(root, 0, torch.zeros((1, 1), dtype=torch.int32))
        with pytest.raises(CatalogError, match="is on cpu"):
            index.apply_mask_(torch.zeros((1, 6)), root, 0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=_NO_CUDA)
@pytest.mark.parametrize("filtered", [False, True])
def test_cuda_step_without_checks_does_not_synchronise(filtered):
    """With ``check=False`` fill_bitmask, next_nodes and apply_mask_ make no host sync.

    ``torch.cuda.set_sync_debug_mode("warn")`` turns every synchronising CUDA call
    (a device-to-host copy, ``.item()``, ``nonzero``, ...) into a warning; after a
    warm-up that copies the index's tables to the GPU, a whole decode makes none.
    """
    rng = np.random.default_rng(1)
    head = rng.integers(0, 40, (300, 2))  # dense levels 0-1, a mostly-unary tail
    items = [list(h) + list(rng.integers(0, 40, rng.integers(1, 4))) for h in head]
    index = StaticIndex.from_sequences(items, 40, dense_depth=2)  # variable length: end token, END node
    assert index.end_node is not None and index.num_levels > index.dense_depth
    allowed = rng.random(len(items)) < 0.7 if filtered else None
    filt = None if allowed is None else index.make_filter(allowed)
    pick = [i for i in range(len(items)) if allowed is None or allowed[i]][:8]
    paths = np.full((len(pick), index.num_levels), index.eos_token, dtype=np.int64)
    for r, i in enumerate(pick):
        paths[r, : len(items[i])] = items[i]
    dev = torch.device("cuda")
    tokens = torch.from_numpy(paths).to(dev)
    logits = torch.from_numpy(rng.standard_normal((len(pick), index.num_columns))).to(dev)

    def decode():
        nodes = torch.zeros(len(pick), dtype=torch.int64, device=dev)
        masks, masked = [], []
        for level in range(index.num_levels):
            bm = torch.empty((len(pick), index.bitmask_words), dtype=torch.int32, device=dev)
            masks.append(index.fill_bitmask(nodes, level, bm, item_filter=filt, check=False))
            masked.append(index.apply_mask_(logits.clone(), nodes, level, item_filter=filt, check=False))
            nodes = index.next_nodes(nodes, tokens[:, level], level, check=False)
        return masks, masked, nodes

    expect = decode()  # warm-up: copies the tables (and the filter's) to the GPU
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    try:
        torch.cuda.set_sync_debug_mode("warn")
        with warnings.catch_warnings(record=True) as control:
            warnings.simplefilter("always")
            float(logits.sum())  # a host sync: the mode must report it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = decode()
    finally:
        torch.cuda.set_sync_debug_mode(previous)

    def syncs(records):
        return [
            f"{w.filename}:{w.lineno}: {w.message}" for w in records if "synchroniz" in str(w.message).lower()
        ]

    assert syncs(control), "set_sync_debug_mode('warn') reported no sync for .sum() to float"
    assert not syncs(caught), "host syncs with check=False:\n" + "\n".join(syncs(caught))
    for a, b in zip(expect[0] + expect[1] + [expect[2]], got[0] + got[1] + [got[2]], strict=True):
        assert torch.equal(a, b)
    assert (got[2] == index.end_node).all()
    nodes = np.zeros(len(pick), dtype=np.int64)  # the numpy path agrees
    for level in range(index.num_levels):
        bm = index.fill_bitmask(
            nodes, level, np.zeros((len(pick), index.bitmask_words), np.int32), item_filter=filt
        )
        assert np.array_equal(got[0][level].cpu().numpy(), bm)
        nodes = index.next_nodes(nodes, paths[:, level], level)
