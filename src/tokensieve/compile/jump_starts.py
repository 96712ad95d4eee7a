"""Where the walks of wide-class states start: the escape pairs of their class jumps.

A state that loops on, or chains along, a class of at least
:data:`~tokensieve.compile.automaton_view.JUMP_MIN_BYTES` bytes takes the
vocabulary's class-only tokens as one cached row (:class:`ClassJump`) and its
walk starts at the jump's escape nodes: the trie nodes where the class ends,
each with the state the class's bytes lead to (see :mod:`.class_jumps`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..vocab.trie import TokenTrie
from .automaton_view import AutomatonView
from .class_jumps import ClassJump

__all__ = ["escape_pairs", "jump_groups"]


def _step(trans: np.ndarray, state: np.ndarray, byte: np.ndarray | int) -> np.ndarray:
    """The successors of ``state`` on ``byte`` in a flattened table (``-1``: none, also from ``-1``)."""
    ok = state >= 0
    return np.where(ok, trans.take((np.where(ok, state, 0) << 8) | byte), -1)


def jump_groups(
    a: AutomatonView,
    origins: np.ndarray,
    depth: np.ndarray,
    class_jump: Callable[[np.ndarray, int, bool], ClassJump],
) -> list[tuple[np.ndarray, ClassJump]]:
    """The origins with a class jump (indices into ``origins``), grouped by their :class:`ClassJump`.

    Parameters
    ----------
    a
        The automaton.
    origins
        ``int64``: the states whose walks start.
    depth
        ``origins``' jump depths (:attr:`AutomatonView.jump_depth`; 0: no jump).
    class_jump
        The memo of class jumps: :meth:`TokenMaskBuilder.class_jump
        <tokensieve.compile.token_masks.TokenMaskBuilder.class_jump>`.

    Returns
    -------
    list of (numpy.ndarray, ClassJump)
        Indices into ``origins`` and the class jump they share.
    """
    index = np.flatnonzero(depth)
    states = origins.take(index)
    key = np.empty((index.size, 6), dtype=np.uint64)
    key[:, :4] = a.jump_class.take(states, axis=0)
    key[:, 4] = depth.take(index).astype(np.uint64)
    key[:, 5] = a.jump_utf8.take(states)
    if index.size == 1:
        group = np.zeros(1, dtype=np.int64)
    else:
        _, group = np.unique(key.view(np.dtype((np.void, key.shape[1] * 8))).ravel(), return_inverse=True)
        group = group.reshape(-1)
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group.take(order), prepend=-1)).tolist() + [index.size]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        members = index.take(order[lo:hi])
        row = key[order[lo]]
        cj = class_jump(row[:4], int(row[4]), bool(row[5]))
        out.append((members, cj))
    return out

def escape_pairs(
    trie: TokenTrie, a: AutomatonView, states: np.ndarray, owners: np.ndarray, cj: ClassJump
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (escape node, state, owner) triples the walks of ``states`` (one class jump) start from.

    Parameters
    ----------
    trie
        The vocabulary's token trie (the jump's).
    a
        The automaton (with a table).
    states
        ``int64``: states that share the class jump ``cj``.
    owners
        ``owners[i]`` is the owner of ``states[i]``'s triples.
    cj
        Their class jump (see :mod:`.class_jumps`).

    Returns
    -------
    (node, state, owner)
        ``int64`` arrays: the walks go on from these (trie node, state) pairs.
    """
    trans = a.trans
    assert trans is not None
    loop = a.has_loop.take(states)
    parts: list[tuple[np.ndarray, np.ndarray]] = []  # (target rows, owners)
    if loop.any():
        looping = np.flatnonzero(loop) if not loop.all() else None
        some = states if looping is None else states.take(looping)
        got = trans.take((some[:, None] << 8) | cj.byte)
        if cj.broken.size:  # a free string refuses a byte that breaks a character (is_utf8_closed)
            got[:, cj.broken] = -1
        parts.append((got, owners if looping is None else owners.take(looping)))
    if not loop.all():
        along = np.flatnonzero(~loop) if loop.any() else None
        some = states if along is None else states.take(along)
        # the chain's states after 0, 1, ... steps
        steps = int(cj.prefix.max(initial=0))
        chain = np.empty((some.size, steps + 1), dtype=np.int64)
        chain[:, 0] = some
        for j in range(steps):  # a jump goes no deeper than the chain: no -1 is met
            chain[:, j + 1] = a.chain_next.take(chain[:, j])
        before = chain.take(cj.prefix, axis=1)
        got = trans.take((before << 8) | cj.byte)
        if cj.broken.size:  # from the state before the begun character, through its bytes
            parent, node_byte = trie.node_parent, trie.node_byte
            for i in cj.broken.tolist():
                path = []
                n = int(cj.node[i])
                for _ in range(int(cj.inner[i]) + 1):
                    path.append(int(node_byte[n]))
                    n = int(parent[n])
                s = before[:, i]
                for b in reversed(path):
                    s = _step(trans, s, b)
                got[:, i] = s
        parts.append((got, owners if along is None else owners.take(along)))
    nodes, targets, owned = [], [], []
    for got, own in parts:
        ok = got >= 0
        if got.shape[0] == 1:
            nodes.append(cj.node[ok[0]])
            owned.append(np.full(nodes[-1].size, own[0], dtype=np.int64))
        else:
            nodes.append(np.broadcast_to(cj.node, got.shape)[ok])
            owned.append(np.repeat(own.astype(np.int64), ok.sum(axis=1)))
        targets.append(got[ok])
    if len(parts) == 1:
        return nodes[0].astype(np.int64), targets[0].astype(np.int64, copy=False), owned[0]
    return (
        np.concatenate(nodes).astype(np.int64),
        np.concatenate(targets).astype(np.int64, copy=False),
        np.concatenate(owned),
    )

