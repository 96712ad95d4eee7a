"""Packing token lists into mask rows: every path against a per-token reference."""

from __future__ import annotations

import numpy as np
import pytest

from tokensieve._arrays import or_distinct_bits
from tokensieve.bitmask import friendly_zeros


def _reference(base: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    out = base.astype(np.uint64).copy()
    for t in tokens.tolist():
        out[t >> 5] |= 1 << (t & 31)
    return out.astype(np.uint32)


@pytest.mark.parametrize("count", [0, 1, 5, 8, 9, 100, 255, 256, 3000])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_or_distinct_bits_matches_reference(count: int, dtype: type) -> None:
    rng = np.random.default_rng(count)
    tokens = rng.choice(4096 * 32, size=count, replace=False)
    tokens[: min(count, 4)] = [31, 63, 30, 0][: min(count, 4)]  # bit 31 (negative in int32) and shared words
    tokens = np.unique(tokens)
    base = rng.integers(0, 2**32, size=4096, dtype=np.uint64).astype(np.uint32)
    base &= rng.integers(0, 2**32, size=4096, dtype=np.uint64).astype(np.uint32)  # some bits already set
    out = base.view(dtype).copy()
    bits = np.left_shift(np.uint32(1), (tokens & 31).astype(np.uint32)).view(dtype)
    or_distinct_bits(out, tokens >> 5, bits)
    assert np.array_equal(out.view(np.uint32), _reference(base, tokens))


def test_friendly_rows_are_distinct_zeroed_and_aligned() -> None:
    rows = [friendly_zeros(4096) for _ in range(40)] + [friendly_zeros(1000, np.uint32) for _ in range(20)]
    addresses = set()
    for row in rows:
        address = int(row.__array_interface__["data"][0])
        assert address % 64 == 0 and address % 4096 != 0
        assert not row.any() and row.flags.c_contiguous
        addresses.add(address)
        row[:] = 7  # writing one row must not show in another
    assert len(addresses) == len(rows)
    assert all((row == 7).all() for row in rows)


@pytest.mark.parametrize("at_once", [True, False])
def test_rows_packed_from_token_lists_are_exact_with_every_stop_token_where_accepting(
    monkeypatch, at_once: bool
) -> None:
    from support.tiny_vocab import make_tiny_vocab

    from tokensieve import GrammarCompiler
    from tokensieve.compile import mask_cache
    from tokensieve.compile.vocab_cache import mask_builder_for
    from tokensieve.vocab import TokenizerInfo

    if not at_once:  # every batch keeps its token lists, each row packed on first use
        monkeypatch.setattr(mask_cache, "_PACK_AT_ONCE_BYTES", 0)

    vocab = make_tiny_vocab()
    stops = [0, 1, 3, 40]  # three in the first word, one in the second
    info = TokenizerInfo(vocab, vocab_size=len(vocab) + 13, stop_token_ids=stops, special_token_ids=stops)
    compiled = GrammarCompiler(info, precompute=False, cache_enabled=False).compile_regex(r"(ab|c)[0-9]{0,3}")
    builder = mask_builder_for(info)
    seen = set()
    for state in range(compiled.num_states):  # from the start: the states ahead get packed early
        mask = compiled.token_mask(state)
        np.testing.assert_array_equal(mask, builder.compute(compiled.automaton, [state]).mask(0))
        bits = np.unpackbits(mask.view(np.uint8), bitorder="little")
        got = {t for t in stops if bits[t]}
        accepting = compiled.is_accepting(state)
        assert got == (set(stops) if accepting else set()), state
        seen.add(accepting)
    assert seen == {True, False}
