"""Reading JSON tokenizer files with errors that name the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import VocabularyError
from .common import PathLike

__all__ = ["read_json"]


def read_json(path: PathLike) -> Any:
    """Parse a JSON file.

    Parameters
    ----------
    path
        The file (UTF-8, with or without a byte-order mark).

    Returns
    -------
    Any
        The parsed document.

    Raises
    ------
    VocabularyError
        When the file cannot be read, is not UTF-8, or is not valid JSON
        (for instance truncated); the message names the file and the position.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise VocabularyError(f"{p}: cannot read file: {e}") from e
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise VocabularyError(f"{p}: not UTF-8 text ({e})") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise VocabularyError(f"{p}: invalid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from e
    except RecursionError as e:
        raise VocabularyError(f"{p}: invalid JSON: nested too deeply") from e
