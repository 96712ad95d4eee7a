"""Rows of the tokens whose count is at most a bound, against ``counts <= n`` computed directly."""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve.compile import count_rows
from tokensieve.compile.count_rows import CountRows


@pytest.mark.parametrize("few", [0, 1 << 30])  # every row packed from a comparison, or from its tokens' bits
def test_rows_match_the_counts(few: int, monkeypatch) -> None:
    monkeypatch.setattr(count_rows, "_FEW_IDS", few)
    rng = np.random.default_rng(5)
    counts = rng.choice([0, 0, 1, 2, 3, 7, 40], size=20_001)  # many tokens per count, and counts skipped
    num_words = (counts.size + 40 + 31) // 32  # padding past the last token
    rows = CountRows(counts, num_words)
    assert rows.longest == 40
    np.testing.assert_array_equal(rows.distinct, [0, 1, 2, 3, 7, 40])
    for n in range(45):
        row = rows.at_most(n)
        if n >= 40:
            assert row is None
            continue
        assert row is not None and not row.flags.writeable and row.shape == (num_words,)
        bits = np.unpackbits(row.view(np.uint8), bitorder="little").astype(bool)
        np.testing.assert_array_equal(bits[: counts.size], counts <= n, err_msg=str(n))
        assert bits[counts.size :].all()  # never cleared
        assert rows.at_most(n) is row  # memoised
        if n in (4, 5, 6):
            assert row is rows.at_most(3)  # one row per distinct count


@pytest.mark.parametrize("few", [0, 1 << 30])
def test_sparse_rows_match_the_counts(few: int, monkeypatch) -> None:
    """Rows kept from the tokens with a count alone: as from every token's count, 0 for the others."""
    monkeypatch.setattr(count_rows, "_FEW_IDS", few)
    rng = np.random.default_rng(9)
    counts = rng.choice([0] * 12 + [1, 2, 5, 9], size=30_000)
    num_words = (counts.size + 70 + 31) // 32
    ids = np.flatnonzero(counts)
    shuffled = rng.permutation(ids.size)
    rows = CountRows.sparse(ids[shuffled], counts[ids][shuffled], num_words)
    dense = CountRows(counts, num_words)
    assert rows.longest == dense.longest == 9
    np.testing.assert_array_equal(rows.distinct, dense.distinct)
    for n in range(11):
        row = rows.at_most(n)
        if n >= 9:
            assert row is None
            continue
        assert row is not None and not row.flags.writeable
        bits = np.unpackbits(row.view(np.uint8), bitorder="little").astype(bool)
        np.testing.assert_array_equal(bits[: counts.size], counts <= n, err_msg=str(n))
        assert bits[counts.size :].all()
        np.testing.assert_array_equal(row, dense.at_most(n))
    assert rows.nbytes < dense.nbytes
    with pytest.raises(ValueError):
        CountRows.sparse(np.array([3]), np.array([0]), num_words)
