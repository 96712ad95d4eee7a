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
    # identical byte columns (bytes the automaton never tells apart) are hashed once
    columns, weight_index = _distinct_columns(transitions)
    w1 = np.zeros(columns.shape[1], dtype=np.uint64)
    w2 = np.zeros(columns.shape[1], dtype=np.uint64)
    np.add.at(w1, weight_index, _W1)  # a column standing for k bytes weighs their sum
    np.add.at(w2, weight_index, _W2)
    targets = np.where(columns >= 0, columns, num_states).astype(np.int64)
    # round d: states with the same viable strings of at most d bytes (acceptance
    # along the way does not matter to a mask, only the state's own: added at the end)
    cls = np.zeros(num_states, dtype=np.int64)
    count = 1
    for _ in range(max(depth, 0)):
        ext = np.append(cls, -1).astype(np.uint64)  # -1: the missing transition
        succ = ext.take(targets)
        h1 = (succ * w1).sum(axis=1, dtype=np.uint64)
        h2 = ((succ ^ _MIX) * w2).sum(axis=1, dtype=np.uint64)
        new = _pair_ids(_ids(h1 ^ (cls.astype(np.uint64) * _MIX)), _ids(h2))
        new = _pair_ids(new, cls)
        new_count = int(new.max()) + 1
        cls = new
        if new_count == count:
            break  # stable: later rounds split nothing
        count = new_count
    cls = _pair_ids(cls, accepting.astype(np.int64))
    count = int(cls.max()) + 1
    first = np.full(count, num_states, dtype=np.int64)
    np.minimum.at(first, cls, np.arange(num_states, dtype=np.int64))
    return first.take(cls)


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
        flat = transitions.reshape(-1)
        cur = np.full(self.ids.size, state, dtype=np.int64)
        for j, m in enumerate(self.active.tolist()):
            head = cur[:m]
            alive = head >= 0
            nxt = flat.take(np.where(alive, head, 0) * 256 + self.bytes[:m, j])
            cur[:m] = np.where(alive, nxt, -1)
        ok = cur >= 0
        if ok.any():
            np.bitwise_or.at(out, self.words[ok], self.bits[ok])
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

    Columns are grouped by two 64-bit hashes, then checked for equality; on a
    collision the exact (slower) ``np.unique(axis=1)`` is used.
    """
    rows = table.shape[0]
    rng = np.random.default_rng(0xB17E5)
    w = rng.integers(1, 2**63, size=(2, rows), dtype=np.uint64) | np.uint64(1)
    t = (table.astype(np.int64) + 2).astype(np.uint64)
    h1 = (t * w[0][:, None]).sum(axis=0, dtype=np.uint64)
    h2 = ((t ^ _MIX) * w[1][:, None]).sum(axis=0, dtype=np.uint64)
    group = _pair_ids(_ids(h1), _ids(h2))
    first = np.full(int(group.max()) + 1, table.shape[1], dtype=np.int64)
    np.minimum.at(first, group, np.arange(table.shape[1], dtype=np.int64))
    columns = table[:, first]
    if not np.array_equal(columns[:, group], table):
        columns, inverse = np.unique(table, axis=1, return_inverse=True)
        return columns, np.asarray(inverse, dtype=np.int64).reshape(-1)
    return columns, group
