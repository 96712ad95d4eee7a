"""Random regex trees over a three-letter alphabet, their IR and their languages by brute force.

A tree is made of tuples: ``("chr", c)``, ``("cls", chars)``, ``("cat", x, y)``,
``("alt", x, y)``, ``("rep", x, m, n)`` and ``("emb", x)`` (``x`` embedded as an
:class:`~tokensieve.grammar.ir.Automaton` leaf). :func:`brute` computes the
strings up to :data:`MAX_LEN` characters a tree denotes from its structure
alone, without any automaton.
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from tokensieve.automata import ByteDFA, ir_to_dfa
from tokensieve.automata.ops import dfa_to_ir
from tokensieve.grammar import ir

ALPHABET = "abc"
STRINGS = [
    "".join(p) for n in range(7) for p in itertools.product(ALPHABET, repeat=n)
]  # 1093 strings up to length 6
OUTSIDE = ["d", "ad", "\xff", "é", "a\n"]  # strings with characters outside the alphabet


# A pattern is a tree of tuples: ("chr", c), ("cls", chars), ("cat", x, y),
# ("alt", x, y), ("rep", x, m, n) and ("emb", x): x embedded as an Automaton leaf.
def pattern_trees() -> st.SearchStrategy:
    leaf = st.one_of(
        st.sampled_from(ALPHABET).map(lambda c: ("chr", c)),
        st.sampled_from(["ab", "bc", "ac"]).map(lambda cs: ("cls", cs)),
    )

    def extend(inner: st.SearchStrategy) -> st.SearchStrategy:
        return st.one_of(
            st.tuples(st.just("cat"), inner, inner),
            st.tuples(st.just("alt"), inner, inner),
            st.tuples(st.just("rep"), inner, st.integers(0, 2), st.sampled_from([None, 0, 1, 2])).map(
                lambda t: ("rep", t[1], t[2], None if t[3] is None else t[2] + t[3])
            ),
            st.tuples(st.just("emb"), inner),
        )

    return st.recursive(leaf, extend, max_leaves=6)


def render(tree: tuple) -> str:
    kind = tree[0]
    if kind == "chr":
        return tree[1]
    if kind == "cls":
        return f"[{tree[1]}]"
    if kind == "cat":
        return f"(?:{render(tree[1])})(?:{render(tree[2])})"
    if kind == "alt":
        return f"(?:{render(tree[1])}|{render(tree[2])})"
    if kind == "rep":
        m, n = tree[2], tree[3]
        return f"(?:{render(tree[1])}){{{m},{'' if n is None else n}}}"
    return render(tree[1])  # emb


def to_ir(tree: tuple) -> ir.Node:
    kind = tree[0]
    if kind == "chr":
        return ir.literal(tree[1])
    if kind == "cls":
        return ir.char_class([(ord(c), ord(c)) for c in tree[1]])
    if kind == "cat":
        return ir.concat(to_ir(tree[1]), to_ir(tree[2]))
    if kind == "alt":
        return ir.alt(to_ir(tree[1]), to_ir(tree[2]))
    if kind == "rep":
        return ir.repeat(to_ir(tree[1]), tree[2], tree[3])
    return dfa_to_ir(ir_to_dfa(to_ir(tree[1])))


MAX_LEN = 6


def _cat(xs: frozenset[str], ys: frozenset[str]) -> frozenset[str]:
    by_len: dict[int, list[str]] = {}
    for y in ys:
        by_len.setdefault(len(y), []).append(y)
    return frozenset(x + y for x in xs for n, group in by_len.items() if len(x) + n <= MAX_LEN for y in group)


def brute(tree: tuple) -> frozenset[str]:
    """The strings up to ``MAX_LEN`` characters that ``tree`` denotes."""
    kind = tree[0]
    if kind == "chr":
        return frozenset(tree[1])
    if kind == "cls":
        return frozenset(tree[1])
    if kind == "cat":
        return _cat(brute(tree[1]), brute(tree[2]))
    if kind == "alt":
        return brute(tree[1]) | brute(tree[2])
    if kind == "rep":
        item, m, n = brute(tree[1]), tree[2], tree[3]
        # more than m + MAX_LEN copies add nothing short: all but MAX_LEN copies are empty
        top = m + MAX_LEN + 1 if n is None else n
        power, out = frozenset([""]), frozenset()
        for k in range(top + 1):
            if k >= m:
                out |= power
            power = _cat(power, item)
        return out
    return brute(tree[1])  # emb


def accepted(dfa: ByteDFA, strings: list[str] = STRINGS) -> set[str]:
    return {s for s in strings if dfa.accepts(s.encode("utf-8"))}
