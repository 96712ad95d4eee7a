"""Token masks for recursive grammars: a lazily determinised pushdown walk.

A *configuration* is a stack of DFA states (tuple of global state ids, bottom
first) of a :class:`~tokensieve.automata.pushdown.RuleNetwork`. A *pushdown
state* is a closed set of configurations (closed under entering a called rule
and returning from a finished one); the empty configuration ``()`` stands for
"everything below the first frame returned". Pushdown states are interned to
integers and get a 256-entry transition row on first use, so the grammar is
determinised lazily and a matcher's state is one integer, like a regex's.

Token masks are computed by the same level-by-level trie walk as for DFAs, over
pushdown states. A walk starts from one frame ``f`` alone: tokens it decides
are independent of what lies below ``f``; at the trie nodes where the frame
returns (the *escape nodes*, where ``()`` is reached) the rest of the token
depends on the frame below, so the walk goes on from those nodes with that
frame, and so on. Results are memoised per stack suffix — the top frame alone,
then the top two, three... — so stack-dependent tokens are resolved vectorised
and only once per suffix. The mask of a matcher state is the union over its
stacks, memoised per state.
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

from .._arrays import concat_ranges as _ranges
from .._arrays import sorted_unique
from .._memo import BoundedMemo
from ..automata.blank_runs import BLANKS, IS_BLANK
from ..automata.pushdown import RuleNetwork
from ..bitmask import friendly_zeros
from ..errors import LimitExceeded
from ..limits import Limits
from .constraint import CompiledConstraint
from .frame_walk import FrameTables, frame_walk, frame_walks, kernel_ready
from .level_walk import _KeySet, level_frame_walks  # noqa: F401 - _KeySet: where it was first defined
from .shared_masks import mask_representatives
from .token_masks import AutomatonView, FrontierTooLarge, WalkBudget, walk_in_chunks
from .vocab_cache import mask_builder_for

if TYPE_CHECKING:
    from ..vocab import TokenizerInfo

__all__ = ["CompiledPushdownGrammar"]

Config = tuple[int, ...]

#: a row entry whose successor state is known to exist but is not interned yet
_PENDING = -2


#: rules of fewer states than this do not look for states with the same walks
_SHARE_MIN_STATES = 64
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
#: :meth:`CompiledPushdownGrammar.precompute` walks at most this many frames (each keeps a mask;
#: half the memo, the other half is left to the walks of decoding steps)...
_PRECOMPUTE_WALKS = _MAX_MEMO_WALKS // 2
#: ...this many restrictive ones per walk (a level of the walk costs tens of microseconds
#: whatever its width: on the JSON benchmark's 15 recursive schemas, 256 rather than 16 gave
#: 0.68 of the compile time, with per-token times unchanged or better)
_PRECOMPUTE_BATCH = 256
#: the work of finding a rule's walk classes, per state, in (trie node, state) pairs of walking
#: (a few microseconds a state)
_CLASS_WORK = 30
#: per vocabulary, the frame walks from the root of rules that grammars share (by the rule
#: automata of the rules they reach, see :meth:`CompiledPushdownGrammar._root_walks`), at most
#: this many bytes of masks and escape nodes
_SHARED_WALK_BYTES = 64 << 20
_SHARED_WALKS: weakref.WeakKeyDictionary[Any, BoundedMemo[tuple[tuple[Any, ...], np.ndarray, np.ndarray]]] = (
    weakref.WeakKeyDictionary()
)
_SHARED_WALKS_LOCK = threading.Lock()
#: the walk classes of shared rules (see :func:`walk_classes`), by the same keys
_SHARED_CLASSES: BoundedMemo[tuple[tuple[Any, ...], np.ndarray]] = BoundedMemo(max_size=16 << 20)


class CompiledPushdownGrammar(CompiledConstraint):
    """A recursive grammar compiled against one vocabulary.

    It offers the state-machine interface that :class:`~tokensieve.GrammarMatcher`
    drives (``start_state``, ``step_bytes``, ``is_accepting``, ``row``,
    ``token_mask``); states are interned sets of parse stacks.

    Parameters
    ----------
    network
        The rule network from :func:`~tokensieve.automata.pushdown.compile_grammar_automaton`.
    tokenizer_info
        The vocabulary.
    limits
        ``max_stack_depth``, ``max_stacks``, ``max_pushdown_states`` and
        ``max_mask_cache_bytes`` apply, at compile time and while decoding.
    kind, source
        What was compiled, for ``repr`` and error messages.
    unenforced
        Constraints that are reported as not enforced.
    """

    #: whether frame walks run in the JIT kernel of :mod:`.frame_walk` (once it is loaded: until then, as
    #: without it, in the numpy walk of :mod:`.level_walk`; the masks are the same)
    walk_kernel = True

    def __init__(
        self,
        network: RuleNetwork,
        tokenizer_info: TokenizerInfo,
        limits: Limits | None = None,
        *,
        kind: str = "grammar",
        source: str = "",
        unenforced: tuple[str, ...] = (),
    ) -> None:
        self.network = network
        self.tokenizer_info = tokenizer_info
        self.limits = limits or Limits()
        self.kind = kind
        self.source = source
        self.unenforced = tuple(unenforced)
        self._builder = mask_builder_for(tokenizer_info)
        self._lock = threading.RLock()
        # global state ids: rule r's state q is offsets[r] + q
        sizes = [t.shape[0] for t in network.transitions]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._offsets = offsets
        gtrans = np.full((int(offsets[-1]), 256), -1, dtype=np.int32)
        for r, t in enumerate(network.transitions):
            rows = gtrans[offsets[r] : offsets[r + 1]]
            np.add(t, np.int32(offsets[r]), out=rows, where=t >= 0, casting="unsafe")
        self._gtrans = gtrans
        accepting = np.concatenate(network.accepting).astype(bool)
        self._gaccept = accepting.tolist()
        per_state = [edges for rule_calls in network.calls for edges in rule_calls]
        calling = np.fromiter(map(bool, per_state), dtype=bool, count=len(per_state))
        # a call whose return state can only return (accepting, no byte, no call) is a tail
        # call: the callee replaces the caller's frame (return state -1), so right recursion
        # such as ``unary ::= "-" unary | ...`` does not grow the stack
        callers = np.flatnonzero(calling)
        rule_of = np.searchsorted(offsets, callers, side="right") - 1
        edges = [
            (int(c), int(offsets[s] + network.starts[s]), int(offsets[r] + ret))
            for c, r in zip(callers.tolist(), rule_of.tolist(), strict=True)
            for s, ret in per_state[c]
        ]
        returns = np.array([e[2] for e in edges], dtype=np.int64)
        final = accepting[returns] & ~calling[returns] & ~(gtrans[returns] >= 0).any(axis=1)
        self._gcalls: list[tuple[tuple[int, int], ...]] = [()] * len(per_state)
        grouped: dict[int, list[tuple[int, int]]] = {}
        for (c, callee, ret), tail in zip(edges, final.tolist(), strict=True):
            grouped.setdefault(c, []).append((callee, -1 if tail else ret))
        for c, calls in grouped.items():
            self._gcalls[c] = tuple(calls)
        # states where a walk path calls or may return (see _frame_walks)
        self._special = accepting | calling
        self._view_cache: AutomatonView | None = None
        self._tables_cache: FrameTables | None = None
        self._stack_masks: dict[tuple[Config, int, bytes], np.ndarray] = {}
        # frames pushed inside one token: id -> (frames below, return state); 0 is none
        self._push_ids: dict[tuple[int, int], int] = {}
        self._push_below: list[int] = [0]
        self._push_top: list[int] = [-1]
        self._push_depth: list[int] = [0]
        # interned pushdown states
        self._ids: dict[frozenset[Config], int] = {}
        self._sets: list[frozenset[Config]] = []
        # the stacks each state was interned from (before closure): every other stack of
        # the state follows from them by entering or leaving rules without a byte, so it
        # can consume no token they cannot, and masks are the union over the seeds only
        self._seeds: list[frozenset[Config]] = []
        cap = 64
        self._table = np.full((cap, 256), -1, dtype=np.int32)
        self._known = np.zeros(cap, dtype=bool)
        self._escape = np.zeros(cap, dtype=bool)
        self._closures: dict[frozenset[Config], int] = {}
        # rows with successors not interned yet: state -> (byte -> group or -1, group -> stacks)
        self._pending: dict[int, tuple[np.ndarray, list[set[Config]]]] = {}
        # memo: stack suffix -> (packed mask, escape nodes); state -> packed mask
        self._levels: dict[Config, tuple[np.ndarray, np.ndarray | None]] = {}
        # (state, start nodes) -> (start nodes, mask, escape nodes); large node sets keyed by a digest
        self._walks: dict[tuple[int, int, bytes], tuple[Any, np.ndarray, np.ndarray | None]] = {}
        self._digests: dict[int, tuple[np.ndarray, bytes]] = {}
        self._walk_bytes = 0  # the memoised walks' masks and escape nodes
        self._masks: OrderedDict[int, np.ndarray] = OrderedDict()
        self._mask_bytes = 0
        # shared walks: per rule, each state's representative among the states whose walks
        # from their frame alone are the same (computed per rule on first use)
        self._rule_of: list[int] = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes).tolist()
        self._rule_start: list[int] = offsets[:-1].tolist()
        self._walk_reps: dict[int, list[int]] = {}
        self._maybe_empty: list[bool] | None = None  # per rule, on the first shared walk
        self._shared_keys = _rule_keys(network, self.limits.max_stack_depth)
        shared = _SHARED_WALKS.get(self._builder)
        if shared is None:
            with _SHARED_WALKS_LOCK:
                shared = _SHARED_WALKS.setdefault(self._builder, BoundedMemo(max_size=_SHARED_WALK_BYTES))
        self._shared_walks = shared
        # blank-run copies: the first state of each one's chain, the blanks still allowed, the
        # rules whose states are done, and which states read a blank (see _copies)
        self._copy_tables: tuple[list[int], list[int], list[bool], list[bool]] | None = None
        self._start = self._intern_closed({(int(offsets[network.root] + network.starts[network.root]),)})
        self._stop_words = np.zeros(self._builder.num_words, dtype=np.int32)
        for stop in self._builder.stop_token_ids.tolist():
            self._stop_words.view(np.uint32)[stop >> 5] |= np.uint32(1 << (stop & 31))

    # ------------------------------------------------------------ interface
    @property
    def start_state(self) -> int:
        """The matcher state before any output."""
        return self._start

    @property
    def vocab_size(self) -> int:
        """Width of the masks in tokens."""
        return int(self.tokenizer_info.vocab_size)

    @property
    def num_words(self) -> int:
        """Width of the masks, in ``int32`` words (``ceil(vocab_size / 32)``)."""
        return int(self._builder.num_words)

    @property
    def num_states(self) -> int:
        """Pushdown states discovered so far."""
        return len(self._sets)

    def is_accepting(self, state: int) -> bool:
        """Whether the output that led to ``state`` is a complete sentence."""
        return bool(self._escape[state])

    def row(self, state: int) -> np.ndarray:
        """``int32 (256,)``, read-only: the state after each byte of ``state`` (-1: the byte is not allowed)."""
        with self._lock:
            if not self._known[state]:
                self._fill_row(state)
            if state in self._pending:
                self._resolve(state, None)
            row = self._table[state].view()
        row.setflags(write=False)
        return row

    def step_bytes(self, state: int, data: bytes) -> int:
        """State after ``data``, or -1 when some byte leaves the language."""
        table, known = self._table, self._known
        for b in data:
            if not known[state]:
                with self._lock:
                    self._fill_row(state)
                table, known = self._table, self._known
            nxt = int(table[state, b])
            if nxt == _PENDING:
                with self._lock:
                    self._resolve(state, np.array([b]))
                table, known = self._table, self._known
                nxt = int(table[state, b])
            if nxt < 0:
                return -1
            state = nxt
        return state

    def fill_row(self, state: int, row: np.ndarray) -> None:
        """Write :meth:`token_mask` of ``state`` into ``row`` (writable ``int32``, ``ceil(V / 32)`` words)."""
        row[...] = self.token_mask(state)

    def token_mask(self, state: int) -> np.ndarray:
        """Packed ``int32`` mask of the tokens allowed in ``state`` (read-only)."""
        hit = self._masks.get(state)
        if hit is not None:
            return hit
        with self._lock:
            hit = self._masks.get(state)
            if hit is not None:
                return hit
            mask = self._compute_mask(state)  # rows placed for fast copies already
            self._masks[state] = mask
            self._mask_bytes += mask.nbytes
            while self._mask_bytes > self.limits.max_mask_cache_bytes and len(self._masks) > 1:
                _, old = self._masks.popitem(last=False)
                self._mask_bytes -= old.nbytes
            return mask

    @property
    def memory_size_bytes(self) -> int:
        """Bytes held by the automata, the interned states, the memoised walks and the masks (at most:
        a mask that is a walk's row is counted twice)."""
        view = 0 if self._view_cache is None else self._view_cache.nbytes
        tables = self._gtrans.nbytes + self._table.nbytes + self._known.nbytes + self._escape.nbytes
        return int(tables + view + self._walk_bytes + self._mask_bytes)

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
            head, _ = self._copies()
            todo = [q for q in sorted(reps) if head[q] < 0 and (q, 0, b"") not in self._walks]
            permissive = self._view().permissive
        complete = len(todo) <= _PRECOMPUTE_WALKS
        todo = todo[:_PRECOMPUTE_WALKS]

        def walk(chunk: np.ndarray) -> None:
            with self._lock:
                origins = [q for q in chunk.tolist() if (q, 0, b"") not in self._walks]  # not walked on use
                if origins and not (aside and self.walk_kernel and kernel_ready()):
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

    def stacks(self, state: int) -> frozenset[Config]:
        """The parse stacks of ``state`` (global DFA state ids, bottom first)."""
        return self._sets[state]

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild,
            (self.network, self.tokenizer_info, self.limits, self.kind, self.source, self.unenforced),
        )

    def __repr__(self) -> str:
        return (
            f"CompiledPushdownGrammar(kind={self.kind!r}, rules={len(self.network.names)}, "
            f"dfa_states={self.network.num_states}, pushdown_states={len(self._sets)})"
        )

    # -------------------------------------------------------------- states
    def _closure(self, configs: set[Config]) -> frozenset[Config]:
        out = set(configs)
        todo = list(configs)
        accept, calls = self._gaccept, self._gcalls
        max_depth, max_stacks = self.limits.max_stack_depth, self.limits.max_stacks
        while todo:
            c = todo.pop()
            if not c:
                continue
            g = c[-1]
            if accept[g]:
                d = c[:-1]
                if d not in out:
                    out.add(d)
                    todo.append(d)
            for start, ret in calls[g]:
                d = c[:-1] + (ret, start) if ret >= 0 else c[:-1] + (start,)
                if d not in out:
                    if len(d) > max_depth:
                        raise LimitExceeded("max_stack_depth", max_depth, "the parse stack is too deep")
                    out.add(d)
                    todo.append(d)
            if len(out) > max_stacks:
                raise LimitExceeded("max_stacks", max_stacks, "the grammar is too ambiguous here")
        return frozenset(out)

    def _intern_closed(self, configs: set[Config]) -> int:
        key = frozenset(configs)
        hit = self._closures.get(key)
        if hit is not None:
            return hit
        closed = self._closure(configs)
        sid = self._ids.get(closed)
        if sid is None:
            sid = len(self._sets)
            if sid >= self.limits.max_pushdown_states:
                raise LimitExceeded(
                    "max_pushdown_states", self.limits.max_pushdown_states, "too many distinct parser states"
                )
            if sid >= self._table.shape[0]:
                self._grow()
            self._ids[closed] = sid
            self._sets.append(closed)
            self._seeds.append(key)
            self._escape[sid] = () in closed
        self._closures[key] = sid
        return sid

    def _grow(self) -> None:
        cap = self._table.shape[0] * 2
        table = np.full((cap, 256), -1, dtype=np.int32)
        table[: self._table.shape[0]] = self._table
        known = np.zeros(cap, dtype=bool)
        known[: self._known.shape[0]] = self._known
        escape = np.zeros(cap, dtype=bool)
        escape[: self._escape.shape[0]] = self._escape
        self._table, self._known, self._escape = table, known, escape

    def _fill_row(self, sid: int) -> None:
        """The row of ``sid``: -1 where no byte leads, successors interned lazily.

        Bytes with the same successor stacks form a group. A group whose stacks
        (before closure) lie inside ``sid`` may lead back to ``sid`` and is
        interned now, so that the loop bytes are exact; the other groups are
        marked ``_PENDING`` and interned on first use (:meth:`_resolve`): a trie
        walk visits only some of them.
        """
        members = self._sets[sid]
        configs = [c for c in members if c]
        row = np.full(256, -1, dtype=np.int32)
        if configs:
            tops = np.array([c[-1] for c in configs], dtype=np.int64)
            cols = self._gtrans[tops]  # (k, 256)
            if len(configs) == 1:
                col = cols[0]
                bytes_live = np.flatnonzero(col >= 0)
                targets: list[set[Config]] = []
                if bytes_live.size:
                    uniq, inverse = np.unique(col[bytes_live], return_inverse=True)
                    base = configs[0][:-1]
                    targets = [{(*base, t)} for t in uniq.tolist()]
            else:
                bytes_live = np.flatnonzero((cols >= 0).any(axis=0))
                targets = []
                if bytes_live.size:
                    keys = np.ascontiguousarray(cols[:, bytes_live].T).view(
                        np.dtype((np.void, 4 * len(configs)))
                    )
                    _, first, inverse = np.unique(keys.ravel(), return_index=True, return_inverse=True)
                    for b in first.tolist():
                        column = cols[:, bytes_live[b]].tolist()
                        targets.append(
                            {c[:-1] + (t,) for c, t in zip(configs, column, strict=True) if t >= 0}
                        )
            if bytes_live.size:
                groups = np.full(256, -1, dtype=np.int32)
                groups[bytes_live] = inverse
                lazy = False
                for u, nxt in enumerate(targets):
                    if nxt <= members:
                        row[groups == u] = self._intern_closed(nxt)
                        groups[groups == u] = -1
                    else:
                        row[groups == u] = _PENDING
                        lazy = True
                if lazy:
                    self._pending[sid] = (groups, targets)
        self._table[sid] = row
        self._known[sid] = True

    def _resolve(self, sid: int, byte_values: np.ndarray | None) -> None:
        """Intern the pending successors of ``sid`` on ``byte_values`` (None: all)."""
        entry = self._pending.get(sid)
        if entry is None:
            return
        groups, targets = entry
        wanted = groups if byte_values is None else groups[byte_values]
        for u in sorted_unique(wanted[wanted >= 0]).tolist():
            target = self._intern_closed(targets[u])  # may grow the table
            where = groups == u
            self._table[sid][where] = target
            groups[where] = -1
        if not (groups >= 0).any():
            del self._pending[sid]

    def _successors(self, states: np.ndarray, byte_values: np.ndarray) -> np.ndarray:
        """``table[states, byte_values]`` as int64 with pending successors interned."""
        nxt = self._table[states, byte_values].astype(np.int64)
        pend = nxt == _PENDING
        if pend.any():
            ps, bs = states[pend], byte_values[pend]
            for s in sorted_unique(ps).tolist():
                self._resolve(s, sorted_unique(bs[ps == s]))
            nxt[pend] = self._table[ps, bs]
        return nxt

    # --------------------------------------------------------------- walks
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
        if start_nodes is None:
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
            if hit is not None and _same_objects(hit[0], refs):
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
            called = [q for f in frontier.tolist() for edge in self._gcalls[f] for q in edge if q >= 0]
            if called:
                nxt = np.concatenate([nxt, np.array(called, dtype=np.int64)])
            nxt = sorted_unique(nxt[~seen[nxt]])
            if not nxt.size:
                break
            seen[nxt] = True
            frontier = nxt
            states = nxt.tolist()
            head = self._copies_of(states)[0]
            for q in states:
                if head[q] >= 0:
                    continue  # derived from its chain's first state (see _copies)
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
            tables = self._tables_cache = FrameTables(
                self._gtrans, np.array(self._gaccept, dtype=bool), self._gcalls, view.loops, view.utf8
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
        if self.walk_kernel and kernel_ready():
            return list(frame_walks(self._frame_tables(), self._builder, origins, start_nodes, self.limits.max_stack_depth))
        return level_frame_walks(self, origins, start_nodes, need_escapes, max_frontier)

    def _level(self, suffix: Config, need_escapes: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        hit = self._levels.get(suffix)
        if hit is not None and (hit[1] is not None or not need_escapes):
            return hit
        if len(self._levels) >= _MAX_MEMO_LEVELS:
            self._forget_walks()
        if len(suffix) == 1:
            g = suffix[0]
            head, room = self._copies_of([g])
            if head[g] >= 0:  # a chain's first state is walked, not derived: one step
                result = self._narrowed(self._level((head[g],), need_escapes), room[g])
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

    def _copies(self) -> tuple[list[int], list[int]]:
        """The states of bounded blank runs whose walks are derived, not walked.

        A recursive grammar bounds a run of JSON blanks in its IR, so a rule's
        automaton counts the blanks of a run along a chain of states: every
        blank leads from one to the next, the last reads none, and they all
        leave on every other byte, accept and call exactly as the first does.
        A token read from a state of the chain spends its leading blanks along
        it, then goes on as from the first state after as many blanks; so the
        walk of a state's frame is that of the chain's first state, less the
        tokens and escape nodes whose leading run of blanks is longer than the
        blanks the state still allows (see :mod:`.blank_copies`). That holds
        only while no blank is read inside a rule called from the chain (nor
        after a callee that may read nothing): chains whose calls could are
        left as they are.

        Returns ``(head, room)``: per global state, the first state of its chain
        (-1: none, the state is walked) and the blanks it still allows.
        """
        head, room, done, _ = self._copy_state()
        for r in range(len(done)):
            if not done[r]:
                self._rule_copies(r)
        return head, room

    def _copies_of(self, states: list[int]) -> tuple[list[int], list[int]]:
        """:meth:`_copies`, filled in for the rules of ``states`` at least (each rule's chains
        stay inside it, so rules are found one at a time, when first needed)."""
        head, room, done, _ = self._copy_state()
        for g in states:
            r = self._rule_of[g]
            if not done[r]:
                self._rule_copies(r)
        return head, room

    def _copy_state(self) -> tuple[list[int], list[int], list[bool], list[bool]]:
        """(head, room, rules done, per global state whether it reads a blank)."""
        known = self._copy_tables
        if known is None:
            n = int(self._gtrans.shape[0])
            reads_blank: list[bool] = np.any(self._gtrans[:, BLANKS] >= 0, axis=1).tolist()
            known = self._copy_tables = ([-1] * n, [-1] * n, [False] * len(self.network.names), reads_blank)
        return known

    def _rule_copies(self, r: int) -> None:
        """Fill in :meth:`_copies`' tables for the states of rule ``r``."""
        head, room, done, reads_blank = self._copy_state()
        done[r] = True
        lo = self._rule_start[r]
        hi = lo + int(self.network.transitions[r].shape[0])
        trans = self._gtrans
        blank_cols = trans[lo:hi, BLANKS]
        link = blank_cols[:, 0].astype(np.int64)
        link[~(blank_cols == blank_cols[:, :1]).all(axis=1) | (link == np.arange(lo, hi))] = -1
        src = np.flatnonzero(link >= 0)
        if not (src.size and self._builder.leading_blanks is not None):
            return
        dst = link.take(src)
        src = src + lo
        other = ~IS_BLANK
        accept = np.array(self._gaccept[lo:hi], dtype=bool)
        same = (trans[src][:, other] == trans[dst][:, other]).all(axis=1)
        same &= accept.take(src - lo) == accept.take(dst - lo)
        calls = self._gcalls
        safe: dict[tuple[tuple[int, int], ...], bool] = {}  # per call list: a chain's states share one
        nxt: dict[int, int] = {}
        for a, b in zip(src[same].tolist(), dst[same].tolist(), strict=True):
            if calls[a] != calls[b]:
                continue
            ok = safe.get(calls[a])
            if ok is None:
                ok = safe[calls[a]] = self._calls_read_no_blank(a, reads_blank)
            if ok:
                nxt[a] = b
        for a in nxt:  # the blanks each state of a chain allows: its distance to the chain's end
            path: list[int] = []
            on_path: set[int] = set()
            q = a
            while q in nxt and room[q] < 0 and q not in on_path:
                path.append(q)
                on_path.add(q)
                q = nxt[q]
            left = room[q] if room[q] >= 0 else (0 if not reads_blank[q] and q not in nxt else -1)
            if left < 0:
                continue
            room[q] = left
            for p in reversed(path):
                left += 1
                room[p] = left
        # a chain's first state is no counted state's successor; its successors take it as head
        # (where chains merge, the first head to reach a state keeps it: both are exact)
        inner = {b for a, b in nxt.items() if room[a] > 0}
        for a in nxt:
            if room[a] > 0 and a not in inner:
                q = nxt[a]
                while head[q] < 0:
                    head[q] = a
                    if q not in nxt:
                        break
                    q = nxt[q]

    def _calls_read_no_blank(self, g: int, reads_blank: list[bool]) -> bool:
        """Whether no rule that state ``g`` calls can read a blank before any other byte, nor
        end without reading one (conservatively: through every call made without a byte).

        ``reads_blank``: per global state, whether it has a transition on a blank.
        """
        todo = [start for start, _ in self._gcalls[g]]
        seen = set(todo)
        while todo:
            q = todo.pop()
            if self._gaccept[q] or reads_blank[q]:
                return False
            for start, ret in self._gcalls[q]:
                for nxt in (start, ret):
                    if nxt >= 0 and nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
        return True

    def _narrowed(
        self, walk: tuple[np.ndarray, np.ndarray | None], room: int
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """A walk less its tokens and escape nodes whose leading run of blanks is over ``room``."""
        leading = self._builder.leading_blanks
        assert leading is not None  # no copies without it (see _copies)
        mask, nodes = walk
        row = leading.at_most(room)
        if row is not None:
            out = friendly_zeros(self._builder.num_words)
            np.bitwise_and(mask, row, out=out)
            out.setflags(write=False)
            mask = out
        if nodes is not None and nodes.size:
            nodes = nodes[leading.of_nodes(self._builder.trie).take(nodes) <= room]
        return mask, nodes

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
            refs, held, ident = self._shared_keys[r]
            depth = int(self._builder.trie.max_depth)
            known = _SHARED_CLASSES.get((ident, depth))
            if known is not None and _same_objects(known[0], refs):
                classes = known[1]
            else:
                classes = walk_classes(net.transitions[r], net.accepting[r], net.calls[r], self._maybe_empty, depth)
                classes.setflags(write=False)
                _SHARED_CLASSES.put((ident, depth), (held, classes), int(classes.nbytes))
                # their cost, as walking work (see TokenMaskBuilder.work_done): about 30 pairs a state
                self._builder.add_work(_CLASS_WORK * int(classes.size))
            reps = (classes + self._offsets[r]).tolist()
            self._walk_reps[r] = reps
        return reps[g - self._rule_start[r]]

    def _compute_mask(self, state: int) -> np.ndarray:
        complete = bool(self._escape[state])
        parts: list[np.ndarray] = []
        for config in self._seeds[state]:
            if not config:
                continue
            if self.walk_kernel and kernel_ready():
                mask, nodes = self._level(config[-1:], len(config) > 1)
                parts.append(mask)
                if len(config) > 1 and nodes is not None and nodes.size:
                    parts.append(self._stack_walk(config[:-1], nodes))
                continue
            for depth in range(1, len(config) + 1):
                mask, nodes = self._level(config[-depth:], depth < len(config))
                parts.append(mask)
                if nodes is None or nodes.size == 0:
                    break
        if len(parts) == 1 and not complete:
            return parts[0]  # one frame (the usual case): its walk's row as it is, read-only
        acc = friendly_zeros(self._builder.num_words)
        for mask in parts:
            np.bitwise_or(acc, mask, out=acc)
        if complete:
            np.bitwise_or(acc, self._stop_words, out=acc)
        acc.setflags(write=False)
        return acc


def _rule_keys(
    network: RuleNetwork, max_stack_depth: int
) -> list[tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]]:
    """Per rule, what its frame walks read: the arrays of the rules it can reach by calls.

    Returns, per rule, the objects (transitions, acceptance and call edges of
    each rule reached, the rule itself included), those objects as a memo
    entry holds them (see :func:`_held`), and a hashable identity: the rule's
    index, the stack bound, each reached rule's index and start, and the ids
    of those objects. What is remembered under the identity is used only while
    it holds the same objects, so an id taken over by another object matches
    nothing.
    """
    # each rule's own callees, read off its states' call edges once
    callees = [{callee for edges in rule_calls for callee, _ in edges} for rule_calls in network.calls]
    out = []
    for r in range(len(network.names)):
        seen = {r}
        todo = [r]
        while todo:
            for callee in callees[todo.pop()] - seen:
                seen.add(callee)
                todo.append(callee)
        rules = sorted(seen)
        refs = tuple(x for c in rules for x in (network.transitions[c], network.accepting[c], network.calls[c]))
        # the rule itself first: rules that call each other reach the same rules
        ident = (r, max_stack_depth, *((c, int(network.starts[c])) for c in rules), *(id(x) for x in refs))
        out.append((refs, _held(refs), ident))
    return out


def _held(objects: tuple[Any, ...]) -> tuple[Any, ...]:
    """``objects`` as a memo entry holds them: arrays by weak reference, the rest as they are.

    A remembered walk must not keep a rule's table alive (tens of megabytes for
    a large rule, against the kilobytes the memo counts); once the table is
    gone the entry matches nothing.
    """
    return tuple(weakref.ref(x) if isinstance(x, np.ndarray) else x for x in objects)


def _same_objects(held: tuple[Any, ...], objects: tuple[Any, ...]) -> bool:
    """Whether a memo entry's ``held`` objects (see :func:`_held`) are ``objects`` themselves."""
    return all(
        (h() if isinstance(h, weakref.ref) else h) is x for h, x in zip(held, objects, strict=True)
    )


def _nbytes(mask: np.ndarray, nodes: np.ndarray | None) -> int:
    """Bytes of a walk's mask and escape nodes."""
    return int(mask.nbytes) + (0 if nodes is None else int(nodes.nbytes))


def walk_classes(
    transitions: np.ndarray,
    accepting: np.ndarray,
    calls: tuple[tuple[tuple[int, int], ...], ...],
    maybe_empty: list[bool],
    depth: int,
) -> np.ndarray:
    """For each state of one rule, the first state whose walks are certainly the same.

    A walk from a frame alone allows the tokens whose bytes the frame can read
    (entering and returning from the rules it calls) and escapes at the trie
    nodes where the frame can return. Two states agree on both when they agree,
    for every byte string up to the longest token, on where they can go, where
    they accept, and which rules they call with returns that agree as well.
    Moore's refinement decides this in ``depth`` rounds: a round looks one byte
    further, and a call one byte or more, since a called rule that cannot match
    the empty string reads at least one byte. A state that calls a rule that
    may match the empty string is left in a class of its own.

    Parameters
    ----------
    transitions
        ``(S, 256)`` byte transitions of the rule (-1: none).
    accepting
        ``bool (S,)``: where the rule may return.
    calls
        ``calls[q]``: the ``(callee, return state)`` edges of state ``q``.
    maybe_empty
        Per rule of the network: whether it may match the empty string
        (a conservative answer is fine).
    depth
        The longest token, in bytes.

    Returns
    -------
    numpy.ndarray
        ``int64 (S,)``: ``rep[q] <= q``.
    """
    num_states = int(transitions.shape[0])
    if num_states < _SHARE_MIN_STATES:
        return np.arange(num_states, dtype=np.int64)
    # Encoded for the refinement of shared_masks: after the byte columns come the return
    # states of the calls, then a tag column to one extra state per initial class (whether
    # the state accepts, which rules it calls). The extra states differ from every state
    # (no tag) and from each other (self-loops on the columns of the bits of their class).
    width = max((len(edges) for edges in calls), default=0)
    kinds: dict[tuple[Any, ...], int] = {}
    kind = np.zeros(num_states, dtype=np.int64)
    returns = np.full((num_states, width), -1, dtype=np.int32)
    accept = np.asarray(accepting, dtype=bool)
    for q, edges in enumerate(calls):
        key: tuple[Any, ...] = (bool(accept[q]),)
        if edges:
            ordered = sorted(edges)
            returns[q, : len(ordered)] = [ret for _, ret in ordered]
            if any(maybe_empty[callee] for callee, _ in ordered):
                key = ("alone", q)
            else:
                key = (bool(accept[q]), *(callee for callee, _ in ordered))
        kind[q] = kinds.setdefault(key, len(kinds))
    num_kinds = len(kinds)
    bits = max(1, int(num_kinds - 1).bit_length())
    total = num_states + num_kinds
    table = np.full((total, 256 + width + 1 + bits), -1, dtype=np.int32)
    table[:num_states, :256] = transitions
    table[:num_states, 256 : 256 + width] = returns
    table[:num_states, 256 + width] = num_states + kind
    extra = np.arange(num_kinds, dtype=np.int64)
    for bit in range(bits):
        table[num_states + extra, 257 + width + bit] = np.where((extra >> bit) & 1, num_states + extra, -1)
    # the refinement's first round is the pattern of missing columns, the second sees the
    # tags: two rounds more than the bytes of a token
    reps = mask_representatives(table, np.zeros(total, dtype=bool), depth + 2)
    return reps[:num_states].astype(np.int64)


def _rebuild(
    network: RuleNetwork,
    info: TokenizerInfo,
    limits: Limits,
    kind: str,
    source: str,
    unenforced: tuple[str, ...],
) -> CompiledPushdownGrammar:
    return CompiledPushdownGrammar(network, info, limits, kind=kind, source=source, unenforced=unenforced)
