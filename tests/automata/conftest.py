"""Independent checks of byte DFAs, written without the library's algorithms.

They work on the raw ``(S, 256)`` table: reachability by plain graph search,
minimality by the textbook table-filling (Myhill-Nerode) algorithm, and
isomorphism by walking two automata side by side.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest


class DFAChecks:
    """Oracles over ``ByteDFA`` tables."""

    @staticmethod
    def run(dfa, data: bytes) -> int:
        state = dfa.start
        for b in data:
            state = int(dfa.transitions[state, b])
            if state < 0:
                return -1
        return state

    @staticmethod
    def assert_trimmed(dfa) -> None:
        trans = np.asarray(dfa.transitions)
        n = trans.shape[0]
        assert n >= 1
        assert trans.dtype == np.int32 and trans.shape == (n, 256)
        assert ((trans >= -1) & (trans < n)).all()
        seen = {dfa.start}
        todo = [dfa.start]
        while todo:
            s = todo.pop()
            for t in set(trans[s].tolist()):
                if t >= 0 and t not in seen:
                    seen.add(t)
                    todo.append(t)
        assert len(seen) == n, "some state is unreachable"
        preds: list[set[int]] = [set() for _ in range(n)]
        for s in range(n):
            for t in set(trans[s].tolist()):
                if t >= 0:
                    preds[t].add(s)
        alive = {s for s in range(n) if dfa.accepting[s]}
        todo = list(alive)
        while todo:
            t = todo.pop()
            for s in preds[t]:
                if s not in alive:
                    alive.add(s)
                    todo.append(s)
        assert len(alive) == n, "some state cannot reach acceptance"

    @staticmethod
    def assert_minimal(dfa) -> None:
        """Table filling: every pair of distinct states must be distinguishable."""
        trans = np.asarray(dfa.transitions).astype(np.int64)
        n = trans.shape[0]
        dead = n
        full = np.concatenate([trans, np.full((1, 256), dead)], axis=0)
        full[full < 0] = dead
        columns = np.unique(full, axis=1).T  # bytes with identical columns act alike
        acc = np.concatenate([np.asarray(dfa.accepting, dtype=bool), [False]])
        dist = acc[:, None] != acc[None, :]
        while True:
            new = dist.copy()
            for col in columns:
                new |= dist[col[:, None], col[None, :]]
            if (new == dist).all():
                break
            dist = new
        same = ~dist[:n, :n]
        np.fill_diagonal(same, False)
        assert not same.any(), f"equivalent states: {np.argwhere(same)[:5].tolist()}"
        assert dist[:n, dead].all(), "a state is equivalent to the dead state"

    @staticmethod
    def isomorphic(a, b) -> bool:
        ta, tb = np.asarray(a.transitions), np.asarray(b.transitions)
        if ta.shape != tb.shape:
            return False
        pair = {a.start: b.start}
        todo = deque([(a.start, b.start)])
        while todo:
            x, y = todo.popleft()
            if bool(a.accepting[x]) != bool(b.accepting[y]):
                return False
            for byte in range(256):
                u, v = int(ta[x, byte]), int(tb[y, byte])
                if (u < 0) != (v < 0):
                    return False
                if u < 0:
                    continue
                if u in pair:
                    if pair[u] != v:
                        return False
                else:
                    pair[u] = v
                    todo.append((u, v))
        return len(set(pair.values())) == len(pair) == ta.shape[0]

    @staticmethod
    def completions(dfa) -> dict[int, bytes]:
        """Shortest bytes leading from each state to acceptance (backward breadth-first search)."""
        trans = np.asarray(dfa.transitions)
        src, byte = np.nonzero(trans >= 0)
        preds: dict[int, list[tuple[int, int]]] = {}
        for s, b in zip(src.tolist(), byte.tolist(), strict=True):
            preds.setdefault(int(trans[s, b]), []).append((s, b))
        out = {s: b"" for s in range(trans.shape[0]) if dfa.accepting[s]}
        todo = deque(out)
        while todo:
            t = todo.popleft()
            for s, b in preds.get(t, ()):
                if s not in out:
                    out[s] = bytes([b]) + out[t]
                    todo.append(s)
        return out


@pytest.fixture(scope="session")
def checks() -> type[DFAChecks]:
    """The DFA oracles."""
    return DFAChecks
