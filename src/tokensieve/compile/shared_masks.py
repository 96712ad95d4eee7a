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
longer tokens (:class:`LongTokens`) recomputed for the state itself, by running
their bytes through the automaton.

The classes are Moore's partition refinement stopped after ``D`` rounds (or
when it is stable), vectorised with numpy: each round gives every state the
signature (its class, the classes of its successors on every byte class, a
missing transition being a class of its own), and states with equal signatures
stay together; the state's own acceptance splits the classes at the end.
Signatures are compared through two independent 64-bit hashes besides the
class, so two states are merged wrongly only if both hashes collide
(probability about ``n**2 / 2**128``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["LongTokens", "SHARE_DEPTH", "mask_representatives"]

#: states equivalent for every string of this many bytes share the mask of their short tokens
SHARE_DEPTH = 16

_W1 = np.random.default_rng(0x5EED).integers(1, 2**63, size=256, dtype=np.uint64) | np.uint64(1)
_W2 = np.random.default_rng(0xC0DE).integers(1, 2**63, size=256, dtype=np.uint64) | np.uint64(1)
_MIX = np.uint64(0x9E3779B97F4A7C15)


def mask_representatives(transitions: np.ndarray, accepting: np.ndarray, depth: int) -> np.ndarray:
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

    Returns
    -------
    numpy.ndarray
        ``int64 (S,)``: ``rep[s] <= s``, ``rep[rep[s]] == rep[s]``.
    """
    num_states = int(transitions.shape[0])
    # identical byte columns (bytes the automaton never tells apart) are looked at once
    columns, _ = _distinct_columns(transitions)
    targets = np.where(columns >= 0, columns, num_states).astype(np.int64)
    preds = _Predecessors(targets, num_states)
    # round d: states with the same viable strings of at most d bytes (acceptance
    # along the way does not matter to a mask, only the state's own: added at the end)
    label = np.zeros(num_states + 1, dtype=np.int64)
    label[num_states] = -1  # the missing transition
    cls = label[:num_states]  # a view: the labels of the states
    next_label = 1
    every = np.arange(num_states, dtype=np.int64)
    changed = every
    for _ in range(max(depth, 0)):
        if not changed.size:
            break  # stable: later rounds split nothing
        # only states with a relabelled successor can leave their class; each class
        # they are in is compared with one member that has none (its old signature)
        cand = every if changed is every else preds.of(changed)
        if cand.size * 2 > num_states:
            cand = every
        if cand is every:
            act, witness = every, np.zeros(num_states, dtype=bool)
        else:
            act, witness = _with_witnesses(cls, cand)
        rows = np.empty((act.size, targets.shape[1] + 1), dtype=np.int64)
        rows[:, 0] = cls.take(act)
        rows[:, 1:] = label.take(targets.take(act, axis=0))
        group, num_groups = _row_ids(rows)
        # a class keeps its label for the group of its witness, or else for its largest
        # group (the others are relabelled: their predecessors are the next candidates)
        keep = np.zeros(num_groups, dtype=bool)
        keep[group[witness]] = True
        group_class = np.empty(num_groups, dtype=np.int64)
        group_class[group] = rows[:, 0]
        class_ids = _dense(group_class)
        has_witness = np.zeros(num_groups, dtype=bool)
        has_witness[class_ids[keep]] = True
        size = np.bincount(group, minlength=num_groups)
        # largest group of each class: sort by (class, size) and take the last of each class
        order = np.lexsort((size, class_ids))
        last = np.ones(num_groups, dtype=bool)
        last[:-1] = class_ids.take(order[1:]) != class_ids.take(order[:-1])
        largest = np.zeros(num_groups, dtype=bool)
        largest[order[last]] = True
        keep |= largest & ~has_witness.take(class_ids)
        fresh = np.flatnonzero(~keep)
        if not fresh.size:
            break
        new_label = np.zeros(num_groups, dtype=np.int64)
        new_label[fresh] = np.arange(next_label, next_label + fresh.size, dtype=np.int64)
        next_label += int(fresh.size)
        moved = ~keep.take(group)
        changed = act[moved]
        cls[changed] = new_label.take(group[moved])
    final = _dense(cls * 2 + accepting.astype(np.int64))
    first = np.full(int(final.max()) + 1, num_states, dtype=np.int64)
    np.minimum.at(first, final, np.arange(num_states, dtype=np.int64))
    return first.take(final)


class _Predecessors:
    """The distinct predecessors of every state, in CSR form."""

    def __init__(self, targets: np.ndarray, num_states: int) -> None:
        rows = np.sort(targets, axis=1)
        distinct = np.ones(rows.shape, dtype=bool)
        distinct[:, 1:] = rows[:, 1:] != rows[:, :-1]
        distinct &= rows < num_states
        src = np.repeat(np.arange(rows.shape[0], dtype=np.int64), distinct.sum(axis=1))
        dst = rows[distinct]
        order = np.argsort(dst, kind="stable")
        self.src = src.take(order)
        self.count = np.bincount(dst, minlength=num_states).astype(np.int64)
        self.start = np.zeros(num_states + 1, dtype=np.int64)
        np.cumsum(self.count, out=self.start[1:])
        self._mark = np.zeros(num_states, dtype=bool)

    def of(self, states: np.ndarray) -> np.ndarray:
        """The distinct predecessors of ``states``, sorted."""
        counts = self.count.take(states)
        ends = np.cumsum(counts)
        total = int(ends[-1]) if ends.size else 0
        pos = np.repeat(self.start.take(states) - ends + counts, counts)
        pos += np.arange(total, dtype=np.int64)
        mark = self._mark
        mark[self.src.take(pos)] = True
        out = np.flatnonzero(mark)
        mark[out] = False
        return out


def _with_witnesses(cls: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``cand`` followed by one state outside ``cand`` from each class that ``cand`` meets (if
    the class has one), and flags marking those witnesses."""
    outside = np.ones(cls.size, dtype=bool)
    outside[cand] = False
    labels = np.unique(cls.take(cand))
    at = np.minimum(np.searchsorted(labels, cls), labels.size - 1)
    others = np.flatnonzero((labels.take(at) == cls) & outside)
    if others.size:
        _, first = np.unique(cls.take(others), return_index=True)
        others = others.take(first)
    act = np.concatenate([cand, others])
    flags = np.zeros(act.size, dtype=bool)
    flags[cand.size :] = True
    return act, flags


def _row_ids(rows: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ids of the rows of an ``int64`` matrix (equal rows, equal ids; exact) and their number."""
    h = rows.astype(np.uint64) @ _weights(rows.shape[1])
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse, dtype=np.int64).reshape(-1)
    if np.array_equal(rows.take(first.take(inverse), axis=0), rows):
        return inverse, int(first.size)
    # two distinct rows with one hash (about n**2 / 2**64): sort the rows themselves
    _, inverse = np.unique(rows, axis=0, return_inverse=True)
    inverse = np.asarray(inverse, dtype=np.int64).reshape(-1)
    return inverse, int(inverse.max()) + 1 if inverse.size else 0


def _weights(width: int) -> np.ndarray:
    """Odd random 64-bit weights for a row hash of ``width`` columns (fixed per width)."""
    w = _WEIGHTS.get(width)
    if w is None:
        w = np.random.default_rng(0x5EED + width).integers(1, 2**63, size=width, dtype=np.uint64) | np.uint64(1)
        _WEIGHTS[width] = w
    return w


_WEIGHTS: dict[int, np.ndarray] = {}


def _dense(values: np.ndarray) -> np.ndarray:
    """Dense ids of ``values`` (equal values, equal ids)."""
    _, inverse = np.unique(values, return_inverse=True)
    return np.asarray(inverse, dtype=np.int64).reshape(-1)


class LongTokens:
    """The tokens longer than the sharing depth, run through an automaton directly.

    States equivalent up to ``depth`` bytes agree on every token of at most
    ``depth`` bytes; the few longer tokens (about 1,200 of Tekken's 131,072 are
    longer than 16 bytes) are checked per state by running their bytes through
    the automaton, all tokens at once, one numpy step per byte position.

    Parameters
    ----------
    decoded_vocab
        The bytes of every token.
    special_token_ids
        Tokens never allowed by a walk of the trie (left out here too).
    num_words
        Width of a packed mask in int32 words.
    depth
        Tokens strictly longer than this are kept.
    """

    def __init__(
        self, decoded_vocab: Sequence[bytes], special_token_ids: Iterable[int], num_words: int, depth: int
    ) -> None:
        special = {int(t) for t in special_token_ids}
        ids = [t for t, data in enumerate(decoded_vocab) if len(data) > depth and t not in special]
        ids.sort(key=lambda t: -len(decoded_vocab[t]))
        self.ids = np.asarray(ids, dtype=np.int64)
        lengths = np.asarray([len(decoded_vocab[t]) for t in ids], dtype=np.int64)
        width = int(lengths.max()) if lengths.size else 0
        self.bytes = np.zeros((len(ids), width), dtype=np.int64)
        for i, t in enumerate(ids):
            data = decoded_vocab[t]
            self.bytes[i, : len(data)] = np.frombuffer(data, dtype=np.uint8)
        # tokens are sorted by decreasing length: at position j the first active[j] are still going
        self.active = np.asarray([int((lengths > j).sum()) for j in range(width)], dtype=np.int64)
        self.columns = np.ascontiguousarray(self.bytes.T)  # byte j of every token, contiguous
        # the set of bytes of each token, as four 64-bit words
        present = np.zeros((len(ids), 256), dtype=bool)
        rows = np.repeat(np.arange(len(ids)), lengths)
        present[rows, self.bytes[np.arange(width) < lengths[:, None]]] = True
        self.byte_sets = np.packbits(present, axis=1, bitorder="little").view(np.uint64)
        self.words = self.ids >> 5
        self.bits = np.left_shift(np.uint32(1), (self.ids & 31).astype(np.uint32)).view(np.int32)
        mask = np.zeros(num_words, dtype=np.int32)
        np.bitwise_or.at(mask, self.words, self.bits)
        self.mask = mask

    def apply(self, base: np.ndarray, transitions: np.ndarray, state: int) -> np.ndarray:
        """``base`` with its long-token bits replaced by those valid from ``state``."""
        out = base & ~self.mask
        if not self.ids.size:
            return out
        row = transitions[state]
        # tokens made only of bytes that loop on ``state`` (free text in a string) stay there
        loops = np.packbits(row == state, bitorder="little").view(np.uint64)
        outside = (self.byte_sets & ~loops).any(axis=1)
        ended = [np.flatnonzero(~outside)]
        idx = np.flatnonzero(outside)  # the others run byte by byte
        flat = transitions.reshape(-1)
        cur = np.full(idx.size, state, dtype=np.int64)
        for j, m in enumerate(self.active.tolist()):
            if not idx.size:
                break
            k = int(np.searchsorted(idx, m))  # idx is sorted: rows >= m have no byte j
            if k < idx.size:
                ended.append(idx[k:])
                idx, cur = idx[:k], cur[:k]
            nxt = flat.take(cur * 256 + self.columns[j].take(idx))
            live = nxt >= 0
            idx, cur = idx[live], nxt[live]
        ended.append(idx)
        ok = np.concatenate(ended)
        if ok.size:
            np.bitwise_or.at(out, self.words.take(ok), self.bits.take(ok))
        return out


def _ids(values: np.ndarray) -> np.ndarray:
    """Dense ids of ``values`` (equal values, equal ids)."""
    _, inverse = np.unique(values, return_inverse=True)
    return np.asarray(inverse, dtype=np.int64).reshape(-1)


def _pair_ids(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dense ids of the pairs ``(a[i], b[i])`` of two dense id arrays (exact)."""
    return _ids(a * (int(b.max()) + 1) + b)


def _distinct_columns(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct columns of ``table`` and, for every column, the index of its distinct copy.

    Columns are grouped by a 32-bit hash (a sum of products that wraps around, so
    equal columns always get equal hashes), then checked for equality; on a
    collision the exact (slower) ``np.unique(axis=1)`` is used.
    """
    rows = table.shape[0]
    t = np.ascontiguousarray(table, dtype=np.int32)
    w = np.random.default_rng(0xB17E5).integers(1, 2**31, size=rows).astype(np.int32)
    h = np.einsum("i,ij->j", w, t)  # no BLAS threads: cheap on a busy machine
    _, first, group = np.unique(h, return_index=True, return_inverse=True)
    group = np.asarray(group, dtype=np.int64).reshape(-1)
    if not np.array_equal(t.take(first.take(group), axis=1), t):
        columns, inverse = np.unique(table, axis=1, return_inverse=True)
        return columns, np.asarray(inverse, dtype=np.int64).reshape(-1)
    return t.take(first, axis=1), group
