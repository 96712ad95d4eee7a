"""Counted repetitions built by layers, and the states of their copies whose masks are derived.

:func:`~tokensieve.automata.counted.counted_repeat` builds ``x{m,n}`` (a JSON
string of at most ``n`` characters) as ``n`` layers of the unit's automaton:
state ``i * width + l`` is place ``l`` of the unit (0: between two units)
after ``i`` whole units, and state ``n * width`` the boundary after the last.
Two states at the same place of different layers differ only in how many
units may still begin, so once the repetition is spliced into a larger
automaton (:mod:`~tokensieve.automata.splice`), every boundary from layer
``m`` on takes the same way out (the continuation after the repetition) and
every layer reads its unit the same way.

Hence a token allowed from state ``(i, l)``, for ``i`` past a *base layer*
``b >= m``, is exactly a token allowed from ``(b, l)`` that begins no more
units than ``(i, l)`` has room for: the tokens of a copy are the base's less
those that begin too many units, a count that depends only on the token and
the place ``l`` (:mod:`tokensieve.compile.unit_needs`). :class:`LayerCopies`
records, per state of the final automaton, the base state, the room and the
place, so the compile stage walks the base layer only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._memo import BoundedMemo
from ..grammar.ir import Automaton

__all__ = ["LayerCopies", "Layers", "Unit", "layers_of", "mark_layered"]


@dataclass(frozen=True)
class Layers:
    """How an embedded automaton was built by :func:`~tokensieve.automata.counted.counted_repeat`.

    Attributes
    ----------
    width
        States per layer (the unit's states less its end, which is the next layer's boundary).
    min_count, max_count
        The repetition bounds: the boundaries of layers ``min_count`` to
        ``max_count`` accept; the last boundary is state ``max_count * width``.
    """

    width: int
    min_count: int
    max_count: int

    @property
    def base_layer(self) -> int:
        """The layer walked for the later ones: the first whose boundary accepts, never layer 0
        (whose boundary is the start, which a splice leaves out of its copies)."""
        return max(self.min_count, 1)

    def derived(self, num_states: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(states, bases, rooms, places)``: the states past the base layer (``int64``), by the automaton's numbers.

        ``rooms``: how many more units may begin from each (the one a state is
        inside of already begun); ``places``: its place in the unit.
        """
        width, base = self.width, self.base_layer
        if num_states != self.max_count * width + 1 or base >= self.max_count:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, empty
        states = np.arange((base + 1) * width, num_states, dtype=np.int64)
        layer, place = np.divmod(states, width)
        rooms = self.max_count - layer - (place != 0)
        return states, base * width + place, rooms, place


#: the layered automata met lately (equal automata have equal layers, so content is the key); the
#: memo holds them, so it is bounded by their size too (a string of 2,000 characters is 2.5 MB)
_LAYERED: BoundedMemo[Layers] = BoundedMemo(max_entries=512, max_size=64 << 20)


def mark_layered(node: Automaton, layers: Layers) -> None:
    """Record that ``node`` was built by layers as ``layers`` says (only its builder may)."""
    _LAYERED.put(node, layers, len(node.runs) + len(node.accepting))


def layers_of(node: Automaton) -> Layers | None:
    """The layers of ``node`` if it was built by layers (and is still remembered), else ``None``."""
    return _LAYERED.get(node)


@dataclass(frozen=True, eq=False)
class Unit:
    """The unit of a layered repetition, read in a loop: its end is its start again.

    Attributes
    ----------
    table
        ``int16 (width, 256)``, read-only: place after each byte (-1: none).
        Leaving place 0 begins a unit.
    key
        The table's bytes: equal units share their per-vocabulary tables.
    """

    table: np.ndarray
    key: bytes

    @classmethod
    def of(cls, node: Automaton, layers: Layers) -> Unit:
        """The unit of ``node``, read off its first layer."""
        from .nfa import automaton_runs  # (nfa imports the IR stage that builds layered automata)

        width = layers.width
        src, lo, hi, dst = automaton_runs(node)
        first = int(np.searchsorted(src, width))  # the runs are sorted by source: layer 0's come first
        table = np.full((width, 256), -1, dtype=np.int16)
        for q, a, b, t in zip(*(x[:first].tolist() for x in (src, lo, hi, dst)), strict=True):
            table[q, a : b + 1] = t % width  # the next boundary is place 0 again
        table.setflags(write=False)
        return cls(table, table.tobytes())


@dataclass(frozen=True, eq=False)
class LayerCopies:
    """Per state of an automaton: the state whose mask its own is derived from, if any.

    Attributes
    ----------
    base
        ``int32 (S,)``: the base state (-1: the state is walked as usual).
    room
        ``int32 (S,)``: how many more units may begin from the state.
    place
        ``int16 (S,)``: the state's place in its unit.
    unit
        ``int16 (S,)``: index of its unit in ``units``.
    units
        The units of the repetitions.
    """

    base: np.ndarray
    room: np.ndarray
    place: np.ndarray
    unit: np.ndarray
    units: tuple[Unit, ...]

    def padded(self, num_states: int) -> LayerCopies:
        """The same, for an automaton with states added after these (walked as usual)."""
        extra = num_states - int(self.base.size)
        if extra < 0:
            raise ValueError(f"cannot pad {self.base.size} states to {num_states}")

        def pad(a: np.ndarray, value: int) -> np.ndarray:
            out = np.concatenate([a, np.full(extra, value, dtype=a.dtype)])
            out.setflags(write=False)
            return out

        return LayerCopies(
            pad(self.base, -1), pad(self.room, 0), pad(self.place, 0), pad(self.unit, 0), self.units
        )

    def beyond(self, layers: int) -> np.ndarray | None:
        """``bool (S,)``: the derived states more than ``layers`` layers past their base layer (``None``: none).

        A state's room is the repetition's bound less its layer (less one
        inside a unit), so within a copy and place the room drops by one a
        layer: the first layer past the base has the greatest.
        """
        derived = np.flatnonzero(self.base >= 0)
        if not derived.size:
            return None
        base = self.base.take(derived).astype(np.int64)
        room = self.room.take(derived).astype(np.int64)
        top = np.zeros(self.base.size, dtype=np.int64)
        np.maximum.at(top, base, room)  # the room of the first layer past each base
        far = top.take(base) + 1 - room > layers
        if not far.any():
            return None
        out = np.zeros(self.base.size, dtype=bool)
        out[derived[far]] = True
        return out

    def bases_of(self, states: np.ndarray) -> np.ndarray:
        """``states`` (``int64``) with every derived state replaced by its base."""
        base = self.base.take(states).astype(np.int64)
        return np.where(base >= 0, base, states)
