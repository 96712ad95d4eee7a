"""Frame walks of rules that grammars share are remembered per vocabulary and reused.

Oracle: the same grammar's walks with nothing remembered (the memos replaced by
empty ones), state by state, mask and escape nodes.
"""

from __future__ import annotations

import weakref

import numpy as np
import pytest

from tokensieve import Limits
from tokensieve.automata.pushdown import RuleNetwork, compile_grammar_automaton
from tokensieve.compile import shared_walks
from tokensieve.compile.pushdown import CompiledPushdownGrammar
from tokensieve.grammar.cfg import Grammar


def _grammar(root_key: str) -> Grammar:
    # the rules ``value`` (recursive), ``list`` and ``item`` (calling each other: they reach the same
    # rules) are the same in every grammar; the root differs
    return Grammar.from_gbnf(
        f'root ::= "{{" "\\"{root_key}\\":" value "," list "}}"\n'
        'value ::= "[" (value ("," value)*)? "]" | [0-9]+ | "\\"" [a-z ]* "\\"" | "{" "\\"k\\":" value "}"\n'
        'list ::= "(" (item (";" item)*)? ")"\n'
        'item ::= [a-f]+ | "<" list ">"\n'
    )


def _compiled(root_key: str, info, limits: Limits | None = None) -> CompiledPushdownGrammar:
    net = compile_grammar_automaton(_grammar(root_key), limits)
    assert isinstance(net, RuleNetwork)
    compiled = CompiledPushdownGrammar(net, info, limits)
    compiled.precompute()
    return compiled


def _value_states(compiled: CompiledPushdownGrammar) -> list[int]:
    r = compiled.network.names.index("value")
    return list(range(int(compiled._offsets[r]), int(compiled._offsets[r + 1])))


def _forget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared_walks, "_SHARED_WALKS", weakref.WeakKeyDictionary())
    monkeypatch.setattr(shared_walks, "_SHARED_CLASSES", shared_walks.BoundedMemo(max_entries=0))


def _walks(
    compiled: CompiledPushdownGrammar, states: list[int]
) -> list[tuple[np.ndarray, np.ndarray | None]]:
    return [compiled._walk(g, None) for g in states]


def test_a_shared_rule_is_walked_once_and_as_if_alone(tiny_info, monkeypatch: pytest.MonkeyPatch) -> None:
    _forget(monkeypatch)
    first = _compiled("a", tiny_info)
    second = _compiled("bb", tiny_info)
    for r in range(1, len(first.network.names)):  # the rule memo shares the arrays
        assert first.network.transitions[r] is second.network.transitions[r]
    a, b = _value_states(first), _value_states(second)
    shared = [(x, y) for x, y in zip(_walks(first, a), _walks(second, b), strict=True) if x[0] is y[0]]
    assert len(shared) > len(a) // 2  # reused, not recomputed
    # the oracle: every state of the second grammar walked with nothing remembered
    got = _walks(second, list(range(second._offsets[-1])))
    _forget(monkeypatch)
    fresh = _compiled("bb", tiny_info)
    want = _walks(fresh, list(range(fresh._offsets[-1])))
    assert fresh._walk(b[0], None)[0] is not got[b[0]][0]
    for g, ((m1, e1), (m2, e2)) in enumerate(zip(got, want, strict=True)):
        assert np.array_equal(m1, m2), g
        assert e1 is not None and e2 is not None and np.array_equal(e1, e2), g
    # the walk classes were shared too
    for r in range(1, len(first.network.names)):
        assert second._walk_reps[r] == fresh._walk_reps[r]


def test_walks_are_not_shared_under_another_stack_bound(tiny_info, monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk can stop at the stack bound, so grammars with other bounds do not share one (same network)."""
    _forget(monkeypatch)
    first = _compiled("a", tiny_info)
    other = CompiledPushdownGrammar(first.network, tiny_info, Limits(max_stack_depth=500))
    other.precompute()
    states = _value_states(first)
    for x, y in zip(_walks(first, states), _walks(other, states), strict=True):
        assert x[0] is not y[0]


def test_an_entry_for_other_arrays_is_not_used(tiny_info, monkeypatch: pytest.MonkeyPatch) -> None:
    """An id alone does not identify a rule: an entry whose arrays are not this rule's is walked over."""
    _forget(monkeypatch)
    first = _compiled("a", tiny_info)
    g = _value_states(first)[0]
    r = first._rule_of[g]
    refs, _, ident = first._shared_keys[r]
    memo = shared_walks._SHARED_WALKS[first._builder]
    key = (ident, g - first._rule_start[r])
    mask, escapes = first._walk(g, None)
    assert mask.any()
    # the same ids, but other arrays (as if the rule's had been freed and their ids reused)
    copies = tuple(np.array(x) if isinstance(x, np.ndarray) else tuple(list(x)) for x in refs)
    memo.put(key, (copies, np.zeros_like(mask), escapes))
    again = CompiledPushdownGrammar(first.network, first.tokenizer_info, first.limits)
    assert np.array_equal(again._walk(g, None)[0], mask)


def test_remembered_walks_do_not_keep_a_rule_alive(tiny_info, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo counts masks, not the rules' tables: an entry holds a table weakly."""
    import gc

    from tokensieve.automata import pushdown as automata_pushdown

    _forget(monkeypatch)
    monkeypatch.setattr(automata_pushdown, "_RULE_AUTOMATA", shared_walks.BoundedMemo(max_entries=0))
    first = _compiled("a", tiny_info)
    r = first.network.names.index("value")
    table = weakref.ref(first.network.transitions[r])
    memo = shared_walks._SHARED_WALKS[first._builder]
    assert memo.get((first._shared_keys[r][2], 0)) is not None
    del first
    gc.collect()
    assert table() is None
