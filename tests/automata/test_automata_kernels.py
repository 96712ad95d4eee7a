"""The automata stage's JIT kernels (subset construction, minimisation) against the plain-Python code.

Each test forces one path: the kernels for every size (``paths(True)``) or the
plain-Python code for every size (``paths(False)``); the oracles are the brute-force
languages of :mod:`support.regex_trees`, the table-filling minimality check
of the conftest, and the other path's automaton (minimal DFAs numbered
breadth-first are unique, so the tables must be equal).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.regex_trees import STRINGS, accepted, brute, pattern_trees, to_ir

from tokensieve.automata import build, determinize, kernels
from tokensieve.automata.build import ir_to_dfa
from tokensieve.automata.minimize import minimize
from tokensieve.automata.minimize_arrays import EdgeDFA, minimize_edges, trim_edges
from tokensieve.errors import LimitExceeded
from tokensieve.grammar.regex import parse_regex
from tokensieve.limits import Limits


@pytest.fixture(scope="module", autouse=True)
def _loaded() -> None:
    kernels.load()


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch):
    """A function that sets the path: ``paths(True)`` the kernels for every automaton, ``paths(False)`` none
    (each test sets it before each use, so hypothesis's inputs may share the fixture)."""

    def use(on: bool) -> None:
        if on:
            monkeypatch.setattr(kernels, "_SUBSETS", saved_subsets)
            monkeypatch.setattr(kernels, "_MINIMIZE", saved_minimize)
            monkeypatch.setattr(determinize, "_KERNEL_MIN", -1)
            monkeypatch.setattr(build, "_KERNEL_EDGES", -1)
        else:  # the plain-Python code for every size
            monkeypatch.setattr(kernels, "_SUBSETS", [])
            monkeypatch.setattr(kernels, "_MINIMIZE", [])
            monkeypatch.setattr(determinize, "_DENSE_MAX", 1 << 40)
            monkeypatch.setattr(build, "SMALL_EDGES", 1 << 40)

    saved_subsets, saved_minimize = list(kernels._SUBSETS), list(kernels._MINIMIZE)
    return use


def _same(a, b) -> bool:
    return (
        a.start == b.start
        and np.array_equal(np.asarray(a.transitions), np.asarray(b.transitions))
        and np.array_equal(np.asarray(a.accepting), np.asarray(b.accepting))
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=pattern_trees())
def test_kernel_automata_accept_the_brute_force_language_and_are_minimal(tree, paths, checks) -> None:
    paths(True)
    node = to_ir(tree)
    dfa = ir_to_dfa(node)
    assert accepted(dfa) == {s for s in brute(tree) if s in set(STRINGS)}
    checks.assert_minimal(dfa)
    paths(False)
    assert _same(dfa, ir_to_dfa(node))


@pytest.mark.parametrize(
    "pattern",
    [
        r'"([^"\\]|\\.){0,300}"',  # thousands of positions
        r"[^\n]{5,2500}",
        r"((foo|bar|baz|qux)[, ]*){1,400}",
        r"(a|b)*a(a|b){9}",
        r"([\u0100-\uffff]|[a-f0-9]{2,4}){3,60}z",
        r"(x|)*(|y)",
    ],
)
def test_kernel_automata_equal_the_plain_python_ones(pattern, paths) -> None:
    paths(True)
    got = ir_to_dfa(parse_regex(pattern))
    paths(False)
    want = ir_to_dfa(parse_regex(pattern))
    assert _same(got, want)


def _random_dfa(rng: np.random.Generator, n: int, k: int, density: float) -> tuple[list, list[bool]]:
    rows = [[(c, int(rng.integers(n))) for c in range(k) if rng.random() < density] for _ in range(n)]
    return rows, [bool(rng.random() < 0.3) for _ in range(n)]


@pytest.mark.parametrize("seed", range(4))
def test_minimize_kernel_equals_the_list_minimisation(seed, paths) -> None:
    rng = np.random.default_rng(seed)
    paths(True)
    tried = 0
    for _ in range(400):
        rows, acc = _random_dfa(rng, int(rng.integers(1, 60)), int(rng.integers(1, 6)), float(rng.random()))
        trimmed = trim_edges(EdgeDFA.from_rows(rows, acc), reachable=False)
        if trimmed is None:
            continue
        tried += 1
        t_rows, t_acc = trimmed.to_rows()
        assert minimize_edges(trimmed).to_rows() == minimize(t_rows, t_acc, trimmed.start)
    assert tried > 100


def test_kernel_subset_construction_keeps_the_state_limit(paths) -> None:
    paths(True)
    ir_to_dfa(parse_regex("a{99}"), Limits(max_dfa_states=100))
    with pytest.raises(LimitExceeded) as info:
        ir_to_dfa(parse_regex("a{100}"), Limits(max_dfa_states=100))
    assert info.value.limit == "max_dfa_states"
    with pytest.raises(LimitExceeded) as info:
        ir_to_dfa(parse_regex("(a|b)*a(a|b){30}"))
    assert info.value.limit == "max_dfa_states"


def test_kernel_subset_construction_keeps_the_work_limit(paths) -> None:
    paths(True)
    words = "|".join(f"w{i:04d}x" for i in range(3000))
    with pytest.raises(LimitExceeded) as info:
        ir_to_dfa(parse_regex(f"({words})*"), Limits(max_compile_work=200_000))
    assert info.value.limit == "max_compile_work"


@given(words=st.lists(st.sampled_from(["ab", "abc", "b", "ca", ""]), min_size=1, max_size=6))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_kernel_automata_of_alternatives_with_the_empty_string(words, paths) -> None:
    paths(True)
    pattern = "(" + "|".join(words) + ")*c?"
    dfa = ir_to_dfa(parse_regex(pattern))
    paths(False)
    assert _same(dfa, ir_to_dfa(parse_regex(pattern)))
