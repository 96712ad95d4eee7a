"""The trimming, minimisation (JIT kernel) and product of large automata.

The fast paths only run on large automata, so the tests lower their size
thresholds and compare against independent oracles on small random automata:
language equality by a side-by-side walk of both automata, minimality by
counting Myhill-Nerode classes with textbook table filling, the numbering by a
plain breadth-first search, and regex languages by Python's ``re`` on every
string up to a length.
"""

from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest

from tokensieve import LimitExceeded, Limits
from tokensieve.automata import (
    build,
    class_tables,
    determinize,
    minimize,
    ops,
)
from tokensieve.automata.minimize_arrays import EdgeDFA, minimize_edges, trim_edges
from tokensieve.automata.nfa import build_nfa
from tokensieve.grammar.regex import parse_regex, regex_to_dfa

# ---------------------------------------------------------------- oracles


def _table(dfa: EdgeDFA, num_classes: int) -> list[list[int]]:
    rows = [[-1] * num_classes for _ in range(dfa.num_states)]
    for s, c, t in zip(dfa.src.tolist(), dfa.cls.tolist(), dfa.dst.tolist(), strict=True):
        rows[s][c] = t
    return rows


def _useful(rows: list[list[int]], acc: list[bool], start: int) -> set[int]:
    """States reachable from ``start`` that can reach acceptance."""
    seen = {start}
    todo = [start]
    while todo:
        s = todo.pop()
        for t in rows[s]:
            if t >= 0 and t not in seen:
                seen.add(t)
                todo.append(t)
    alive = {s for s in seen if acc[s]}
    changed = True
    while changed:
        changed = False
        for s in seen - alive:
            if any(t in alive for t in rows[s] if t >= 0):
                alive.add(s)
                changed = True
    return alive


def _same_language(a: EdgeDFA, b: EdgeDFA, num_classes: int) -> bool:
    """Walk both automata side by side, with missing transitions and useless states as a dead state."""
    ra, rb = _table(a, num_classes), _table(b, num_classes)
    ua = _useful(ra, a.accepting.tolist(), a.start)
    ub = _useful(rb, b.accepting.tolist(), b.start)
    dead = -1
    sa = a.start if a.start in ua else dead
    sb = b.start if b.start in ub else dead
    seen = {(sa, sb)}
    todo = [(sa, sb)]
    while todo:
        x, y = todo.pop()
        if (x != dead and bool(a.accepting[x])) != (y != dead and bool(b.accepting[y])):
            return False
        for c in range(num_classes):
            u = ra[x][c] if x != dead else dead
            v = rb[y][c] if y != dead else dead
            u = u if u in ua else dead
            v = v if v in ub else dead
            if (u, v) not in seen:
                seen.add((u, v))
                todo.append((u, v))
    return True


def _nerode_classes(dfa: EdgeDFA, num_classes: int) -> int:
    """Number of Myhill-Nerode classes of the useful states (table filling)."""
    rows = _table(dfa, num_classes)
    acc = dfa.accepting.tolist()
    useful = sorted(_useful(rows, acc, dfa.start))
    states = useful + [-1]  # -1: the dead state

    def step(s: int, c: int) -> int:
        t = rows[s][c] if s >= 0 else -1
        return t if t in useful else -1

    def accepts(s: int) -> bool:
        return s >= 0 and acc[s]

    dist = {(p, q) for p in states for q in states if accepts(p) != accepts(q)}
    changed = True
    while changed:
        changed = False
        for p, q in itertools.combinations(states, 2):
            if (p, q) in dist:
                continue
            if any((step(p, c), step(q, c)) in dist for c in range(num_classes)):
                dist.add((p, q))
                dist.add((q, p))
                changed = True
    # classes among the useful states: count representatives
    reps: list[int] = []
    for s in useful:
        if all((s, r) in dist for r in reps):
            reps.append(s)
    return len(reps)


def _breadth_first(dfa: EdgeDFA, num_classes: int) -> bool:
    rows = _table(dfa, num_classes)
    order = [dfa.start]
    seen = {dfa.start}
    for s in order:
        for t in rows[s]:
            if t >= 0 and t not in seen:
                seen.add(t)
                order.append(t)
    return order == list(range(dfa.num_states))


# ------------------------------------------------------------- generators


def _edges(rows: list[list[int]], acc: list[bool], start: int = 0) -> EdgeDFA:
    src, cls, dst = [], [], []
    for s, row in enumerate(rows):
        for c, t in enumerate(row):
            if t >= 0:
                src.append(s)
                cls.append(c)
                dst.append(t)
    return EdgeDFA(
        len(rows),
        np.array(src, dtype=np.int64),
        np.array(cls, dtype=np.int64),
        np.array(dst, dtype=np.int64),
        np.array(acc, dtype=bool),
        start,
    )


def _random_dfa(rng: random.Random) -> tuple[list[list[int]], list[bool], int]:
    """A random partial DFA; often redundant copies of a smaller one, often acyclic."""
    k = rng.randint(1, 3)
    base_n = rng.randint(1, 7)
    fill = rng.random()
    acyclic = rng.random() < 0.4
    base = [
        [
            (
                rng.randrange(s + 1, base_n)
                if acyclic and s + 1 < base_n
                else (-1 if acyclic else rng.randrange(base_n))
            )
            if rng.random() < fill
            else -1
            for _ in range(k)
        ]
        for s in range(base_n)
    ]
    base_acc = [rng.random() < 0.4 for _ in range(base_n)]
    copies = rng.randint(1, 4)
    n = base_n * copies
    rows = [[-1 if t < 0 else t + base_n * rng.randrange(copies) for t in base[s % base_n]] for s in range(n)]
    acc = [base_acc[s % base_n] for s in range(n)]
    return rows, acc, k


def _all_reachable(rows: list[list[int]], acc: list[bool], start: int) -> tuple[list[list[int]], list[bool]]:
    """Keep the states reachable from ``start`` (renumbered in order, start first)."""
    seen = [start]
    index = {start: 0}
    for s in seen:
        for t in rows[s]:
            if t >= 0 and t not in index:
                index[t] = len(seen)
                seen.append(t)
    return [[index[t] if t >= 0 else -1 for t in rows[s]] for s in seen], [acc[s] for s in seen]


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("seed", range(300))
def test_trim_and_minimize_random_automata(seed: int) -> None:
    rng = random.Random(seed)
    rows, acc, k = _random_dfa(rng)
    rows, acc = _all_reachable(rows, acc, 0)
    dfa = _edges(rows, acc)
    trimmed = trim_edges(dfa)
    expect_classes = _nerode_classes(dfa, k)
    if trimmed is None:
        assert expect_classes == 0
        return
    assert _same_language(dfa, trimmed, k)
    out = minimize_edges(trimmed)
    assert _same_language(dfa, out, k)
    assert out.num_states == expect_classes
    assert _breadth_first(out, k)
    assert (np.diff(out.src) >= 0).all()
    order = out.src * k + out.cls
    assert (np.diff(order) > 0).all(), "transitions sorted by (source, class)"


def _deep_dfa(rng: random.Random) -> tuple[list[list[int]], list[bool]]:
    """Copies of a random chain with edges back into it: many rounds, most of them narrow."""
    n = rng.randint(20, 120)
    base = []
    for s in range(n):
        row = [s + 1 if s + 1 < n else -1, -1, -1]
        for c in (1, 2):
            if rng.random() < 0.3:
                row[c] = rng.randrange(n)
        base.append(row)
    acc = [rng.random() < 0.15 for _ in range(n)]
    acc[-1] = True
    copies = rng.randint(1, 3)
    rows = [
        [-1 if t < 0 else t + n * ((s // n + c) % copies) for c, t in enumerate(base[s % n])]
        for s in range(copies * n)
    ]
    return _all_reachable(rows, acc * copies, 0)


def test_deep_automata_minimise_as_the_list_code() -> None:
    """Many refinement rounds, most of them narrow. Oracle: the state count of the list-based
    minimisation (:func:`~tokensieve.automata.minimize.minimize`) and the languages."""
    for seed in range(60):
        rng = random.Random(9000 + seed)
        rows, acc = _deep_dfa(rng)
        dfa = _edges(rows, acc)
        trimmed = trim_edges(dfa)
        assert trimmed is not None
        out = minimize_edges(trimmed)
        list_rows, list_acc = trimmed.to_rows()
        assert out.num_states == len(minimize.minimize(list_rows, list_acc, trimmed.start)[0])
        assert _same_language(dfa, out, 3)


def _levelled_dfa(rng: random.Random) -> tuple[list[list[int]], list[bool]]:
    """Levels alternately wide (over a hundred states) and narrow, with edges back to earlier levels."""
    k = 8
    widths = [1]
    while len(widths) < 9:
        widths.append(rng.randint(1, 3) if widths[-1] > 8 else rng.randint(90, 160))
    starts = [sum(widths[:i]) for i in range(len(widths) + 1)]
    rows: list[list[int]] = []
    for level, width in enumerate(widths):
        for _ in range(width):
            row = [-1] * k
            if level + 1 < len(widths):
                nxt = range(starts[level + 1], starts[level + 2])
                for c in range(k):
                    roll = rng.random()
                    if roll < 0.7:
                        row[c] = rng.choice(nxt)
                    elif roll < 0.85:
                        row[c] = rng.randrange(starts[level + 1])  # back to an earlier level
            rows.append(row)
    acc = [rng.random() < 0.3 for _ in rows]
    for q in range(starts[-2], starts[-1]):
        acc[q] = True
    return _all_reachable(rows, acc, 0)


def test_levelled_and_deep_automata_are_minimised() -> None:
    """Wide and narrow levels, chains with edges back. Oracle: the Nerode classes counted by brute
    force, the languages, and a breadth-first order recomputed from the result."""
    for seed in range(24):
        rng = random.Random(12000 + seed)
        if seed % 3 == 1:
            rows, acc = _deep_dfa(rng)
            k = 3
        elif seed % 3 == 2:
            rows, acc = _levelled_dfa(rng)
            k = 8
        else:
            rows, acc, k = _random_dfa(rng)
            rows, acc = _all_reachable(rows, acc, 0)
        _assert_minimised(rows, acc, k)


def _assert_minimised(rows: list[list[int]], acc: list[bool], k: int) -> None:
    """Trimmed and minimised by the array code: the same language, the Nerode classes, numbered breadth-first."""
    dfa = _edges(rows, acc)
    trimmed = trim_edges(dfa)
    if trimmed is None:
        return
    out = minimize_edges(trimmed)
    assert _same_language(dfa, out, k)
    assert out.num_states == _nerode_classes(dfa, k)
    assert _breadth_first(out, k)


@pytest.mark.parametrize("seed", range(40))
def test_unreachable_states_are_trimmed(seed: int) -> None:
    rng = random.Random(1000 + seed)
    rows, acc, k = _random_dfa(rng)
    start = rng.randrange(len(rows))
    dfa = _edges(rows, acc, start)
    trimmed = trim_edges(dfa, reachable=False)
    expect = _nerode_classes(dfa, k)
    if trimmed is None:
        assert expect == 0
        return
    assert len(_useful(_table(trimmed, k), trimmed.accepting.tolist(), trimmed.start)) == trimmed.num_states
    out = minimize_edges(trimmed)
    assert _same_language(dfa, out, k) and out.num_states == expect


def test_long_chains_and_cycles() -> None:
    """Deep automata: a counter in front of and behind a cycle, in many copies."""
    n = 400
    rows: list[list[int]] = []
    # chain 0..n-1 on class 0, state n loops on class 1 and goes on a second chain on class 0
    for s in range(n):
        rows.append([s + 1, -1])
    rows.append([n + 1, n])
    for s in range(n + 1, 2 * n):
        rows.append([s + 1, s + 1 if s % 7 == 0 else -1])
    rows.append([-1, -1])
    acc = [False] * (2 * n) + [True]
    acc[n // 2] = True
    dfa = _edges(rows, acc)
    out = minimize_edges(dfa)
    assert out.num_states == len(rows)  # every state here is distinguishable
    assert _same_language(dfa, out, 2)
    # two interleaved copies merge back
    m = len(rows)
    doubled = [
        [-1 if t < 0 else t + m * ((s + c) % 2) for c, t in enumerate(rows[s % m])] for s in range(2 * m)
    ]
    dfa2 = _edges(*_all_reachable(doubled, acc + acc, 0))
    out2 = minimize_edges(trim_edges(dfa2))  # type: ignore[arg-type]
    assert out2.num_states == m
    assert _same_language(dfa, out2, 2)


# ----------------------------------------------------------- through regexes

_PATTERNS = [
    "[ab]{0,30}",
    "(ab|a)*b{2,9}",
    "a{3,12}(b|c)*a{0,5}",
    "((a|b)c){0,6}|c*",
    "(a|b)*a(a|b){4}",
    "[abc]{2,8}c[ab]*",
    "(a+b?){1,4}c{0,3}",
    "(abc|ab|a){3,7}",
]


def _strings(alphabet: str, max_len: int) -> list[str]:
    return ["".join(p) for n in range(max_len + 1) for p in itertools.product(alphabet, repeat=n)]


_STRINGS = _strings("abcd", 8)


@pytest.mark.parametrize("pattern", _PATTERNS)
def test_regexes_through_the_kernels(monkeypatch, checks, pattern: str) -> None:
    small = regex_to_dfa(pattern)
    monkeypatch.setattr(build, "SMALL_EDGES", -1)
    monkeypatch.setattr(determinize, "_DENSE_MAX", -1)
    monkeypatch.setattr(determinize, "_KERNEL_MIN", -1)
    big = regex_to_dfa(pattern)
    assert big.same_as(small)
    checks.assert_trimmed(big)
    checks.assert_minimal(big)
    rx = re.compile(pattern)
    for s in _STRINGS:
        assert big.accepts(s.encode()) == bool(rx.fullmatch(s)), s


def test_large_counted_repetition_matches_re(monkeypatch) -> None:
    pattern = "(a|bc){0,300}d{2,200}"
    dfa = regex_to_dfa(pattern)
    rx = re.compile(pattern)
    rng = random.Random(7)
    for _ in range(300):
        s = "".join(rng.choice(["a", "bc", "b"]) for _ in range(rng.randint(0, 320))) + "d" * rng.randint(
            0, 210
        )
        assert dfa.accepts(s.encode()) == bool(rx.fullmatch(s))
    # the list-based Hopcroft code gives the same table
    monkeypatch.setattr(build, "SMALL_EDGES", 1 << 40)
    monkeypatch.setattr(build, "_KERNEL_EDGES", 1 << 40)
    assert regex_to_dfa(pattern).same_as(dfa)


def test_limits_still_stop_large_subsets() -> None:
    with pytest.raises(LimitExceeded) as info:
        regex_to_dfa("(a|b)*a(a|b){20}", Limits(max_dfa_states=5000))
    assert info.value.limit == "max_dfa_states"


@pytest.mark.parametrize("pattern", ["(a|b)*a(a|b){9}", "[ab]{0,30}c", "(ab|a)*b{2,9}"])
def test_state_limit_counts_reachable_states_only(monkeypatch, pattern: str) -> None:
    nfa = build_nfa(parse_regex(pattern), Limits())
    monkeypatch.setattr(determinize, "_DENSE_MAX", 1 << 40)
    monkeypatch.setattr(determinize, "_KERNEL_MIN", 1 << 40)
    exact = determinize.determinize(nfa).num_states  # the plain-Python construction
    monkeypatch.setattr(determinize, "_DENSE_MAX", -1)
    monkeypatch.setattr(determinize, "_KERNEL_MIN", -1)
    assert determinize.determinize(nfa, Limits(max_dfa_states=exact)).num_states == exact
    with pytest.raises(LimitExceeded) as info:
        determinize.determinize(nfa, Limits(max_dfa_states=exact - 1))
    assert info.value.limit == "max_dfa_states"


def test_product_through_the_array_path(monkeypatch) -> None:
    monkeypatch.setattr(class_tables, "SMALL_EDGES", -1)
    a = regex_to_dfa("[abc]*a[abc]{3}")
    b = regex_to_dfa("[ab]{0,9}c?[abc]{0,4}")
    both = ops.intersect(a, b)
    diff = ops.difference(a, b)
    ra, rb = re.compile("[abc]*a[abc]{3}"), re.compile("[ab]{0,9}c?[abc]{0,4}")
    for s in _strings("abc", 9):
        x, y = bool(ra.fullmatch(s)), bool(rb.fullmatch(s))
        assert both.accepts(s.encode()) == (x and y), s
        assert diff.accepts(s.encode()) == (x and not y), s
