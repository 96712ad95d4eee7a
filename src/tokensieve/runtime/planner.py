"""Token budgets: how many tokens a constrained output still needs at least.

A sampler that stops at ``max_tokens`` must never stop in the middle of a
match. :class:`CompletionPlanner` answers, for a matcher state, with an upper
bound on the tokens that finish the output (and the tokens themselves): the
shortest byte string from the state to an accepting state, split into as few
vocabulary tokens as possible. Before the sampler accepts a token it checks
that the state it leads to can still be finished within the tokens that are
left; when nothing else fits it finishes with the planned tokens.

For plain automata (:class:`~tokensieve.CompiledGrammar`) the distances of all
states are computed at once by a vectorised breadth-first search over the
reversed transition table. For lazily built automata (pushdown grammars) the
search runs forwards from each state that is asked about, bounded in size.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from typing import Any

import numpy as np

from .._arrays import sorted_unique
from ..compile.compiled_grammar import CompiledGrammar
from ..vocab import TokenizerInfo

__all__ = ["CompletionPlanner", "planner_for"]

_UNREACHABLE = np.iinfo(np.int64).max


class _TokenTable:
    """Exact token bytes to token id, for splitting a byte string into tokens."""

    def __init__(self, info: TokenizerInfo) -> None:
        table: dict[bytes, int] = {}
        vocab = info.decoded_vocab
        special = info.special_token_set
        # iterate downwards so that the lowest id wins for duplicate byte strings
        for token_id in range(len(vocab) - 1, -1, -1):
            data = vocab[token_id]
            if data and token_id not in special:
                table[data] = token_id
        self.table = table
        self.max_len = max((len(k) for k in table), default=0)
        self.all_single_bytes = all(bytes([b]) in table for b in range(256))

    def split(self, data: bytes) -> list[int] | None:
        """The fewest tokens whose bytes concatenate to ``data`` (``None``: impossible)."""
        n = len(data)
        if n == 0:
            return []
        inf = n + 1
        best = [inf] * (n + 1)
        back = [-1] * (n + 1)
        best[0] = 0
        table, max_len = self.table, self.max_len
        for i in range(n):
            if best[i] == inf:
                continue
            here = best[i] + 1
            for j in range(i + 1, min(n, i + max_len) + 1):
                if here < best[j] and data[i:j] in table:
                    best[j] = here
                    back[j] = i
        if best[n] == inf:
            return None
        out: list[int] = []
        j = n
        while j > 0:
            i = back[j]
            out.append(table[data[i:j]])
            j = i
        out.reverse()
        return out


_tables: weakref.WeakKeyDictionary[TokenizerInfo, _TokenTable] = weakref.WeakKeyDictionary()
_planners: weakref.WeakKeyDictionary[Any, CompletionPlanner] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _token_table(info: TokenizerInfo) -> _TokenTable:
    with _lock:
        table = _tables.get(info)
        if table is None:
            table = _TokenTable(info)
            _tables[info] = table
        return table


def planner_for(compiled: Any) -> CompletionPlanner:
    """The (shared, memoised) :class:`CompletionPlanner` of a compiled grammar.

    Parameters
    ----------
    compiled
        A compiled grammar from :class:`~tokensieve.GrammarCompiler`.

    Returns
    -------
    CompletionPlanner
    """
    with _lock:
        planner = _planners.get(compiled)
    if planner is None:
        planner = CompletionPlanner(compiled)
        with _lock:
            planner = _planners.setdefault(compiled, planner)
    return planner


class CompletionPlanner:
    """Shortest completions of a compiled grammar's states, as tokens.

    Parameters
    ----------
    compiled
        A compiled grammar (any object with ``start_state``, ``row``,
        ``is_accepting`` and ``tokenizer_info``, as the compiled grammars of
        :class:`~tokensieve.GrammarCompiler` have).
    max_search_states
        For grammars without a complete transition table: how many states one
        forward search may visit before the state is reported as unknown.

    Notes
    -----
    :meth:`tokens_needed` is an upper bound on the tokens a state needs, and
    :meth:`completion_tokens` realises it, so a sampler that only enters
    states whose bound fits the remaining budget can always finish in time.
    """

    def __init__(self, compiled: Any, *, max_search_states: int = 4096) -> None:
        # a weak reference: planners are memoised in a weak dictionary keyed by the grammar
        self._compiled = weakref.ref(compiled)
        self.max_search_states = int(max_search_states)
        self._tokens = _token_table(compiled.tokenizer_info)
        self._lock = threading.Lock()
        self._distance: np.ndarray | None = None
        self._next_byte: np.ndarray | None = None
        self._next_state: np.ndarray | None = None
        self._completions: dict[int, bytes | None] = {}
        self._needed: dict[int, tuple[int, list[int] | None]] = {}
        if isinstance(compiled, CompiledGrammar):
            self._solve_table(np.asarray(compiled.dfa.transitions), np.asarray(compiled.dfa.accepting))

    # ------------------------------------------------------------------ API
    @property
    def compiled(self) -> Any:
        """The compiled grammar planned for.

        Raises
        ------
        ReferenceError
            When the grammar no longer exists.
        """
        compiled = self._compiled()
        if compiled is None:
            raise ReferenceError("the compiled grammar of this planner was garbage-collected")
        return compiled

    @property
    def exhaustive(self) -> bool:
        """Whether answers are exact (a full transition table) rather than a bounded search.

        When true, ``None`` from :meth:`tokens_needed` means the state cannot
        be completed; otherwise it may also mean the search gave up.
        """
        return self._distance is not None

    def completion(self, state: int) -> bytes | None:
        """A shortest byte string that takes ``state`` to a complete match.

        Returns
        -------
        bytes or None
            ``b""`` for an accepting state; ``None`` when no completion was
            found within ``max_search_states``.
        """
        state = int(state)
        with self._lock:
            if state in self._completions:
                return self._completions[state]
        if self._distance is not None:
            result = self._walk_table(state)
        else:
            result = self._search(state)
        with self._lock:
            self._completions[state] = result
        return result

    def completion_length(self, state: int) -> int | None:
        """Length in bytes of :meth:`completion` (``None`` when unknown)."""
        if self._distance is not None:
            d = int(self._distance[int(state)])
            return None if d == _UNREACHABLE else d
        done = self.completion(state)
        return None if done is None else len(done)

    def tokens_needed(self, state: int, within: int | None = None) -> int | None:
        """An upper bound on the tokens that finish the output from ``state``.

        Parameters
        ----------
        state
            A state of the compiled grammar.
        within
            The caller only needs to know whether the bound is at most this;
            when a cheap bound (one token per byte) already is, it is returned
            without splitting the completion into tokens.

        Returns
        -------
        int or None
            ``None`` when the state cannot be finished with the vocabulary's
            tokens (or the search gave up).
        """
        state = int(state)
        if within is not None and self._tokens.all_single_bytes:
            length = self.completion_length(state)
            if length is not None and length <= within:
                return length
        needed, _ = self._plan(state)
        return needed

    def completion_tokens(self, state: int) -> list[int] | None:
        """Token ids that take ``state`` to a complete match (``None`` when unknown)."""
        return self._plan(int(state))[1]

    # ------------------------------------------------------------ internals
    def _plan(self, state: int) -> tuple[int | None, list[int] | None]:
        with self._lock:
            hit = self._needed.get(state)
        if hit is None:
            data = self.completion(state)
            tokens = None if data is None else self._tokens.split(data)
            hit = (-1 if tokens is None else len(tokens), tokens)
            with self._lock:
                self._needed[state] = hit
        needed, tokens = hit
        return (None if needed < 0 else needed), (None if tokens is None else list(tokens))

    def _solve_table(self, transitions: np.ndarray, accepting: np.ndarray) -> None:
        """Distances to acceptance of every state, by a levelled backward search."""
        num_states = transitions.shape[0]
        src, byte = np.nonzero(transitions >= 0)
        dst = transitions[src, byte].astype(np.int64)
        # distinct (src, dst) edges, grouped by dst (CSR of the reversed graph)
        edges = sorted_unique(dst * num_states + src.astype(np.int64))
        rev_src = edges % num_states
        indptr = np.zeros(num_states + 1, dtype=np.int64)
        np.cumsum(np.bincount(edges // num_states, minlength=num_states), out=indptr[1:])
        distance = np.full(num_states, _UNREACHABLE, dtype=np.int64)
        distance[np.asarray(accepting, dtype=bool)] = 0
        frontier = np.flatnonzero(distance == 0)
        level = 0
        while frontier.size:
            starts, ends = indptr[frontier], indptr[frontier + 1]
            lengths = ends - starts
            total = int(lengths.sum())
            if total == 0:
                break
            offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
            preds = sorted_unique(rev_src[offsets + np.arange(total)])
            frontier = preds[distance[preds] == _UNREACHABLE]
            level += 1
            distance[frontier] = level
        # the next byte on a shortest path: the smallest byte whose target is one closer
        target_distance = np.where(transitions >= 0, distance[np.maximum(transitions, 0)], _UNREACHABLE)
        good = target_distance == (distance[:, None] - 1)
        next_byte = np.where(good.any(axis=1), np.argmax(good, axis=1), -1)
        next_state = np.where(
            next_byte >= 0, transitions[np.arange(num_states), np.maximum(next_byte, 0)], -1
        )
        self._distance = distance
        self._next_byte = next_byte.astype(np.int64)
        self._next_state = next_state.astype(np.int64)

    def _walk_table(self, state: int) -> bytes | None:
        assert self._distance is not None and self._next_byte is not None and self._next_state is not None
        if self._distance[state] == _UNREACHABLE:
            return None
        out = bytearray()
        while self._distance[state] > 0:
            out.append(int(self._next_byte[state]))
            state = int(self._next_state[state])
        return bytes(out)

    def _search(self, start: int) -> bytes | None:
        """Breadth-first search forwards from ``start`` (grammars built lazily)."""
        compiled = self.compiled
        if compiled.is_accepting(start):
            return b""
        parent: dict[int, tuple[int, int]] = {start: (-1, -1)}
        queue = deque([start])
        while queue:
            state = queue.popleft()
            row = np.asarray(compiled.row(state)).tolist()
            for byte, nxt in enumerate(row):
                if nxt < 0 or nxt in parent:
                    continue
                parent[nxt] = (state, byte)
                if compiled.is_accepting(nxt):
                    out = bytearray()
                    node = nxt
                    while node != start:
                        prev, b = parent[node]
                        out.append(b)
                        node = prev
                    out.reverse()
                    return bytes(out)
                if len(parent) >= self.max_search_states:
                    return None
                queue.append(nxt)
        return None
