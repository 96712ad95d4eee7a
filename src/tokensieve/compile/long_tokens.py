"""The tokens longer than the sharing depth, checked per state by running their bytes.

States that share a mask up to :data:`~tokensieve.compile.shared_masks.SHARE_DEPTH`
bytes (:mod:`.shared_masks`) agree on every shorter token; a state's mask is its
class representative's with the bits of the few longer tokens recomputed for
the state itself (:class:`LongTokens`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .._arrays import or_distinct_bits
from .._memo import BoundedMemo
from ..bitmask import friendly_zeros
from .char_chains import NOT_OF_KIND, token_needs

__all__ = ["LongTokens"]

#: long tokens still running when at most this many are left are run one by one in plain Python
_FEW_LONG = 16
#: loop byte sets whose split of the long tokens is remembered, least recently used forgotten first
_LOOP_SETS = 256
#: :meth:`LongTokens.survivors` runs the long tokens one by one to the depth when at most ``_FEW_LONG``
#: are alive after this many bytes, gives those alive then when at most ``_MANY_SURVIVORS`` are, and
#: gives up past that
_SURVIVOR_BYTES = 3
_MANY_SURVIVORS = 256
#: the chain kind counted in characters (see char_chains), and a byte that steps along each kind's chain
_CHARS = 1
_CHAIN_BYTE = (0x61, 0x61, 0x20)


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
        data_bytes = np.zeros((len(ids), width), dtype=np.int64)
        for i, t in enumerate(ids):
            data = decoded_vocab[t]
            data_bytes[i, : len(data)] = np.frombuffer(data, dtype=np.uint8)
        # tokens are sorted by decreasing length: at position j the first active[j] are still going
        self.active = np.asarray([int((lengths > j).sum()) for j in range(width)], dtype=np.int64)
        self.token_bytes = [bytes(decoded_vocab[t]) for t in ids]
        self.columns = np.ascontiguousarray(data_bytes.T)  # byte j of every token, contiguous
        # the set of bytes of each token, as four 64-bit words
        present = np.zeros((len(ids), 256), dtype=bool)
        rows = np.repeat(np.arange(len(ids)), lengths)
        present[rows, data_bytes[np.arange(width) < lengths[:, None]]] = True
        self.byte_sets = np.packbits(present, axis=1, bitorder="little").view(np.uint64)
        self.words = self.ids >> 5
        self.bits = np.left_shift(np.uint32(1), (self.ids & 31).astype(np.uint32)).view(np.int32)
        mask = np.zeros(num_words, dtype=np.int32)
        np.bitwise_or.at(mask, self.words, self.bits)
        self._others = ~mask  # every token but these
        # per set of bytes a state loops on: the tokens made only of them and the others (see apply)
        self._loop_splits: BoundedMemo[tuple[np.ndarray, np.ndarray]] = BoundedMemo(max_entries=_LOOP_SETS)
        # the chain each token needs from a state to pass whole (see char_chains)
        needs = np.array([token_needs(decoded_vocab[t]) for t in ids], dtype=np.int64).reshape(-1, 3)
        self.needs = np.ascontiguousarray(needs.T)  # one row per chain kind
        self.depth = depth

    def survivors(self, transitions: np.ndarray, state: int) -> np.ndarray | None:
        """The long tokens (indices into :attr:`ids`, sorted) that can be allowed in ``state``'s class.

        These are the tokens whose first ``depth`` bytes stay alive from
        ``state``; states equivalent up to ``depth`` bytes agree on them, so
        the result holds for the whole class of ``state``: only these tokens
        can be allowed in any of its states. When more than a few are alive
        after ``_SURVIVOR_BYTES`` bytes, the result is those alive then (a
        superset that holds for the class too: a run of blanks keeps the
        long runs of spaces, which :meth:`apply` passes by their chain), or
        ``None`` when there are more than ``_MANY_SURVIVORS`` (inside a
        string, most are): then filtering them would cost as much as
        :meth:`apply`.
        """
        width = min(self.depth, self.columns.shape[0])  # every long token has these bytes
        flat = transitions.reshape(-1)
        idx = np.arange(self.ids.size, dtype=np.int64)
        cur = np.full(idx.size, state, dtype=np.int64)
        done = 0
        while done < width and idx.size > _FEW_LONG:
            if done >= _SURVIVOR_BYTES:
                return idx if idx.size <= _MANY_SURVIVORS else None
            idx, cur = self._step(flat, idx, cur, done)
            done += 1
        if idx.size > _FEW_LONG:
            return None
        return self._run_each(flat, idx, cur, done, width)  # the few left: up to the depth, one by one

    def apply(
        self,
        base: np.ndarray,
        transitions: np.ndarray,
        state: int,
        chains: Sequence[int] | None = None,
        survivors: np.ndarray | None = None,
    ) -> np.ndarray:
        """``base`` with its long-token bits replaced by those valid from ``state``.

        ``chains``: the state's chain length of each kind
        (:func:`~tokensieve.compile.char_chains.chain_lengths`), if known; tokens
        of a kind no longer than the state's chain pass without a run, and the
        longer ones of a one-byte-per-step kind run only their bytes past the
        chain, from its end.
        ``survivors``: :meth:`survivors` of a state equivalent to ``state``, if
        known (only they can pass).
        """
        out = np.bitwise_and(base, self._others, out=friendly_zeros(base.shape[0]))
        if not self.ids.size:
            return out
        flat = transitions.reshape(-1)
        ended: list[np.ndarray] = []
        if survivors is not None:
            if not survivors.size:
                return out
            idx = survivors
        else:
            # tokens made only of bytes that loop on ``state`` (free text in a string) stay there
            loops = np.packbits(transitions[state] == state, bitorder="little")
            key = loops.tobytes()
            split = self._loop_splits.get(key)
            if split is None:
                away = self.byte_sets & ~loops.view(np.uint64)
                outside = (away[:, 0] | away[:, 1] | away[:, 2] | away[:, 3]) != 0
                split = (np.flatnonzero(~outside), np.flatnonzero(outside))
                self._loop_splits.put(key, split)
            ended.append(split[0])
            idx = split[1]
        if chains is not None:
            step = flat.item
            for kind, (need, length) in enumerate(zip(self.needs, chains, strict=True)):
                if not length or not idx.size:
                    continue
                wanted = need.take(idx)
                covered = wanted <= length
                ended.append(idx[covered])
                if kind != _CHARS:
                    # longer tokens of a one-byte-per-step kind: the chain's steps hold, the rest runs from its end
                    longer = ~covered & (wanted < NOT_OF_KIND)
                    if longer.any():
                        end = state
                        for _ in range(length):
                            end = step((end << 8) | _CHAIN_BYTE[kind])
                        ended.append(self._run(flat, idx[longer], end, length))
                        covered |= longer
                idx = idx[~covered]
        ended.append(self._run(flat, idx, state, 0))
        ok = np.concatenate(ended)
        if ok.size:
            or_distinct_bits(out, self.words.take(ok), self.bits.take(ok))
        return out

    def _run(self, flat: np.ndarray, idx: np.ndarray, state: int, start: int) -> np.ndarray:
        """The tokens of ``idx`` (sorted) whose bytes from ``start`` on run to their end from ``state``.

        One numpy step per byte position while many are still going, then one by one.
        """
        cur = np.full(idx.size, state, dtype=np.int64)
        ended: list[np.ndarray] = []
        active = self.active
        j = start
        while idx.size > _FEW_LONG:
            if j >= active.size:
                break
            k = int(np.searchsorted(idx, active[j]))  # idx is sorted: rows >= active[j] have no byte j
            if k < idx.size:
                ended.append(idx[k:])
                idx, cur = idx[:k], cur[:k]
            idx, cur = self._step(flat, idx, cur, j)
            j += 1
        ended.append(self._run_each(flat, idx, cur, j))
        return np.concatenate(ended) if len(ended) > 1 else ended[0]

    def _step(self, flat: np.ndarray, idx: np.ndarray, cur: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Byte ``j`` of the tokens ``idx`` (each in its state of ``cur``): the tokens still alive, their states."""
        nxt = flat.take(cur * 256 + self.columns[j].take(idx))
        live = nxt >= 0
        return idx[live], nxt[live]

    def _run_each(
        self, flat: np.ndarray, idx: np.ndarray, cur: np.ndarray, start: int, stop: int | None = None
    ) -> np.ndarray:
        """The tokens of ``idx`` (in states ``cur``, at byte ``start``) that run to their end (or to byte ``stop``)."""
        ok: list[int] = []
        data = self.token_bytes
        step = flat.item
        for t, q in zip(idx.tolist(), cur.tolist(), strict=True):
            for b in data[t][start:stop]:
                q = step((q << 8) | b)
                if q < 0:
                    break
            else:
                ok.append(t)
        return np.asarray(ok, dtype=np.int64)
