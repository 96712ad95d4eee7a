"""Masks of the states that count a run of blanks, derived from their place's mask.

:func:`~tokensieve.automata.blank_runs.bound_blank_runs` unrolls every layout
place of a JSON schema's automaton into a chain of copies: copy ``c`` is the
place after ``c`` blanks, it leaves on every other byte as the place does,
and a blank leads on to copy ``c + 1`` (to nothing after the last,
``most``). A token read from copy ``c`` first spends its leading blanks along
the chain and then leaves it as it would leave the place after as many blanks.
So the tokens allowed in copy ``c`` are exactly the place's tokens whose
leading run of blanks is at most ``most - c`` long, and the copy's mask is the
place's mask ANDed with one row per vocabulary and run length
(:class:`LeadingBlanks`): no walk of the token trie, no class of its own, a
few microseconds (the cost of copying the mask).

A token that is all blanks has its whole length as its leading run. Special
and stop tokens are never cleared by the row (a walk never allows them, and a
stop token's bit follows acceptance, which a copy shares with its place, even
where the token's text is a blank).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..automata.blank_chains import BLANKS, IS_BLANK
from .count_rows import CountRows

if TYPE_CHECKING:
    from ..vocab.trie import TokenTrie

__all__ = ["LeadingBlanks"]

_BLANKS = bytes(BLANKS.tolist())
#: rows built with the table: those of the shortest run lengths (the ones that clear most tokens)
_EAGER_ROWS = 4


class LeadingBlanks:
    """The tokens of a vocabulary by the length of their leading run of JSON blanks.

    Parameters
    ----------
    decoded_vocab
        The bytes of every token.
    special_token_ids
        Tokens that count as having no leading blanks (the special and stop tokens).
    num_words
        Width of a packed mask in ``int32`` words.
    """

    def __init__(
        self, decoded_vocab: Sequence[bytes], special_token_ids: Iterable[int], num_words: int
    ) -> None:
        lead = np.fromiter(
            (len(data) - len(data.lstrip(_BLANKS)) for data in decoded_vocab),
            dtype=np.int64,
            count=len(decoded_vocab),
        )
        special = np.fromiter((int(t) for t in special_token_ids), dtype=np.int64)
        lead[special[(special >= 0) & (special < lead.size)]] = 0
        self._by_run = CountRows(lead, num_words)
        #: the longest leading run of blanks of any token (0 for none)
        self.longest = self._by_run.longest
        self._nodes: tuple[TokenTrie, np.ndarray] | None = None
        for run in self._by_run.distinct[:_EAGER_ROWS].tolist():  # the runs of most tokens: the costly rows
            self.at_most(run)

    def at_most(self, run: int) -> np.ndarray | None:
        """Packed ``int32`` mask of the tokens whose leading run of blanks is at most ``run`` long.

        ``None`` when that is every token (``run >= longest``). Memoised per
        distinct run length, read-only; the words past the vocabulary's end
        are set.
        """
        return self._by_run.at_most(run)

    def of_nodes(self, trie: TokenTrie) -> np.ndarray:
        """``int16 (num_nodes,)``: the leading run of blanks of every trie node's path.

        Memoised for the last trie asked for (the vocabulary's own).
        """
        known = self._nodes
        if known is not None and known[0] is trie:
            return known[1]
        lead = np.zeros(trie.num_nodes, dtype=np.int16)
        parent, byte = trie.node_parent, trie.node_byte
        for depth in range(1, trie.max_depth + 1):
            nodes = trie.nodes_at_depth(depth)
            before = lead.take(parent.take(nodes))
            # a path all blanks so far (run == depth - 1) goes on with another blank
            lead[nodes] = before + ((before == depth - 1) & IS_BLANK.take(byte.take(nodes)))
        lead.setflags(write=False)
        self._nodes = (trie, lead)
        return lead

    @property
    def nbytes(self) -> int:
        """Bytes held by the memoised rows and the counts."""
        return self._by_run.nbytes
