"""Regex IR to a Thompson NFA over byte ranges.

Nodes are numbered in flat lists. A *byte node* has a set of bytes (a tuple of
inclusive ranges) and one successor; an *epsilon node* has a list of successors. Every IR node becomes a
fragment with one entry and one exit (an epsilon node whose successors are
filled in by the enclosing fragment), built bottom-up without recursion. A
fragment's nodes are numbered contiguously, so a bounded repetition copies its
body by offsetting node numbers. The size is checked against
``Limits.max_nfa_states`` before anything is copied.

An embedded :class:`~tokensieve.ir.nodes.Automaton` becomes one epsilon node
per automaton state, followed by one byte node per distinct target of that
state (its byte ranges merged), with the accepting states linked to the exit.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from .._memo import memoized
from ..errors import GrammarError, LimitExceeded
from ..ir.nodes import (
    EMPTY,
    Alt,
    Automaton,
    ByteClass,
    CharClass,
    Concat,
    Empty,
    Literal,
    Node,
    Repeat,
    RuleRef,
)
from ..limits import Limits
from .utf8 import class_automaton, class_sequences

__all__ = ["ByteNFA", "build_nfa", "automaton_edges", "automaton_runs"]


class ByteNFA:
    """A Thompson NFA over byte ranges.

    Attributes
    ----------
    ranges : list of tuple of (int, int) or None
        The bytes each byte node matches, as inclusive ranges; ``None`` marks
        an epsilon node.
    out : list of int
        Successor of each byte node (``-1`` for epsilon nodes).
    eps : list of list of int or None
        Successors of each epsilon node (``None`` for byte nodes).
    start, accept : int
        Entry node and the (epsilon, successor-free) accepting node.
    has_dead : bool
        Whether some part of the automaton can match nothing (an empty class),
        in which case the determinised automaton needs trimming.
    """

    __slots__ = ("ranges", "out", "eps", "start", "accept", "has_dead")

    def __init__(self) -> None:
        self.ranges: list[Ranges | None] = []
        self.out: list[int] = []
        self.eps: list[list[int] | None] = []
        self.start = -1
        self.accept = -1
        self.has_dead = False

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return len(self.ranges)


Ranges = tuple[tuple[int, int], ...]
_Template = tuple[tuple[tuple[Ranges | None, int, tuple[int, ...] | None], ...], int, int]
_SINGLE_BYTE: tuple[Ranges, ...] = tuple(((b, b),) for b in range(256))


@memoized(max_entries=4096)
def _class_template(ranges: tuple[tuple[int, int], ...]) -> _Template:
    """Relative node list ``(ranges, out, eps)`` of a code point class, with entry and exit."""
    auto = class_automaton(ranges)
    ids: list[int] = []  # entry node of each automaton state
    nxt = 0
    for edges in auto.edges:
        ids.append(nxt)
        nxt += len(edges) + (1 if len(edges) > 1 else 0)
    exit_id = nxt
    nodes: list[tuple[Ranges | None, int, tuple[int, ...] | None]] = []
    for q, edges in enumerate(auto.edges):
        first = ids[q] + (1 if len(edges) > 1 else 0)
        if len(edges) > 1:
            nodes.append((None, -1, tuple(range(first, first + len(edges)))))
        for rs, target in edges:
            nodes.append((rs, exit_id if target < 0 else ids[target], None))
    nodes.append((None, -1, ()))
    return tuple(nodes), 0, exit_id


_RUN_DTYPE = np.dtype("<i4")


@memoized(max_entries=64)
def automaton_runs(node: Automaton) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The checked transitions of an embedded automaton as ``int64`` arrays ``(source, lo, hi, target)``.

    Parameters
    ----------
    node
        The IR node.

    Returns
    -------
    tuple of numpy.ndarray
        Read-only arrays, sorted by ``(source, lo)``.

    Raises
    ------
    ValueError
        For state numbers out of range, bad byte ranges, or overlapping or
        unsorted ranges of one state.
    """
    runs = np.frombuffer(node.runs, dtype=_RUN_DTYPE).reshape(-1, 4).astype(np.int64)
    src, lo, hi, dst = (np.ascontiguousarray(runs[:, i]) for i in range(4))
    n = node.num_states
    if len(src):
        if src.min() < 0 or src.max() >= n or dst.min() < 0 or dst.max() >= n:
            raise ValueError("Automaton.runs names a state out of range")
        if lo.min() < 0 or hi.max() > 255 or (lo > hi).any():
            raise ValueError("Automaton.runs has a bad byte range")
        same = src[1:] == src[:-1]
        if (src[1:] < src[:-1]).any() or (same & (lo[1:] <= hi[:-1])).any():
            raise ValueError("Automaton.runs must be sorted by (source, lo) with disjoint ranges per source")
    if any(b > 1 for b in node.accepting):
        raise ValueError("Automaton.accepting must hold 0 or 1 per state")
    for a in (src, lo, hi, dst):
        a.setflags(write=False)
    return src, lo, hi, dst


def automaton_edges(node: Automaton) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The transitions of an embedded automaton one byte at a time: ``(source, byte, target)``.

    Sorted by ``(source, byte)``, as :meth:`~tokensieve.automata.dfa.ByteDFA.from_edges`
    takes them; checked as :func:`automaton_runs` checks them.
    """
    src, lo, hi, dst = automaton_runs(node)
    lengths = hi - lo + 1
    total = int(lengths.sum())
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(src, lengths), np.repeat(lo, lengths) + offsets, np.repeat(dst, lengths)


@memoized(max_entries=64)
def _automaton_template(node: Automaton) -> _Template:
    """Relative node list of an embedded automaton, with entry and exit."""
    src, lo, hi, dst = automaton_runs(node)
    n = node.num_states
    order = np.lexsort((lo, dst, src))
    src, lo, hi, dst = src[order], lo[order], hi[order], dst[order]
    new_group = np.ones(len(src), dtype=bool)
    new_group[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    starts = np.flatnonzero(new_group)
    ends = np.append(starts[1:], len(src)).astype(np.int64)[: len(starts)]
    groups_per_state = np.bincount(src[starts], minlength=n)
    # state q: its epsilon node at ids[q], then one byte node per target
    ids = np.zeros(n, dtype=np.int64)
    np.cumsum(groups_per_state[:-1] + 1, out=ids[1:])
    exit_id = int(ids[-1] + groups_per_state[-1] + 1)
    accepting = node.accepting
    ids_l = ids.tolist()
    lo_l, hi_l, src_l, dst_l = lo.tolist(), hi.tolist(), src.tolist(), dst.tolist()
    nodes: list[tuple[Ranges | None, int, tuple[int, ...] | None]] = []
    g = 0
    bounds = list(zip(starts.tolist(), ends.tolist(), strict=True))
    for q in range(n):
        k = int(groups_per_state[q])
        first = ids_l[q] + 1
        succ = tuple(range(first, first + k)) + ((exit_id,) if accepting[q] else ())
        nodes.append((None, -1, succ))
        for a, b in bounds[g : g + k]:
            assert src_l[a] == q
            nodes.append((tuple(zip(lo_l[a:b], hi_l[a:b], strict=True)), ids_l[dst_l[a]], None))
        g += k
    nodes.append((None, -1, ()))
    return tuple(nodes), ids_l[node.start], exit_id


class _Builder:
    def __init__(self, limits: Limits) -> None:
        self.nfa = ByteNFA()
        self.max_nodes = limits.max_nfa_states

    def new_eps(self, succ: list[int] | None = None) -> int:
        nfa = self.nfa
        nfa.ranges.append(None)
        nfa.out.append(-1)
        nfa.eps.append([] if succ is None else succ)
        return len(nfa.out) - 1

    def link(self, src: int, dst: int) -> None:
        succ = self.nfa.eps[src]
        assert succ is not None
        succ.append(dst)

    def check(self, extra: int) -> None:
        total = len(self.nfa.out) + extra
        if total > self.max_nodes:
            raise LimitExceeded(
                "max_nfa_states", self.max_nodes, f"the byte NFA needs at least {total} states"
            )

    # ------------------------------------------------------------- leaves
    def leaf(self, node: Node) -> tuple[int, int]:
        nfa = self.nfa
        kind = type(node)
        if kind is Literal:
            data = node.value  # type: ignore[union-attr]
            self.check(len(data) + 1)
            base = len(nfa.out)
            nfa.ranges.extend([_SINGLE_BYTE[b] for b in data])
            nfa.out.extend(range(base + 1, base + len(data) + 1))
            nfa.eps.extend([None] * len(data))
            exit_id = self.new_eps()
            return (base if data else exit_id), exit_id
        if kind is CharClass:
            ranges = node.ranges  # type: ignore[union-attr]
            if not class_sequences(ranges):  # no ranges, or only surrogates
                return self.dead()
            nodes, entry, exit_rel = _class_template(ranges)
            self.check(len(nodes))
            base = len(nfa.out)
            for rs, out, eps in nodes:
                nfa.ranges.append(rs)
                nfa.out.append(out + base if out >= 0 else -1)
                nfa.eps.append(None if eps is None else [e + base for e in eps])
            return base + entry, base + exit_rel
        if kind is ByteClass:
            ranges = node.ranges  # type: ignore[union-attr]
            if not ranges:
                return self.dead()
            self.check(2)
            base = len(nfa.out)
            nfa.ranges.append(ranges)
            nfa.out.append(base + 1)
            nfa.eps.append(None)
            self.new_eps()
            return base, base + 1
        if kind is Empty:
            self.check(1)
            e = self.new_eps()
            return e, e
        if kind is Automaton:
            nodes, entry, exit_rel = _automaton_template(cast(Automaton, node))
            self.check(len(nodes))
            base = len(nfa.out)
            for rs, out, eps in nodes:
                nfa.ranges.append(rs)
                nfa.out.append(out + base if out >= 0 else -1)
                nfa.eps.append(None if eps is None else [e + base for e in eps])
            nfa.has_dead = True  # a node built by hand need not be trimmed
            return base + entry, base + exit_rel
        if kind is RuleRef:
            raise GrammarError(f"unresolved rule reference {node.name!r}")  # type: ignore[union-attr]
        raise TypeError(f"not a regex IR node: {node!r}")

    def dead(self) -> tuple[int, int]:
        self.nfa.has_dead = True
        self.check(2)
        return self.new_eps(), self.new_eps()

    # ---------------------------------------------------------- composites
    def concat(self, frags: list[tuple[int, int]]) -> tuple[int, int]:
        for (_, x), (e, _) in zip(frags, frags[1:], strict=False):
            self.link(x, e)
        return frags[0][0], frags[-1][1]

    def alt(self, frags: list[tuple[int, int]]) -> tuple[int, int]:
        self.check(2)
        split = self.new_eps([e for e, _ in frags])
        join = self.new_eps()
        for _, x in frags:
            self.link(x, join)
        return split, join

    def copy(self, a: int, b: int) -> int:
        """Append a copy of nodes ``a..b-1``; returns the offset added to their numbers."""
        nfa = self.nfa
        delta = len(nfa.out) - a
        nfa.ranges.extend(nfa.ranges[a:b])
        nfa.out.extend([o + delta if o >= 0 else -1 for o in nfa.out[a:b]])
        nfa.eps.extend([None if s is None else [t + delta for t in s] for s in nfa.eps[a:b]])
        return delta

    def repeat(self, frag: tuple[int, int], base: int, low: int, high: int | None) -> tuple[int, int]:
        entry, exit_ = frag
        if high is None and low <= 1:
            if low == 0:  # x*
                self.check(2)
                split = self.new_eps([entry])
                join = self.new_eps()
                self.link(split, join)
                self.link(exit_, split)
                return split, join
            self.check(1)  # x+
            join = self.new_eps()
            self.link(exit_, entry)
            self.link(exit_, join)
            return entry, join
        if low == 0 and high == 1:  # x?
            self.check(1)
            split = self.new_eps([entry, exit_])
            return split, exit_
        end = len(self.nfa.out)
        size = end - base
        copies = low if high is None else high
        self.check(size * (copies - 1) + 2)
        frags = [frag]
        for _ in range(copies - 1):
            d = self.copy(base, end)
            frags.append((entry + d, exit_ + d))
        for i in range(low - 1):
            self.link(frags[i][1], frags[i + 1][0])
        join = self.new_eps()
        if high is None:
            last_entry, last_exit = frags[-1]
            self.link(last_exit, last_entry)
            self.link(last_exit, join)
            return frags[0][0], join
        first = frags[0][0]
        if low == 0:
            first = self.new_eps()
            pre = first
        else:
            pre = frags[low - 1][1]
        for i in range(low, high):
            self.link(pre, frags[i][0])
            self.link(pre, join)
            pre = frags[i][1]
        self.link(pre, join)
        return first, join


def build_nfa(node: Node, limits: Limits | None = None) -> ByteNFA:
    """Build the byte NFA of an IR node.

    Parameters
    ----------
    node
        A regex IR node (no :class:`~tokensieve.ir.nodes.RuleRef` left).
    limits
        ``max_nfa_states`` bounds the number of nodes.

    Returns
    -------
    ByteNFA

    Raises
    ------
    LimitExceeded
        When the automaton would exceed ``limits.max_nfa_states``.
    GrammarError
        For an unresolved rule reference.
    """
    b = _Builder(limits or Limits())
    frags: list[tuple[int, int]] = []
    bases: list[int] = []
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        item, done = stack.pop()
        kind = type(item)
        if (kind is Concat or kind is Alt) and not item.items:  # type: ignore[union-attr]
            frags.append(b.leaf(EMPTY) if kind is Concat else b.dead())
        elif kind is Concat or kind is Alt or kind is Repeat:
            if not done:
                stack.append((item, True))
                bases.append(len(b.nfa.out))
                children = (item.item,) if kind is Repeat else item.items  # type: ignore[union-attr]
                for child in reversed(children):
                    stack.append((child, False))
                continue
            base = bases.pop()
            if kind is Repeat:
                frags[-1] = b.repeat(frags[-1], base, item.min, item.max)  # type: ignore[union-attr]
                continue
            k = len(item.items)  # type: ignore[union-attr]
            parts = frags[-k:]
            del frags[-k:]
            frags.append(b.concat(parts) if kind is Concat else b.alt(parts))
        else:
            frags.append(b.leaf(item))
    (entry, exit_) = frags.pop()
    b.nfa.start = entry
    b.nfa.accept = exit_
    return b.nfa
