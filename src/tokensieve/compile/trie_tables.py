"""The per-vocabulary tables of a walk of the token trie, and the walk's plain-Python tail.

:class:`TrieTables` holds what every walk over one vocabulary reads: the
trie's children in CSR form, dense child tables of the hub nodes (the root and
common prefixes, with at least ``_HUB_MIN_CHILDREN`` children) and the child
bytes of the others, each node's slice of the byte-sorted tokens, the tokens'
(word, bit) places in a packed mask, the stop tokens, and the per-node needs of
the subtree closures. Its methods are the steps of a walk that do not depend on
how the walk is driven (:class:`~tokensieve.compile.token_masks.TokenMaskBuilder`):
finding children from either side, and visiting the last few small subtrees
depth first in plain Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._arrays import concat_ranges as _ranges
from ..vocab.trie import TokenTrie
from .char_chains import node_chain_needs, node_suffix_needs
from .utf8_closure import utf8_subtree_ok

if TYPE_CHECKING:
    from .automaton_view import AutomatonView

__all__ = ["TrieTables"]

#: nodes with at least this many children get a row in the dense child table
_HUB_MIN_CHILDREN = 4


class TrieTables:
    """The arrays of one vocabulary's token trie that walks read, built once.

    Parameters
    ----------
    trie, vocab_size, stop_token_ids
        As for :class:`~tokensieve.compile.token_masks.TokenMaskBuilder`.
    """

    def __init__(self, trie: TokenTrie, vocab_size: int, stop_token_ids: Sequence[int]) -> None:
        self.trie = trie
        self.vocab_size = int(vocab_size)
        self.num_words = (self.vocab_size + 31) // 32
        self.stop_token_ids = np.asarray(sorted(set(int(i) for i in stop_token_ids)), dtype=np.int64)
        n = trie.num_nodes
        self._child_start = trie.child_start.astype(np.int64)
        self._child_ids = trie.child_ids.astype(np.int64)
        self._child_byte = trie.node_byte.astype(np.int64)[self._child_ids]
        self._nchild = np.diff(self._child_start)
        self._token_lo = trie.token_lo.astype(np.int64)
        self._token_mid = trie.token_mid.astype(np.int64)
        self._token_hi = trie.token_hi.astype(np.int64)
        self._sorted_tokens = trie.sorted_tokens.astype(np.int64)
        self._num_tokens = trie.num_tokens
        self._sub_bytes = trie.subtree_bytes

        # dense child tables of the hub nodes (the root always has one)
        is_hub = self._nchild >= _HUB_MIN_CHILDREN
        is_hub[0] = True
        hubs = np.flatnonzero(is_hub)
        self._hub_row = np.full(n, -1, dtype=np.int64)
        self._hub_row[hubs] = np.arange(hubs.size, dtype=np.int64)
        parent_of_entry = np.repeat(np.arange(n, dtype=np.int64), self._nchild)
        row = self._hub_row[parent_of_entry]
        in_hub = row >= 0
        self._hub_table = np.full(hubs.size * 256, -1, dtype=np.int64)
        self._hub_table[(row[in_hub] << 8) | self._child_byte[in_hub]] = self._child_ids[in_hub]
        self._root_table = self._hub_table[:256]
        # child bytes of the other nodes, padded with 256 (matches no byte)
        few = _HUB_MIN_CHILDREN - 1
        self._few_bytes = np.full((n, few), 256, dtype=np.int16)
        rank = np.arange(self._child_ids.size, dtype=np.int64) - self._child_start[parent_of_entry]
        small = ~in_hub
        self._few_bytes[parent_of_entry[small], rank[small]] = self._child_byte[small]
        self._cids_pad = np.concatenate([self._child_ids, np.full(few, -1, dtype=np.int64)])

        self._stop_words = self.stop_token_ids >> 5
        self._stop_bits = np.left_shift(np.uint32(1), (self.stop_token_ids & 31).astype(np.uint32))
        #: ``(word, bit)`` of the stop tokens, merged per word, as Python ints
        merged: dict[int, int] = {}
        for word, bit in zip(self._stop_words.tolist(), self._stop_bits.tolist(), strict=True):
            merged[word] = merged.get(word, 0) | bit
        self.stop_pairs = tuple(merged.items())
        # word index and bit of every token, in byte-sorted order
        self._sorted_word = self._sorted_tokens >> 5
        self._sorted_bit = np.left_shift(np.uint32(1), (self._sorted_tokens & 31).astype(np.uint32))
        # the tail of a walk in plain Python (see _finish_in_python): the nodes below each node, itself
        # included (preorder numbering: a subtree is an id range)
        self._nodes_below = trie.subtree_end.astype(np.int64) - np.arange(n, dtype=np.int64)
        #: per trie node: its path ends on a character boundary and every token below is well-formed UTF-8
        self.utf8_ok = utf8_subtree_ok(trie)
        #: per trie node, the plain ASCII, plain character and blank chains that allow its subtree whole
        self.chain_needs = node_chain_needs(trie)
        #: per trie node, the shortest of those chains (no chain of a state shorter than it closes the node)
        self.chain_need_min = np.minimum(np.minimum(self.chain_needs[0], self.chain_needs[1]), self.chain_needs[2])
        #: per trie node, the class chain that allows its subtree whole (the bytes below it permitting)
        self.suffix_need = node_suffix_needs(trie)

    def _finish_in_python(
        self,
        a: AutomatonView,
        node: np.ndarray,
        state: np.ndarray,
        owner: np.ndarray,
        single: bool,
        chains: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
        events: np.ndarray | None = None,
        report: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        """Every (node, owner) pair reached below the given pairs (themselves included), depth first.

        Returns the nodes, the end of each one's slice of ``sorted_tokens`` and
        the owners, and with ``events`` the (node, state, owner) pairs met whose
        state is in ``events`` (the given pairs only with ``report``). With
        ``chains`` (:attr:`AutomatonView.chains`), a subtree a chain allows
        whole (a run of blanks in the indentation) is one slice, and its events
        are not looked for, as in the numpy levels; the loop closures are not
        taken (they are rare this deep), which gives the same tokens, and the
        events met below them are reported as well.
        """
        assert a.trans is not None
        # memoryviews: single entries read as Python ints, without numpy's per-call cost
        trans, start, ids, byte = a.trans.data, self._child_start.data, self._child_ids.data, self._child_byte.data
        token_mid, token_hi = self._token_mid.data, self._token_hi.data
        owners = [0] * node.size if single else owner.tolist()
        stack = list(zip(node.tolist(), state.tolist(), owners, strict=True))
        met: list[tuple[int, int, int]] | None = None
        event = None
        if events is not None:
            event = events.data
            met = [p for p in stack if event[p[1]]] if report else []
        out_nodes: list[int] = []
        out_ends: list[int] = []
        out_owners: list[int] = []
        pop, push = stack.pop, stack.append
        if chains is not None:
            ascii_len, char_len, blank_len = (c.data for c in chains)
            ascii_need, char_need, blank_need = (c.data for c in self.chain_needs)
        while stack:
            n, q, o = pop()
            out_nodes.append(n)
            out_owners.append(o)
            first, last = start[n], start[n + 1]
            if chains is not None and first < last:
                if blank_need[n] <= blank_len[q] or ascii_need[n] <= ascii_len[q] or char_need[n] <= char_len[q]:
                    out_ends.append(token_hi[n])
                    continue
            out_ends.append(token_mid[n])
            row = q << 8
            for k in range(first, last):
                t = trans[row | byte[k]]
                if t >= 0:
                    push((ids[k], t, o))
                    if event is not None and event[t]:
                        assert met is not None
                        met.append((ids[k], t, o))
        found = None
        if met is not None:
            pairs = np.array(met, dtype=np.int64).reshape(-1, 3)
            found = (pairs[:, 0].copy(), pairs[:, 1].copy(), pairs[:, 2].copy())
        return (
            np.array(out_nodes, dtype=np.int64),
            np.array(out_ends, dtype=np.int64),
            np.array(out_owners, dtype=np.int64),
            found,
        )

    def _expand_by_automaton(
        self,
        a: AutomatonView,
        node: np.ndarray,
        state: np.ndarray,
        owner: np.ndarray,
        single: bool,
        hub: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Children of frontier elements, by the state's outgoing edges (``hub``: rows of hub nodes, if all are)."""
        deg = a.outdeg.take(state)
        pos = _ranges(a.out_start.take(state), deg)
        byte = a.out_byte.take(pos)
        parent = np.repeat(node if hub is None else hub, deg)
        kid = self._child(parent, byte) if hub is None else self._hub_table.take((parent << 8) | byte)
        ok = kid >= 0
        new_owner = owner if single else np.repeat(owner, deg)[ok]
        return kid[ok], a.out_next.take(pos)[ok], new_owner

    def _child(self, parent: np.ndarray, byte: np.ndarray) -> np.ndarray:
        """Child of each ``parent`` node along ``byte`` (-1 where there is none)."""
        hub = self._hub_row.take(parent)
        is_hub = hub >= 0
        n_hub = int(np.count_nonzero(is_hub))
        if n_hub == parent.size:
            return self._hub_table.take((hub << 8) | byte)
        kid = np.full(parent.size, -1, dtype=np.int64)
        if n_hub:
            h = np.flatnonzero(is_hub)
            kid[h] = self._hub_table.take((hub.take(h) << 8) | byte.take(h))
            few = np.flatnonzero(~is_hub)
            p, b = parent.take(few), byte.take(few)
        else:
            few, p, b = None, parent, byte
        # nodes with fewer than _HUB_MIN_CHILDREN children: compare with each child byte
        rows = self._few_bytes.take(p, axis=0)
        found = np.full(p.size, -1, dtype=np.int64)
        for j in range(rows.shape[1]):
            found[rows[:, j] == b] = j
        hit = found >= 0
        got = np.where(hit, self._cids_pad.take(self._child_start.take(p) + np.maximum(found, 0)), -1)
        if few is None:
            return got
        kid[few] = got
        return kid

    def ranges_to_bool(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Boolean row over token ids for the union of sorted-token slices."""
        allowed = np.zeros(self.num_words * 32, dtype=bool)
        if lo.size == 0:
            return allowed
        lengths = hi - lo
        total = int(lengths.sum())
        if total * 4 < self._num_tokens:
            allowed[self._sorted_tokens[_ranges(lo, lengths)]] = True
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
