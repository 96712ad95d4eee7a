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
  the "hub" nodes with at least ``_HUB_MIN_CHILDREN`` children (the root and
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
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._arrays import concat_ranges as _ranges
from .._arrays import or_distinct_bits
from ..automata.blank_chains import IS_BLANK, BlankChains, CopyRows
from ..bitmask import friendly_zeros
from ..vocab.trie import TokenTrie
from .char_chains import PLAIN_SET, chain_lengths, class_chains, node_chain_needs, node_suffix_needs
from .class_jumps import ClassJump, ClassRegion
from .utf8_closure import HIGH_BYTES, utf8_closed_states, utf8_subtree_ok

if TYPE_CHECKING:
    from ..automata import ByteDFA
    from .blank_copies import LeadingBlanks
    from .shared_masks import LongTokens
    from .unit_needs import UnitNeeds

__all__ = [
    "PERMISSIVE_LOOP_BYTES",
    "PERMISSIVE_OUT_BYTES",
    "AutomatonView",
    "FrontierTooLarge",
    "MaskBatch",
    "TokenMaskBuilder",
    "WalkBudget",
]

_ONE = np.uint64(1)
_EMPTY = np.zeros(0, dtype=np.int64)
_EMPTY_BOOL = np.zeros(0, dtype=bool)

#: nodes with at least this many children get a row in the dense child table
_HUB_MIN_CHILDREN = 4
#: a state that loops on at least this many bytes counts as permissive (large masks, costly walks) ...
PERMISSIVE_LOOP_BYTES = 16
#: ... and so does one with at least this many outgoing bytes
PERMISSIVE_OUT_BYTES = 128
#: a state whose class (loop bytes or chain class) has at least this many bytes starts its walk
#: past the class (see :mod:`.class_jumps`), as deep as its chain goes (a loop: to the end)
JUMP_MIN_BYTES = 16
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


class WalkBudget:
    """When compile-time walks stop: after some work, or some time, whichever comes first.

    Parameters
    ----------
    builder
        The mask builder whose :meth:`TokenMaskBuilder.work_done` measures the work.
    work
        Work units (see :meth:`TokenMaskBuilder.work_done`) from now; ``None``: no bound.
    seconds
        Seconds from now; ``None``: no bound. A bound in work gives the same
        result on every machine, one in time only on machines as fast.
    """

    def __init__(self, builder: TokenMaskBuilder, work: int | None = None, seconds: float | None = None) -> None:
        self._meter = builder.work_done
        self._until = None if work is None else builder.work_done() + work
        self._deadline = None if seconds is None else time.perf_counter() + seconds

    @classmethod
    def bounded(cls, builder: TokenMaskBuilder, work: int | None, seconds: float | None) -> WalkBudget | None:
        """The budget of ``work`` units or ``seconds``, ``None`` when neither bounds anything."""
        if work is None and seconds is None:
            return None
        return cls(builder, work, seconds)

    def spent(self) -> bool:
        """Whether the work or the time is used up."""
        if self._deadline is not None and time.perf_counter() > self._deadline:
            return True
        return self._until is not None and self._meter() >= self._until


class FrontierTooLarge(Exception):
    """A walk of several states would hold too many (trie node, state) pairs: walk fewer at once."""


def walk_in_chunks(
    states: np.ndarray,
    permissive: np.ndarray,
    sizes: tuple[int, int],
    walk: Callable[[np.ndarray], None],
    budget: WalkBudget | None = None,
) -> bool:
    """Call ``walk`` on chunks of ``states``: restrictive states first, then permissive ones.

    ``sizes``: states per chunk, restrictive and permissive (a permissive
    state's frontier holds thousands of nodes: fewer of them per walk). A chunk
    whose walk raises :class:`FrontierTooLarge` is walked again in halves (a
    walk of one state must not raise). Returns ``False`` if the ``budget``
    was spent before every chunk was walked.
    """
    flags = permissive.take(states)
    strict, loose = states[~flags], states[flags]
    chunks = [strict[i : i + sizes[0]] for i in range(0, strict.size, sizes[0])]
    chunks += [loose[i : i + sizes[1]] for i in range(0, loose.size, sizes[1])]
    chunks.reverse()
    while chunks:
        if budget is not None and budget.spent():
            return False
        chunk = chunks.pop()
        try:
            walk(chunk)
        except FrontierTooLarge:
            half = chunk.size // 2
            chunks += [chunk[half:], chunk[:half]]
    return True


def _step(trans: np.ndarray, state: np.ndarray, byte: np.ndarray | int) -> np.ndarray:
    """The successors of ``state`` on ``byte`` in a flattened table (``-1``: none, also from ``-1``)."""
    ok = state >= 0
    return np.where(ok, trans.take((np.where(ok, state, 0) << 8) | byte), -1)


def _live_cells(flat: np.ndarray, rows: int, unread: np.ndarray | None) -> np.ndarray:
    """``(state << 8) | byte`` of the transitions of the first ``rows`` states, but those of ``unread`` ones."""
    if unread is None:
        return np.flatnonzero(flat[: rows * 256] >= 0)
    read = np.flatnonzero(~unread[:rows])
    at = np.flatnonzero(flat.reshape(-1, 256).take(read, axis=0) >= 0)
    return (read.take(at >> 8) << 8) | (at & 255)


def _edges_with_copies(
    flat: np.ndarray, chains: BlankChains, unread: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(source, byte, target)`` of the flattened table: the copies' edges made from their places'.

    The states before the copies are read off the table (but the ``unread``
    ones, which get no edges). Copy ``c`` of a place has its place's edges but
    for the blanks: where the place's lead to its first copy, the copy's lead
    to copy ``c + 1``, and the last copy has none.
    """
    first, most, places = chains.first, chains.most, chains.places
    at = _live_cells(flat, first, unread)
    deg = np.bincount(at >> 8, minlength=first)
    start = np.zeros(first + 1, dtype=np.int64)
    np.cumsum(deg, out=start[1:])
    per_copy = np.repeat(deg.take(places), most)
    pos = at.take(_ranges(np.repeat(start.take(places), most), per_copy))  # the places' edges, in the table
    number = np.repeat(np.tile(np.arange(1, most + 1, dtype=np.int64), places.size), per_copy)
    blank = IS_BLANK.take(pos & 255)
    keep = ~(blank & (number == most))
    c_src = np.repeat(np.arange(first, chains.end, dtype=np.int64), per_copy)[keep]
    pos, number, blank = pos[keep], number[keep], blank[keep]
    n, total = at.size, at.size + pos.size
    src = np.empty(total, dtype=np.int64)
    byte = np.empty(total, dtype=np.uint8)
    target = np.empty(total, dtype=flat.dtype)
    flat.take(at, out=target[:n])
    flat.take(pos, out=target[n:])
    target[n:][blank] += number[blank].astype(flat.dtype)
    np.copyto(byte[:n], at, casting="unsafe")  # the low byte of the flat index
    np.copyto(byte[n:], pos, casting="unsafe")
    np.right_shift(at, 8, out=src[:n])
    src[n:] = c_src
    return src, byte, target



class AutomatonView:
    """The arrays a trie walk needs from one automaton, built once per automaton.

    Parameters
    ----------
    transitions
        ``int32 (S, 256)`` transition table, -1 for no transition; ``None`` for
        an automaton known only by its ``edges`` (then every frontier element is
        expanded from the automaton side).
    accepting
        ``bool (S,)``.
    edges
        Optional ``(source, byte, target)`` arrays sorted by ``(source, byte)``
        (see :meth:`ByteDFA.edge_list`); derived from the table when absent.
    copies
        Optional: where the table's copies of layout places are (see
        :class:`~tokensieve.automata.blank_runs.BlankChains`). Their rows are
        then not read: their edges and chains come from their places'.
    unread
        Optional ``bool (S,)``: states that no walk reaches, whose rows are
        not read either: they get no edges and no chains (the later layers of
        counted strings, see :meth:`CompiledGrammar._unreached <tokensieve.compile.compiled_grammar.CompiledGrammar>`).

    Attributes
    ----------
    trans : numpy.ndarray or None
        The table flattened (``trans[(s << 8) | b]``), if there is one.
    outdeg, out_start, out_byte, out_next : numpy.ndarray
        Outgoing edges of every state in CSR form, sorted by byte.
    has_loops : bool
        Whether any state loops on some byte (enables the subtree closure).
    loops : numpy.ndarray
        ``uint64 (S, 4)``: the bytes each state loops on; for a :attr:`utf8` state
        also the bytes 0x80-0xFF.
    utf8 : numpy.ndarray
        ``bool (S,)``: states that loop on some byte and take every well-formed
        UTF-8 character back to themselves (and refuse ill-formed bytes), such as
        the inside of a free JSON string. Below a trie node whose tokens are all
        well-formed UTF-8 from a character boundary, their high bytes count as
        loop bytes for the subtree closure.
    permissive : numpy.ndarray
        ``bool (S,)``: states that loop on at least :data:`PERMISSIVE_LOOP_BYTES`
        bytes or leave on at least :data:`PERMISSIVE_OUT_BYTES`; their masks are
        large and their walks the costly ones.
    """

    def __init__(
        self,
        transitions: np.ndarray | None,
        accepting: np.ndarray,
        edges: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
        copies: BlankChains | None = None,
        unread: np.ndarray | None = None,
    ) -> None:
        self.accepting = np.asarray(accepting, dtype=bool)
        s = self.accepting.shape[0]
        self.num_states = s
        self.trans: np.ndarray | None = None
        if transitions is not None:
            flat = np.ascontiguousarray(transitions, dtype=np.int32).reshape(-1)
            if s >= 1 << 23:  # keep (state << 8) | byte inside int32 arithmetic
                flat = flat.astype(np.int64)
            self.trans = flat
        self._copy_rows: CopyRows | None = None
        if copies is not None and edges is None and self.trans is not None:
            self._copy_rows = copies.copy_rows(self.trans.reshape(s, 256))
        with_copies = self._copy_rows is not None
        if unread is not None and (edges is not None or self.trans is None or not unread.any()):
            unread = None
        if unread is not None:
            self._copy_rows = (self._copy_rows or CopyRows.all_rows(s)).without(unread)
        if edges is None:
            if self.trans is None:
                raise ValueError("an automaton needs its transition table or its edges")
            # as narrow as they fit: millions of edges in a large schema automaton
            flat = self.trans
            self.out_next: np.ndarray
            self.out_byte: np.ndarray
            if with_copies:
                assert copies is not None
                src, self.out_byte, self.out_next = _edges_with_copies(flat, copies, unread)
            else:
                at = _live_cells(flat, s, unread)
                self.out_next = flat.take(at)  # the table's integers
                self.out_byte = at.astype(np.uint8)  # the low byte of the flat index
                src = np.right_shift(at, 8, out=at)
        else:
            src, self.out_byte, self.out_next = (np.asarray(a, dtype=np.int64) for a in edges)
        self.outdeg = np.bincount(src, minlength=s).astype(np.int64)
        self.out_start = np.zeros(s + 1, dtype=np.int64)
        np.cumsum(self.outdeg, out=self.out_start[1:])
        on_loop = self.out_next == src
        self.has_loops = bool(on_loop.any())
        self.loops = np.zeros((s, 4), dtype=np.uint64)
        if self.has_loops:
            lb = self.out_byte[on_loop]
            np.bitwise_or.at(self.loops, (src[on_loop], lb >> 6), _ONE << (lb & 63).astype(np.uint64))
        raw_loops = self.loops.copy()
        loop_bytes = np.bitwise_count(self.loops).sum(axis=1)
        self.has_loop = loop_bytes > 0
        self.permissive = (loop_bytes >= PERMISSIVE_LOOP_BYTES) | (self.outdeg >= PERMISSIVE_OUT_BYTES)
        # states that take every UTF-8 character back to themselves (inside a free string):
        # their loop set gains the bytes 0x80-0xFF, valid only below nodes whose tokens are well-formed
        self.utf8 = np.zeros(s, dtype=bool)
        if self.trans is not None and self.has_loops:
            trans = self.trans
            lead = trans.take(np.flatnonzero(self.has_loop) * 256 + 0xC2)
            cand = np.flatnonzero(self.has_loop)[lead >= 0]
            cand = cand[trans.take(cand * 256 + 0xF4) >= 0]
            if cand.size:
                self.utf8[cand] = utf8_closed_states(trans.reshape(s, 256), cand)
                self.loops[self.utf8] |= HIGH_BYTES
        self.has_utf8 = bool(self.utf8.any())
        self.not_loop = ~self.loops
        # subtree closure: by the loop bytes of a looping state, by its class chain for the others
        self.closes = self.has_loop
        self.not_closing = self.not_loop
        self.close_len: np.ndarray | None = None
        # class jumps (see :mod:`.class_jumps`): per state, the depth its class is jumped to (0: none)
        self.jump_depth = np.zeros(s, dtype=np.int16)
        self.jump_class = np.zeros((0, 4), dtype=np.uint64)
        self.chain_next = np.zeros(0, dtype=np.int64)
        if self.trans is not None and s:
            classes, length, self.chain_next = class_chains(self.trans.reshape(s, 256), raw_loops, self._copy_rows)
            chain = (length > 0) & ~self.has_loop
            if chain.any():
                self.closes = self.has_loop | chain
                self.not_closing = self.not_loop.copy()
                self.not_closing[chain] = ~classes[chain]
                self.close_len = np.where(self.has_loop, np.iinfo(np.int16).max, length).astype(np.int16)
            wide = np.bitwise_count(classes).sum(axis=1) >= JUMP_MIN_BYTES
            self.jump_depth[wide & self.has_loop] = np.iinfo(np.int16).max
            self.jump_depth[wide & chain] = length[wide & chain]
            self.jump_class = classes
        self.has_closures = bool(self.closes.any())
        self._chains: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        #: per state, the longest of its three chains (set with :attr:`chains`)
        self.chain_reach: np.ndarray | None = None
        self._jump_utf8: np.ndarray | None = None
        self._nbytes: tuple[tuple[bool, bool], int] | None = None  # memo of nbytes

    @property
    def chains(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Per state, the plain ASCII, plain character and blank chain lengths (see :mod:`.char_chains`).

        Built on first use; ``None`` for an automaton without a table.
        """
        if self._chains is None and self.trans is not None:
            self._chains = chain_lengths(self.trans.reshape(self.num_states, 256), self._copy_rows)
            self.chain_reach = np.maximum(np.maximum(self._chains[0], self._chains[1]), self._chains[2])
        return self._chains

    @property
    def jump_utf8(self) -> np.ndarray:
        """``bool (S,)``: the class jumps of these states take every well-formed character as a step.

        The :attr:`utf8` loops, and the class chains whose every step also takes
        each multi-byte character to the next state (the character chain of
        :func:`~tokensieve.compile.char_chains.chain_lengths` at least as long,
        and a plain byte in the class, so that both chains go through the same
        states): their jump depths count characters. Built on first use.
        """
        if self._jump_utf8 is None:
            out = self.utf8.copy()
            chain = (self.jump_depth > 0) & ~self.has_loop
            if chain.any() and self.chains is not None:
                plain = (self.jump_class & PLAIN_SET).any(axis=1)
                out |= chain & plain & (self.chains[1] >= self.jump_depth)
            self._jump_utf8 = out
        return self._jump_utf8

    @classmethod
    def of(cls, dfa: ByteDFA, unread: np.ndarray | None = None) -> AutomatonView:
        """The view of a :class:`ByteDFA` (without building its table if it has none; ``unread`` as above)."""
        if dfa.has_table:  # the edges from the table, narrow (the DFA's own list is int64)
            return cls(dfa.transitions, dfa.accepting, copies=dfa.blank_chains, unread=unread)
        return cls(None, dfa.accepting, dfa.edge_list())

    @property
    def is_permissive(self) -> bool:
        """Whether some state is permissive (see :attr:`permissive`)."""
        return bool(self.permissive.any())

    @property
    def num_edges(self) -> int:
        """Number of transitions."""
        return int(self.out_byte.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held by the view's own arrays (the table it was given is not counted)."""
        key = (self._chains is not None, self._jump_utf8 is not None)  # the arrays built on first use
        known = self._nbytes
        if known is not None and known[0] == key:
            return known[1]
        arrays = {id(v): v for k, v in vars(self).items() if isinstance(v, np.ndarray) and k != "trans"}
        arrays.update((id(a), a) for a in self._chains or ())
        total = sum(int(a.nbytes) for a in arrays.values() if a.base is None)
        self._nbytes = (key, total)
        return total


class MaskBatch:
    """Masks of several states, computed by one walk.

    A mask with many tokens is packed at once (``dense``); the others are kept
    as lists of ``(word, bit)`` pairs (token ``t`` is word ``t >> 5``, bit
    ``1 << (t & 31)``) and packed on demand by :meth:`mask` (a couple of
    microseconds), or all together by :meth:`pack` (then ``packed`` holds
    every row).

    Attributes
    ----------
    states : numpy.ndarray
        ``int64 (k,)``: the states, in the order they were requested.
    accepting : numpy.ndarray
        ``bool (k,)``.
    starts, words, bits : numpy.ndarray
        The allowed tokens of ``states[i]`` are ``words[starts[i]:starts[i + 1]]``
        (``int64``) and ``bits[...]`` (``uint32``), in no particular order, stop
        tokens not included; empty for the dense states.
    dense : dict
        index into ``states`` -> packed ``int32 (num_words,)`` row, stop tokens included.
    """

    def __init__(
        self,
        states: np.ndarray,
        accepting: np.ndarray,
        starts: np.ndarray,
        words: np.ndarray,
        bits: np.ndarray,
        dense: dict[int, np.ndarray],
        builder: TokenMaskBuilder,
    ) -> None:
        self.states = states
        self.accepting = accepting
        self.starts = starts
        self.words = words
        self.bits = bits
        self.dense = dense
        self.packed: np.ndarray | None = None
        self._num_words = builder.num_words
        self._stop_words = builder._stop_words
        self._stop_bits = builder._stop_bits
        self._stop_pairs = builder.stop_pairs

    def __len__(self) -> int:
        return int(self.states.shape[0])

    @property
    def nbytes(self) -> int:
        """Memory held by the token lists, or by the packed rows once :meth:`pack` ran."""
        if self.packed is not None:
            return int(self.packed.nbytes)
        return int(self.starts.nbytes + self.words.nbytes + self.bits.nbytes)

    def pack(self) -> None:
        """Pack every mask now (:meth:`pack_all`) and keep the rows; the token lists are dropped."""
        packed = self.pack_all()
        packed.setflags(write=False)
        self.packed = packed
        self.words = self.bits = _EMPTY
        self.starts = np.zeros(1, dtype=np.int64)
        self.dense = {}

    def listed(self, index: int) -> bool:
        """Whether the mask of ``states[index]`` is kept as a token list (packed by :meth:`mask` on each call)."""
        return self.packed is None and index not in self.dense

    def mask(self, index: int) -> np.ndarray:
        """The packed ``int32 (num_words,)`` row of ``states[index]`` (a new array for token lists)."""
        if self.packed is not None:
            return self.packed[index]
        row = self.dense.get(index)
        if row is not None:
            return row
        out = friendly_zeros(self._num_words, np.uint32)
        self._write_list(index, out)
        return out.view(np.int32)

    def _write_list(self, index: int, out: np.ndarray) -> np.ndarray:
        """OR the token list of ``states[index]`` into the zeroed ``uint32`` row ``out``.

        Stop tokens are added where the state is accepting. Returns the list's
        words (a slice of :attr:`words`, without the stop words).
        """
        lo, hi = int(self.starts[index]), int(self.starts[index + 1])
        words = self.words[lo:hi]
        or_distinct_bits(out, words, self.bits[lo:hi])
        if self.accepting[index]:
            for word, bit in self._stop_pairs:
                out[word] |= bit
        return words

    def pairs(self, index: int) -> int:
        """How many ``(word, bit)`` pairs the token list of ``states[index]`` holds."""
        return int(self.starts[index + 1] - self.starts[index])

    def fill_sparse(self, index: int, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Write the listed mask of ``states[index]`` into ``row``; return it as ``(words, bits)``.

        ``row`` is ``int32 (num_words,)`` and is cleared first. The result
        rewrites the same row by ``row[words] = bits`` after clearing it: a
        word listed twice carries its whole union both times. Stop tokens are
        included where the state is accepting. Meant for short lists (the bits
        are merged by :func:`or_distinct_bits`, a couple of microseconds).
        """
        row.fill(0)
        words = self._write_list(index, row.view(np.uint32))
        if self.accepting[index] and self._stop_pairs:
            words = np.concatenate((words, self._stop_words))
        else:
            words = words.copy()
        return words, row.take(words)

    def pack_all(self) -> np.ndarray:
        """Every mask of the batch as one packed ``int32 (k, num_words)`` array."""
        k, w = len(self), self._num_words
        stride = -(-w // 16) * 16  # rows start on 64-byte boundaries
        padded = friendly_zeros((k, stride), np.uint32)
        flat = padded.reshape(-1)
        out = padded[:, :w]
        if self.words.size:
            owner = np.repeat(np.arange(k, dtype=np.int64) * stride, np.diff(self.starts))
            or_distinct_bits(flat, owner + self.words, self.bits)
        rows = np.flatnonzero(self.accepting)
        if rows.size and self._stop_words.size:
            np.bitwise_or.at(
                flat,
                (rows[:, None] * stride + self._stop_words[None, :]).reshape(-1),
                np.tile(self._stop_bits, rows.size),
            )
        for index, row in self.dense.items():
            out[index] = row.view(np.uint32)
        return out.view(np.int32)


class TokenMaskBuilder:
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
        self.trie = trie
        self.vocab_size = int(vocab_size)
        self.num_words = (self.vocab_size + 31) // 32
        self.stop_token_ids = np.asarray(sorted(set(int(i) for i in stop_token_ids)), dtype=np.int64)
        n = trie.num_nodes
        self._child_start = trie.child_start.astype(np.int64)
        self._child_ids = trie.child_ids.astype(np.int64)
        self._child_byte = trie.node_byte.astype(np.int64)[self._child_ids]
        self._nchild = np.diff(self._child_start)
        self._token_lo = trie.token_lo.astype(np.int64)
        self._token_mid = trie.token_mid.astype(np.int64)
        self._token_hi = trie.token_hi.astype(np.int64)
        self._sorted_tokens = trie.sorted_tokens.astype(np.int64)
        self._num_tokens = trie.num_tokens
        self._sub_bytes = trie.subtree_bytes

        # dense child tables of the hub nodes (the root always has one)
        is_hub = self._nchild >= _HUB_MIN_CHILDREN
        is_hub[0] = True
        hubs = np.flatnonzero(is_hub)
        self._hub_row = np.full(n, -1, dtype=np.int64)
        self._hub_row[hubs] = np.arange(hubs.size, dtype=np.int64)
        parent_of_entry = np.repeat(np.arange(n, dtype=np.int64), self._nchild)
        row = self._hub_row[parent_of_entry]
        in_hub = row >= 0
        self._hub_table = np.full(hubs.size * 256, -1, dtype=np.int64)
        self._hub_table[(row[in_hub] << 8) | self._child_byte[in_hub]] = self._child_ids[in_hub]
        self._root_table = self._hub_table[:256]
        # child bytes of the other nodes, padded with 256 (matches no byte)
        few = _HUB_MIN_CHILDREN - 1
        self._few_bytes = np.full((n, few), 256, dtype=np.int16)
        rank = np.arange(self._child_ids.size, dtype=np.int64) - self._child_start[parent_of_entry]
        small = ~in_hub
        self._few_bytes[parent_of_entry[small], rank[small]] = self._child_byte[small]
        self._cids_pad = np.concatenate([self._child_ids, np.full(few, -1, dtype=np.int64)])

        self._stop_words = self.stop_token_ids >> 5
        self._stop_bits = np.left_shift(np.uint32(1), (self.stop_token_ids & 31).astype(np.uint32))
        #: ``(word, bit)`` of the stop tokens, merged per word, as Python ints
        merged: dict[int, int] = {}
        for word, bit in zip(self._stop_words.tolist(), self._stop_bits.tolist(), strict=True):
            merged[word] = merged.get(word, 0) | bit
        self.stop_pairs = tuple(merged.items())
        # word index and bit of every token, in byte-sorted order
        self._sorted_word = self._sorted_tokens >> 5
        self._sorted_bit = np.left_shift(np.uint32(1), (self._sorted_tokens & 31).astype(np.uint32))
        # the tail of a walk in plain Python (see _finish_in_python): the nodes below each node, itself
        # included (preorder numbering: a subtree is an id range)
        self._nodes_below = trie.subtree_end.astype(np.int64) - np.arange(n, dtype=np.int64)
        #: per trie node: its path ends on a character boundary and every token below is well-formed UTF-8
        self.utf8_ok = utf8_subtree_ok(trie)
        #: per trie node, the plain ASCII, plain character and blank chains that allow its subtree whole
        self.chain_needs = node_chain_needs(trie)
        #: per trie node, the shortest of those chains (no chain of a state shorter than it closes the node)
        self.chain_need_min = np.minimum(np.minimum(self.chain_needs[0], self.chain_needs[1]), self.chain_needs[2])
        #: per trie node, the class chain that allows its subtree whole (the bytes below it permitting)
        self.suffix_need = node_suffix_needs(trie)
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

    # ------------------------------------------------------------ automata
    # ------------------------------------------------------------------ walk
    def walk_ranges(
        self,
        automaton: AutomatonView,
        states: Sequence[int] | np.ndarray,
        max_frontier: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Allowed token slices of several states, from one walk.

        ``max_frontier`` bounds the (trie node, state) pairs a walk of several
        states may hold in all; past it :class:`FrontierTooLarge` is raised so
        the caller can walk fewer states at a time (a walk of one state is
        bounded by the trie and never raises).

        Returns
        -------
        (owner, lo, hi)
            ``int64`` arrays: the tokens ``sorted_tokens[lo[i]:hi[i]]`` are
            allowed in ``states[owner[i]]``. The slices of one state are
            disjoint; they come in no particular order.
        """
        own, lo, hi, _ = self._walk_origins(automaton, np.asarray(states, dtype=np.int64), max_frontier, False)
        return own, lo, hi

    def _walk_origins(
        self, a: AutomatonView, origins: np.ndarray, max_frontier: int | None, jump: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, ClassJump]]:
        """:meth:`walk_ranges`, and with ``jump`` the states with a wide class start past it.

        The last value maps the index of each such state to its :class:`ClassJump`,
        whose ``allowed`` tokens are not among the slices.
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
                for index, cj in self._jump_groups(a, origins, depth):
                    node, state, owner = self._escape_pairs(a, origins.take(index), index, cj)
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

    def _jump_groups(
        self, a: AutomatonView, origins: np.ndarray, depth: np.ndarray
    ) -> list[tuple[np.ndarray, ClassJump]]:
        """The origins with a class jump (indices into ``origins``), grouped by their :class:`ClassJump`."""
        index = np.flatnonzero(depth)
        states = origins.take(index)
        key = np.empty((index.size, 6), dtype=np.uint64)
        key[:, :4] = a.jump_class.take(states, axis=0)
        key[:, 4] = depth.take(index).astype(np.uint64)
        key[:, 5] = a.jump_utf8.take(states)
        if index.size == 1:
            group = np.zeros(1, dtype=np.int64)
        else:
            _, group = np.unique(key.view(np.dtype((np.void, key.shape[1] * 8))).ravel(), return_inverse=True)
            group = group.reshape(-1)
        order = np.argsort(group, kind="stable")
        bounds = np.flatnonzero(np.diff(group.take(order), prepend=-1)).tolist() + [index.size]
        out = []
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            members = index.take(order[lo:hi])
            row = key[order[lo]]
            cj = self.class_jump(row[:4], int(row[4]), bool(row[5]))
            out.append((members, cj))
        return out

    def _escape_pairs(
        self, a: AutomatonView, states: np.ndarray, owners: np.ndarray, cj: ClassJump
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The (escape node, state, owner) triples the walks of ``states`` (one class jump) start from.

        See :mod:`.class_jumps`; ``owners[i]`` is the owner of ``states[i]``'s triples.
        """
        trans = a.trans
        assert trans is not None
        loop = a.has_loop.take(states)
        parts: list[tuple[np.ndarray, np.ndarray]] = []  # (target rows, owners)
        if loop.any():
            looping = np.flatnonzero(loop) if not loop.all() else None
            some = states if looping is None else states.take(looping)
            got = trans.take((some[:, None] << 8) | cj.byte)
            if cj.broken.size:  # a free string refuses a byte that breaks a character (is_utf8_closed)
                got[:, cj.broken] = -1
            parts.append((got, owners if looping is None else owners.take(looping)))
        if not loop.all():
            along = np.flatnonzero(~loop) if loop.any() else None
            some = states if along is None else states.take(along)
            # the chain's states after 0, 1, ... steps
            steps = int(cj.prefix.max(initial=0))
            chain = np.empty((some.size, steps + 1), dtype=np.int64)
            chain[:, 0] = some
            for j in range(steps):  # a jump goes no deeper than the chain: no -1 is met
                chain[:, j + 1] = a.chain_next.take(chain[:, j])
            before = chain.take(cj.prefix, axis=1)
            got = trans.take((before << 8) | cj.byte)
            if cj.broken.size:  # from the state before the begun character, through its bytes
                parent, node_byte = self.trie.node_parent, self.trie.node_byte
                for i in cj.broken.tolist():
                    path = []
                    n = int(cj.node[i])
                    for _ in range(int(cj.inner[i]) + 1):
                        path.append(int(node_byte[n]))
                        n = int(parent[n])
                    s = before[:, i]
                    for b in reversed(path):
                        s = _step(trans, s, b)
                    got[:, i] = s
            parts.append((got, owners if along is None else owners.take(along)))
        nodes, targets, owned = [], [], []
        for got, own in parts:
            ok = got >= 0
            if got.shape[0] == 1:
                nodes.append(cj.node[ok[0]])
                owned.append(np.full(nodes[-1].size, own[0], dtype=np.int64))
            else:
                nodes.append(np.broadcast_to(cj.node, got.shape)[ok])
                owned.append(np.repeat(own.astype(np.int64), ok.sum(axis=1)))
            targets.append(got[ok])
        if len(parts) == 1:
            return nodes[0].astype(np.int64), targets[0].astype(np.int64, copy=False), owned[0]
        return (
            np.concatenate(nodes).astype(np.int64),
            np.concatenate(targets).astype(np.int64, copy=False),
            np.concatenate(owned),
        )

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

        The walk goes on below each start pair as in :meth:`walk_ranges` (the
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
            The allowed slices as in :meth:`walk_ranges`, tagged with their
            pair's owner, then the event pairs.
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
        """The level-by-level walk from a frontier of (node, state, owner) triples (see :meth:`walk_ranges`)."""
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

    def _finish_in_python(
        self,
        a: AutomatonView,
        node: np.ndarray,
        state: np.ndarray,
        owner: np.ndarray,
        single: bool,
        chains: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
        events: np.ndarray | None = None,
        report: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        """Every (node, owner) pair reached below the given pairs (themselves included), depth first.

        Returns the nodes, the end of each one's slice of ``sorted_tokens`` and
        the owners, and with ``events`` the (node, state, owner) pairs met whose
        state is in ``events`` (the given pairs only with ``report``). With
        ``chains`` (:attr:`AutomatonView.chains`), a subtree a chain allows
        whole (a run of blanks in the indentation) is one slice, and its events
        are not looked for, as in the numpy levels; the loop closures are not
        taken (they are rare this deep), which gives the same tokens, and the
        events met below them are reported as well.
        """
        assert a.trans is not None
        # memoryviews: single entries read as Python ints, without numpy's per-call cost
        trans, start, ids, byte = a.trans.data, self._child_start.data, self._child_ids.data, self._child_byte.data
        token_mid, token_hi = self._token_mid.data, self._token_hi.data
        owners = [0] * node.size if single else owner.tolist()
        stack = list(zip(node.tolist(), state.tolist(), owners, strict=True))
        met: list[tuple[int, int, int]] | None = None
        event = None
        if events is not None:
            event = events.data
            met = [p for p in stack if event[p[1]]] if report else []
        out_nodes: list[int] = []
        out_ends: list[int] = []
        out_owners: list[int] = []
        pop, push = stack.pop, stack.append
        if chains is not None:
            ascii_len, char_len, blank_len = (c.data for c in chains)
            ascii_need, char_need, blank_need = (c.data for c in self.chain_needs)
        while stack:
            n, q, o = pop()
            out_nodes.append(n)
            out_owners.append(o)
            first, last = start[n], start[n + 1]
            if chains is not None and first < last:
                if blank_need[n] <= blank_len[q] or ascii_need[n] <= ascii_len[q] or char_need[n] <= char_len[q]:
                    out_ends.append(token_hi[n])
                    continue
            out_ends.append(token_mid[n])
            row = q << 8
            for k in range(first, last):
                t = trans[row | byte[k]]
                if t >= 0:
                    push((ids[k], t, o))
                    if event is not None and event[t]:
                        assert met is not None
                        met.append((ids[k], t, o))
        found = None
        if met is not None:
            pairs = np.array(met, dtype=np.int64).reshape(-1, 3)
            found = (pairs[:, 0].copy(), pairs[:, 1].copy(), pairs[:, 2].copy())
        return (
            np.array(out_nodes, dtype=np.int64),
            np.array(out_ends, dtype=np.int64),
            np.array(out_owners, dtype=np.int64),
            found,
        )

    def _expand_by_automaton(
        self,
        a: AutomatonView,
        node: np.ndarray,
        state: np.ndarray,
        owner: np.ndarray,
        single: bool,
        hub: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Children of frontier elements, by the state's outgoing edges (``hub``: rows of hub nodes, if all are)."""
        deg = a.outdeg.take(state)
        pos = _ranges(a.out_start.take(state), deg)
        byte = a.out_byte.take(pos)
        parent = np.repeat(node if hub is None else hub, deg)
        kid = self._child(parent, byte) if hub is None else self._hub_table.take((parent << 8) | byte)
        ok = kid >= 0
        new_owner = owner if single else np.repeat(owner, deg)[ok]
        return kid[ok], a.out_next.take(pos)[ok], new_owner

    def _child(self, parent: np.ndarray, byte: np.ndarray) -> np.ndarray:
        """Child of each ``parent`` node along ``byte`` (-1 where there is none)."""
        hub = self._hub_row.take(parent)
        is_hub = hub >= 0
        n_hub = int(np.count_nonzero(is_hub))
        if n_hub == parent.size:
            return self._hub_table.take((hub << 8) | byte)
        kid = np.full(parent.size, -1, dtype=np.int64)
        if n_hub:
            h = np.flatnonzero(is_hub)
            kid[h] = self._hub_table.take((hub.take(h) << 8) | byte.take(h))
            few = np.flatnonzero(~is_hub)
            p, b = parent.take(few), byte.take(few)
        else:
            few, p, b = None, parent, byte
        # nodes with fewer than _HUB_MIN_CHILDREN children: compare with each child byte
        rows = self._few_bytes.take(p, axis=0)
        found = np.full(p.size, -1, dtype=np.int64)
        for j in range(rows.shape[1]):
            found[rows[:, j] == b] = j
        hit = found >= 0
        got = np.where(hit, self._cids_pad.take(self._child_start.take(p) + np.maximum(found, 0)), -1)
        if few is None:
            return got
        kid[few] = got
        return kid

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

    def ranges_to_bool(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Boolean row over token ids for the union of sorted-token slices."""
        allowed = np.zeros(self.num_words * 32, dtype=bool)
        if lo.size == 0:
            return allowed
        lengths = hi - lo
        total = int(lengths.sum())
        if total * 4 < self._num_tokens:
            allowed[self._sorted_tokens[_ranges(lo, lengths)]] = True
        else:
            n = self._num_tokens
            diff = np.bincount(lo, minlength=n + 1)[: n + 1] - np.bincount(hi, minlength=n + 1)[: n + 1]
            inside = np.cumsum(diff[:n]) > 0
            allowed[self._sorted_tokens] = inside
        return allowed

    def pack(self, allowed: np.ndarray, accepting: bool) -> np.ndarray:
        """Pack a boolean row into int32 words, adding stop tokens if ``accepting``."""
        if accepting and self.stop_token_ids.size:
            allowed[self.stop_token_ids] = True
        return np.packbits(allowed, bitorder="little").view(np.int32)
