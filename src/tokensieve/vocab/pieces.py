"""SentencePiece-style pieces: ``▁`` for a space and ``<0xNN>`` byte-fallback tokens.

The leading-space rule
----------------------
A piece such as ``▁world`` adds ``b" world"`` to the text, and tokensieve keeps
that space in the decoded vocabulary. SentencePiece decoders (and the
``Metaspace``/``Strip`` decoders of ``tokenizers``) drop one leading space only
at the very start of the whole output, where the encoder had prepended it; in
the middle of the text the space is really produced. The decoded vocabulary
lists what a token adds mid-text, so a constraint on the generated text sees
the space a ``▁``-token brings, also at its first position (a grammar that
allows no leading space then steers the model to tokens without ``▁``).
"""

from __future__ import annotations

__all__ = ["SPACE_SYMBOL", "byte_fallback_value", "decode_metaspace"]

#: U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's stand-in for a space.
SPACE_SYMBOL = "\u2581"

_HEX = frozenset("0123456789abcdefABCDEF")


def byte_fallback_value(piece: str) -> int | None:
    """The byte a ``<0xNN>`` byte-fallback piece stands for.

    Parameters
    ----------
    piece
        A token's text.

    Returns
    -------
    int or None
        ``0xNN`` when ``piece`` is exactly ``<0x`` + two hex digits + ``>``
        (the form the ``ByteFallback`` decoder of ``tokenizers`` accepts),
        otherwise ``None``.
    """
    if (
        len(piece) == 6
        and piece.startswith("<0x")
        and piece[5] == ">"
        and piece[3] in _HEX
        and piece[4] in _HEX
    ):
        return int(piece[3:5], 16)
    return None


def decode_metaspace(piece: str, replacement: str = SPACE_SYMBOL) -> bytes:
    """The bytes a SentencePiece piece adds in the middle of the text.

    Parameters
    ----------
    piece
        The piece (``"▁world"``).
    replacement
        The character that stands for a space.

    Returns
    -------
    bytes
        ``b" world"``: every ``replacement`` becomes a space, leading ones
        included (see the module docs for why).
    """
    return piece.replace(replacement, " ").encode("utf-8", "surrogateescape")
