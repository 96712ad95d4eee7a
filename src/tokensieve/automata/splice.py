"""Large embedded automata spliced into the automaton around them, not determinised with it.

A JSON Schema's skeleton embeds the automata of its constrained strings and whitespace runs: an
e-mail address of at most 254 characters is 31k states, and a schema with
three of them has a 100k-state DFA whose every state the subset construction
and the minimisation would visit again, although each embedded automaton is
already minimal and the quotes around it leave nothing to decide.

So :func:`plan_splice` replaces each large :class:`~tokensieve.ir.nodes.Automaton`
leaf by a two-byte *placeholder* (lead byte ``0xF5``, which UTF-8 never
contains, then the automaton's number), the small skeleton is determinised
and minimised as usual, and :func:`splice` substitutes the automata back
into the skeleton's DFA with array operations:

* a state ``s`` with a placeholder edge to a state ``t`` takes the first
  transitions of the automaton, leading into a copy of it that belongs to the
  pair (automaton, ``t``) and is shared by every ``s`` with that edge;
* the accepting states of the copy take ``t``'s transitions and acceptance
  (and, when ``t`` has placeholder edges itself, the first transitions of the
  copies ``t`` enters: one automaton right after another).

This is exact when no two of the merged transitions read the same byte (the
result is then deterministic), which holds wherever the automaton sits
between delimiters it cannot contain, as a string's content does between
quotes. Otherwise :func:`splice` names automata to leave in the IR, and the
caller tries again without them (in the end, determinises the whole IR as
before). An automaton that accepts the empty string is an optional
placeholder; one whose start state is entered again is never spliced. The
result is trimmed; it is minimal in the skeleton and inside each copy, but
states of different automata followed by the same continuation are not
merged when their futures agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._memo import BoundedMemo
from ..errors import LimitExceeded
from ..ir.nodes import (
    EMPTY,
    Alt,
    Automaton,
    ByteClass,
    Concat,
    Literal,
    Node,
    Repeat,
    alt,
    concat,
    literal,
    repeat,
)
from ..limits import Limits
from .arrays import search
from .blank_runs import (
    BLANKS,
    IS_BLANK,
    RunsNotCountable,
    blank_run_states,
    bound_blank_runs,
    layout_places,
    unroll_blank_runs,
)
from .dfa import ByteDFA
from .layers import Derived, LayerCopies, Unit, layers_of
from .nfa import automaton_edges, automaton_runs

__all__ = ["SPLICE_MIN_STATES", "SplicePlan", "plan_splice", "splice"]

#: embedded automata with at least this many states are spliced rather than determinised again
#: (a run of at most 32 blanks has 33)
SPLICE_MIN_STATES = 32
#: lead byte of a placeholder (never in UTF-8 text; ``0xF8``-``0xFF`` lead the rule markers of pushdown.py)
PLACEHOLDER_LEAD = 0xF5
_MAX_AUTOMATA = 256


@dataclass(frozen=True)
class SplicePlan:
    """The skeleton IR and the automata its placeholders stand for.

    Attributes
    ----------
    node : Node
        The IR with placeholder ``0xF5 k`` in place of automaton ``k``.
    automata : tuple of Automaton
        The spliced automata; those that accept the empty string appear as an
        optional placeholder and are spliced without it (see
        :class:`_Copyable`).
    """

    node: Node
    automata: tuple[Automaton, ...]


def plan_splice(
    node: Node, min_states: int = SPLICE_MIN_STATES, exclude: frozenset[Automaton] = frozenset()
) -> SplicePlan | None:
    """Replace the large, well-formed automata of ``node`` by placeholders.

    Parameters
    ----------
    node
        Regex IR (rule references, if any, are kept as they are).
    min_states
        Automata with fewer states stay in the IR.
    exclude
        Automata that stay in the IR whatever their size.

    Returns
    -------
    SplicePlan or None
        ``None`` when nothing is worth splicing, or when some leaf of the IR
        reads the placeholder lead byte (then placeholders would be ambiguous).
    """
    chosen: dict[Automaton, int] = {}
    done: dict[int, Node] = {}
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        item, expanded = stack.pop()
        key = id(item)
        if key in done:
            continue
        if isinstance(item, (Concat, Alt)):
            if not expanded:
                stack.append((item, True))
                stack.extend((child, False) for child in reversed(item.items) if id(child) not in done)
                continue
            items = [done[id(child)] for child in item.items]
            if all(new is old for new, old in zip(items, item.items, strict=True)):
                done[key] = item
            else:
                done[key] = concat(*items) if isinstance(item, Concat) else alt(*items)
        elif isinstance(item, Repeat):
            if not expanded:
                stack.append((item, True))
                stack.append((item.item, False))
                continue
            body = done[id(item.item)]
            done[key] = item if body is item.item else repeat(body, item.min, item.max)
        elif isinstance(item, Automaton):
            if _reads_lead(item):
                return None
            if (
                item.num_states < min_states
                or item in exclude
                or not _well_formed(item)
                or _reenters_start(item)
            ):
                done[key] = item
                continue
            k = chosen.setdefault(item, len(chosen))
            if k >= _MAX_AUTOMATA:
                del chosen[item]
                done[key] = item
                continue
            mark = literal(bytes((PLACEHOLDER_LEAD, k)))
            done[key] = alt(EMPTY, mark) if item.accepting[item.start] else mark
        else:
            if isinstance(item, Literal) and PLACEHOLDER_LEAD in item.value:
                return None
            if isinstance(item, ByteClass) and any(lo <= PLACEHOLDER_LEAD <= hi for lo, hi in item.ranges):
                return None
            done[key] = item
    if not chosen:
        return None
    return SplicePlan(done[id(node)], tuple(chosen))


def _reenters_start(node: Automaton) -> bool:
    """Whether a transition leads back to the start.

    The skeleton state before such an automaton would often have the same
    future as the copy's start, and the splice would not be minimal.
    """
    return bool((automaton_runs(node)[3] == node.start).any())


def _reads_lead(node: Automaton) -> bool:
    _, lo, hi, _ = automaton_runs(node)
    return bool(((lo <= PLACEHOLDER_LEAD) & (PLACEHOLDER_LEAD <= hi)).any())


#: whether each embedded automaton is well formed, for the last 256 asked about
_checked: BoundedMemo[bool] = BoundedMemo(max_entries=256)


def _well_formed(node: Automaton) -> bool:
    """Whether every state is reachable from the start and reaches acceptance (remembered per node).

    A repetition built by layers (:mod:`.counted`) is, by construction: its
    unit's automaton is trimmed, so every state of a layer is reached after
    the units before it and reaches the layer's end, and every boundary from
    the least count on accepts, up to the last one. Its search would follow
    one level per byte of the longest string (50 ms for 2,000 characters).
    """
    if layers_of(node) is not None:
        return True
    hit = _checked.get(node)
    if hit is not None:
        return hit
    src, _, _, dst = automaton_runs(node)
    n = node.num_states
    ptr = np.searchsorted(src, np.arange(n + 1))
    ok = bool(search(ptr, dst, np.array([node.start], dtype=np.int64), n).all())
    if ok:
        order = np.argsort(dst, kind="stable")
        rptr = np.searchsorted(dst[order], np.arange(n + 1))
        acc = np.flatnonzero(np.frombuffer(node.accepting, dtype=np.uint8))
        ok = bool(search(rptr, src[order], acc.astype(np.int64), n).all())
    _checked.put(node, ok)
    return ok


@dataclass(frozen=True)
class _Copyable:
    """An embedded automaton without the empty string, as its copies in a splice are written.

    When the start state accepts, a new start state with the same transitions
    but not accepting is added (state ``num_states``); the old start stays for
    the transitions that come back to it. The start states no transition leads
    to are left out of a copy (a copy is entered past them), and the other
    states are numbered from 0 in their order.
    """

    #: states of the automaton, the added start included (the weight of a copy in a clash)
    num_rows: int
    #: states of a copy
    size: int
    #: ``row * 256 + byte`` of each transition of a copy, and its target (numbered in the copy)
    cells: np.ndarray
    targets: np.ndarray
    #: ``int32 (256,)``: the start's transitions, numbered in the copy (-1: none)
    first: np.ndarray
    #: the accepting states of a copy
    ends: np.ndarray
    #: ``bool (256,)``: the bytes read by some accepting state of the automaton (left out or not)
    end_bytes: np.ndarray
    #: states of a copy that loop on the four JSON blanks (layout places, see :mod:`.blank_runs`)
    layout_places: int = 0
    #: for an automaton built by layers: the unit, and ``(states, bases, rooms, places)`` of the
    #: states whose masks are derived (numbered in the copy; see :mod:`.layers`)
    unit: Unit | None = None
    derived: Derived | None = None


def _copyable(node: Automaton) -> _Copyable:
    """:class:`_Copyable` of ``node``, remembered per process (up to ``_COPYABLE_BYTES``)."""
    hit = _copyables.get(node)
    if hit is not None:
        return hit
    n = node.num_states
    acc = np.frombuffer(node.accepting, dtype=np.uint8).astype(bool)
    start = node.start
    src, byte, dst = automaton_edges(node)
    if acc[start]:
        first_edges = src == start
        src = np.concatenate([src, np.full(int(first_edges.sum()), n, dtype=src.dtype)])
        byte, dst = np.concatenate([byte, byte[first_edges]]), np.concatenate([dst, dst[first_edges]])
        acc = np.append(acc, False)
        start = n
    num_rows = acc.size
    entered = np.zeros(num_rows, dtype=bool)
    entered[dst] = True
    keep = np.ones(num_rows, dtype=bool)
    for q in {start, node.start}:
        keep[q] = bool(entered[q])
    local = np.cumsum(keep) - 1
    kept = keep.take(src)
    cells = local.take(src[kept]) * 256 + byte[kept]
    targets = local.take(dst[kept]).astype(np.int32)
    first = np.full(256, -1, dtype=np.int32)
    from_start = src == start
    first[byte[from_start]] = local.take(dst[from_start])
    end_bytes = np.zeros(256, dtype=bool)
    end_bytes[byte[acc.take(src)]] = True
    ends = np.flatnonzero(acc[keep])
    for array in (cells, targets, first, ends, end_bytes):
        array.setflags(write=False)
    unit, derived = None, None
    layers = layers_of(node)
    if layers is not None:
        states, bases, rooms, places, lags = layers.derived(n)
        if states.size and keep.take(states).all() and keep.take(bases).all():
            unit = layers.unit(node)
            derived = (local.take(states), local.take(bases), rooms, places, lags)
    rows, on = np.divmod(cells, 256)
    layout = int((np.bincount(rows[(targets == rows) & IS_BLANK.take(on)], minlength=1) == BLANKS.size).sum())
    got = _Copyable(num_rows, int(keep.sum()), cells, targets, first, ends, end_bytes, layout, unit, derived)
    size = cells.nbytes + targets.nbytes + end_bytes.nbytes
    if size <= _COPYABLE_BYTES // 4:
        _copyables.put(node, got, size)
    return got


#: bytes of embedded automata kept ready for splicing (format and length-bounded strings recur)
_COPYABLE_BYTES = 64 << 20
_copyables: BoundedMemo[_Copyable] = BoundedMemo(max_size=_COPYABLE_BYTES)


def splice(
    skeleton: ByteDFA, plan: SplicePlan, limits: Limits | None = None, *, blank_runs: int | None = None
) -> ByteDFA | frozenset[int]:
    """Substitute the automata of ``plan`` for the placeholders of ``skeleton``.

    Parameters
    ----------
    skeleton
        The trimmed DFA of ``plan.node``.
    plan
        From :func:`plan_splice`.
    limits
        ``max_dfa_states`` bounds the result.
    blank_runs
        When set, the result's runs of blanks are bounded to this many, as
        :func:`~tokensieve.automata.blank_runs.bound_blank_runs` bounds them,
        in the same table: the rows of the copies of the layout places are
        made with the others, so the large table is written once.

    Returns
    -------
    ByteDFA or frozenset of int
        Trimmed, accepting the language of the IR the plan was made from; or
        the numbers of the automata whose substitution would not be
        deterministic (two merged transitions on one byte), to be left in
        the IR; empty when the placeholders are not where the plan put them.

    Raises
    ------
    LimitExceeded
        When the result would have more than ``max_dfa_states`` states.
    RunsNotCountable
        With ``blank_runs``, when a run of blanks could start before a place.

    Notes
    -----
    The numbering is decided before the large table is written: skeleton
    states first (in their order), then the copies, each in its automaton's
    order without the start states nothing leads back to (then the copies of
    the layout places).
    """
    limits = limits or Limits()
    table = skeleton.transitions
    accepting = np.asarray(skeleton.accepting, dtype=bool)
    n = table.shape[0]
    lead = table[:, PLACEHOLDER_LEAD]
    sources = np.flatnonzero(lead >= 0)
    if not len(sources):
        return frozenset()
    is_mid = np.zeros(n, dtype=bool)
    is_mid[lead[sources]] = True
    mids = np.flatnonzero(is_mid)
    plain = table.copy()  # the skeleton without its placeholder edges
    plain[:, PLACEHOLDER_LEAD] = -1
    # a placeholder's middle state: reached only by the lead byte, leaves only by an automaton number
    if (
        is_mid[skeleton.start]
        or accepting[mids].any()
        or is_mid[plain[plain >= 0]].any()
        or (table[mids, len(plan.automata) :] >= 0).any()
    ):
        return frozenset()
    # (source, automaton, continuation) of every placeholder edge
    mid_rows = table[mids, : len(plan.automata)]
    at, auto_of = np.nonzero(mid_rows[np.searchsorted(mids, lead[sources])] >= 0)
    src_of = sources[at]
    cont_of = table[lead[src_of], auto_of].astype(np.int64)
    pairs, copy_of = np.unique(auto_of.astype(np.int64) * n + cont_of, return_inverse=True)
    copy_of = copy_of.reshape(-1)
    copy_auto = (pairs // n).tolist()
    copy_cont = pairs % n
    tables = [_copyable(a) for a in plan.automata]
    # the copies entered from each state with placeholder edges (also from the ends of the
    # copies it continues: an automaton right after another)
    entered: dict[int, list[int]] = {}
    for s, c in zip(src_of.tolist(), copy_of.tolist(), strict=True):
        entered.setdefault(s, []).append(c)
    bad = _clashes(plain, tables, copy_auto, copy_cont, entered)
    if bad:
        return frozenset(bad)
    # numbering of the survivors
    reach = _reachable_skeleton(plain, skeleton.start, is_mid, copy_cont)
    kept = np.flatnonzero(reach[:n] & ~is_mid)
    new = np.full(n + 1, -1, dtype=np.int32)  # new[-1] == -1 maps missing transitions
    new[kept] = np.arange(len(kept), dtype=np.int32)
    live = reach[n:]
    sizes = np.array(
        [tables[k].size if ok else 0 for k, ok in zip(copy_auto, live.tolist(), strict=True)], dtype=np.int64
    )
    bases = len(kept) + np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    total = len(kept) + int(sizes.sum())
    if total > limits.max_dfa_states:
        raise LimitExceeded(
            "max_dfa_states", limits.max_dfa_states, f"the spliced DFA needs at least {total} states"
        )
    spare = 0
    if blank_runs is not None:
        # the layout places: the skeleton's that loop on the blanks and those inside the copies
        # (a merge never adds or removes a loop: it writes only bytes the state did not read)
        looping = (plain[kept][:, BLANKS] == kept[:, None]).all(axis=1)
        predicted = int(looping.sum()) + sum(tables[k].layout_places for k in np.array(copy_auto)[live].tolist())
        spare = blank_run_states(total, predicted, blank_runs, limits) - total
    out = np.empty((total + spare, 256), dtype=np.int32)
    out[len(kept) : total] = -1
    acc_out = np.zeros(total, dtype=bool)
    out[: len(kept)] = new[plain[kept]]
    acc_out[: len(kept)] = accepting[kept]

    def entries(state: int) -> list[np.ndarray]:
        """The first transitions of the copies entered from ``state``, renumbered."""
        rows = []
        for c in entered.get(state, ()):
            first = tables[copy_auto[c]].first
            rows.append(np.where(first >= 0, first + np.int32(bases[c]), np.int32(-1)))
        return rows

    for c in np.flatnonzero(live).tolist():
        piece = tables[copy_auto[c]]
        base = int(bases[c])
        block = out[base : base + int(sizes[c])]
        block.reshape(-1)[piece.cells] = piece.targets + np.int32(base)
        ends = piece.ends
        t = int(copy_cont[c])
        part = block[ends]
        for after in [new[plain[t]], *entries(t)]:
            np.copyto(part, np.broadcast_to(after, part.shape), where=after >= 0)
        block[ends] = part
        acc_out[base + ends] = bool(accepting[t])
    for s in entered:
        if new[s] >= 0:
            row = out[new[s]]
            for first in entries(s):
                np.copyto(row, first, where=first >= 0)
    layered = _layer_copies(total, tables, copy_auto, live, bases)
    start = int(new[skeleton.start])
    if blank_runs is not None:
        places = layout_places(out[:total])
        if places is None:
            raise RunsNotCountable("a run of blanks starts before a layout place")
        if places.size and places.size * blank_runs == spare:
            return unroll_blank_runs(out, total, places, acc_out, start, blank_runs, layered)
        if places.size or spare:  # not as predicted: bounded in a table of its own
            bounded = bound_blank_runs(ByteDFA(out[:total], acc_out, start, layer_copies=layered), blank_runs, limits)
            assert bounded is not None  # countable, as found above
            return bounded
    out.setflags(write=False)
    acc_out.setflags(write=False)
    return ByteDFA(out, acc_out, start, layer_copies=layered)


def _layer_copies(
    total: int, tables: list[_Copyable], copy_auto: list[int], live: np.ndarray, bases: np.ndarray
) -> LayerCopies | None:
    """The states of the copies of layered automata whose masks are derived (see :mod:`.layers`), or ``None``.

    Every boundary of a copy from its base layer on takes the same
    continuation (the copy's, merged into all its accepting states), which is
    what the derivation needs.
    """
    copies = [c for c in np.flatnonzero(live).tolist() if tables[copy_auto[c]].derived is not None]
    if not copies:
        return None
    base = np.full(total, -1, dtype=np.int32)
    room = np.zeros(total, dtype=np.int32)
    place = np.zeros(total, dtype=np.int16)
    unit = np.zeros(total, dtype=np.int16)
    lag = np.zeros(total, dtype=np.int32)
    units: dict[bytes, int] = {}
    found: list[Unit] = []
    for c in copies:
        piece = tables[copy_auto[c]]
        assert piece.derived is not None and piece.unit is not None
        states, bases_in_copy, rooms, places, lags = piece.derived
        at = states + int(bases[c])
        base[at] = bases_in_copy + int(bases[c])
        room[at] = rooms
        place[at] = places
        lag[at] = lags
        k = units.setdefault(piece.unit.key, len(found))
        if k == len(found):
            found.append(piece.unit)
        unit[at] = k
    for array in (base, room, place, unit, lag):
        array.setflags(write=False)
    return LayerCopies(base, room, place, unit, tuple(found), lag)


def _clashes(
    plain: np.ndarray,
    tables: list[_Copyable],
    copy_auto: list[int],
    copy_cont: np.ndarray,
    entered: dict[int, list[int]],
) -> set[int]:
    """Automata to leave in the IR so that no state gets two transitions on one byte.

    A state with placeholder edges takes the first transitions of the copies it
    enters; the accepting states of a copy take those of its continuation and
    of the copies the continuation enters. A clash between two automata leaves
    out the one with fewer states in all its copies: those go back to the
    subset construction with the skeleton.
    """
    groups: list[set[int]] = []

    def merge(rows: np.ndarray, owner: int, taken: np.ndarray, state: int) -> None:
        # ``taken``: per byte, -1 free, -2 the state's own, else the automaton whose copy reads it
        for c in entered.get(state, ()):
            k = copy_auto[c]
            first = tables[k].first >= 0
            clash = taken[first]
            if (clash == -2).any():
                groups.append({k})
            others = set(clash[clash >= 0].tolist())
            if owner >= 0 and rows[first].any():
                others.add(owner)
            groups.extend({k, o} for o in others)
            taken[first] = k

    none = np.zeros(256, dtype=bool)
    for s in entered:
        merge(none, -1, np.where(plain[s] >= 0, -2, -1), s)
    for k, t in zip(copy_auto, copy_cont.tolist(), strict=True):
        ends = tables[k].end_bytes
        if (ends & (plain[t] >= 0)).any():
            groups.append({k})
        merge(ends, k, np.where(plain[t] >= 0, -2, -1), t)
    copies = np.bincount(np.array(copy_auto, dtype=np.int64), minlength=len(tables))
    weight = [int(copies[k]) * tables[k].num_rows for k in range(len(tables))]
    out: set[int] = set()
    for group in sorted(groups, key=len):
        if not group & out:
            out.add(min(group, key=lambda k: (weight[k], k)))
    return out


def _reachable_skeleton(plain: np.ndarray, start: int, is_mid: np.ndarray, copy_cont: np.ndarray) -> np.ndarray:
    """Reachable skeleton states and copies (``n + len(copy_cont)`` flags), each copy as one node.

    Every state of the skeleton is reachable (it is a trimmed DFA), and a path
    through a placeholder (source, middle state, continuation, next) becomes
    (source, copy, next). So the middle states go, and a continuation stays
    only if it is the start or a transition other than a middle state's leads
    to it: its source is reached, or is a continuation itself, whose copies lead
    there. Every other state and every copy stay.
    """
    n = plain.shape[0]
    out = np.ones(n + len(copy_cont), dtype=bool)
    out[:n] = ~is_mid
    targets = plain[~is_mid]
    entered_plainly = np.zeros(n, dtype=bool)
    entered_plainly[targets[targets >= 0]] = True
    cut = copy_cont[~entered_plainly[copy_cont]]
    out[cut[cut != start]] = False
    return out


