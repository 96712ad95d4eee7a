"""The JIT kernel of :func:`~tokensieve.compile.frame_walk.dfa_walk`: one DFA state's walk of the token trie.

Imported with the frame-walk kernel (:mod:`._frame_kernel`) by
:func:`~tokensieve.compile.frame_walk.load_kernel`, so that importing
:mod:`tokensieve` does not import numba; compiled once per machine
(``cache=True``) and run without the GIL.

The walk is the plain algorithm: depth first over the trie from the root, a
node reached in DFA state ``q`` allows the tokens that end there, and each
child is entered in the state its byte leads to (none: the subtree is cut).
One shortcut, the subtree closure of :mod:`.token_masks`: a state that loops
on every byte below its node (the bytes 0x80-0xFF counted for a state that
takes every well-formed UTF-8 character back to itself, or every one but the
line separators, below nodes whose tokens are all such characters) allows the
node's whole subtree at once. A node is
reached along one path, so the stack never holds more entries than the trie
has nodes; the cost is the nodes visited, a few nanoseconds each.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def dfa_walk_kernel(*args: Any) -> int:  # pragma: no cover - compiled
    """:func:`_walk` without the GIL: for threads that walk beside decoding."""
    return _walk(*args)


@njit(cache=True)
def dfa_walk_kernel_gil(*args: Any) -> int:  # pragma: no cover - compiled
    """:func:`_walk` holding the GIL: for a decoding step, which would otherwise wait to take the GIL
    back from a thread walking ahead (up to the interpreter's switch interval) after a walk of a few
    microseconds."""
    return _walk(*args)


@njit(cache=True)
def _walk(  # pragma: no cover - compiled
    trans: np.ndarray,
    loops: np.ndarray,
    has_loop: np.ndarray,
    utf8: np.ndarray,
    origin: int,
    child_start: np.ndarray,
    child_ids: np.ndarray,
    child_byte: np.ndarray,
    token_lo: np.ndarray,
    token_mid: np.ndarray,
    token_hi: np.ndarray,
    sub_bytes: np.ndarray,
    utf8_ok: np.ndarray,
    sorted_tokens: np.ndarray,
    mask: np.ndarray,
    stack_node: np.ndarray,
    stack_state: np.ndarray,
) -> int:
    """Set in ``mask`` (``uint32`` words, zeroed by the caller) the tokens DFA state ``origin`` allows.

    ``trans`` is the flattened ``int32 (S * 256)`` transition table (-1: no
    transition); ``loops``, ``has_loop`` and ``utf8`` are the automaton's
    ``kernel_loops``, ``has_loop`` and ``utf8_kind`` (see
    :class:`~tokensieve.compile.automaton_view.AutomatonView`); the trie
    arrays are those of :func:`~tokensieve.compile.frame_walk.trie_arrays`
    (``utf8_ok``: a row per kind of UTF-8 loop). ``stack_node`` and
    ``stack_state`` hold at least as many entries as the trie has nodes.
    Returns the number of trie nodes visited (the walk's work).
    """
    stack_node[0] = 0
    stack_state[0] = origin
    top = 1
    work = 0
    while top > 0:
        top -= 1
        node = stack_node[top]
        q = stack_state[top]
        work += 1
        first = child_start[node]
        last = child_start[node + 1]
        closed = False
        if last > first and has_loop[q]:
            outside = (
                (sub_bytes[node, 0] & ~loops[q, 0])
                | (sub_bytes[node, 1] & ~loops[q, 1])
                | (sub_bytes[node, 2] & ~loops[q, 2])
                | (sub_bytes[node, 3] & ~loops[q, 3])
            )
            if outside == 0:
                kind = utf8[q]
                closed = not (kind and not utf8_ok[kind - 1, node] and (sub_bytes[node, 2] | sub_bytes[node, 3]) != 0)
        end = token_hi[node] if closed else token_mid[node]
        for t in range(token_lo[node], end):
            tok = sorted_tokens[t]
            mask[tok >> 5] |= np.uint32(1) << np.uint32(tok & 31)
        if closed:
            continue
        row = q * 256
        for j in range(first, last):
            nxt = trans[row + child_byte[j]]
            if nxt >= 0:
                stack_node[top] = child_ids[j]
                stack_state[top] = nxt
                top += 1
    return work
