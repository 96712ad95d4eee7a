"""A finite list of strings to its minimal acyclic byte DFA, directly.

The strings are encoded, deduplicated and sorted; the trie of the sorted list
is laid out in flat numpy arrays (a string adds the nodes below its longest
common prefix with its predecessor, so nodes come in depth-first preorder);
then equivalent nodes are merged bottom-up. Two trie nodes are equivalent iff
they have the same height (longest path to a leaf), finality and outgoing
``(byte, class of child)`` edges, so the nodes of each height are classified
together with one exact ``numpy.unique`` per out-degree. Nothing loops over
bytes or nodes in Python: the work is numpy passes over all nodes, one pass per
depth and per height level, and a Python scan over the strings (finding where
each string branches off the trie).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import GrammarError, LimitExceeded
from ..limits import Limits
from .dfa import ByteDFA

__all__ = ["choices_to_dfa"]

# pairs compared per numpy pass when computing common prefixes
_LCP_WINDOW = 16


def choices_to_dfa(strings: Sequence[str | bytes], limits: Limits | None = None) -> ByteDFA:
    """Minimal DFA accepting exactly the given strings.

    Parameters
    ----------
    strings
        The choices: text (UTF-8 encoded) or raw bytes. Duplicates and the empty
        string are allowed.
    limits
        ``max_choices`` and ``max_choice_bytes`` apply.

    Returns
    -------
    ByteDFA
        Minimal, trimmed and acyclic; states numbered breadth-first from the
        start state 0 (successors by byte), as :func:`regex_to_dfa` numbers them.

    Raises
    ------
    GrammarError
        For an empty list, or text that has no UTF-8 form (lone surrogates).
    LimitExceeded
        When the list exceeds ``limits.max_choices`` strings or
        ``limits.max_choice_bytes`` bytes.
    """
    limits = limits or Limits()
    if isinstance(strings, (str, bytes)):
        raise TypeError("strings must be a sequence of strings, not a single string")
    if len(strings) == 0:
        raise GrammarError("the choice list is empty (it matches no string)")
    if len(strings) > limits.max_choices:
        raise LimitExceeded("max_choices", limits.max_choices, f"{len(strings)} choices")
    encoded = _encode_all(strings)
    total = sum(map(len, encoded))
    if total > limits.max_choice_bytes:
        raise LimitExceeded("max_choice_bytes", limits.max_choice_bytes, f"the choices hold {total} bytes")
    uniq = sorted(set(encoded))
    return _build(uniq)


def _encode_all(strings: Sequence[str | bytes]) -> list[bytes]:
    try:
        return [s.encode("utf-8") if isinstance(s, str) else _raw(s) for s in strings]
    except (UnicodeEncodeError, TypeError):
        pass  # find the culprit below
    out = []
    for i, s in enumerate(strings):
        if isinstance(s, str):
            try:
                out.append(s.encode("utf-8"))
            except UnicodeEncodeError as exc:
                raise GrammarError(f"choice {i} is not valid Unicode text ({exc.reason})") from None
        elif isinstance(s, (bytes, bytearray, memoryview)):
            out.append(bytes(s))
        else:
            raise TypeError(f"choice {i} must be str or bytes, not {type(s).__name__}")
    return out


def _raw(item: object) -> bytes:
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    raise TypeError


def _common_prefixes(flat: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``lcp[i]``: length of the common prefix of strings ``i - 1`` and ``i`` (``lcp[0] = 0``)."""
    n = len(lengths)
    lcp = np.zeros(n, dtype=np.int64)
    if n < 2:
        return lcp
    limit = np.minimum(lengths[:-1], lengths[1:])
    a_off = offsets[:-1].copy()
    b_off = offsets[1:].copy()
    padded = np.concatenate([flat, np.zeros(_LCP_WINDOW, dtype=np.uint8)])
    active = np.flatnonzero(limit > 0)
    window = np.arange(_LCP_WINDOW)
    done = 0
    while len(active):
        a = padded[(a_off[active] + done)[:, None] + window]
        b = padded[(b_off[active] + done)[:, None] + window]
        eq = a == b
        all_eq = eq.all(axis=1)
        first = np.where(all_eq, _LCP_WINDOW, np.argmin(eq, axis=1))
        found = np.minimum(done + first, limit[active])
        lcp[active + 1] = found
        still = all_eq & (done + _LCP_WINDOW < limit[active])
        active = active[still]
        done += _LCP_WINDOW
    return lcp


def _build(uniq: list[bytes]) -> ByteDFA:
    n = len(uniq)
    lengths = np.fromiter(map(len, uniq), dtype=np.int64, count=n)
    flat = np.frombuffer(b"".join(uniq), dtype=np.uint8)
    offsets = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    lcp = _common_prefixes(flat, offsets, lengths)

    # trie nodes: string i adds the nodes at depths lcp[i]+1 .. len[i]
    new = lengths - lcp
    base = np.ones(n, dtype=np.int64)
    np.cumsum(new[:-1], out=base[1:])
    base[1:] += 1
    num_nodes = int(1 + new.sum())
    owner = np.repeat(np.arange(n), new)  # string that created each non-root node
    first_of_owner = base[owner]
    depth_all = np.empty(num_nodes, dtype=np.int64)
    depth_all[0] = 0
    depth_all[1:] = lcp[owner] + 1 + (np.arange(1, num_nodes) - first_of_owner)
    byte_all = np.zeros(num_nodes, dtype=np.int64)
    byte_all[1:] = flat[offsets[owner] + depth_all[1:] - 1]
    parent = np.empty(num_nodes, dtype=np.int64)
    parent[0] = -1
    parent[1:] = np.arange(num_nodes - 1)  # inside a string's chain: the previous node
    parent[base[new > 0]] = _first_parents(lcp, base, new)
    final = np.zeros(num_nodes, dtype=bool)
    final[(base + new - 1)[new > 0]] = True
    if lengths[0] == 0:
        final[0] = True

    height = _heights(parent, depth_all)
    cls = _classify(parent, byte_all, final, height)
    num_states = int(cls.max()) + 1
    # the minimal DFA's transitions, once each, sorted by (source, byte): the
    # edges leaving one representative node of each class (any node will do)
    par = parent[1:]
    src_all = cls[par]
    rep = np.empty(num_states, dtype=np.int64)
    rep[cls[::-1]] = np.arange(num_nodes - 1, -1, -1)
    keep = rep[src_all] == par
    keys = src_all[keep] * 256 + byte_all[1:][keep]
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    src, byte, dst = keys >> 8, keys & 255, cls[1:][keep][order]
    accepting_old = np.zeros(num_states, dtype=bool)
    accepting_old[cls[final]] = True
    new_id = _bfs_order(src, dst, num_states, int(cls[0]))
    trans = np.full((num_states, 256), -1, dtype=np.int32)
    trans[new_id[src], byte] = new_id[dst]
    accepting = np.zeros(num_states, dtype=bool)
    accepting[new_id] = accepting_old
    trans.setflags(write=False)
    accepting.setflags(write=False)
    return ByteDFA(trans, accepting, 0)


def _bfs_order(src: np.ndarray, dst: np.ndarray, num_states: int, start: int) -> np.ndarray:
    """New number of every state: breadth-first from ``start``, successors by byte.

    ``src`` must be sorted (and each state's edges sorted by byte).
    """
    ptr = np.zeros(num_states + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=num_states), out=ptr[1:])
    new_id = np.full(num_states, -1, dtype=np.int64)
    new_id[start] = 0
    count = 1
    frontier = np.array([start], dtype=np.int64)
    while len(frontier):
        lens = ptr[frontier + 1] - ptr[frontier]
        total = int(lens.sum())
        if total == 0:
            break
        offsets = np.repeat(ptr[frontier] - np.cumsum(lens) + lens, lens)
        targets = dst[offsets + np.arange(total)]
        targets = targets[new_id[targets] < 0]
        if not len(targets):
            break
        _, first = np.unique(targets, return_index=True)
        fresh = targets[np.sort(first)]
        new_id[fresh] = np.arange(count, count + len(fresh))
        count += len(fresh)
        frontier = fresh
    return new_id


def _first_parents(lcp: np.ndarray, base: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Parent of the first new node of every string that adds nodes.

    It is the node at depth ``lcp[i]`` on the path of string ``i - 1``, created
    by the last string ``k < i`` whose own prefix with its predecessor is
    shorter (``lcp[k] < lcp[i]``): a previous-smaller-element scan.
    """
    lcp_list = lcp.tolist()
    base_list = base.tolist()
    out = []
    stack: list[int] = []
    for i, t in enumerate(lcp_list):
        while stack and lcp_list[stack[-1]] >= t:
            stack.pop()
        if t == 0:
            out.append(0)
        else:
            k = stack[-1]
            out.append(base_list[k] + t - lcp_list[k] - 1)
        stack.append(i)
    parents = np.asarray(out, dtype=np.int64)
    return parents[new > 0]


def _heights(parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Longest distance from each node to a leaf, one depth level at a time (deepest first)."""
    num_nodes = len(parent)
    height = np.zeros(num_nodes, dtype=np.int64)
    order = np.argsort(_small(depth), kind="stable")
    counts = np.bincount(depth)
    ends = np.cumsum(counts)
    for d in range(len(counts) - 1, 0, -1):
        nodes = order[ends[d] - counts[d] : ends[d]]  # increasing ids, so parents are sorted
        par = parent[nodes]
        cand = height[nodes] + 1
        starts = np.flatnonzero(np.r_[True, par[1:] != par[:-1]])
        best = np.maximum.reduceat(cand, starts)
        ps = par[starts]
        height[ps] = np.maximum(height[ps], best)
    return height


def _classify(parent: np.ndarray, byte: np.ndarray, final: np.ndarray, height: np.ndarray) -> np.ndarray:
    """Equivalence class of every node (numbered so that the root's is 0)."""
    num_nodes = len(parent)
    # children of each node, by (parent, byte): CSR over the non-root nodes
    kids = np.argsort(parent[1:], kind="stable") + 1
    degree = np.bincount(parent[1:], minlength=num_nodes)
    ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(degree, out=ptr[1:])
    cls = np.full(num_nodes, -1, dtype=np.int64)
    order = np.argsort(_small(height), kind="stable")
    counts = np.bincount(height)
    ends = np.cumsum(counts)
    next_id = 0
    for h in range(len(counts)):
        nodes = order[ends[h] - counts[h] : ends[h]]
        if not len(nodes):
            continue
        degs = degree[nodes]
        for d in np.unique(degs).tolist():
            group = nodes[degs == d]
            if d == 0:
                cols = final[group, None].astype(np.int64)
            else:
                children = kids[ptr[group, None] + np.arange(d)]
                cols = np.concatenate(
                    [final[group, None].astype(np.int64), byte[children], cls[children]], axis=1
                )
            keys = np.ascontiguousarray(cols).view(np.dtype((np.void, cols.dtype.itemsize * cols.shape[1])))[
                :, 0
            ]
            _, inverse = np.unique(keys, return_inverse=True)
            inverse = inverse.reshape(-1)
            cls[group] = next_id + inverse
            next_id += int(inverse.max()) + 1
    # highest classes first, so the root (alone at the greatest height) gets 0
    return next_id - 1 - cls


def _small(values: np.ndarray) -> np.ndarray:
    """``values`` as ``uint16`` when they fit (numpy sorts those stably by radix sort)."""
    if len(values) and int(values.max()) < (1 << 16):
        return values.astype(np.uint16)
    return values
