"""A finite list of strings to its minimal acyclic byte DFA, directly.

The strings are encoded, deduplicated and sorted; the trie of the sorted list
is laid out in flat numpy arrays (a string adds the nodes below its longest
common prefix with its predecessor, so nodes come in depth-first preorder);
then equivalent nodes are merged. Two trie nodes are equivalent iff their
subtrees are isomorphic, so every node gets a 64-bit hash of its subtree
(finality plus the hashes of its ``(byte, child)`` edges, one numpy pass per
depth, deepest first) and nodes with equal hashes form a class. The classes are
then checked exactly (same finality, same bytes to children of the same class);
on a hash collision, which has never been seen, an exact classification by
height and out-degree takes over. Nothing loops over bytes or nodes in Python.

The result has no ``(S, 256)`` table: it is built from its edges
(:meth:`ByteDFA.from_edges`), so a catalog of a million entries costs memory in
proportion to its transitions, not 1 KiB per state.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._arrays import sorted_unique
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

    kids, ptr = _children(parent)
    cls = _classify_by_hash(parent, depth_all, byte_all, final, kids, ptr)
    if cls is None:  # a hash collision (never seen in practice): classify exactly
        cls = _classify(parent, byte_all, final, _heights(parent, depth_all))
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
    src, dst = new_id[src], new_id[dst]
    accepting = np.zeros(num_states, dtype=bool)
    accepting[new_id] = accepting_old
    # each state's edges come from one node, in byte order: a stable sort by source keeps that order
    by_source = np.argsort(src.astype(np.uint16) if num_states <= 0xFFFF else src, kind="stable")
    edges = (src[by_source], byte[by_source], dst[by_source])
    # the (S, 256) table is built only if someone reads it: token masks and matching use the edges
    return ByteDFA.from_edges(num_states, edges, accepting, 0)


def _bfs_order(src: np.ndarray, dst: np.ndarray, num_states: int, start: int) -> np.ndarray:
    """New number of every state: breadth-first from ``start``, successors by byte.

    ``src`` must be sorted (and each state's edges sorted by byte).
    """
    ptr = np.zeros(num_states + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=num_states), out=ptr[1:])
    new_id = np.full(num_states, -1, dtype=np.int64)
    first_at = np.empty(num_states, dtype=np.int64)
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
        # keep the first occurrence of each target, in order
        where = np.arange(len(targets))
        first_at[targets] = len(targets)
        np.minimum.at(first_at, targets, where)
        fresh = targets[first_at[targets] == where]
        new_id[fresh] = np.arange(count, count + len(fresh))
        count += len(fresh)
        frontier = fresh
    return new_id


def _first_parents(lcp: np.ndarray, base: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Parent of the first new node of every string that adds nodes.

    It is the node at depth ``lcp[i]`` on the path of string ``i - 1``, created
    by the last string ``k < i`` whose own prefix with its predecessor is
    shorter (``lcp[k] < lcp[i]``): a previous-smaller-element search, done with
    one running maximum per distinct prefix length (or a stack scan when there
    are too many distinct lengths for that to pay).
    """
    n = len(lcp)
    wanted = np.flatnonzero((new > 0) & (lcp > 0))
    out = np.zeros(n, dtype=np.int64)
    if not wanted.size:
        return out[new > 0]
    values = np.flatnonzero(np.bincount(lcp[wanted]))
    if values.size * n > _VECTOR_SCAN_WORK:
        return _first_parents_scan(lcp, base, new)
    index = np.arange(n, dtype=np.int64)
    for t in values.tolist():
        last_shorter = np.maximum.accumulate(np.where(lcp < t, index, -1))
        at = wanted[lcp[wanted] == t]
        k = last_shorter[at - 1]
        out[at] = base[k] + t - lcp[k] - 1
    return out[new > 0]


# previous-smaller-element search: n * distinct lengths above which the stack scan is used
_VECTOR_SCAN_WORK = 1 << 26


def _first_parents_scan(lcp: np.ndarray, base: np.ndarray, new: np.ndarray) -> np.ndarray:
    """:func:`_first_parents` by a stack scan over the strings."""
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


def _children(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Children of every node in CSR form: ``kids[ptr[n]:ptr[n + 1]]``, by increasing id (so by byte)."""
    num_nodes = len(parent)
    kids = np.argsort(parent[1:], kind="stable") + 1
    ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent[1:], minlength=num_nodes), out=ptr[1:])
    return kids, ptr


_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_EDGE = np.uint64(0x9E3779B97F4A7C15)
_FINAL = np.uint64(0xD6E8FEB86659FD93)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on a ``uint64`` array."""
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def _classify_by_hash(
    parent: np.ndarray,
    depth: np.ndarray,
    byte: np.ndarray,
    final: np.ndarray,
    kids: np.ndarray,
    ptr: np.ndarray,
) -> np.ndarray | None:
    """Equivalence classes from a hash of every subtree, verified exactly.

    Equivalent nodes have isomorphic subtrees, hence equal hashes. The classes
    of equal hashes are then checked to be a congruence (same finality, same
    bytes to children of the same class); if they are, they are exactly the
    classes of equivalent nodes. Returns ``None`` on a collision.
    """
    num_nodes = len(parent)
    # nodes in depth-major order (stable, so increasing ids within a depth): each
    # depth is a contiguous slice, and parents of a slice are non-decreasing
    order = np.argsort(_small(depth), kind="stable")
    counts = np.bincount(depth)
    ends = np.cumsum(counts)
    where = np.empty(num_nodes, dtype=np.int64)
    where[order] = np.arange(num_nodes, dtype=np.int64)
    parent_at = where[parent[order[1:]]]  # order[0] is the root
    fin = final[order].astype(np.uint64) * _FINAL
    byte_u = byte[order].astype(np.uint64)
    acc = np.zeros(num_nodes, dtype=np.uint64)
    digest_at = np.zeros(num_nodes, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for d in range(len(counts) - 1, -1, -1):
            lo, hi = int(ends[d] - counts[d]), int(ends[d])
            h = acc[lo:hi]
            h += fin[lo:hi]
            digest_at[lo:hi] = _mix(h)
            if d == 0:
                break
            contrib = h * _EDGE
            contrib += byte_u[lo:hi]
            np.add.at(acc, parent_at[lo - 1 : hi - 1], _mix(contrib))
    digest = digest_at[where]
    # classes of equal digests (numbered by digest), each with a representative node
    by_digest = np.argsort(digest)
    sorted_digest = digest[by_digest]
    new_class = np.empty(num_nodes, dtype=bool)
    new_class[0] = True
    np.not_equal(sorted_digest[1:], sorted_digest[:-1], out=new_class[1:])
    cls = np.empty(num_nodes, dtype=np.int64)
    cls[by_digest] = np.cumsum(new_class) - 1
    rep = by_digest[np.flatnonzero(new_class)][cls]
    degree = np.diff(ptr)
    if not (np.array_equal(final, final[rep]) and np.array_equal(degree, degree[rep])):
        return None
    if len(kids):
        owner = parent[kids]
        twin = kids[ptr[rep[owner]] + (np.arange(len(kids)) - ptr[owner])]
        if not (np.array_equal(byte[kids], byte[twin]) and np.array_equal(cls[kids], cls[twin])):
            return None
    return cls


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
        for d in sorted_unique(degs).tolist():
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
