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
built; the result is then trimmed and minimised (:mod:`.class_tables`, which
also holds the embedding of DFAs in the IR; its functions are re-exported
here), so it obeys the :class:`ByteDFA` contract and equal languages give
identical tables.
"""

from __future__ import annotations

import numpy as np

from .._arrays import sorted_unique
from .._memo import BoundedMemo, memoized
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
from .class_tables import (
    EMPTY_RESULT,
    automaton_to_dfa,
    class_tables,
    dfa_to_ir,
    finish,
    minimal_class_dfa,
    stored_dfa,
)
from .dfa import ByteDFA
from .nfa import automaton_runs
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

# pair tables up to this many entries are dense arrays; larger ones use a dict
_DENSE_PAIRS = 1 << 22
# frontiers of at most this many (pair, class) cells are stepped in plain Python
_SMALL_STEP = 256
# a difference with a subtrahend of at most this many transitions (and a minuend of at most
# this many states) walks only the pairs where the subtrahend is alive (see _subtract_small)
_SMALL_SUBTRAHEND = 4096
_SMALL_MINUEND = 4096


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
    class_table, class_of_byte = class_tables(ByteDFA(table, accepting, n_a))
    return finish(class_table, accepting, class_of_byte, n_a)


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
    ta, cla = class_tables(a)
    tb, clb = class_tables(b)
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
    return finish(table, accepting, class_of_byte, 0, reachable=True)


_ALL_BYTES: ByteDFA | None = None


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
        raise GrammarError(EMPTY_RESULT)
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
        raise GrammarError(EMPTY_RESULT)
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


@memoized(max_entries=64)
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
