"""The walks ahead in the background thread: the same masks as walked at compile time, and a
compile that does not wait for them.

Oracles: the masks of ``precompute=True`` (every state walked at compile time, no
thread) and the states a synchronous budgeted compile walks; the background
thread must walk the same states (a budget in work, not time) and every mask
read while it runs must equal the eager one.
"""

from __future__ import annotations

import gc
import os
import sys
import threading

import numpy as np
import pytest
from support.cfg_grammars import GRAMMARS

from tokensieve import GrammarCompiler, TokenizerInfo
from tokensieve.compile import background
from tokensieve.compile import compiler as compiler_module
from tokensieve.compile.compiled_grammar import CompiledGrammar
from tokensieve.compile.pushdown import CompiledPushdownGrammar

#: twenty loops on distinct 21-byte ranges: permissive states, walked a few at a time
_LOOPS = "".join(f"[\\x{0x41 + i:02x}-\\x{0x55 + i:02x}]+{i % 10}" for i in range(20))


@pytest.fixture(autouse=True)
def _all_aside(monkeypatch) -> None:
    """Every walk ahead in the background (by default the first ~15 ms of them run before compile returns)."""
    monkeypatch.setattr(compiler_module, "_BEFORE_RETURN_WORK", 0)


def _compiler(info: TokenizerInfo, **options) -> GrammarCompiler:
    return GrammarCompiler(
        info, cache_enabled=False, auto_precompute_max_states=10, auto_precompute_budget_s=60, **options
    )


def test_background_walks_the_states_a_compile_time_budget_walks(tiny_info) -> None:
    aside = _compiler(tiny_info, auto_precompute_work=5000).compile_regex(_LOOPS)
    assert background.wait_idle(60)
    now = _compiler(tiny_info, auto_precompute_work=5000, precompute_in_background=False).compile_regex(_LOOPS)
    assert isinstance(aside, CompiledGrammar) and isinstance(now, CompiledGrammar)
    assert now._known.sum() > 1  # the budget walked more than the start state
    np.testing.assert_array_equal(aside._known, now._known)


def test_masks_read_while_the_thread_walks_equal_the_eager_ones(tiny_info) -> None:
    eager = GrammarCompiler(tiny_info, precompute=True, cache_enabled=False).compile_regex(_LOOPS)
    for _ in range(3):
        aside = _compiler(tiny_info, auto_precompute_work=None).compile_regex(_LOOPS)
        row = np.zeros(aside.num_words, dtype=np.int32)
        for s in reversed(range(eager.num_states)):  # from the far end, where the thread is not yet
            aside.fill_row(s, row)
            np.testing.assert_array_equal(row, eager.token_mask(s))
    assert background.wait_idle(60)


def test_rule_network_masks_read_while_the_thread_walks_equal_the_eager_ones(tiny_info) -> None:
    grammar = GRAMMARS["json"]
    eager = GrammarCompiler(tiny_info, precompute=True, cache_enabled=False).compile_grammar(grammar)
    aside = GrammarCompiler(tiny_info, cache_enabled=False).compile_grammar(grammar)
    assert isinstance(eager, CompiledPushdownGrammar) and isinstance(aside, CompiledPushdownGrammar)
    # the same bytes from both start states reach states of the same stacks: masks must agree
    frontier = [(eager.start_state, aside.start_state)]
    seen = set(frontier)
    while frontier and len(seen) < 200:
        e, a = frontier.pop()
        assert eager.stacks(e) == aside.stacks(a)
        np.testing.assert_array_equal(aside.token_mask(a), eager.token_mask(e))
        er, ar = eager.row(e), aside.row(a)
        for byte in np.flatnonzero(er >= 0).tolist():
            pair = (int(er[byte]), int(ar[byte]))
            assert pair[1] >= 0
            if pair not in seen:
                seen.add(pair)
                frontier.append(pair)
    assert background.wait_idle(60)


def test_compile_returns_before_the_walks_ahead(tiny_info, monkeypatch) -> None:
    release = threading.Event()
    started = threading.Event()
    walked = CompiledGrammar.precompute_ahead

    def held(self, budget_s, budget_work):
        started.set()
        assert release.wait(60)
        return walked(self, budget_s, budget_work)

    monkeypatch.setattr(CompiledGrammar, "precompute_ahead", held)
    compiled = _compiler(tiny_info).compile_regex(_LOOPS)
    assert started.wait(60)  # the thread has the grammar, and waits
    assert compiled._known.sum() == 1  # the compile returned with the start state's mask alone
    assert not background.wait_idle(0.05)
    release.set()
    assert background.wait_idle(60)
    assert compiled._known.sum() > 1


def test_a_grammar_dropped_before_its_turn_is_skipped(tiny_info, monkeypatch) -> None:
    release = threading.Event()
    calls: list[int] = []
    walked = CompiledGrammar.precompute_ahead

    def held(self, budget_s, budget_work):
        calls.append(self.num_states)
        assert release.wait(60)
        return walked(self, budget_s, budget_work)

    monkeypatch.setattr(CompiledGrammar, "precompute_ahead", held)
    compiler = _compiler(tiny_info)
    first = compiler.compile_regex(_LOOPS)
    second = compiler.compile_regex(_LOOPS + "x")  # queued behind the first
    del second
    gc.collect()
    release.set()
    assert background.wait_idle(60)
    assert calls == [first.num_states]


def test_the_switch_interval_is_lowered_while_walking_and_restored_after(tiny_info, monkeypatch) -> None:
    before = sys.getswitchinterval()
    seen: list[float] = []
    walked = CompiledGrammar.precompute_ahead

    def noted(self, budget_s, budget_work):
        seen.append(sys.getswitchinterval())
        return walked(self, budget_s, budget_work)

    monkeypatch.setattr(CompiledGrammar, "precompute_ahead", noted)
    compiled = _compiler(tiny_info).compile_regex(_LOOPS)  # held: a dropped grammar is skipped
    assert background.wait_idle(60)
    assert compiled.num_states > 10
    assert seen == [pytest.approx(min(before, background.SWITCH_INTERVAL_S))]
    assert sys.getswitchinterval() == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_walks_ahead_with_a_thread_of_its_own(tiny_info) -> None:
    """The benchmarks fork a child per compile after set-up (the parent's thread started): the child
    must start its own thread and finish its walks."""
    background.start()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compile, wait for the walks ahead, report
        ok = False
        try:
            compiled = _compiler(tiny_info, auto_precompute_work=5000).compile_regex(_LOOPS)
            ok = background.wait_idle(30) and compiled._known.sum() > 1
        finally:
            os.write(writer, b"1" if ok else b"0")
            os._exit(0)
    os.close(writer)
    answer = os.read(reader, 1)
    os.waitpid(pid, 0)
    assert answer == b"1"


def test_the_first_walks_ahead_run_before_compile_returns(tiny_info, monkeypatch) -> None:
    """With room for all of them before returning, a small automaton's walks are all done by then,
    as without the thread; with room for part, the thread walks the rest, to the same states."""
    queued: list[int] = []
    monkeypatch.setattr(compiler_module, "kernel_ready", lambda: False)  # loaded, it takes the walks all aside
    monkeypatch.setattr(background, "submit", lambda grammar, s, w: queued.append(w))
    monkeypatch.setattr(compiler_module, "_BEFORE_RETURN_WORK", 10**9)
    whole = _compiler(tiny_info, auto_precompute_work=None).compile_regex(_LOOPS)
    assert queued == [] and isinstance(whole, CompiledGrammar)
    eager = GrammarCompiler(tiny_info, precompute=True, cache_enabled=False).compile_regex(_LOOPS)
    reps = whole._representatives()
    walked = np.unique(reps) if reps is not None else np.arange(whole.num_states)
    assert whole._known[walked].all()
    for s in range(eager.num_states):
        np.testing.assert_array_equal(whole.token_mask(s), eager.token_mask(s))
    monkeypatch.undo()
    monkeypatch.setattr(compiler_module, "kernel_ready", lambda: False)
    monkeypatch.setattr(compiler_module, "_BEFORE_RETURN_WORK", 1000)
    at_return: list[np.ndarray] = []
    submit = background.submit

    def noted(grammar, budget_s, work):
        at_return.append(grammar._known.copy())
        submit(grammar, budget_s, work)

    monkeypatch.setattr(background, "submit", noted)
    part = _compiler(tiny_info, auto_precompute_work=5000).compile_regex(_LOOPS)
    assert background.wait_idle(60)
    assert len(at_return) == 1 and 1 < at_return[0].sum() < part._known.sum()  # walked before, then aside
    for s in range(eager.num_states):
        np.testing.assert_array_equal(part.token_mask(s), eager.token_mask(s))


def test_with_the_kernel_a_permissive_automaton_returns_after_its_first_mask(tiny_info, monkeypatch) -> None:
    """With the JIT kernel loaded, the analyses and walks ahead of a permissive automaton all go to the
    thread: compile returns with the start state's mask alone; masks asked for meanwhile (walked on their
    own) and those the thread walks equal the eager ones."""
    from tokensieve.compile.frame_walk import load_kernel

    load_kernel()
    at_return: list[tuple[np.ndarray, bool, int | None]] = []
    submit = background.submit

    def noted(grammar, budget_s, work):
        at_return.append((grammar._known.copy(), grammar._reps_done, work))
        submit(grammar, budget_s, work)

    monkeypatch.setattr(background, "submit", noted)
    longer = "".join(f"[\\x{0x41 + i % 20:02x}-\\x{0x55 + i % 20:02x}]+{i % 10}" for i in range(150))
    aside = _compiler(tiny_info, auto_precompute_work=5000).compile_regex(longer)
    assert isinstance(aside, CompiledGrammar) and aside.automaton.is_permissive
    assert len(at_return) == 1
    known, reps_done, work = at_return[0]
    assert known.sum() == 1 and known[aside.start_state] and not reps_done and work == 5000
    eager = GrammarCompiler(tiny_info, precompute=True, cache_enabled=False).compile_regex(longer)
    assert aside.num_states == eager.num_states > 256  # large enough for classes of states sharing a mask
    for s in range(0, eager.num_states, 7):  # some while the thread walks, maybe before its classes are known
        np.testing.assert_array_equal(aside.token_mask(s), eager.token_mask(s))
    assert background.wait_idle(60)
    assert aside._reps_done
    for s in range(eager.num_states):
        np.testing.assert_array_equal(aside.token_mask(s), eager.token_mask(s))
