"""The conversion cache: keys, atomic writes, one conversion across concurrent callers."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tokensieve.runtime.cache import MARKER_FILE, cache_root, converted_dir, ensure_converted, is_converted


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "weights" / "Tiny Model.Q4.gguf"
    path.parent.mkdir()
    path.write_bytes(b"GGUF" + bytes(60))
    return path


def _writer(calls: list[Path], delay: float = 0.0):  # type: ignore[no-untyped-def]
    def convert(out: Path) -> None:
        calls.append(out)
        time.sleep(delay)
        (out / "config.json").write_text("{}")

    return convert


def test_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOKENSIEVE_CACHE", str(tmp_path / "a"))
    assert cache_root() == tmp_path / "a"
    assert cache_root(tmp_path / "b") == tmp_path / "b"
    monkeypatch.delenv("TOKENSIEVE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "tokensieve"


def test_converted_dir_is_keyed_by_path_size_and_mtime(source: Path, tmp_path: Path) -> None:
    first = converted_dir(source, tmp_path / "cache")
    assert first.parent == tmp_path / "cache" / "models"
    assert first.name.startswith("Tiny_Model.Q4-")
    assert converted_dir(source, tmp_path / "cache") == first
    st = source.stat()
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert converted_dir(source, tmp_path / "cache") != first


def test_converts_once_then_reuses(source: Path, tmp_path: Path) -> None:
    calls: list[Path] = []
    folder, converted = ensure_converted(source, _writer(calls), tmp_path / "cache")
    assert converted and len(calls) == 1
    assert is_converted(folder) and (folder / "config.json").is_file() and (folder / MARKER_FILE).is_file()
    again, converted_again = ensure_converted(source, _writer(calls), tmp_path / "cache")
    assert again == folder and not converted_again and len(calls) == 1
    # only the final folder and the lock file are left
    leftovers = sorted(p.name for p in folder.parent.iterdir())
    assert leftovers == sorted([folder.name, f".{folder.name}.lock"])


def test_failed_conversion_leaves_nothing(source: Path, tmp_path: Path) -> None:
    def broken(out: Path) -> None:
        (out / "half.bin").write_bytes(b"x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        ensure_converted(source, broken, tmp_path / "cache")
    folder = converted_dir(source, tmp_path / "cache")
    assert not folder.exists()
    assert [p.name for p in folder.parent.iterdir()] == [f".{folder.name}.lock"]


def test_incomplete_folder_is_replaced(source: Path, tmp_path: Path) -> None:
    folder = converted_dir(source, tmp_path / "cache")
    folder.mkdir(parents=True)
    (folder / "stale.bin").write_bytes(b"x")
    calls: list[Path] = []
    got, converted = ensure_converted(source, _writer(calls), tmp_path / "cache")
    assert got == folder and converted
    assert not (folder / "stale.bin").exists() and is_converted(folder)


def test_concurrent_callers_convert_once(source: Path, tmp_path: Path) -> None:
    calls: list[Path] = []
    results: list[tuple[Path, bool]] = []

    def run() -> None:
        results.append(ensure_converted(source, _writer(calls, delay=0.2), tmp_path / "cache"))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len({folder for folder, _ in results}) == 1
    assert sorted(converted for _, converted in results) == [False, False, True]
