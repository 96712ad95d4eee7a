"""The parse-stack frames of members in any order, made on first use.

A rule of a :class:`~tokensieve.automata.pushdown.RuleNetwork` that stands for
members in any order (an :class:`~tokensieve.automata.pushdown.UnorderedRule`:
a JSON object's members with ``property_order="any"``) has no automaton of its
own: its language needs a state per set of members seen, ``2**n`` of them. Its
frames are made here instead, on first use, as global state ids after the
network's own states: a frame is ``(rule, members seen, phase)`` and reads no
byte itself; it only calls:

* ``NEXT`` (after the ``{`` and after each separator): each member not seen
  yet, returning to ``AFTER`` with that member seen, and the ``extra`` rule
  (other keys) returning to ``AFTER`` with nothing new seen;
* ``AFTER`` (after a member): the separator, returning to ``NEXT`` (when a
  member or ``extra`` may follow), and the closing rule as a tail call (the
  frame ends with it) once every required member is seen.

The grammar's tables (``_gaccept``, ``_gcalls``) grow by one entry per frame
made; a frame's calls are made on first use (:meth:`UnorderedFrames.calls`,
which readers of ``_gcalls`` call for ids from :attr:`UnorderedFrames.first`
on), since making them makes the frames they return to. Only the frames a parse
reaches are made: at most a few per member written.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..automata.pushdown import RuleNetwork, UnorderedRule

__all__ = ["UnorderedFrames"]

#: the phases of a frame
NEXT, AFTER = 0, 1


class UnorderedFrames:
    """The frames of a network's unordered rules (see the module docstring).

    Parameters
    ----------
    network
        The rule network.
    rule_start
        Per rule, the global id of its first state.
    gaccept, gcalls
        The grammar's per-state tables (lists), to which the frames are appended.
    """

    def __init__(
        self,
        network: RuleNetwork,
        rule_start: Sequence[int],
        gaccept: list[bool],
        gcalls: list[tuple[tuple[int, int], ...]],
    ) -> None:
        self.first = len(gcalls)  # global ids from here on are frames of this module
        self._specs: dict[int, UnorderedRule] = {spec.rule: spec for spec in network.unordered}
        self._start = [int(rule_start[r]) + int(network.starts[r]) for r in range(len(network.names))]
        self._required = {
            spec.rule: sum(1 << i for i, req in enumerate(spec.required) if req) for spec in network.unordered
        }
        self._gaccept = gaccept
        self._gcalls = gcalls
        self._ids: dict[tuple[int, int, int], int] = {}
        self._keys: list[tuple[int, int, int]] = []
        self._calls: list[tuple[tuple[int, int], ...] | None] = []

    def entry(self, rule: int) -> int:
        """The global id of the frame that starts unordered rule ``rule`` (nothing seen yet)."""
        return self._frame(rule, 0, NEXT)

    def _frame(self, rule: int, seen: int, phase: int) -> int:
        key = (rule, seen, phase)
        hit = self._ids.get(key)
        if hit is not None:
            return hit
        made = self.first + len(self._keys)
        self._ids[key] = made
        self._keys.append(key)
        self._calls.append(None)
        self._gaccept.append(False)
        self._gcalls.append(())  # until calls() fills it in
        return made

    def calls(self, g: int) -> tuple[tuple[int, int], ...]:
        """The ``(callee start, return state)`` edges of frame ``g`` (return -1: a tail call), also
        stored in the grammar's ``gcalls`` on first use."""
        known = self._calls[g - self.first]
        if known is not None:
            return known
        rule, seen, phase = self._keys[g - self.first]
        spec = self._specs[rule]
        start = self._start
        out: list[tuple[int, int]] = []
        if phase == NEXT:
            for i, member in enumerate(spec.members):
                if not seen >> i & 1:
                    out.append((start[member], self._frame(rule, seen | 1 << i, AFTER)))
            if spec.extra >= 0:
                out.append((start[spec.extra], self._frame(rule, seen, AFTER)))
        else:
            if spec.extra >= 0 or seen != (1 << len(spec.members)) - 1:
                out.append((start[spec.separator], self._frame(rule, seen, NEXT)))
            required = self._required[rule]
            if seen & required == required:
                out.append((start[spec.close], -1))
        made = tuple(out)
        self._calls[g - self.first] = made
        self._gcalls[g] = made
        return made
