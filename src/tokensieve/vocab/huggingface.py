"""Hugging Face tokenizers: ``tokenizer.json`` files and in-memory tokenizer objects.

``tokenizer.json`` is read as plain JSON (no ``tokenizers`` or ``transformers``
needed): the model's vocabulary (``BPE``, ``WordPiece``, ``WordLevel`` or
``Unigram``), the ``added_tokens``, and the ``decoder``, which says how a token's
text becomes bytes (see :mod:`tokensieve.vocab.hf_decoders`). Added tokens
marked ``special`` are special (``b""``); other added tokens go through the
decoder like every token, as ``tokenizers`` does when it decodes.

``tokenizer.json`` does not say which token ends a sequence; when the file sits
in a model folder, ``tokenizer_config.json`` (``eos_token``),
``generation_config.json`` and ``config.json`` (``eos_token_id``, an id or a
list) are read for it, and ``config.json``'s ``vocab_size`` (the size of the
model's logits, often padded) becomes the default vocabulary size.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import VocabularyError
from .common import MAX_VOCAB_SIZE, LoadedVocab, PathLike, check_token_id
from .hf_decoders import compile_decoder
from .json_file import read_json
from .sentencepiece_model import parse_sentencepiece

__all__ = ["is_tokenizer_json", "load_tokenizer_json", "parse_tokenizer_json", "load_hf_object"]


def is_tokenizer_json(obj: object) -> bool:
    """Whether a parsed JSON document looks like a ``tokenizer.json``.

    Parameters
    ----------
    obj
        The parsed JSON.

    Returns
    -------
    bool
        True for a mapping with a ``model`` mapping.
    """
    return isinstance(obj, Mapping) and isinstance(obj.get("model"), Mapping)


def load_tokenizer_json(path: PathLike, data: Any = None) -> LoadedVocab:
    """Read a ``tokenizer.json`` file (or the one in a folder) and its model folder's configs.

    Parameters
    ----------
    path
        The file, or a folder holding ``tokenizer.json``.
    data
        The file's parsed JSON when the caller has already read it.

    Returns
    -------
    LoadedVocab

    Raises
    ------
    VocabularyError
        When a file cannot be read or the vocabulary is inconsistent.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "tokenizer.json"
    if data is None:
        data = read_json(p)
    name = p.parent.name if p.name == "tokenizer.json" and p.parent.name else p.stem
    loaded = parse_tokenizer_json(data, source=str(p), name=name)
    _read_configs(loaded, p.parent)
    return loaded


def parse_tokenizer_json(data: Any, *, source: str = "<tokenizer.json>", name: str = "") -> LoadedVocab:
    """Build the vocabulary of a parsed ``tokenizer.json`` document.

    Parameters
    ----------
    data
        The parsed JSON.
    source
        Where it comes from, for error messages.
    name
        The vocabulary's name.

    Returns
    -------
    LoadedVocab
        Without EOS ids (``tokenizer.json`` has none); special tokens named
        like end-of-generation tokens still become stop tokens.

    Raises
    ------
    VocabularyError
        On missing keys, ids that are negative, too large or repeated, or an
        unsupported decoder.
    """
    if not is_tokenizer_json(data):
        raise VocabularyError(f"{source}: not a tokenizer.json (expected an object with a 'model' object)")
    texts = _model_vocab(data["model"], source)
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise VocabularyError(f"{source}: added_tokens must be a list")
    special: set[int] = set()
    added_ids: set[int] = set()
    for k, entry in enumerate(added):
        try:
            token_id, content = entry["id"], entry["content"]
        except (TypeError, KeyError) as e:
            raise VocabularyError(f"{source}: added_tokens[{k}] lacks 'id' or 'content'") from e
        token_id = _check_new_id(token_id, source, f"added_tokens[{k}] id")
        if token_id in added_ids:
            raise VocabularyError(f"{source}: id {token_id} appears twice in added_tokens")
        if not isinstance(content, str):
            raise VocabularyError(f"{source}: added_tokens[{k}] content must be a string")
        added_ids.add(token_id)
        if token_id >= len(texts):
            texts.extend([None] * (token_id + 1 - len(texts)))
        texts[token_id] = content
        if entry.get("special", False):
            special.add(token_id)

    decode = compile_decoder(data.get("decoder"), source)
    loaded = LoadedVocab([], special, source=source, name=name)
    tokens = loaded.tokens
    for i, text in enumerate(texts):
        if text is None or i in special:
            tokens.append(b"")
            if text is not None:
                loaded.special_text[i] = text
            continue
        try:
            tokens.append(decode(text))
        except UnicodeEncodeError as e:
            raise VocabularyError(f"{source}: token {i} ({text!r}) is not valid Unicode text") from e
    return loaded


def _check_new_id(value: object, source: str, what: str) -> int:
    return check_token_id(value, MAX_VOCAB_SIZE, source, what)


def _model_vocab(model: Mapping[str, Any], source: str) -> list[str | None]:
    """Token texts by id from the ``model`` section (``None`` for ids without a token)."""
    vocab = model.get("vocab")
    kind = model.get("type")
    if isinstance(vocab, list) and kind in (None, "Unigram"):
        texts: list[str | None] = []
        for i, entry in enumerate(vocab):
            piece = entry[0] if isinstance(entry, list) and entry else entry
            if not isinstance(piece, str):
                raise VocabularyError(f"{source}: model.vocab[{i}] is not a [piece, score] pair: {entry!r}")
            texts.append(piece)
        if len(texts) > MAX_VOCAB_SIZE:
            raise VocabularyError(
                f"{source}: {len(texts)} tokens is more than the supported {MAX_VOCAB_SIZE}"
            )
        return texts
    if isinstance(vocab, Mapping) and kind in (None, "BPE", "WordPiece", "WordLevel"):
        size = 0
        for text, token_id in vocab.items():
            _check_new_id(token_id, source, f"model.vocab id of {text!r}")
            size = max(size, token_id + 1)
        by_id: list[str | None] = [None] * size
        for text, token_id in vocab.items():
            if by_id[token_id] is not None:
                raise VocabularyError(
                    f"{source}: duplicate id {token_id} in model.vocab ({by_id[token_id]!r} and {text!r})"
                )
            by_id[token_id] = text
        return by_id
    if vocab is None:
        raise VocabularyError(f"{source}: model.vocab is missing")
    raise VocabularyError(f"{source}: unsupported model type {kind!r} with a {type(vocab).__name__} vocab")


def _read_configs(loaded: LoadedVocab, folder: Path) -> None:
    """Add the EOS ids and the logits' size named by the configuration files beside a tokenizer."""
    config = folder / "tokenizer_config.json"
    if config.is_file():
        data = read_json(config)
        token = data.get("eos_token") if isinstance(data, Mapping) else None
        if isinstance(token, Mapping):
            token = token.get("content")
        if token is not None:
            loaded.add_eos([_id_of(loaded, str(token), config)], f"{config.name} eos_token")
    for name in ("generation_config.json", "config.json"):
        path = folder / name
        if not path.is_file():
            continue
        data = read_json(path)
        if not isinstance(data, Mapping):
            raise VocabularyError(f"{path}: expected a JSON object")
        value = data.get("eos_token_id")
        if value is not None:
            loaded.add_eos(value if isinstance(value, list) else [value], f"{name} eos_token_id")
        size = data.get("vocab_size") if name == "config.json" else None
        if isinstance(size, int) and not isinstance(size, bool):
            loaded.model_vocab_size = size


def _id_of(loaded: LoadedVocab, text: str, where: Path) -> int:
    for token_id, special in loaded.special_text.items():
        if special == text:
            return token_id
    encoded = text.encode("utf-8")
    for token_id, data in enumerate(loaded.tokens):
        if data == encoded:
            return token_id
    raise VocabularyError(f"{where}: eos_token {text!r} is not a token of {loaded.source}")


def load_hf_object(tokenizer: Any) -> LoadedVocab:
    """Read the vocabulary of an in-memory Hugging Face tokenizer.

    Parameters
    ----------
    tokenizer
        A ``tokenizers.Tokenizer``, or a ``transformers`` tokenizer backed by
        one (``backend_tokenizer``) or by a SentencePiece model (``sp_model``).

    Returns
    -------
    LoadedVocab
        With the EOS id and special ids the tokenizer object declares, and,
        when its ``name_or_path`` is a local model folder, what that folder's
        configuration files add.

    Raises
    ------
    VocabularyError
        For objects of another kind.
    """
    kind = type(tokenizer).__name__
    source = f"<{type(tokenizer).__module__}.{kind}>"
    backend = tokenizer if _is_tokenizers_object(tokenizer) else _attribute(tokenizer, "backend_tokenizer")
    if backend is not None and _is_tokenizers_object(backend):
        loaded = parse_tokenizer_json(json.loads(backend.to_str()), source=source, name=_name(tokenizer))
    else:
        sp_model = _attribute(tokenizer, "sp_model")
        if sp_model is None or not hasattr(sp_model, "serialized_model_proto"):
            raise VocabularyError(
                f"cannot read a vocabulary from a {kind}: expected a tokenizers.Tokenizer or a transformers "
                "tokenizer with a tokenizers backend or a SentencePiece model"
            )
        loaded = parse_sentencepiece(sp_model.serialized_model_proto(), source=source, name=_name(tokenizer))
    if backend is tokenizer:
        return loaded

    special_ids = _attribute(tokenizer, "all_special_ids") or []
    for token_id in special_ids:
        token_id = check_token_id(token_id, len(loaded.tokens), source, "special token id")
        if token_id not in loaded.special_ids:
            loaded.special_ids.add(token_id)
            loaded.special_text[token_id] = loaded.tokens[token_id].decode("utf-8", "replace")
            loaded.tokens[token_id] = b""
    eos = _attribute(tokenizer, "eos_token_id")
    if eos is not None:
        loaded.add_eos(eos if isinstance(eos, list) else [eos], "eos_token_id")
    folder = _attribute(tokenizer, "name_or_path")
    if isinstance(folder, str) and folder and Path(folder).is_dir():
        _read_configs(loaded, Path(folder))
    return loaded


def _is_tokenizers_object(obj: Any) -> bool:
    return callable(getattr(obj, "to_str", None)) and callable(getattr(obj, "get_vocab_size", None))


def _attribute(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # properties of slow tokenizers may raise instead of returning None
        return None


def _name(tokenizer: Any) -> str:
    name = _attribute(tokenizer, "name_or_path")
    return Path(name).name if isinstance(name, str) and name else ""
