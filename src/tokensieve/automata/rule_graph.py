"""The reference graph of a grammar's rules, and the rewrites that analysis allows.

Rules that derive no finite string are dropped (:func:`drop_unproductive`),
left recursion over top-level alternatives is rewritten into repetition
(:func:`rewrite_left_recursion`, Paull's algorithm), and the recursive rules
(those on a cycle of references, :func:`recursive_rules`) are found with
Tarjan's algorithm. :func:`rewrite` replaces subtrees of the IR, sharing what
it does not change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from ..errors import GrammarError, LimitExceeded
from ..ir.grammar import Grammar, referenced_rules
from ..ir.nodes import (
    EMPTY,
    NOTHING,
    Alt,
    Automaton,
    Concat,
    Empty,
    Literal,
    Node,
    Repeat,
    RuleRef,
    alt,
    concat,
    is_nothing,
    repeat,
)
from ..limits import Limits

__all__ = [
    "check_left_recursion",
    "drop_unproductive",
    "left_cycle",
    "recursive_rules",
    "rewrite",
    "rewrite_left_recursion",
    "rule_references",
    "substitute",
    "without_empty",
]


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


def drop_unproductive(rules: dict[str, Node], root: str) -> dict[str, Node]:
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
    return {n: substitute(b, lambda r: r if r.name in ok else NOTHING) for n, b in rules.items() if n in ok}


def substitute(node: Node, fn: Callable[[RuleRef], Node]) -> Node:
    """``node`` with every rule reference ``r`` replaced by ``fn(r)`` (see :func:`rewrite`)."""
    return rewrite(node, lambda n: fn(n) if isinstance(n, RuleRef) else None)


def rewrite(
    node: Node, replace: Callable[[Node], Node | None], done: dict[int, Node] | None = None
) -> Node:
    """``node`` with every subtree ``n`` for which ``replace(n)`` is a node replaced by it.

    A subtree where nothing is replaced is returned as it is, and a subtree
    shared by several parents is rebuilt once (the IR is a DAG), so the cost is
    the number of distinct nodes. Rewrites of several nodes with the same
    ``replace`` can share their work through one ``done`` dict (kept alive with
    the nodes: it is keyed by identity).
    """
    if done is None:
        done = {}

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


def left_cycle(rules: dict[str, Node]) -> list[str] | None:
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


def _branches(node: Node, most: int = 1 << 62) -> list[Node]:
    """The top-level alternatives of ``node``, a leading choice distributed over the rest;
    ``LimitExceeded`` (``max_grammar_rules``) past ``most`` of them."""
    if isinstance(node, Alt):
        out = [b for item in node.items for b in _branches(item, most)]
    elif isinstance(node, Repeat) and node.min == 0 and node.max == 1:
        out = [*_branches(node.item, most), EMPTY]
    elif isinstance(node, Concat) and isinstance(node.items[0], (Alt, Repeat)):
        first = _branches(node.items[0], most)
        if len(first) == 1:
            return [node]
        # a leading choice: one branch per alternative, so that leading rules show
        out = []
        for f in first:
            out.extend(_branches(concat(f, *node.items[1:]), most))
            if len(out) > most:
                break
    else:
        return [node]
    if len(out) > most:
        raise LimitExceeded("max_grammar_rules", most, "rewriting left recursion makes too many alternatives")
    return out


def _split_first(branch: Node) -> tuple[Node, Node]:
    if isinstance(branch, Concat):
        return branch.items[0], concat(*branch.items[1:])
    return branch, EMPTY


def rewrite_left_recursion(rules: dict[str, Node], limits: Limits) -> dict[str, Node]:
    """``rules`` with left recursion over top-level alternatives rewritten into repetition
    (Paull's algorithm); ``rules`` itself, not a copy, when there is no left recursion."""
    if left_cycle(rules) is None:
        return rules
    order = list(rules)
    out = dict(rules)
    most = limits.max_grammar_rules
    built = 0  # alternatives built over the whole rewrite: at most ten times the rule bound
    for i, a in enumerate(order):
        earlier = set(order[:i])
        branches = _branches(out[a], most)
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
                    new.extend(concat(x, rest) for x in _branches(out[first.name], most))
                    changed = True
                else:
                    new.append(b)
            branches = new
            built += len(branches)
            if len(branches) > most or built > 10 * most:
                raise LimitExceeded(
                    "max_grammar_rules",
                    most,
                    f"rewriting left recursion makes rule {a!r} {len(branches)} alternatives "
                    f"({built} built in all)",
                )
        direct: list[Node] = []
        other: list[Node] = []
        unit = False
        for b in branches:
            first, rest = _split_first(b)
            if first != RuleRef(a):
                other.append(b)
            elif rest != EMPTY:
                direct.append(rest)
            else:  # ``a ::= a`` adds no string: left out
                unit = True
        if direct:
            if not other:
                raise GrammarError(f"rule {a!r} is left-recursive in every alternative and derives no string")
            out[a] = concat(alt(*other), repeat(alt(*direct), 0, None))
        elif unit or len(branches) != len(_branches(out[a], most)):
            if not other:
                raise GrammarError(f"rule {a!r} is left-recursive in every alternative and derives no string")
            out[a] = alt(*other)
    return out


def without_empty(rules: dict[str, Node], root: str) -> dict[str, Node]:
    """``rules`` rewritten so that no rule's leading position can derive the empty string.

    Each nullable rule ``n`` gets a rule ``n+`` of its non-empty strings and becomes
    ``n+ | ""``; each body is replaced by its non-empty part (:func:`_non_empty`),
    whose leading references are to the ``+`` rules. The languages are the same,
    and left recursion through a nullable prefix (``a ::= b a "x"`` with a
    nullable ``b``, or ``a ::= a a | "x" | ""``) becomes plain left recursion
    that :func:`rewrite_left_recursion` removes.
    """
    null = _nullable_rules(rules)
    out: dict[str, Node] = {}
    for name, body in rules.items():
        part = _non_empty(body, null)
        if name in null:
            out[name + "+"] = part
            out[name] = alt(RuleRef(name + "+"), EMPTY)
        else:
            out[name] = part
    return out


def _non_empty(node: Node, null: set[str]) -> Node:
    """A node for the non-empty strings of ``node``, its nullable leading rules ``n`` as ``n+``."""
    if isinstance(node, RuleRef):
        return RuleRef(node.name + "+") if node.name in null else node
    if isinstance(node, Empty):
        return NOTHING
    if isinstance(node, Literal):
        return node if node.value else NOTHING
    if isinstance(node, Automaton):
        return _without_start_accepting(node) if node.nullable else node
    if isinstance(node, Alt):
        return alt(*(_non_empty(i, null) for i in node.items))
    if isinstance(node, Concat):
        # a non-empty string has a first non-empty item, after items that gave the empty string
        parts: list[Node] = []
        for i, item in enumerate(node.items):
            parts.append(concat(_non_empty(item, null), *node.items[i + 1 :]))
            if not _nullable(item, null):
                break
        return alt(*parts)
    if isinstance(node, Repeat):
        if node.max == 0:
            return NOTHING
        rest_max = None if node.max is None else node.max - 1
        # iterations before the first non-empty one gave the empty string; when the item can,
        # so can the ones after, which meet any lower bound
        rest_min = 0 if _nullable(node.item, null) else max(node.min - 1, 0)
        return concat(_non_empty(node.item, null), repeat(node.item, rest_min, rest_max))
    return node  # classes never match the empty string


def _without_start_accepting(node: Automaton) -> Automaton:
    """``node`` less the empty string: a new, non-accepting start state with the old start's moves."""
    runs = np.frombuffer(node.runs, dtype="<i4").reshape(-1, 4)
    moves = runs[runs[:, 0] == node.start].copy()
    moves[:, 0] = node.num_states
    both = np.concatenate([runs, moves]).astype("<i4")
    return Automaton(node.num_states + 1, node.num_states, node.accepting + b"\x00", both.tobytes())


def check_left_recursion(bodies: dict[str, Node]) -> None:
    cycle = left_cycle(bodies)
    if cycle is not None:
        raise GrammarError(
            "left recursion that cannot be rewritten (through a nullable prefix or a repetition): "
            + " -> ".join(cycle)
        )


def rule_references(grammar: Grammar, rules: dict[str, Node]) -> dict[str, tuple[str, ...]]:
    """The rules each of ``rules`` references: ``grammar``'s where the body is still its own."""
    known = grammar.rules
    return {
        n: grammar.references(n) if known.get(n) is b else tuple(referenced_rules(b)) for n, b in rules.items()
    }


def recursive_rules(rules: dict[str, Node], references: dict[str, tuple[str, ...]]) -> set[str]:
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
