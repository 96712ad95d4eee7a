"""Class jumps: the walk of a state that loops on a byte class starts past the class.

Inside a free JSON string the automaton loops on about ninety bytes; inside a
counted run (``[a-z0-9]{3,64}``, a string of at most 254 characters) every byte
of a class moves it one state along a chain
(:func:`~tokensieve.compile.char_chains.class_chains`). Either way, every token
made only of class bytes (and not longer than the chain) is allowed, whatever
the state; only the tokens with another byte depend on the state, and only from
that byte on.

So, per vocabulary and class, once: the tokens made of class bytes (a packed
row, the *allowed* set), and the *escape nodes*: the trie nodes whose path is
class bytes up to their own byte, which is not (or which lie one byte deeper
than the chain goes). For a free string the class also holds every well-formed
multi-byte character, and a byte that breaks UTF-8 is no escape: the state
refuses it. The mask of such a state is the allowed row plus what a
walk finds below the escape nodes, started from the state each escape byte
leads to; the thousands of trie nodes inside the class are never visited.
A few thousand escape nodes for a 131k vocabulary, against tens of thousands of
nodes a level-by-level walk visits to close the class's subtrees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..vocab.trie import TokenTrie
from .utf8_closure import utf8_node_states

__all__ = ["ClassJump", "ClassRegion", "class_bytes"]


@dataclass(frozen=True)
class ClassJump:
    """The class-only tokens of a vocabulary and the trie nodes where a class ends.

    Attributes
    ----------
    allowed : numpy.ndarray
        Packed ``int32 (words,)`` mask: the tokens of at most ``depth`` bytes, all
        of the class.
    node : numpy.ndarray
        ``int32 (E,)``: the escape nodes.
    byte : numpy.ndarray
        ``uint8 (E,)``: the byte of each escape node.
    prefix : numpy.ndarray
        ``uint16 (E,)``: how many class bytes come before it (its depth less one).
    """

    allowed: np.ndarray
    node: np.ndarray
    byte: np.ndarray
    prefix: np.ndarray

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        return int(self.allowed.nbytes + self.node.nbytes + self.byte.nbytes + self.prefix.nbytes)


def class_bytes(classes: np.ndarray) -> np.ndarray:
    """``bool (256,)`` membership of a ``uint64 (4,)`` byte set."""
    bits = np.unpackbits(np.ascontiguousarray(classes, dtype=np.uint64).view(np.uint8), bitorder="little")
    return bits.astype(bool)


class ClassRegion:
    """The part of a vocabulary's trie made of one byte class, from which :class:`ClassJump` are cut.

    Parameters
    ----------
    trie
        The vocabulary's token trie.
    words
        Length of the packed ``allowed`` rows (32 tokens a word).
    classes
        ``uint64 (4,)``: the class's bytes.
    utf8
        Also every well-formed multi-byte character is of the class, and a byte
        that breaks UTF-8 leads nowhere: the region of a state that takes every
        character back to itself and refuses ill-formed bytes (inside a free JSON
        string, see :mod:`.utf8_closure`). Only for a loop (``depth`` unbounded).
    """

    def __init__(self, trie: TokenTrie, words: int, classes: np.ndarray, utf8: bool = False) -> None:
        self.trie = trie
        bad = ~class_bytes(classes)[trie.node_byte]
        if utf8:
            states = utf8_node_states(trie)
            bad &= trie.node_byte < 0x80  # a high byte in a well-formed character is of the class
            bad |= states < 0
        # a node is inside when neither it nor an ancestor (the root aside) is out of the class
        self.inside = trie.marked_on_path(bad) == 0
        ids = np.flatnonzero(bad[1:]) + 1
        self.escape = ids[self.inside[trie.node_parent[ids]]]
        if utf8:  # the ill-formed ones are refused: no escape there
            self.escape = self.escape[states[self.escape] >= 0]
        self.escape_depth = trie.node_depth[self.escape]
        # per token id: its length if it is made of class bytes, past any depth otherwise
        self.token_length = np.full(words * 32, np.iinfo(np.int32).max, dtype=np.int32)
        terminal = trie.token_terminal_sorted
        inside_tokens = self.inside[terminal]
        self.token_length[trie.sorted_tokens[inside_tokens]] = trie.node_depth[terminal[inside_tokens]]

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        return int(self.inside.nbytes + self.escape.nbytes + self.escape_depth.nbytes + self.token_length.nbytes)

    def jump(self, depth: int) -> ClassJump:
        """The :class:`ClassJump` of the class followed ``depth`` bytes deep.

        The escape nodes are the region's own (a byte out of the class) at most
        ``depth + 1`` deep, and the inside nodes at depth ``depth + 1``.
        """
        trie = self.trie
        near = self.escape[self.escape_depth <= depth + 1]
        if depth < trie.max_depth:
            deeper = trie.nodes_at_depth(depth + 1).astype(np.int64)
            near = np.concatenate([near, deeper[self.inside[deeper]]])
        allowed = np.packbits(self.token_length <= depth, bitorder="little").view(np.int32)
        arrays = (
            allowed,
            near.astype(np.int32),
            trie.node_byte[near],
            (trie.node_depth[near] - 1).astype(np.uint16),
        )
        for a in arrays:
            a.setflags(write=False)
        return ClassJump(*arrays)
