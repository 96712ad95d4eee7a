"""The byte DFA every constraint compiles to (the contract with ``compile/``)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .blank_chains import BlankChains
    from .layers import LayerCopies

__all__ = ["ByteDFA"]

Edges = tuple[np.ndarray, np.ndarray, np.ndarray]


class ByteDFA:
    """A deterministic automaton over bytes, minimal and trimmed.

    Every state is reachable from ``start`` and can reach an accepting state, so
    a byte string is a viable prefix of the language iff running it never hits
    a missing transition. The automata built by this package are also minimal
    and numbered breadth-first from the start state (``start == 0``, successors
    in byte order), so equal languages give identical tables; the exception are
    automata with large embedded automata spliced in (see
    :mod:`tokensieve.automata.splice`): numbered skeleton first, then copy by
    copy, and not merged where several embedded automata end before the same
    continuation.

    Parameters
    ----------
    transitions
        ``int32 (S, 256)``: ``transitions[s, b]`` is the state after byte ``b``
        from state ``s``, or -1 for no transition.
    accepting
        ``bool (S,)``: whether each state is accepting.
    start
        The start state.
    edges
        Optional: the transitions as ``(source, byte, target)`` arrays sorted by
        ``(source, byte)``, when the builder has them at hand (it saves a scan
        of the table); see :meth:`edge_list`.
    blank_chains
        Optional, with a table: where the states that count a run of blanks
        are (see :func:`~tokensieve.automata.blank_runs.bound_blank_runs`,
        which makes them). The masks of those states are derived from their
        place's (:mod:`tokensieve.compile.blank_copies`), so only the maker of
        the table may give it.
    layer_copies
        Optional, with a table: the states of spliced counted repetitions
        whose masks are derived from a state of an earlier layer (see
        :mod:`~tokensieve.automata.layers`); likewise only for the table's maker.

    Notes
    -----
    The arrays are made read-only and the object is immutable. Instances
    compare by identity; use :meth:`same_as` to compare tables. An automaton
    made by :meth:`from_edges` (large choice lists) builds its ``transitions``
    table only when the attribute is first read; :meth:`edge_list` and the
    token-mask walk never need it.
    """

    __slots__ = ("_transitions", "accepting", "start", "edges", "_num_states", "blank_chains", "layer_copies")
    _transitions: np.ndarray | None
    accepting: np.ndarray
    start: int
    edges: Edges | None
    _num_states: int
    blank_chains: BlankChains | None
    layer_copies: LayerCopies | None

    def __init__(
        self,
        transitions: np.ndarray,
        accepting: np.ndarray,
        start: int,
        edges: Edges | None = None,
        blank_chains: BlankChains | None = None,
        layer_copies: LayerCopies | None = None,
    ) -> None:
        trans = np.ascontiguousarray(transitions, dtype=np.int32)
        if trans.ndim != 2 or trans.shape[1] != 256:
            raise ValueError(f"transitions must have shape (S, 256), not {trans.shape}")
        if trans.flags.writeable and trans is transitions:
            trans = trans.copy()
        trans.setflags(write=False)
        if blank_chains is not None and blank_chains.end > trans.shape[0]:
            raise ValueError(f"blank chains up to state {blank_chains.end - 1} in an automaton of {trans.shape[0]}")
        if layer_copies is not None and layer_copies.base.shape != (trans.shape[0],):
            raise ValueError(f"layer copies of {layer_copies.base.size} states in an automaton of {trans.shape[0]}")
        self._init(trans.shape[0], trans, accepting, start, edges)
        object.__setattr__(self, "blank_chains", blank_chains)
        object.__setattr__(self, "layer_copies", layer_copies)

    @classmethod
    def from_edges(cls, num_states: int, edges: Edges, accepting: np.ndarray, start: int) -> ByteDFA:
        """An automaton given by its transitions ``(source, byte, target)``, sorted by ``(source, byte)``.

        The ``(S, 256)`` table is built only if :attr:`transitions` is read.
        """
        self = cls.__new__(cls)
        self._init(int(num_states), None, accepting, start, edges)
        object.__setattr__(self, "blank_chains", None)
        object.__setattr__(self, "layer_copies", None)
        return self

    def _init(
        self,
        num_states: int,
        trans: np.ndarray | None,
        accepting: np.ndarray,
        start: int,
        edges: Edges | None,
    ) -> None:
        acc = np.ascontiguousarray(accepting, dtype=bool)
        if acc.shape != (num_states,):
            raise ValueError(f"accepting must have shape ({num_states},), not {acc.shape}")
        start = int(start)
        if not 0 <= start < num_states:
            raise ValueError(f"start state {start} out of range")
        if acc.flags.writeable and acc is accepting:
            acc = acc.copy()
        acc.setflags(write=False)
        if edges is not None:
            src, byte, dst = (np.ascontiguousarray(a, dtype=np.int64) for a in edges)
            for a in (src, byte, dst):
                a.setflags(write=False)
            edges = (src, byte, dst)
        set_ = object.__setattr__
        set_(self, "_transitions", trans)
        set_(self, "accepting", acc)
        set_(self, "start", start)
        set_(self, "edges", edges)
        set_(self, "_num_states", num_states)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        if self._transitions is None:
            return (_from_edges, (self._num_states, self.edges, self.accepting, self.start))
        return (
            ByteDFA,
            (self._transitions, self.accepting, self.start, self.edges, self.blank_chains, self.layer_copies),
        )

    @property
    def transitions(self) -> np.ndarray:
        """``int32 (S, 256)`` read-only transition table (-1: no transition)."""
        trans = self._transitions
        if trans is None:
            src, byte, dst = self.edge_list()
            trans = np.full((self._num_states, 256), -1, dtype=np.int32)
            trans[src, byte] = dst
            trans.setflags(write=False)
            object.__setattr__(self, "_transitions", trans)
        return trans

    @property
    def has_table(self) -> bool:
        """Whether the ``(S, 256)`` table exists (it is built on demand for :meth:`from_edges`)."""
        return self._transitions is not None

    def edge_list(self) -> Edges:
        """The transitions as ``int64`` arrays ``(source, byte, target)``, sorted by ``(source, byte)``."""
        edges = self.edges
        if edges is None:
            flat = self.transitions.reshape(-1)
            at = np.flatnonzero(flat >= 0)
            edges = (at >> 8, at & 255, flat[at].astype(np.int64))
            for a in edges:
                a.setflags(write=False)
            object.__setattr__(self, "edges", edges)
        return edges

    def row(self, state: int) -> np.ndarray:
        """``int32 (256,)``: the transitions of one state."""
        if self._transitions is not None:
            return self._transitions[state]
        src, byte, dst = self.edge_list()
        lo, hi = np.searchsorted(src, [state, state + 1])
        out = np.full(256, -1, dtype=np.int32)
        out[byte[lo:hi]] = dst[lo:hi]
        return out

    @property
    def num_states(self) -> int:
        """Number of states."""
        return self._num_states

    def step(self, state: int, data: bytes) -> int:
        """State after reading ``data`` from ``state``, or -1 where a byte has no transition."""
        trans = self._transitions
        for byte in data:
            state = int(trans[state, byte] if trans is not None else self.row(state)[byte])
            if state < 0:
                return -1
        return state

    def accepts(self, data: bytes) -> bool:
        """Whether ``data`` is in the language."""
        state = self.step(self.start, data)
        return state >= 0 and bool(self.accepting[state])

    def is_prefix(self, data: bytes) -> bool:
        """Whether ``data`` can be extended to a string of the language (itself included)."""
        return self.step(self.start, data) >= 0

    def self_loop_bytes(self, state: int) -> np.ndarray:
        """The bytes on which ``state`` loops to itself, as a sorted ``uint8`` array."""
        return np.flatnonzero(self.row(state) == state).astype(np.uint8)

    def same_as(self, other: ByteDFA) -> bool:
        """Whether both automata have identical tables, acceptance and start."""
        if self.start != other.start or self.num_states != other.num_states:
            return False
        if not np.array_equal(self.accepting, other.accepting):
            return False
        return all(np.array_equal(a, b) for a, b in zip(self.edge_list(), other.edge_list(), strict=True))

    def __repr__(self) -> str:
        return f"ByteDFA(states={self.num_states}, start={self.start}, accepting={int(self.accepting.sum())})"


def _from_edges(num_states: int, edges: Edges, accepting: np.ndarray, start: int) -> ByteDFA:
    return ByteDFA.from_edges(num_states, edges, accepting, start)
