"""Fixtures: small byte-level vocabularies built in memory."""

from __future__ import annotations

import pytest
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve.vocab import TokenizerInfo


@pytest.fixture(scope="session")
def tiny_info() -> TokenizerInfo:
    vocab = make_tiny_vocab()
    # pad the vocabulary like a model's logits would be
    return TokenizerInfo(
        vocab, vocab_size=len(vocab) + 13, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )
