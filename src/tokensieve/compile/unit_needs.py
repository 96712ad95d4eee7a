"""Masks of the later layers of a counted repetition, derived from their base layer's.

In a spliced counted repetition (a JSON string of at most ``n`` characters;
see :mod:`tokensieve.automata.layers`) a state past the base layer allows the
base state's tokens less those that begin more units (characters) than it has
room for. How many units a token begins depends only on the token and on the
place in the unit it is read from: running the unit in a loop over the
token's bytes, every byte read from place 0 begins one, until the token leaves
the repetition (a byte place 0 does not read, such as the closing quote) or
ends. So, per vocabulary, unit and place, once: that count for every token
(one pass over the token trie, all places at once), and packed rows of the
tokens whose count is at most each room (:class:`~.count_rows.CountRows`).
A derived state's mask is then one AND, with no walk of its own.

The layers of a repetition intersected with another automaton
(:mod:`tokensieve.automata.layered_product`) have several boundaries, and a
token that ends inside the repetition also needs room for the fewest units
that lead from where it ends to an accepting boundary: its count adds them
(:attr:`~tokensieve.automata.layers.Unit.extra`).

Special and stop tokens count 0: they are never cleared (the base state's
mask has the same stop bits, since both accept or not alike).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from .count_rows import CountRows

if TYPE_CHECKING:
    from ..automata.layers import Unit
    from ..vocab.trie import TokenTrie
    from .token_masks import TokenMaskBuilder

__all__ = ["UnitNeeds", "unit_counts", "unit_needs_for"]


def unit_counts(
    trie: TokenTrie,
    table: np.ndarray,
    begins: np.ndarray | None = None,
    extra: np.ndarray | None = None,
    sources: np.ndarray | None = None,
) -> np.ndarray:
    """``int16 (m, T)``: the units each token of the trie needs from each place of ``sources`` (tokens by trie order).

    Parameters
    ----------
    trie
        The vocabulary's token trie (its tokens in ``trie.sorted_tokens`` order).
    table
        ``(width, 256)`` place after each byte (-1: none).
    begins
        ``bool (width,)``: the places where a byte begins a unit (default: place 0 alone).
    extra
        ``(width,)``: units a token that ends at each place needs on top of
        those it begins (default: none).
    sources
        The places counted from (default: every place, in order).
    """
    width = int(table.shape[0])
    sources = np.arange(width, dtype=np.int16) if sources is None else np.asarray(sources, dtype=np.int16)
    unit = np.asarray(table, dtype=np.int16)
    if begins is None:
        begins = np.arange(width) == 0
    starts = np.append(np.asarray(begins, dtype=bool), False)  # [-1]: nothing is begun once left
    ends = None if extra is None or not np.any(extra) else np.append(np.asarray(extra, dtype=np.int16), 0)
    terminal = trie.token_terminal_sorted.astype(np.int64)
    token_depth = trie.node_depth.take(terminal)
    by_depth = np.argsort(token_depth, kind="stable")
    bounds = np.searchsorted(token_depth.take(by_depth), np.arange(trie.max_depth + 2))
    out = np.zeros((sources.size, terminal.size), dtype=np.int16)
    pos = np.zeros(trie.num_nodes, dtype=np.int64)  # each node's index in its level
    place = sources[None, :]  # the root: every place counted from, nothing begun
    begun = np.zeros((1, sources.size), dtype=np.int16)
    for depth in range(1, trie.max_depth + 1):
        nodes = trie.nodes_at_depth(depth).astype(np.int64)
        if not nodes.size:
            break
        pos[nodes] = np.arange(nodes.size)
        up = pos.take(trie.node_parent.take(nodes).astype(np.int64))
        before = place.take(up, axis=0)
        after = unit[np.maximum(before, 0), trie.node_byte.take(nodes).astype(np.intp)[:, None]]
        after[before < 0] = -1  # left the repetition (or dead) before: stays so
        begun = begun.take(up, axis=0) + (starts.take(before) & (after >= 0))
        place = after
        tokens = by_depth[bounds[depth] : bounds[depth + 1]]
        if tokens.size:
            at = pos.take(terminal.take(tokens))
            need = begun.take(at, axis=0)
            if ends is not None:
                need += ends.take(place.take(at, axis=0))  # -1 (left): 0
            out[:, tokens] = need.T
    return out


class UnitNeeds:
    """A vocabulary's tokens by the units of one repetition they begin, per place.

    Parameters
    ----------
    trie
        The vocabulary's token trie (special and stop tokens are not in it).
    unit
        The repetition's unit.
    vocab_size, num_words
        Width of a mask in tokens and in ``int32`` words.
    """

    def __init__(self, trie: TokenTrie, unit: Unit, vocab_size: int, num_words: int) -> None:
        counts = unit_counts(trie, unit.table, unit.begins, unit.extra, unit.counted)
        self._row_of = np.full(unit.table.shape[0], -1, dtype=np.int64)
        self._row_of[unit.counted] = np.arange(unit.counted.size)
        self._rows: list[CountRows] = []
        ids = trie.sorted_tokens.astype(np.int64)
        for per_token in counts:
            full = np.zeros(vocab_size, dtype=np.int16)
            full[ids] = per_token
            self._rows.append(CountRows(full, num_words))

    def at_most(self, place: int, room: int) -> np.ndarray | None:
        """Packed mask of the tokens that begin at most ``room`` units from ``place`` (``None``: every token)."""
        row = int(self._row_of[place])
        if row < 0:
            raise ValueError(f"place {place} of the unit is not counted")
        return self._rows[row].at_most(room)

    @property
    def nbytes(self) -> int:
        """Bytes held by the counts and the memoised rows."""
        return sum(r.nbytes for r in self._rows) + self._row_of.nbytes


_lock = threading.Lock()
#: units remembered per vocabulary (every JSON string shares one)
_MAX_UNITS = 8


def unit_needs_for(builder: TokenMaskBuilder, unit: Unit) -> UnitNeeds:
    """The :class:`UnitNeeds` of ``unit`` over ``builder``'s vocabulary, built once (per process).

    Kept on the builder (``builder.unit_needs``, counted in its ``nbytes``),
    the :data:`_MAX_UNITS` most recent.
    """
    known = builder.unit_needs
    with _lock:
        hit = known.get(unit.key)
    if hit is not None:
        return hit
    made = UnitNeeds(builder.trie, unit, builder.vocab_size, builder.num_words)
    with _lock:
        if len(known) >= _MAX_UNITS:
            known.pop(next(iter(known)))
        return known.setdefault(unit.key, made)
