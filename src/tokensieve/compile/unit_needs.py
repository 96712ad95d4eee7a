"""Masks of the later layers of a counted repetition, derived from their base layer's.

In a spliced counted repetition (a JSON string of at most ``n`` characters;
see :mod:`tokensieve.automata.layers`) a state past the base layer allows the
base state's tokens less those that begin more units (characters) than it has
room for. How many units a token begins depends only on the token and on the
place in the unit it is read from: running the unit in a loop over the
token's bytes, every byte read from place 0 begins one, until the token leaves
the repetition (a byte place 0 does not read, such as the closing quote) or
ends. So, per vocabulary, unit and place, once: that count for every token
(one pass over the token trie, all places at once, following only the paths
still in the repetition), and packed rows of the tokens whose count is at
most each room (:class:`~.count_rows.CountRows`, which keeps the counts of a
place few tokens are read from as a list). A derived state's mask is then
one AND, with no walk of its own.

The layers of a repetition intersected with another automaton
(:mod:`tokensieve.automata.layered_product`) have several boundaries, and a
token that ends inside the repetition also needs room for the fewest units
that lead from where it ends to an accepting boundary: its count adds them
(:attr:`~tokensieve.automata.layers.Unit.extra`). The states of such a
product near its bound at a place that is also read alike in every layer with
room for all it may still read (a place of an address literal) derive from
that place's one state the same way.

Special and stop tokens count 0: they are never cleared (the base state's
mask has the same stop bits, since both accept or not alike).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._arrays import concat_ranges as _ranges
from .count_rows import CountRows

if TYPE_CHECKING:
    from ..automata.layers import Unit
    from ..vocab.trie import TokenTrie

__all__ = ["UnitNeeds", "unit_counts"]


def unit_counts(
    trie: TokenTrie, unit: Unit, sources: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The units each token of the trie needs from each counted place of ``unit``, where not 0.

    A token's count from a place: the units its bytes begin, running the unit
    in a loop from that place (a byte read from a place of ``unit.begins``
    begins one), until the token leaves the repetition (a byte that place does
    not read) or ends; plus, when it ends inside, ``unit.extra`` of the place
    it ends at.

    Only the (trie node, place) pairs still in the repetition are followed, so
    a place that few tokens can be read from (a place of an address literal in
    an e-mail address) costs what those tokens cost, not the whole trie. The
    tokens of a subtree whose first byte leaves the repetition all keep the
    units their common path had begun: one range of tokens.

    Parameters
    ----------
    trie
        The vocabulary's token trie.
    unit
        The unit.
    sources
        The places counted from (default: ``unit.counted``).

    Returns
    -------
    tuple of numpy.ndarray
        ``(row, position, count)``, ``int64``: the index in ``sources``,
        the token's position in ``trie.sorted_tokens`` and its count, one
        entry per (place, token) pair whose count is over 0.
    """
    starts = np.asarray(unit.begins, dtype=bool)
    ends = np.asarray(unit.extra, dtype=np.int64)
    table = np.asarray(unit.table, dtype=np.int64)
    sources = unit.counted if sources is None else sources
    child_start = trie.child_start.astype(np.int64)
    node_byte = trie.node_byte.astype(np.int64)
    token_lo, token_mid, token_hi = (
        a.astype(np.int64) for a in (trie.token_lo, trie.token_mid, trie.token_hi)
    )
    row = np.arange(len(sources), dtype=np.int64)
    node = np.zeros(row.size, dtype=np.int64)  # the root, once per place counted from
    place = np.asarray(sources, dtype=np.int64)
    begun = np.zeros(row.size, dtype=np.int64)
    got: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # (row, lo, hi, count) ranges
    while node.size:
        first = child_start.take(node)
        fan = child_start.take(node + 1) - first
        pair = np.repeat(np.arange(node.size), fan)
        kids = trie.child_ids.take(_ranges(first, fan)).astype(np.int64)
        at, before, rows = place.take(pair), begun.take(pair), row.take(pair)
        after = table[at, node_byte.take(kids)]
        alive = after >= 0
        left = ~alive & (before > 0)  # the subtree leaves here: its tokens keep what they had begun
        got.append((rows[left], token_lo.take(kids[left]), token_hi.take(kids[left]), before[left]))
        kids, at, after, rows = kids[alive], at[alive], after[alive], rows[alive]
        begun = before[alive] + starts.take(at)
        need = begun + ends.take(after)  # the tokens that end here
        ending = (need > 0) & (token_mid.take(kids) > token_lo.take(kids))
        got.append((rows[ending], token_lo.take(kids[ending]), token_mid.take(kids[ending]), need[ending]))
        node, row, place = kids, rows, after
    rows_, lo, hi, count = (np.concatenate(parts) for parts in zip(*got, strict=True))
    size = hi - lo
    return np.repeat(rows_, size), _ranges(lo, size), np.repeat(count, size)


#: the most (trie node, place) pairs one pass of :func:`unit_counts` may follow, all levels together
#: (its arrays hold about 50 bytes a pair); the places of a unit are counted in batches within it
_MAX_PAIRS = 2_000_000


def _batches(trie: TokenTrie, unit: Unit) -> list[np.ndarray]:
    """``unit.counted`` cut into runs that each follow at most :data:`_MAX_PAIRS` pairs (a place alone
    may follow more): a place follows at most the nodes below the root's children whose byte it reads."""
    kids = trie.child_ids[trie.child_start[0] : trie.child_start[1]].astype(np.int64)
    below = trie.subtree_end.take(kids).astype(np.int64) - kids
    reads = np.asarray(unit.table).take(np.asarray(unit.counted, dtype=np.int64), axis=0)
    most = np.where(reads[:, trie.node_byte.take(kids).astype(np.int64)] >= 0, below[None, :], 0).sum(axis=1)
    out: list[np.ndarray] = []
    start, held = 0, 0
    for k, pairs in enumerate(most.tolist()):
        if k > start and held + pairs > _MAX_PAIRS:
            out.append(unit.counted[start:k])
            start, held = k, 0
        held += pairs
    if unit.counted.size:
        out.append(unit.counted[start:])
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
        self._row_of = np.full(unit.table.shape[0], -1, dtype=np.int64)
        self._row_of[unit.counted] = np.arange(unit.counted.size)
        self._rows: list[CountRows] = []
        token_ids = trie.sorted_tokens.astype(np.int64)
        for sources in _batches(trie, unit):
            rows, positions, counts = unit_counts(trie, unit, sources)
            ids = token_ids.take(positions)
            order = np.argsort(rows, kind="stable")
            bounds = np.searchsorted(rows.take(order), np.arange(sources.size + 1))
            for k in range(sources.size):
                mine = order[bounds[k] : bounds[k + 1]]
                if mine.size * _SPARSE_AT_MOST > vocab_size:
                    full = np.zeros(vocab_size, dtype=np.int16)
                    full[ids.take(mine)] = counts.take(mine)
                    self._rows.append(CountRows(full, num_words))
                else:
                    self._rows.append(CountRows.sparse(ids.take(mine), counts.take(mine), num_words))

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


#: a place's counts are kept per token of the vocabulary when more than this fraction of its tokens
#: have one (2 bytes a token), else as the list of those tokens (6 bytes each)
_SPARSE_AT_MOST = 3
