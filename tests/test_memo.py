"""The least-recently-used memos behind the per-process caches, and their process-wide budget."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

from tokensieve._memo import BoundedMemo, memoized, memory_budget, memory_in_use, set_memory_budget

KB = 1000


@pytest.fixture
def budget() -> Iterator[None]:
    """Every memo of the process emptied (a budget of 0), the budget restored afterwards."""
    before = memory_budget()
    set_memory_budget(0)
    yield
    set_memory_budget(before)


def test_entries_bound_forgets_the_least_recently_used() -> None:
    memo: BoundedMemo[str] = BoundedMemo(max_entries=2)
    memo.put("a", "A")
    memo.put("b", "B")
    assert memo.get("a") == "A"  # now "b" is the least recently used
    memo.put("c", "C")
    assert memo.get("b") is None
    assert (memo.get("a"), memo.get("c")) == ("A", "C")


def test_size_bound_counts_replacements_once() -> None:
    memo: BoundedMemo[int] = BoundedMemo(max_size=12 * KB)  # room for the keys' and entries' overhead
    memo.put("x", 1, size=6 * KB)
    memo.put("x", 2, size=6 * KB)  # replaces: 6 KB in all, not 12
    assert memo.get("x") == 2
    memo.put("y", 3, size=4 * KB)
    assert (memo.get("x"), memo.get("y")) == (2, 3)
    memo.put("z", 4, size=5 * KB)  # over 15 KB: the oldest goes
    assert memo.get("x") is None
    assert (memo.get("y"), memo.get("z")) == (3, 4)


def test_false_values_are_remembered() -> None:
    memo: BoundedMemo[bool] = BoundedMemo(max_entries=4)
    memo.put("no", False)
    assert memo.get("no") is False
    assert memo.get("missing") is None


def test_keys_and_unsized_values_count() -> None:
    """A memo bounded by bytes counts a big key, and a value's own bytes when no size is given."""
    memo: BoundedMemo[object] = BoundedMemo(max_size=500 * KB)
    memo.put(b"k" * 1_000_000, "small")  # a 1 MB key alone is over the bound
    assert memo.get(b"k" * 1_000_000) is None
    memo.put("array", np.zeros(100_000))  # 800 KB of data
    assert memo.get("array") is None
    memo.put("tuple of arrays", (np.zeros(20_000), np.zeros(20_000)))  # 320 KB in all
    assert memo.get("tuple of arrays") is not None


def test_budget_forgets_across_memos_least_recently_used_first(budget: None) -> None:
    a: BoundedMemo[str] = BoundedMemo()
    b: BoundedMemo[str] = BoundedMemo()
    set_memory_budget(100 * KB)
    a.put("a1", "A1", size=20 * KB)
    b.put("b1", "B1", size=20 * KB)
    a.put("a2", "A2", size=20 * KB)
    b.put("b2", "B2", size=20 * KB)
    assert a.get("a1") == "A1"  # least recent first: b1, a2, b2, a1
    a.put("a3", "A3", size=20 * KB)  # over 100 KB: b1 goes, from the other memo
    assert b.get("b1") is None
    b.put("b3", "B3", size=20 * KB)  # then a2, the oldest of what is left
    assert a.get("a2") is None
    assert (a.get("a1"), a.get("a3"), b.get("b2"), b.get("b3")) == ("A1", "A3", "B2", "B3")
    assert 80 * KB <= memory_in_use() <= 100 * KB


def test_lowering_the_budget_and_collected_memos_free_their_count(budget: None) -> None:
    set_memory_budget(10_000 * KB)
    memo: BoundedMemo[str] = BoundedMemo()
    for i in range(10):
        memo.put(i, "v", size=100 * KB)
    assert memory_in_use() >= 1_000 * KB
    set_memory_budget(350 * KB)
    assert [memo.get(i) for i in range(10)] == [None] * 7 + ["v"] * 3
    del memo
    gc.collect()
    assert memory_in_use() == 0


def test_memoized_function_keeps_none_and_keyword_calls(budget: None) -> None:
    set_memory_budget(10_000 * KB)
    calls: list[tuple[int, int]] = []

    @memoized(max_entries=8)
    def half(x: int, step: int = 2) -> int | None:
        calls.append((x, step))
        return x // step if x % step == 0 else None

    assert [half(4), half(3), half(4), half(3), half(4, step=4), half(4, step=4)] == [2, None, 2, None, 1, 1]
    assert calls == [(4, 2), (3, 2), (4, 4)]
