"""Fixtures for the vocabulary tests: the real tokenizer files, found by tests/support/real_vocabs.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support import real_vocabs


@pytest.fixture(scope="session")
def tekken_path() -> Path:
    return real_vocabs.tekken_240911_json()


@pytest.fixture(scope="session")
def sp_v1_path() -> Path:
    return real_vocabs.sentencepiece_v1_model()


@pytest.fixture(scope="session")
def sp_v7_path() -> Path:
    return real_vocabs.sentencepiece_v7_model()


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    return real_vocabs.smollm2_gguf()


def _utf8_context(byte: int) -> bytes | None:
    """A valid UTF-8 sequence starting or ending with ``byte`` (None when no sequence holds it)."""
    if byte < 0x80:
        return bytes([byte])
    if byte <= 0xBF:
        return bytes([0xC2, byte])
    if 0xC2 <= byte <= 0xDF:
        return bytes([byte, 0x80])
    if 0xE0 <= byte <= 0xEF:
        return bytes([byte, 0xA0 if byte == 0xE0 else 0x80, 0x80])
    if 0xF0 <= byte <= 0xF4:
        return bytes([byte, 0x90 if byte == 0xF0 else 0x80, 0x80, 0x80])
    return None  # C0, C1 and F5..FF never occur in UTF-8


def check_byte_tokens(
    decode: Callable[[list[int]], str], byte_ids: dict[int, int], decoded_vocab: list[bytes]
) -> int:
    """Check byte-fallback tokens against a tokenizer's own decoder.

    A token for a byte >= 0x80 decodes alone to U+FFFD, so each byte is decoded
    inside a valid UTF-8 sequence made of byte tokens, and the character must
    come out. Bytes that no UTF-8 text holds (C0, C1, F5..FF) can only be
    checked against the piece's ``<0xNN>`` spelling, which the caller does.

    Parameters
    ----------
    decode
        The tokenizer's decode (ids to text), applied mid-text (after a
        prefix) so that no start-of-output rule strips a space.
    byte_ids
        Byte value to the id of its byte token.
    decoded_vocab
        The vocabulary under test.

    Returns
    -------
    int
        How many bytes were checked through the decoder.
    """
    checked = 0
    for byte, token_id in byte_ids.items():
        assert decoded_vocab[token_id] == bytes([byte]), (token_id, byte)
        context = _utf8_context(byte)
        if context is None:
            continue
        ids = [byte_ids[b] for b in context]
        assert decode(ids).encode("utf-8") == context, (byte, context)
        assert b"".join(decoded_vocab[i] for i in ids) == context
        checked += 1
    return checked


@pytest.fixture(scope="session")
def byte_token_checker() -> Callable[[Callable[[list[int]], str], dict[int, int], list[bytes]], int]:
    """:func:`check_byte_tokens`, for test modules."""
    return check_byte_tokens
