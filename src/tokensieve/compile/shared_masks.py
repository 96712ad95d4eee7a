"""States whose masks agree on short tokens: equivalence up to a small depth.

The bits of a token of at most ``D`` bytes in a state's mask depend only on
which byte strings of at most ``D`` bytes stay viable from the state; the stop
tokens' bits on whether it accepts. States that agree on both share those bits,
even if they differ further ahead. Such states are common and costly: inside a
string limited to 254 characters, every state with more than ``D`` characters
still to go sees the same next ``D`` bytes, and, since these states do not loop,
each would otherwise need a walk of the whole token trie (tens of milliseconds
on a 131k vocabulary). The same holds for the positions of a bounded run of
whitespace.

So a state's mask is its class representative's mask with the bits of the few
longer tokens (:class:`~tokensieve.compile.long_tokens.LongTokens`) recomputed for the state itself, by running
their bytes through the automaton.

The classes are Moore's partition refinement stopped after ``D`` rounds (or
when it is stable), vectorised with numpy: each round gives every state the
signature (the classes of its successors on every distinct byte column, a
missing transition being a class of its own), and states with equal signatures
stay together; the state's own acceptance splits the classes at the end. The
first round is the pattern of missing bytes. In large automata a round looks
only at the predecessors of the states relabelled by the round before (and one
untouched member of each class they are in). Signatures are rows of byte or
16-bit labels, grouped by a 64-bit hash and then compared in full, so the
classes are exact; a collision only costs an exact sort of the rows involved.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numpy.random import default_rng  # imported with the module: numpy loads it lazily, ~5 ms

__all__ = ["SHARE_DEPTH", "mask_representatives"]

#: states equivalent for every string of this many bytes share the mask of their short tokens
SHARE_DEPTH = 16


def mask_representatives(
    transitions: np.ndarray,
    accepting: np.ndarray,
    depth: int,
    *,
    rows: np.ndarray | None = None,
    relabel: np.ndarray | None = None,
) -> np.ndarray:
    """For every state, the smallest state whose token mask is certainly the same.

    Parameters
    ----------
    transitions
        ``int32 (S, 256)`` table of a trimmed DFA (-1: no transition).
    accepting
        ``bool (S,)``.
    depth
        States equivalent for every string of at most this many bytes (and in
        acceptance) agree on every token of at most this many bytes.
    rows, relabel
        Optional: the states are the rows ``rows`` (``int64``; all rows by
        default) of ``transitions``, and a target ``t`` stands for state
        ``relabel[t]`` (``int32`` or ``int64``, its last entry -1, which a
        missing transition reads). The rows are read a block at a time, so a
        subset of a large table is compared without copying it; and targets
        past the rows can stand for rows (the copies of
        :class:`~tokensieve.automata.blank_runs.BlankChains` read as their
        places, with ``transitions`` the leading rows of the table).

    Returns
    -------
    numpy.ndarray
        ``int64 (S,)``: ``rep[s] <= s``, ``rep[rep[s]] == rep[s]``.
    """
    num_states = int(transitions.shape[0]) if rows is None else int(rows.size)
    cls = np.zeros(num_states, dtype=np.int64)
    if depth > 0 and num_states:
        incremental = depth > 2 and num_states > _SMALL
        tables = _Tables(transitions, with_predecessors=incremental, rows=rows, relabel=relabel)
        cls = (_refine(tables, depth) if incremental else _refine_fully(tables, depth)).astype(np.int64)
    key = cls * 2 + np.asarray(accepting, dtype=bool)
    first = np.full(int(key.max(initial=0)) + 1, num_states, dtype=np.int64)
    np.minimum.at(first, key, np.arange(num_states, dtype=np.int64))
    return first.take(key)


#: automata with at most this many states compare every state in every round (fewer steps)
_SMALL = 1000


def _refine_fully(tables: _Tables, depth: int) -> np.ndarray:
    """The class labels (``int32 (S,)``) after ``depth`` rounds, every state compared in every round."""
    cls, num_classes = _row_groups(tables.missing)
    label = np.empty(tables.targets.shape[0] + 1, dtype=np.int32)
    label[0] = -1  # the missing transition (targets are shifted by one)
    label[1:] = cls
    for _ in range(depth - 1):
        small = label.astype(
            np.uint8 if num_classes < 255 else np.uint16 if num_classes < 65535 else np.int32
        )
        group, num_groups = _row_groups(_words(small.take(tables.targets, mode="clip")))
        if num_groups == num_classes:
            break  # each round splits classes of the one before: none split, none ever will
        label[1:] = group
        num_classes = num_groups
    return label[1:]


def _refine(tables: _Tables, depth: int) -> np.ndarray:
    """The class labels (``int32 (S,)``) after ``depth`` rounds of refinement.

    Round 1 splits the states by which byte columns are missing; every later
    round by the labels of the successors on every column (states with equal
    successor labels were in one class already: a round only splits). Only states with a
    relabelled successor can leave their class: each class they are in is
    compared with one member that has none (its old signature). A class keeps
    its label for the group of that member, or else for its group with the most
    predecessors; the other groups get fresh labels, and their predecessors are
    the next candidates.
    """
    targets = tables.targets
    num_states = targets.shape[0]
    cls, next_label = _row_groups(tables.missing)
    label = np.empty(num_states + 1, dtype=np.int32)
    label[0] = -1  # the missing transition (targets are shifted by one)
    label[1:] = cls
    cls = label[1:]  # a view: the labels of the states
    every = np.arange(num_states, dtype=np.intp)
    changed: np.ndarray | None = None  # None: every state was relabelled
    for _ in range(depth - 1):
        if changed is None:
            cand = every
        else:
            if not changed.size:
                break  # stable: later rounds split nothing
            cand = tables.predecessors(changed)
            if not cand.size:
                break  # nothing leads to a relabelled state: nothing can split
            if cand.size * 2 > num_states:
                cand = every
        # labels as narrow as they fit, so that a row is a few 64-bit words
        small = label.astype(np.uint8 if next_label < 255 else np.uint16 if next_label < 65535 else np.int32)
        if cand is every:
            act, witness = every, None
            rows = small.take(targets, mode="clip")
        else:
            act, witness = _with_witnesses(cls, cand, next_label)
            rows = small.take(targets.take(act, axis=0), mode="clip")
        act_cls = cls.take(act)
        group, num_groups = _row_groups(_words(rows))  # within classes: rounds only split
        keep = _kept_groups(group, num_groups, act_cls, witness, tables.weight.take(act))
        fresh = np.flatnonzero(~keep)
        if not fresh.size:
            break
        new_label = np.zeros(num_groups, dtype=np.int32)
        new_label[fresh] = np.arange(next_label, next_label + fresh.size, dtype=np.int32)
        next_label += int(fresh.size)
        moved = ~keep.take(group)
        changed = act[moved]
        cls[changed] = new_label.take(group[moved])
    return cls


def _words(rows: np.ndarray) -> np.ndarray:
    """The rows of a C-contiguous matrix as ``int64`` words (their width in bytes is a multiple of 8)."""
    return np.ascontiguousarray(rows).view(np.int64)


def _kept_groups(
    group: np.ndarray, num_groups: int, act_cls: np.ndarray, witness: np.ndarray | None, weight: np.ndarray
) -> np.ndarray:
    """Which groups keep their class's label: the group of the class's witness, or else its
    heaviest (``weight``: one more than the number of predecessors of each state)."""
    keep = np.zeros(num_groups, dtype=bool)
    group_class = np.empty(num_groups, dtype=np.int32)
    group_class[group] = act_cls
    size = np.bincount(group, weights=weight, minlength=num_groups)
    # heaviest group of each class: sort by (class, weight) and take the last of each class
    order = np.lexsort((size, group_class))
    sorted_class = group_class.take(order)
    last = np.ones(num_groups, dtype=bool)
    np.not_equal(sorted_class[1:], sorted_class[:-1], out=last[:-1])
    largest = order[last]
    if witness is None:
        keep[largest] = True
        return keep
    held = group[witness]
    keep[held] = True
    has_witness = np.zeros(int(sorted_class[-1]) + 1, dtype=bool)
    has_witness[group_class.take(held)] = True
    keep[largest[~has_witness.take(group_class.take(largest))]] = True
    return keep


class _Tables:
    """The successor table on distinct byte columns, the missing-byte pattern, the predecessors.

    ``targets`` is ``intp (S, W)``: one more than the successor of every state on
    every distinct byte column, 0 where the transition is missing; ``W`` is a
    multiple of 8 (extra columns: missing). ``missing`` is that pattern packed
    in 64-bit words. The predecessors of every state are kept in CSR form (a few twice).

    Identical byte columns (bytes the automaton never tells apart) are found
    through a 32-bit hash (a sum of products that wraps around, so equal columns
    always get equal hashes); every column is then compared with the previous
    column of its group if that is its next-door neighbour (through adjacent
    differences), or else with the first column of its group, while the tables
    are built, a block of rows at a time. On a collision the exact (slower)
    ``np.unique(axis=1)`` is used.
    """

    def __init__(
        self,
        transitions: np.ndarray,
        with_predecessors: bool,
        *,
        rows: np.ndarray | None = None,
        relabel: np.ndarray | None = None,
    ) -> None:
        self._relabel = relabel
        t = np.ascontiguousarray(transitions, dtype=np.int32)
        width = t.shape[1]
        if rows is None:
            weights = _column_weights(t.shape[0])
            sample = t[:: max(1, t.shape[0] // 1024)]
        else:
            # zero weight for the rows left out: no copy of the rows kept
            weights = np.zeros(t.shape[0], dtype=np.int32)
            weights[rows] = _column_weights(rows.size)
            sample = t.take(rows[:: max(1, rows.size // 1024)], axis=0)
        h = np.einsum("i,ij->j", weights, t)  # no BLAS threads: cheap on a busy machine
        _, first, group = np.unique(h, return_index=True, return_inverse=True)
        group = np.asarray(group, dtype=np.intp).reshape(-1)
        cols = np.arange(width, dtype=np.intp)
        order = np.argsort(group, kind="stable")
        prev = np.full(width, -1, dtype=np.intp)
        same = group.take(order[1:]) == group.take(order[:-1])
        prev[order[1:][same]] = order[:-1][same]
        adjacent = prev[1:] == cols[:-1]  # column j + 1 should equal column j
        far = np.flatnonzero((prev >= 0) & (prev != cols - 1))
        # columns with many transitions first: a state's successor on a column is then often
        # the one on the column before, so few successors are met twice by the predecessors
        keep = np.sort(first)
        present = (sample.take(keep, axis=1) >= 0).sum(axis=0)
        keep = keep.take(np.argsort(-present, kind="stable"))
        at = np.zeros(width, dtype=np.intp)
        at[keep] = np.arange(keep.size, dtype=np.intp)
        # a column whose group has no column just before it is compared with the group's first
        far_kept = at.take(first.take(group.take(far)))
        if not self._build(t, rows, keep, adjacent, far, far_kept, with_predecessors):
            kept_rows = t if rows is None else t.take(rows, axis=0)
            distinct = np.ascontiguousarray(np.unique(kept_rows, axis=1))  # sorted columns: fine
            empty = np.zeros(0, dtype=np.intp)
            self._build(
                distinct, None, cols[: distinct.shape[1]], adjacent[:0], empty, empty, with_predecessors
            )

    def _build(
        self,
        t: np.ndarray,
        rows: np.ndarray | None,
        keep: np.ndarray,
        adjacent: np.ndarray,
        far: np.ndarray,
        far_kept: np.ndarray,
        with_predecessors: bool,
    ) -> bool:
        """Fill the tables from the columns ``keep`` of the rows ``rows`` of ``t`` (all: None);
        False if the columns that ``adjacent`` says are equal are not, or columns ``far`` differ
        from the kept columns ``far_kept`` (positions in ``keep``)."""
        num = t.shape[0] if rows is None else rows.size
        width = -(-keep.size // 8) * 8
        targets = np.zeros((num, width), dtype=np.intp)
        missing = np.zeros((num, -(-width // 64) * 8), dtype=np.uint8)
        differs = np.zeros(adjacent.size, dtype=bool)
        src_parts, dst_parts = [], []
        block = max(1, (1 << 19) // t.shape[1])
        for i in range(0, num, block):
            chunk = t[i : i + block] if rows is None else t.take(rows[i : i + block], axis=0)
            if adjacent.size:
                differs |= (chunk[:, 1:] != chunk[:, :-1]).any(axis=0)
            sub = chunk.take(keep, axis=1)
            if far.size and (chunk.take(far, axis=1) != sub.take(far_kept, axis=1)).any():
                return False
            if self._relabel is not None:
                sub = self._relabel.take(sub)
            np.add(sub, 1, out=targets[i : i + block, : keep.size], casting="unsafe")
            packed = np.packbits(sub < 0, axis=1)
            missing[i : i + block, : packed.shape[1]] = packed
            if with_predecessors:  # a successor different from the one on the column before
                distinct = np.empty(sub.shape, dtype=bool)
                distinct[:, 0] = True
                np.not_equal(sub[:, 1:], sub[:, :-1], out=distinct[:, 1:])
                distinct &= sub >= 0
                dst_parts.append(sub[distinct])
                src_parts.append(
                    np.repeat(np.arange(i, i + sub.shape[0], dtype=np.int64), distinct.sum(axis=1))
                )
        if (differs & adjacent).any():
            return False
        self.targets = targets
        self.missing = missing.view(np.int64)
        if with_predecessors:
            dst = np.concatenate(dst_parts).astype(np.int64)
            src = np.concatenate(src_parts)
            self._src = np.sort(dst * num + src) % num
            count = np.bincount(dst, minlength=num)
            self._count = count
            self.weight = count + 1.0
            self._start = np.zeros(num + 1, dtype=np.int64)
            np.cumsum(count, out=self._start[1:])
            self._mark = np.zeros(num, dtype=bool)
        return True

    def predecessors(self, states: np.ndarray) -> np.ndarray:
        """The distinct predecessors of ``states``, sorted."""
        counts = self._count.take(states)
        ends = np.cumsum(counts)
        total = int(ends[-1]) if ends.size else 0
        pos = np.repeat(self._start.take(states) - ends + counts, counts)
        pos += np.arange(total, dtype=np.int64)
        mark = self._mark
        mark[self._src.take(pos)] = True
        out = np.flatnonzero(mark)
        mark[out] = False
        return out


def _with_witnesses(cls: np.ndarray, cand: np.ndarray, num_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """``cand`` followed by one state outside ``cand`` from each class that ``cand`` meets (if
    the class has one), and flags marking those witnesses."""
    touched = np.zeros(num_labels, dtype=bool)
    touched[cls.take(cand)] = True
    outside = touched.take(cls)
    outside[cand] = False
    others = np.flatnonzero(outside)
    if others.size:
        pick = np.full(num_labels, -1, dtype=np.intp)
        pick[cls.take(others)] = others  # any one member of each class will do
        others = pick[pick >= 0]
    act = np.concatenate([cand, others])
    flags = np.zeros(act.size, dtype=bool)
    flags[cand.size :] = True
    return act, flags


def _row_groups(rows: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ids of the rows of an ``int64`` matrix (equal rows, equal ids; exact) and their number.

    Rows are grouped by a 64-bit hash, then every row is compared with one row
    of its group; the groups that hold a collision are split exactly.
    """
    h = np.einsum("ij,j->i", rows, _weights(rows.shape[1]))
    order = np.argsort(h)
    sorted_h = h.take(order)
    starts = np.empty(h.size, dtype=bool)
    starts[:1] = True
    np.not_equal(sorted_h[1:], sorted_h[:-1], out=starts[1:])
    first = order[starts]  # one row of every hash
    group = np.empty(h.size, dtype=np.intp)
    group[order] = np.cumsum(starts) - 1
    rep_rows = rows.take(first.take(group), axis=0)
    if np.array_equal(rep_rows, rows):
        return group, int(first.size)
    # two distinct rows with one hash: the groups holding them are sorted out row by row
    bad = np.zeros(first.size, dtype=bool)
    bad[group[~(rep_rows == rows).all(axis=1)]] = True
    members = np.flatnonzero(bad.take(group))
    _, sub = np.unique(rows.take(members, axis=0), axis=0, return_inverse=True)
    group[members] = first.size + np.asarray(sub, dtype=np.intp).reshape(-1)
    group = _dense(group)
    return group, int(group.max()) + 1


def _column_weights(rows: int) -> np.ndarray:
    """Random ``int32`` weights for a column hash over ``rows`` rows."""
    return default_rng(0xB17E5).integers(1, 2**31, size=rows).astype(np.int32)


@cache
def _weights(width: int) -> np.ndarray:
    """Odd random 64-bit weights for a row hash of ``width`` columns (fixed per width)."""
    return default_rng(0x5EED + width).integers(1, 2**62, size=width, dtype=np.int64) | np.int64(1)


def _dense(values: np.ndarray) -> np.ndarray:
    """Dense ids of ``values`` (equal values, equal ids)."""
    _, inverse = np.unique(values, return_inverse=True)
    return np.asarray(inverse, dtype=np.intp).reshape(-1)
