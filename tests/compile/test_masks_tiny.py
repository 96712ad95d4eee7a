"""Token masks on a tiny vocabulary against independent oracles."""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.regex_oracle import complete_by_regex, viable_by_regex
from support.tiny_vocab import EOS, SPECIAL

from tokensieve import GrammarCompiler, GrammarMatcher, allocate_token_bitmask
from tokensieve.bitmask import bitmask_to_bool

PATTERNS = [
    r"\d{4}-\d{2}-\d{2}",
    r"[a-z]+( [a-z]+)*",
    r"(abc|abd|x)+",
    r"[^a-c]{1,3}é?",
    r"\w+@\w+\.(com|org)",
    r"😀|€+|\u00e9x",
    r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}",
    r".{0,4}",
    r"a*?b+?",
    r"[\s\S]{2}",
]


def _allowed(matcher: GrammarMatcher, vocab_size: int) -> set[int]:
    bm = allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bm)
    return set(np.flatnonzero(bitmask_to_bool(bm, vocab_size)[0]).tolist())


def _expected(pattern: str, text: bytes, vocab: list[bytes]) -> tuple[set[int], set[int]]:
    """Tokens the oracle allows, and tokens it cannot decide (they split a character)."""
    allowed, unknown = set(), set()
    for t, tok in enumerate(vocab):
        if t in (EOS, SPECIAL) or not tok:
            continue
        ok = viable_by_regex(pattern, text + tok)
        if ok is None:
            unknown.add(t)
        elif ok:
            allowed.add(t)
    if complete_by_regex(pattern, text):
        allowed.add(EOS)
    return allowed, unknown


def _random_walk(matcher: GrammarMatcher, vocab_size: int, rng: random.Random, steps: int) -> list[int]:
    path = []
    for _ in range(steps):
        allowed = sorted(_allowed(matcher, vocab_size) - {EOS})
        if not allowed:
            break
        t = rng.choice(allowed)
        assert matcher.accept_token(t)
        path.append(t)
    return path


@pytest.mark.parametrize("pattern", PATTERNS)
def test_masks_equal_regex_oracle_along_random_walks(tiny_info, pattern: str) -> None:
    compiler = GrammarCompiler(tiny_info)
    compiled = compiler.compile_regex(pattern)
    vocab = tiny_info.decoded_vocab
    rng = random.Random(zlib.crc32(pattern.encode()))
    for _ in range(4):
        m = GrammarMatcher(compiled)
        text = b""
        for _step in range(8):
            got = _allowed(m, tiny_info.vocab_size)
            exp, unknown = _expected(pattern, text, vocab)
            assert got - unknown == exp, (pattern, text)
            assert (EOS in got) == complete_by_regex(pattern, text)
            choices = sorted(got - {EOS})
            if not choices:
                break
            t = rng.choice(choices)
            assert m.accept_token(t)
            text += vocab[t]
        # every reachable state keeps a non-empty mask unless complete
        assert got or m.is_completed()


def test_split_characters_are_allowed(tiny_info) -> None:
    compiled = GrammarCompiler(tiny_info).compile_regex(r"😀|é+")
    vocab = tiny_info.decoded_vocab
    m = GrammarMatcher(compiled)
    allowed = _allowed(m, tiny_info.vocab_size)
    first = vocab.index(bytes([0xF0]))
    assert first in allowed  # the first byte of 😀 alone
    assert vocab.index("😀".encode()[:3]) in allowed
    assert vocab.index(bytes([0xC3])) in allowed  # first byte of é
    assert vocab.index(bytes([0x9F])) not in allowed  # a continuation byte cannot start
    assert m.accept_token(vocab.index("😀".encode()[:3]))
    rest = _allowed(m, tiny_info.vocab_size)
    assert rest == {i for i, tok in enumerate(vocab) if tok == bytes([0x80])}


def test_accept_rejects_without_state_change(tiny_info) -> None:
    compiled = GrammarCompiler(tiny_info).compile_regex(r"ab")
    vocab = tiny_info.decoded_vocab
    m = GrammarMatcher(compiled)
    assert not m.accept_token(vocab.index(b"b"))
    assert not m.accept_token(EOS)
    assert not m.accept_token(SPECIAL)
    assert not m.accept_token(10**9)
    assert not m.accept_token(len(vocab) + 5)  # padding id
    assert m.accept_token(vocab.index(b"a"))
    assert not m.is_completed()
    assert m.accept_token(vocab.index(b"b"))
    assert m.is_completed() and not m.is_terminated()
    assert _allowed(m, tiny_info.vocab_size) == {EOS}
    assert m.accept_token(EOS)
    assert m.is_terminated()
    assert not m.accept_token(vocab.index(b"a"))
    m.rollback(1)
    assert not m.is_terminated() and m.is_completed()
    m.rollback(2)
    assert m.state == compiled.start_state
    with pytest.raises(ValueError):
        m.rollback(1)


def test_rollback_restores_masks(tiny_info) -> None:
    compiled = GrammarCompiler(tiny_info).compile_regex(r"[a-z]+( [a-z]+)*")
    rng = random.Random(3)
    m = GrammarMatcher(compiled)
    masks = [_allowed(m, tiny_info.vocab_size)]
    path = []
    for _ in range(6):
        allowed = sorted(masks[-1] - {EOS})
        t = rng.choice(allowed)
        assert m.accept_token(t)
        path.append(t)
        masks.append(_allowed(m, tiny_info.vocab_size))
    for k in range(6, 0, -1):
        m.rollback(1)
        assert _allowed(m, tiny_info.vocab_size) == masks[k - 1]
    m.reset()
    assert _allowed(m, tiny_info.vocab_size) == masks[0]


def test_accept_string_and_jump_forward(tiny_info) -> None:
    compiled = GrammarCompiler(tiny_info).compile_regex(r"\{\"name\": \"[a-z]+\"\}")
    m = GrammarMatcher(compiled)
    assert m.find_jump_forward_string() == '{"name": "'
    assert m.accept_string('{"name": "')
    assert m.find_jump_forward_string() == ""
    assert not m.accept_string("X")
    assert m.accept_string("abc")
    assert m.accept_string('"')
    assert m.find_jump_forward_string() == "}"
    m.rollback(1)
    assert m.find_jump_forward_string() == ""


def test_choices(tiny_info) -> None:
    choices = ["red", "green", "gre", "blue é", "😀"]
    compiled = GrammarCompiler(tiny_info).compile_choices(choices)
    vocab = tiny_info.decoded_vocab
    pattern = "|".join(regex_escape(c) for c in choices)
    rng = random.Random(1)
    for _ in range(10):
        m = GrammarMatcher(compiled)
        text = b""
        while True:
            got = _allowed(m, tiny_info.vocab_size)
            exp, unknown = _expected(pattern, text, vocab)
            assert got - unknown == exp
            opts = sorted(got - {EOS})
            if not opts or (EOS in got and rng.random() < 0.5):
                break
            t = rng.choice(opts)
            m.accept_token(t)
            text += vocab[t]
        assert m.is_completed()
        assert text.decode() in choices


def regex_escape(s: str) -> str:
    import re

    return re.escape(s)


def test_masks_padding_and_shape(tiny_info) -> None:
    compiled = GrammarCompiler(tiny_info).compile_regex(r".+")
    m = GrammarMatcher(compiled)
    bm = allocate_token_bitmask(2, tiny_info.vocab_size)
    m.fill_next_token_bitmask(bm, 1)
    assert np.all(bm[0] == -1)  # other rows untouched
    assert np.array_equal(bm[1], m.next_token_mask())
    wide = np.full((2, bm.shape[1] + 3), -1, dtype=np.int32)  # extra words are cleared
    m.fill_next_token_bitmask(wide, 0)
    assert np.array_equal(wide[0, : bm.shape[1]], bm[1]) and not wide[0, bm.shape[1] :].any()
    assert np.all(wide[1] == -1)
    flat = np.full(bm.shape[1], -1, dtype=np.int32)  # a single row
    m.fill_next_token_bitmask(flat)
    assert np.array_equal(flat, bm[1])
    row = bitmask_to_bool(bm[1:], bm.shape[1] * 32)[0]
    assert not row[len(tiny_info.decoded_vocab) :].any()  # padding ids never allowed
    assert not row[SPECIAL]
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(np.zeros((1, 2), dtype=np.int32))
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(np.zeros((1, bm.shape[1]), dtype=np.int64))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hypothesis_random_patterns(tiny_info, data) -> None:
    atoms = st.sampled_from(["a", "b", "x", "[a-c]", r"\d", ".", "é", "[^ab]", "(ab|b)", "😀", "-"])
    quant = st.sampled_from(["", "", "*", "+", "?", "{1,2}", "{2}"])
    piece = st.tuples(atoms, quant).map("".join)
    branch = st.lists(piece, min_size=1, max_size=4).map("".join)
    pattern = data.draw(st.lists(branch, min_size=1, max_size=3).map("|".join))
    compiled = GrammarCompiler(tiny_info, cache_enabled=False).compile_regex(pattern)
    vocab = tiny_info.decoded_vocab
    m = GrammarMatcher(compiled)
    text = b""
    for _ in range(5):
        got = _allowed(m, tiny_info.vocab_size)
        exp, unknown = _expected(pattern, text, vocab)
        assert got - unknown == exp, (pattern, text)
        opts = sorted(got - {EOS})
        if not opts:
            break
        t = data.draw(st.sampled_from(opts))
        assert m.accept_token(t)
        text += vocab[t]


def test_compiled_grammar_pickles(tiny_info) -> None:
    import pickle

    compiled = GrammarCompiler(tiny_info).compile_regex(r"\d+(\.\d+)?")
    clone = pickle.loads(pickle.dumps(compiled))
    a, b = GrammarMatcher(compiled), GrammarMatcher(clone)
    for s in ["1", "2", ".", "5"]:
        assert a.accept_string(s) and b.accept_string(s)
        assert _allowed(a, tiny_info.vocab_size) == _allowed(b, tiny_info.vocab_size)


def test_precompute_equals_lazy(tiny_info) -> None:
    lazy = GrammarCompiler(tiny_info, cache_enabled=False).compile_regex(
        r"(25[0-5]|2[0-4]\d|1?\d?\d)(\.\d+){0,3}"
    )
    eager = GrammarCompiler(tiny_info, precompute=True, cache_enabled=False).compile_regex(
        r"(25[0-5]|2[0-4]\d|1?\d?\d)(\.\d+){0,3}"
    )
    for s in range(lazy.num_states):
        assert np.array_equal(lazy.token_mask(s), eager.token_mask(s))
