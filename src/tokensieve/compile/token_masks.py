"""Token masks of automaton states, by a vectorised walk of the token trie.

For a byte DFA state ``s``, token ``t`` is allowed iff running the bytes of ``t``
from ``s`` never hits a missing transition (the DFA is trimmed, so every live
state can still reach acceptance). The walk expands a frontier of
``(origin, trie node, DFA state)`` triples one depth level at a time with numpy,
so shared prefixes are visited once and no Python code runs per token or per
node. Any number of origin states are walked together, so the fixed cost of a
level (a few dozen numpy calls, 50 to 100 microseconds) is paid once for all of
them: that is how a whole automaton is precomputed in one pass, and how a cache
miss also computes the states a few bytes ahead.

Each frontier element is expanded from whichever side is smaller:

* **trie side**: enumerate the node's children (CSR) and look each byte up in
  the transition table; right for permissive states and for nodes with few
  children (most nodes below depth 2).
* **automaton side**: enumerate the state's outgoing edges (CSR, built once
  per automaton) and find the child along each byte: a dense child table for
  the "hub" nodes with at least four children (the root and
  common prefixes), a comparison with the few child bytes for the others.
  Right for restrictive states (a choice list, a keyword), where a hub node has
  hundreds of children but the state leaves on one or two bytes. Automata
  without an ``(S, 256)`` table (large choice lists) are walked from this side
  only.

Two shortcuts keep permissive states cheap:

* **subtree closure**: if every byte below trie node ``n`` loops on the state
  ``q`` reached at ``n`` (for example: inside a quoted string, or a ``[a-z]+``
  run), every token under ``n`` is allowed; the whole slice of ``sorted_tokens``
  is taken at once and the walk does not descend. A state that also takes
  every UTF-8 character back to itself (a free JSON string, through a small
  sub-automaton for the multi-byte characters) counts the bytes 0x80-0xFF as
  loop bytes below nodes whose tokens are all well-formed UTF-8 from a
  character boundary (:mod:`tokensieve.compile.utf8_closure`), so multilingual
  tokens are taken whole too.
* **range output**: the walk emits slices of the byte-sorted token order. A
  mask with many tokens is packed at once (a scatter into a boolean row, then
  ``packbits``); masks with few tokens are kept as ``(word, bit)`` lists, which
  cost a few microseconds to pack on first use (:class:`MaskBatch`).

Most levels of a walk are deep in the trie with a handful of pairs left (long
tokens), and each numpy level costs tens of microseconds whatever its size:
once the frontier is at most ``_TAIL_PAIRS`` pairs with at most
``_TAIL_NODES`` trie nodes below them, the rest is visited depth first in
plain Python (no shortcuts: the same tokens).

This module drives the walk; its parts live beside it: the per-vocabulary
tables, the child lookups and the plain-Python tail in :mod:`.trie_tables`,
the per-automaton arrays in :mod:`.automaton_view`, the starts past a class
in :mod:`.jump_starts`, the result in :mod:`.mask_batch`, and the budget and
chunking of compile-time walks in :mod:`.walk_budget`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._arrays import concat_ranges as _ranges
from .._arrays import or_distinct_bits
from ..bitmask import friendly_zeros
from ..vocab.trie import TokenTrie
from .automaton_view import AutomatonView
from .class_jumps import ClassJump, ClassRegion
from .jump_starts import escape_pairs, jump_groups
from .mask_batch import MaskBatch
from .trie_tables import TrieTables
from .walk_budget import FrontierTooLarge, WalkBudget, walk_in_chunks

if TYPE_CHECKING:
    from .blank_copies import LeadingBlanks
    from .long_tokens import LongTokens
    from .unit_needs import UnitNeeds

__all__ = [
    "AutomatonView",
    "FrontierTooLarge",
    "MaskBatch",
    "TokenMaskBuilder",
    "WalkBudget",
    "walk_in_chunks",
]

_EMPTY = np.zeros(0, dtype=np.int64)
_EMPTY_BOOL = np.zeros(0, dtype=bool)

#: a walk whose frontier is at most this many pairs ...
_TAIL_PAIRS = 64
#: ... with at most this many trie nodes below them in all goes on in plain Python
_TAIL_NODES = 512
#: byte classes whose trie regions are kept per vocabulary (about 0.6 MB each for 131k tokens) ...
_MAX_REGIONS = 32
#: ... and class jumps (a packed row and the escape nodes: tens to hundreds of kilobytes each)
_MAX_JUMPS = 256
#: a mask with more tokens than ``num_tokens // _DENSE_FRACTION`` is built dense
_DENSE_FRACTION = 16
#: a packed row of more tokens than this is made from a boolean row (see :meth:`TokenMaskBuilder._pack_rows`)
_FEW_TOKENS = 640


#: the work of a level of a walk's array operations, and of a walk's set-up and result, in
#: (node, state) pairs: about what they cost in time on the JSON Schema corpus (one pair is
#: about 0.15 microseconds, a level 45, a walk 450)
_LEVEL_WORK = 300
_WALK_WORK = 3000


class TokenMaskBuilder(TrieTables):
    """Computes packed token masks for automaton states over one vocabulary.

    Parameters
    ----------
    trie
        The vocabulary's token trie (special tokens excluded).
    vocab_size
        Width of the mask in tokens (may exceed the real token count).
    stop_token_ids
        Tokens allowed exactly in accepting states.
    """

    #: whether :meth:`compute` starts the walks of wide-class states past their class (see
    #: :mod:`.class_jumps`); the masks are the same either way
    jump_classes = True

    def __init__(self, trie: TokenTrie, vocab_size: int, stop_token_ids: Sequence[int]) -> None:
        super().__init__(trie, vocab_size, stop_token_ids)
        self._regions: OrderedDict[bytes, ClassRegion] = OrderedDict()
        self._jumps: OrderedDict[tuple[bytes, int], ClassJump] = OrderedDict()
        self._jump_lock = threading.Lock()
        self._work = threading.local()  # see work_done
        #: the tokens longer than the sharing depth (set by :func:`~tokensieve.compile.vocab_cache.mask_builder_for`)
        self.long_tokens: LongTokens | None = None
        #: the tokens by their leading run of blanks (set by :func:`~tokensieve.compile.vocab_cache.mask_builder_for`)
        self.leading_blanks: LeadingBlanks | None = None
        #: the tokens by the units of a counted repetition they begin, by unit (kept by :func:`~tokensieve.compile.unit_needs.unit_needs_for`)
        self.unit_needs: dict[bytes, UnitNeeds] = {}

    def work_done(self) -> int:
        """The work of this thread's walks so far, in (trie node, automaton state) pairs.

        Every pair a walk meets counts one, every level of array operations
        :data:`_LEVEL_WORK` and every walk :data:`_WALK_WORK` more (their fixed
        costs). A measure that does not depend on the machine or its load:
        compile-time walks are budgeted in it (:class:`WalkBudget`), so what a
        compilation computes ahead is the same on every machine.
        """
        return int(getattr(self._work, "pairs", 0))

    def add_work(self, pairs: int) -> None:
        """Count work done outside the walks (in pairs) toward :meth:`work_done`."""
        self._work.pairs = getattr(self._work, "pairs", 0) + pairs

    @property
    def nbytes(self) -> int:
        """Memory held by the per-vocabulary arrays (the trie, the cached class jumps and the units' counts included)."""
        own = sum(
            a.nbytes
            for a in (
                self._child_byte,
                self._nchild,
                self._hub_row,
                self._hub_table,
                self._few_bytes,
                self._sorted_word,
                self._sorted_bit,
                self._nodes_below,
                self.utf8_ok,
                *self.chain_needs,
                self.suffix_need,
            )
        )
        with self._jump_lock:
            cached = sum(r.nbytes for r in self._regions.values()) + sum(j.nbytes for j in self._jumps.values())
        leading = 0 if self.leading_blanks is None else self.leading_blanks.nbytes
        units = sum(u.nbytes for u in list(self.unit_needs.values()))
        return int(own + cached + leading + units + self.trie.nbytes)

    def _walk_origins(
        self, a: AutomatonView, origins: np.ndarray, max_frontier: int | None, jump: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, ClassJump]]:
        """Allowed token slices of several states, from one walk (with ``jump``: past wide classes).

        ``max_frontier`` bounds the (trie node, state) pairs a walk of several
        states may hold in all; past it :class:`FrontierTooLarge` is raised so
        the caller can walk fewer states at a time (a walk of one state is
        bounded by the trie and never raises).

        Returns ``(owner, lo, hi, jumps)``: the tokens ``sorted_tokens[lo[i]:hi[i]]``
        are allowed in ``origins[owner[i]]`` (``int64`` arrays; the slices of one
        state are disjoint and come in no particular order). With ``jump``, the
        states with a wide class start their walks past it; ``jumps`` maps the
        index of each such state to its :class:`ClassJump`, whose ``allowed``
        tokens are not among the slices.
        """
        k = origins.size
        jumps: dict[int, ClassJump] = {}
        if k == 0:
            return _EMPTY, _EMPTY, _EMPTY, jumps
        single = k == 1
        parts_node: list[np.ndarray] = []
        parts_state: list[np.ndarray] = []
        parts_owner: list[np.ndarray] = []
        roots, root_index = origins, None
        if jump and a.trans is not None:
            depth = a.jump_depth.take(origins)
            if np.count_nonzero(depth):
                for index, cj in jump_groups(a, origins, depth, self.class_jump):
                    node, state, owner = escape_pairs(self.trie, a, origins.take(index), index, cj)
                    parts_node.append(node)
                    parts_state.append(state)
                    parts_owner.append(owner)
                    jumps.update(dict.fromkeys(index.tolist(), cj))
                root_index = np.flatnonzero(depth == 0)
                roots = origins.take(root_index)
        if roots.size:
            # depth 1, from the automaton side (the root has a child for nearly every byte)
            deg = a.outdeg.take(roots)
            pos = _ranges(a.out_start.take(roots), deg)
            node = self._root_table.take(a.out_byte.take(pos))
            ok = node >= 0
            parts_node.append(node[ok])
            parts_state.append(a.out_next.take(pos)[ok])
            index = np.arange(k, dtype=np.int64) if root_index is None else root_index
            parts_owner.append(np.repeat(index, deg)[ok])
        if len(parts_node) == 1:
            node, state, owner = parts_node[0], parts_state[0], parts_owner[0]
        else:
            node, state, owner = (np.concatenate(p) for p in (parts_node, parts_state, parts_owner))
        if single:
            owner = _EMPTY
        budget = max_frontier if (max_frontier is not None and not single) else -1
        own, lo, hi, _ = self._walk_frontier(a, origins, node, state, owner, single, budget, None, False)
        return own, lo, hi, jumps

    def class_jump(self, classes: np.ndarray, depth: int, utf8: bool = False) -> ClassJump:
        """The :class:`ClassJump` of a byte class followed ``depth`` bytes deep (memoised per vocabulary).

        ``utf8``: the class of a state that takes every character back to itself
        (see :class:`~tokensieve.compile.class_jumps.ClassRegion`).
        """
        depth = min(depth, self.trie.max_depth)
        cls = classes.tobytes() + (b"utf8" if utf8 else b"")
        key = (cls, depth)
        with self._jump_lock:
            hit = self._jumps.get(key)
            if hit is not None:
                self._jumps.move_to_end(key)
                return hit
            region = self._regions.get(cls)
            if region is not None:
                self._regions.move_to_end(cls)
        if region is None:
            region = ClassRegion(self.trie, self.num_words, classes, utf8)
        made = region.jump(depth)
        with self._jump_lock:
            self._regions[cls] = region
            while len(self._regions) > _MAX_REGIONS:
                self._regions.popitem(last=False)
            self._jumps[key] = made
            while len(self._jumps) > _MAX_JUMPS:
                self._jumps.popitem(last=False)
        return made

    def walk_pairs(
        self,
        automaton: AutomatonView,
        node: np.ndarray,
        state: np.ndarray,
        owner: np.ndarray | None,
        events: np.ndarray,
        max_frontier: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Allowed token slices below given (trie node, state) pairs, and the event pairs met.

        The walk goes on below each start pair as in :meth:`compute` (the
        tokens that end exactly at a start node are counted again, so a start
        node must be one the caller reached). ``owner`` tags each pair (None:
        all 0) and is carried to the pairs below it.

        Parameters
        ----------
        events
            ``bool (S,)``: the states whose pairs the caller wants to see. Every
            pair reached below a start pair whose state is in ``events`` is
            reported; the walk also goes on below it.
        max_frontier
            Past this many (node, state) pairs in all, :class:`FrontierTooLarge`
            is raised (None: no bound).

        Returns
        -------
        (owner, lo, hi, (event_node, event_state, event_owner))
            The allowed tokens ``sorted_tokens[lo[i]:hi[i]]`` (slices disjoint
            per owner, in no particular order), tagged with their pair's owner,
            then the event pairs.
        """
        single = owner is None
        own, lo, hi, met = self._walk_frontier(
            automaton,
            state,
            node,
            state,
            _EMPTY if owner is None else owner,
            single,
            -1 if max_frontier is None else max_frontier,
            events,
            True,
        )
        assert met is not None
        return own, lo, hi, met

    def _walk_frontier(
        self,
        a: AutomatonView,
        origins: np.ndarray,
        node: np.ndarray,
        state: np.ndarray,
        owner: np.ndarray,
        single: bool,
        budget: int,
        events: np.ndarray | None,
        skip_first_events: bool,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        """The level-by-level walk from a frontier of (node, state, owner) triples (see :meth:`_walk_origins`)."""
        nchild, hub_row = self._nchild, self._hub_row
        cstart, cids, cbyte = self._child_start, self._child_ids, self._child_byte
        token_mid, token_hi, sub_bytes = self._token_mid, self._token_hi, self._sub_bytes
        outdeg = a.outdeg
        sparse = a.trans is None
        trans = a.trans if a.trans is not None else _EMPTY
        closes, not_closing, close_len = a.closes, a.not_closing, a.close_len
        check_closures = a.has_closures
        suffix_need = self.suffix_need
        has_utf8, utf8 = a.has_utf8, a.utf8
        utf8_ok = self.utf8_ok if has_utf8 else _EMPTY_BOOL
        # counted strings and blank runs (the indentation before a value): chains
        chains = a.chains
        chain_reach = need_min = _EMPTY
        if chains is not None:
            ascii_len, char_len, blank_len = chains
            ascii_need, char_need, blank_need = self.chain_needs
            assert a.chain_reach is not None  # set with the chains
            chain_reach, need_min = a.chain_reach, self.chain_need_min
        seen_nodes: list[np.ndarray] = []
        seen_ends: list[np.ndarray] = []
        seen_owner: list[np.ndarray] = []
        ev_node: list[np.ndarray] = []
        ev_state: list[np.ndarray] = []
        ev_owner: list[np.ndarray] = []
        report = events is not None and not skip_first_events
        held = 0
        visited = _WALK_WORK  # the walk's work (see work_done), counted per thread
        tail = not sparse  # the end of the walk may go on in plain Python
        while node.size:
            below = int(self._nodes_below.take(node).sum()) if tail and node.size <= _TAIL_PAIRS else _TAIL_NODES + 1
            if below <= _TAIL_NODES:
                visited += below
                # a few small subtrees left: a numpy level costs more than visiting them one by one
                nodes_left, ends_left, owners_left, met_left = self._finish_in_python(
                    a, node, state, owner, single, chains, events, report
                )
                seen_nodes.append(nodes_left)
                seen_ends.append(ends_left)
                if not single:
                    seen_owner.append(owners_left)
                if met_left is not None:
                    ev_node.append(met_left[0])
                    ev_state.append(met_left[1])
                    ev_owner.append(met_left[2])
                break
            if report:
                assert events is not None
                met = events.take(state)
                if np.count_nonzero(met):
                    ev_node.append(node[met])
                    ev_state.append(state[met])
                    ev_owner.append(np.zeros(ev_node[-1].size, dtype=np.int64) if single else owner[met])
            report = events is not None
            visited += node.size + _LEVEL_WORK
            if budget >= 0:
                held += node.size
                if held > budget:
                    self.add_work(visited)
                    raise FrontierTooLarge(held)
            cnt = nchild.take(node)
            end = token_mid.take(node)
            if chains is not None and np.count_nonzero(need_min.take(node) <= chain_reach.take(state)):
                # subtree closure along a chain: every suffix below is plain and no longer than the chain
                closed = ascii_need.take(node) <= ascii_len.take(state)
                closed |= char_need.take(node) <= char_len.take(state)
                closed |= blank_need.take(node) <= blank_len.take(state)
                closed &= cnt > 0
                if np.count_nonzero(closed):
                    cc = np.flatnonzero(closed)
                    end[cc] = token_hi.take(node.take(cc))
                    cnt[cc] = 0
            if check_closures:
                # subtree closure: every byte below the node loops on its state, or is of
                # its class chain and no deeper than the chain is long
                cand = closes.take(state)
                cand &= cnt > 0
                if np.count_nonzero(cand):
                    ci = np.flatnonzero(cand)
                    cn = node.take(ci)
                    cq = state.take(ci)
                    out = sub_bytes.take(cn, axis=0)
                    out &= not_closing.take(cq, axis=0)
                    any_out = out[:, 0] | out[:, 1]
                    any_out |= out[:, 2]
                    any_out |= out[:, 3]
                    closed = any_out == 0
                    if close_len is not None:
                        closed &= suffix_need.take(cn) <= close_len.take(cq)
                    if has_utf8:
                        # a high byte below the node: only whole characters, from a character boundary
                        high = sub_bytes.take(cn, axis=0)
                        high = (high[:, 2] | high[:, 3]) != 0
                        closed &= ~(high & utf8.take(cq) & ~utf8_ok.take(cn))
                    if np.count_nonzero(closed):
                        cc = ci[closed]
                        end[cc] = token_hi.take(cn[closed])
                        cnt[cc] = 0
            seen_nodes.append(node)
            seen_ends.append(end)
            if not single:
                seen_owner.append(owner)
            if sparse:
                # no table: every element goes from the automaton side
                node, state, owner = self._expand_by_automaton(a, node, state, owner, single, None)
                continue
            hub = hub_row.take(node)
            deg = outdeg.take(state)
            by_dfa = deg < cnt
            by_dfa &= hub >= 0
            n_dfa = int(np.count_nonzero(by_dfa))
            parts_node: list[np.ndarray] = []
            parts_state: list[np.ndarray] = []
            parts_owner: list[np.ndarray] = []
            if n_dfa:
                if n_dfa == node.size:
                    dn, dq, dh, do = node, state, hub, owner
                else:
                    dn, dq, dh = node[by_dfa], state[by_dfa], hub[by_dfa]
                    do = owner if single else owner[by_dfa]
                dn, dq, do = self._expand_by_automaton(a, dn, dq, do, single, dh)
                parts_node.append(dn)
                parts_state.append(dq)
                parts_owner.append(do)
            if n_dfa < node.size:
                if n_dfa:
                    by_trie = ~by_dfa
                    tn, tq, tc = node[by_trie], state[by_trie], cnt[by_trie]
                    to = owner if single else owner[by_trie]
                else:
                    tn, tq, tc, to = node, state, cnt, owner
                pos = _ranges(cstart.take(tn), tc)
                nxt = trans.take(np.repeat(tq << 8, tc) | cbyte.take(pos))
                ok = nxt >= 0
                parts_node.append(cids.take(pos)[ok])
                parts_state.append(nxt[ok])
                if not single:
                    parts_owner.append(np.repeat(to, tc)[ok])
            if len(parts_node) == 1:
                node, state = parts_node[0], parts_state[0]
                if not single:
                    owner = parts_owner[0]
            else:
                node = np.concatenate(parts_node)
                state = np.concatenate(parts_state)
                if not single:
                    owner = np.concatenate(parts_owner)

        self.add_work(visited)
        met_pairs = None
        if events is not None:
            met_pairs = (
                (np.concatenate(ev_node), np.concatenate(ev_state), np.concatenate(ev_owner))
                if ev_node
                else (_EMPTY, _EMPTY, _EMPTY)
            )
        if not seen_nodes:
            return _EMPTY, _EMPTY, _EMPTY, met_pairs
        nodes = np.concatenate(seen_nodes)
        hi = np.concatenate(seen_ends)
        lo = self._token_lo.take(nodes)
        nonempty = hi > lo
        lo, hi = lo[nonempty], hi[nonempty]
        if single:
            own = np.zeros(lo.size, dtype=np.int64)
        else:
            own = np.concatenate(seen_owner)[nonempty]
        return own, lo, hi, met_pairs

    def compute(
        self,
        automaton: AutomatonView,
        states: Sequence[int] | np.ndarray,
        max_frontier: int | None = None,
    ) -> MaskBatch:
        """Masks of ``states`` from one walk (see :class:`MaskBatch`).

        Raises :class:`FrontierTooLarge` when a walk of several states would
        hold more than ``max_frontier`` (trie node, state) pairs.
        """
        origins = np.asarray(states, dtype=np.int64).reshape(-1)
        k = origins.size
        accepting = automaton.accepting[origins]
        if k == 0:
            none = np.zeros(1, dtype=np.int64)
            return MaskBatch(origins, accepting, none, _EMPTY, _EMPTY, {}, self)
        own, lo, hi, jumps = self._walk_origins(automaton, origins, max_frontier, self.jump_classes)
        length = hi - lo
        if k > 1:
            counts = np.bincount(own, weights=length, minlength=k).astype(np.int64)
            order = np.argsort(own.astype(np.uint16) if k <= 0xFFFF else own, kind="stable")
            lo, length = lo.take(order), length.take(order)
        else:
            counts = np.array([length.sum()], dtype=np.int64)
        starts = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        pos = _ranges(lo, length)
        dense: dict[int, np.ndarray] = {}
        is_dense = counts * _DENSE_FRACTION > self._num_tokens
        if jumps:
            is_dense[list(jumps)] = True  # their class tokens come as a boolean row
        if is_dense.any():
            in_dense = np.repeat(is_dense, counts)
            dense = self._pack_rows(np.flatnonzero(is_dense), counts, pos[in_dense], accepting, jumps)
            pos = pos[~in_dense]
            counts[is_dense] = 0
            np.cumsum(counts, out=starts[1:])
        return MaskBatch(
            origins, accepting, starts, self._sorted_word.take(pos), self._sorted_bit.take(pos), dense, self
        )

    def _pack_rows(
        self,
        index: np.ndarray,
        counts: np.ndarray,
        pos: np.ndarray,
        accepting: np.ndarray,
        jumps: dict[int, ClassJump],
    ) -> dict[int, np.ndarray]:
        """Packed ``int32 (num_words,)`` rows of several states of a batch.

        ``index`` holds the states' positions in the batch; ``pos`` their
        tokens' places in ``sorted_tokens``, state after state (``counts`` of
        each, by position; no token twice for a state). A state with a class
        jump gets its ``allowed`` row too, an accepting one the stop tokens.
        Each row is made where copies from it are fast
        (:func:`~tokensieve.bitmask.friendly_zeros`), by the cheaper way for
        its size: from a boolean row past :data:`_FEW_TOKENS` tokens, from
        (word, bit) pairs below.
        """
        w = self.num_words
        sizes = counts.take(index)
        cut = np.zeros(index.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=cut[1:])
        out: dict[int, np.ndarray] = {}
        for i, size, a in zip(index.tolist(), sizes.tolist(), cut[:-1].tolist(), strict=True):
            row = friendly_zeros(w, np.uint32)
            if size > _FEW_TOKENS:
                allowed = np.zeros(w * 32, dtype=bool)
                allowed[self._sorted_tokens.take(pos[a : a + size])] = True
                row[...] = np.packbits(allowed, bitorder="little").view(np.uint32)
            elif size:
                at = pos[a : a + size]
                or_distinct_bits(row, self._sorted_word.take(at), self._sorted_bit.take(at))
            cj = jumps.get(i)
            if cj is not None:
                row |= cj.allowed.view(np.uint32)
            if accepting[i]:
                for stop_word, stop_bit in self.stop_pairs:
                    row[stop_word] |= stop_bit
            out[i] = row.view(np.int32)
        return out

