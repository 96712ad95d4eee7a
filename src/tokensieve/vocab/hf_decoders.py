"""Per-token versions of the decoders in a Hugging Face ``tokenizer.json``.

A ``tokenizers`` decoder turns the list of token strings of a whole output into
text. What the vocabulary needs is what one token adds in the middle of an
output, so each decoder step is applied to a token on its own, as the
``decode_chain`` of ``tokenizers`` does, with two exceptions that only concern
the ends of the whole output:

* the first-token rules (``Metaspace`` dropping the leading space of the first
  token, ``Strip`` applied after ``Fuse`` to the fused text) are not applied;
  see :mod:`tokensieve.vocab.pieces` for the leading-space rule;
* steps after ``Fuse`` that only strip the ends of the text are skipped.

Once a step has produced raw bytes (``ByteLevel``, or ``ByteFallback`` on a
``<0xNN>`` token), later string steps leave them alone. Without a decoder a
token adds its own text (``tokenizers`` would join tokens with spaces, an
artefact no generative model relies on). ``CTC`` and unknown decoder types are
rejected, since no per-token reading of them exists.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import VocabularyError
from .byte_level import decode_byte_level
from .pieces import SPACE_SYMBOL, byte_fallback_value

__all__ = ["TokenDecoder", "compile_decoder"]

#: A function from a token's text to the bytes it adds to the output.
TokenDecoder = Callable[[str], bytes]
_Step = Callable[[str], "str | bytes"]

# tokenizers' WordPiece cleanup, applied per token after the space is added
_CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def compile_decoder(spec: Any, source: str) -> TokenDecoder:
    """Build the per-token decoder for a ``tokenizer.json`` ``decoder`` entry.

    Parameters
    ----------
    spec
        The ``decoder`` value (a mapping, or ``None`` for no decoder).
    source
        The file, for error messages.

    Returns
    -------
    TokenDecoder
        Maps a token's text to its bytes. Raises ``UnicodeEncodeError`` for a
        text holding a lone surrogate; the caller reports which token.

    Raises
    ------
    VocabularyError
        For an unsupported or malformed decoder.
    """
    try:
        steps = _steps(spec, source, fused=False, out=[])
    except RecursionError as e:
        raise VocabularyError(f"{source}: decoder nested too deeply") from e
    if not steps:
        return _utf8
    if len(steps) == 1 and steps[0] is decode_byte_level:
        return decode_byte_level

    def decode(token: str) -> bytes:
        value: str | bytes = token
        for step in steps:
            value = step(value)  # type: ignore[arg-type]
            if isinstance(value, bytes):
                return value
        return _utf8(value)  # type: ignore[arg-type]

    return decode


def _steps(spec: Any, source: str, fused: bool, out: list[_Step]) -> list[_Step]:
    if spec is None:
        return out
    if not isinstance(spec, Mapping) or not isinstance(spec.get("type"), str):
        raise VocabularyError(f"{source}: malformed decoder {spec!r}")
    kind = spec["type"]
    try:
        if kind == "Sequence":
            for sub in spec["decoders"]:
                _steps(sub, source, fused, out)
                fused = fused or _contains_fuse(sub)
        elif kind == "ByteLevel":
            out.append(decode_byte_level)
        elif kind == "ByteFallback":
            if not fused:
                out.append(_byte_fallback)
        elif kind == "Fuse":
            pass
        elif kind == "Metaspace":
            out.append(_replace(str(spec.get("replacement", SPACE_SYMBOL)), " "))
        elif kind == "Replace":
            out.append(_replace_step(spec["pattern"], str(spec["content"]), source))
        elif kind == "Strip":
            if not fused:
                out.append(_strip(str(spec["content"]), int(spec["start"]), int(spec["stop"])))
        elif kind == "WordPiece":
            out.append(_wordpiece(str(spec.get("prefix", "##")), bool(spec.get("cleanup", True))))
        elif kind == "BPEDecoder":
            out.append(_replace(str(spec.get("suffix", "</w>")), " "))
        else:
            raise VocabularyError(f"{source}: unsupported decoder type {kind!r}")
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, VocabularyError):
            raise
        raise VocabularyError(f"{source}: malformed {kind} decoder {dict(spec)!r}") from e
    return out


def _contains_fuse(spec: Any) -> bool:
    if not isinstance(spec, Mapping):
        return False
    if spec.get("type") == "Fuse":
        return True
    return spec.get("type") == "Sequence" and any(_contains_fuse(s) for s in spec.get("decoders", ()))


def _byte_fallback(token: str) -> str | bytes:
    value = byte_fallback_value(token)
    return token if value is None else bytes((value,))


def _replace(old: str, new: str) -> _Step:
    if not old:
        raise ValueError("empty pattern")

    def step(token: str) -> str:
        return token.replace(old, new)

    return step


def _replace_step(pattern: Any, content: str, source: str) -> _Step:
    if not isinstance(pattern, Mapping) or len(pattern) != 1:
        raise ValueError(f"bad Replace pattern {pattern!r}")
    if "String" in pattern:
        return _replace(str(pattern["String"]), content)
    if "Regex" in pattern:
        try:
            regex = re.compile(str(pattern["Regex"]))
        except re.error as e:
            raise VocabularyError(
                f"{source}: Replace decoder regex {pattern['Regex']!r} does not compile: {e}"
            ) from e
        literal = content.replace("\\", "\\\\")

        def step(token: str) -> str:
            return regex.sub(literal, token)

        return step
    raise ValueError(f"bad Replace pattern {pattern!r}")


def _strip(content: str, start: int, stop: int) -> _Step:
    def step(token: str) -> str:
        lo = 0
        while lo < start and lo < len(token) and token[lo] == content:
            lo += 1
        hi = len(token)
        while len(token) - hi < stop and hi > lo and token[hi - 1] == content:
            hi -= 1
        return token[lo:hi]

    return step


def _wordpiece(prefix: str, cleanup: bool) -> _Step:
    def step(token: str) -> str:
        token = token[len(prefix) :] if prefix and token.startswith(prefix) else " " + token
        if cleanup:
            for old, new in _CLEANUP:
                token = token.replace(old, new)
        return token

    return step
