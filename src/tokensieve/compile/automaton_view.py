"""The arrays a walk of the token trie needs from one automaton (:class:`AutomatonView`).

Built once per automaton: the outgoing edges of every state in CSR form (the
copies of layout places read from their places), the bytes each state loops on
and its class chains (for the subtree closure and the class jumps of
:mod:`tokensieve.compile.token_masks`), and which states are permissive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._arrays import concat_ranges as _ranges
from ..automata.blank_chains import IS_BLANK, BlankChains, CopyRows
from .char_chains import PLAIN_SET, chain_lengths, class_chains
from .utf8_closure import HIGH_BYTES, UTF8_DOT_TABLE, utf8_closed_states

if TYPE_CHECKING:
    from ..automata import ByteDFA

__all__ = ["JUMP_MIN_BYTES", "PERMISSIVE_LOOP_BYTES", "PERMISSIVE_OUT_BYTES", "AutomatonView"]

_ONE = np.uint64(1)

#: a state that loops on at least this many bytes counts as permissive (large masks, costly walks) ...
PERMISSIVE_LOOP_BYTES = 16
#: ... and so does one with at least this many outgoing bytes
PERMISSIVE_OUT_BYTES = 128
#: a state whose class (loop bytes or chain class) has at least this many bytes starts its walk
#: past the class (see :mod:`.class_jumps`), as deep as its chain goes (a loop: to the end)
JUMP_MIN_BYTES = 16


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
    utf8_kind, kernel_loops : numpy.ndarray
        For the JIT kernels' subtree closure only: ``int8 (S,)``, 1 for the
        :attr:`utf8` states, 2 for those that take every character but the line
        separators U+2028 and U+2029 back to themselves (a ``pattern``'s ``.``),
        0 for the others; and :attr:`loops` with the high bytes of both kinds
        (the same array when there is no state of kind 2). The numpy walk knows
        kind 1 only: a shortcut it does not take gives it the same masks.
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
        cand = np.zeros(0, dtype=np.int64)  # the looping states that read every lead byte, but the utf8 ones
        if self.trans is not None and self.has_loops:
            trans = self.trans
            lead = trans.take(np.flatnonzero(self.has_loop) * 256 + 0xC2)
            cand = np.flatnonzero(self.has_loop)[lead >= 0]
            cand = cand[trans.take(cand * 256 + 0xF4) >= 0]
            if cand.size:
                self.utf8[cand] = utf8_closed_states(trans.reshape(s, 256), cand)
                self.loops[self.utf8] |= HIGH_BYTES
                cand = cand[~self.utf8[cand]]
        self.has_utf8 = bool(self.utf8.any())
        self.utf8_kind = self.utf8.astype(np.int8)
        self.kernel_loops = self.loops
        if cand.size:
            assert self.trans is not None
            dot = cand[utf8_closed_states(self.trans.reshape(s, 256), cand, UTF8_DOT_TABLE)]
            if dot.size:
                self.utf8_kind[dot] = 2
                self.kernel_loops = self.loops.copy()
                self.kernel_loops[dot] |= HIGH_BYTES
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
