"""Walks of many states at once are split when their frontier would be too large.

The oracle is the mask of each state computed alone (a one-state walk is never
split), so splitting may change only the cost, never a mask.
"""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve import GrammarCompiler
from tokensieve.compile import compiled_grammar as cg_module
from tokensieve.compile.token_masks import FrontierTooLarge
from tokensieve.compile.vocab_cache import mask_builder_for

PATTERN = r"[a-z]{0,12}@[a-z]{1,6}\.(com|org)"


def test_walk_of_several_states_raises_past_the_budget(tiny_info) -> None:
    compiled = GrammarCompiler(tiny_info, precompute=False).compile_regex(PATTERN)
    builder = mask_builder_for(tiny_info)
    states = np.arange(compiled.num_states)
    with pytest.raises(FrontierTooLarge):
        builder.compute(compiled.automaton, states, max_frontier=2)
    # one state alone is bounded by the trie: the budget does not apply
    builder.compute(compiled.automaton, states[:1], max_frontier=2)


def test_precompute_splits_and_keeps_every_mask(tiny_info, monkeypatch: pytest.MonkeyPatch) -> None:
    alone = GrammarCompiler(tiny_info, precompute=False, cache_enabled=False).compile_regex(PATTERN)
    builder = mask_builder_for(tiny_info)
    expected = [builder.compute(alone.automaton, [s]).mask(0) for s in range(alone.num_states)]
    monkeypatch.setattr(cg_module, "_MAX_FRONTIER", 3)
    split = GrammarCompiler(tiny_info, precompute=False, cache_enabled=False).compile_regex(PATTERN)
    split.precompute()
    assert split._known.all()  # every state was walked, in smaller batches
    for s in range(split.num_states):
        np.testing.assert_array_equal(split.token_mask(s), expected[s])
    # lazily, a state's neighbourhood walk falls back to the state alone
    lazy = GrammarCompiler(tiny_info, precompute=False, cache_enabled=False).compile_regex(PATTERN)
    for s in reversed(range(lazy.num_states)):
        np.testing.assert_array_equal(lazy.token_mask(s), expected[s])
