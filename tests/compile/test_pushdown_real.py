"""Recursive grammars on the real vocabularies, against the Earley oracle."""

from __future__ import annotations

import zlib

import pytest
from support.cfg_grammars import GRAMMARS, check_random_walks

from tokensieve import GrammarCompiler, TokenizerInfo

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["json", "arith_left_recursive", "mutual"])
def test_real_vocab_grammar_masks_equal_earley(real_info: TokenizerInfo, name: str) -> None:
    grammar = GRAMMARS[name]
    compiled = GrammarCompiler(real_info).compile_grammar(grammar)
    eos = int(real_info.stop_token_ids[0])
    checked = check_random_walks(
        compiled, grammar, real_info, seed=zlib.crc32(name.encode()), walks=2, steps=4, eos=eos, fast=True
    )
    assert checked >= 2
