"""The GPT-2 byte-level alphabet against the ``tokenizers`` ByteLevel decoder."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokensieve.vocab.byte_level import BYTE_TO_CHAR, CHAR_TO_BYTE, decode_byte_level, encode_byte_level

tokenizers = pytest.importorskip("tokenizers")


def test_alphabet_matches_tokenizers() -> None:
    assert len(set(BYTE_TO_CHAR)) == 256
    assert set(BYTE_TO_CHAR) == set(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    assert BYTE_TO_CHAR[ord(" ")] == "Ġ" and BYTE_TO_CHAR[ord("\n")] == "Ċ" and BYTE_TO_CHAR[ord("a")] == "a"
    assert all(CHAR_TO_BYTE[c] == b for b, c in enumerate(BYTE_TO_CHAR))


def test_every_byte_against_the_decoder() -> None:
    decoder = tokenizers.decoders.ByteLevel()
    # each char alone (ASCII) and, for high bytes, inside a valid UTF-8 sequence
    for b in range(128):
        assert decoder.decode([BYTE_TO_CHAR[b]]).encode() == bytes([b]) == decode_byte_level(BYTE_TO_CHAR[b])
    for text in ["é", "€", "😀", "日本", "\u0100\u07ff"]:
        data = text.encode()
        tokens = [BYTE_TO_CHAR[b] for b in data]
        assert decoder.decode(tokens) == text
        assert b"".join(decode_byte_level(t) for t in tokens) == data


@pytest.mark.parametrize(
    "token",
    ["Ġhello", "ĠĠ", "Ċ", "âĤ¬", "é€", "a b", "<|im_start|>", "Ġ😀", "ä¸Ń"],
)
def test_tokens_against_the_decoder(token: str) -> None:
    """Tokens with characters outside the alphabet are taken as plain UTF-8, as tokenizers does."""
    decoder = tokenizers.decoders.ByteLevel()
    expected = decoder.decode(["a", token])[1:]
    ours = decode_byte_level(token)
    assert ours.decode("utf-8", "replace") == expected


def test_partial_utf8_token() -> None:
    assert decode_byte_level("âĤ") == "€".encode()[:2]
    assert decode_byte_level("¬") == b"\xac"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_round_trip(data: bytes) -> None:
    assert decode_byte_level(encode_byte_level(data)) == data
