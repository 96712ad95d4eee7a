"""A trie over token bytes, stored as flat numpy arrays.

The trie is the vocabulary's half of every token-mask computation: a walk of the
trie from an automaton state visits each shared prefix once, instead of running
every token through the automaton separately.

Layout
------
Nodes are numbered in depth-first preorder with children in byte order (node 0 is
the root, the empty prefix). Hence:

* the subtree of node ``n`` is the id range ``[n, subtree_end[n])``;
* tokens are numbered in byte-lexicographic order (``sorted_tokens``), and the
  tokens whose bytes start with the path to ``n`` form the contiguous slice
  ``sorted_tokens[token_lo[n]:token_hi[n]]``; those whose bytes *equal* the path
  come first, ``sorted_tokens[token_lo[n]:token_mid[n]]``;
* the children of ``n`` are ``child_ids[child_start[n]:child_start[n + 1]]``,
  sorted by their byte (CSR).

The build sorts the tokens once and derives every array from the longest common
prefixes of neighbours in sorted order; only one short Python loop per token
remains (it finds the parent of each token's first new node).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["TokenTrie"]


class TokenTrie:
    """Byte trie over a vocabulary's tokens in flat arrays.

    Parameters
    ----------
    token_bytes
        ``token_bytes[i]`` is the byte string of token ``i``.
    exclude
        Token ids left out of the trie (special tokens). Tokens with empty bytes
        are always left out.

    Attributes
    ----------
    num_nodes : int
        Number of nodes including the root.
    node_byte : numpy.ndarray
        ``uint8 (num_nodes,)``: the byte on the edge into each node (0 for the root).
    node_depth : numpy.ndarray
        ``int32 (num_nodes,)``: length of the node's path.
    node_parent : numpy.ndarray
        ``int32 (num_nodes,)``: parent id (-1 for the root).
    child_start, child_ids : numpy.ndarray
        CSR children lists, sorted by byte.
    subtree_end : numpy.ndarray
        ``int32 (num_nodes,)``: end of each node's preorder id range.
    sorted_tokens : numpy.ndarray
        ``int32 (T,)``: the token ids in the trie, sorted by their bytes.
    token_lo, token_mid, token_hi : numpy.ndarray
        ``int32 (num_nodes,)``: slices of ``sorted_tokens`` (see module docs).
    subtree_bytes : numpy.ndarray
        ``uint64 (num_nodes, 4)``: 256-bit set of the bytes on edges strictly
        below each node.
    max_depth : int
        Length of the longest token.
    """

    def __init__(self, token_bytes: Sequence[bytes], exclude: Sequence[int] = ()) -> None:
        excluded = set(int(i) for i in exclude)
        ids = [i for i, b in enumerate(token_bytes) if b and i not in excluded]
        ids.sort(key=token_bytes.__getitem__)
        toks = [token_bytes[i] for i in ids]
        t = len(toks)
        self.sorted_tokens = np.asarray(ids, dtype=np.int32)
        lengths = np.fromiter((len(b) for b in toks), dtype=np.int64, count=t)
        lcp = np.zeros(t, dtype=np.int64)
        for i in range(1, t):
            a, b = toks[i - 1], toks[i]
            n = min(len(a), len(b))
            k = 0
            # common prefix length; most neighbours diverge within a few bytes
            while k < n and a[k] == b[k]:
                k += 1
            lcp[i] = k
        created = lengths - lcp  # nodes each token adds
        start = np.empty(t, dtype=np.int64)
        if t:
            start[0] = 1
            np.cumsum(created[:-1], out=start[1:])
            start[1:] += 1
        num_nodes = 1 + int(created.sum())
        self.num_nodes = num_nodes
        self.max_depth = int(lengths.max()) if t else 0

        # creator token and depth of every non-root node
        creator = np.repeat(np.arange(t, dtype=np.int64), created)
        first = np.repeat(start, created)
        depth = np.zeros(num_nodes, dtype=np.int32)
        depth[1:] = (np.repeat(lcp, created) + 1 + (np.arange(num_nodes - 1) - (first - 1))).astype(np.int32)
        buf = b"".join(toks)
        offsets = np.zeros(t + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.frombuffer(buf, dtype=np.uint8)
        node_byte = np.zeros(num_nodes, dtype=np.uint8)
        if num_nodes > 1:
            node_byte[1:] = flat[offsets[creator] + depth[1:] - 1]

        # parents: the previous node, except for each token's first new node,
        # whose parent is the node of its common prefix with the previous token
        parent = np.arange(-1, num_nodes - 1, dtype=np.int64)
        first_parent = np.zeros(t, dtype=np.int64)
        path = [0] * (self.max_depth + 1)
        for i in range(t):
            li = int(lcp[i])
            first_parent[i] = path[li]
            c = int(created[i])
            if c:
                s = int(start[i])
                path[li + 1 : li + 1 + c] = range(s, s + c)
        has_new = created > 0
        parent[start[has_new]] = first_parent[has_new]
        parent[0] = -1
        self.node_parent = parent.astype(np.int32)
        self.node_depth = depth
        self.node_byte = node_byte

        # children in CSR form; preorder already lists siblings in byte order
        child_ids = (np.argsort(parent[1:], kind="stable") + 1).astype(np.int32)
        counts = np.bincount(parent[1:], minlength=num_nodes) if num_nodes > 1 else np.zeros(1, np.int64)
        child_start = np.zeros(num_nodes + 1, dtype=np.int32)
        np.cumsum(counts, out=child_start[1:])
        self.child_ids = child_ids
        self.child_start = child_start

        # subtree sizes and byte sets, bottom-up one depth level at a time
        size = np.ones(num_nodes, dtype=np.int64)
        sub = np.zeros((num_nodes, 4), dtype=np.uint64)
        bit_words = np.zeros((num_nodes, 4), dtype=np.uint64)
        nb = node_byte.astype(np.int64)
        bit_words[np.arange(num_nodes), nb >> 6] = np.left_shift(np.uint64(1), (nb & 63).astype(np.uint64))
        bit_words[0] = 0
        order = np.argsort(depth, kind="stable")
        level_bounds = np.searchsorted(depth[order], np.arange(self.max_depth + 2))
        for d in range(self.max_depth, 0, -1):
            nodes = order[level_bounds[d] : level_bounds[d + 1]]
            par = parent[nodes]
            np.add.at(size, par, size[nodes])
            np.bitwise_or.at(sub, par, sub[nodes] | bit_words[nodes])
        self.subtree_end = (np.arange(num_nodes) + size).astype(np.int32)
        self.subtree_bytes = sub

        # token slices
        token_lo = np.zeros(num_nodes, dtype=np.int64)
        token_lo[1:] = creator
        creator_ext = np.append(np.concatenate([[0], creator]), t)  # creator of node id, t past the end
        token_hi = creator_ext[self.subtree_end]
        token_hi[0] = t
        terminal = np.empty(t, dtype=np.int64)
        if t:
            last_new = start + created - 1
            # duplicates (no new node) end at the previous token's terminal node
            idx = np.where(has_new, np.arange(t), -1)
            np.maximum.accumulate(idx, out=idx)
            terminal[:] = last_new[idx]
        exact = np.bincount(terminal, minlength=num_nodes) if t else np.zeros(num_nodes, np.int64)
        self.token_lo = token_lo.astype(np.int32)
        self.token_mid = (token_lo + exact).astype(np.int32)
        self.token_hi = token_hi.astype(np.int32)
        self.token_terminal_sorted = terminal.astype(np.int32)
        self._level_order = order.astype(np.int32)
        self._level_bounds = level_bounds.astype(np.int32)

    @property
    def num_tokens(self) -> int:
        """Number of tokens stored in the trie."""
        return int(self.sorted_tokens.shape[0])

    def nodes_at_depth(self, depth: int) -> np.ndarray:
        """Node ids whose path has length ``depth``."""
        if depth < 0 or depth > self.max_depth:
            return np.zeros(0, dtype=np.int32)
        return self._level_order[self._level_bounds[depth] : self._level_bounds[depth + 1]]

    def marked_on_path(self, marked: np.ndarray) -> np.ndarray:
        """Per node, how many nodes of its path are marked (itself included, the root never).

        Parameters
        ----------
        marked
            ``bool (num_nodes,)``.

        Returns
        -------
        numpy.ndarray
            ``int64 (num_nodes,)``. Nodes are numbered in preorder, so the
            nodes below a marked node are an id range: one prefix sum counts
            the marked ancestors of every node at once.
        """
        n = self.num_nodes
        ids = np.flatnonzero(marked[1:]) + 1
        ends = self.subtree_end.astype(np.int64)[ids]
        cover = np.bincount(ids, minlength=n + 1)[:n] - np.bincount(ends, minlength=n + 1)[:n]
        return np.cumsum(cover)

    def children(self, node: int) -> np.ndarray:
        """Child node ids of ``node``, in byte order."""
        return self.child_ids[self.child_start[node] : self.child_start[node + 1]]

    def find(self, data: bytes) -> int:
        """Node id of the path ``data``, or -1 if no token starts with it."""
        node = 0
        for byte in data:
            kids = self.children(node)
            pos = int(np.searchsorted(self.node_byte[kids], byte))
            if pos >= len(kids) or self.node_byte[kids[pos]] != byte:
                return -1
            node = int(kids[pos])
        return node

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays, in bytes."""
        return sum(
            a.nbytes
            for a in (
                self.node_byte,
                self.node_depth,
                self.node_parent,
                self.child_start,
                self.child_ids,
                self.subtree_end,
                self.sorted_tokens,
                self.token_lo,
                self.token_mid,
                self.token_hi,
                self.subtree_bytes,
                self.token_terminal_sorted,
                self._level_order,
                self._level_bounds,
            )
        )
