"""Recursive rules' automata are built once per body and limits, and shared between networks."""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve import LimitExceeded, Limits
from tokensieve.automata import pushdown
from tokensieve.automata.pushdown import RuleNetwork, compile_grammar_automaton
from tokensieve.grammar.cfg import Grammar


def _grammar(root_key: str) -> Grammar:
    # the rule ``value`` is the same in every grammar; the root differs
    return Grammar.from_gbnf(
        f'root ::= "{{" "\\"{root_key}\\":" value "}}"\n'
        'value ::= "[" (value ("," value)*)? "]" | [0-9]+ | "\\"" [a-z]* "\\""\n'
    )


def _network(grammar: Grammar, limits: Limits | None = None) -> RuleNetwork:
    net = compile_grammar_automaton(grammar, limits)
    assert isinstance(net, RuleNetwork)
    return net


def _same_rule(a: RuleNetwork, i: int, b: RuleNetwork, j: int) -> bool:
    return (
        np.array_equal(a.transitions[i], b.transitions[j])
        and np.array_equal(a.accepting[i], b.accepting[j])
        and a.starts[i] == b.starts[j]
        and a.calls[i] == b.calls[j]
    )


def test_networks_share_a_rule_and_equal_fresh_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    first = _network(_grammar("a"))
    second = _network(_grammar("bb"))
    v1, v2 = first.names.index("value"), second.names.index("value")
    assert second.transitions[v2] is first.transitions[v1]  # built once
    assert not second.transitions[v2].flags.writeable and not second.accepting[v2].flags.writeable
    # the oracle: the same grammars with nothing remembered
    monkeypatch.setattr(pushdown, "_RULE_AUTOMATA", pushdown.BoundedMemo(max_entries=0))
    fresh = _network(_grammar("bb"))
    assert fresh.names == second.names
    for r in range(len(fresh.names)):
        assert _same_rule(fresh, r, second, r)
    assert not _same_rule(fresh, fresh.names.index("root"), first, first.names.index("root"))


def test_a_remembered_rule_still_meets_tighter_limits() -> None:
    _network(_grammar("c"))  # remembered under the default limits
    with pytest.raises(LimitExceeded):
        _network(_grammar("c"), Limits(max_dfa_states=3))
