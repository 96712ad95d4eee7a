"""Mistral's Tekken tokenizer files (``tekken_*.json`` from ``mistral-common``).

Layout of the file::

    {"config": {"default_num_special_tokens": N, "default_vocab_size": V, ...},
     "vocab": [{"rank": r, "token_bytes": "<base64>", "token_str": ...}, ...],
     "special_tokens": [{"rank": r, "token_str": "</s>", "is_control": true}, ...]}

Token ids ``0 .. N-1`` are the special (control) tokens, ``N + r`` the
byte-level token of rank ``r``; only the first ``V - N`` ranks are used.
``special_tokens`` is optional in older files: mistral-common then uses its
twenty historical special tokens (``<unk>``, ``<s>``, ``</s>``, ``[INST]``, ...)
and fills the rest with ``<SPECIAL_i>``; so does this loader. The stop token is
``</s>``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import VocabularyError
from .common import MAX_VOCAB_SIZE, LoadedVocab, PathLike
from .json_file import read_json

__all__ = ["load_tekken", "parse_tekken", "is_tekken"]

#: mistral-common's special tokens for files that do not list their own.
DEFAULT_SPECIAL_TOKENS: tuple[str, ...] = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)
_EOS = "</s>"

# strict base64 (reject characters outside the alphabet); the fast binascii form exists from 3.11
_decode_base64: Callable[[str], bytes] = (
    functools.partial(binascii.a2b_base64, strict_mode=True)
    if sys.version_info >= (3, 11)
    else functools.partial(base64.b64decode, validate=True)
)


def is_tekken(obj: object) -> bool:
    """Whether a parsed JSON document looks like a Tekken tokenizer file.

    Parameters
    ----------
    obj
        The parsed JSON.

    Returns
    -------
    bool
        True for a mapping with a ``vocab`` list and a ``config`` mapping.
    """
    return (
        isinstance(obj, Mapping)
        and isinstance(obj.get("vocab"), list)
        and isinstance(obj.get("config"), Mapping)
    )


def load_tekken(path: PathLike) -> LoadedVocab:
    """Read a Tekken JSON file.

    Parameters
    ----------
    path
        The ``tekken_*.json`` file.

    Returns
    -------
    LoadedVocab

    Raises
    ------
    VocabularyError
        When the file cannot be read or is not a consistent Tekken file.
    """
    p = Path(path)
    return parse_tekken(read_json(p), source=str(p), name=p.stem)


def parse_tekken(data: Any, *, source: str = "<tekken>", name: str = "") -> LoadedVocab:
    """Build the vocabulary of a parsed Tekken JSON document.

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

    Raises
    ------
    VocabularyError
        On missing keys, malformed entries, ranks that are out of range or
        repeated, or a configured vocabulary size the file cannot fill.
    """
    if not is_tekken(data):
        raise VocabularyError(
            f"{source}: not a Tekken file (expected an object with 'vocab' list and 'config')"
        )
    config = data["config"]
    num_special = _config_int(config, "default_num_special_tokens", source)
    entries = data["vocab"]
    vocab_size = config.get("default_vocab_size", num_special + len(entries))
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise VocabularyError(f"{source}: config.default_vocab_size must be an integer, got {vocab_size!r}")
    inner = vocab_size - num_special
    if inner < 0 or inner > len(entries):
        raise VocabularyError(
            f"{source}: config.default_vocab_size {vocab_size} does not fit {num_special} special tokens "
            f"and {len(entries)} ranks"
        )
    if vocab_size > MAX_VOCAB_SIZE:
        raise VocabularyError(
            f"{source}: vocabulary size {vocab_size} is more than the supported {MAX_VOCAB_SIZE}"
        )

    loaded = LoadedVocab([b""] * vocab_size, set(range(num_special)), source=source, name=name)
    names = _special_names(data.get("special_tokens"), num_special, source)
    loaded.special_text.update(names)
    tokens = loaded.tokens
    seen = [False] * len(entries)
    a2b = _decode_base64
    for index, entry in enumerate(entries):
        try:
            rank = entry["rank"]
            encoded = entry["token_bytes"]
        except (TypeError, KeyError) as e:
            raise VocabularyError(
                f"{source}: vocab entry {index} lacks 'rank' or 'token_bytes': {entry!r}"
            ) from e
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < len(entries):
            raise VocabularyError(
                f"{source}: vocab entry {index} has rank {rank!r}, outside 0..{len(entries) - 1}"
            )
        if seen[rank]:
            raise VocabularyError(f"{source}: rank {rank} appears twice in vocab")
        seen[rank] = True
        if rank >= inner:
            continue
        try:
            tokens[num_special + rank] = a2b(encoded)
        except (binascii.Error, TypeError, ValueError) as e:
            raise VocabularyError(
                f"{source}: vocab entry {index} (rank {rank}) has invalid base64 token_bytes"
            ) from e
    eos = [i for i, text in names.items() if text == _EOS]
    loaded.add_eos(eos, "special token </s>")
    return loaded


def _config_int(config: Mapping[str, Any], key: str, source: str) -> int:
    if key not in config:
        raise VocabularyError(f"{source}: config.{key} is missing")
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise VocabularyError(f"{source}: config.{key} must be a non-negative integer, got {value!r}")
    return value


def _special_names(listed: Any, num_special: int, source: str) -> dict[int, str]:
    names: dict[int, str] = {}
    if listed is None:
        names = dict(enumerate(DEFAULT_SPECIAL_TOKENS[:num_special]))
    else:
        if not isinstance(listed, list):
            raise VocabularyError(f"{source}: special_tokens must be a list")
        for k, entry in enumerate(listed):
            try:
                rank, text = entry["rank"], entry["token_str"]
            except (TypeError, KeyError) as e:
                raise VocabularyError(f"{source}: special_tokens[{k}] lacks 'rank' or 'token_str'") from e
            if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < num_special:
                raise VocabularyError(
                    f"{source}: special_tokens[{k}] has rank {rank!r}, outside the {num_special} special ids"
                )
            if rank in names:
                raise VocabularyError(f"{source}: special token rank {rank} appears twice")
            names[rank] = str(text)
    for i in range(num_special):
        names.setdefault(i, f"<SPECIAL_{i}>")
    return names
