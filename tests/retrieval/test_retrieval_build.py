"""Input forms, layout invariants, memory accounting, save/load."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tokensieve.bitmask import bitmask_to_bool
from tokensieve.retrieval import CatalogError, StaticIndex


def masks_at(index: StaticIndex, seqs: list[list[int]], level: int) -> np.ndarray:
    """Bitmasks after walking each sequence's first ``level`` tokens."""
    nodes = np.zeros(len(seqs), dtype=np.int64)
    for lv in range(level):
        nodes = index.next_nodes(nodes, np.array([s[lv] for s in seqs]), lv)
    bm = np.zeros((len(seqs), index.bitmask_words), dtype=np.int32)
    return index.fill_bitmask(nodes, level, bm)


@pytest.mark.parametrize(
    "form",
    ["lists", "ragged", "padded", "lengths", "int32", "uint16", "torch"],
)
def test_input_forms_build_the_same_index(form):
    ragged = [[5, 1, 2], [5, 1], [3], [5, 1, 2], [0, 9, 9]]
    reference = StaticIndex.from_sequences(ragged, 10)
    padded = np.array([s + [-1] * (3 - len(s)) for s in ragged])
    if form == "lists":
        seqs, kwargs = [list(s) for s in ragged], {}
    elif form == "ragged":
        seqs, kwargs = [np.array(s) for s in ragged], {}
    elif form == "padded":
        seqs, kwargs = padded, {}
    elif form == "lengths":
        seqs, kwargs = np.where(padded < 0, 7, padded), {"lengths": [len(s) for s in ragged]}
    elif form == "int32":
        seqs, kwargs = padded.astype(np.int32), {}
    elif form == "uint16":
        seqs, kwargs = (
            np.where(padded < 0, 0, padded).astype(np.uint16),
            {"lengths": [len(s) for s in ragged]},
        )
    else:
        torch = pytest.importorskip("torch")
        seqs, kwargs = torch.from_numpy(padded), {}
    index = StaticIndex.from_sequences(seqs, 10, **kwargs)
    for name in ("row_ptr", "edge_token", "level_start", "level_width", "item_rank"):
        assert np.array_equal(getattr(index, name), getattr(reference, name)), name
    assert index.eos_token == 10 and index.num_columns == 11
    assert index.num_sequences == 5 and index.num_unique == 4
    assert index.item_rank[0] == index.item_rank[3]


def test_fixed_length_catalog_has_no_end_token():
    index = StaticIndex.from_sequences(np.array([[1, 2], [3, 4]]), 5)
    assert index.eos_token is None and index.end_node is None
    assert index.num_columns == 5 and index.num_levels == 2
    explicit = StaticIndex.from_sequences(np.array([[1, 2], [3, 4]]), 5, eos_token=0)
    assert explicit.eos_token == 0 and explicit.num_columns == 5 and explicit.num_levels == 3


def test_layout_invariants_on_a_random_catalog():
    rng = np.random.default_rng(0)
    seqs = rng.integers(0, 300, (20_000, 6))
    index = StaticIndex.from_sequences(seqs, 300)
    rp, tok, ls = index.row_ptr, index.edge_token, index.level_start
    num_edges = int(rp[-1])
    assert num_edges == index.num_nodes - 1
    assert np.all(np.diff(rp) >= 0)
    # children sorted by token inside every row; edge e leads to node e + 1
    deg = np.diff(rp)
    same_row = np.repeat(np.arange(index.num_nodes), deg)
    inner = same_row[1:] == same_row[:-1]
    assert np.all(tok[1:num_edges][inner] > tok[: num_edges - 1][inner])
    # the children of depth-d nodes are exactly the depth-(d+1) nodes
    for d in range(len(ls) - 2):
        assert rp[ls[d]] + 1 == ls[d + 1] and rp[ls[d + 1]] + 1 == ls[d + 2]
    assert index.contains_many(seqs).all()
    others = rng.integers(0, 300, (5_000, 6))
    members = {tuple(r) for r in seqs.tolist()}
    assert index.contains_many(others).tolist() == [tuple(r) in members for r in others.tolist()]


def test_memory_is_the_csr_plus_dense_tables():
    rng = np.random.default_rng(0)
    index = StaticIndex.from_sequences(rng.integers(0, 2048, (100_000, 8)), 2048)
    mem = index.memory_usage()
    assert mem["filter_support"] == 0
    assert index.nbytes == sum(mem.values())
    assert index.nbytes <= 1.2 * (mem["csr"] + mem["dense"])
    assert mem["csr"] == index.row_ptr.nbytes + index.edge_token.nbytes
    assert index.row_ptr.dtype == np.int32 and index.edge_token.dtype == np.uint16
    index.make_filter(np.ones(index.num_sequences, dtype=bool))
    assert index.memory_usage()["filter_support"] > 0


@pytest.mark.parametrize("suffix", ["npz", "parquet"])
@pytest.mark.parametrize("mmap", [True, False])
def test_save_and_load_round_trip(tmp_path, mmap, suffix):
    if suffix == "parquet":
        pytest.importorskip("pyarrow.parquet")
    ragged = [[5, 1, 2], [5, 1], [3], [5, 1, 2], [0, 9, 9], [5, 2]]
    index = StaticIndex.from_sequences(ragged, 10, dense_depth=2)
    path = tmp_path / f"catalog.{suffix}"
    index.save(path)
    loaded = StaticIndex.load(path, mmap=mmap)
    assert repr(loaded) == repr(index)
    for name in ("row_ptr", "edge_token", "level_start", "level_width", "item_rank"):
        assert np.array_equal(getattr(loaded, name), getattr(index, name)), name
        assert getattr(loaded, name).dtype == getattr(index, name).dtype, name
    for d in range(index.dense_depth):
        assert np.array_equal(loaded._tables.dense_mask[d], index._tables.dense_mask[d])
        assert np.array_equal(loaded._tables.layout.dense_child[d], index._tables.layout.dense_child[d])
    if mmap and suffix == "npz":
        assert not loaded.row_ptr.flags.writeable
    for level in range(3):
        seqs = [s for s in ragged if len(s) > level]
        assert np.array_equal(masks_at(loaded, seqs, level), masks_at(index, seqs, level))
    allowed = np.array([False, True, False, False, True, False])
    f1, f2 = index.make_filter(allowed), loaded.make_filter(allowed)
    root = np.zeros(1, dtype=np.int64)
    bm = np.zeros((1, 1), dtype=np.int32)
    assert np.array_equal(
        loaded.fill_bitmask(root, 0, bm.copy(), item_filter=f2),
        index.fill_bitmask(root, 0, bm.copy(), item_filter=f1),
    )
    assert np.flatnonzero(bitmask_to_bool(loaded.fill_bitmask(root, 0, bm, item_filter=f2), 11)).tolist() == [
        0,
        5,
    ]


def test_parquet_round_trip_of_a_larger_catalog_and_garbage(tmp_path):
    pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(5)
    seqs = rng.integers(0, 70_000, (3_000, 5))  # int32 tokens, a sparse and a dense level
    index = StaticIndex.from_sequences(seqs, 70_000, dense_depth=1)
    index.save(tmp_path / "big.pq")
    loaded = StaticIndex.load(tmp_path / "big.pq")
    assert loaded.edge_token.dtype == np.int32
    assert loaded.contains_many(seqs).all()
    assert not loaded.contains_many(rng.integers(0, 70_000, (500, 5))).any()
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(CatalogError, match="cannot read"):
        StaticIndex.load(tmp_path / "bad.parquet")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "other.parquet")
    with pytest.raises(CatalogError, match="not a saved StaticIndex"):
        StaticIndex.load(tmp_path / "other.parquet")


def test_save_rejects_other_formats_and_load_rejects_garbage(tmp_path):
    index = StaticIndex.from_sequences([[1, 2]], 4)
    with pytest.raises(CatalogError, match="npz"):
        index.save(tmp_path / "catalog.json")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(CatalogError, match="cannot read"):
        StaticIndex.load(bad)
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(CatalogError, match="not a saved StaticIndex"):
        StaticIndex.load(tmp_path / "other.npz")


def test_dense_depth_zero_and_deeper_than_catalog_give_the_same_masks():
    rng = np.random.default_rng(3)
    seqs = rng.integers(0, 40, (300, 3)).tolist()
    masks = [
        [
            masks_at(StaticIndex.from_sequences(seqs, 40, dense_depth=d, dense_budget=b), seqs, lv)
            for lv in range(3)
        ]
        for d in (0, 1, 2, 3, 10)
        for b in (0.0, 100.0)
    ]
    for other in masks[1:]:
        for a, b in zip(masks[0], other, strict=True):
            assert np.array_equal(a, b)


def test_steps_accept_lists_and_int32_nodes():
    index = StaticIndex.from_sequences([[1, 2], [3, 4]], 5)
    nxt = index.next_nodes([0, 0], [1, 3], 0)
    assert nxt.dtype == np.int64
    bm = np.zeros((2, 1), dtype=np.int32)
    index.fill_bitmask(nxt.astype(np.int32), 1, bm)
    assert [np.flatnonzero(r).tolist() for r in bitmask_to_bool(bm, 5)] == [[2], [4]]
    assert index.initial_nodes(3).tolist() == [0, 0, 0]


def test_next_nodes_reuses_the_fill_only_for_the_same_rows():
    index = StaticIndex.from_sequences([[1, 2, 3], [1, 4, 5], [6, 7, 8]], 9, dense_depth=1)
    root = np.zeros(2, dtype=np.int64)
    a = index.next_nodes(root, [1, 6], 0)
    b = index.next_nodes(a, [2, 7], 1)
    bm = np.zeros((2, 1), dtype=np.int32)
    index.fill_bitmask(b, 2, bm)
    b_changed = b.copy()
    b[:] = b[::-1]  # changed in place after the fill: must not reuse its slice
    assert (
        index.next_nodes(b, [8, 3], 2).tolist()
        == index.next_nodes(b_changed[::-1].copy(), [8, 3], 2).tolist()
    )
    index.fill_bitmask(b, 2, bm)
    assert index.next_nodes(b, [8, 3], 2).tolist() == index.next_nodes(b.copy(), [8, 3], 2).tolist()


@pytest.mark.parametrize(("vocab", "length"), [(2048, 8), (70_000, 5), (3, 40)])
def test_item_rank_is_the_lexicographic_rank_with_multi_word_keys(vocab, length):
    """Items longer than one 64-bit sort key, sharing long prefixes (ties on the first key)."""
    rng = np.random.default_rng(5)
    seqs = rng.integers(0, vocab, (3_000, length))
    seqs[:, : length - 2] = rng.integers(0, 2, (3_000, length - 2))  # long shared prefixes
    seqs[::7] = seqs[1::7][: len(seqs[::7])]  # duplicates
    index = StaticIndex.from_sequences(seqs, vocab)
    unique = sorted({tuple(r) for r in seqs.tolist()})
    rank = {s: i for i, s in enumerate(unique)}
    assert index.item_rank.tolist() == [rank[tuple(r)] for r in seqs.tolist()]
    assert index.contains_many(seqs).all()


def test_wide_levels_become_dense_within_the_budget():
    rng = np.random.default_rng(0)
    seqs = rng.integers(0, 64, (50_000, 4))  # level 2 is ~50 wide, 4,096 nodes
    exact = StaticIndex.from_sequences(seqs, 64, dense_budget=0)
    auto = StaticIndex.from_sequences(seqs, 64)
    assert exact.dense_depth == 2 and auto.dense_depth == 3
    assert auto.memory_usage()["dense"] <= 0.25 * auto.memory_usage()["csr"]
    sample = seqs[:300].tolist()
    for level in range(4):
        assert np.array_equal(masks_at(exact, sample, level), masks_at(auto, sample, level))
    with pytest.raises(CatalogError, match="dense_budget"):
        StaticIndex.from_sequences(seqs, 64, dense_budget=-1)


def test_without_item_map(tmp_path):
    seqs = np.random.default_rng(2).integers(0, 50, (1_000, 3))
    index = StaticIndex.from_sequences(seqs, 50, item_map=False)
    assert index.item_rank is None and index.num_sequences == 1_000
    assert index.memory_usage()["items"] == 0
    assert index.contains_many(seqs).all()
    with pytest.raises(CatalogError, match="item_map"):
        index.make_filter(np.ones(1_000, dtype=bool))
    index.save(tmp_path / "x.npz")
    loaded = StaticIndex.load(tmp_path / "x.npz")
    assert loaded.item_rank is None and loaded.num_sequences == 1_000


def test_zero_rows_at_every_level():
    index = StaticIndex.from_sequences([[1, 2, 3], [1, 2], [4, 5, 6]], 8, dense_depth=1, dense_budget=0)
    empty = np.zeros(0, dtype=np.int64)
    for level in range(index.num_levels):
        assert index.fill_bitmask(empty, level, np.zeros((0, 1), np.int32)).shape == (0, 1)
        assert index.next_nodes(empty, empty, level).shape == (0,)
        assert index.apply_mask_(np.zeros((0, 9)), empty, level).shape == (0, 9)


def test_parquet_without_pyarrow_names_the_package(tmp_path, monkeypatch):
    index = StaticIndex.from_sequences([[1, 2]], 4)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match="pip install pyarrow"):
        index.save(tmp_path / "catalog.parquet")
    with pytest.raises(ImportError, match="pip install pyarrow"):
        StaticIndex.load(tmp_path / "catalog.parquet")
