"""Boolean operations on byte DFAs, and their embedding in the regex IR.

:func:`intersect`, :func:`difference` and :func:`complement` combine
:class:`ByteDFA` values by the product construction; the ``ir_*`` functions do
the same for regex IR nodes and return an :class:`~tokensieve.ir.nodes.Automaton`
node (or :data:`~tokensieve.ir.nodes.NOTHING` for an empty result) that can be
used anywhere in a regex or grammar.

The product is built breadth-first, one whole frontier of state pairs at a
time, over the byte classes that neither operand tells apart (a regex DFA
usually has a handful), so a step is a few numpy operations on a
``(frontier, classes)`` block. Only pairs reachable from the start pair are
built; the result is then trimmed and minimised, so it obeys the
:class:`ByteDFA` contract and equal languages give identical tables. Both steps
first try a few whole-table numpy rounds (co-reachability as a fixed point,
Moore's partition refinement), which settle quickly when every state is a few
bytes from telling itself apart; deep automata (long counters such as
``[a-z]{0,999}``) fall back to a per-state search and Hopcroft's algorithm
(:mod:`.minimize`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .._arrays import sorted_unique
from .._memo import BoundedMemo
from ..errors import GrammarError, LimitExceeded
from ..ir.grammar import referenced_rules
from ..ir.nodes import (
    NOTHING,
    Alt,
    Automaton,
    ByteClass,
    CharClass,
    Concat,
    Empty,
    Literal,
    Node,
    Repeat,
)
from ..limits import Limits
from .build import ir_to_dfa
from .determinize import Row
from .dfa import ByteDFA
from .minimize import SMALL_EDGES, EdgeDFA, minimize, minimize_edges, trim_edges
from .nfa import automaton_edges, automaton_runs
from .utf8 import class_sequences

__all__ = [
    "dfa_to_ir",
    "automaton_to_dfa",
    "stored_dfa",
    "minimal_class_dfa",
    "intersect",
    "difference",
    "complement",
    "ir_intersect",
    "ir_difference",
    "ir_complement",
    "is_empty_ir",
    "is_empty",
]

_EMPTY_RESULT = "the operation leaves no string: the result matches nothing"
_RUN_DTYPE = np.dtype("<i4")
# pair tables up to this many entries are dense arrays; larger ones use a dict
_DENSE_PAIRS = 1 << 22
# frontiers of at most this many (pair, class) cells are stepped in plain Python
_SMALL_STEP = 256
# a difference with a subtrahend of at most this many transitions (and a minuend of at most
# this many states) walks only the pairs where the subtrahend is alive (see _subtract_small)
_SMALL_SUBTRAHEND = 4096
_SMALL_MINUEND = 4096


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
    return _canonical(_class_tables(raw), raw)


def minimal_class_dfa(table: np.ndarray, accepting: np.ndarray, class_of_byte: np.ndarray, start: int) -> ByteDFA:
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
    res = _finish(table, np.asarray(accepting, dtype=bool), np.asarray(class_of_byte, dtype=np.int64), start)
    if res is None:
        raise GrammarError(_EMPTY_RESULT)
    return res


def _canonical(tables: tuple[np.ndarray, np.ndarray], raw: ByteDFA) -> ByteDFA:
    table, class_of_byte = tables
    return minimal_class_dfa(table, raw.accepting, class_of_byte, raw.start)


# ----------------------------------------------------------- byte classes
def _class_tables(dfa: ByteDFA) -> tuple[np.ndarray, np.ndarray]:
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


def _joint_classes(ca: np.ndarray, cb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Classes refining both partitions: ``(class_of_byte, class in a, class in b)`` per joint class."""
    pair = ca * 256 + cb
    ids: dict[int, int] = {}
    cls = np.empty(256, dtype=np.int64)
    for b, p in enumerate(pair.tolist()):
        c = ids.get(p)
        if c is None:
            c = ids[p] = len(ids)
        cls[b] = c
    keys = np.array(list(ids), dtype=np.int64)
    return cls, keys // 256, keys % 256


# ---------------------------------------------------------------- product
def _subtract_small(a: ByteDFA, b: ByteDFA, limits: Limits) -> ByteDFA | None:
    """``a \\ b`` when ``b`` has few transitions (the keys an object names, left out of its other keys).

    A pair of states whose ``b`` half has died behaves as the ``a`` state
    alone, so the product is ``a``'s own table plus the pairs where ``b`` is
    still alive, found in plain Python over ``b``'s few transitions; each pair
    takes its ``a`` state's row and overrides the bytes ``b`` reads. Trimmed
    and minimised as :func:`_product`'s result, so the result is the same.
    """
    ta = np.asarray(a.transitions, dtype=np.int32)
    n_a = ta.shape[0]
    acc_a = np.asarray(a.accepting, dtype=bool)
    acc_b = np.asarray(b.accepting, dtype=bool)
    src, byte, dst = b.edge_list()
    bounds = np.searchsorted(src, np.arange(b.num_states + 1)).tolist()
    b_bytes, b_dst = byte.tolist(), dst.tolist()
    step = ta.item
    pairs = [(a.start, b.start)]
    ids = {pairs[0]: n_a}
    rows: list[int] = []
    cols: list[int] = []
    targets: list[int] = []
    for k, (qa, qb) in enumerate(pairs):  # grows while it is read
        for e in range(bounds[qb], bounds[qb + 1]):
            x = b_bytes[e]
            ya = step(qa, x)
            if ya >= 0:
                key = (ya, b_dst[e])
                j = ids.get(key)
                if j is None:
                    j = ids[key] = n_a + len(pairs)
                    if j >= limits.max_dfa_states:
                        raise _limit(limits, j + 1)
                    if j * 256 > limits.max_compile_work:
                        raise _too_costly(limits, "the difference")
                    pairs.append(key)
                ya = j
            rows.append(n_a + k)
            cols.append(x)
            targets.append(ya)
    firsts = np.array([qa for qa, _ in pairs], dtype=np.int64)
    table = np.concatenate([ta, ta.take(firsts, axis=0)])
    table[rows, cols] = targets
    accepting = np.concatenate(
        [acc_a, acc_a.take(firsts) & ~acc_b.take(np.array([qb for _, qb in pairs], dtype=np.int64))]
    )
    class_table, class_of_byte = _class_tables(ByteDFA(table, accepting, n_a))
    return _finish(class_table, accepting, class_of_byte, n_a)


def _too_costly(limits: Limits, what: str) -> LimitExceeded:
    return LimitExceeded("max_compile_work", limits.max_compile_work, f"{what} is too costly to build")


def _limit(limits: Limits, states: int) -> LimitExceeded:
    return LimitExceeded(
        "max_dfa_states",
        limits.max_dfa_states,
        f"the product automaton would have more than {limits.max_dfa_states} states (at least {states})",
    )


def _product(a: ByteDFA, b: ByteDFA, subtract: bool, limits: Limits) -> ByteDFA | None:
    """Reachable product of ``a`` and ``b``: ``a ∩ b``, or ``a \\ b`` when ``subtract``."""
    ta, cla = _class_tables(a)
    tb, clb = _class_tables(b)
    class_of_byte, ka, kb = _joint_classes(cla, clb)
    ta = ta[:, ka].astype(np.int64)
    tb = tb[:, kb].astype(np.int64)
    acc_a = np.asarray(a.accepting, dtype=bool)
    acc_b = np.asarray(b.accepting, dtype=bool)
    if subtract:  # complete b with a rejecting sink so that a's strings outside b survive
        sink = tb.shape[0]
        tb = np.vstack([np.where(tb < 0, sink, tb), np.full((1, tb.shape[1]), sink, dtype=np.int64)])
        acc_b = np.append(acc_b, False)
    nb = tb.shape[0]
    num_classes = ta.shape[1]
    max_states = limits.max_dfa_states
    max_work = limits.max_compile_work
    total_pairs = ta.shape[0] * nb
    dense = np.full(total_pairs, -1, dtype=np.int32) if total_pairs <= _DENSE_PAIRS else None
    ids: dict[int, int] = {}
    start = a.start * nb + b.start
    if dense is not None:
        dense[start] = 0
    else:
        ids[start] = 0
    frontier = np.array([start], dtype=np.int64)
    blocks: list[np.ndarray] = []
    keys_all: list[np.ndarray] = [frontier]
    count = 1
    ta_l: list[list[int]] | None = None
    tb_l: list[list[int]] | None = None
    while len(frontier):
        if len(frontier) * num_classes <= _SMALL_STEP:
            # a narrow frontier (long chains of states): plain Python beats numpy's call overhead
            if ta_l is None or tb_l is None:
                ta_l, tb_l = ta.tolist(), tb.tolist()
            fresh_l: list[int] = []
            rows_l: list[list[int]] = []
            for key in frontier.tolist():
                ra, rb = ta_l[key // nb], tb_l[key % nb]
                row = [-1] * num_classes
                for c in range(num_classes):
                    x, y = ra[c], rb[c]
                    if x < 0 or y < 0:
                        continue
                    k = x * nb + y
                    j = int(dense[k]) if dense is not None else ids.get(k, -1)
                    if j < 0:
                        j = count + len(fresh_l)
                        if j >= max_states:
                            raise _limit(limits, j + 1)
                        if dense is not None:
                            dense[k] = j
                        else:
                            ids[k] = j
                        fresh_l.append(k)
                    row[c] = j
                rows_l.append(row)
            out = np.array(rows_l, dtype=np.int64).reshape(-1, num_classes)
            fresh = np.array(fresh_l, dtype=np.int64)
        else:
            p, q = frontier // nb, frontier % nb
            ra, rb = ta[p], tb[q]
            valid = (ra >= 0) & (rb >= 0)
            k = (ra * nb + rb)[valid]
            out = np.full(ra.shape, -1, dtype=np.int64)
            if dense is not None:
                found = dense[k]
                fresh = sorted_unique(k[found < 0])
                if count + len(fresh) > max_states:
                    raise _limit(limits, count + len(fresh))
                dense[fresh] = np.arange(count, count + len(fresh))
                out[valid] = dense[k]
            else:
                fresh_list: list[int] = []
                uniq, inverse = np.unique(k, return_inverse=True)
                targets = np.empty(len(uniq), dtype=np.int64)
                for i, key in enumerate(uniq.tolist()):
                    got = ids.get(key)
                    if got is None:
                        got = ids[key] = count + len(fresh_list)
                        fresh_list.append(key)
                    targets[i] = got
                if count + len(fresh_list) > max_states:
                    raise _limit(limits, count + len(fresh_list))
                fresh = np.array(fresh_list, dtype=np.int64)
                out[valid] = targets[inverse.reshape(-1)]
        count += len(fresh)
        if count * num_classes > max_work:
            raise _too_costly(limits, "the product automaton")
        blocks.append(out)
        if len(fresh):
            keys_all.append(fresh)
        frontier = fresh
    table = np.concatenate(blocks)
    states = np.concatenate(keys_all)
    sa, sb = states // nb, states % nb
    accepting = acc_a[sa] & (~acc_b[sb] if subtract else acc_b[sb])
    return _finish(table, accepting, class_of_byte, 0, reachable=True)


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
    rng = np.random.default_rng(0x5EED)
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


def _finish(
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


_ALL_BYTES: ByteDFA | None = None


def _handed_over(table: np.ndarray) -> np.ndarray:
    """A freshly built table, contiguous and read-only, so that :class:`ByteDFA` keeps it without a copy."""
    out = np.ascontiguousarray(table)
    out.setflags(write=False)
    return out


def _all_bytes() -> ByteDFA:
    global _ALL_BYTES
    if _ALL_BYTES is None:
        _ALL_BYTES = ByteDFA(np.zeros((1, 256), dtype=np.int32), np.ones(1, dtype=bool), 0)
    return _ALL_BYTES


# ------------------------------------------------------------- DFA level
def intersect(a: ByteDFA, b: ByteDFA, limits: Limits | None = None) -> ByteDFA:
    """The strings in both ``a`` and ``b``.

    Parameters
    ----------
    a, b
        The operands.
    limits
        ``max_dfa_states`` bounds the reachable product states and
        ``max_compile_work`` the product's states times byte classes.

    Returns
    -------
    ByteDFA
        Minimal and trimmed.

    Raises
    ------
    GrammarError
        When no string is in both.
    LimitExceeded
        When a limit is exceeded.
    """
    res = _product(a, b, False, limits or Limits())
    if res is None:
        raise GrammarError(_EMPTY_RESULT)
    return res


def difference(a: ByteDFA, b: ByteDFA, limits: Limits | None = None) -> ByteDFA:
    """The strings in ``a`` that are not in ``b``.

    Parameters
    ----------
    a, b
        The operands.
    limits
        As for :func:`intersect`.

    Returns
    -------
    ByteDFA
        Minimal and trimmed.

    Raises
    ------
    GrammarError
        When every string of ``a`` is in ``b``.
    LimitExceeded
        When a limit is exceeded.
    """
    res = _product(a, b, True, limits or Limits())
    if res is None:
        raise GrammarError(_EMPTY_RESULT)
    return res


def complement(a: ByteDFA, alphabet: ByteDFA | None = None, limits: Limits | None = None) -> ByteDFA:
    """The strings of ``alphabet``'s language that are not in ``a``.

    Parameters
    ----------
    a
        The automaton to complement.
    alphabet
        The universe; ``None`` means every byte string, including invalid
        UTF-8 and the bytes 0xF8-0xFF that recursive grammars reserve, so for
        text pass the automaton of ``[\\s\\S]*`` (any UTF-8 text) instead.
    limits
        As for :func:`intersect`.

    Returns
    -------
    ByteDFA
        ``difference(alphabet, a)``.

    Raises
    ------
    GrammarError
        When the result is empty.
    LimitExceeded
        When a limit is exceeded.
    """
    return difference(_all_bytes() if alphabet is None else alphabet, a, limits)


# -------------------------------------------------------------- IR level
def _require_regular(node: Node, what: str) -> None:
    for name in referenced_rules(node):
        raise GrammarError(
            f"{what} needs regular operands, but an operand references the rule {name!r} "
            "(inline it or express the constraint without it)"
        )


def is_empty_ir(node: Node, limits: Limits | None = None) -> bool:
    """Whether a regex IR node matches no string at all.

    Exact and cheap: it reads the structure and builds no automaton.

    Parameters
    ----------
    node
        A regex IR node without rule references.
    limits
        Unused; accepted for symmetry with the other functions.

    Returns
    -------
    bool

    Raises
    ------
    GrammarError
        For a node that references a rule.
    """
    _require_regular(node, "an emptiness test")
    # post-order evaluation without recursion
    memo: dict[int, bool] = {}
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        if id(n) in memo:
            continue
        if isinstance(n, (Concat, Alt, Repeat)):
            children = (n.item,) if isinstance(n, Repeat) else n.items
            if not done:
                stack.append((n, True))
                stack.extend((c, False) for c in children if id(c) not in memo)
                continue
            if isinstance(n, Concat):
                memo[id(n)] = any(memo[id(c)] for c in children)
            elif isinstance(n, Alt):
                memo[id(n)] = all(memo[id(c)] for c in children)
            else:
                memo[id(n)] = n.min > 0 and memo[id(n.item)]
        elif isinstance(n, CharClass):
            memo[id(n)] = not class_sequences(n.ranges)
        elif isinstance(n, ByteClass):
            memo[id(n)] = not n.ranges
        elif isinstance(n, Automaton):
            memo[id(n)] = _automaton_is_empty(n)
        elif isinstance(n, (Empty, Literal)):
            memo[id(n)] = False
        else:
            raise TypeError(f"not a regex IR node: {n!r}")
    return memo[id(node)]


@lru_cache(maxsize=64)
def _automaton_is_empty(node: Automaton) -> bool:
    """Whether no accepting state is reachable (nodes built by hand need not be trimmed)."""
    accepting = np.frombuffer(node.accepting, dtype=np.uint8).astype(bool)
    if not accepting.any():
        return True
    src, _, _, dst = automaton_runs(node)
    order = np.argsort(src, kind="stable")
    s_src, s_dst = src[order], dst[order]
    bounds = np.searchsorted(s_src, np.arange(node.num_states + 1))
    seen = np.zeros(node.num_states, dtype=bool)
    seen[node.start] = True
    frontier = np.array([node.start], dtype=np.int64)
    while len(frontier):
        if accepting[frontier].any():
            return False
        lo, hi = bounds[frontier], bounds[frontier + 1]
        lengths = hi - lo
        idx = np.repeat(lo - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        nxt = sorted_unique(s_dst[idx])
        nxt = nxt[~seen[nxt]]
        seen[nxt] = True
        frontier = nxt
    return True


#: Alias of :func:`is_empty_ir`.
is_empty = is_empty_ir


def _to_dfa(node: Node, limits: Limits) -> ByteDFA:
    """The operand's automaton; small ones are remembered per process, as one side of an
    operation often recurs (any JSON string, less the keys each object names)."""
    if isinstance(node, Automaton):
        return stored_dfa(node)  # the product trims and minimises anyway
    key = (node, limits)
    hit = _operands.get(key)
    if hit is not None:
        return hit
    dfa = ir_to_dfa(node, limits)
    if dfa.num_states <= _OPERAND_STATES:
        _operands.put(key, dfa)
    return dfa


#: operand automata of at most this many states (a table of 1 MB) are remembered, 32 of them
_OPERAND_STATES = 1024
_operands: BoundedMemo[ByteDFA] = BoundedMemo(max_entries=32)


def _ir_op(x: Node, y: Node, subtract: bool, limits: Limits | None, what: str) -> Node:
    limits = limits or Limits()
    _require_regular(x, what)
    _require_regular(y, what)
    if is_empty_ir(x):
        return NOTHING
    if is_empty_ir(y):
        return x if subtract else NOTHING
    a, b = _to_dfa(x, limits), _to_dfa(y, limits)
    if subtract and a.num_states <= _SMALL_MINUEND and len(b.edge_list()[0]) <= _SMALL_SUBTRAHEND:
        res = _subtract_small(a, b, limits)
    else:
        res = _product(a, b, subtract, limits)
    return NOTHING if res is None else dfa_to_ir(res)


def ir_intersect(x: Node, y: Node, limits: Limits | None = None) -> Node:
    """An IR node matching the strings that both ``x`` and ``y`` match.

    Parameters
    ----------
    x, y
        Regex IR nodes without rule references (they may be or contain
        :class:`~tokensieve.ir.nodes.Automaton` nodes).
    limits
        The automaton limits apply to building each operand and the product.

    Returns
    -------
    Node
        An :class:`~tokensieve.ir.nodes.Automaton`, or
        :data:`~tokensieve.ir.nodes.NOTHING` when no string matches both
        (test with :func:`~tokensieve.ir.nodes.is_nothing`).

    Raises
    ------
    GrammarError
        When an operand references a rule.
    LimitExceeded
        When a limit is exceeded.
    """
    return _ir_op(x, y, False, limits, "intersection")


def ir_difference(x: Node, y: Node, limits: Limits | None = None) -> Node:
    """An IR node matching the strings that ``x`` matches and ``y`` does not.

    Parameters
    ----------
    x, y
        Regex IR nodes without rule references.
    limits
        As for :func:`ir_intersect`.

    Returns
    -------
    Node
        An :class:`~tokensieve.ir.nodes.Automaton`, ``x`` itself when ``y``
        matches nothing, or :data:`~tokensieve.ir.nodes.NOTHING` when
        every string of ``x`` matches ``y``.

    Raises
    ------
    GrammarError
        When an operand references a rule.
    LimitExceeded
        When a limit is exceeded.
    """
    return _ir_op(x, y, True, limits, "difference")


def ir_complement(x: Node, alphabet: Node | None = None, limits: Limits | None = None) -> Node:
    """An IR node matching the strings of ``alphabet`` that ``x`` does not match.

    Parameters
    ----------
    x
        A regex IR node without rule references.
    alphabet
        The universe; ``None`` means every byte string (see :func:`complement`;
        for text pass ``ir.star(ir.char_class([(0, ir.MAX_CODE_POINT)]))``).
    limits
        As for :func:`ir_intersect`.

    Returns
    -------
    Node
        As for :func:`ir_difference`.
    """
    if alphabet is None:
        alphabet = dfa_to_ir(_all_bytes())
    return _ir_op(alphabet, x, True, limits, "complement")
