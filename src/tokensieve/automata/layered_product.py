"""A counted repetition intersected with another automaton, built by layers.

``x{m,n} ∩ L`` (a JSON string of at most 254 characters in ``email`` format,
or with a ``pattern``) is, state by state, a layer ``i`` (units read so far)
and a *place*: a place of the unit's automaton together with a state of
``L``'s. Every layer reads the same places the same way, so the product is
one table of places, shifted layer by layer, less the states that cannot be
reached or cannot reach acceptance any more, as :mod:`.counted` builds the
repetition alone. The subset construction and minimisation of the general
product (:func:`~tokensieve.automata.ops.ir_intersect`) find the same
language state by state (8,216 states for the e-mail address, most of a
second), and lose the layers.

Kept by layers, the product's later layers derive their masks from their
base layer's (:mod:`tokensieve.automata.layers`): a token allowed from
``(i, p)`` is one allowed from ``(b, p)`` whose count, the units it begins
plus the fewest units that lead from where it ends to an accepting boundary
(:attr:`~tokensieve.automata.layers.Unit.extra`), fits the room of
``(i, p)``. A place is more than a unit's place, so a layer may have several
boundaries (one per state of ``L`` between two units), and a place may first
be reached in a layer past the repetition's base (``@`` comes after a
character at least): each place's base is the first layer, from the base
layer on, that has it. A place read alike in every layer with room for all it
may still read is one state for those layers; the layers past them, too near
the bound, derive from that state.

Near the bound, states of one layer may behave alike (their states of ``L``
differ in what no longer fits), so the result is trimmed but not always
minimal.
"""

from __future__ import annotations

import numpy as np

from .._arrays import sorted_unique
from ..ir.nodes import Automaton, Node
from ..limits import Limits
from .build import ir_to_dfa
from .dfa import ByteDFA
from .layers import ExplicitLayers, Layers, Unit, layers_of, mark_layered
from .ops import automaton_to_dfa, dfa_to_ir

__all__ = ["MAX_COUNTED", "MAX_PLACES", "layered_intersection"]

#: the most places of a layer (the searches over places take up to one round per place)
MAX_PLACES = 1024
#: the most (layer, place) pairs considered (a string of 10,000 characters with 200 places; several
#: arrays of this many entries, some of 8 bytes, are built)
MAX_PAIRS = 2_000_000
#: the most places whose states derive their masks: every vocabulary keeps, per counted place of each
#: unit it meets, a count per token (256 KB for 131k tokens) or, for a place few tokens are read from,
#: the list of those (the e-mail address: 182 places, 8 MB for 131k tokens); the others are walked
MAX_COUNTED = 256

_FAR = np.iinfo(np.int32).max
#: rows of the product's table written at a time (its temporaries: about 4 KB a row)
_BLOCK = 8192


def layered_intersection(node: Automaton, other: Node, limits: Limits | None = None) -> Automaton | None:
    """``node ∩ other`` built by layers, when ``node`` is a counted repetition built by layers.

    Parameters
    ----------
    node
        An automaton of :func:`~tokensieve.automata.counted.counted_repeat`
        with an upper bound (its layers still remembered).
    other
        Any regular IR node.
    limits
        ``max_dfa_states`` and the limits of building ``other`` apply.

    Returns
    -------
    Automaton or None
        Trimmed, numbered layer by layer and then the places read alike in
        every layer they are met in (see below), its layers marked
        (:func:`~tokensieve.automata.layers.layers_of`); ``None`` when
        ``node`` is not such a repetition, when a layer would have more
        than :data:`MAX_PLACES` places or the result more than
        ``max_dfa_states`` states, or when the intersection is empty: then
        the caller builds the product as usual.

    Notes
    -----
    A place from which ``other`` reads at most ``M`` more units (an address
    literal ``[IPv6:...]`` in an e-mail address) is read alike in every layer
    from the least count on where ``M`` units still fit: those states are one,
    outside the layers (as the minimal automaton has them), and walked as usual.
    The layers too near the bound for ``M`` units at such a place derive their
    masks from that state: it allows what they allow, and more only where a
    token needs more units than they have room for.
    """
    layers = layers_of(node)
    if not isinstance(layers, Layers):
        return None
    limits = limits or Limits()
    lang = automaton_to_dfa(other) if isinstance(other, Automaton) else ir_to_dfa(other, limits)
    places = _places(layers.unit(node).table, lang)
    if places is None:
        return None
    table, ends, begins, final = places
    extra = _extra(table, begins, final)
    live = extra < _FAR
    if not live[0]:
        return None
    if not live.all():
        table, ends, begins, final, extra = _restrict(live, table, ends, begins, final, extra)
    n, lo, k = layers.max_count, layers.min_count, table.shape[0]
    if (n + 1) * k > MAX_PAIRS:
        return None
    inner, across = _moves(table, ends, False), _moves(table, ends, True)
    room = _rooms(begins, n)
    reached, settled = _reached(inner, across, k, n)
    alive = reached & _ending(inner, across, room, extra, lo)
    # from the least count on, a place with room for the most units it can still read is read alike
    free = alive & (room >= _longest(table, begins)[None, :])
    free[:lo] = False
    layered = alive & ~free
    has_free = free.any(axis=0)
    in_layers = int(layered.sum())
    total = in_layers + int(has_free.sum())
    if not alive[0, 0] or total > limits.max_dfa_states:
        return None
    number = np.full((n + 1, k), -1, dtype=np.int64)
    number[layered] = np.arange(in_layers)
    free_number = np.full(k, -1, dtype=np.int64)
    free_number[has_free] = np.arange(in_layers, total)
    number[free] = np.broadcast_to(free_number, free.shape)[free]
    layer, place = np.nonzero(layered)  # row-major: layer by layer, the start first unless it is free
    out = np.empty((total, 256), dtype=np.int32)
    targets = number.astype(np.int32)
    for first in range(0, layer.size, _BLOCK):  # a block of rows at a time: bounded temporaries
        rows = slice(first, min(first + _BLOCK, layer.size))
        moves = table.take(place[rows], axis=0)
        nxt = layer[rows, None] + ends.take(place[rows], axis=0)
        ok = (moves >= 0) & (nxt <= n)
        out[rows] = np.where(ok, targets[np.minimum(nxt, n), np.maximum(moves, 0)], np.int32(-1))
    loose = np.flatnonzero(has_free)
    moves = table.take(loose, axis=0)
    out[layer.size :] = np.where(moves >= 0, free_number.take(np.maximum(moves, 0)), -1)
    accepting = np.concatenate(
        [begins.take(place) & final.take(place) & (layer >= lo), begins.take(loose) & final.take(loose)]
    )
    out.setflags(write=False)  # handed over as it is (ByteDFA copies a writeable table)
    built = dfa_to_ir(ByteDFA(out, accepting, int(number[0, 0])))
    derived = _derived(layered, max(lo, 1, settled), lo, has_free)
    mark_layered(built, _layers(number, free_number, layered, derived, room, begins, extra, table, total))
    return built


def _places(unit: np.ndarray, lang: ByteDFA) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The places of one layer, found breadth-first from (the unit's start, ``lang``'s start).

    Returns ``(table, ends, begins, final)``: ``int16 (k, 256)`` place after
    each byte (-1: none); ``bool (k, 256)`` whether the byte ends a unit (the
    place after it is in the next layer); ``bool (k,)`` the boundaries; and
    ``bool (k,)`` where ``lang`` accepts. ``None`` past :data:`MAX_PLACES`.
    """
    width, states = int(unit.shape[0]), lang.num_states
    follow = lang.transitions
    steps = unit.astype(np.int64)
    index = np.full(width * states, -1, dtype=np.int64)
    found = [np.array([lang.start], dtype=np.int64)]  # unit place 0 and lang's start: code lang.start
    index[lang.start] = 0
    count, frontier = 1, found[0]
    while frontier.size:
        u, q = np.divmod(frontier, states)
        a, b = steps.take(u, axis=0), follow.take(q, axis=0)
        codes = (a * states + b)[(a >= 0) & (b >= 0)]
        new = sorted_unique(codes)
        new = new[index.take(new) < 0]
        if count + new.size > MAX_PLACES:
            return None
        index[new] = np.arange(count, count + new.size)
        count += new.size
        found.append(new)
        frontier = new
    code = np.concatenate(found)
    u, q = np.divmod(code, states)
    a, b = steps.take(u, axis=0), follow.take(q, axis=0)
    ok = (a >= 0) & (b >= 0)
    table = np.where(ok, index.take(np.where(ok, a * states + b, 0)), -1).astype(np.int16)
    ends = ok & (a == 0)  # the unit's end is the next layer's boundary
    return table, ends, u == 0, np.asarray(lang.accepting, dtype=bool).take(q)


def _extra(table: np.ndarray, begins: np.ndarray, final: np.ndarray) -> np.ndarray:
    """``int64 (k,)``: the fewest units begun on the way from each place to an accepting boundary
    (:data:`_FAR`: none), by rounds of relaxation (at most one per place)."""
    dist = np.where(begins & final, 0, _FAR).astype(np.int64)
    cost = begins.astype(np.int64)[:, None]
    moves = table >= 0
    targets = np.where(moves, table, 0).astype(np.int64)
    for _ in range(table.shape[0]):
        via = np.where(moves, dist.take(targets) + cost, _FAR).min(axis=1, initial=_FAR)
        better = np.minimum(dist, np.minimum(via, _FAR))
        if np.array_equal(better, dist):
            break
        dist = better
    return dist


def _restrict(
    keep: np.ndarray,
    table: np.ndarray,
    ends: np.ndarray,
    begins: np.ndarray,
    final: np.ndarray,
    extra: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The places of ``keep`` alone (the start among them, first), the moves to the others dropped."""
    new = np.full(keep.size + 1, -1, dtype=np.int64)  # [-1]: a missing move stays missing
    new[np.flatnonzero(keep)] = np.arange(int(keep.sum()))
    sub = table[keep]
    sub = new.take(sub.astype(np.int64)).astype(np.int16)
    return sub, ends[keep] & (sub >= 0), begins[keep], final[keep], extra[keep]


def _moves(table: np.ndarray, ends: np.ndarray, across: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(source, target)`` places of the moves that end a unit (``across``) or stay in the layer."""
    pick = (table >= 0) & (ends if across else ~ends)
    src, byte = np.nonzero(pick)
    pairs = sorted_unique(src * table.shape[0] + table[src, byte])
    return np.divmod(pairs, table.shape[0])


def _closure(seen: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``seen`` and every place the moves ``src -> dst`` lead to from it (at most one round per place)."""
    seen = seen.copy()
    for _ in range(seen.size):
        more = dst[seen.take(src) & ~seen.take(dst)]
        if not more.size:
            break
        seen[more] = True
    return seen


def _reached(
    inner: tuple[np.ndarray, np.ndarray], across: tuple[np.ndarray, np.ndarray], k: int, n: int
) -> tuple[np.ndarray, int]:
    """``bool (n + 1, k)``: the places each layer reaches from the start, by the moves within a layer
    (``inner``) and into the next (``across``), see :func:`_moves`; and the first layer from which every
    layer reaches the same (``n`` when none).

    A layer's places follow from those the layer before hands over, so once
    two layers are entered alike, all the later ones are too.
    """
    out = np.zeros((n + 1, k), dtype=bool)
    entries = np.zeros(k, dtype=bool)
    entries[0] = True
    for i in range(n + 1):
        out[i] = _closure(entries, *inner)
        handed = np.zeros_like(entries)
        handed[across[1][out[i].take(across[0])]] = True
        if np.array_equal(handed, entries):
            out[i + 1 :] = out[i]
            return out, i
        entries = handed
    return out, n


def _ending(
    inner: tuple[np.ndarray, np.ndarray],
    across: tuple[np.ndarray, np.ndarray],
    room: np.ndarray,
    extra: np.ndarray,
    lo: int,
) -> np.ndarray:
    """``bool (n + 1, k)``: the places from which each layer still reaches an accepting boundary
    (``room`` from :func:`_rooms`, the moves as :func:`_reached` takes them).

    From layer ``lo`` on, every boundary where the other automaton accepts
    accepts, so a place reaches one iff its room holds its :func:`_extra`
    units; the layers before are followed back from layer ``lo``.
    """
    out = extra[None, :] <= room
    out[:lo] = False
    if lo:
        src, dst = inner
        back_src, back_dst = across
        for i in range(lo - 1, -1, -1):
            handing = np.zeros(room.shape[1], dtype=bool)
            handing[back_src[out[i + 1].take(back_dst)]] = True
            out[i] = _closure(handing, dst, src)  # the places that lead to those within the layer
    return out


def _rooms(begins: np.ndarray, n: int) -> np.ndarray:
    """``int64 (n + 1, k)``: how many more units may begin from each layer and place (the one a place
    inside a unit is in already begun)."""
    return n - np.arange(n + 1)[:, None] - (~begins)[None, :]


def _longest(table: np.ndarray, begins: np.ndarray) -> np.ndarray:
    """``int64 (k,)``: the most units begun on any way on from each place (:data:`_FAR`: no bound,
    a cycle is reached), the places that reach no cycle peeled off the ends first."""
    k = table.shape[0]
    moves = table >= 0
    targets = np.where(moves, table, 0).astype(np.int64)
    cost = begins.astype(np.int64)[:, None]
    most = np.full(k, -1, dtype=np.int64)  # -1: not known yet
    for _ in range(k + 1):
        known = most >= 0
        ready = ~known & ~(moves & ~known.take(targets)).any(axis=1)
        if not ready.any():
            break
        via = np.where(moves.take(np.flatnonzero(ready), axis=0), most.take(targets[ready]) + cost[ready], 0)
        most[ready] = via.max(axis=1, initial=0)
    return np.where(most >= 0, most, _FAR)


def _derived(layered: np.ndarray, base: int, lo: int, has_free: np.ndarray) -> np.ndarray:
    """``int64 (n + 1, k)``: each layered state's base (-1: walked), at most :data:`MAX_COUNTED` places.

    From the least count ``lo`` on, the layered states of a place read alike
    in the layers with room for all it may still read derive from that one
    state (the place's free state, code ``-2`` here): they are those too near
    the bound. The other states of the layers past ``base`` at a place that
    layer ``base`` has, walked there, derive from that layer's state. So no
    base is derived itself. When more places have derived states than may be
    counted, those with the most are kept.
    """
    n = layered.shape[0] - 1
    layer = np.arange(n + 1)[:, None]
    out = np.full(layered.shape, -1, dtype=np.int64)
    # the free state's first: a base-layer state may be one of them, and no base is derived itself
    near = layered & (layer >= lo) & has_free[None, :]
    out[near] = -2
    if base < n:
        by_base = layered & ~near & (layer > base) & (layered & ~near)[base][None, :]
        out[by_base] = base
    per_place = (out != -1).sum(axis=0)
    places = np.flatnonzero(per_place)
    if places.size > MAX_COUNTED:
        drop = places[np.argsort(-per_place[places], kind="stable")[MAX_COUNTED:]]
        out[:, drop] = -1
    return out


def _layers(
    number: np.ndarray,
    free_number: np.ndarray,
    layered: np.ndarray,
    derived: np.ndarray,
    room: np.ndarray,
    begins: np.ndarray,
    extra: np.ndarray,
    table: np.ndarray,
    total: int,
) -> ExplicitLayers:
    """The derived states (``derived``: from :func:`_derived`); the other states are walked.
    ``room``: from :func:`_rooms`."""
    empty = np.zeros(0, dtype=np.int64)
    is_derived = derived != -1
    unit_places = np.flatnonzero(is_derived.any(axis=0))
    unit = Unit.of_arrays(table, begins, extra, unit_places)
    if not unit_places.size:
        return ExplicitLayers(total, empty, empty, empty, empty, empty, unit)
    layer, place = np.nonzero(is_derived)
    # the layers with a walked state, and layer 0, where walks from before the repetition enter it
    walked = np.union1d(np.flatnonzero((layered & ~is_derived).any(axis=1)), [0])
    last_walked = walked.take(np.searchsorted(walked, layer, side="right") - 1)
    from_layer = derived[layer, place]
    bases = np.where(from_layer >= 0, number[np.maximum(from_layer, 0), place], free_number.take(place))
    arrays = (
        number[layer, place],
        bases,
        room[layer, place],
        place.astype(np.int64),
        layer - last_walked,
    )
    for array in arrays:
        array.setflags(write=False)
    return ExplicitLayers(total, *arrays, unit)
