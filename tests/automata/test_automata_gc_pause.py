"""The collector is held off while automata are built, and left as it was found."""

from __future__ import annotations

import gc
import threading

import pytest

from tokensieve.automata.build import ir_to_dfa
from tokensieve.automata.gc_pause import gc_paused
from tokensieve.grammar.regex import parse_regex


@pytest.fixture(autouse=True)
def _restore_gc():
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_pause_nests_and_restores() -> None:
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_collector_off_before_stays_off() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_error_inside_restores() -> None:
    gc.enable()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("inside")
    assert gc.isenabled()


def test_overlapping_pauses_in_threads() -> None:
    gc.enable()
    inside = threading.Event()
    leave = threading.Event()

    def other() -> None:
        with gc_paused():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's pause has not ended
    leave.set()
    t.join(5)
    assert gc.isenabled()


def test_build_leaves_collector_as_found() -> None:
    gc.enable()
    ir_to_dfa(parse_regex("(ab|cd){0,40}[a-z]*"))
    assert gc.isenabled()
    gc.disable()
    ir_to_dfa(parse_regex("x{3}y"))
    assert not gc.isenabled()
