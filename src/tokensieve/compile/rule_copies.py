"""Blank-run copies in rule networks: the states whose frame walks are derived from another's.

A recursive grammar bounds a run of JSON blanks in its IR, so a rule's
automaton counts the blanks of a run along a chain of states: every blank
leads from one to the next, the last reads none, and they all leave on every
other byte, accept and call exactly as the first does. A token read from a
state of the chain spends its leading blanks along it, then goes on as from
the first state after as many blanks; so the walk of a state's frame is that
of the chain's first state, less the tokens and escape nodes whose leading run
of blanks is longer than the blanks the state still allows (see
:mod:`.blank_copies`). That holds only while no blank is read inside a rule
called from the chain (nor after a callee that may read nothing): chains whose
calls could are left as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..automata.blank_runs import BLANKS, IS_BLANK
from ..bitmask import friendly_zeros

if TYPE_CHECKING:
    from .token_masks import TokenMaskBuilder

__all__ = ["RuleCopies"]


class RuleCopies:
    """The chains of blank-run copies of a rule network's states, found a rule at a time.

    Each rule's chains stay inside it, so a rule's are found when first needed.

    Parameters
    ----------
    gtrans
        ``int32 (G, 256)``: the byte transitions of every rule, in global state ids.
    gaccept
        Per global state, whether its rule may return there.
    gcalls
        Per global state, its ``(callee start, return state)`` edges (-1: a tail call).
    offsets
        ``int64 (R + 1,)``: rule ``r``'s states are ``offsets[r]`` to ``offsets[r + 1]``.
    rule_of
        Per global state, its rule.
    builder
        The vocabulary's mask builder (its ``leading_blanks`` rows; no copies without them).
    """

    def __init__(
        self,
        gtrans: np.ndarray,
        gaccept: list[bool],
        gcalls: list[tuple[tuple[int, int], ...]],
        offsets: np.ndarray,
        rule_of: list[int],
        builder: TokenMaskBuilder,
    ) -> None:
        self._gtrans = gtrans
        self._gaccept = gaccept
        self._gcalls = gcalls
        self._bounds: list[int] = offsets.tolist()
        self._rule_of = rule_of
        self._builder = builder
        # the first state of each one's chain, the blanks still allowed, the rules whose states
        # are done, and which states read a blank
        self._tables: tuple[list[int], list[int], list[bool], list[bool]] | None = None

    def all(self) -> tuple[list[int], list[int]]:
        """The copies of every rule: ``(head, room)``, per global state the first state of its
        chain (-1: none, the state is walked) and the blanks it still allows."""
        head, room, done, _ = self._state()
        for r in range(len(done)):
            if not done[r]:
                self._rule(r)
        return head, room

    def of(self, states: list[int]) -> tuple[list[int], list[int]]:
        """:meth:`all`, filled in for the rules of ``states`` at least."""
        head, room, done, _ = self._state()
        for g in states:
            r = self._rule_of[g]
            if not done[r]:
                self._rule(r)
        return head, room

    def _state(self) -> tuple[list[int], list[int], list[bool], list[bool]]:
        """(head, room, rules done, per global state whether it reads a blank)."""
        known = self._tables
        if known is None:
            n = int(self._gtrans.shape[0])
            reads_blank: list[bool] = np.any(self._gtrans[:, BLANKS] >= 0, axis=1).tolist()
            known = self._tables = ([-1] * n, [-1] * n, [False] * (len(self._bounds) - 1), reads_blank)
        return known

    def _rule(self, r: int) -> None:
        """Fill in :meth:`all`'s tables for the states of rule ``r``."""
        head, room, done, reads_blank = self._state()
        done[r] = True
        lo, hi = self._bounds[r], self._bounds[r + 1]
        trans = self._gtrans
        blank_cols = trans[lo:hi, BLANKS]
        link = blank_cols[:, 0].astype(np.int64)
        link[~(blank_cols == blank_cols[:, :1]).all(axis=1) | (link == np.arange(lo, hi))] = -1
        src = np.flatnonzero(link >= 0)
        if not (src.size and self._builder.leading_blanks is not None):
            return
        dst = link.take(src)
        src = src + lo
        other = ~IS_BLANK
        accept = np.array(self._gaccept[lo:hi], dtype=bool)
        same = (trans[src][:, other] == trans[dst][:, other]).all(axis=1)
        same &= accept.take(src - lo) == accept.take(dst - lo)
        calls = self._gcalls
        safe: dict[tuple[tuple[int, int], ...], bool] = {}  # per call list: a chain's states share one
        nxt: dict[int, int] = {}
        for a, b in zip(src[same].tolist(), dst[same].tolist(), strict=True):
            if calls[a] != calls[b]:
                continue
            ok = safe.get(calls[a])
            if ok is None:
                ok = safe[calls[a]] = self._calls_read_no_blank(a, reads_blank)
            if ok:
                nxt[a] = b
        for a in nxt:  # the blanks each state of a chain allows: its distance to the chain's end
            path: list[int] = []
            on_path: set[int] = set()
            q = a
            while q in nxt and room[q] < 0 and q not in on_path:
                path.append(q)
                on_path.add(q)
                q = nxt[q]
            left = room[q] if room[q] >= 0 else (0 if not reads_blank[q] and q not in nxt else -1)
            if left < 0:
                continue
            room[q] = left
            for p in reversed(path):
                left += 1
                room[p] = left
        # a chain's first state is no counted state's successor; its successors take it as head
        # (where chains merge, the first head to reach a state keeps it: both are exact)
        inner = {b for a, b in nxt.items() if room[a] > 0}
        for a in nxt:
            if room[a] > 0 and a not in inner:
                q = nxt[a]
                while head[q] < 0:
                    head[q] = a
                    if q not in nxt:
                        break
                    q = nxt[q]

    def _calls_read_no_blank(self, g: int, reads_blank: list[bool]) -> bool:
        """Whether no rule that state ``g`` calls can read a blank before any other byte, nor
        end without reading one (conservatively: through every call made without a byte).

        ``reads_blank``: per global state, whether it has a transition on a blank.
        """
        todo = [start for start, _ in self._gcalls[g]]
        seen = set(todo)
        while todo:
            q = todo.pop()
            if q >= len(reads_blank) or self._gaccept[q] or reads_blank[q]:
                return False  # (from len(reads_blank) on: frames of members in any order, which may)
            for start, ret in self._gcalls[q]:
                for nxt in (start, ret):
                    if nxt >= 0 and nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
        return True

    def narrowed(
        self, walk: tuple[np.ndarray, np.ndarray | None], room: int
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """A walk less its tokens and escape nodes whose leading run of blanks is over ``room``."""
        leading = self._builder.leading_blanks
        assert leading is not None  # no copies without it (see _rule)
        mask, nodes = walk
        row = leading.at_most(room)
        if row is not None:
            out = friendly_zeros(self._builder.num_words)
            np.bitwise_and(mask, row, out=out)
            out.setflags(write=False)
            mask = out
        if nodes is not None and nodes.size:
            nodes = nodes[leading.of_nodes(self._builder.trie).take(nodes) <= room]
        return mask, nodes
