"""The derived masks of length-bounded formats on the real vocabularies, against walks of their own.

Oracle: the same automaton without its layer copies, so every state's mask
is walked through the token trie; the derived states take their base's mask
ANDed with a row of the tokens that fit their room (compile/unit_needs.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve import GrammarCompiler
from tokensieve.automata import ByteDFA
from tokensieve.compile.compiled_grammar import CompiledGrammar
from tokensieve.vocab import TokenizerInfo

pytestmark = pytest.mark.slow

SCHEMAS = [
    # the literal's places too near the bound from the base layer on, far layers folded when refining
    {"type": "string", "format": "email", "minLength": 5, "maxLength": 60},
    # the literal's places near the bound in the last 51 layers only
    {"type": "string", "format": "email", "maxLength": 254},
    {"type": "string", "pattern": "^[a-z]+@(\\[[0-9]{1,6}\\]|[a-z]+)$", "minLength": 3, "maxLength": 40},
    # a bounded repetition of a class of many ranges in a pattern, built by layers (json_strings._counted_class)
    {"type": "string", "pattern": "^\\p{Lu}[\\p{Ll}0-9_]{2,12}$"},
]


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_derived_masks_equal_walked_masks(real_info: TokenizerInfo, index: int) -> None:
    compiled = GrammarCompiler(real_info, cache_enabled=False).compile_json_schema(
        SCHEMAS[index], strict=False
    )
    dfa = compiled.dfa
    layers = dfa.layer_copies
    assert layers is not None
    derived = layers.base >= 0
    assert derived.sum() > dfa.num_states // 2
    plain = ByteDFA(np.array(dfa.transitions), dfa.accepting, dfa.start, blank_chains=dfa.blank_chains)
    walked = CompiledGrammar(real_info, plain, kind="json_schema", source="walked")
    assert walked.dfa.layer_copies is None
    for state in range(dfa.num_states):
        np.testing.assert_array_equal(
            compiled.token_mask(state), walked.token_mask(state), err_msg=str(state)
        )
