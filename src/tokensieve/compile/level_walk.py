"""The level-by-level frame walk in numpy: the reference the JIT kernel's walks are checked against.

:meth:`CompiledPushdownGrammar._frame_walks <tokensieve.compile.pushdown.CompiledPushdownGrammar>`
walks in the kernel of :mod:`.frame_walk`; with ``walk_kernel`` off it walks
here instead, as it did before the kernel: several origins at once, level by
level over the token trie (:meth:`TokenMaskBuilder.walk_pairs
<tokensieve.compile.token_masks.TokenMaskBuilder.walk_pairs>`), the calls and
returns made without a byte closed in bulk between levels (:class:`_Closure`).
The masks of matcher states are the same either way (the tests compare them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._arrays import concat_ranges as _ranges
from .._arrays import sorted_unique
from ..bitmask import friendly_zeros

__all__ = ["level_frame_walks"]


def level_frame_walks(
    grammar: Any,
    origins: list[int],
    start_nodes: np.ndarray | None,
    need_escapes: bool,
    max_frontier: int | None = None,
) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The walks of the frames of several global states of ``grammar`` (a ``CompiledPushdownGrammar``),
    in one level-by-level walk.

    A path of the walk is a trie node, the global state on top and an owner:
    the origin it started from and the frames pushed since (an id, 0 for
    none; see ``CompiledPushdownGrammar._push``). Bytes move the top state by
    the global table, vectorised as for a DFA (``walk_pairs``), which reports
    the nodes where a path meets a state that calls or may return. There the
    calls push a frame, a return pops one, and a return with nothing pushed is
    an escape node of the origin; the new paths are walked on below their
    nodes, until no path is new. Raises ``FrontierTooLarge`` past
    ``max_frontier`` pairs in one pass.
    """
    b = grammar._builder
    view = grammar._view()
    k = len(origins)
    nodes = np.zeros(1, dtype=np.int64) if start_nodes is None else start_nodes.astype(np.int64)
    walk = _Owners(k)
    closure = _Closure(grammar, walk)
    # (a walk whose frames read no byte before a call or return may walk no pair)
    own_parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    lo_parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    hi_parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    escapes: list[np.ndarray] = []
    escape_origins: list[np.ndarray] = []
    node = np.tile(nodes, k)
    state = np.repeat(np.array(origins, dtype=np.int64), nodes.size)
    owner = np.repeat(np.arange(k, dtype=np.int64), nodes.size)
    pairs = closure.close(node, state, owner, True, escapes, escape_origins)
    while pairs is not None:
        node, state, owner = pairs
        own, lo, hi, (ev_node, ev_state, ev_owner) = b.walk_pairs(
            view, node, state, owner if owner.any() else None, grammar._special, max_frontier
        )
        own_parts.append(own)
        lo_parts.append(lo)
        hi_parts.append(hi)
        if not ev_node.size:
            break
        pairs = closure.close(ev_node, ev_state, ev_owner, False, escapes, escape_origins)
    per_origin = _escapes_per_origin(grammar, k, escapes, escape_origins) if need_escapes else [None] * k
    origin = walk.origin_array().take(np.concatenate(own_parts))
    bounds, (lo, hi) = _by_origin(k, origin, np.concatenate(lo_parts), np.concatenate(hi_parts))
    out: list[tuple[np.ndarray, np.ndarray | None]] = []
    for i in range(k):
        a, z = bounds[i], bounds[i + 1]
        # placed for fast copies now, while the walk is costly anyway (see bitmask.copy_friendly)
        mask = friendly_zeros(b.num_words)
        if z > a:
            mask[...] = b.pack(b.ranges_to_bool(lo[a:z], hi[a:z]), False)
        mask.setflags(write=False)
        out.append((mask, per_origin[i]))
    return out


def _escapes_per_origin(
    grammar: Any, k: int, escapes: list[np.ndarray], escape_origins: list[np.ndarray]
) -> list[np.ndarray | None]:
    """The escape nodes of each of ``k`` origins (sorted, unique, int32), from the closure's finds."""
    if not escapes:
        return [np.zeros(0, dtype=np.int32) for _ in range(k)]
    bounds, (node,) = _by_origin(k, np.concatenate(escape_origins), np.concatenate(escapes))
    return [_node_set(grammar, node[bounds[i] : bounds[i + 1]]) for i in range(k)]

def _node_set(grammar: Any, nodes: np.ndarray) -> np.ndarray:
    """The sorted distinct trie nodes of ``nodes``, as int32."""
    if nodes.size < 4096:
        return sorted_unique(nodes).astype(np.int32)
    seen = np.zeros(grammar._builder.trie.num_nodes, dtype=bool)
    seen[nodes] = True
    return np.flatnonzero(seen).astype(np.int32)


class _KeySet:
    """A growing set of int64 keys: sorted runs, merged as in a log-structured merge tree.

    Adding ``m`` keys to a set of ``n`` costs about ``m log n`` plus amortised
    ``log n`` copies per key, so a set that grows over many rounds is not copied
    whole on every round.
    """

    def __init__(self) -> None:
        self._runs: list[np.ndarray] = []  # sorted, disjoint; sizes shrink along the list

    def add(self, keys: np.ndarray) -> np.ndarray:
        """The keys not in the set yet (sorted, unique), which it gains."""
        keys = sorted_unique(keys)
        for run in self._runs:
            if not keys.size:
                return keys
            at = np.minimum(np.searchsorted(run, keys), run.size - 1)
            keys = keys[run.take(at) != keys]
        if keys.size:
            runs = self._runs
            runs.append(keys)
            while len(runs) > 1 and runs[-2].size <= 2 * runs[-1].size:
                top = runs.pop()
                # two sorted runs: the stable sort (timsort) merges them in linear time
                runs[-1] = np.sort(np.concatenate((runs[-1], top)), kind="stable")
        return keys


class _Closure:
    """The calls and returns made without a byte from the paths of one batch of frame walks.

    A pair is a global state and an owner (see :class:`_Owners`). From a pair,
    a call pushes its return state (or, for a tail call, replaces the frame), a
    return pops the frame pushed last, and a return with nothing pushed escapes
    the origin's frame. The pairs reachable so are computed once per pair, in
    Python (they are few); the trie nodes, many, move along them in bulk.
    """

    def __init__(self, grammar: Any, walk: _Owners) -> None:
        self._grammar = grammar
        self._walk = walk
        self._num_nodes = int(grammar._builder.trie.num_nodes)
        self._outdeg = grammar._view().outdeg
        self._ids: dict[tuple[int, int], int] = {}
        self._state: list[int] = []
        self._owner: list[int] = []
        self._escape_origin: list[int] = []  # the origin a pair's return escapes, or -1
        self._tables: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # the three lists as arrays
        self._reach: list[list[int] | None] = []  # pairs reachable without a byte, itself excluded
        self._seen = _KeySet()  # pair id * nodes + node, for every (pair, node) path so far

    def _pair(self, q: int, owner: int) -> int:
        key = (q, owner)
        hit = self._ids.get(key)
        if hit is None:
            hit = self._ids[key] = len(self._state)
            self._state.append(q)
            self._owner.append(owner)
            escapes = bool(self._grammar._gaccept[q]) and self._walk.pushed[owner] == 0
            self._escape_origin.append(self._walk.origin[owner] if escapes else -1)
            self._reach.append(None)
            self._tables = None
        return hit

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(state, owner, escape origin) of every pair, as arrays (rebuilt after new pairs)."""
        if self._tables is None:
            self._tables = (
                np.array(self._state, dtype=np.int64),
                np.array(self._owner, dtype=np.int64),
                np.array(self._escape_origin, dtype=np.int64),
            )
        return self._tables

    def _reachable(self, pid: int) -> list[int]:
        known = self._reach[pid]
        if known is not None:
            return known
        g, walk = self._grammar, self._walk
        accept, calls, first = g._gaccept, g._gcalls, g._num_static
        found = {pid}
        out: list[int] = []
        todo = [pid]
        while todo:
            p = todo.pop()
            q, owner = self._state[p], self._owner[p]
            origin, pushed = walk.origin[owner], walk.pushed[owner]
            succ: list[tuple[int, int]] = []
            if accept[q] and pushed:
                succ.append((g._push_top[pushed], walk.id(origin, g._push_below[pushed])))
            for start, ret in calls[q] if q < first else g._frames.calls(q):
                succ.append((start, owner if ret < 0 else walk.id(origin, g._push(pushed, ret))))
            for q2, o2 in succ:
                p2 = self._pair(q2, o2)
                if p2 not in found:
                    found.add(p2)
                    out.append(p2)
                    todo.append(p2)
        self._reach[pid] = out
        return out

    def close(
        self,
        node: np.ndarray,
        state: np.ndarray,
        owner: np.ndarray,
        emit_given: bool,
        escapes: list[np.ndarray],
        escape_origins: list[np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The new paths that calls and returns make from the paths (node, state, owner).

        Paths seen before are skipped. The escape nodes found are appended to
        ``escapes``, with their origins to ``escape_origins``. With
        ``emit_given`` the new given paths are returned too. Returns (node,
        state, owner) arrays, or None when there is no new path.
        """
        n = self._num_nodes
        pair_key = (state.astype(np.int64) << 32) | owner
        unique, inverse = np.unique(pair_key, return_inverse=True)
        pids = np.array([self._pair(u >> 32, u & 0xFFFFFFFF) for u in unique.tolist()], dtype=np.int64)
        given = self._seen.add(pids.take(inverse.ravel()) * n + node)
        if not given.size:
            return None
        given_pid, given_node = np.divmod(given, n)
        parts = [given] if emit_given else []
        # every pair reachable from a given pair gets its new nodes
        heads = np.flatnonzero(np.diff(given_pid, prepend=-1))
        reach = [self._reachable(p) for p in given_pid.take(heads).tolist()]
        pair_state, pair_owner, escape_origin = self._arrays()  # no pair is added below
        _note_escapes(escape_origin, given_pid, given_node, escapes, escape_origins)
        sizes = np.array([len(r) for r in reach], dtype=np.int64)
        if sizes.any():
            runs = np.diff(np.append(heads, given_pid.size))
            per_row = np.repeat(sizes, runs)
            targets = np.array([p for r in reach for p in r], dtype=np.int64)
            starts = np.repeat(np.cumsum(sizes) - sizes, runs)
            tpos = _ranges(starts, per_row)
            found = self._seen.add(targets.take(tpos) * n + np.repeat(given_node, per_row))
            if found.size:
                found_pid, found_node = np.divmod(found, n)
                _note_escapes(escape_origin, found_pid, found_node, escapes, escape_origins)
                parts.append(found)
        if not parts:
            return None
        keys = np.concatenate(parts) if len(parts) > 1 else parts[0]
        pid, out_node = np.divmod(keys, n)
        # a state that reads no byte (it only calls, as most do in a chain of precedence
        # levels) adds nothing below its node: its calls are followed here already
        out_state = pair_state.take(pid)
        # (the frames of members in any order, after the static states, read no byte)
        reads = self._outdeg.take(np.minimum(out_state, self._outdeg.size - 1)) > 0
        reads &= out_state < self._outdeg.size
        if not reads.all():
            pid, out_node, out_state = pid[reads], out_node[reads], out_state[reads]
            if not pid.size:
                return None
        return out_node, out_state, pair_owner.take(pid)


def _by_origin(k: int, origin: np.ndarray, *arrays: np.ndarray) -> tuple[list[int], tuple[np.ndarray, ...]]:
    """``arrays`` grouped by ``origin`` (0 to k-1): the bounds of each group, and the arrays reordered."""
    if k > 1:
        order = np.argsort(origin, kind="stable")
        origin = origin.take(order)
        arrays = tuple(x.take(order) for x in arrays)
    return np.searchsorted(origin, np.arange(k + 1)).tolist(), arrays


def _note_escapes(
    escape_origin: np.ndarray,
    pid: np.ndarray,
    node: np.ndarray,
    escapes: list[np.ndarray],
    escape_origins: list[np.ndarray],
) -> None:
    """Append the nodes of the paths (``pid``, ``node``) whose pair escapes, and the origins escaped."""
    origin = escape_origin.take(pid)
    hit = origin >= 0
    if hit.any():
        escapes.append(node[hit])
        escape_origins.append(origin[hit])


class _Owners:
    """The owners of one batch of frame walks: id -> (origin index, frames pushed); id i < k is (i, 0)."""

    def __init__(self, k: int) -> None:
        self.origin: list[int] = list(range(k))
        self.pushed: list[int] = [0] * k
        self._ids: dict[tuple[int, int], int] = {(i, 0): i for i in range(k)}

    def id(self, origin: int, pushed: int) -> int:
        key = (origin, pushed)
        hit = self._ids.get(key)
        if hit is None:
            hit = self._ids[key] = len(self.origin)
            self.origin.append(origin)
            self.pushed.append(pushed)
        return hit

    def origin_array(self) -> np.ndarray:
        return np.array(self.origin, dtype=np.int64)
