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

Per trie node, once per trie: the length of the longest token suffix below it,
and whether every byte below it is plain ASCII (or plain ASCII and well-formed
UTF-8 from a character boundary). A node whose suffixes are plain and no longer
than the state's chain is allowed whole. A string of *n* bytes has at most *n*
characters, so byte lengths bound the character counts safely.
"""

from __future__ import annotations

import numpy as np

from ..vocab.trie import TokenTrie
from .utf8_closure import HIGH_BYTES, UTF8_TABLE, utf8_subtree_ok

__all__ = ["PLAIN_BYTES", "MAX_CHAIN", "NEVER", "chain_lengths", "node_chain_needs", "plain_kind"]

#: Chains are followed for at most this many steps; deeper subtrees are walked further down.
MAX_CHAIN = 48

#: The plain ASCII bytes: printable, neither ``"`` nor ``\\``.
PLAIN_BYTES = np.array([b for b in range(0x20, 0x7F) if b not in (0x22, 0x5C)], dtype=np.int64)

_PLAIN_SET = np.zeros(4, dtype=np.uint64)
for _b in PLAIN_BYTES.tolist():
    _PLAIN_SET[_b >> 6] |= np.uint64(1) << np.uint64(_b & 63)
_NOT_PLAIN = ~_PLAIN_SET
_NOT_PLAIN_OR_HIGH = ~(_PLAIN_SET | HIGH_BYTES)

#: A need larger than any chain: the subtree is never closed by a chain.
NEVER = np.int16(MAX_CHAIN + 1)


def plain_kind(data: bytes) -> int:
    """2 if every byte of ``data`` is plain ASCII; 1 if it is plain ASCII and
    well-formed UTF-8 from a character boundary (possibly ending inside a
    character); 0 otherwise."""
    plain = _PLAIN_LOOKUP
    if all(plain[b] for b in data):
        return 2
    u = 0
    for b in data:
        if b < 0x80 and not plain[b]:
            return 0
        u = int(UTF8_TABLE[u, b])
        if u < 0:
            return 0
    return 1


_PLAIN_LOOKUP = [False] * 256
for _b in PLAIN_BYTES.tolist():
    _PLAIN_LOOKUP[_b] = True


def node_chain_needs(trie: TokenTrie) -> tuple[np.ndarray, np.ndarray]:
    """Per node of ``trie``, the chain a state needs for the whole subtree to be allowed.

    Returns ``(ascii_need, utf8_need)``, ``int16 (num_nodes,)`` each: the length
    of the longest token suffix below the node when every byte below it is plain
    ASCII (``ascii_need``), or plain ASCII or part of well-formed UTF-8 from a
    character boundary (``utf8_need``); :data:`NEVER` otherwise or when that
    suffix is longer than :data:`MAX_CHAIN`. The caller keeps the result (one per
    vocabulary).
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
    ascii_need = np.where(ascii_plain & short, suffix, NEVER).astype(np.int16)
    utf8_need = np.where(utf8_plain & short, suffix, NEVER).astype(np.int16)
    ascii_need.setflags(write=False)
    utf8_need.setflags(write=False)
    return ascii_need, utf8_need


def _range_targets(table: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Per state, the one target of every byte ``lo..hi``, or -1 when they differ or one is missing.

    The result has one more entry, -1, so that ``-1`` indexes a refusal.
    """
    block = table[:, lo : hi + 1]
    first = block[:, 0]
    same = (block == first[:, None]).all(axis=1) & (first >= 0)
    out = np.full(table.shape[0] + 1, -1, dtype=np.int64)
    out[:-1] = np.where(same, first, -1)
    return out


def chain_lengths(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per state, how many plain characters in a row are viable along its chain.

    Parameters
    ----------
    table
        ``int32 (S, 256)`` transition table, -1 for no transition.

    Returns
    -------
    (ascii_len, utf8_len) : tuple of numpy.ndarray
        ``int16 (S,)``: every string of at most ``ascii_len[q]`` plain ASCII
        bytes is viable from ``q``, and every string of at most ``utf8_len[q]``
        characters, each plain ASCII or a well-formed multi-byte character.
        Both are capped at :data:`MAX_CHAIN`.
    """
    s = table.shape[0]
    nxt = table[:, PLAIN_BYTES[0]].astype(np.int64)
    step = (table[:, PLAIN_BYTES] == nxt[:, None]).all(axis=1) & (nxt >= 0)
    # multi-byte characters: each lead byte, then its continuation ranges, back to next(q)
    full = _range_targets(table, 0x80, 0xBF)
    e0, ed = _range_targets(table, 0xA0, 0xBF), _range_targets(table, 0x80, 0x9F)
    f0, f4 = _range_targets(table, 0x90, 0xBF), _range_targets(table, 0x80, 0x8F)
    char = step.copy()
    cand = np.flatnonzero(step)
    if cand.size:
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
    ascii_len = _run_lengths(step, nxt, s)
    utf8_len = _run_lengths(char, nxt, s)
    return ascii_len, utf8_len


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
