"""Token masks of automaton states, by a vectorised walk of the token trie.

For a byte DFA state ``s``, token ``t`` is allowed iff running the bytes of ``t``
from ``s`` never hits a missing transition (the DFA is trimmed, so every live
state can still reach acceptance). The walk expands a frontier of
``(trie node, DFA state, origin)`` triples one depth level at a time with numpy,
so shared prefixes are visited once and no Python code runs per token or per
node. Several origin states are walked together, which is how eager precompute
does a whole automaton in one pass.

Two shortcuts keep permissive states cheap:

* **subtree closure** — if every byte below trie node ``n`` loops on the state
  ``q`` reached at ``n`` (for example: inside a quoted string, or a ``[a-z]+``
  run), every token under ``n`` is allowed; the whole slice of ``sorted_tokens``
  is taken at once and the walk does not descend.
* **range output** — the walk emits slices of the byte-sorted token order, which
  become a boolean row through one difference-array pass.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..vocab.trie import TokenTrie

__all__ = ["TokenMaskBuilder", "loop_bytesets"]

_ONE = np.uint64(1)


def loop_bytesets(transitions: np.ndarray) -> np.ndarray:
    """256-bit sets of the bytes on which each state loops to itself.

    Parameters
    ----------
    transitions
        ``int32 (S, 256)`` transition table.

    Returns
    -------
    numpy.ndarray
        ``uint64 (S, 4)``: bit ``b`` of state ``s`` is set iff ``transitions[s, b] == s``.
    """
    s = transitions.shape[0]
    loops = transitions == np.arange(s, dtype=transitions.dtype)[:, None]
    packed = np.packbits(loops, axis=1, bitorder="little")  # (S, 32) uint8
    return np.ascontiguousarray(packed).view(np.uint64).reshape(s, 4)


class TokenMaskBuilder:
    """Computes packed token masks for automaton states over one vocabulary.

    Parameters
    ----------
    trie
        The vocabulary's token trie (special tokens excluded).
    vocab_size
        Width of the mask in tokens (may exceed the real token count).
    stop_token_ids
        Tokens allowed exactly in accepting states.
    """

    def __init__(self, trie: TokenTrie, vocab_size: int, stop_token_ids: Sequence[int]) -> None:
        self.trie = trie
        self.vocab_size = int(vocab_size)
        self.num_words = (self.vocab_size + 31) // 32
        self.stop_token_ids = np.asarray(sorted(set(int(i) for i in stop_token_ids)), dtype=np.int64)
        self._root_children = trie.children(0).astype(np.int64)
        self._root_bytes = trie.node_byte[self._root_children].astype(np.int64)
        self._node_byte = trie.node_byte.astype(np.int64)
        self._child_start = trie.child_start.astype(np.int64)
        self._child_ids = trie.child_ids.astype(np.int64)
        self._token_lo = trie.token_lo.astype(np.int64)
        self._token_mid = trie.token_mid.astype(np.int64)
        self._token_hi = trie.token_hi.astype(np.int64)
        self._sorted_tokens = trie.sorted_tokens.astype(np.int64)
        self._num_tokens = trie.num_tokens

    # ------------------------------------------------------------------ walk
    def walk(
        self, transitions: np.ndarray, loops: np.ndarray, states: Sequence[int]
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Allowed token slices for each of ``states``.

        Returns
        -------
        list of (lo, hi)
            For each requested state, arrays of slice bounds into the trie's
            ``sorted_tokens``; the allowed tokens are the union of the slices.
        """
        k = len(states)
        if k == 0:
            return []
        tflat = np.ascontiguousarray(transitions, dtype=np.int64).ravel()
        origin_states = np.asarray(states, dtype=np.int64)
        nroot = self._root_children.shape[0]
        owner = np.repeat(np.arange(k, dtype=np.int64), nroot)
        node = np.tile(self._root_children, k)
        state = tflat[(np.repeat(origin_states, nroot) << 8) | np.tile(self._root_bytes, k)]
        keep = state >= 0
        owner, node, state = owner[keep], node[keep], state[keep]

        sub_bytes = self.trie.subtree_bytes
        has_loops = bool(loops.any())
        out_owner: list[np.ndarray] = []
        out_lo: list[np.ndarray] = []
        out_hi: list[np.ndarray] = []
        lo_all, mid_all, hi_all = self._token_lo, self._token_mid, self._token_hi
        cstart, cids, nbyte = self._child_start, self._child_ids, self._node_byte
        while node.size:
            if has_loops:
                below = sub_bytes[node]
                closed = ~np.any(below & ~loops[state], axis=1)
                if closed.any():
                    cn = node[closed]
                    out_owner.append(owner[closed])
                    out_lo.append(lo_all[cn])
                    out_hi.append(hi_all[cn])
                    open_ = ~closed
                    owner, node, state = owner[open_], node[open_], state[open_]
                    if not node.size:
                        break
            lo = lo_all[node]
            mid = mid_all[node]
            exact = mid > lo
            if exact.any():
                out_owner.append(owner[exact])
                out_lo.append(lo[exact])
                out_hi.append(mid[exact])
            cs = cstart[node]
            cnt = cstart[node + 1] - cs
            total = int(cnt.sum())
            if total == 0:
                break
            ends = np.cumsum(cnt)
            pos = np.arange(total, dtype=np.int64) + np.repeat(cs - (ends - cnt), cnt)
            kids = cids[pos]
            nstate = tflat[(np.repeat(state, cnt) << 8) | nbyte[kids]]
            keep = nstate >= 0
            owner = np.repeat(owner, cnt)[keep]
            node = kids[keep]
            state = nstate[keep]

        if not out_owner:
            empty = np.zeros(0, dtype=np.int64)
            return [(empty, empty) for _ in range(k)]
        own = np.concatenate(out_owner)
        los = np.concatenate(out_lo)
        his = np.concatenate(out_hi)
        if k == 1:
            return [(los, his)]
        order = np.argsort(own, kind="stable")
        own, los, his = own[order], los[order], his[order]
        bounds = np.searchsorted(own, np.arange(k + 1))
        return [(los[bounds[i] : bounds[i + 1]], his[bounds[i] : bounds[i + 1]]) for i in range(k)]

    # ----------------------------------------------------------------- masks
    def ranges_to_bool(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Boolean row over token ids for the union of sorted-token slices."""
        allowed = np.zeros(self.num_words * 32, dtype=bool)
        if lo.size == 0:
            return allowed
        lengths = hi - lo
        total = int(lengths.sum())
        if total * 4 < self._num_tokens:
            ends = np.cumsum(lengths)
            pos = np.arange(total, dtype=np.int64) + np.repeat(lo - (ends - lengths), lengths)
            allowed[self._sorted_tokens[pos]] = True
        else:
            n = self._num_tokens
            diff = np.bincount(lo, minlength=n + 1)[: n + 1] - np.bincount(hi, minlength=n + 1)[: n + 1]
            inside = np.cumsum(diff[:n]) > 0
            allowed[self._sorted_tokens] = inside
        return allowed

    def pack(self, allowed: np.ndarray, accepting: bool) -> np.ndarray:
        """Pack a boolean row into int32 words, adding stop tokens if ``accepting``."""
        if accepting and self.stop_token_ids.size:
            allowed[self.stop_token_ids] = True
        return np.packbits(allowed, bitorder="little").view(np.int32)

    def masks(
        self, transitions: np.ndarray, accepting: np.ndarray, loops: np.ndarray, states: Sequence[int]
    ) -> list[np.ndarray]:
        """Packed ``int32 (num_words,)`` masks for each of ``states``."""
        result = []
        for s, (lo, hi) in zip(states, self.walk(transitions, loops, states), strict=True):
            result.append(self.pack(self.ranges_to_bool(lo, hi), bool(accepting[s])))
        return result
