"""The torch path (CPU tensors here; the same code runs on CUDA) equals the numpy path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokensieve.bitmask import bitmask_to_bool
from tokensieve.retrieval import CatalogError, StaticIndex, constrained_beam_search

torch = pytest.importorskip("torch")


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


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_torch_steps_equal_numpy_steps(case):
    items, vocab, dense, allowed = case
    index = StaticIndex.from_sequences(items, vocab, dense_depth=dense[0], dense_budget=dense[1])
    filt = None if allowed is None else index.make_filter(np.array(allowed))
    rng = np.random.default_rng(0)
    nodes = np.zeros(1, dtype=np.int64)
    for level in range(index.num_levels):
        if nodes.size == 0:
            break
        tn = torch.from_numpy(nodes)
        bm = index.fill_bitmask(
            nodes, level, np.zeros((len(nodes), index.bitmask_words), np.int32), item_filter=filt
        )
        tb = torch.zeros((len(nodes), index.bitmask_words + 1), dtype=torch.int32)
        index.fill_bitmask(tn, level, tb, item_filter=filt)
        assert np.array_equal(tb.numpy()[:, :-1], bm) and not tb[:, -1].any()
        logits = rng.standard_normal((len(nodes), index.num_columns + 1))
        a = logits.copy()
        index.apply_mask_(a, nodes, level, item_filter=filt)
        b = torch.from_numpy(logits.copy())
        index.apply_mask_(b, tn, level, item_filter=filt)
        assert np.array_equal(a, b.numpy())
        if index.eos_token == vocab:  # logits without the end column
            a = logits[:, :vocab].copy()
            index.apply_mask_(a, nodes, level, item_filter=filt)
            b = torch.from_numpy(logits[:, :vocab].copy())
            index.apply_mask_(b, tn, level, item_filter=filt)
            assert np.array_equal(a, b.numpy())
        full = index.fill_bitmask(nodes, level, np.zeros((len(nodes), index.bitmask_words), np.int32))
        rows, toks = np.nonzero(bitmask_to_bool(full, index.num_columns))
        expect = index.next_nodes(nodes[rows], toks, level)
        got = index.next_nodes(torch.from_numpy(nodes[rows]), torch.from_numpy(toks), level)
        assert got.dtype == torch.int64 and np.array_equal(got.numpy(), expect)
        nodes = np.unique(expect[expect != (index.end_node if index.end_node is not None else -1)])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(1, 5), st.booleans())
def test_torch_beam_search_equals_numpy(case, beam, normalize):
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
    b = constrained_beam_search(
        lambda p, s: torch.from_numpy(model(p.numpy(), s)), index, backend="torch", **kwargs
    )
    assert a.sequences == b.sequences
    for x, y in zip(a.scores, b.scores, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9)


def test_torch_errors():
    index = StaticIndex.from_sequences([[1, 2], [3, 4]], 5)
    root = torch.zeros(1, dtype=torch.int64)
    with pytest.raises(CatalogError, match="int32"):
        index.fill_bitmask(root, 0, torch.zeros((1, 1), dtype=torch.int64))
    with pytest.raises(CatalogError, match="not a node"):
        index.fill_bitmask(torch.tensor([5]), 0, torch.zeros((1, 1), dtype=torch.int32))
    with pytest.raises(CatalogError, match="not allowed"):
        index.next_nodes(root, torch.tensor([2]), 0)
    with pytest.raises(CatalogError, match="num_columns"):
        index.next_nodes(root, torch.tensor([9]), 0)
    with pytest.raises(CatalogError, match="logits"):
        index.apply_mask_(torch.zeros((1, 2)), root, 0)
    assert index.initial_nodes(2, like=root).device == root.device
