"""Rule references in the IR: finding them and substituting them read a shared subtree once."""

from __future__ import annotations

import random
from collections.abc import Iterator

from tokensieve.automata.rule_graph import substitute as _substitute
from tokensieve.grammar import ir
from tokensieve.grammar.cfg import Grammar, referenced_rules
from tokensieve.grammar.ir import Alt, Concat, Node, Repeat, RuleRef


def rule_refs(node: Node) -> Iterator[str]:
    """The oracle: the names of the rules ``node`` references, in order, with repeats, by a
    plain walk over every path (a shared subtree is read once per parent)."""
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, RuleRef):
            yield n.name
        elif isinstance(n, (Concat, Alt)):
            stack.extend(reversed(n.items))
        elif isinstance(n, Repeat):
            stack.append(n.item)


def _random_tree(rng: random.Random, depth: int, pool: list[Node]) -> Node:
    """A random IR node built as front ends build them; earlier nodes from ``pool`` are
    reused, so the result is a DAG."""
    if pool and rng.random() < 0.25:
        return rng.choice(pool)
    node: Node
    if depth == 0 or rng.random() < 0.2:
        leaf = rng.choice(
            [RuleRef(rng.choice("abcde")), ir.literal(rng.choice(["x", "yz", ""])), ir.byte_class([(48, 57)])]
        )
        pool.append(leaf)
        return leaf
    kind = rng.randrange(3)
    if kind == 2:
        node = ir.repeat(_random_tree(rng, depth - 1, pool), 0, rng.choice([1, 3, None]))
    else:
        items = [_random_tree(rng, depth - 1, pool) for _ in range(rng.randint(1, 4))]
        node = ir.concat(*items) if kind == 0 else ir.alt(*items)
    pool.append(node)
    return node


def test_referenced_rules_are_the_distinct_references_in_order() -> None:
    rng = random.Random(7)
    for _ in range(300):
        node = _random_tree(rng, 6, [])
        expected = list(dict.fromkeys(rule_refs(node)))  # the plain walk over every path, deduplicated
        assert referenced_rules(node) == expected


def _shared_chain(bottom: Node, depth: int) -> Node:
    """``depth`` levels, each referring twice to the level below: 2**depth paths."""
    node = bottom
    for _ in range(depth):
        node = ir.concat(ir.optional(node), ir.repeat(node, 0, 2))
    return node


def test_substitution_rebuilds_a_shared_subtree_once() -> None:
    ref = RuleRef("leaf")
    dag = _shared_chain(Concat((ir.literal("a"), ref)), 12)
    calls = []

    def replace(r: RuleRef) -> Node:
        calls.append(r.name)
        return ir.literal("b")

    out = _substitute(dag, replace)
    assert calls == ["leaf"]  # one reference object under 4,096 paths
    assert "leaf" not in referenced_rules(out)


def _plain_substitute(node: Node, fn) -> Node:  # type: ignore[no-untyped-def]
    """Every path rebuilt on its own: the oracle."""
    if isinstance(node, RuleRef):
        return fn(node)
    if isinstance(node, Concat):
        return ir.concat(*(_plain_substitute(i, fn) for i in node.items))
    if isinstance(node, Alt):
        return ir.alt(*(_plain_substitute(i, fn) for i in node.items))
    if isinstance(node, Repeat):
        return ir.repeat(_plain_substitute(node.item, fn), node.min, node.max)
    return node


def _doubled(r: RuleRef) -> Node:
    return ir.literal(r.name.upper() * 2)


def test_substitution_gives_what_rebuilding_every_path_gives() -> None:
    rng = random.Random(11)
    for _ in range(200):
        node = _random_tree(rng, 5, [])
        assert _substitute(node, _doubled) == _plain_substitute(node, _doubled)
    dag = _shared_chain(ir.concat(ir.literal("a"), RuleRef("leaf")), 6)
    assert _substitute(dag, lambda r: ir.literal("b")) == _plain_substitute(dag, lambda r: ir.literal("b"))


def test_substitution_keeps_subtrees_without_references() -> None:
    plain = ir.concat(ir.literal("k"), ir.star(ir.byte_class([(97, 122)])))
    node = ir.alt(plain, ir.concat(plain, RuleRef("r")))
    out = _substitute(node, lambda r: ir.literal("!"))
    assert isinstance(out, Alt)
    assert any(item is plain for item in out.items)
    assert referenced_rules(out) == []


def test_a_grammar_with_shared_bodies_validates_and_trims() -> None:
    dag = _shared_chain(ir.concat(ir.literal("a"), RuleRef("used")), 40)  # 2**40 paths
    g = Grammar({"root": dag, "used": ir.literal("u"), "unused": ir.literal("n")})
    assert set(g.reachable().rules) == {"root", "used"}
    assert referenced_rules(dag) == ["used"]


def test_reachable_rules_are_those_of_a_fresh_grammar() -> None:
    """The trimmed grammar reuses the references found when the whole one was checked: it must
    equal (and hash as) the grammar built from its rules, whose references are found anew."""
    rng = random.Random(7)
    for trial in range(40):
        names = [f"r{i}" for i in range(8)]
        rules: dict[str, Node] = {}
        for name in names:
            refs = [RuleRef(rng.choice(names)) for _ in range(rng.randrange(3))]
            rules[name] = ir.concat(ir.literal(name), *refs) if refs else ir.literal(name)
        whole = Grammar(rules, "r0")
        trimmed = whole.reachable()
        fresh = Grammar(dict(trimmed.rules), "r0")
        assert trimmed == fresh and hash(trimmed) == hash(fresh)
        # the oracle: rules met by a search over the plain walk of each body
        seen, todo = {"r0"}, ["r0"]
        while todo:
            for ref in rule_refs(rules[todo.pop()]):
                if ref not in seen:
                    seen.add(ref)
                    todo.append(ref)
        assert set(trimmed.rules) == seen, trial
        for name in trimmed.rules:
            assert (
                trimmed.references(name)
                == fresh.references(name)
                == tuple(dict.fromkeys(rule_refs(rules[name])))
            )
        if seen == set(names):
            assert trimmed is whole
