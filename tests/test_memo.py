"""The least-recently-used memo behind the per-process caches of automata."""

from __future__ import annotations

from tokensieve._memo import BoundedMemo


def test_entries_bound_forgets_the_least_recently_used() -> None:
    memo: BoundedMemo[str] = BoundedMemo(max_entries=2)
    memo.put("a", "A")
    memo.put("b", "B")
    assert memo.get("a") == "A"  # now "b" is the least recently used
    memo.put("c", "C")
    assert memo.get("b") is None
    assert (memo.get("a"), memo.get("c")) == ("A", "C")


def test_size_bound_counts_replacements_once() -> None:
    memo: BoundedMemo[int] = BoundedMemo(max_size=10)
    memo.put("x", 1, size=6)
    memo.put("x", 2, size=6)  # replaces: 6 in all, not 12
    assert memo.get("x") == 2
    memo.put("y", 3, size=4)
    assert (memo.get("x"), memo.get("y")) == (2, 3)
    memo.put("z", 4, size=5)  # 15 > 10: the oldest goes
    assert memo.get("x") is None
    assert (memo.get("y"), memo.get("z")) == (3, 4)


def test_false_values_are_remembered() -> None:
    memo: BoundedMemo[bool] = BoundedMemo(max_entries=4)
    memo.put("no", False)
    assert memo.get("no") is False
    assert memo.get("missing") is None
