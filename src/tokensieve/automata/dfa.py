"""The byte DFA every constraint compiles to (the contract with ``compile/``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ByteDFA"]


@dataclass(frozen=True, eq=False)
class ByteDFA:
    """A deterministic automaton over bytes, minimal and trimmed.

    Every state is reachable from ``start`` and can reach an accepting state, so
    a byte string is a viable prefix of the language iff running it never hits
    a missing transition. The automata built by this package are also minimal
    and numbered breadth-first from the start state (``start == 0``, successors
    in byte order), so equal languages give identical tables.

    Parameters
    ----------
    transitions
        ``int32 (S, 256)``: ``transitions[s, b]`` is the state after byte ``b``
        from state ``s``, or -1 for no transition.
    accepting
        ``bool (S,)``: whether each state is accepting.
    start
        The start state.

    Notes
    -----
    The arrays are made read-only. Instances compare by identity; use
    :meth:`same_as` to compare tables.
    """

    transitions: np.ndarray
    accepting: np.ndarray
    start: int

    def __post_init__(self) -> None:
        trans = np.ascontiguousarray(self.transitions, dtype=np.int32)
        acc = np.ascontiguousarray(self.accepting, dtype=bool)
        if trans.ndim != 2 or trans.shape[1] != 256:
            raise ValueError(f"transitions must have shape (S, 256), not {trans.shape}")
        if acc.shape != (trans.shape[0],):
            raise ValueError(f"accepting must have shape ({trans.shape[0]},), not {acc.shape}")
        start = int(self.start)
        if not 0 <= start < trans.shape[0]:
            raise ValueError(f"start state {start} out of range")
        if trans.flags.writeable and trans is self.transitions:
            trans = trans.copy()
        if acc.flags.writeable and acc is self.accepting:
            acc = acc.copy()
        trans.setflags(write=False)
        acc.setflags(write=False)
        object.__setattr__(self, "transitions", trans)
        object.__setattr__(self, "accepting", acc)
        object.__setattr__(self, "start", start)

    @property
    def num_states(self) -> int:
        """Number of states."""
        return int(self.transitions.shape[0])

    def step(self, state: int, data: bytes) -> int:
        """State after reading ``data`` from ``state``, or -1 where a byte has no transition."""
        trans = self.transitions
        for byte in data:
            state = int(trans[state, byte])
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
        return np.flatnonzero(self.transitions[state] == state).astype(np.uint8)

    def same_as(self, other: ByteDFA) -> bool:
        """Whether both automata have identical tables, acceptance and start."""
        return (
            self.start == other.start
            and np.array_equal(self.transitions, other.transitions)
            and np.array_equal(self.accepting, other.accepting)
        )

    def __repr__(self) -> str:
        return f"ByteDFA(states={self.num_states}, start={self.start}, accepting={int(self.accepting.sum())})"
