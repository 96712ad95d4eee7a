"""Grammars to automata: one byte DFA per recursive rule, joined by call edges.

The steps, in order:

1. keep the rules the root reaches, and drop references to rules that derive no
   finite string (they would leave dead ends);
2. rewrite left recursion (Paull's algorithm over top-level alternatives:
   ``expr ::= expr "+" term | term`` becomes ``expr ::= term ("+" term)*``);
3. find the recursive rules (those on a cycle of the reference graph); when no
   rule is recursive and the inlined grammar is light enough (see
   :mod:`.outline`), it is regular and compiles to one :class:`ByteDFA` exactly
   as a regex does;
4. otherwise (or when that DFA exceeds the size limits) build a rule network:
   the recursive rules, the heaviest other rules and the heavy parts of rule
   bodies are called, everything else is inlined; each called rule gets a
   minimal DFA with each reference compiled as a two-byte marker that UTF-8
   text never contains (lead byte ``0xF8``–``0xFF``), and the marker
   transitions are split out as call edges ``(state, rule, return state)``.

The result is a recursive transition network: a stack of ``(rule, state)``
frames runs it; ``compile/`` turns it into token masks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._memo import BoundedMemo
from ..errors import GrammarError, LimitExceeded
from ..ir.grammar import Grammar
from ..ir.nodes import (
    Alt,
    Automaton,
    ByteClass,
    Concat,
    Literal,
    Node,
    Repeat,
    RuleRef,
    literal,
)
from ..limits import RECURSIVE_RULES_CAP, Limits
from .blank_runs import BLANK
from .build import ir_to_dfa
from .counted import blank_run
from .dfa import ByteDFA
from .gc_pause import gc_paused
from .nfa import automaton_runs
from .outline import INLINE_BUDGET, SPLIT_BUDGET, outlined_rules, split_heavy
from .rule_graph import (
    check_left_recursion,
    drop_unproductive,
    left_cycle,
    recursive_rules,
    rewrite,
    rewrite_left_recursion,
    rule_references,
    substitute,
    without_empty,
)

__all__ = ["RuleNetwork", "UnorderedRule", "compile_grammar_automaton"]

_MARKER_LEAD = 0xF8
# a marker is a lead byte 0xF8-0xFF and a second byte below 0xF8 (never a lead byte itself, so a
# marker's middle state is never taken for a caller): the rules two marker bytes can number
assert (0x100 - _MARKER_LEAD) * _MARKER_LEAD == RECURSIVE_RULES_CAP

_RuleAutomaton = tuple[np.ndarray, np.ndarray, int, tuple[tuple[tuple[int, int], ...], ...]]


@dataclass(frozen=True)
class UnorderedRule:
    """A rule of a :class:`RuleNetwork` that stands for members in any order (see
    :class:`~tokensieve.ir.grammar.Unordered`), with the rules it names as rule indices."""

    rule: int
    members: tuple[int, ...]
    required: tuple[bool, ...]
    extra: int  # -1: none
    separator: int
    close: int


@dataclass(frozen=True, eq=False)
class RuleNetwork:
    """Per-rule byte DFAs joined by call edges (a recursive transition network).

    Attributes
    ----------
    names : tuple of str
        Rule names; index ``r`` is rule ``r``.
    transitions : tuple of numpy.ndarray
        ``int32 (S_r, 256)`` text transitions of each rule (-1: none).
    accepting : tuple of numpy.ndarray
        ``bool (S_r,)``: where each rule may end.
    starts : tuple of int
        Start state of each rule.
    calls : tuple of tuple of tuple of (int, int)
        ``calls[r][q]``: the ``(callee rule, return state)`` edges of state ``q``.
    root : int
        The start rule.
    unordered : tuple of UnorderedRule
        The rules that stand for members in any order: each has one dead
        state here, and ``compile/`` runs it from its :class:`UnorderedRule`.
    """

    names: tuple[str, ...]
    transitions: tuple[np.ndarray, ...]
    accepting: tuple[np.ndarray, ...]
    starts: tuple[int, ...]
    calls: tuple[tuple[tuple[tuple[int, int], ...], ...], ...]
    root: int
    unordered: tuple[UnorderedRule, ...] = ()

    @property
    def num_states(self) -> int:
        """Total DFA states over all rules."""
        return sum(t.shape[0] for t in self.transitions)


@gc_paused()
def compile_grammar_automaton(
    grammar: Grammar, limits: Limits | None = None, *, blank_runs: int | None = None
) -> ByteDFA | RuleNetwork:
    """Compile a grammar to a byte DFA (when it is regular) or a rule network.

    Parameters
    ----------
    grammar
        The grammar IR.
    limits
        ``max_grammar_rules`` and the automaton limits apply.
    blank_runs
        When set, every state that loops on the four JSON blanks is a layout
        place whose runs are limited to this many blanks (see
        :func:`~tokensieve.automata.blank_runs.bound_blank_runs`).

    Returns
    -------
    ByteDFA or RuleNetwork

    Raises
    ------
    GrammarError
        When the grammar derives no string, or has left recursion that cannot
        be rewritten (for instance through a nullable prefix).
    LimitExceeded
        When a limit is exceeded.
    RunsNotCountable
        With ``blank_runs``, when a run of blanks could start before a place.
    """
    limits = limits or Limits()
    grammar = grammar.reachable()
    if len(grammar.rules) > limits.max_grammar_rules:
        raise LimitExceeded(
            "max_grammar_rules", limits.max_grammar_rules, f"the grammar has {len(grammar.rules)} rules"
        )
    productive = drop_unproductive(dict(grammar.rules), grammar.root)
    rules = rewrite_left_recursion(productive, limits)
    # the rewrite returns its argument when it found no left recursion: nothing to check again
    if rules is not productive and left_cycle(rules) is not None:
        # left recursion through a nullable prefix or a repetition: rules without the empty
        # string in leading positions first, then the rewrite again
        rules = drop_unproductive(without_empty(rules, grammar.root), grammar.root)
        rules = rewrite_left_recursion(rules, limits)
    references = rule_references(grammar, rules)
    recursive = recursive_rules(rules, references)
    # the rules of members in any order, and those they name, are always called (see _network)
    unordered = {n: spec for n, spec in grammar.unordered.items() if n in rules}
    for n, spec in unordered.items():
        if any(r not in rules for r in spec.rules()):
            raise GrammarError(f"a member of the unordered rule {n!r} matches no string")
    forced = set(unordered).union(*(spec.rules() for spec in unordered.values()))
    recursive |= forced
    called, heavy = outlined_rules(rules, references, recursive, grammar.root, INLINE_BUDGET)
    light = not called and not heavy
    # bodies whose automaton was over a size limit: a network that would build one again fails
    # at once (a grammar of one large terminal was determinised to the limit twice)
    failed: dict[Node, LimitExceeded] = {}
    if light and not recursive:
        whole = _Inliner(rules, set(), references).expand(grammar.root)
        try:
            return ir_to_dfa(whole, limits, blank_runs=blank_runs)
        except LimitExceeded as exc:
            if exc.limit not in _SIZE_LIMITS:
                raise
            failed[whole] = exc
            # one automaton is too large: a rule network of the same language follows
    unbounded, unbounded_refs = rules, references  # a split network's rules are weighed on these
    if blank_runs is not None:
        # unrolling each rule's automaton made the compile-time walks of the pushdown slower (on
        # the JSON benchmark's recursive schemas, up to 1.4 times the compile time): rule
        # networks bound the runs in the IR, as the grammar would write them
        bound = _bounded_blank_loops(blank_runs, limits)
        rules = {n: bound(b) for n, b in rules.items()}
        references = rule_references(grammar, rules)
    if light and recursive:
        # the recursive rules alone are called: the fewest calls, the fastest masks
        try:
            return _network(grammar, rules, references, recursive, limits, failed, split=False)
        except LimitExceeded as exc:
            if exc.limit not in _SIZE_LIMITS:
                raise
    # the rules and subexpressions that weigh most are called too, not inlined (weighed with the
    # runs of blanks still unbounded)
    called = recursive | outlined_rules(unbounded, unbounded_refs, recursive, grammar.root, SPLIT_BUDGET)[0]
    return _network(grammar, rules, references, called, limits, failed, split=True)


def _network(
    grammar: Grammar,
    rules: dict[str, Node],
    references: dict[str, tuple[str, ...]],
    called: set[str],
    limits: Limits,
    failed: dict[Node, LimitExceeded],
    *,
    split: bool,
) -> RuleNetwork:
    """The rule network of the ``called`` rules and the root, the other rules inlined (and, with
    ``split``, the heavy parts of their bodies called as rules of their own).

    A body in ``failed`` raises its error again rather than being built; a body whose automaton
    is over a size limit is added to it."""
    inlined = _Inliner(rules, called, references)
    # in a fixed order: the rules split out of shared subtrees are named after the first body met
    bodies = {n: inlined.expand(n) for n in sorted(called | {grammar.root}, key=lambda n: (n != grammar.root, n))}
    unordered = {n: spec for n, spec in grammar.unordered.items() if n in bodies}
    for n in unordered:  # run by compile/ from the rules they name, not by an automaton of their own
        del bodies[n]
    if split:
        bodies = split_heavy(bodies, SPLIT_BUDGET, SPLIT_BUDGET)
    names = sorted([*bodies, *unordered], key=lambda n: (n != grammar.root, n))
    if len(names) > limits.max_recursive_rules:
        raise LimitExceeded("max_recursive_rules", limits.max_recursive_rules, f"{len(names)} called rules")
    index = {n: i for i, n in enumerate(names)}
    looked_at: set[int] = set()  # the bodies share the subtrees of the rules they inline
    for n, body in bodies.items():
        if _uses_marker_bytes(body, looked_at):
            raise GrammarError(
                f"rule {n!r} matches raw bytes 0xF8-0xFF, which recursive grammars reserve; "
                "use character classes (UTF-8 text never contains those bytes)"
            )
    check_left_recursion(bodies)
    transitions: list[np.ndarray] = []
    accepting: list[np.ndarray] = []
    starts: list[int] = []
    calls: list[tuple[tuple[tuple[int, int], ...], ...]] = []
    marked = _markers(index)
    for n in names:
        if n in unordered:
            dead = np.full((1, 256), -1, dtype=np.int32)
            dead.setflags(write=False)
            transitions.append(dead)
            accepting.append(np.zeros(1, dtype=bool))
            starts.append(0)
            calls.append(((),))
            continue
        known = failed.get(bodies[n]) if failed else None
        if known is not None:
            raise known
        try:
            trans, acc, start, edges = _rule_automaton(marked(bodies[n]), limits)
        except LimitExceeded as exc:
            if exc.limit in _SIZE_LIMITS:
                failed[bodies[n]] = exc
            raise
        transitions.append(trans)
        accepting.append(acc)
        starts.append(start)
        calls.append(edges)
    specs = tuple(
        UnorderedRule(
            index[n],
            tuple(index[m] for m in spec.members),
            spec.required,
            -1 if spec.extra is None else index[spec.extra],
            index[spec.separator],
            index[spec.close],
        )
        for n, spec in sorted(unordered.items())
    )
    return RuleNetwork(tuple(names), tuple(transitions), tuple(accepting), tuple(starts), tuple(calls), 0, specs)


#: the limits whose hit in building one automaton is retried as a rule network
_SIZE_LIMITS = frozenset({"max_nfa_states", "max_dfa_states", "max_compile_work"})


#: rule automata by body (markers in place) and limits: rules that many grammars share, such as
#: the JSON value that an object's other properties take, are built once
_RULE_AUTOMATA: BoundedMemo[_RuleAutomaton] = BoundedMemo(max_size=64 << 20)


def _rule_automaton(body: Node, limits: Limits) -> _RuleAutomaton:
    """The text transitions, acceptance, start and call edges of one rule (see :class:`RuleNetwork`).

    Memoised: the arrays are read-only and the tuples immutable, so networks share them.
    """
    key = (body, limits)
    hit = _RULE_AUTOMATA.get(key)
    if hit is not None:
        return hit
    dfa = ir_to_dfa(body, limits)
    trans = np.array(dfa.transitions, dtype=np.int32)
    # the call edges of the (few) states that call, in order of state, callee lead byte, second byte
    found: dict[int, list[tuple[int, int]]] = {}
    for lead in range(_MARKER_LEAD, 0x100):
        for q in np.flatnonzero(trans[:, lead] >= 0).tolist():
            mid = int(trans[q, lead])
            for second in np.flatnonzero(trans[mid, :_MARKER_LEAD] >= 0).tolist():
                callee = (lead - _MARKER_LEAD) * _MARKER_LEAD + second
                found.setdefault(q, []).append((callee, int(trans[mid, second])))
    edges: list[tuple[tuple[int, int], ...]] = [()] * trans.shape[0]
    for q, out in found.items():
        edges[q] = tuple(out)
    trans[:, _MARKER_LEAD:] = -1
    trans.setflags(write=False)
    acc = np.array(dfa.accepting, dtype=bool)
    acc.setflags(write=False)
    made = (trans, acc, int(dfa.start), tuple(edges))
    _RULE_AUTOMATA.put(key, made, int(trans.nbytes) + 64 * sum(len(e) for e in found.values()))
    return made


def _bounded_blank_loops(most: int, limits: Limits) -> Callable[[Node], Node]:
    """A rewrite of rule bodies that limits every unbounded run of the four JSON blanks to ``most``
    blanks (subtrees that rules share are rewritten once)."""
    run = blank_run(most, limits)
    done: dict[int, Node] = {}

    def replace(n: Node) -> Node | None:
        if isinstance(n, Repeat) and n.min == 0 and n.max is None and n.item == BLANK:
            return run
        return None

    return lambda body: rewrite(body, replace, done)


class _Inliner:
    """Replaces references to non-recursive rules by their (inlined) bodies."""

    def __init__(self, rules: dict[str, Node], recursive: set[str], references: dict[str, tuple[str, ...]]) -> None:
        self.rules = rules
        self.recursive = recursive
        self.references = references
        self.memo: dict[str, Node] = {}

    def expand(self, name: str) -> Node:
        # rules are expanded callees first (the non-recursive part is a DAG)
        order: list[str] = []
        seen: set[str] = set()
        stack: list[tuple[str, bool]] = [(name, False)]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
                continue
            if n in seen or n in self.memo:
                continue
            seen.add(n)
            stack.append((n, True))
            for ref in self.references[n]:
                if ref not in self.recursive and ref not in seen:
                    stack.append((ref, False))
        for n in order:
            if n not in self.memo:
                self.memo[n] = substitute(
                    self.rules[n], lambda r: r if r.name in self.recursive else self.memo[r.name]
                )
        return self.memo[name]


def _markers(index: dict[str, int]) -> Callable[[Node], Node]:
    """A rewrite of rule bodies that replaces each rule reference by its two-byte marker (subtrees
    that bodies share are rewritten once)."""
    done: dict[int, Node] = {}

    def marker(n: Node) -> Node | None:
        if not isinstance(n, RuleRef):
            return None
        lead, second = divmod(index[n.name], _MARKER_LEAD)
        return literal(bytes([_MARKER_LEAD + lead, second]))

    return lambda body: rewrite(body, marker, done)


def _uses_marker_bytes(node: Node, seen: set[int]) -> bool:
    """Whether ``node`` matches a byte 0xF8-0xFF outside the subtrees in ``seen`` (by identity),
    which it adds to."""
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, ByteClass):
            if any(hi >= _MARKER_LEAD for _, hi in n.ranges):
                return True
        elif isinstance(n, Literal):
            if any(b >= _MARKER_LEAD for b in n.value):
                return True
        elif isinstance(n, Automaton):
            if automaton_runs(n)[2].max(initial=-1) >= _MARKER_LEAD:
                return True
        elif isinstance(n, (Concat, Alt)):
            stack.extend(n.items)
        elif isinstance(n, Repeat):
            stack.append(n.item)
    return False
