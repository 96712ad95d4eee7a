"""The UTF-8 closure shortcut: whole trie subtrees inside "any character" loops.

A state such as "inside a JSON string" loops on the allowed ASCII bytes and
accepts *every* non-ASCII character, through a small UTF-8 sub-automaton that
returns to the state. Self-loop bytesets alone cannot cover the multi-byte
characters (their bytes lead to other states), so most tokens of a multilingual
vocabulary would be walked byte by byte.

Instead, once per vocabulary, every trie node gets the state of the canonical
UTF-8 automaton after its bytes; a prefix sum over the DFS preorder then says
whether *every* token below a node is well-formed UTF-8 text (complete
characters, possibly ending inside one). And once per automaton state, a short
product walk checks that the state's non-ASCII behaviour is exactly the
canonical automaton's, returning to the state itself. Where both hold, a trie
node whose subtree uses only the state's ASCII loop bytes and non-ASCII bytes
is allowed whole.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..vocab.trie import TokenTrie

__all__ = [
    "HIGH_BYTES",
    "UTF8_DOT_TABLE",
    "UTF8_TABLE",
    "is_utf8_closed",
    "utf8_closed_states",
    "utf8_node_states",
    "utf8_node_steps",
    "utf8_subtree_ok",
]


def _canonical_table() -> np.ndarray:
    """Well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF) as a byte DFA.

    States: 0 at a character boundary; 1, 2, 3 expecting that many continuation
    bytes; 4 after ``E0`` (next A0–BF); 5 after ``ED`` (80–9F); 6 after ``F0``
    (90–BF); 7 after ``F4`` (80–8F).
    """
    t = np.full((8, 256), -1, dtype=np.int8)
    t[0, 0x00:0x80] = 0
    t[0, 0xC2:0xE0] = 1
    t[0, 0xE0] = 4
    t[0, 0xE1:0xED] = 2
    t[0, 0xED] = 5
    t[0, 0xEE:0xF0] = 2
    t[0, 0xF0] = 6
    t[0, 0xF1:0xF4] = 3
    t[0, 0xF4] = 7
    t[1, 0x80:0xC0] = 0
    t[2, 0x80:0xC0] = 1
    t[3, 0x80:0xC0] = 2
    t[4, 0xA0:0xC0] = 1
    t[5, 0x80:0xA0] = 1
    t[6, 0x90:0xC0] = 2
    t[7, 0x80:0x90] = 2
    t.setflags(write=False)
    return t


#: The canonical UTF-8 byte automaton (``int8 (8, 256)``, -1: ill-formed).
UTF8_TABLE = _canonical_table()


def _dot_table() -> np.ndarray:
    """Well-formed UTF-8 but the line separators U+2028 and U+2029 (``E2 80 A8``, ``E2 80 A9``).

    The characters a regular expression's ``.`` matches beyond ASCII (its other
    line terminators are ASCII), so a string state of a ``pattern`` such as
    ``^.*$`` loops over this set. The states of :data:`UTF8_TABLE`, and 8 after
    ``E2`` (next 80-BF), 9 after ``E2 80`` (next 80-BF but A8, A9).
    """
    t = np.full((10, 256), -1, dtype=np.int8)
    t[:8] = UTF8_TABLE
    t[0, 0xE2] = 8
    t[8, 0x80] = 9
    t[8, 0x81:0xC0] = 1
    t[9, 0x80:0xC0] = 0
    t[9, 0xA8:0xAA] = -1
    t.setflags(write=False)
    return t


#: :data:`UTF8_TABLE` without U+2028 and U+2029 (``int8 (10, 256)``), see :func:`_dot_table`.
UTF8_DOT_TABLE = _dot_table()

#: 256-bit set (``uint64 (4,)``) of the bytes 0x80-0xFF.
HIGH_BYTES = np.array([0, 0, (1 << 64) - 1, (1 << 64) - 1], dtype=np.uint64)

_SUBTREE_OK: dict[tuple[int, int], tuple[TokenTrie, np.ndarray]] = {}
_NODE_STATES: dict[tuple[int, int], tuple[TokenTrie, np.ndarray]] = {}
_NODE_STEPS: dict[int, tuple[TokenTrie, tuple[np.ndarray, np.ndarray]]] = {}


def utf8_subtree_ok(trie: TokenTrie, table: np.ndarray = UTF8_TABLE) -> np.ndarray:
    """Per trie node: the path to it ends on a character boundary and every token below is well-formed.

    Parameters
    ----------
    trie
        The token trie.
    table
        What well-formed means: :data:`UTF8_TABLE`, or :data:`UTF8_DOT_TABLE`
        (no line separators either).

    Returns
    -------
    numpy.ndarray
        ``bool (num_nodes,)``, computed once per trie and kept.
    """
    key = (id(trie), id(table))
    hit = _SUBTREE_OK.get(key)
    if hit is not None and hit[0] is trie:
        return hit[1]
    n = trie.num_nodes
    state = utf8_node_states(trie, table)
    bad = np.concatenate([[0], np.cumsum(state < 0)])
    end = trie.subtree_end.astype(np.int64)
    ok_all = (bad[end] - bad[np.arange(n)]) == 0
    result = ok_all & (state == 0)
    result.setflags(write=False)
    if len(_SUBTREE_OK) > 8:
        _SUBTREE_OK.clear()
    _SUBTREE_OK[key] = (trie, result)
    return result


def utf8_node_states(trie: TokenTrie, table: np.ndarray = UTF8_TABLE) -> np.ndarray:
    """Per trie node, the state of the canonical UTF-8 automaton (or ``table``) after the node's path.

    ``int8 (num_nodes,)``: 0 on a character boundary, 1 to 7 inside a character
    (see :data:`UTF8_TABLE`), -1 once the path is not well-formed. Computed once
    per trie and kept.
    """
    key = (id(trie), id(table))
    hit = _NODE_STATES.get(key)
    if hit is not None and hit[0] is trie:
        return hit[1]
    n = trie.num_nodes
    state = np.full(n, -1, dtype=np.int8)
    state[0] = 0
    parent = trie.node_parent.astype(np.int64)
    byte = trie.node_byte.astype(np.int64)
    for depth in range(1, trie.max_depth + 1):
        nodes = trie.nodes_at_depth(depth).astype(np.int64)
        if nodes.size == 0:
            break
        ps = state[parent[nodes]].astype(np.int64)
        ok = ps >= 0
        nxt = np.full(nodes.size, -1, dtype=np.int8)
        nxt[ok] = table[ps[ok], byte[nodes[ok]]]
        state[nodes] = nxt
    state.setflags(write=False)
    if len(_NODE_STATES) > 8:
        _NODE_STATES.clear()
    _NODE_STATES[key] = (trie, state)
    return state


def utf8_node_steps(trie: TokenTrie) -> tuple[np.ndarray, np.ndarray]:
    """Per trie node, whether its byte begins a character, and how many characters its path begins.

    A character is counted at its lead byte (any byte but ``0x80``-``0xBF``),
    complete or not. Returns ``bool (num_nodes,)`` and ``int16 (num_nodes,)``,
    computed once per trie and kept.
    """
    hit = _NODE_STEPS.get(id(trie))
    if hit is not None and hit[0] is trie:
        return hit[1]
    starts = trie.node_byte < 0x80
    starts |= trie.node_byte >= 0xC0
    steps = trie.marked_on_path(starts).astype(np.int16)
    for a in (starts, steps):
        a.setflags(write=False)
    if len(_NODE_STEPS) > 8:
        _NODE_STEPS.clear()
    _NODE_STEPS[id(trie)] = (trie, (starts, steps))
    return starts, steps


def utf8_closed_states(table: np.ndarray, states: np.ndarray, canonical: np.ndarray = UTF8_TABLE) -> np.ndarray:
    """:func:`is_utf8_closed` for several states of one table at once (``bool`` per state).

    The same search, one level per UTF-8 position for all the states together:
    a (state, position) pair must read exactly the bytes that continue a
    well-formed character (only the non-ASCII ones at a character's start),
    return to its origin at a character's end, and reach at most 64 pairs.
    ``canonical`` says which characters: :data:`UTF8_TABLE` (all), or
    :data:`UTF8_DOT_TABLE` (all but the line separators).
    """
    states = np.asarray(states, dtype=np.int64)
    ok = np.ones(states.size, dtype=bool)
    if not states.size:
        return ok
    upper = np.arange(256) >= 0x80
    seen: list[set[tuple[int, int]]] = [{(int(q), 0)} for q in states.tolist()]
    origin = np.arange(states.size, dtype=np.int64)
    at, pos = states.copy(), np.zeros(states.size, dtype=np.int64)
    while origin.size:
        rows = table.take(at, axis=0).astype(np.int64)
        cu = canonical.take(pos, axis=0).astype(np.int64)
        span = np.where((pos == 0)[:, None], upper[None, :], True)
        valid = (cu >= 0) & span
        bad = ((rows >= 0) & ~valid & span).any(axis=1)
        bad |= ((rows < 0) & valid).any(axis=1)
        bad |= ((rows != states.take(origin)[:, None]) & valid & (cu == 0)).any(axis=1)
        ok[origin[bad]] = False
        inner = valid & (cu > 0)
        inner &= ok.take(origin)[:, None]
        pair, byte = np.nonzero(inner)
        nxt_origin, nxt_at, nxt_pos = [], [], []
        for o, t, u in zip(origin.take(pair).tolist(), rows[pair, byte].tolist(), cu[pair, byte].tolist(), strict=True):
            if not ok[o] or (t, u) in seen[o]:
                continue
            if len(seen[o]) > 64:
                ok[o] = False
                continue
            seen[o].add((t, u))
            nxt_origin.append(o)
            nxt_at.append(t)
            nxt_pos.append(u)
        origin = np.array(nxt_origin, dtype=np.int64)
        at = np.array(nxt_at, dtype=np.int64)
        pos = np.array(nxt_pos, dtype=np.int64)
        keep = ok.take(origin) if origin.size else np.zeros(0, dtype=bool)
        origin, at, pos = origin[keep], at[keep], pos[keep]
    return ok


def is_utf8_closed(state: int, row: Callable[[int], np.ndarray]) -> bool:
    """Whether ``state`` accepts every non-ASCII character and returns to itself after it.

    Parameters
    ----------
    state
        An automaton state.
    row
        ``row(s)``: the 256 successor states of ``s`` (-1: none).

    Returns
    -------
    bool
    """
    first = row(state)
    if first[0xC2] < 0 or first[0xF4] < 0:
        return False  # quick reject: most states do not accept every character
    seen = {(state, 0)}
    todo = [(state, 0)]
    upper = np.arange(256) >= 0x80
    while todo:
        s, u = todo.pop()
        r = np.asarray(row(s))
        cu = UTF8_TABLE[u].astype(np.int64)
        span = upper if u == 0 else np.ones(256, dtype=bool)
        valid = (cu >= 0) & span
        if np.any(r[~valid & span] >= 0) or np.any(r[valid] < 0):
            return False
        back = valid & (cu == 0)
        if np.any(r[back] != state):
            return False
        inner = valid & (cu > 0)
        for pair in set(zip(r[inner].tolist(), cu[inner].tolist(), strict=True)):
            if pair not in seen:
                if len(seen) > 64:
                    return False
                seen.add(pair)
                todo.append(pair)
    return True
