"""Thread-safe memos that forget their least recently used entries, under one process-wide budget.

Every per-process cache of the package is a :class:`BoundedMemo` (functions
are memoised with :func:`memoized`). Each memo may have its own bounds, and
all of them together hold at most :func:`memory_budget` bytes (default
256 MiB, the environment variable ``TOKENSIEVE_MEMORY_BUDGET`` or
:func:`set_memory_budget` changes it): past it, the least recently used
entries of all memos are forgotten first, whichever memo holds them.

An entry counts its value, its key and a fixed overhead for the memo's own
bookkeeping. Sizes are estimated cheaply (:func:`estimate_size`:
``sys.getsizeof`` of the object and of what it holds directly, the first
items of a long container standing for all). A memo's caller may give a
value's size itself when it knows it better.
"""

from __future__ import annotations

import functools
import itertools
import operator
import os
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from sys import getsizeof
from typing import Any, Generic, ParamSpec, TypeVar

import numpy as np

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "ENTRY_OVERHEAD",
    "BoundedMemo",
    "estimate_size",
    "memoized",
    "memory_budget",
    "memory_in_use",
    "set_memory_budget",
]

V = TypeVar("V")
P = ParamSpec("P")
R = TypeVar("R")

#: bytes all memos of the process hold together unless the environment or :func:`set_memory_budget` says otherwise
DEFAULT_MEMORY_BUDGET = 256 << 20
#: bytes counted per entry for the memo's own bookkeeping (its ordered-dict node and hash slot, the entry record)
ENTRY_OVERHEAD = 200
#: items of a container looked at by :func:`estimate_size`; longer ones are extrapolated from these
_SAMPLE = 16
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _budget_from_environment() -> int | None:
    text = os.environ.get("TOKENSIEVE_MEMORY_BUDGET", "").strip().lower()
    if not text:
        return DEFAULT_MEMORY_BUDGET
    if text in ("none", "unbounded"):
        return None
    found = re.fullmatch(r"(\d+)\s*([kmg]?)i?b?", text)
    if found is None:
        raise ValueError(f"TOKENSIEVE_MEMORY_BUDGET={text!r}: expected bytes such as 268435456, 256M or 1G")
    return int(found.group(1)) * _UNITS[found.group(2)]


# one lock for all memos: an entry past the budget may be forgotten by any memo's put
_LOCK = threading.Lock()
# bytes of memos collected since: a finaliser may run in a garbage collection inside a put, so it
# takes no lock and leaves its count here (list.append is atomic) for the next put to subtract
_released: list[int] = []
_clock = itertools.count()
_memos: weakref.WeakSet[BoundedMemo[Any]] = weakref.WeakSet()
_budget: int | None = _budget_from_environment()
_used = 0  # bytes counted by all memos


def set_memory_budget(nbytes: int | None) -> None:
    """Set the bytes all per-process memos may hold together.

    Parameters
    ----------
    nbytes
        The budget in bytes (``None``: no process-wide bound, each memo's own
        bounds only). Lowering it forgets the least recently used entries at
        once.
    """
    global _budget
    if nbytes is not None and nbytes < 0:
        raise ValueError("the memory budget cannot be negative")
    with _LOCK:
        _budget = nbytes
        _shrink()


def memory_budget() -> int | None:
    """The bytes all per-process memos may hold together (``None``: unbounded)."""
    return _budget


def memory_in_use() -> int:
    """The estimated bytes all per-process memos hold now (values, keys and per-entry overhead)."""
    with _LOCK:
        _settle()
        return _used


_LEAF = (str, bytes, bytearray, int, float, bool, type(None), np.ndarray, np.generic)


def _no_parts(obj: object) -> tuple[object, ...]:
    return ()


def _dict_parts(obj: dict[Any, Any]) -> tuple[object, ...]:
    return (*obj.keys(), *obj.values())


def _attribute_parts(obj: object) -> tuple[object, ...]:
    attributes = getattr(obj, "__dict__", None)
    return tuple(attributes.values()) if isinstance(attributes, dict) else ()


def _parts_of(kind: type) -> Callable[[Any], Any]:
    """How to list what an object of ``kind`` holds directly (cached per type)."""
    if issubclass(kind, _LEAF):
        return _no_parts
    if issubclass(kind, (tuple, list, set, frozenset)):
        return tuple
    if issubclass(kind, dict):
        return _dict_parts
    names: list[str] = []
    for klass in kind.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend(
            n for n in ((slots,) if isinstance(slots, str) else slots) if n not in ("__weakref__", "__dict__")
        )
    if names:
        get = operator.attrgetter(*names)

        def slot_parts(obj: object) -> tuple[object, ...]:
            try:
                got = get(obj)
            except AttributeError:  # a slot not set
                return tuple(getattr(obj, name, None) for name in names)
            return got if len(names) > 1 else (got,)

        return slot_parts
    return _attribute_parts


_PARTS: dict[type, Callable[[Any], Any]] = {tuple: tuple, list: tuple}


def estimate_size(obj: object) -> int:
    """Bytes ``obj`` holds, estimated cheaply.

    ``sys.getsizeof`` of the object and of what it holds directly: the items
    of a tuple, list, set or dict, the attributes of an object (an array's
    ``getsizeof`` counts its data when it owns it). No deeper: what those
    hold is not counted, and the first 16 items of a long container stand for
    all of them.

    Parameters
    ----------
    obj
        Any object.

    Returns
    -------
    int
        The estimate; objects shared with other entries are counted in each.
    """
    kind = type(obj)
    get = _PARTS.get(kind)
    if get is None:
        get = _PARTS[kind] = _parts_of(kind)
    size = getsizeof(obj)
    if get is _no_parts:
        return size
    parts = get(obj)
    n = len(parts)
    if n > _SAMPLE:
        return size + sum(map(getsizeof, parts[:_SAMPLE])) * n // _SAMPLE
    return size + sum(map(getsizeof, parts))


def _release(held: list[int]) -> None:
    """A memo's finaliser: its entries no longer count."""
    _released.append(held[0])


def _settle() -> None:
    """Subtract the counts of the memos collected since the last call (lock held)."""
    global _used
    while _released:
        _used -= _released.pop()


def _shrink() -> None:
    """Forget the least recently used entries of all memos until they fit the budget (lock held)."""
    _settle()
    if _budget is None or _used <= _budget:
        return
    memos = list(_memos)
    while _used > _budget:
        # the memo whose least recently used entry is the oldest gives up its entries older than
        # every other memo's oldest (one scan of the memos for a run of entries)
        oldest: BoundedMemo[Any] | None = None
        tick = next_tick = 1 << 62
        for memo in memos:
            if memo._entries:
                first = next(iter(memo._entries.values()))[2]
                if first < tick:
                    oldest, next_tick, tick = memo, tick, first
                elif first < next_tick:
                    next_tick = first
        if oldest is None:
            return
        entries = oldest._entries
        while entries and _used > _budget and next(iter(entries.values()))[2] <= next_tick:
            oldest._forget_oldest()


class BoundedMemo(Generic[V]):
    """Values by key, the least recently used forgotten past a number of entries or a total size.

    Every memo also counts towards the process-wide budget (see
    :func:`set_memory_budget`), under which the least recently used entries of
    all memos are forgotten first.

    Parameters
    ----------
    max_entries
        At most this many entries (``None``: no bound).
    max_size
        At most this many bytes, counting each entry's value (the size given
        to :meth:`put`, or estimated), key and overhead (``None``: no bound
        but the process-wide one).
    """

    def __init__(self, max_entries: int | None = None, max_size: int | None = None) -> None:
        self.max_entries = max_entries
        self.max_size = max_size
        # key -> [value, bytes counted, last use]
        self._entries: OrderedDict[Hashable, list[Any]] = OrderedDict()
        self._held = [0]  # shared with the finaliser, which must not hold the memo
        with _LOCK:
            _memos.add(self)
        weakref.finalize(self, _release, self._held)

    @property
    def size(self) -> int:
        """The bytes counted for the entries held now."""
        return self._held[0]

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> V | None:
        """The value of ``key`` (now the most recently used), or ``None``."""
        entry = self._touch(key)
        return None if entry is None else entry[0]

    def lookup(self, key: Hashable) -> tuple[V] | None:
        """``(value,)`` for ``key`` (now the most recently used), or ``None``: tells a ``None`` value from none."""
        entry = self._touch(key)
        return None if entry is None else (entry[0],)

    def _touch(self, key: Hashable) -> list[Any] | None:
        with _LOCK:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                entry[2] = next(_clock)
            return entry

    def put(self, key: Hashable, value: V, size: int | None = None) -> None:
        """Remember ``value`` for ``key``.

        Parameters
        ----------
        key, value
            The entry.
        size
            The value's bytes (``None``: :func:`estimate_size`); the key's
            estimate and :data:`ENTRY_OVERHEAD` are added. An entry of more
            than a quarter of the process-wide budget is not kept.
        """
        global _used
        cost = (estimate_size(value) if size is None else size) + estimate_size(key) + ENTRY_OVERHEAD
        if _budget is not None and cost > _budget // 4:
            return  # one entry would push out most of the others
        with _LOCK:
            old = self._entries.pop(key, None)
            if old is not None:
                self._held[0] -= old[1]
                _used -= old[1]
            self._entries[key] = [value, cost, next(_clock)]
            self._held[0] += cost
            _used += cost
            while self._entries and (
                (self.max_entries is not None and len(self._entries) > self.max_entries)
                or (self.max_size is not None and self._held[0] > self.max_size)
            ):
                self._forget_oldest()
            if _budget is not None and _used > _budget:
                _shrink()

    def clear(self) -> None:
        """Forget every entry."""
        global _used
        with _LOCK:
            _used -= self._held[0]
            self._held[0] = 0
            self._entries.clear()

    def _forget_oldest(self) -> None:
        global _used
        _, entry = self._entries.popitem(last=False)
        self._held[0] -= entry[1]
        _used -= entry[1]


_KWARGS = object()


def memoized(max_entries: int | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Memoise a function of hashable arguments in a :class:`BoundedMemo` (a counted ``functools.lru_cache``).

    Parameters
    ----------
    max_entries
        At most this many results (``None``: the process-wide budget alone).

    Returns
    -------
    Callable
        The decorator; the memo is the wrapper's ``memo`` attribute.
    """

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        memo: BoundedMemo[R] = BoundedMemo(max_entries=max_entries)

        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            key: Hashable = args if not kwargs else (*args, _KWARGS, *kwargs.items())
            hit = memo.lookup(key)
            if hit is not None:
                return hit[0]
            result = fn(*args, **kwargs)
            memo.put(key, result)
            return result

        call.memo = memo  # type: ignore[attr-defined]
        return call

    return wrap
