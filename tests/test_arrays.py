"""The sorting-based set helpers against numpy's own and Python's sets."""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve._arrays import sorted_unique
from tokensieve.compile.level_walk import _KeySet


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float64])
@pytest.mark.parametrize("size", [0, 1, 2, 7, 1000])
def test_sorted_unique_equals_numpy_unique(dtype: type, size: int) -> None:
    rng = np.random.default_rng(size)
    a = rng.integers(0, max(1, size // 3), size=size).astype(dtype)
    got = sorted_unique(a)
    assert got.dtype == a.dtype
    assert np.array_equal(got, np.unique(a))


def test_sorted_unique_flattens() -> None:
    a = np.array([[3, 1], [1, 2]])
    assert sorted_unique(a).tolist() == [1, 2, 3]


def test_key_set_reports_each_key_once_as_a_python_set_does() -> None:
    rng = np.random.default_rng(7)
    keys = _KeySet()
    seen: set[int] = set()
    for round_ in range(200):
        batch = rng.integers(0, 5000, size=int(rng.integers(0, 300)), dtype=np.int64)
        expected = sorted(set(batch.tolist()) - seen)
        seen |= set(batch.tolist())
        got = keys.add(batch)
        assert got.tolist() == expected, round_
