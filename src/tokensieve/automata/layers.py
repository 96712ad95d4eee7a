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

A repetition intersected with another automaton (a string of at most 254
characters in e-mail format) is built by layers too
(:mod:`~tokensieve.automata.layered_product`): a place is then a place of the
unit together with a state of the other automaton, several places begin a
unit, and a token's count adds the fewest units that lead from where it ends
to an accepting boundary. Its layers are recorded state by state
(:class:`ExplicitLayers`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._memo import BoundedMemo
from ..ir.nodes import Automaton
from .nfa import automaton_runs

__all__ = ["ExplicitLayers", "LayerCopies", "Layers", "Unit", "layers_of", "mark_layered"]


#: ``(states, bases, rooms, places, lags)``, see :meth:`Layers.derived`
Derived = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _no_derived() -> Derived:
    empty = np.zeros(0, dtype=np.int64)
    return empty, empty, empty, empty, empty


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

    def derived(self, num_states: int) -> Derived:
        """``(states, bases, rooms, places, lags)``: the states past the base layer (``int64``), by the automaton's numbers.

        ``rooms``: how many more units may begin from each (the one a state is
        inside of already begun); ``places``: its place in the unit;
        ``lags``: how many layers it lies past the last layer with a walked
        state (the base layer).
        """
        width, base = self.width, self.base_layer
        if num_states != self.max_count * width + 1 or base >= self.max_count:
            return _no_derived()
        states = np.arange((base + 1) * width, num_states, dtype=np.int64)
        layer, place = np.divmod(states, width)
        rooms = self.max_count - layer - (place != 0)
        return states, base * width + place, rooms, place, layer - base

    def unit(self, node: Automaton) -> Unit:
        """The unit of ``node``, read off its first layer."""
        return Unit.of(node, self)


@dataclass(frozen=True, eq=False)
class ExplicitLayers:
    """The derived states of a layered automaton, given state by state (see :mod:`.layered_product`).

    Attributes
    ----------
    num_states
        States of the automaton.
    states, bases, rooms, places, lags
        What :meth:`Layers.derived` returns: the states derived (``int64``),
        their base states, how many more units may begin from each, their
        places in :attr:`unit_table` (among its :attr:`Unit.counted`), and how
        many layers each lies past the last layer before it with a walked state.
    unit_table
        The layers' :class:`Unit`.
    """

    num_states: int
    states: np.ndarray
    bases: np.ndarray
    rooms: np.ndarray
    places: np.ndarray
    lags: np.ndarray
    unit_table: Unit

    def derived(self, num_states: int) -> Derived:
        """``(states, bases, rooms, places, lags)`` as :meth:`Layers.derived` says (empty unless ``num_states`` matches)."""
        if num_states != self.num_states:
            return _no_derived()
        return self.states, self.bases, self.rooms, self.places, self.lags

    def unit(self, node: Automaton) -> Unit:
        """The layers' unit (``node`` is the automaton they describe)."""
        return self.unit_table


#: the layered automata met lately (equal automata have equal layers, so content is the key); the
#: memo holds them, so it is bounded by their size too (a string of 2,000 characters is 2.5 MB)
_LAYERED: BoundedMemo[Layers | ExplicitLayers] = BoundedMemo(max_entries=512, max_size=64 << 20)


def mark_layered(node: Automaton, layers: Layers | ExplicitLayers) -> None:
    """Record that ``node`` was built by layers as ``layers`` says (only its builder may)."""
    size = len(node.runs) + len(node.accepting)
    if isinstance(layers, ExplicitLayers):
        size += sum(a.nbytes for a in layers.derived(layers.num_states))
    _LAYERED.put(node, layers, size)


def layers_of(node: Automaton) -> Layers | ExplicitLayers | None:
    """The layers of ``node`` if it was built by layers (and is still remembered), else ``None``."""
    return _LAYERED.get(node)


@dataclass(frozen=True, eq=False)
class Unit:
    """The unit of a layered repetition, read in a loop: its end is its start again.

    Attributes
    ----------
    table
        ``int16 (width, 256)``, read-only: place after each byte (-1: none).
        A byte read from a place of :attr:`begins` begins a unit.
    key
        The arrays' bytes: equal units share their per-vocabulary tables.
    begins
        ``bool (width,)``: the boundaries between units (place 0 alone, but
        for the layers of a product).
    extra
        ``int16 (width,)``: the fewest units that lead from each place to a
        boundary where the repetition may end (0 everywhere, but for the
        layers of a product).
    counted
        ``int16 (m,)``: the places that derived states may have, whose
        counts the vocabularies keep (every place, but for the layers of a
        product).
    """

    table: np.ndarray
    key: bytes
    begins: np.ndarray
    extra: np.ndarray
    counted: np.ndarray

    @classmethod
    def of_arrays(
        cls, table: np.ndarray, begins: np.ndarray, extra: np.ndarray, counted: np.ndarray | None = None
    ) -> Unit:
        """The unit of these arrays (copied read-only; ``counted``: every place by default)."""
        table = np.array(table, dtype=np.int16)
        begins = np.array(begins, dtype=bool)
        extra = np.array(extra, dtype=np.int16)
        counted = np.arange(table.shape[0], dtype=np.int16) if counted is None else np.array(counted, dtype=np.int16)
        arrays = (table, begins, extra, counted)
        for array in arrays:
            array.setflags(write=False)
        key = b"".join(a.tobytes() + len(a).to_bytes(4, "little") for a in arrays)
        return cls(table, key, begins, extra, counted)

    @property
    def slack(self) -> int:
        """The most units any place needs to end (see :attr:`extra`)."""
        return int(self.extra.max(initial=0))

    @classmethod
    def of(cls, node: Automaton, layers: Layers) -> Unit:
        """The unit of ``node``, read off its first layer."""
        width = layers.width
        src, lo, hi, dst = automaton_runs(node)
        first = int(np.searchsorted(src, width))  # the runs are sorted by source: layer 0's come first
        table = np.full((width, 256), -1, dtype=np.int16)
        for q, a, b, t in zip(*(x[:first].tolist() for x in (src, lo, hi, dst)), strict=True):
            table[q, a : b + 1] = t % width  # the next boundary is place 0 again
        begins = np.zeros(width, dtype=bool)
        begins[0] = True
        return cls.of_arrays(table, begins, np.zeros(width, dtype=np.int16))


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
    lag
        ``int32 (S,)``: how many layers a derived state lies past the last
        layer before it with a walked state (its base layer, but for the
        layers of a product).
    """

    base: np.ndarray
    room: np.ndarray
    place: np.ndarray
    unit: np.ndarray
    units: tuple[Unit, ...]
    lag: np.ndarray

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
            pad(self.base, -1), pad(self.room, 0), pad(self.place, 0), pad(self.unit, 0), self.units, pad(self.lag, 0)
        )

    def beyond(self, layers: int) -> np.ndarray | None:
        """``bool (S,)``: the derived states more than ``layers`` layers past the last layer before them
        with a walked state (``None``: none)."""
        out = (self.base >= 0) & (self.lag > layers)
        return out if out.any() else None

    def far(self, depth: int) -> np.ndarray:
        """``bool (S,)``: the derived states that no string of ``depth`` bytes can take past their room.

        Up to that depth they read as their base does. A place of a product
        may need more units to end (:attr:`Unit.extra`), so its room must
        exceed ``depth`` by its unit's :attr:`Unit.slack`.
        """
        slack = np.array([u.slack for u in self.units], dtype=np.int64)
        need = depth + slack.take(self.unit.astype(np.int64)) if slack.any() else depth
        return (self.base >= 0) & (self.room >= need)

    def bases_of(self, states: np.ndarray) -> np.ndarray:
        """``states`` (``int64``) with every derived state replaced by its base."""
        base = self.base.take(states).astype(np.int64)
        return np.where(base >= 0, base, states)
