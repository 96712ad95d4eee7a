"""Bad model paths give a typed error with the path, before any model library is imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokensieve import TokensieveError, VocabularyError
from tokensieve.runtime import ModelLoadError, convert_model, load_model


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="no such file or folder") as info:
        load_model(tmp_path / "nope.gguf")
    assert isinstance(info.value, VocabularyError) and isinstance(info.value, TokensieveError)
    assert "nope.gguf" in str(info.value)


def test_file_that_is_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_text("hello")
    with pytest.raises(ModelLoadError, match="not a GGUF file"):
        load_model(path)
    with pytest.raises(ModelLoadError, match="not a GGUF file"):
        convert_model(path)


def test_folder_without_config(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="config.json"):
        load_model(tmp_path)


def test_broken_gguf_and_broken_folder(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(range(256)))
    with pytest.raises(ModelLoadError, match="cannot read this GGUF file"):
        load_model(broken, cache_dir=tmp_path / "cache", progress=False)
    # the failed conversion left no folder behind
    assert [p.name for p in (tmp_path / "cache" / "models").iterdir() if not p.name.endswith(".lock")] == []
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(ModelLoadError, match="cannot load this model"):
        load_model(folder, progress=False)
