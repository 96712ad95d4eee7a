"""Where the copies of the layout places sit in an automaton whose blank runs are counted.

:func:`~tokensieve.automata.blank_runs.bound_blank_runs` makes these
annotations and :class:`~tokensieve.automata.dfa.ByteDFA` carries them to the
compile stage, which derives the masks of the copies from their places'
(:mod:`tokensieve.compile.blank_copies`). They are plain data over numpy
arrays and import nothing that builds automata.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.nodes import byte_class

__all__ = ["BLANK", "BLANKS", "IS_BLANK", "BlankChains", "CopyRows"]

#: the JSON blanks: tab, line feed, carriage return, space
BLANKS = np.array([0x09, 0x0A, 0x0D, 0x20], dtype=np.intp)
#: ``bool (256,)``: whether each byte is a JSON blank (read-only)
IS_BLANK = np.zeros(256, dtype=bool)
IS_BLANK[BLANKS] = True
IS_BLANK.setflags(write=False)
#: one JSON blank, as an IR node
BLANK = byte_class([(b, b) for b in BLANKS.tolist()])


@dataclass(frozen=True, eq=False)
class BlankChains:
    """Where :func:`bound_blank_runs` put the copies of the layout places.

    Copy ``c`` (``1 .. most``) of place ``k`` is state ``first + k * most + c - 1``:
    the place after ``c`` blanks of its run. It accepts as its place does and
    leaves it on every other byte as its place does; a blank leads to copy
    ``c + 1``, and none to anything after the last. Only blanks lead to copies.
    So a token allowed in copy ``c`` is one allowed in the place whose leading
    run of blanks is at most ``most - c`` long.

    Attributes
    ----------
    first
        The first copy's state (every state below it is the input automaton's).
    most
        Copies per place: the longest run of blanks.
    places
        ``int64 (P,)``, read-only: the place of each chain.
    """

    first: int
    most: int
    places: np.ndarray

    @property
    def end(self) -> int:
        """One past the last copy's state."""
        return self.first + int(self.places.size) * self.most

    def copy_of(self, state: int) -> tuple[int, int]:
        """The place of ``state`` and the blanks it still allows, if it is a copy; else ``(-1, 0)``."""
        if state < self.first or state >= self.end:
            return -1, 0
        k, c = divmod(state - self.first, self.most)
        return int(self.places[k]), self.most - c - 1

    def places_of(self, states: np.ndarray) -> np.ndarray:
        """``states`` (``int64``) with every copy replaced by its place."""
        out = np.array(states, dtype=np.int64)
        copy = (out >= self.first) & (out < self.end)
        out[copy] = self.places.take((out[copy] - self.first) // self.most)
        return out

    def folded(self) -> np.ndarray:
        """``int64 (end - first,)``: the place of every copy, in state order."""
        return np.repeat(self.places, self.most)

    def copy_rows(self, table: np.ndarray) -> CopyRows | None:
        """Which rows of ``table`` (this automaton's) repeat their place's row, as :class:`CopyRows`.

        ``None`` when states follow the copies (the table is not the one
        :func:`bound_blank_runs` made).
        """
        num_states = table.shape[0]
        if self.end != num_states or not self.places.size:
            return None
        places = self.places
        most = self.most
        # a place that some byte takes back to itself: its copies (which no byte does) differ more
        looping = (table[places] == places[:, None]).any(axis=1)
        derived = np.ones((places.size, most), dtype=bool)
        derived[:, -1] = False  # the last copy refuses the blanks its place reads
        derived[looping] = False
        flat = derived.reshape(-1)
        copies = self.first + np.flatnonzero(flat)
        scanned = np.concatenate([np.arange(self.first, dtype=np.int64), self.first + np.flatnonzero(~flat)])
        owner = (copies - self.first) // most
        return CopyRows(scanned, copies, places.take(owner), self.first + owner * most)


_NO_ROWS = np.zeros(0, dtype=np.int64)
_NO_ROWS.setflags(write=False)


@dataclass(frozen=True, eq=False)
class CopyRows:
    """The copies whose row is their place's but for the blanks, and the rows to read instead.

    A copy other than the last, of a place that no byte takes back to itself,
    reads every byte as its place does except the blanks, which lead to the
    next copy where the place's lead to its first copy. No other byte leads to
    a copy, so the two rows have the same pattern of equal entries: a value
    computed from a row by comparing its entries (which bytes share a target,
    whether all of a range do) is the place's, and a target read off it is the
    place's, the first copy becoming the copy's next.

    Attributes
    ----------
    scanned
        ``int64``, sorted: the rows whose values must be read off the table
        (the states before the copies, the last copies, the copies of places
        that loop).
    copies
        ``int64``, sorted: the other copies.
    places, first_copies
        ``int64``: the place of each of ``copies``, and that place's first copy.
    unread
        ``int64``, sorted: rows neither read nor copied, whose values are
        left at "nothing" (:meth:`clear`): states that no walk of the token
        trie reaches (see :meth:`without`).
    """

    scanned: np.ndarray
    copies: np.ndarray
    places: np.ndarray
    first_copies: np.ndarray
    unread: np.ndarray = field(default_factory=lambda: _NO_ROWS)

    @classmethod
    def all_rows(cls, num_states: int) -> CopyRows:
        """Every row read, none copied (a table without copies)."""
        return cls(np.arange(num_states, dtype=np.int64), _NO_ROWS, _NO_ROWS, _NO_ROWS)

    def without(self, unread: np.ndarray) -> CopyRows:
        """The same with the rows of ``unread`` (``bool (S,)``, never a copy) left unread."""
        scanned = self.scanned[~unread.take(self.scanned)]
        rows = np.union1d(self.unread, np.flatnonzero(unread))
        return CopyRows(scanned, self.copies, self.places, self.first_copies, rows)

    def clear(self, values: np.ndarray, nothing: object) -> None:
        """``values[unread] = nothing``, in place."""
        if self.unread.size:
            values[self.unread] = nothing

    def spread(self, values: np.ndarray) -> None:
        """``values[copies] = values[places]``, in place (``values`` indexed by state)."""
        values[self.copies] = values.take(self.places, axis=0)

    def spread_targets(self, targets: np.ndarray) -> None:
        """:meth:`spread` for targets: where the place has its first copy, the copy has its next."""
        got = targets.take(self.places)
        targets[self.copies] = np.where(got == self.first_copies, self.copies + 1, got)
