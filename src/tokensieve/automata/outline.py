"""Which rules of a grammar to call rather than inline, and the splitting of heavy rules.

One DFA is the fastest automaton to mask, but inlining every rule multiplies
the copies of shared definitions, and past some tens of thousands of NFA
positions the subset construction takes seconds or exceeds the limits. A
rule's *weight* (:func:`weigh`) estimates its NFA positions once the rules it
references are inlined; :func:`outlined_rules` picks the references to call so
that no rule weighs over a budget, and :func:`split_heavy` cuts what is still
heavy (one rule's own body: an object of many properties, a long sequence of
alternatives) into rules of its own. Both keep the language: a rule network
of the result matches exactly what the inlined grammar did.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.nodes import Alt, Automaton, Concat, Empty, Literal, Node, Repeat, RuleRef, alt, concat, repeat

__all__ = ["INLINE_BUDGET", "SPLIT_BUDGET", "outlined_rules", "split_heavy", "weigh"]


#: the weight (see :func:`weigh`) past which a rule's inlined body is split: its heaviest
#: references become calls of a rule network. One DFA is the fastest to mask, but past a few
#: tens of thousands of NFA positions its construction takes seconds or exceeds the limits
INLINE_BUDGET = 120_000
#: the weight past which a rule network's rule is split: its heaviest references become calls,
#: and its subexpressions over this weight become rules of their own (see :func:`split_heavy`)
SPLIT_BUDGET = 1500
#: in a rule that is split, embedded automata of this weight or more are called, not copied (and so
#: are the items of bounded repetitions, which lighter items are not worth a call)
_CALLED_AUTOMATON_STATES = 16

def outlined_rules(
    rules: dict[str, Node],
    references: dict[str, tuple[str, ...]],
    recursive: set[str],
    root: str,
    budget: int,
) -> tuple[set[str], bool]:
    """Rules to call rather than inline, so that no rule's inlined body weighs over ``budget``.

    Rules are weighed callees first (see :func:`weigh`); a rule over the budget
    has its heaviest inlined references (copies times weight) made calls until
    it is under, or none is left. Recursive rules are calls already.

    Returns the rules to call, and whether a rule still weighs over the budget
    (its own body: see :func:`split_heavy`).
    """
    weight: dict[str, int] = {}
    out: set[str] = set()
    heavy = False
    weighed: dict[int, tuple[int, dict[str, int]]] = {}  # subtrees that rules share are weighed once
    for name in _callees_first(root, references, recursive):
        own, copies = weigh(rules[name], weighed)
        total = own
        inlined: list[tuple[int, str]] = []
        for ref, n in copies.items():
            if ref in recursive or ref in out:
                total += n
            else:
                total += n * weight[ref]
                inlined.append((n * weight[ref], ref))
        if total > budget:
            for most, ref in sorted(inlined, reverse=True):
                if total <= budget:
                    break
                out.add(ref)
                total -= most - copies[ref]
        weight[name] = total
    for name in out | recursive | {root}:
        heavy = heavy or weight[name] > budget
    return out, heavy


def _callees_first(root: str, references: dict[str, tuple[str, ...]], recursive: set[str]) -> list[str]:
    """The rules reachable from ``root`` and from every recursive rule, each after the
    non-recursive rules it references (they form a DAG)."""
    order: list[str] = []
    seen: set[str] = set()
    for top in [root, *sorted(recursive)]:
        stack: list[tuple[str, bool]] = [(top, False)]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            stack.extend((ref, False) for ref in references[n] if ref not in seen and ref not in recursive)
    return order


def weigh(node: Node, memo: dict[int, tuple[int, dict[str, int]]]) -> tuple[int, dict[str, int]]:
    """An estimate of the NFA positions of ``node``: its own, and the copies of each rule it references.

    Literals count their bytes, classes two, embedded automata their states;
    a bounded repetition counts its item as many times as its bound (the NFA
    unrolls it). ``memo`` holds the weights of shared subtrees by identity.
    """
    hit = memo.get(id(node))
    if hit is not None:
        return hit
    own = 0
    copies: dict[str, int] = {}
    if isinstance(node, RuleRef):
        copies[node.name] = 1
    elif isinstance(node, Literal):
        own = len(node.value)
    elif isinstance(node, Automaton):
        own = node.num_states
    elif isinstance(node, (Concat, Alt)):
        for item in node.items:
            w, c = weigh(item, memo)
            own += w
            for ref, n in c.items():
                copies[ref] = copies.get(ref, 0) + n
    elif isinstance(node, Repeat):
        w, c = weigh(node.item, memo)
        times = node.max if node.max is not None else max(node.min, 1)
        own = w * times
        copies = {ref: n * times for ref, n in c.items()}
    elif not isinstance(node, Empty):
        own = 2
    memo[id(node)] = (own, copies)
    return own, copies


def split_heavy(bodies: dict[str, Node], budget: int, part: int) -> dict[str, Node]:
    """``bodies`` where each body weighing over ``budget`` calls its heavy parts as rules.

    Bottom up, every sequence, alternation or repetition that weighs over
    ``part`` once its own heavy parts are calls becomes a rule of its own (named
    ``<rule>~<k>``; equal parts share one), and so does the item of a bounded
    repetition whose copies together weigh over ``part``. The language is the
    same; each rule's automaton stays small.
    """
    out = dict(bodies)
    made: dict[Node, RuleRef] = {}
    # the inlined bodies share the subtrees of the rules they inline: each is weighed once
    weighed: dict[int, tuple[int, dict[str, int]]] = {}
    for name, body in bodies.items():
        own, copies = weigh(body, weighed)
        if own + sum(copies.values()) <= budget:
            continue
        memo: dict[int, tuple[Node, int]] = {}

        def hoist(node: Node, name: str = name) -> RuleRef:
            ref = made.get(node)
            if ref is None:
                ref = made[node] = RuleRef(f"{name}~{len(made)}")
                out[ref.name] = node
            return ref

        def visit(node: Node, hoist: Callable[[Node], RuleRef] = hoist, memo: dict[int, tuple[Node, int]] = memo) -> tuple[Node, int]:
            hit = memo.get(id(node))
            if hit is not None:
                return hit
            new: Node
            if isinstance(node, (Concat, Alt)):
                done = [visit(i) for i in node.items]
                weight = sum(w for _, w in done)
                join = concat if isinstance(node, Concat) else alt
                if weight > part:
                    # consecutive items in groups of at most ``part``, each group a rule
                    groups: list[list[tuple[Node, int]]] = [[]]
                    held = 0
                    for item, w in done:
                        if held + w > part and groups[-1]:
                            groups.append([])
                            held = 0
                        groups[-1].append((item, w))
                        held += w
                    done = [_group(g, join, hoist) for g in groups]
                    weight = sum(w for _, w in done)
                if all(new is old for (new, _), old in zip(done, node.items, strict=True)):
                    new = node
                else:
                    new = join(*(n for n, _ in done))
            elif isinstance(node, Repeat):
                item, w = visit(node.item)
                times = node.max if node.max is not None else max(node.min, 1)
                if times > 1 and w * times > part and w >= _CALLED_AUTOMATON_STATES and not isinstance(item, RuleRef):
                    item, w = hoist(item), 1
                new = node if item is node.item else repeat(item, node.min, node.max)
                weight = w * times
            elif isinstance(node, Automaton) and node.num_states >= _CALLED_AUTOMATON_STATES:
                new, weight = hoist(node), 1
            else:
                own, copies = weigh(node, weighed)
                new, weight = node, own + sum(copies.values())
            if weight > part and isinstance(new, (Concat, Alt, Repeat)):
                new, weight = hoist(new), 1
            memo[id(node)] = (new, weight)
            return new, weight

        top = body
        if isinstance(body, (Concat, Alt)):
            done = [visit(i) for i in body.items]
            items = [n for n, _ in done]
            top = concat(*items) if isinstance(body, Concat) else alt(*items)
        elif isinstance(body, Repeat):
            item, _ = visit(body.item)
            top = repeat(item, body.min, body.max)
        out[name] = top
    return out


def _group(
    group: list[tuple[Node, int]], join: Callable[..., Node], hoist: Callable[[Node], RuleRef]
) -> tuple[Node, int]:
    """One group of :func:`split_heavy`: called as a rule, unless it is one leaf or call."""
    if len(group) == 1 and not isinstance(group[0][0], (Concat, Alt, Repeat)):
        return group[0]
    return hoist(join(*(n for n, _ in group))), 1
