"""The GPT-2 byte-level alphabet: every byte as a printable Unicode character.

Byte-level BPE vocabularies (GPT-2, Llama 3, Qwen, SmolLM2, ...) store each token
as text in which every character stands for one byte: printable ASCII and most of
Latin-1 stand for themselves, the other 68 bytes are shifted to U+0100..U+0143
(so a space is ``Ġ`` and a newline ``Ċ``). The ``ByteLevel`` decoder of Hugging
Face ``tokenizers`` maps a token back character by character; a token holding a
character outside the alphabet (possible for added tokens) is taken as its plain
UTF-8 instead, and :func:`decode_byte_level` follows the same rule.
"""

from __future__ import annotations

__all__ = ["BYTE_TO_CHAR", "CHAR_TO_BYTE", "bytes_to_unicode", "decode_byte_level", "encode_byte_level"]


def bytes_to_unicode() -> dict[int, str]:
    """The GPT-2 map from each byte value to the character that stands for it.

    Returns
    -------
    dict of int to str
        256 entries, one per byte, all distinct printable characters.
    """
    kept = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    mapping: dict[int, str] = {b: chr(b) for b in kept}
    shift = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + shift)
            shift += 1
    return dict(sorted(mapping.items()))


#: ``BYTE_TO_CHAR[b]`` is the character that stands for byte ``b``.
BYTE_TO_CHAR: tuple[str, ...] = tuple(bytes_to_unicode().values())
#: The inverse of :data:`BYTE_TO_CHAR`.
CHAR_TO_BYTE: dict[str, int] = {c: b for b, c in enumerate(BYTE_TO_CHAR)}

# str.translate table: each alphabet character becomes the Latin-1 character of
# its byte; characters below U+0100 that are not in the alphabet become a
# character Latin-1 cannot encode, so the encode step rejects the token.
_OUTSIDE = "\uffff"
_TABLE: dict[int, str] = {cp: _OUTSIDE for cp in range(256)}
_TABLE.update({ord(c): chr(b) for c, b in CHAR_TO_BYTE.items()})


def decode_byte_level(token: str) -> bytes:
    """The bytes a byte-level token stands for.

    Parameters
    ----------
    token
        The token as stored in the vocabulary (``"Ġworld"``).

    Returns
    -------
    bytes
        ``b" world"``. A token with any character outside the byte-level
        alphabet is returned as its own UTF-8 (surrogate escapes pass through
        as the raw bytes they stand for).
    """
    try:
        return token.translate(_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        return token.encode("utf-8", "surrogateescape")


def encode_byte_level(data: bytes) -> str:
    """The byte-level text that stands for ``data`` (inverse of :func:`decode_byte_level`).

    Parameters
    ----------
    data
        Any bytes.

    Returns
    -------
    str
        One alphabet character per byte.
    """
    return "".join(BYTE_TO_CHAR[b] for b in data)
