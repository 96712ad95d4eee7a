"""Grammars to automata: one byte DFA per recursive rule, joined by call edges.

The steps, in order:

1. keep the rules the root reaches, and drop references to rules that derive no
   finite string (they would leave dead ends);
2. rewrite left recursion (Paull's algorithm over top-level alternatives:
   ``expr ::= expr "+" term | term`` becomes ``expr ::= term ("+" term)*``);
3. find the recursive rules (those on a cycle of the reference graph) and inline
   every reference to a rule that is not recursive; when no rule is recursive,
   the whole grammar is regular and compiles to one :class:`ByteDFA`
   exactly as a regex does;
4. build a minimal DFA per recursive rule, with each reference compiled as a
   two-byte marker that UTF-8 text never contains (lead byte ``0xF8``–``0xFF``),
   then split the marker transitions out as call edges ``(state, rule, return
   state)``.

The result is a recursive transition network: a stack of ``(rule, state)``
frames runs it; ``compile/`` turns it into token masks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from .._memo import BoundedMemo
from ..errors import GrammarError, LimitExceeded
from ..ir.grammar import Grammar, referenced_rules
from ..ir.nodes import (
    EMPTY,
    NOTHING,
    Alt,
    Automaton,
    ByteClass,
    Concat,
    Empty,
    Literal,
    Node,
    Repeat,
    RuleRef,
    alt,
    concat,
    is_nothing,
    literal,
    repeat,
)
from ..limits import RECURSIVE_RULES_CAP, Limits
from .blank_runs import BLANK
from .build import ir_to_dfa
from .counted import blank_run
from .dfa import ByteDFA
from .nfa import automaton_runs

__all__ = ["RuleNetwork", "compile_grammar_automaton"]

_MARKER_LEAD = 0xF8
assert (0x100 - _MARKER_LEAD) * 256 == RECURSIVE_RULES_CAP  # the rules two marker bytes can number

_RuleAutomaton = tuple[np.ndarray, np.ndarray, int, tuple[tuple[tuple[int, int], ...], ...]]


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
    """

    names: tuple[str, ...]
    transitions: tuple[np.ndarray, ...]
    accepting: tuple[np.ndarray, ...]
    starts: tuple[int, ...]
    calls: tuple[tuple[tuple[tuple[int, int], ...], ...], ...]
    root: int

    @property
    def num_states(self) -> int:
        """Total DFA states over all rules."""
        return sum(t.shape[0] for t in self.transitions)


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
    rules = _drop_unproductive(dict(grammar.rules), grammar.root)
    rules = _rewrite_left_recursion(rules, limits)
    references = _references(grammar, rules)
    recursive = _recursive_rules(rules, references)
    if recursive and blank_runs is not None:
        # unrolling each rule's automaton made the compile-time walks of the pushdown slower (on
        # the JSON benchmark's recursive schemas, up to 1.4 times the compile time): recursive
        # grammars bound the runs in the IR, as the grammar would write them
        rules = {n: _bounded_blank_loops(b, blank_runs, limits) for n, b in rules.items()}
        references = _references(grammar, rules)
    inlined = _Inliner(rules, recursive, references)
    if not recursive:
        return ir_to_dfa(inlined.expand(grammar.root), limits, blank_runs=blank_runs)
    names = sorted(recursive | {grammar.root}, key=lambda n: (n != grammar.root, n))
    if len(names) > limits.max_recursive_rules:
        raise LimitExceeded("max_recursive_rules", limits.max_recursive_rules, f"{len(names)} recursive rules")
    index = {n: i for i, n in enumerate(names)}
    bodies = {n: inlined.expand(n) for n in names}
    for n, body in bodies.items():
        if _uses_marker_bytes(body):
            raise GrammarError(
                f"rule {n!r} matches raw bytes 0xF8-0xFF, which recursive grammars reserve; "
                "use character classes (UTF-8 text never contains those bytes)"
            )
    _check_left_recursion(bodies)
    transitions, accepting, starts, calls = [], [], [], []
    for n in names:
        trans, acc, start, edges = _rule_automaton(_markers(bodies[n], index), limits)
        transitions.append(trans)
        accepting.append(acc)
        starts.append(start)
        calls.append(edges)
    return RuleNetwork(tuple(names), tuple(transitions), tuple(accepting), tuple(starts), tuple(calls), 0)


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
    edges: list[list[tuple[int, int]]] = [[] for _ in range(trans.shape[0])]
    for lead in range(_MARKER_LEAD, 0x100):
        for q in np.flatnonzero(trans[:, lead] >= 0).tolist():
            mid = int(trans[q, lead])
            for second in np.flatnonzero(trans[mid] >= 0).tolist():
                callee = ((lead - _MARKER_LEAD) << 8) | second
                edges[q].append((callee, int(trans[mid, second])))
    trans[:, _MARKER_LEAD:] = -1
    trans.setflags(write=False)
    acc = np.array(dfa.accepting, dtype=bool)
    acc.setflags(write=False)
    made = (trans, acc, int(dfa.start), tuple(tuple(e) for e in edges))
    _RULE_AUTOMATA.put(key, made, int(trans.nbytes) + 64 * sum(len(e) for e in edges))
    return made


# ------------------------------------------------------------------ analysis
def _productive(node: Node, ok: set[str]) -> bool:
    if isinstance(node, RuleRef):
        return node.name in ok
    if isinstance(node, Concat):
        return all(_productive(i, ok) for i in node.items)
    if isinstance(node, Alt):
        return any(_productive(i, ok) for i in node.items)
    if isinstance(node, Repeat):
        return node.min == 0 or _productive(node.item, ok)
    return not is_nothing(node)


def _drop_unproductive(rules: dict[str, Node], root: str) -> dict[str, Node]:
    ok: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in ok and _productive(body, ok):
                ok.add(name)
                changed = True
    if root not in ok:
        raise GrammarError(f"the grammar derives no finite string: rule {root!r} never terminates")
    if len(ok) == len(rules):
        return rules
    return {n: _substitute(b, lambda r: r if r.name in ok else NOTHING) for n, b in rules.items() if n in ok}


def _substitute(node: Node, fn: Callable[[RuleRef], Node]) -> Node:
    """``node`` with every rule reference ``r`` replaced by ``fn(r)`` (see :func:`_rewrite`)."""
    return _rewrite(node, lambda n: fn(n) if isinstance(n, RuleRef) else None)


def _rewrite(node: Node, replace: Callable[[Node], Node | None]) -> Node:
    """``node`` with every subtree ``n`` for which ``replace(n)`` is a node replaced by it.

    A subtree where nothing is replaced is returned as it is, and a subtree
    shared by several parents is rebuilt once (the IR is a DAG), so the cost is
    the number of distinct nodes.
    """
    done: dict[int, Node] = {}

    def sub(n: Node) -> Node:
        got = replace(n)
        if got is not None:
            return got
        if not isinstance(n, (Concat, Alt, Repeat)):
            return n
        hit = done.get(id(n))
        if hit is not None:
            return hit
        if isinstance(n, Repeat):
            item = sub(n.item)
            out = n if item is n.item else repeat(item, n.min, n.max)
        else:
            items = [sub(i) for i in n.items]
            if all(new is old for new, old in zip(items, n.items, strict=True)):
                out = n
            else:
                out = concat(*items) if isinstance(n, Concat) else alt(*items)
        done[id(n)] = out
        return out

    return sub(node)


def _bounded_blank_loops(node: Node, most: int, limits: Limits) -> Node:
    """``node`` with every unbounded run of the four JSON blanks limited to ``most`` blanks."""
    run = blank_run(most, limits)

    def replace(n: Node) -> Node | None:
        if isinstance(n, Repeat) and n.min == 0 and n.max is None and n.item == BLANK:
            return run
        return None

    return _rewrite(node, replace)


def _nullable(node: Node, null: set[str]) -> bool:
    if isinstance(node, RuleRef):
        return node.name in null
    if isinstance(node, Concat):
        return all(_nullable(i, null) for i in node.items)
    if isinstance(node, Alt):
        return any(_nullable(i, null) for i in node.items)
    if isinstance(node, Repeat):
        return node.min == 0 or _nullable(node.item, null)
    if isinstance(node, Literal):
        return not node.value
    if isinstance(node, Automaton):
        return node.nullable
    return isinstance(node, Empty)


def _nullable_rules(rules: dict[str, Node]) -> set[str]:
    null: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in null and _nullable(body, null):
                null.add(name)
                changed = True
    return null


def _left_refs(node: Node, null: set[str]) -> Iterator[str]:
    """Rules that can be entered before any byte of ``node`` is read."""
    if isinstance(node, RuleRef):
        yield node.name
    elif isinstance(node, Concat):
        for item in node.items:
            yield from _left_refs(item, null)
            if not _nullable(item, null):
                break
    elif isinstance(node, Alt):
        for item in node.items:
            yield from _left_refs(item, null)
    elif isinstance(node, Repeat):
        yield from _left_refs(node.item, null)


def _left_cycle(rules: dict[str, Node]) -> list[str] | None:
    """A cycle of left-corner references, or None."""
    null = _nullable_rules(rules)
    graph = {n: sorted(set(_left_refs(b, null))) for n, b in rules.items()}
    color: dict[str, int] = {}
    for start in graph:
        if color.get(start):
            continue
        path: list[str] = []
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(graph[start]))]
        color[start] = 1
        path.append(start)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                path.pop()
                color[node] = 2
                continue
            if nxt not in graph:
                continue
            c = color.get(nxt, 0)
            if c == 1:
                return path[path.index(nxt) :] + [nxt]
            if c == 0:
                color[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(graph[nxt])))
    return None


def _branches(node: Node) -> list[Node]:
    if isinstance(node, Alt):
        return [b for item in node.items for b in _branches(item)]
    if isinstance(node, Repeat) and node.min == 0 and node.max == 1:
        return [*_branches(node.item), EMPTY]
    return [node]


def _split_first(branch: Node) -> tuple[Node, Node]:
    if isinstance(branch, Concat):
        return branch.items[0], concat(*branch.items[1:])
    return branch, EMPTY


def _rewrite_left_recursion(rules: dict[str, Node], limits: Limits) -> dict[str, Node]:
    if _left_cycle(rules) is None:
        return rules
    order = list(rules)
    out = dict(rules)
    for i, a in enumerate(order):
        earlier = set(order[:i])
        branches = _branches(out[a])
        # Each round replaces a leading reference to an earlier rule by that rule's
        # alternatives, which (already rewritten) lead with a later rule or a terminal, so
        # the leading rule's position rises every round: at most i rounds, and the number
        # of alternatives is bounded below.
        changed = True
        while changed:
            changed = False
            new: list[Node] = []
            for b in branches:
                first, rest = _split_first(b)
                if isinstance(first, RuleRef) and first.name in earlier and first.name != a:
                    new.extend(concat(x, rest) for x in _branches(out[first.name]))
                    changed = True
                else:
                    new.append(b)
            branches = new
            if len(branches) > limits.max_grammar_rules:
                raise LimitExceeded(
                    "max_grammar_rules",
                    limits.max_grammar_rules,
                    f"rewriting left recursion makes rule {a!r} {len(branches)} alternatives",
                )
        direct: list[Node] = []
        other: list[Node] = []
        for b in branches:
            first, rest = _split_first(b)
            (direct if first == RuleRef(a) else other).append(rest if first == RuleRef(a) else b)
        if direct:
            if not other:
                raise GrammarError(f"rule {a!r} is left-recursive in every alternative and derives no string")
            out[a] = concat(alt(*other), repeat(alt(*direct), 0, None))
        elif len(branches) != len(_branches(out[a])):
            out[a] = alt(*branches)
    return out


def _check_left_recursion(bodies: dict[str, Node]) -> None:
    cycle = _left_cycle(bodies)
    if cycle is not None:
        raise GrammarError(
            "left recursion that cannot be rewritten (through a nullable prefix or a repetition): "
            + " -> ".join(cycle)
        )


def _references(grammar: Grammar, rules: dict[str, Node]) -> dict[str, tuple[str, ...]]:
    """The rules each of ``rules`` references: ``grammar``'s where the body is still its own."""
    known = grammar.rules
    return {
        n: grammar.references(n) if known.get(n) is b else tuple(referenced_rules(b)) for n, b in rules.items()
    }


def _recursive_rules(rules: dict[str, Node], references: dict[str, tuple[str, ...]]) -> set[str]:
    """Rules on a cycle of the reference graph (Tarjan's SCCs, iterative)."""
    graph = {n: sorted(references[n]) for n in rules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    st: list[str] = []
    out: set[str] = set()
    counter = 0
    for v0 in graph:
        if v0 in index:
            continue
        work: list[tuple[str, int]] = [(v0, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                st.append(v)
                on.add(v)
            succ = graph[v]
            if i < len(succ):
                work.append((v, i + 1))
                w = succ[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = st.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in graph[v]:
                    out.update(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


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
                self.memo[n] = _substitute(
                    self.rules[n], lambda r: r if r.name in self.recursive else self.memo[r.name]
                )
        return self.memo[name]


def _markers(node: Node, index: dict[str, int]) -> Node:
    def marker(ref: RuleRef) -> Node:
        k = index[ref.name]
        return literal(bytes([_MARKER_LEAD + (k >> 8), k & 0xFF]))

    return _substitute(node, marker)


def _uses_marker_bytes(node: Node) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
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
