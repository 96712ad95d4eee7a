"""The frame walks of a recursive grammar's masks, memoised per stack suffix.

A walk starts from one frame ``f`` alone (:meth:`StackWalks._walk`): tokens it
decides are independent of what lies below ``f``; at the trie nodes where the
frame returns (the *escape nodes*) the rest of the token depends on the frame
below, so the walk goes on from those nodes with that frame, and so on
(:meth:`StackWalks._level`, or in one pass through the frames below,
:meth:`StackWalks._stack_walk`). Results are memoised per stack suffix: the top
frame alone, then the top two, three... Walks from the root are shared between
grammars with the same rules (:mod:`.shared_walks`), done together with the
walks of the states a few bytes ahead, and ahead of decoding by
:meth:`StackWalks.precompute`; states with the same walks share one
(:func:`~tokensieve.compile.shared_walks.walk_classes`), and the copies of a
blank run derive theirs (:mod:`.rule_copies`).
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from .._arrays import concat_ranges as _ranges
from .._arrays import sorted_unique
from .._memo import BoundedMemo
from ..errors import LimitExceeded
from .frame_walk import FrameTables, frame_walk, frame_walks, kernel_ready
from .level_walk import level_frame_walks
from .shared_walks import RuleKey, SharedWalk, rule_classes, rule_keys, same_objects, shared_walks_for
from .token_masks import AutomatonView, FrontierTooLarge, WalkBudget, walk_in_chunks

if TYPE_CHECKING:
    from ..automata.pushdown import RuleNetwork
    from ..limits import Limits
    from .rule_copies import RuleCopies
    from .token_masks import TokenMaskBuilder
    from .unordered_frames import UnorderedFrames

__all__ = ["Config", "StackWalks"]

#: a parse stack: global DFA state ids, bottom first
Config = tuple[int, ...]

#: memoised trie walks kept per grammar before the memo is cleared (each holds a mask)
_MAX_MEMO_WALKS = 4096
#: stack suffixes whose walks (levels) are memoised at most: past it the levels and the walks are
#: forgotten together (the levels of deep stacks would otherwise grow without bound)
_MAX_MEMO_LEVELS = 4 * _MAX_MEMO_WALKS
#: a frame walk from the root also walks the frames of states up to this many steps ahead...
_PREFETCH_DEPTH = 16
#: ...at most this many in all...
_PREFETCH_STATES = 16
#: ...of which at most this many permissive ones (large frontiers)
_PREFETCH_PERMISSIVE = 8
#: a batch of walks holding more (trie node, state) pairs is given up for a walk of one
_MAX_FRONTIER = 2_000_000
#: :meth:`StackWalks.precompute` walks at most this many frames (each keeps a mask;
#: half the memo, the other half is left to the walks of decoding steps)...
_PRECOMPUTE_WALKS = _MAX_MEMO_WALKS // 2
#: ...this many restrictive ones per walk (a level of the walk costs tens of microseconds
#: whatever its width: on the JSON benchmark's 15 recursive schemas, 256 rather than 16 gave
#: 0.68 of the compile time, with per-token times unchanged or better)
_PRECOMPUTE_BATCH = 256
#: the work of finding a rule's walk classes, per state, in (trie node, state) pairs of walking
#: (a few microseconds a state)
_CLASS_WORK = 30


class StackWalks:
    """The frame walks of :class:`~tokensieve.compile.pushdown.CompiledPushdownGrammar`, memoised.

    A base of the grammar class: it reads the grammar's global rule tables
    (declared below) and keeps the memos of its walks (made by
    :meth:`_init_walks`). The grammar's lock guards them: it is held around
    every call but the kernel's walks that :meth:`precompute` makes without it
    (they read tables nobody changes).
    """

    walk_kernel: bool
    network: RuleNetwork
    limits: Limits
    _lock: threading.RLock
    _builder: TokenMaskBuilder
    _gtrans: np.ndarray
    _gaccept: list[bool]
    _gcalls: list[tuple[tuple[int, int], ...]]
    _special: np.ndarray
    _offsets: np.ndarray
    _rule_of: list[int]
    _rule_start: list[int]
    _rule_copies: RuleCopies
    _num_static: int  # global ids from here on are frames of .unordered_frames (no byte, not walked alone)
    _frames: UnorderedFrames | None
    _kernel_rules: list[bool]  # with frames: per rule, whether the kernel walks its frames

    def _init_walks(self) -> None:
        """Make the memos of the walks (after the global tables)."""
        self._view_cache: AutomatonView | None = None
        self._tables_cache: FrameTables | None = None
        self._stack_masks: dict[tuple[Config, int, bytes], np.ndarray] = {}
        # frames pushed inside one token: id -> (frames below, return state); 0 is none
        self._push_ids: dict[tuple[int, int], int] = {}
        self._push_below: list[int] = [0]
        self._push_top: list[int] = [-1]
        self._push_depth: list[int] = [0]
        # memo: stack suffix -> (packed mask, escape nodes)
        self._levels: dict[Config, tuple[np.ndarray, np.ndarray | None]] = {}
        # (state, start nodes) -> (start nodes, mask, escape nodes); large node sets keyed by a digest
        self._walks: dict[tuple[int, int, bytes], tuple[Any, np.ndarray, np.ndarray | None]] = {}
        self._digests: dict[int, tuple[np.ndarray, bytes]] = {}
        self._walk_bytes = 0  # the memoised walks' masks and escape nodes
        # shared walks: per rule, each state's representative among the states whose walks
        # from their frame alone are the same (computed per rule on first use)
        self._walk_reps: dict[int, list[int]] = {}
        self._maybe_empty: list[bool] | None = None  # per rule, on the first shared walk
        self._shared_keys: list[RuleKey] = rule_keys(self.network, self.limits.max_stack_depth)
        self._shared_walks: BoundedMemo[SharedWalk] = shared_walks_for(self._builder)

    def precompute(
        self, budget_s: float | None = None, budget_work: int | None = None, *, aside: bool = False
    ) -> bool:
        """Walk the frames of the grammar's states from the root now, so that decoding steps need not.

        One state per class of states with the same walk (see
        :meth:`_walk_representative`), restrictive states first, several per
        walk; at most :data:`_PRECOMPUTE_WALKS` of them, so the memo of walks
        keeps them. A matcher state's mask is then the union of these walks and
        of the walks of deeper stack suffixes from their escape nodes (few
        nodes, done on first use).

        Parameters
        ----------
        budget_s
            Stop starting new walks once this many seconds have gone.
        budget_work
            Likewise once the walks have done this much work (see
            :meth:`~tokensieve.compile.token_masks.TokenMaskBuilder.work_done`).
        aside
            Called from a thread beside decoding: the grammar's lock is taken
            for one rule's classes or one chunk of walks at a time, and the
            interpreter lock let go between them.

        Returns
        -------
        bool
            Whether every such walk is known now.
        """
        budget = WalkBudget.bounded(self._builder, budget_work, budget_s)
        reps: set[int] = set()
        for r, start in enumerate(self._rule_start):
            with self._lock:
                self._walk_representative(start)  # the rule's classes
                reps.update(self._walk_reps[r])
            if aside:
                time.sleep(0)
            if budget is not None and budget.spent():
                return False
        with self._lock:
            head, _ = self._rule_copies.all()
            todo = [q for q in sorted(reps) if head[q] < 0 and (q, 0, b"") not in self._walks]
            permissive = self._view().permissive
        complete = len(todo) <= _PRECOMPUTE_WALKS
        todo = todo[:_PRECOMPUTE_WALKS]

        def walk(chunk: np.ndarray) -> None:
            with self._lock:
                origins = [q for q in chunk.tolist() if (q, 0, b"") not in self._walks]  # not walked on use
                if origins and not (aside and self.walk_kernel and kernel_ready() and self._in_kernel(origins)):
                    self._keep_root_walks(origins, self._root_walks(origins, _MAX_FRONTIER if len(origins) > 1 else None))
                    origins = []
            if origins:  # the kernel's walks read tables nobody changes: decoding steps go on meanwhile
                walks = self._root_walks(origins, None)
                with self._lock:
                    fresh = [i for i, q in enumerate(origins) if (q, 0, b"") not in self._walks]
                    self._keep_root_walks([origins[i] for i in fresh], [walks[i] for i in fresh])
            if aside:
                time.sleep(0)  # the interpreter lock goes to a decoding thread waiting for it

        sizes = (_PRECOMPUTE_BATCH, _PREFETCH_PERMISSIVE)
        states = np.array(todo, dtype=np.int64)
        if not walk_in_chunks(states, permissive, sizes, walk, budget):
            return False
        return complete

    def precompute_ahead(self, budget_s: float | None, budget_work: int | None) -> bool:
        """:meth:`precompute` within a budget, from a thread beside decoding (see :mod:`.background`)."""
        return self.precompute(budget_s, budget_work, aside=True)

    def _walk(
        self, g: int, start_nodes: np.ndarray | None, need_escapes: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Tokens allowed from the frame of global state ``g`` alone below ``start_nodes`` (None: the root).

        Returns the packed mask (no stop tokens) and the escape nodes (sorted, unique;
        None when ``need_escapes`` is false). Memoised per (state, start nodes).
        """
        if start_nodes is not None and start_nodes.size == 1 and start_nodes[0] == 0:
            start_nodes = None  # below the root: the same walk as from the root
        if start_nodes is None:
            key: tuple[int, int, bytes] = (g, 0, b"")
        elif start_nodes.size <= 32:
            key = (g, start_nodes.size, start_nodes.tobytes())
        else:
            known = self._digests.get(id(start_nodes))
            if known is not None and known[0] is start_nodes:
                digest = known[1]
            else:
                digest = hashlib.blake2b(start_nodes.tobytes(), digest_size=16).digest()
                self._digests[id(start_nodes)] = (start_nodes, digest)
            key = (g, start_nodes.size, digest)
        hit = self._walks.get(key)
        if hit is not None and (hit[2] is not None or not need_escapes):
            if start_nodes is None or start_nodes.size <= 32 or np.array_equal(hit[0], start_nodes):
                return hit[1], hit[2]
        if len(self._walks) >= _MAX_MEMO_WALKS:
            self._forget_walks()
        if start_nodes is None and g < self._num_static:  # (frames of members in any order: as below)
            if self.walk_kernel and kernel_ready():
                results = self._root_walks([g], None)
                self._keep_root_walks([g], results)
                return results[0]
            return self._walk_neighbourhood(g)
        mask, escapes = self._frame_walks([g], start_nodes, need_escapes)[0]
        self._walks[key] = (start_nodes, mask, escapes)
        self._walk_bytes += _nbytes(mask, escapes)
        return mask, escapes

    def _forget_walks(self) -> None:
        """Forget every memoised walk and level (a pure memo, rather than one that grows without
        bound over a long generation; the masks of interned states are kept)."""
        self._walks.clear()
        self._digests.clear()
        self._levels.clear()
        self._walk_bytes = 0

    def _walk_neighbourhood(self, g: int) -> tuple[np.ndarray, np.ndarray | None]:
        """The walk of ``g``'s frame from the root, done together with its neighbours' walks.

        The neighbours are the representatives (see :meth:`_walk_representative`)
        of the states a few bytes, calls or returns ahead whose walks are not
        known yet, up to a bound; escape nodes are found for all, so the walks
        serve every stack. A batch whose frontier grows too large is given up
        for the walk of ``g`` alone.
        """
        origins = self._neighbourhood(g)
        results = None
        if len(origins) > 1:
            try:
                results = self._root_walks(origins, _MAX_FRONTIER)
            except FrontierTooLarge:
                results = None
        if results is None:
            origins, results = [g], self._root_walks([g], None)
        self._keep_root_walks(origins, results)
        return results[0]

    def _root_walks(
        self, origins: list[int], max_frontier: int | None
    ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """The walks of ``origins``' frames from the root, with escape nodes, shared between grammars.

        A frame walk reads only the automata of the rule and of the rules it
        can call, so it is the same in every grammar whose rules there are the
        same automata (rule automata are remembered by body and limits, so
        grammars that share a rule, such as the JSON value of an object's
        other properties, have the very same arrays; see
        :func:`~tokensieve.automata.pushdown.compile_grammar_automaton`). Such
        walks are remembered per vocabulary, by the rules' arrays (held, and
        compared by identity) and the state within the rule; the others are
        walked as in :meth:`_frame_walks`, in one walk.
        """
        results: list[tuple[np.ndarray, np.ndarray | None] | None] = [None] * len(origins)
        missing: list[int] = []
        keys: list[tuple[Any, ...]] = []
        for i, g in enumerate(origins):
            r = self._rule_of[g]
            refs, _, ident = self._shared_keys[r]
            key = (ident, g - self._rule_start[r])
            keys.append(key)
            hit = self._shared_walks.get(key)
            if hit is not None and same_objects(hit[0], refs):
                results[i] = (hit[1], hit[2])
            else:
                missing.append(i)
        if missing:
            walked = self._frame_walks([origins[i] for i in missing], None, True, max_frontier)
            for i, (mask, escapes) in zip(missing, walked, strict=True):
                assert escapes is not None
                escapes.setflags(write=False)
                results[i] = (mask, escapes)
                held = self._shared_keys[self._rule_of[origins[i]]][1]
                self._shared_walks.put(keys[i], (held, mask, escapes), _nbytes(mask, escapes))
        return [res for res in results if res is not None]

    def _keep_root_walks(self, origins: list[int], results: list[tuple[np.ndarray, np.ndarray | None]]) -> None:
        """Memoise the walks of ``origins``' frames from the root (as walks and as one-frame levels)."""
        for q, (mask, escapes) in zip(origins, results, strict=True):
            self._walks[(q, 0, b"")] = (None, mask, escapes)
            self._levels[(q,)] = (mask, escapes)
            self._walk_bytes += _nbytes(mask, escapes)

    def _neighbourhood(self, g: int) -> list[int]:
        """``g`` and the representatives of the states near it whose walks are not known, breadth-first."""
        view = self._view()
        out = [g]
        taken = {g}
        loose = int(view.permissive[g])
        seen = np.zeros(view.num_states, dtype=bool)
        seen[g] = True
        frontier = np.array([g], dtype=np.int64)
        for _ in range(_PREFETCH_DEPTH):
            nxt: np.ndarray = view.out_next.take(_ranges(view.out_start.take(frontier), view.outdeg.take(frontier)))
            first = self._num_static
            called = [q for f in frontier.tolist() for edge in self._gcalls[f] for q in edge if 0 <= q < first]
            if called:
                nxt = np.concatenate([nxt, np.array(called, dtype=np.int64)])
            nxt = sorted_unique(nxt[~seen[nxt]])
            if not nxt.size:
                break
            seen[nxt] = True
            frontier = nxt
            states = nxt.tolist()
            head = self._rule_copies.of(states)[0]
            for q in states:
                if head[q] >= 0:
                    continue  # derived from its chain's first state (see rule_copies)
                rep = self._walk_representative(q)
                if rep in taken or (rep, 0, b"") in self._walks:
                    continue
                if view.permissive[rep]:
                    if loose >= _PREFETCH_PERMISSIVE:
                        continue
                    loose += 1
                taken.add(rep)
                out.append(rep)
                if len(out) >= _PREFETCH_STATES:
                    return out
        return out

    def _view(self) -> AutomatonView:
        """The global automaton as the trie walk reads it (see :meth:`_frame_walks`).

        The walk closes a subtree whole (by loops or chains) without visiting the
        nodes below, so it may miss calls, returns and escape nodes in there; that
        loses nothing: every token below is allowed already, and whatever an
        escape node inside adds on the next level lies below it as well.
        """
        view = self._view_cache
        if view is None:
            view = self._view_cache = AutomatonView(self._gtrans, self._special)
        return view

    def _frame_tables(self) -> FrameTables:
        tables = self._tables_cache
        if tables is None:
            view = self._view()
            first = self._num_static  # the static states only (see _in_kernel)
            calls = self._gcalls[:first]
            if self._frames is not None:
                calls = [tuple(e for e in edges if e[0] < first) for edges in calls]
            tables = self._tables_cache = FrameTables(
                self._gtrans, np.array(self._gaccept[:first], dtype=bool), calls, view.kernel_loops, view.utf8_kind
            )
        return tables

    def _push(self, below: int, ret: int) -> int:
        """The id of the frames pushed inside a token: those of ``below``, then ``ret``."""
        key = (below, ret)
        hit = self._push_ids.get(key)
        if hit is not None:
            return hit
        depth = self._push_depth[below] + 1
        if depth > self.limits.max_stack_depth:
            raise LimitExceeded("max_stack_depth", self.limits.max_stack_depth, "the parse stack is too deep")
        new = len(self._push_top)
        self._push_ids[key] = new
        self._push_below.append(below)
        self._push_top.append(ret)
        self._push_depth.append(depth)
        return new

    def _frame_walks(
        self,
        origins: list[int],
        start_nodes: np.ndarray | None,
        need_escapes: bool,
        max_frontier: int | None = None,
    ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """The walks of :meth:`_walk` for the frames of several global states, in one walk.

        A path of the walk is a trie node, the global state on top and an owner:
        the origin it started from and the frames pushed since (an id, 0 for
        none; see :meth:`_push`). Bytes move the top state by the global table,
        vectorised as for a DFA (:meth:`TokenMaskBuilder.walk_pairs`), which
        reports the nodes where a path meets a state that calls or may return.
        There the calls push a frame, a return pops one, and a return with
        nothing pushed is an escape node of the origin; the new paths are walked
        on below their nodes, until no path is new. Raises
        :class:`FrontierTooLarge` past ``max_frontier`` pairs in one pass.
        """
        if self.walk_kernel and kernel_ready() and self._in_kernel(origins):
            return list(frame_walks(self._frame_tables(), self._builder, origins, start_nodes, self.limits.max_stack_depth))
        return level_frame_walks(self, origins, start_nodes, need_escapes, max_frontier)

    def _in_kernel(self, origins: list[int]) -> bool:
        """Whether the kernel can walk the frames of ``origins``: it reads the static tables, so no path
        of theirs may enter a frame of members in any order (see :mod:`.unordered_frames`)."""
        if self._frames is None:
            return True
        first, rule_of, ok = self._num_static, self._rule_of, self._kernel_rules
        return all(g < first and ok[rule_of[g]] for g in origins)

    def _level(self, suffix: Config, need_escapes: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        hit = self._levels.get(suffix)
        if hit is not None and (hit[1] is not None or not need_escapes):
            return hit
        if len(self._levels) >= _MAX_MEMO_LEVELS:
            self._forget_walks()
        if len(suffix) == 1:
            g = suffix[0]
            head, room = self._rule_copies.of([g])
            if head[g] >= 0:  # a chain's first state is walked, not derived: one step
                result = self._rule_copies.narrowed(self._level((head[g],), need_escapes), room[g])
                self._levels[suffix] = result
                return result
            rep = self._walk_representative(g)
            if rep != g:
                result = self._level((rep,), need_escapes)
                self._levels[suffix] = result
                return result
        if len(suffix) == 1:
            result = self._walk(suffix[0], None, need_escapes)
        else:
            nodes = self._level(suffix[1:])[1]
            assert nodes is not None
            result = self._walk(suffix[0], nodes, need_escapes)
        self._levels[suffix] = result
        return result

    def _stack_walk(self, stack: Config, nodes: np.ndarray) -> np.ndarray:
        """The tokens the frames of ``stack`` (bottom first) allow below ``nodes``, where the frame above
        them has returned: one walk through all of them (see :func:`~tokensieve.compile.frame_walk.frame_walk`)."""
        key = (stack, nodes.size, hashlib.blake2b(nodes.tobytes(), digest_size=16).digest())
        hit = self._stack_masks.get(key)
        if hit is not None:
            return hit
        if len(self._stack_masks) >= _MAX_MEMO_WALKS:
            self._stack_masks.clear()
        mask, _ = frame_walk(
            self._frame_tables(), self._builder, stack[-1], nodes, self.limits.max_stack_depth, stack[:-1]
        )
        self._stack_masks[key] = mask
        return mask


    def _walk_representative(self, g: int) -> int:
        """A state whose walk from its frame alone equals that of global state ``g``."""
        r = self._rule_of[g]
        reps = self._walk_reps.get(r)
        if reps is None:
            net = self.network
            if self._maybe_empty is None:
                self._maybe_empty = [
                    bool(net.accepting[c][net.starts[c]]) or bool(net.calls[c][net.starts[c]])
                    for c in range(len(net.names))
                ]
            depth = int(self._builder.trie.max_depth)
            classes, computed = rule_classes(net, r, self._shared_keys[r], self._maybe_empty, depth)
            if computed:
                # their cost, as walking work (see TokenMaskBuilder.work_done): about 30 pairs a state
                self._builder.add_work(_CLASS_WORK * int(classes.size))
            reps = (classes + self._offsets[r]).tolist()
            self._walk_reps[r] = reps
        return reps[g - self._rule_start[r]]


def _nbytes(mask: np.ndarray, nodes: np.ndarray | None) -> int:
    """Bytes of a walk's mask and escape nodes."""
    return int(mask.nbytes) + (0 if nodes is None else int(nodes.nbytes))
