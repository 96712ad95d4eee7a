"""A small thread-safe memo that forgets its least recently used entries."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["BoundedMemo"]

V = TypeVar("V")


class BoundedMemo(Generic[V]):
    """Values by key, the least recently used forgotten past a number of entries or a total size.

    Parameters
    ----------
    max_entries
        At most this many entries (``None``: no bound).
    max_size
        At most this total of the sizes given to :meth:`put` (``None``: no bound).
    """

    def __init__(self, max_entries: int | None = None, max_size: int | None = None) -> None:
        self.max_entries = max_entries
        self.max_size = max_size
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._total = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        """The value of ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            hit = self._values.get(key)
            if hit is not None:
                self._values.move_to_end(key)
            return hit

    def put(self, key: Hashable, value: V, size: int = 0) -> None:
        """Remember ``value`` for ``key``, counting ``size`` towards ``max_size``."""
        with self._lock:
            if key in self._values:
                self._total -= self._sizes.pop(key)
            self._values[key] = value
            self._values.move_to_end(key)
            self._sizes[key] = size
            self._total += size
            while self._values and (
                (self.max_entries is not None and len(self._values) > self.max_entries)
                or (self.max_size is not None and self._total > self.max_size)
            ):
                old, _ = self._values.popitem(last=False)
                self._total -= self._sizes.pop(old)
