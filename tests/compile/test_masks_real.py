"""Token masks on the real vocabularies against a brute-force regex oracle."""

from __future__ import annotations

import random

import numpy as np
import pytest
from support.regex_oracle import complete_by_regex, viable_by_regex

from tokensieve import GrammarCompiler, GrammarMatcher, allocate_token_bitmask
from tokensieve.bitmask import bitmask_to_bool
from tokensieve.vocab import TokenizerInfo

pytestmark = pytest.mark.slow


PATTERNS = [
    r"\d{4}-\d{2}-\d{2}",
    r"[a-z]+( [a-z]+)*",
    r"[\w.+-]+@[\w-]+\.[\w.]+",
    r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}",
    r"[^\"\\\x00-\x1f]*\"",
    r"(Ünïcödé|日本語|emoji 😀)+",
]


def _allowed(m: GrammarMatcher, vocab_size: int) -> np.ndarray:
    bm = allocate_token_bitmask(1, vocab_size)
    m.fill_next_token_bitmask(bm)
    return bitmask_to_bool(bm, vocab_size)[0]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_real_vocab_masks_equal_oracle(real_info: TokenizerInfo, pattern: str) -> None:
    vocab = real_info.decoded_vocab
    stops = set(real_info.stop_token_ids)
    special = set(real_info.special_token_ids)
    compiled = GrammarCompiler(real_info).compile_regex(pattern)
    rng = random.Random(len(pattern))
    m = GrammarMatcher(compiled)
    text = b""
    for _step in range(3):
        got = _allowed(m, real_info.vocab_size)
        assert not got[len(vocab) :].any()
        for t in special - stops:
            assert not got[t]
        for t in stops:
            assert got[t] == complete_by_regex(pattern, text)
        split = 0
        for t, tok in enumerate(vocab):
            if t in special or t in stops or not tok:
                continue
            ok = viable_by_regex(pattern, text + tok)
            if ok is None:
                split += got[t]  # undecidable by the text oracle: checked by the DFA oracle elsewhere
                continue
            assert got[t] == ok, (pattern, text, tok)
        choices = [t for t in np.flatnonzero(got) if t not in stops]
        if not choices:
            break
        t = int(rng.choice(choices))
        assert m.accept_token(t)
        text += vocab[t]


def test_real_vocab_split_utf8_tokens_follow_dfa(real_info: TokenizerInfo) -> None:
    """Tokens holding part of a character are allowed exactly when the bytes stay viable."""
    pattern = r"(日本語|Ünïcödé)+"
    compiled = GrammarCompiler(real_info).compile_regex(pattern)
    vocab = real_info.decoded_vocab
    skip = set(real_info.special_token_ids) | set(real_info.stop_token_ids)
    m = GrammarMatcher(compiled)
    got = _allowed(m, real_info.vocab_size)
    targets = ("日本語".encode(), "Ünïcödé".encode())
    for t, tok in enumerate(vocab):
        if t in skip or not tok:
            continue
        assert got[t] == _repeat_ok(tok, targets), tok


def _repeat_ok(tok: bytes, targets: tuple[bytes, ...]) -> bool:
    """Whether ``tok`` is a prefix of some concatenation of targets (brute force)."""
    frontier = {b""}
    for _ in range(len(tok) + 1):
        nxt = set()
        for pre in frontier:
            for tgt in targets:
                cand = pre + tgt
                if tok.startswith(cand):
                    if cand == tok:
                        return True
                    nxt.add(cand)
                elif cand.startswith(tok):
                    return True
        frontier = nxt
        if not frontier:
            return False
    return False
