"""Fixtures shared by the grammar tests."""

from __future__ import annotations

import pytest
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve import GrammarCompiler, TokenizerInfo


@pytest.fixture(scope="module")
def compiler() -> GrammarCompiler:
    """A compiler for the tiny vocabulary (three ids past its tokens, EOS the stop token)."""
    vocab = make_tiny_vocab()
    info = TokenizerInfo(
        vocab, vocab_size=len(vocab) + 3, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )
    return GrammarCompiler(info)
