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

This module holds the grammar, its interned states and rows; the walks and
their memos are in :mod:`.stack_walks`, the walks shared between grammars and
the walk classes in :mod:`.shared_walks`, the blank-run copies in
:mod:`.rule_copies`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

from .._arrays import sorted_unique
from ..automata.pushdown import RuleNetwork
from ..bitmask import friendly_zeros
from ..errors import LimitExceeded
from ..limits import Limits
from .constraint import CompiledConstraint
from .frame_walk import kernel_ready
from .rule_copies import RuleCopies
from .shared_walks import reachable_rules, walk_classes
from .stack_walks import Config, StackWalks
from .unordered_frames import UnorderedFrames
from .vocab_cache import mask_builder_for

if TYPE_CHECKING:
    from ..vocab import TokenizerInfo

__all__ = ["CompiledPushdownGrammar", "walk_classes"]

#: a row entry whose successor state is known to exist but is not interned yet
_PENDING = -2
#: the successors found byte by byte that are kept at most (see CompiledPushdownGrammar.step_bytes)
_MAX_SUCCESSORS = 1 << 20


class CompiledPushdownGrammar(StackWalks, CompiledConstraint):
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
        self._num_static = int(offsets[-1])
        # members in any order: frames made on first use, after the static states (see .unordered_frames)
        self._frames: UnorderedFrames | None = None
        if network.unordered:
            frames = self._frames = UnorderedFrames(network, offsets[:-1].tolist(), self._gaccept, self._gcalls)
            entries = {int(offsets[spec.rule]): frames.entry(spec.rule) for spec in network.unordered}
            for c in grouped:
                self._gcalls[c] = tuple((entries.get(start, start), ret) for start, ret in self._gcalls[c])
            self._kernel_rules = _rules_without_unordered_calls(network)
        # states where a walk path calls or may return (see _frame_walks)
        self._special = accepting | calling
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
        # successors found byte by byte, for states whose row is not filled: (state << 8) | byte -> state
        self._successors: dict[int, int] = {}
        # memo: state -> packed mask
        self._masks: OrderedDict[int, np.ndarray] = OrderedDict()
        self._mask_bytes = 0
        self._rule_of: list[int] = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes).tolist()
        self._rule_start: list[int] = offsets[:-1].tolist()
        self._init_walks()
        # blank-run copies, found per rule on first use
        self._rule_copies = RuleCopies(gtrans, self._gaccept, self._gcalls, offsets, self._rule_of, self._builder)
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
        """State after ``data``, or -1 when some byte leaves the language.

        A state whose row is filled (see :meth:`row`) is stepped by its row;
        the others byte by byte (:meth:`_successor`): a token reads a few bytes
        of a state, and filling its row of 256 costs tens of microseconds.
        """
        table, known = self._table, self._known
        for b in data:
            if not known[state]:
                nxt = self._successors.get((state << 8) | b)
                if nxt is None:
                    nxt = self._successor(state, b)
                    table, known = self._table, self._known
            else:
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

    def _successor(self, sid: int, byte: int) -> int:
        """The state after ``byte`` from ``sid`` (-1: none), interned, without filling ``sid``'s row:
        the stacks of ``sid`` whose top reads ``byte``, moved by it (as :meth:`_fill_row` finds them)."""
        with self._lock:
            gtrans = self._gtrans
            moved = set()
            first = self._num_static
            for c in self._sets[sid]:
                if c and c[-1] < first:  # (a frame of members in any order reads no byte)
                    t = int(gtrans[c[-1], byte])
                    if t >= 0:
                        moved.add((*c[:-1], t))
            nxt = self._intern_closed(moved) if moved else -1
            if len(self._successors) >= _MAX_SUCCESSORS:
                self._successors.clear()
            self._successors[(sid << 8) | byte] = nxt
            return nxt

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
        accept, calls, first, frames = self._gaccept, self._gcalls, self._num_static, self._frames
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
            for start, ret in calls[g] if g < first or frames is None else frames.calls(g):
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
        configs = [c for c in members if c and c[-1] < self._num_static]  # (frames of .unordered_frames read no byte)
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


    def _copies(self) -> tuple[list[int], list[int]]:
        """Per global state, the first state of its blank-run chain (-1: none, the state is walked)
        and the blanks it still allows (see :class:`~tokensieve.compile.rule_copies.RuleCopies`)."""
        return self._rule_copies.all()

    def _compute_mask(self, state: int) -> np.ndarray:
        complete = bool(self._escape[state])
        parts: list[np.ndarray] = []
        for config in self._seeds[state]:
            if not config:
                continue
            if self.walk_kernel and kernel_ready() and self._frames is None:
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



def _rules_without_unordered_calls(network: RuleNetwork) -> list[bool]:
    """Per rule, whether neither it nor any rule it can reach by calls calls an unordered rule (the
    kernel walks its frames: it reads the static tables only)."""
    unordered = {spec.rule for spec in network.unordered}
    return [unordered.isdisjoint(rules) for rules in reachable_rules(network)]


def _rebuild(
    network: RuleNetwork,
    info: TokenizerInfo,
    limits: Limits,
    kind: str,
    source: str,
    unenforced: tuple[str, ...],
) -> CompiledPushdownGrammar:
    return CompiledPushdownGrammar(network, info, limits, kind=kind, source=source, unenforced=unenforced)
