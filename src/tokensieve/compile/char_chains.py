"""The character-chain shortcut: whole trie subtrees inside counted strings.

Inside a JSON string of bounded length (``maxLength: 50``) every plain character
moves the automaton one state along a chain (``q50 -> q49 -> ...``); no state
loops, so the loop closure of :mod:`.utf8_closure` never applies and a walk
visits nearly the whole token trie, once per state.

A state *q* has a chain step when every plain ASCII byte (printable, neither
``"`` nor ``\\``) leads to one state ``next(q)``; it has a character step when,
in addition, every well-formed multi-byte UTF-8 character leads to ``next(q)``
too. ``ascii_len(q)`` (``utf8_len(q)``) is the number of such steps in a row,
capped: every string of at most that many plain characters is viable from *q*.

Bounded whitespace runs (``[ \\t\\n\\r]{0,32}``) are chains too, over the four
JSON blanks: ``blank_len(q)``.

Per trie node, once per trie: the length of the longest token suffix below it,
and whether every byte below it is plain ASCII (or plain ASCII and well-formed
UTF-8 from a character boundary, or a blank). A node whose suffixes are of a
chain's kind and no longer than the state's chain is allowed whole. A string of
*n* bytes has at most *n* characters, so byte lengths bound the character counts
safely.

The three kinds are always in this order: plain ASCII, plain characters, blanks.
"""

from __future__ import annotations

import numpy as np

from .._arrays import sorted_unique
from ..vocab.trie import TokenTrie
from .utf8_closure import HIGH_BYTES, UTF8_TABLE, utf8_subtree_ok

__all__ = ["BLANK_BYTES", "PLAIN_BYTES", "MAX_CHAIN", "NEVER", "NOT_OF_KIND", "chain_lengths", "node_chain_needs", "token_needs"]

#: Chains are followed for at most this many steps; deeper subtrees are walked further down.
MAX_CHAIN = 48

#: The plain ASCII bytes: printable, neither ``"`` nor ``\\``.
PLAIN_BYTES = np.array([b for b in range(0x20, 0x7F) if b not in (0x22, 0x5C)], dtype=np.int64)

#: The JSON blanks: space, tab, line feed, carriage return.
BLANK_BYTES = np.array([0x20, 0x09, 0x0A, 0x0D], dtype=np.int64)


def _byte_set(values: np.ndarray) -> np.ndarray:
    out = np.zeros(4, dtype=np.uint64)
    for b in values.tolist():
        out[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    return out


_PLAIN_SET = _byte_set(PLAIN_BYTES)
_NOT_PLAIN = ~_PLAIN_SET
_NOT_PLAIN_OR_HIGH = ~(_PLAIN_SET | HIGH_BYTES)
_NOT_BLANK = ~_byte_set(BLANK_BYTES)

#: A need larger than any chain: the subtree is never closed by a chain.
NEVER = np.int16(MAX_CHAIN + 1)

#: What :func:`token_needs` gives for a kind the token is not of (longer than any token).
NOT_OF_KIND = 1 << 30


def token_needs(data: bytes) -> tuple[int, int, int]:
    """The chain of each kind a state needs for ``data`` to be viable from it.

    ``len(data)`` for each kind ``data`` belongs to (all plain ASCII; plain ASCII
    and well-formed UTF-8 from a character boundary, possibly ending inside a
    character; all blanks), :data:`NOT_OF_KIND` for the others.
    """
    n, never = len(data), NOT_OF_KIND
    plain = _PLAIN_LOOKUP
    blank = all(b in (0x20, 0x09, 0x0A, 0x0D) for b in data)
    if all(plain[b] for b in data):
        return n, n, n if blank else never
    u = 0
    for b in data:
        if b < 0x80 and not plain[b]:
            return never, never, n if blank else never
        u = int(UTF8_TABLE[u, b])
        if u < 0:
            return never, never, never
    return never, n, never


_PLAIN_LOOKUP = [False] * 256
for _b in PLAIN_BYTES.tolist():
    _PLAIN_LOOKUP[_b] = True


def node_chain_needs(trie: TokenTrie) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node of ``trie``, the chain of each kind a state needs for the whole subtree to be allowed.

    Returns ``int16 (num_nodes,)`` arrays, one per kind: the length of the
    longest token suffix below the node when every byte below it is plain ASCII;
    plain ASCII or part of well-formed UTF-8 from a character boundary; a blank.
    :data:`NEVER` otherwise or when that suffix is longer than :data:`MAX_CHAIN`.
    The caller keeps the result (one per vocabulary).
    """
    depth = trie.node_depth.astype(np.int64)
    # the depth of the deepest node below each node, bottom-up one level at a time
    deepest = depth.copy()
    parent = trie.node_parent.astype(np.int64)
    for d in range(trie.max_depth, 0, -1):
        nodes = trie.nodes_at_depth(d).astype(np.int64)
        if nodes.size:
            np.maximum.at(deepest, parent[nodes], deepest[nodes])
    suffix = deepest - depth
    sub = trie.subtree_bytes
    ascii_plain = ~((sub & _NOT_PLAIN).any(axis=1))
    utf8_plain = ~((sub & _NOT_PLAIN_OR_HIGH).any(axis=1)) & utf8_subtree_ok(trie)
    short = suffix <= MAX_CHAIN
    blank = ~((sub & _NOT_BLANK).any(axis=1))
    needs = tuple(
        np.where(kind & short, suffix, NEVER).astype(np.int16) for kind in (ascii_plain, utf8_plain, blank)
    )
    for need in needs:
        need.setflags(write=False)
    return needs  # type: ignore[return-value]


def _range_targets(table: np.ndarray, lo: int, hi: int, states: np.ndarray) -> np.ndarray:
    """Per state of ``states``, the one target of every byte ``lo..hi`` (-1 when they differ or one is missing).

    Indexed by state, -1 for the states not in ``states``, with one more entry,
    -1, so that ``-1`` indexes a refusal.
    """
    block = table[states, lo : hi + 1]
    first = block[:, 0]
    same = (block == first[:, None]).all(axis=1) & (first >= 0)
    out = np.full(table.shape[0] + 1, -1, dtype=np.int64)
    out[states] = np.where(same, first, -1)
    return out


def _after_high_bytes(table: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """The states reached from ``cand`` by a lead byte and then up to two more high bytes."""
    frontier = sorted_unique(table[cand, 0xC2:0xF5])
    frontier = frontier[frontier >= 0]
    seen = frontier
    for _ in range(2):
        if not frontier.size:
            break
        nxt = sorted_unique(table[frontier, 0x80:0xC0])
        frontier = np.setdiff1d(nxt[nxt >= 0], seen, assume_unique=True)
        seen = sorted_unique(np.concatenate((seen, frontier)))
    return seen.astype(np.int64)


def _uniform_step(table: np.ndarray, states: np.ndarray, alphabet: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``states``: whether every byte of ``alphabet`` leads to one state, and that state."""
    nxt = table[states, alphabet[0]].astype(np.int64)
    ok = nxt >= 0
    for b in alphabet[1:].tolist():  # column by column: most states fail on the first few bytes
        idx = np.flatnonzero(ok)
        if not idx.size:
            break
        ok[idx] = table[states[idx], b] == nxt[idx]
    return ok, nxt


def chain_lengths(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per state, how many characters of each kind in a row are viable along its chain.

    Parameters
    ----------
    table
        ``int32 (S, 256)`` transition table, -1 for no transition.

    Returns
    -------
    (ascii_len, utf8_len, blank_len) : tuple of numpy.ndarray
        ``int16 (S,)``: every string of at most ``ascii_len[q]`` plain ASCII
        bytes is viable from ``q``; every string of at most ``utf8_len[q]``
        characters, each plain ASCII or a well-formed multi-byte character; and
        every string of at most ``blank_len[q]`` blanks. Capped at
        :data:`MAX_CHAIN`.
    """
    s = table.shape[0]
    every = np.arange(s, dtype=np.int64)
    step, nxt = _uniform_step(table, every, PLAIN_BYTES)
    blank_step, blank_nxt = _uniform_step(table, every, BLANK_BYTES)
    char = step.copy()
    cand = np.flatnonzero(step)
    if cand.size:
        # multi-byte characters: each lead byte, then its continuation ranges, back to next(q)
        inner = _after_high_bytes(table, cand)
        full = _range_targets(table, 0x80, 0xBF, inner)
        e0, ed = _range_targets(table, 0xA0, 0xBF, inner), _range_targets(table, 0x80, 0x9F, inner)
        f0, f4 = _range_targets(table, 0x90, 0xBF, inner), _range_targets(table, 0x80, 0x8F, inner)
        rows = table[cand, 0xC2:0xF5].astype(np.int64)
        want = nxt[cand]
        ok = np.ones(cand.size, dtype=bool)
        for lead in range(0xC2, 0xF5):
            after = rows[:, lead - 0xC2]
            chain: tuple[np.ndarray, ...]
            if lead <= 0xDF:
                chain = (full,)
            elif lead == 0xE0:
                chain = (e0, full)
            elif lead == 0xED:
                chain = (ed, full)
            elif lead <= 0xEF:
                chain = (full, full)
            elif lead == 0xF0:
                chain = (f0, full, full)
            elif lead == 0xF4:
                chain = (f4, full, full)
            else:
                chain = (full, full, full)
            for targets in chain:
                after = targets.take(after)  # -1 stays -1 (the extra last entry)
            ok &= after == want
        char[cand] = ok
    return _run_lengths(step, nxt, s), _run_lengths(char, nxt, s), _run_lengths(blank_step, blank_nxt, s)


def _run_lengths(ok: np.ndarray, nxt: np.ndarray, s: int) -> np.ndarray:
    """``ok[q] ? 1 + run[nxt[q]] : 0``, capped at :data:`MAX_CHAIN` (cycles reach the cap)."""
    run = np.zeros(s + 1, dtype=np.int64)  # run[s] = 0: the target of a missing step
    safe = np.where(ok, nxt, s)
    for _ in range(MAX_CHAIN):
        new = np.where(ok, np.minimum(run.take(safe) + 1, MAX_CHAIN), 0)
        if np.array_equal(new, run[:s]):
            break
        run[:s] = new
    return run[:s].astype(np.int16)
