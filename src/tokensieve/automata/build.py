"""Regex IR to minimal byte DFAs."""

from __future__ import annotations

import numpy as np

from ..errors import GrammarError
from ..ir.nodes import Automaton, Node, is_nothing
from ..limits import Limits
from .blank_runs import RunsNotCountable, bound_blank_runs
from .determinize import ClassDFA, Row, determinize
from .dfa import ByteDFA
from .gc_pause import gc_paused
from .kernels import minimize_kernel
from .minimize import minimize, trim
from .minimize_arrays import SMALL_EDGES, EdgeDFA, minimize_edges, trim_edges
from .nfa import build_nfa
from .splice import plan_splice, splice

__all__ = ["EMPTY_LANGUAGE", "ir_to_dfa"]

#: the message of the GrammarError for a language without strings
EMPTY_LANGUAGE = "pattern matches no string"


@gc_paused()
def ir_to_dfa(node: Node, limits: Limits | None = None, *, blank_runs: int | None = None) -> ByteDFA:
    """Compile a regex IR node to a minimal, trimmed byte DFA.

    Parameters
    ----------
    node
        The IR (rule references must already be resolved).
    limits
        ``max_nfa_states``, ``max_dfa_states`` and ``max_compile_work`` apply.
    blank_runs
        When set, every state that loops on the four JSON blanks is a layout
        place whose runs are limited to this many blanks (see
        :func:`~tokensieve.automata.blank_runs.bound_blank_runs`; a spliced
        table is written with the copies' rows at once).

    Returns
    -------
    ByteDFA
        Minimal and numbered breadth-first, except when embedded automata of
        :data:`~tokensieve.automata.splice.SPLICE_MIN_STATES` states or more
        were spliced in (see :mod:`tokensieve.automata.splice`).

    Raises
    ------
    GrammarError
        When the language is empty, or for an unresolved rule reference.
    LimitExceeded
        When a limit is exceeded.
    RunsNotCountable
        With ``blank_runs``, when a run of blanks could start before a place.
    """
    limits = limits or Limits()
    if is_nothing(node):
        raise GrammarError(EMPTY_LANGUAGE)
    plan = plan_splice(node)
    excluded: frozenset[Automaton] = frozenset()
    for _ in range(_SPLICE_ATTEMPTS):
        if plan is None:
            break
        spliced = splice(_determinized(plan.node, limits), plan, limits, blank_runs=blank_runs)
        if isinstance(spliced, ByteDFA):
            return spliced
        if not spliced:
            break
        # leave the automata that cannot be spliced in the IR, and splice the others
        excluded |= frozenset(plan.automata[k] for k in spliced)
        plan = plan_splice(node, exclude=excluded)
    dfa = _determinized(node, limits)
    if blank_runs is None:
        return dfa
    bounded = bound_blank_runs(dfa, blank_runs, limits)
    if bounded is None:
        raise RunsNotCountable("a run of blanks starts before a layout place")
    return bounded


#: automata of more transitions than this are minimised by the kernel of .kernels once it is loaded (past
#: SMALL_EDGES, always: see minimize_edges)
_KERNEL_EDGES = 64
#: skeletons determinised before giving up on splicing (each attempt leaves out the automata that failed)
_SPLICE_ATTEMPTS = 3


def _determinized(node: Node, limits: Limits) -> ByteDFA:
    """The minimal, trimmed DFA of ``node`` by subset construction and minimisation."""
    nfa = build_nfa(node, limits)
    cdfa = determinize(nfa, limits)
    large = len(cdfa.targets) > SMALL_EDGES
    if large or (len(cdfa.targets) > _KERNEL_EDGES and minimize_kernel() is not None):
        n = cdfa.num_states
        edges: EdgeDFA | None = EdgeDFA(
            n,
            np.repeat(np.arange(n, dtype=np.int64), np.array(cdfa.lengths, dtype=np.int64)),
            np.array(cdfa.classes, dtype=np.int64),
            np.array(cdfa.targets, dtype=np.int64),
            np.array(cdfa.accepting, dtype=bool),
        )
        if nfa.has_dead:
            edges = trim_edges(edges)  # type: ignore[arg-type]
            if edges is None:
                raise GrammarError(EMPTY_LANGUAGE)
        return _expand_edges(minimize_edges(edges), cdfa.class_of_byte)  # type: ignore[arg-type]
    rows = cdfa.rows
    accepting = (
        cdfa.accepting if isinstance(cdfa.accepting, list) else [bool(a) for a in cdfa.accepting.tolist()]
    )
    if nfa.has_dead:
        trimmed = trim(rows, accepting)
        if trimmed is None:
            raise GrammarError(EMPTY_LANGUAGE)
        rows, accepting = trimmed
    rows, accepting = minimize(rows, accepting)
    return _expand(rows, accepting, cdfa)


def _expand(rows: list[Row], accepting: list[bool], cdfa: ClassDFA) -> ByteDFA:
    """The byte-level table of a DFA over classes."""
    num_states = len(rows)
    src: list[int] = []
    cls: list[int] = []
    dst: list[int] = []
    for s, row in enumerate(rows):
        for c, t in row:
            src.append(s)
            cls.append(c)
            dst.append(t)
    table = np.full((num_states, cdfa.num_classes), -1, dtype=np.int32)
    table[src, cls] = dst
    trans = np.ascontiguousarray(table[:, cdfa.class_of_byte])
    acc = np.array(accepting, dtype=bool)
    trans.setflags(write=False)
    acc.setflags(write=False)
    return ByteDFA(trans, acc, 0)


def _expand_edges(dfa: EdgeDFA, class_of_byte: np.ndarray) -> ByteDFA:
    """The byte-level table of a DFA over classes given as arrays."""
    num_classes = int(class_of_byte[-1]) + 1
    table = np.full((dfa.num_states, num_classes), -1, dtype=np.int32)
    table[dfa.src, dfa.cls] = dfa.dst
    trans = np.ascontiguousarray(table[:, class_of_byte])
    trans.setflags(write=False)
    acc = np.array(dfa.accepting, dtype=bool)
    acc.setflags(write=False)
    return ByteDFA(trans, acc, 0)
