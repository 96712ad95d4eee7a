"""Recognising a tokenizer file (or model folder) and reading it with the right loader."""

from __future__ import annotations

from pathlib import Path

from ..errors import VocabularyError
from .common import LoadedVocab, PathLike
from .gguf_loader import load_gguf
from .huggingface import is_tokenizer_json, load_tokenizer_json
from .json_file import read_json
from .sentencepiece_model import load_sentencepiece
from .tekken import is_tekken, parse_tekken

__all__ = ["load_file"]

# looked for, in this order, in a folder
_FOLDER_FILES = ("tokenizer.json", "tekken.json", "tokenizer.model")


def load_file(path: PathLike) -> LoadedVocab:
    """Read the vocabulary in a tokenizer file or a model folder.

    Recognised by content, not by name: a GGUF file (magic ``GGUF``), a JSON
    document that is a ``tokenizer.json`` (has ``model``) or a Tekken file (has
    ``vocab`` and ``config``), or else a SentencePiece ``ModelProto``. A folder
    is read through the first of ``tokenizer.json``, ``tekken.json``,
    ``tokenizer.model`` it holds, or its only ``.gguf`` file.

    Parameters
    ----------
    path
        The file or folder.

    Returns
    -------
    LoadedVocab

    Raises
    ------
    VocabularyError
        When the path does not exist, a folder holds no tokenizer, or the file
        is of no known format or is broken.
    """
    p = Path(path)
    if p.is_dir():
        return _load_folder(p)
    if not p.exists():
        raise VocabularyError(f"{p}: no such file or directory")
    try:
        with open(p, "rb") as f:
            head = f.read(64)
    except OSError as e:
        raise VocabularyError(f"{p}: cannot read file: {e}") from e
    if not head:
        raise VocabularyError(f"{p}: the file is empty")
    if head.startswith(b"GGUF"):
        return load_gguf(p)
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith((b"{", b"[")) or p.suffix.lower() == ".json":
        data = read_json(p)
        if is_tokenizer_json(data):
            return load_tokenizer_json(p, data)
        if is_tekken(data):
            return parse_tekken(data, source=str(p), name=p.stem)
        raise VocabularyError(
            f"{p}: JSON of no known tokenizer format (expected a tokenizer.json with 'model' "
            "or a Tekken file with 'vocab' and 'config')"
        )
    try:
        return load_sentencepiece(p)
    except VocabularyError as e:
        reason = str(e).removeprefix(f"{p}: ")
        raise VocabularyError(
            f"{p}: not a recognised tokenizer file (not GGUF, not JSON, and {reason})"
        ) from e


def _load_folder(folder: Path) -> LoadedVocab:
    for name in _FOLDER_FILES:
        candidate = folder / name
        if candidate.is_file():
            return load_file(candidate)
    ggufs = sorted(folder.glob("*.gguf"))
    if len(ggufs) == 1:
        return load_gguf(ggufs[0])
    found = f"{len(ggufs)} .gguf files" if ggufs else "nothing"
    raise VocabularyError(
        f"{folder}: no tokenizer in this folder (looked for {', '.join(_FOLDER_FILES)} "
        f"or a single .gguf file; found {found})"
    )
