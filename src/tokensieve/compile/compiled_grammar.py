"""The compiled, immutable form of a constraint.

This module holds the grammar, its memo of masks and the walks that fill it;
which states take their mask from another's is in :mod:`.derived_masks`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._arrays import sorted_unique
from ..bitmask import friendly_zeros
from ..limits import Limits
from .constraint import CompiledConstraint
from .derived_masks import DerivedMasks
from .frame_walk import dfa_walk
from .mask_cache import MaskCache
from .token_masks import AutomatonView, FrontierTooLarge, WalkBudget, walk_in_chunks
from .vocab_cache import mask_builder_for

if TYPE_CHECKING:
    from ..automata import ByteDFA
    from ..vocab import TokenizerInfo

__all__ = ["CompiledGrammar"]

_FORMAT_VERSION = 2  # 2: layer copies with lags, units with boundaries and counted places

#: on a cache miss, states reachable within this many bytes are computed in the same walk ...
_PREFETCH_DEPTH = 16
#: ... up to this many states in all ...
_PREFETCH_STATES = 8
#: ... of which at most this many permissive ones; the search looks at most at this many states
_PREFETCH_PERMISSIVE = 8
_PREFETCH_VISITS = 4096
#: on the first use of a mask kept as a token list, the lists of this many states ahead are packed too...
_PACK_AHEAD = 2
#: ...found among at most this many states, past states with at most this many distinct successors
_PACK_AHEAD_VISITS = 64
_PACK_AHEAD_FANOUT = 4
#: transition rows (and distinct successors) kept as Python lists, at most; then forgotten
_MAX_ROWS = 16384
#: a mask kept as a token list of at most this many ``(word, bit)`` pairs is written into
#: bitmask rows from its distinct words (:meth:`CompiledGrammar.fill_row`), never packed
_SPARSE_PAIRS = 32
#: restrictive states per walk in :meth:`CompiledGrammar.precompute`
_PRECOMPUTE_BATCH = 16384
#: restrictive states per walk when precomputing within a budget (so that it can stop)
_BUDGETED_BATCH = 2048
#: ... and from the background thread (see :mod:`.background`): shorter walks, each a few milliseconds
_ASIDE_BATCH = 256
#: a walk of several states holds at most this many (trie node, state) pairs; a
#: bigger one is split (an automaton whose states each reach much of the trie, such
#: as a long counted repetition of letters, would otherwise need gigabytes)
_MAX_FRONTIER = 2_000_000
#: not looked up yet (a representative's long-token survivors may be None)
_UNKNOWN = object()


class CompiledGrammar(DerivedMasks, CompiledConstraint):
    """A constraint compiled against one vocabulary.

    A compiled grammar is an immutable value: its automaton and vocabulary never
    change, and it can be shared by any number of :class:`GrammarMatcher` objects
    and threads, and pickled (the token-mask cache is not part of the pickle; it
    is rebuilt lazily). Token masks are computed on first use per automaton
    state and memoised, up to ``limits.max_mask_cache_bytes``.

    Attributes
    ----------
    tokenizer_info : TokenizerInfo
        The vocabulary the masks are over.
    dfa : ByteDFA
        The minimal byte automaton of the constraint.
    kind : str
        ``"regex"`` or ``"choices"``.
    source : str
        The pattern (or a short description of the choice list).
    unenforced : tuple of str
        Parts of the constraint that are not enforced (empty for regexes and
        choices, which are always enforced exactly).
    """

    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        dfa: ByteDFA,
        *,
        kind: str,
        source: str,
        limits: Limits | None = None,
        unenforced: Iterable[str] = (),
    ) -> None:
        self.tokenizer_info = tokenizer_info
        self.dfa = dfa
        self.kind = kind
        self.source = source
        self.limits = limits or Limits()
        self.unenforced = tuple(unenforced)
        self._builder = mask_builder_for(tokenizer_info)
        # large choice lists come without an (S, 256) table: masks and matching use the edges
        self._transitions = dfa.transitions if dfa.has_table else None
        self._accepting = np.asarray(dfa.accepting, dtype=bool)
        num_states = dfa.num_states
        self._init_derived()
        self._view: AutomatonView | None = None
        # the masks computed so far (its lock guards them)
        self._cache = MaskCache(num_states, self._builder.num_words, self.limits.max_mask_cache_bytes)
        self._rows: dict[int, list[int]] = {}
        self._successors: dict[int, list[int]] = {}  # distinct successors (see _distinct_successors)

    # ----------------------------------------------------------- properties
    @property
    def start_state(self) -> int:
        """The automaton's start state."""
        return int(self.dfa.start)

    @property
    def num_states(self) -> int:
        """Number of automaton states."""
        return int(self._accepting.shape[0])

    @property
    def vocab_size(self) -> int:
        """Width of the masks, in tokens."""
        return self._builder.vocab_size

    @property
    def num_words(self) -> int:
        """Width of the masks, in ``int32`` words (``ceil(vocab_size / 32)``)."""
        return self._builder.num_words

    @property
    def memory_size_bytes(self) -> int:
        """Bytes held by the automaton (with the arrays of its walks) and the cached masks."""
        table = 0 if self._transitions is None else self._transitions.nbytes
        edges = sum(a.nbytes for a in self.dfa.edges) if self.dfa.edges is not None else 0
        view = 0 if self._view is None else self._view.nbytes
        return int(table + edges + view + self._accepting.nbytes + self._cache.nbytes)

    @property
    def _known(self) -> np.ndarray:
        """``bool (S,)``: whether each state's mask is kept now (see :class:`.mask_cache.MaskCache`)."""
        return self._cache.known

    @property
    def _sparse(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """The masks kept as short token lists, by state (see :class:`.mask_cache.MaskCache`)."""
        return self._cache.sparse

    # ------------------------------------------------------------- runtime
    def is_accepting(self, state: int) -> bool:
        """Whether the text that led to ``state`` is a complete match."""
        return bool(self._accepting[state])

    def row(self, state: int) -> np.ndarray:
        """``int32 (256,)``, read-only: the state after each byte of ``state`` (-1: the byte is not allowed)."""
        table = self._transitions
        if table is not None:
            return table[state]
        out = np.array(self._row_list(state), dtype=np.int32)
        out.setflags(write=False)
        return out

    def _row_list(self, state: int) -> list[int]:
        """:meth:`row` as a Python list (memoised; fast to index byte by byte)."""
        row = self._rows.get(state)
        if row is None:
            table = self._transitions
            if table is not None:
                row = table[state].tolist()
            else:  # a large choice list: its few edges, from the walk's arrays
                view = self.automaton
                lo, hi = view.out_start[state : state + 2].tolist()
                row = [-1] * 256
                for byte, target in zip(view.out_byte[lo:hi].tolist(), view.out_next[lo:hi].tolist(), strict=True):
                    row[byte] = target
            if len(self._rows) >= _MAX_ROWS:  # bounded: 2 KB a row, and a server walks many states
                self._rows.clear()
            self._rows[state] = row
        return row

    def step_bytes(self, state: int, data: bytes) -> int:
        """State after ``data`` from ``state``, or -1 if ``data`` leaves the language."""
        for byte in data:
            state = self._row_list(state)[byte]
            if state < 0:
                return -1
        return state

    def token_mask(self, state: int) -> np.ndarray:
        """Packed ``int32`` mask of the tokens allowed in ``state`` (read-only view).

        Masks are memoised. A state met for the first time is walked alone by
        the JIT kernel (:func:`~tokensieve.compile.frame_walk.dfa_walk`: its
        cost is the trie nodes visited, at most the trie's size); until the
        kernel is loaded, and for automata without a table, by the numpy walk
        together with the not yet computed states reachable from it within a
        few bytes (up to a bounded number), so one walk serves the next steps
        too.
        """
        mask = self._cache.masks.get(state)
        if mask is not None:
            return mask
        place, keep = self._derived_from(state)
        if place >= 0:
            base = self.token_mask(place)
            if keep is None:
                return base  # no token needs more room than the state has: its base's mask itself
            mask = np.bitwise_and(base, keep, out=friendly_zeros(base.shape[0]))
            mask.setflags(write=False)
            self._cache.store(state, mask, friendly=True)
            return mask
        unclassed = not self._reps_done  # the classes sharing masks are not known yet (see prepare)
        rep = None if unclassed else self._shared_with(state)
        if unclassed or (rep is not None and not self.automaton.permissive[state]):
            # the state's own walk (for a restrictive member of a class: fewer nodes than its long tokens' recheck)
            mask = self._walked_by_kernel(state)
            if mask is not None:
                return mask
            if unclassed:
                rep = self._shared_with(state)
        if rep is not None:
            assert self._transitions is not None
            base = self.token_mask(rep)
            chains = self.automaton.chains
            lengths = None if chains is None else [int(c[state]) for c in chains]
            long_tokens = self._builder.long_tokens
            assert long_tokens is not None  # set by mask_builder_for
            survivors = self._survivors.get(rep, _UNKNOWN)
            if survivors is _UNKNOWN:
                survivors = long_tokens.survivors(self._transitions, state)
                self._survivors[rep] = survivors
            mask = long_tokens.apply(base, self._transitions, state, lengths, survivors)
            mask.setflags(write=False)
            self._cache.store(state, mask, friendly=True)
            return mask
        batch, index = self._cache.batch_entry(state)
        if batch is not None:
            mask = batch.mask(index)
            if batch.packed is not None:  # a row of the batch: its memory is counted already
                self._cache.store(state, mask, counted=False)
                return mask
            if batch.listed(index):  # packed from its token list just now
                self._cache.keep_packed(state, mask)
                # the lists of the states a few bytes ahead are packed now too: their first
                # use is then a plain copy, and this step pays for the few of them at once
                self._pack_ahead(state)
                return mask
        else:
            mask = self._walked_by_kernel(state)
            if mask is not None:
                return mask
            if state == self.start_state:
                batch = self._builder.compute(self.automaton, [state])
            else:
                try:
                    batch = self._builder.compute(
                        self.automaton, self._neighbourhood(state), max_frontier=_MAX_FRONTIER
                    )
                except FrontierTooLarge:
                    batch = self._builder.compute(self.automaton, [state])
            if len(batch) > 1:
                # the few neighbours' masks are packed now, with the missed one (tens of microseconds
                # for the whole batch): packed on first use instead, each would lengthen a hit
                self._cache.add_batch(batch)
            mask = batch.mask(0)
        mask.setflags(write=False)
        self._cache.store(state, mask)
        return mask

    def fill_row(self, state: int, row: np.ndarray) -> None:
        """Write the mask of ``state`` into ``row``, the same bits as :meth:`token_mask`.

        Parameters
        ----------
        state
            An automaton state.
        row
            A writable ``int32`` array of ``ceil(V / 32)`` words.

        Notes
        -----
        A mask that waits as a short token list (at most ``_SPARSE_PAIRS``
        pairs: a choice list's trie, the keys and punctuation of a schema) is
        kept as its distinct words and their bits and written by clearing the
        row and one indexed assignment, about the cost of copying a packed row,
        instead of being packed on first use (several microseconds, and 4 bytes
        per 32 tokens kept for each state).
        """
        mask = self._cache.masks.get(state)
        if mask is None:
            place, keep = self._derived_from(state)
            if place >= 0:  # the base's mask less the tokens that need more room
                base = self._cache.masks.get(place)
                if base is None:
                    self.fill_row(place, row)
                    if keep is not None:
                        np.bitwise_and(row, keep, out=row)
                elif keep is None:
                    row[...] = base
                else:  # one pass, about the cost of a copy
                    np.bitwise_and(base, keep, out=row)
                return
            sparse = self._cache.sparse.get(state)
            if sparse is not None:
                row.fill(0)
                row[sparse[0]] = sparse[1]
                return
            if self._fill_sparse(state, row):
                return
            mask = self.token_mask(state)
        row[...] = mask

    def _fill_sparse(self, state: int, row: np.ndarray) -> bool:
        """Write ``state``'s mask into ``row`` if it waits as a short token list, and keep that list merged."""
        if self._reps_done and self._shared_with(state) is not None:
            return False  # a class's mask with the long tokens rechecked: see token_mask
        batch, index = self._cache.batch_entry(state)
        if batch is None or not batch.listed(index) or batch.pairs(index) > _SPARSE_PAIRS:
            return False
        self._cache.keep_sparse(state, batch.fill_sparse(index, row))
        self._pack_ahead(state)
        return True

    def _distinct_successors(self, q: int) -> list[int]:
        """The distinct states one byte after ``q``, sorted (memoised)."""
        after = self._successors.get(q)
        if after is None:
            view = self.automaton
            lo, hi = int(view.out_start[q]), int(view.out_start[q + 1])
            after = sorted(set(view.out_next[lo:hi].tolist()))
            if len(self._successors) >= _MAX_ROWS:
                self._successors.clear()
            self._successors[q] = after
        return after

    def _pack_ahead(self, state: int) -> None:
        """Pack the token lists of up to ``_PACK_AHEAD`` states reachable from ``state``, breadth-first.

        Only states whose masks wait as token lists in a batch are packed (not
        those a walk or a class's mask must still give), and only past states
        with few distinct successors (``_PACK_AHEAD_FANOUT``); at most
        ``_PACK_AHEAD_VISITS`` states are looked at, in plain Python over each
        state's memoised distinct successors.

        Not for choice lists: an output walks one branch of their trie once, and
        a token passes several of its states, so the states just ahead are
        seldom the next ones asked for.
        """
        if self.kind == "choices":
            return
        masks = self._cache.masks
        seen = {state}
        frontier = [state]
        packed = visits = 0
        while frontier and packed < _PACK_AHEAD and visits < _PACK_AHEAD_VISITS:
            nxt = []
            for q in frontier:
                after = self._distinct_successors(q)
                if len(after) > _PACK_AHEAD_FANOUT:
                    continue  # many ways on (a choice list's trie): which comes next is a guess
                for r in after:
                    if r in seen:
                        continue
                    seen.add(r)
                    nxt.append(r)
                    visits += 1
                    if r in masks:
                        continue
                    batch, index = self._cache.batch_entry(r)
                    if batch is None or not batch.listed(index):
                        continue
                    self._cache.keep_packed(r, batch.mask(index))
                    packed += 1
                    if packed >= _PACK_AHEAD:
                        return
            frontier = nxt

    @property
    def automaton(self) -> AutomatonView:
        """The automaton's arrays for trie walks (built on first use)."""
        view = self._view
        if view is None:
            view = AutomatonView.of(self.dfa, unread=self._unreached())
            self._view = view
        return view

    def prepare(self, shared_classes: bool = True) -> None:
        """Do now the grammar-wide analyses that lazy masks rely on, so no decoding step pays for them.

        ``shared_classes=False`` leaves out the classes of states sharing a
        mask and the chain lengths: with the JIT kernel loaded, a mask needed
        before they are known is walked on its own (see :meth:`token_mask`),
        and the walks ahead find them in the background.

        For a large automaton: which states share the mask of their short
        tokens (:mod:`~tokensieve.compile.shared_masks`); for one with a table:
        the chain lengths of the counted-string shortcut (:mod:`~tokensieve.compile.char_chains`),
        and the units that the later layers of counted strings count
        (:mod:`~tokensieve.compile.unit_needs`, once per vocabulary).
        Tens of milliseconds for a 100k-state schema automaton; otherwise done
        on the first miss that needs them.
        """
        if shared_classes:
            self._representatives()
            if self._transitions is not None:
                self.automaton.chains  # noqa: B018 - built and kept by the view
        self._unit_needs  # noqa: B018 - the units' counts, once per process and vocabulary

    def precompute(
        self,
        states: Iterable[int] | None = None,
        *,
        budget_s: float | None = None,
        budget_work: int | None = None,
        aside: bool = False,
    ) -> bool:
        """Compute the masks of ``states`` (all states by default), many per walk.

        Only one state per class of states sharing a mask is walked
        (:mod:`~tokensieve.compile.shared_masks`), and no copy of a layout
        place (:mod:`~tokensieve.compile.blank_copies`); the others derive
        theirs on first use. When the packed masks of a batch of states fit in
        a few megabytes they are all packed now; otherwise masks with few
        tokens are kept as token lists and packed on first use (a few
        microseconds).

        Parameters
        ----------
        states
            The states whose masks to compute; all by default.
        budget_s
            Stop starting new walks once this many seconds have gone (the
            states left are computed on first use, as without precomputing).
            Restrictive states come first, then permissive ones, each in
            the order of their numbers (breadth-first from the start state in
            minimised automata).
        budget_work
            Likewise once the walks have done this much work (see
            :meth:`~tokensieve.compile.token_masks.TokenMaskBuilder.work_done`):
            unlike time, the same states on every machine.
        aside
            Called from a thread beside decoding: let go of the interpreter
            lock between chunks of walks.

        Returns
        -------
        bool
            Whether every requested mask is known now.
        """
        budget = WalkBudget.bounded(self._builder, budget_work, budget_s)
        if states is None:
            todo = np.arange(self.num_states, dtype=np.int64)
        else:
            todo = sorted_unique(np.fromiter((int(s) for s in states), dtype=np.int64))
        self._representatives()
        self._unit_needs  # noqa: B018 - the derived masks left to first use need them (built once)
        if self._reps is not None or self._chains is not None or self._layers is not None:
            todo = sorted_unique(self._walked_for(todo))  # the other states derive their masks on first use
        todo = todo[~self._known[todo]]
        if not todo.size:
            return True
        view = self.automaton

        def walk(chunk: np.ndarray) -> None:
            if view.permissive[chunk[0]] and self._walk_alone(chunk, aside):
                pass  # each walked by the kernel (a chunk is all permissive states or none)
            else:
                self._cache.add_batch(self._builder.compute(view, chunk, max_frontier=_MAX_FRONTIER))
            if aside:
                time.sleep(0)  # the interpreter lock goes to a decoding thread waiting for it

        size = _PRECOMPUTE_BATCH if budget is None else _ASIDE_BATCH if aside else _BUDGETED_BATCH
        return walk_in_chunks(todo, view.permissive, (size, _PREFETCH_PERMISSIVE), walk, budget)

    def _walk_alone(self, states: np.ndarray, aside: bool) -> bool:
        """Walk each of ``states`` by the kernel (:func:`~tokensieve.compile.frame_walk.dfa_walk`) and keep
        its packed mask; False, walking none, while the kernel is not there.

        For permissive states: their masks are packed whatever walks them, and
        the kernel walks one in about a tenth of the numpy walk's time, and,
        ``aside``, without the interpreter lock (a decoding thread runs meanwhile).
        """
        return all(self._walked_by_kernel(state, aside) is not None for state in states.tolist())

    def _walked_by_kernel(self, state: int, aside: bool = False) -> np.ndarray | None:
        """``state``'s mask from the kernel's walk of it alone (bounded by the trie's size), kept; None,
        walking nothing, while the kernel is not there (see :func:`~tokensieve.compile.frame_walk.dfa_walk`)."""
        mask = dfa_walk(self._builder, self.automaton, state, aside)
        if mask is not None:
            mask.setflags(write=False)
            self._cache.store(state, mask)
        return mask

    def precompute_ahead(self, budget_s: float | None, budget_work: int | None) -> bool:
        """:meth:`precompute` within a budget, from a thread beside decoding (see :mod:`.background`).

        The same walks, but the thread lets go of the interpreter lock between
        chunks, so that a decoding step waiting for it does not wait for the
        interpreter's switch interval.
        """
        return self.precompute(budget_s=budget_s, budget_work=budget_work, aside=True)

    def _neighbourhood(self, state: int) -> np.ndarray:
        """``state`` and the not yet computed states reachable from it, breadth-first, bounded.

        In plain Python over each state's distinct successors (a few for most
        states, memoised): a numpy level would cost more than the handful of
        states it holds. At most ``_PREFETCH_VISITS`` states are looked at.
        """
        view = self.automaton
        permissive, known = view.permissive, self._known
        out = [state]
        seen = {state}
        loose = int(permissive[state])
        frontier = [state]
        visits = 0
        for _ in range(_PREFETCH_DEPTH):
            nxt = []
            for q in frontier:
                for r in self._distinct_successors(q):
                    if r not in seen:
                        seen.add(r)
                        nxt.append(r)
            if not nxt:
                break
            nxt.sort()
            frontier = nxt
            for r in nxt:
                if known[r] or self._is_derived(r):  # its mask comes from another's
                    continue
                if permissive[r]:
                    if loose >= _PREFETCH_PERMISSIVE:
                        continue
                    loose += 1
                out.append(r)
                if len(out) >= _PREFETCH_STATES:
                    break
            visits += len(nxt)
            if len(out) >= _PREFETCH_STATES or visits >= _PREFETCH_VISITS:
                break
        if self._reps is not None and len(out) > 1:
            # walk one state per class (``state`` is its class's representative), in order met
            firsts = dict.fromkeys(self._walked_for(np.array(out, dtype=np.int64)).tolist())
            out = [r for r in firsts if r == state or not known[r]]
        return np.array(out, dtype=np.int64)

    # --------------------------------------------------------------- pickle
    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild,
            (
                _FORMAT_VERSION,
                self.tokenizer_info,
                self.dfa,
                self.kind,
                self.source,
                self.limits,
                self.unenforced,
            ),
        )

    def __repr__(self) -> str:
        src = self.source if len(self.source) <= 60 else self.source[:57] + "..."
        return f"CompiledGrammar(kind={self.kind!r}, source={src!r}, states={self.num_states})"


def _rebuild(
    version: int,
    info: TokenizerInfo,
    dfa: ByteDFA,
    kind: str,
    source: str,
    limits: Limits,
    unenforced: tuple[str, ...],
) -> CompiledGrammar:
    if version != _FORMAT_VERSION:
        raise ValueError(
            f"cannot load a CompiledGrammar of format {version}; this version reads {_FORMAT_VERSION}"
        )
    return CompiledGrammar(info, dfa, kind=kind, source=source, limits=limits, unenforced=unenforced)
