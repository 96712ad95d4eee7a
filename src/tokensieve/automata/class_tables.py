"""Byte DFAs over byte classes: their IR embedding, class tables, and trimming and minimisation.

:func:`dfa_to_ir` and :func:`automaton_to_dfa` move a :class:`ByteDFA` into
and out of the regex IR (an :class:`~tokensieve.ir.nodes.Automaton` leaf).
The boolean operations (:mod:`.ops`) work on the transitions over the byte
classes that an automaton does not tell apart (:func:`class_tables`); their
results are trimmed and minimised here (:func:`minimal_class_dfa`), so they
obey the :class:`ByteDFA` contract and equal languages give identical tables.
Both steps first try a few whole-table numpy rounds (co-reachability as a
fixed point, Moore's partition refinement), which settle quickly when every
state is a few bytes from telling itself apart; deep automata (long counters
such as ``[a-z]{0,999}``) fall back to a per-state search and Hopcroft's
algorithm (:mod:`.minimize`).
"""

from __future__ import annotations

import numpy as np
from numpy.random import default_rng  # imported with the module: numpy loads it lazily, ~5 ms

from .._arrays import sorted_unique
from ..errors import GrammarError
from ..ir.nodes import Automaton
from ..limits import Limits
from .determinize import Row
from .dfa import ByteDFA
from .minimize import minimize
from .minimize_arrays import SMALL_EDGES, EdgeDFA, minimize_edges, trim_edges
from .nfa import automaton_edges

__all__ = [
    "EMPTY_RESULT",
    "automaton_to_dfa",
    "class_tables",
    "dfa_to_ir",
    "finish",
    "minimal_class_dfa",
    "stored_dfa",
]

#: the message of an operation whose result accepts nothing
EMPTY_RESULT = "the operation leaves no string: the result matches nothing"
_RUN_DTYPE = np.dtype("<i4")


# ------------------------------------------------------------ IR embedding
def dfa_to_ir(dfa: ByteDFA) -> Automaton:
    """The IR leaf whose language is the language of ``dfa``.

    Parameters
    ----------
    dfa
        Any byte DFA (table- or edge-list-based).

    Returns
    -------
    Automaton
        Immutable, hashable, compared by content. For a DFA built by this
        package (minimal, numbered canonically), equal languages give equal nodes.
    """
    src, byte, dst = dfa.edge_list()
    if len(src):
        # a run starts where the source changes, a byte is skipped, or the target changes
        new = np.ones(len(src), dtype=bool)
        new[1:] = (src[1:] != src[:-1]) | (byte[1:] != byte[:-1] + 1) | (dst[1:] != dst[:-1])
        starts = np.flatnonzero(new)
        ends = np.append(starts[1:], len(src)) - 1
        runs = np.stack([src[starts], byte[starts], byte[ends], dst[starts]], axis=1)
    else:
        runs = np.zeros((0, 4), dtype=np.int64)
    accepting = np.asarray(dfa.accepting, dtype=np.uint8).tobytes()
    return Automaton(dfa.num_states, dfa.start, accepting, runs.astype(_RUN_DTYPE).tobytes())


def stored_dfa(node: Automaton) -> ByteDFA:
    """The automaton of an :class:`~tokensieve.ir.nodes.Automaton` node as it is stored.

    Parameters
    ----------
    node
        The IR leaf.

    Returns
    -------
    ByteDFA
        Its states in their own numbering, not necessarily trimmed or minimal
        (see :func:`automaton_to_dfa` for the minimal one); the table is built
        on first use.
    """
    acc = np.frombuffer(node.accepting, dtype=np.uint8).astype(bool)
    return ByteDFA.from_edges(node.num_states, automaton_edges(node), acc, node.start)


def automaton_to_dfa(node: Automaton, limits: Limits | None = None) -> ByteDFA:
    """The minimal, trimmed byte DFA of an :class:`~tokensieve.ir.nodes.Automaton` node.

    Parameters
    ----------
    node
        The IR leaf.
    limits
        Unused except for its type; accepted for symmetry with the other functions.

    Returns
    -------
    ByteDFA

    Raises
    ------
    GrammarError
        When the automaton accepts nothing.
    ValueError
        For a malformed node (states or byte ranges out of range).
    """
    raw = stored_dfa(node)
    return _canonical(class_tables(raw), raw)


def minimal_class_dfa(
    table: np.ndarray, accepting: np.ndarray, class_of_byte: np.ndarray, start: int
) -> ByteDFA:
    """The minimal, trimmed DFA of an automaton given over byte classes, numbered canonically.

    Parameters
    ----------
    table
        ``int (S, C)`` transitions on each class of bytes (-1: none).
    accepting
        ``bool (S,)``.
    class_of_byte
        ``int (256,)``: the class of every byte; bytes of one class must lead
        every state to the same place (a finer partition than needed is fine),
        numbered in order of their smallest byte.
    start
        The start state.

    Raises
    ------
    GrammarError
        When the automaton accepts nothing.
    """
    res = finish(table, np.asarray(accepting, dtype=bool), np.asarray(class_of_byte, dtype=np.int64), start)
    if res is None:
        raise GrammarError(EMPTY_RESULT)
    return res


def _canonical(tables: tuple[np.ndarray, np.ndarray], raw: ByteDFA) -> ByteDFA:
    table, class_of_byte = tables
    return minimal_class_dfa(table, raw.accepting, class_of_byte, raw.start)


# ----------------------------------------------------------- byte classes
def class_tables(dfa: ByteDFA) -> tuple[np.ndarray, np.ndarray]:
    """``(table, class_of_byte)``: the transitions over the bytes' classes.

    Two bytes are in one class when they lead every state to the same place;
    classes are numbered in order of their smallest byte.
    """
    if dfa.has_table:
        columns = np.ascontiguousarray(dfa.transitions.T)
        keys = [columns[b].tobytes() for b in range(256)]
    else:
        src, byte, dst = dfa.edge_list()
        order = np.argsort(byte, kind="stable")  # by (byte, source)
        s_src, s_dst = src[order], dst[order]
        bounds = np.searchsorted(byte[order], np.arange(257))
        keys = [
            s_src[bounds[b] : bounds[b + 1]].tobytes() + b"|" + s_dst[bounds[b] : bounds[b + 1]].tobytes()
            for b in range(256)
        ]
    ids: dict[bytes, int] = {}
    cls = np.empty(256, dtype=np.int64)
    reps: list[int] = []
    for b, k in enumerate(keys):
        c = ids.get(k)
        if c is None:
            c = ids[k] = len(reps)
            reps.append(b)
        cls[b] = c
    if dfa.has_table:
        table = np.ascontiguousarray(dfa.transitions[:, reps])
    else:
        table = np.full((dfa.num_states, len(reps)), -1, dtype=np.int32)
        src, byte, dst = dfa.edge_list()
        rep_class = np.full(256, -1, dtype=np.int64)
        rep_class[reps] = np.arange(len(reps))
        pick = rep_class[byte] >= 0
        table[src[pick], rep_class[byte[pick]]] = dst[pick]
    return table, cls


def _restrict(
    table: np.ndarray, accepting: np.ndarray, start: int, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """The sub-automaton on the states ``keep`` (a bool mask), renumbered in order."""
    idx = np.flatnonzero(keep)
    renum = np.full(table.shape[0], -1, dtype=np.int64)
    renum[idx] = np.arange(len(idx))
    sub = table[idx]
    safe = np.maximum(sub, 0)
    sub = np.where((sub >= 0) & keep[safe], renum[safe], -1)
    return sub, accepting[idx], int(renum[start])


def _reachable(table: np.ndarray, start: int) -> np.ndarray:
    """States reachable from ``start`` (bool mask)."""
    rows = table.tolist()
    seen = [False] * len(rows)
    seen[start] = True
    todo = [start]
    for q in todo:
        for t in rows[q]:
            if t >= 0 and not seen[t]:
                seen[t] = True
                todo.append(t)
    return np.array(seen, dtype=bool)


def _coreachable(table: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """States from which an accepting state can be reached (bool mask)."""
    valid = table >= 0
    safe = np.where(valid, table, 0)
    alive = accepting.copy()
    for _ in range(_SHALLOW_ROUNDS):  # whole-table rounds: quick when acceptance is near
        new = accepting | (valid & alive[safe]).any(axis=1)
        if np.array_equal(new, alive):
            return alive
        alive = new
    src, cls = np.nonzero(valid)
    dst = table[src, cls]
    order = np.argsort(dst, kind="stable")
    preds = src[order].tolist()
    bounds = np.searchsorted(dst[order], np.arange(table.shape[0] + 1)).tolist()
    seen = alive.tolist()
    todo = [q for q, ok in enumerate(seen) if ok]
    for t in todo:
        for q in preds[bounds[t] : bounds[t + 1]]:
            if not seen[q]:
                seen[q] = True
                todo.append(q)
    return np.array(seen, dtype=bool)


def _moore(table: np.ndarray, accepting: np.ndarray) -> np.ndarray | None:
    """The coarsest congruence respecting acceptance by Moore's rounds, or ``None`` if deep.

    A round splits the states whose rows of (block, blocks of the targets)
    differ, found by hashing each row to 64 bits. The final partition is
    checked to be a congruence that respects acceptance, so a hash collision
    can only cost the fast path, never correctness; as rounds only split where
    they must, it is then the coarsest. Returns each state's block, or
    ``None`` when more than ``_SHALLOW_ROUNDS`` rounds would be needed.
    """
    valid = table >= 0
    safe = np.where(valid, table, 0)
    rng = default_rng(0x5EED)
    mult = rng.integers(1, 1 << 62, size=table.shape[1] + 1, dtype=np.int64).astype(np.uint64) * 2 + 1
    block = accepting.astype(np.int64)
    count = len(sorted_unique(block))
    for _ in range(_SHALLOW_ROUNDS):
        tgt = np.where(valid, block[safe], -1)
        with np.errstate(over="ignore"):
            h = (block.astype(np.uint64) + np.uint64(1)) * mult[0]
            h += ((tgt + 1).astype(np.uint64) * mult[1:]).sum(axis=1, dtype=np.uint64)
        _, inverse = np.unique(h, return_inverse=True)
        block = inverse.reshape(-1).astype(np.int64)
        new_count = int(block.max()) + 1
        if new_count == count:
            break
        count = new_count
    else:
        return None
    first = np.full(count, len(block), dtype=np.int64)
    np.minimum.at(first, block, np.arange(len(block)))
    tgt = np.where(valid, block[safe], -1)
    if not (np.array_equal(tgt, tgt[first][block]) and np.array_equal(accepting, accepting[first][block])):
        return None
    return block


def finish(
    table: np.ndarray,
    accepting: np.ndarray,
    class_of_byte: np.ndarray,
    start: int,
    reachable: bool = False,
) -> ByteDFA | None:
    """Trim and minimise a DFA over classes given as a table; ``None`` for an empty language.

    ``reachable``: every state is known to be reachable from ``start``. The
    result is numbered breadth-first from its start state 0, successors by
    increasing class (classes are numbered by their smallest byte), as
    :func:`~tokensieve.automata.minimize.minimize` numbers its output, so
    equal languages give identical tables.
    """
    if not accepting.any():
        return None
    valid = table >= 0
    if np.count_nonzero(valid) > SMALL_EDGES:
        src, cls = np.nonzero(valid)
        edges = trim_edges(
            EdgeDFA(table.shape[0], src, cls, table[src, cls].astype(np.int64), accepting, start), reachable
        )
        if edges is None:
            return None
        m = minimize_edges(edges)
        q = np.full((m.num_states, table.shape[1]), -1, dtype=np.int32)
        q[m.src, m.cls] = m.dst
        return ByteDFA(_handed_over(q[:, class_of_byte]), m.accepting, 0)
    if not reachable:
        keep = _reachable(table, start)
        if not keep.all():
            table, accepting, start = _restrict(table, accepting, start, keep)
    alive = _coreachable(table, accepting)
    if not alive[start]:
        return None
    if not alive.all():
        table, accepting, start = _restrict(table, accepting, start, alive)
    block = _moore(table, accepting)
    if block is not None:
        count = int(block.max()) + 1
        first = np.full(count, len(block), dtype=np.int64)
        np.minimum.at(first, block, np.arange(len(block)))
        q_table = np.where(table[first] >= 0, block[np.maximum(table[first], 0)], -1)
        q_acc = accepting[first]
        q_start = int(block[start])
    else:  # deep automata: Hopcroft's algorithm on lists
        src, cls = np.nonzero(table >= 0)
        dst = table[src, cls]
        bounds = np.searchsorted(src, np.arange(table.shape[0] + 1)).tolist()
        cls_l, dst_l = cls.tolist(), dst.tolist()
        rows: list[Row] = [
            list(zip(cls_l[bounds[q] : bounds[q + 1]], dst_l[bounds[q] : bounds[q + 1]], strict=True))
            for q in range(table.shape[0])
        ]
        rows2, acc2 = minimize(rows, accepting.tolist(), start)
        q_table = np.full((len(rows2), table.shape[1]), -1, dtype=np.int64)
        m_src = [q for q, row in enumerate(rows2) for _ in row]
        q_table[m_src, [c for row in rows2 for c, _ in row]] = [t for row in rows2 for _, t in row]
        q_acc = np.array(acc2, dtype=bool)
        q_start = 0
    # breadth-first numbering from the start, successors by increasing class
    q_rows = q_table.tolist()
    order = [q_start]
    number = {q_start: 0}
    for q_id in order:
        for t in q_rows[q_id]:
            if t >= 0 and t not in number:
                number[t] = len(order)
                order.append(t)
    perm = np.array(order, dtype=np.int64)
    new_id = np.full(q_table.shape[0], -1, dtype=np.int64)
    new_id[perm] = np.arange(len(perm))
    out = q_table[perm]
    out = np.where(out >= 0, new_id[np.maximum(out, 0)], -1).astype(np.int32)
    return ByteDFA(_handed_over(out[:, class_of_byte]), q_acc[perm], 0)


# rounds of whole-table numpy steps tried before falling back to per-state work
_SHALLOW_ROUNDS = 24


def _handed_over(table: np.ndarray) -> np.ndarray:
    """A freshly built table, contiguous and read-only, so that :class:`ByteDFA` keeps it without a copy."""
    out = np.ascontiguousarray(table)
    out.setflags(write=False)
    return out
