"""The vocabulary stored in a GGUF model file's ``tokenizer.ggml.*`` metadata.

``tokenizer.ggml.model`` says how tokens are spelled:

* ``"gpt2"`` (byte-level BPE): normal tokens are in the GPT-2 byte-level alphabet;
* ``"llama"`` (SentencePiece BPE) and ``"t5"`` (SentencePiece unigram): ``▁`` for
  a space (kept when leading, see :mod:`tokensieve.vocab.pieces`) and
  ``<0xNN>`` byte tokens.

``tokenizer.ggml.token_type`` classifies each token as llama.cpp does: 1 normal,
2 unknown, 3 control, 4 user-defined (its text as is), 5 unused, 6 byte; 0
(undefined), unknown, control and unused tokens render as nothing in llama.cpp
and are special here. Stop tokens are ``eos_token_id``, ``eot_token_id`` and
``eom_token_id`` where present, plus the usual end-of-generation control tokens
(:data:`tokensieve.vocab.common.END_OF_GENERATION_TOKENS`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import VocabularyError
from .byte_level import decode_byte_level
from .common import MAX_VOCAB_SIZE, LoadedVocab, PathLike
from .gguf_reader import read_gguf_metadata
from .pieces import byte_fallback_value, decode_metaspace

__all__ = ["load_gguf"]

_TOKENS = "tokenizer.ggml.tokens"
_TYPES = "tokenizer.ggml.token_type"
_MODEL = "tokenizer.ggml.model"
_STOP_KEYS = ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id")

UNDEFINED, NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = range(7)
_SPELLINGS = {"gpt2": "byte_level", "llama": "sentencepiece", "t5": "sentencepiece"}


def load_gguf(path: PathLike) -> LoadedVocab:
    """Read the tokenizer of a GGUF file.

    Parameters
    ----------
    path
        The ``.gguf`` file.

    Returns
    -------
    LoadedVocab

    Raises
    ------
    VocabularyError
        When the file is not GGUF, has no tokenizer, uses a tokenizer model
        other than ``gpt2``/``llama``/``t5``, or its metadata is inconsistent.
    """
    p = Path(path)
    source = str(p)
    meta = read_gguf_metadata(p, arrays=(_TOKENS, _TYPES))
    model = meta.get(_MODEL)
    if model is None:
        raise VocabularyError(f"{source}: GGUF file has no tokenizer ({_MODEL} is missing)")
    if not isinstance(model, str) or model not in _SPELLINGS:
        raise VocabularyError(
            f"{source}: unsupported GGUF tokenizer model {model!r} (supported: {', '.join(sorted(_SPELLINGS))})"
        )
    texts = meta.get(_TOKENS)
    if not isinstance(texts, list) or not texts:
        raise VocabularyError(f"{source}: {_TOKENS} is missing, empty or not an array of strings")
    n = len(texts)
    if n > MAX_VOCAB_SIZE:
        raise VocabularyError(f"{source}: {n} tokens is more than the supported {MAX_VOCAB_SIZE}")
    types = _token_types(meta, n, source)

    loaded = LoadedVocab([], source=source, name=p.stem)
    tokens = loaded.tokens
    byte_level = _SPELLINGS[model] == "byte_level"
    spell = decode_byte_level if byte_level else decode_metaspace
    for i, (text, kind) in enumerate(zip(texts, types.tolist(), strict=True)):
        if kind == NORMAL:
            tokens.append(spell(text))
        elif kind == USER_DEFINED:
            tokens.append(text.encode("utf-8", "surrogateescape"))
        elif kind == BYTE:
            value = byte_fallback_value(text)
            if value is None:
                raise VocabularyError(
                    f"{source}: token {i} has type byte (6) but its text {text!r} is not <0xNN>"
                )
            tokens.append(bytes((value,)))
        elif kind in (UNDEFINED, UNKNOWN, CONTROL, UNUSED):
            tokens.append(b"")
            loaded.special_ids.add(i)
            loaded.special_text[i] = text
        else:
            raise VocabularyError(f"{source}: token {i} ({text!r}) has unknown token type {kind}")
    arch = meta.get("general.architecture")
    logits = meta.get(f"{arch}.vocab_size") if isinstance(arch, str) else None
    if isinstance(logits, int) and not isinstance(logits, bool):
        loaded.model_vocab_size = logits
    for key in _STOP_KEYS:
        value = meta.get(key)
        if value is not None:
            loaded.add_eos([value], key)
    return loaded


def _token_types(meta: dict[str, object], n: int, source: str) -> np.ndarray:
    types = meta.get(_TYPES)
    if types is None:
        # old files: every token normal except the declared control tokens
        out = np.full(n, NORMAL, dtype=np.int64)
        for key in (
            "tokenizer.ggml.bos_token_id",
            "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.unknown_token_id",
        ):
            value = meta.get(key)
            if isinstance(value, int) and 0 <= value < n:
                out[value] = CONTROL
        return out
    if not isinstance(types, np.ndarray) or types.dtype.kind not in "iu":
        raise VocabularyError(f"{source}: {_TYPES} is not an array of integers")
    if len(types) != n:
        raise VocabularyError(f"{source}: {_TYPES} has {len(types)} entries but {_TOKENS} has {n}")
    return types.astype(np.int64)
