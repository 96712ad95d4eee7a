"""Bounded repetitions of a unit, built as layers of its automaton instead of determinised.

``x{m,n}`` where ``x`` is one *unit* (every string of ``x`` ends the unit: one
character of a JSON string, in any spelling) is a chain of ``n`` copies of the
unit's automaton, the end of each copy being the start of the next. The
subset construction finds this chain state by state (6,376 states for a JSON
string of at most 255 characters, 0.6 s); here it is one table of one layer,
shifted ``n`` times with array operations.
"""

from __future__ import annotations

import numpy as np

from .._memo import memoized
from ..errors import LimitExceeded
from ..ir.nodes import Automaton, Node, repeat
from ..limits import Limits
from .blank_runs import BLANK
from .build import ir_to_dfa
from .dfa import ByteDFA
from .layers import Layers, mark_layered
from .ops import dfa_to_ir

__all__ = ["blank_run", "counted_repeat"]


def counted_repeat(
    item: Node, min_count: int, max_count: int | None, limits: Limits | None = None
) -> Automaton | None:
    """The language ``item{min_count,max_count}`` as an embedded automaton, built by layers.

    Parameters
    ----------
    item
        Regex IR of the unit.
    min_count, max_count
        Repetition bounds (``max_count=None``: unbounded).
    limits
        ``max_dfa_states`` bounds the result.

    Returns
    -------
    Automaton or None
        Minimal, numbered layer by layer (not breadth-first); ``None`` when ``item`` is not a unit this construction
        handles: its automaton must have one accepting state, without
        transitions, and a start state that is not accepting and that no
        transition leads back to. Then the caller builds the repetition
        as usual.

    Raises
    ------
    ValueError
        For negative or inverted bounds.
    LimitExceeded
        When the result has more than ``max_dfa_states`` states.
    """
    if min_count < 0 or (max_count is not None and max_count < min_count):
        raise ValueError(f"bad repetition bounds {min_count}..{max_count}")
    limits = limits or Limits()
    dfa = ir_to_dfa(item, limits)
    return _counted(dfa, min_count, max_count, limits)


def _counted(unit: ByteDFA, min_count: int, max_count: int | None, limits: Limits) -> Automaton | None:
    table = unit.transitions
    accepting = np.asarray(unit.accepting, dtype=bool)
    ends = np.flatnonzero(accepting)
    start = unit.start
    if len(ends) != 1 or (table[ends[0]] >= 0).any() or accepting[start] or (table == start).any():
        return None
    end = int(ends[0])
    # one layer: its boundary (the unit's start) at 0, the other inner states after it; the
    # unit's end is the next layer's boundary, ``width`` states further
    inner = [q for q in range(table.shape[0]) if q not in (start, end)]
    width = len(inner) + 1
    local = np.full(table.shape[0] + 1, -1, dtype=np.int64)  # local[-1] == -1 keeps missing transitions
    local[start] = 0
    local[inner] = np.arange(1, width)
    local[end] = width
    layer = local[np.concatenate([table[[start]], table[inner]])]
    loop = max_count is None and min_count == 0
    layers = 1 if loop else (min_count if max_count is None else max_count)
    total = layers * width + (0 if loop else 1)
    if total > limits.max_dfa_states:
        raise LimitExceeded(
            "max_dfa_states", limits.max_dfa_states, f"a repetition of {layers} units needs {total} states"
        )
    # the runs of one layer (source, lo, hi, target), repeated once per layer with the states
    # shifted: no table of the whole repetition is built here (51 MB for 2,000 characters)
    boundary = np.full((1, 256), -1, dtype=np.int64)
    one = dfa_to_ir(ByteDFA(np.concatenate([layer, boundary]), np.zeros(width + 1, dtype=bool), 0))
    runs = np.frombuffer(one.runs, dtype="<i4").reshape(-1, 4).astype(np.int64)
    shift = np.arange(layers, dtype=np.int64)[:, None, None] * width * np.array([1, 0, 0, 1])
    parts = [(runs[None] + shift).reshape(-1, 4)]
    if loop:
        parts[0][parts[0][:, 3] == width, 3] = 0  # a unit ends where it began: any number of them
    elif max_count is None:
        # after the last required unit, further units start from that unit's states and end
        # back at the accepting boundary (the inner states of one more layer would be the same)
        last = layers * width
        again = runs[runs[:, 0] == 0] + np.array([last, 0, 0, last - width])
        parts.append(again)
    acc = np.zeros(total, dtype=np.uint8)
    first = min_count * width
    acc[first::width] = 1
    node = Automaton(total, 0, acc.tobytes(), np.concatenate(parts).astype("<i4").tobytes())
    if max_count is not None:
        mark_layered(node, Layers(width, min_count, max_count))
    return node


@memoized(max_entries=128)
def cached_counted_repeat(
    item: Node, min_count: int, max_count: int | None, limits: Limits
) -> Automaton | None:
    """:func:`counted_repeat`, remembered per process (IR nodes and limits are immutable)."""
    return counted_repeat(item, min_count, max_count, limits)


def blank_run(most: int, limits: Limits | None = None) -> Node:
    """A run of at most ``most`` JSON blanks written into the IR: one automaton of ``most + 1`` states."""
    return cached_counted_repeat(BLANK, 0, most, limits or Limits()) or repeat(BLANK, 0, most)
