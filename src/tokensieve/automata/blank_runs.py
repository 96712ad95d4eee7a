"""Bounded runs of JSON blanks, counted into a DFA built with unbounded ones.

A JSON Schema's flexible layout allows a run of at most ``N`` blanks
(``[ \\t\\n\\r]``) between any two tokens. Written as ``[ \\t\\n\\r]{0,N}`` in the
IR, each of the four to six places around every member is a chain of
``N + 1`` states that the subset construction, the splicing and the
minimisation all visit (``N = 32``: a third of the compile time of a typical
schema). Built with ``[ \\t\\n\\r]*`` instead, each place is one state that
loops on the blanks; :func:`bound_blank_runs` then unrolls every such loop into
its chain with array operations.

A state that loops on all four blanks is a layout place: inside a JSON string
tab, line feed and carriage return are always escaped, so no string state
loops on them. The run is counted from the first blank of the place: a blank
that leads into the loop state from another state is the run's first, so it
leads to the first copy. That is exact when the state it leaves was not
reached on a blank (a run never spans two places); :func:`bound_blank_runs`
checks it, and returns ``None`` otherwise.

The bound is on every maximal run of layout blanks, which is what the grammar
states wherever two places are never adjacent (the JSON layouts here). Where
they are (as in ``[ ]`` written as ``"[" ws ws "]"``), a grammar with ``{0,N}``
per place would allow ``2N``; the unrolled automaton allows ``N``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import LimitExceeded
from ..limits import Limits
from .blank_chains import BLANK, BLANKS, IS_BLANK, BlankChains, CopyRows
from .dfa import ByteDFA
from .layers import LayerCopies

__all__ = [
    "BLANK",
    "BLANKS",
    "IS_BLANK",
    "BlankChains",
    "CopyRows",
    "LayoutPlaces",
    "RunsNotCountable",
    "blank_run_states",
    "bound_blank_runs",
    "layout_places",
    "unroll_blank_runs",
]

class RunsNotCountable(Exception):
    """A blank leads into a layout place from a state reached on a blank (see :func:`bound_blank_runs`)."""


def bound_blank_runs(dfa: ByteDFA, most: int, limits: Limits | None = None) -> ByteDFA | None:
    """``dfa`` with every loop on the four blanks limited to runs of at most ``most`` blanks.

    Parameters
    ----------
    dfa
        An automaton whose layout places loop on ``[ \\t\\n\\r]``.
    most
        Longest run of blanks (at least 0).
    limits
        ``max_dfa_states`` bounds the result.

    Returns
    -------
    ByteDFA or None
        States ``0 .. S - 1`` are ``dfa``'s (a loop state stands for its place
        before any blank), followed by ``most`` copies of each loop state, one
        per blank read, described by its ``blank_chains`` (:class:`BlankChains`);
        ``dfa`` itself when it has no loop on the blanks.
        ``None`` when a blank leads into a loop from a state that was itself
        reached on a blank (the run would start before the place).

    Raises
    ------
    ValueError
        For a negative ``most``.
    LimitExceeded
        When the result would have more than ``max_dfa_states`` states.

    See Also
    --------
    unroll_blank_runs : the same, written into a table made with room for the copies.
    """
    if most < 0:
        raise ValueError(f"the longest run of blanks must be at least 0, not {most}")
    table = np.asarray(dfa.transitions)
    places = layout_places(table)
    if places is None:
        return None
    if not places.size:
        return dfa
    num_states = table.shape[0]
    out = np.empty((blank_run_states(num_states, places.size, most, limits), 256), dtype=np.int32)
    out[:num_states] = table
    return unroll_blank_runs(out, num_states, places, dfa.accepting, dfa.start, most, dfa.layer_copies)


@dataclass(frozen=True, eq=False)
class LayoutPlaces:
    """The states of a table that loop on the four blanks, with what the unrolling reads of the others.

    Attributes
    ----------
    places
        ``int64 (P,)``, sorted: the states that loop on every blank.
    on_blanks
        ``int64 (S, 4)``: the table's columns of the blanks.
    loops
        ``bool (S,)``: whether each state is a place.
    """

    places: np.ndarray
    on_blanks: np.ndarray
    loops: np.ndarray

    @property
    def size(self) -> int:
        """The number of places."""
        return int(self.places.size)


def layout_places(table: np.ndarray) -> LayoutPlaces | None:
    """The layout places of ``table`` (``(S, 256)``), or ``None`` when a run of blanks could start before one.

    A blank into a place from a state that was itself reached on a blank
    would start the run before the place (see the module's notes).
    """
    num_states = table.shape[0]
    ids = np.arange(num_states, dtype=np.int64)
    on_blanks = table[:, BLANKS].astype(np.int64)
    loops = (on_blanks == ids[:, None]).all(axis=1)
    places = np.flatnonzero(loops)
    if places.size:
        into_place = (
            (on_blanks >= 0) & loops.take(np.maximum(on_blanks, 0)) & ~loops[:, None]
        )  # a run's first blank
        reached_on_blank = np.zeros(num_states, dtype=bool)
        reached_on_blank[on_blanks[(on_blanks >= 0) & (on_blanks != ids[:, None])]] = True
        if reached_on_blank[into_place.any(axis=1)].any():
            return None
    return LayoutPlaces(places, on_blanks, loops)


def blank_run_states(num_states: int, places: int, most: int, limits: Limits | None = None) -> int:
    """The states of an automaton of ``num_states`` with ``most`` copies of each of its ``places``.

    Raises
    ------
    LimitExceeded
        When that is more than ``max_dfa_states``.
    """
    limits = limits or Limits()
    total = num_states + places * most
    if total > limits.max_dfa_states:
        raise LimitExceeded(
            "max_dfa_states",
            limits.max_dfa_states,
            f"{places} places of up to {most} blanks need {total} states",
        )
    return total


def unroll_blank_runs(
    out: np.ndarray,
    num_states: int,
    places: LayoutPlaces,
    accepting: np.ndarray,
    start: int,
    most: int,
    layer_copies: LayerCopies | None = None,
) -> ByteDFA:
    """:func:`bound_blank_runs` in place: ``out`` holds the automaton and has room for the copies.

    Parameters
    ----------
    out
        ``int32 (num_states + places.size * most, 256)``, writeable: the
        automaton in its first ``num_states`` rows. Written in place and handed
        over, read-only, as the result's table.
    num_states
        The automaton's states.
    places
        :func:`layout_places` of ``out[:num_states]``, with at least one place.
    accepting, start, layer_copies
        The automaton's.
    most
        Longest run of blanks (at least 0).

    Returns
    -------
    ByteDFA
        As :func:`bound_blank_runs` returns it.
    """
    on_blanks, loops, places_at = places.on_blanks, places.loops, places.places
    if out.shape != (num_states + places_at.size * most, 256):
        raise ValueError(
            f"a table of {out.shape} rows has no room for {places_at.size} places of {most} blanks"
        )
    target = np.maximum(on_blanks, 0)
    to_place = (on_blanks >= 0) & loops.take(target)  # a blank into a place (its own loop included)
    accepting = np.asarray(accepting, dtype=bool)
    if most == 0:
        out[:num_states, BLANKS] = np.where(to_place, -1, on_blanks)
        out.setflags(write=False)  # handed over as it is (ByteDFA copies a writeable table)
        return ByteDFA(out, accepting, start, layer_copies=layer_copies)
    # copy c (1 .. most) of place k is state num_states + k * most + c - 1
    first_copy = np.full(num_states, -1, dtype=np.int64)
    first_copy[places_at] = num_states + np.arange(places_at.size, dtype=np.int64) * most
    # every blank into a place reads the run's next blank
    out[:num_states, BLANKS] = np.where(to_place, first_copy.take(target), on_blanks)
    copies = out[num_states:].reshape(places_at.size, most, 256)
    copies[:] = out[places_at][:, None, :]  # a copy leaves its place as the place does
    after = num_states + np.arange(places_at.size * most, dtype=np.int64).reshape(places_at.size, most) + 1
    after[:, -1] = -1  # the last copy reads no more blanks
    copies[:, :, BLANKS] = after[:, :, None]
    places_at.setflags(write=False)
    out.setflags(write=False)  # handed over as it is (ByteDFA copies a writeable table)
    chains = BlankChains(num_states, most, places_at)
    # the states of counted repetitions keep their numbers (and a copy of a place is never one)
    layered = None if layer_copies is None else layer_copies.padded(out.shape[0])
    return ByteDFA(
        out,
        np.concatenate([accepting, np.repeat(accepting[places_at], most)]),
        start,
        blank_chains=chains,
        layer_copies=layered,
    )
