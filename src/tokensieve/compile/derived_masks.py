"""Which states of a DFA take their mask from another state's, rather than from a walk of their own.

Three kinds, each exact:

* a copy of a layout place (a state counting a run of blanks) keeps its
  place's tokens whose leading run of blanks it still allows
  (:mod:`.blank_copies`);
* a later layer of a counted string keeps its base layer's tokens that begin
  no more units than it has room for (:mod:`.unit_needs`);
* in a large automaton, states that behave alike for ``SHARE_DEPTH`` bytes
  share the mask of their short tokens (:mod:`.shared_masks`); their long
  tokens are checked per state.

:class:`DerivedMasks` is a base of
:class:`~tokensieve.compile.compiled_grammar.CompiledGrammar` holding these
decisions: which state's walk serves each state, and how its mask follows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._arrays import sorted_unique
from .char_chains import MAX_CHAIN
from .shared_masks import SHARE_DEPTH, mask_representatives
from .unit_needs import UnitNeeds
from .vocab_cache import unit_needs_for

if TYPE_CHECKING:
    from ..automata import ByteDFA
    from ..automata.blank_runs import BlankChains
    from ..automata.layers import LayerCopies
    from .token_masks import TokenMaskBuilder

__all__ = ["DerivedMasks"]

#: automata with more states than this share masks between states that are equivalent
#: up to ``SHARE_DEPTH`` bytes (see :mod:`tokensieve.compile.shared_masks`)
_SHARE_MIN_STATES = 256


class DerivedMasks:
    """The states of a :class:`~tokensieve.compile.compiled_grammar.CompiledGrammar` whose masks
    come from another's: layout copies, later layers, classes sharing short-token masks.

    A base of the grammar class: it reads the automaton's tables (declared
    below) and keeps what it finds (made by :meth:`_init_derived`).
    """

    dfa: ByteDFA
    _builder: TokenMaskBuilder
    _transitions: np.ndarray | None
    _accepting: np.ndarray

    def _init_derived(self) -> None:
        """Find the copies and layers of the automaton (after its tables); the rest is found on first use."""
        # the states counting a run of blanks: their masks come from their place's (see blank_copies)
        self._chains: BlankChains | None = self.dfa.blank_chains if self._transitions is not None else None
        # the later layers of counted strings: their masks come from their base layer's (see unit_needs)
        self._layers: LayerCopies | None = self.dfa.layer_copies if self._transitions is not None else None
        self._needs: list[UnitNeeds] | None = None  # see _unit_needs
        # state -> the state whose short-token mask it shares (None: every state is its own)
        self._reps: np.ndarray | None = None
        # representative -> the long tokens that can be allowed in its class (None: too many to list)
        self._survivors: dict[int, Any] = {}
        self._reps_done = self.dfa.num_states <= _SHARE_MIN_STATES or self._transitions is None

    def _derived_from(self, state: int) -> tuple[int, np.ndarray | None]:
        """``(base, row)`` when ``state``'s mask is ``base``'s ANDed with ``row`` (``None``: ``base``'s as it is);
        ``(-1, None)`` when it is walked.

        A copy of a layout place keeps its place's tokens whose leading run of
        blanks it still allows (:mod:`.blank_copies`); a later layer of a
        counted string, its base layer's tokens that begin no more units than
        it has room for (:mod:`.unit_needs`).
        """
        chains = self._chains
        if chains is not None and state >= chains.first:
            place, left = chains.copy_of(state)
            if place >= 0:
                leading = self._builder.leading_blanks
                assert leading is not None  # set by mask_builder_for
                return place, leading.at_most(left)
        layers = self._layers
        if layers is not None:
            base = int(layers.base[state])
            if base >= 0:
                needs = self._unit_needs[int(layers.unit[state])]
                return base, needs.at_most(int(layers.place[state]), int(layers.room[state]))
        return -1, None

    @property
    def _unit_needs(self) -> list[UnitNeeds]:
        """The per-vocabulary counts of the units of :attr:`_layers` (by their index; built on first use)."""
        known = self._needs
        if known is None:
            units = () if self._layers is None else self._layers.units
            known = self._needs = [unit_needs_for(self._builder, unit) for unit in units]
        return known

    def _is_derived(self, state: int) -> bool:
        """Whether ``state``'s mask is derived from another's (see :meth:`_derived_from`)."""
        chains, layers = self._chains, self._layers
        return bool(
            (chains is not None and chains.first <= state < chains.end)
            or (layers is not None and layers.base[state] >= 0)
        )

    def _walked_for(self, states: np.ndarray) -> np.ndarray:
        """The state whose walk gives the mask of each of ``states`` (``int64``): a copy's place, a later
        layer's base, a class's representative."""
        if self._chains is not None:
            states = self._chains.places_of(states)
        if self._layers is not None:
            states = self._layers.bases_of(states)
        reps = self._reps
        return states if reps is None else reps.take(states)

    def _shared_with(self, state: int) -> int | None:
        """The other state whose short-token mask ``state`` shares, or ``None`` (its own mask)."""
        if state == int(self.dfa.start):
            return None
        reps = self._representatives()
        if reps is None:
            return None
        rep = int(reps[state])
        return None if rep == state else rep

    def _representatives(self) -> np.ndarray | None:
        """For every state, the state whose short-token mask it shares (computed on the first miss)."""
        if not self._reps_done:
            table, chains = self._transitions, self._chains
            assert table is not None
            folds = chains is not None and chains.most >= SHARE_DEPTH and chains.end == int(self._accepting.shape[0])
            layers = self._layers
            far = None if layers is None else layers.far(SHARE_DEPTH)
            if far is not None and far.any():
                reps = self._representatives_folded(table, far, chains if folds else None)
            elif folds:
                # no run from a state before the copies reaches its bound within SHARE_DEPTH bytes:
                # up to that depth those states behave as in the automaton whose places loop on the
                # blanks, which has no copies to refine
                assert chains is not None
                first, as_places = chains.first, chains.places_of(np.arange(chains.end, dtype=np.int64))
                head = mask_representatives(
                    table[:first], self._accepting[:first], SHARE_DEPTH, relabel=np.append(as_places, -1)
                )
                reps = head.take(as_places)
            else:
                reps = mask_representatives(table, self._accepting, SHARE_DEPTH)
            if chains is not None and not folds:  # copies refined as states of their own
                reps[chains.first : chains.end] = reps.take(chains.folded())
            # a copy's entry is its place's representative, whose walk serves it (see _walked_for)
            if layers is not None:  # a walked state never takes a derived one's mask (see _walked_first)
                derived = layers.base >= 0
                if chains is not None:
                    derived[chains.first : chains.end] = True
                reps = _walked_first(reps, derived)
            start = int(self.dfa.start)
            if layers is None or layers.base[start] < 0:
                reps[reps == reps[start]] = start  # the start state's mask is computed first
            self._reps = reps if sorted_unique(reps).size < reps.size else None
            self._reps_done = True
        return self._reps

    def _representatives_folded(
        self, table: np.ndarray, far: np.ndarray, chains: BlankChains | None
    ) -> np.ndarray:
        """The representatives, refined on the states left once those that behave as another up to
        SHARE_DEPTH bytes are read as that one.

        Those are the later layers of counted strings with room for SHARE_DEPTH
        more characters or more (``far``), read as their base (no string of
        SHARE_DEPTH bytes begins more characters than that), and the copies of
        the layout places when ``chains`` is given (see :meth:`_representatives`).
        Each takes its stand-in's representative.
        """
        layers = self._layers
        assert layers is not None
        n = int(self._accepting.shape[0])
        to = np.arange(n, dtype=np.int64)
        if chains is not None:
            to[chains.first :] = chains.folded()
        to[far] = layers.base[far]
        kept = np.flatnonzero(to == np.arange(n))
        number = np.full(n, -1, dtype=np.int32)
        number[kept] = np.arange(kept.size, dtype=np.int32)
        renumber = np.append(number.take(to), np.int32(-1))  # [-1]: a missing transition stays missing
        head = mask_representatives(table, self._accepting[kept], SHARE_DEPTH, rows=kept, relabel=renumber)
        reps = np.empty(n, dtype=np.int64)
        reps[kept] = kept.take(head)
        return reps.take(to)

    def _unreached(self) -> np.ndarray | None:
        """``bool (S,)``: the later layers of counted strings that no walk of the token trie reads, or ``None``.

        Only states that are not derived are walked, and those of a counted
        string are at its base layer or before. A token takes a walk at most
        one layer per byte further, so the walk's arrays can leave out the
        layers past the longest token: the walk never reads their rows. The
        chains of the states before them then stop there, shorter than in
        the whole automaton, but where a walk reads them they are still
        longer than what is left of any token, so every comparison comes out
        the same; and the walked states' chains, which also set the depth of
        their class jumps, are the same when the layers kept are at least
        :data:`~tokensieve.compile.char_chains.MAX_CHAIN`, the cap of every
        chain. (A string of 2,000 characters is 50,000 states, of which the
        walks read the first 130 layers.)
        """
        layers = self._layers
        if layers is None:
            return None
        return layers.beyond(max(self._builder.trie.max_depth, MAX_CHAIN) + 1)


def _walked_first(reps: np.ndarray, derived: np.ndarray) -> np.ndarray:
    """``reps`` with each class represented by its first state that is not ``derived``, if it has one.

    A derived state's mask (a later layer's, a layout copy's) comes from its
    base's; were it the representative of a class holding its base (a later
    layer of a product near its bound reads as its place's free state up to the
    depth compared), the base's mask would come from it again.
    """
    n = reps.size
    walked = np.flatnonzero(~derived)
    first = np.full(n, n, dtype=np.int64)
    np.minimum.at(first, reps.take(walked), walked)
    chosen = first.take(reps)
    return np.where(chosen < n, chosen, reps)
