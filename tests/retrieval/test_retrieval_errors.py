"""Bad input raises CatalogError (a ValueError and a TokensieveError) with a clear message."""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve.errors import TokensieveError
from tokensieve.retrieval import CatalogError, StaticIndex


def test_catalog_error_is_value_error_and_tokensieve_error():
    assert issubclass(CatalogError, ValueError)
    assert issubclass(CatalogError, TokensieveError)


@pytest.mark.parametrize(
    ("seqs", "vocab", "kwargs", "match"),
    [
        (np.zeros((0, 4), dtype=np.int64), 8, {}, "empty"),
        ([], 8, {}, "empty"),
        (np.zeros((3, 0), dtype=np.int64), 8, {}, "at least one token"),
        (np.zeros(5, dtype=np.int64), 8, {}, "2-D"),
        (np.zeros((2, 2, 2), dtype=np.int64), 8, {}, "2-D"),
        (np.zeros((2, 2)), 8, {}, "integer"),
        (np.zeros((2, 2), dtype=bool), 8, {}, "integer"),
        (np.array([["a", "b"]]), 8, {}, "integer"),
        ([[1, 2], [3, 8]], 8, {}, r"\[0, vocab_size=8\).*item 1 has 8 at position 1"),
        ([[1, 2], [3, -5]], 8, {}, "item 1 has -5"),
        ([[1, 2], [3]], 0, {}, "vocab_size"),
        ([[1, 2]], True, {}, "vocab_size"),
        ([[1, 2]], 8, {"eos_token": 9}, "eos_token"),
        ([[1, 2]], 8, {"eos_token": 2}, "contains the end token"),
        ([[1, 2]], 8, {"eos_token": "x"}, "eos_token"),
        ([[1, -1, 2]], 8, {}, "padding"),
        ([[-1, -1]], 8, {}, "1..2 tokens"),
        ([[1, 2], []], 8, {}, "1..2 tokens"),
        ([[1, 2], [3, 4]], 8, {"lengths": [2]}, "lengths"),
        ([[1, 2], [3, 4]], 8, {"lengths": [2, 3]}, "1..2 tokens"),
        ([[1, 2]], 8, {"dense_depth": -1}, "dense_depth"),
        ([[1, 2]], 8, {"dense_depth": 1.5}, "dense_depth"),
        ([[1, "x"]], 8, {}, "integer"),
    ],
)
def test_bad_catalogs(seqs, vocab, kwargs, match):
    with pytest.raises(CatalogError, match=match):
        StaticIndex.from_sequences(seqs, vocab, **kwargs)


@pytest.fixture(scope="module")
def index():
    return StaticIndex.from_sequences([[1, 2, 3], [1, 2], [4, 5, 6]], 8)


def test_bad_levels(index):
    nodes = np.zeros(1, dtype=np.int64)
    bm = np.zeros((1, index.bitmask_words), dtype=np.int32)
    for level in (-1, index.num_levels, 99):
        with pytest.raises(CatalogError, match="out of range"):
            index.fill_bitmask(nodes, level, bm)
        with pytest.raises(CatalogError, match="out of range"):
            index.next_nodes(nodes, [1], level)
    for level in (1.0, "0", None, True):
        with pytest.raises(CatalogError, match="level"):
            index.fill_bitmask(nodes, level, bm)


def test_bad_nodes(index):
    bm = np.zeros((1, index.bitmask_words), dtype=np.int32)
    for nodes in ([1], [-1], [index.num_nodes + 5], [2**40]):
        with pytest.raises(CatalogError, match="not a node of level 0"):
            index.fill_bitmask(np.array(nodes), 0, bm)
    with pytest.raises(CatalogError, match="not a node of level 1"):
        index.fill_bitmask(np.array([0]), 1, bm)
    with pytest.raises(CatalogError, match="not a node of level 0"):
        index.fill_bitmask(np.array([index.end_node]), 0, bm)
    with pytest.raises(CatalogError, match="1-D integer"):
        index.fill_bitmask(np.zeros((1, 1), dtype=np.int64), 0, bm)
    with pytest.raises(CatalogError, match="1-D integer"):
        index.fill_bitmask(np.zeros(1), 0, bm)
    with pytest.raises(CatalogError, match="not a node"):
        index.apply_mask_(np.zeros((1, index.num_columns)), np.array([7]), 0)


def test_bad_bitmask_and_logits(index):
    nodes = np.zeros(2, dtype=np.int64)
    for bm in (
        np.zeros((2, index.bitmask_words), dtype=np.int64),
        np.zeros((3, index.bitmask_words), dtype=np.int32),
        np.zeros((2, 0), dtype=np.int32),
        np.zeros(index.bitmask_words, dtype=np.int32),
        [[0]],
    ):
        with pytest.raises(CatalogError, match="bitmask"):
            index.fill_bitmask(nodes, 0, bm)
    for logits in (
        np.zeros((2, index.num_columns - 2)),  # the end column may be omitted, no other
        np.zeros((3, index.num_columns)),
        np.zeros((2, index.num_columns), dtype=np.int64),
    ):
        with pytest.raises(CatalogError, match="logits"):
            index.apply_mask_(logits, nodes, 0)


def test_bad_tokens(index):
    root = np.zeros(1, dtype=np.int64)
    with pytest.raises(CatalogError, match="outside"):
        index.next_nodes(root, [index.num_columns], 0)
    with pytest.raises(CatalogError, match="outside"):
        index.next_nodes(root, [-1], 0)
    with pytest.raises(CatalogError, match="shape"):
        index.next_nodes(root, [1, 1], 0)
    with pytest.raises(CatalogError, match="integer"):
        index.next_nodes(root, [1.0], 0)
    with pytest.raises(CatalogError, match="token 2 is not allowed at node 0"):
        index.next_nodes(root, [2], 0)
    one = index.next_nodes(root, [1], 0)
    two = index.next_nodes(one, [2], 1)
    with pytest.raises(CatalogError, match="token 7 is not allowed"):
        index.next_nodes(two, [7], 2)
    with pytest.raises(CatalogError, match="outside"):
        index.next_nodes(two, [-3], 2)
    with pytest.raises(CatalogError, match="outside"):
        index.next_nodes(two, [100], 2)


def test_bad_filters(index):
    with pytest.raises(CatalogError, match="shape"):
        index.make_filter(np.ones(2, dtype=bool))
    with pytest.raises(CatalogError, match="boolean"):
        index.make_filter(np.ones(3))
    other = StaticIndex.from_sequences([[1, 2, 3], [1, 2], [4, 5, 6]], 8)
    filt = other.make_filter(np.ones(3, dtype=bool))
    with pytest.raises(CatalogError, match="different index"):
        index.fill_bitmask(np.zeros(1, dtype=np.int64), 0, np.zeros((1, 1), np.int32), item_filter=filt)


def test_contains_rejects_non_1d(index):
    with pytest.raises(CatalogError, match="1-D"):
        index.contains([[1, 2]])
    assert index.contains([]) is False
    assert index.contains_many(np.zeros((0, 3), dtype=np.int64)).shape == (0,)
    with pytest.raises(CatalogError, match="2-D integer"):
        index.contains_many(np.zeros((2, 2)))
