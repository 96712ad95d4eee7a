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
than the chain goes). The mask of such a state is the allowed row plus what a
walk finds below the escape nodes, started from the state each escape byte
leads to; the thousands of trie nodes inside the class are never visited.
A few thousand escape nodes for a 131k vocabulary, against tens of thousands of
nodes a level-by-level walk visits to close the class's subtrees.

Inside a string the class also holds every well-formed multi-byte character
(a *UTF-8 region*): a free string takes each one back to its state, and a
counted string one step along its chain, so there the depth counts characters
(a character is one step, taken at its lead byte, complete or not). A byte that
breaks UTF-8 is an escape like any other; the ones that break a character
already begun are marked (``inner``), since the state before them is inside
that character.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..vocab.trie import TokenTrie
from .utf8_closure import utf8_node_states, utf8_node_steps

__all__ = ["ClassJump", "ClassRegion", "class_bytes"]


@dataclass(frozen=True)
class ClassJump:
    """The class-only tokens of a vocabulary and the trie nodes where a class ends.

    Attributes
    ----------
    allowed : numpy.ndarray
        Packed ``int32 (words,)`` mask: the tokens of at most ``depth`` steps, all
        of the class.
    node : numpy.ndarray
        ``int32 (E,)``: the escape nodes.
    byte : numpy.ndarray
        ``uint8 (E,)``: the byte of each escape node.
    prefix : numpy.ndarray
        ``uint16 (E,)``: how many steps of the class (bytes, or characters in a
        UTF-8 region) come before it, a character it breaks not counted.
    inner : numpy.ndarray
        ``uint8 (E,)``: how many bytes of a begun character come just before the
        escape byte (0 at a character boundary; always 0 outside UTF-8 regions).
    broken : numpy.ndarray
        ``int64 (B,)``: the indices of the escapes with ``inner > 0`` (few or none).
    """

    allowed: np.ndarray
    node: np.ndarray
    byte: np.ndarray
    prefix: np.ndarray
    inner: np.ndarray
    broken: np.ndarray

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        return int(
            sum(a.nbytes for a in (self.allowed, self.node, self.byte, self.prefix, self.inner, self.broken))
        )


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
        ``uint64 (4,)``: the class's bytes (ASCII ones only, with ``utf8``).
    utf8
        Every well-formed multi-byte character is of the class too, and depths
        count characters: the region of a state inside a string, which takes
        every character as one step (back to itself, or along its chain; see
        :mod:`.utf8_closure` and :func:`~tokensieve.compile.char_chains.chain_lengths`).
    """

    def __init__(self, trie: TokenTrie, words: int, classes: np.ndarray, utf8: bool = False) -> None:
        self.trie = trie
        bad = ~class_bytes(classes)[trie.node_byte]
        parent = trie.node_parent.astype(np.int64)
        if utf8:
            states = utf8_node_states(trie)
            bad &= trie.node_byte < 0x80  # a high byte in a well-formed character is of the class
            bad |= states < 0
            # a step per character, at its lead byte (shared by every region of the trie)
            step, self.steps = utf8_node_steps(trie)
            self.step: np.ndarray | None = step
        else:
            self.step = None
            self.steps = trie.node_depth
        # a node is inside when neither it nor an ancestor (the root aside) is out of the class
        self.inside = trie.marked_on_path(bad) == 0
        ids = np.flatnonzero(bad[1:]) + 1
        self.escape = ids[self.inside[parent[ids]]]
        #: per escape node: its parent's steps, and the bytes of a begun character it breaks
        self.escape_steps = self.steps[parent[self.escape]]
        self.escape_inner = np.zeros(self.escape.size, dtype=np.uint8)
        if utf8:
            # a parent inside a character: count its bytes back to the lead byte
            at = parent[self.escape]
            going = states[at] > 0
            self.escape_inner = going.astype(np.uint8)
            for _ in range(3):
                going &= (trie.node_byte[at] >= 0x80) & (trie.node_byte[at] < 0xC0)
                self.escape_inner += going
                at = np.where(going, parent[at], at)
        # per token id: its steps if it is made of class bytes, past any depth otherwise
        self.token_length = np.full(words * 32, np.iinfo(np.int16).max, dtype=np.int16)
        terminal = trie.token_terminal_sorted
        inside_tokens = self.inside[terminal]
        self.token_length[trie.sorted_tokens[inside_tokens]] = self.steps[terminal[inside_tokens]]

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        arrays = (self.inside, self.escape, self.escape_steps, self.escape_inner, self.token_length)
        return int(sum(a.nbytes for a in arrays))  # the steps are the trie's

    def jump(self, depth: int) -> ClassJump:
        """The :class:`ClassJump` of the class followed ``depth`` steps deep.

        The escape nodes are the region's own (a byte out of the class) after
        at most ``depth`` steps, and the inside nodes that begin step ``depth + 1``.
        """
        trie = self.trie
        near = self.escape_steps <= depth
        node = self.escape[near]
        inner = self.escape_inner[near]
        prefix = self.escape_steps[near] - (inner > 0)  # a begun character is not a step before
        if self.step is None:
            deeper = trie.nodes_at_depth(depth + 1).astype(np.int64)  # none past the deepest token
            deeper = deeper[self.inside[deeper]]
        else:
            deeper = np.flatnonzero(self.inside & self.step & (self.steps == depth + 1))
        node = np.concatenate([node, deeper])
        prefix = np.concatenate([prefix, np.full(deeper.size, depth, dtype=prefix.dtype)])
        inner = np.concatenate([inner, np.zeros(deeper.size, dtype=np.uint8)])
        allowed = np.packbits(self.token_length <= depth, bitorder="little").view(np.int32)
        arrays = (
            allowed,
            node.astype(np.int32),
            trie.node_byte[node],
            prefix.astype(np.uint16),
            inner,
            np.flatnonzero(inner),
        )
        for a in arrays:
            a.setflags(write=False)
        return ClassJump(*arrays)
