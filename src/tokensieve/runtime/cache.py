"""The on-disk cache of converted models.

A GGUF file is converted once into an ordinary Hugging Face model folder
(``config.json``, ``model.safetensors``, tokenizer files) under
``<cache root>/models/<name>-<key>``, where the key hashes the GGUF file's
resolved path, size and modification time: replacing the file makes a new
entry. The folder is written under a temporary name beside its final place
and renamed when complete, so a reader never sees half a conversion, and a
lock file keeps two processes from converting the same file at once.

The cache root is ``$TOKENSIEVE_CACHE`` when set, else
``$XDG_CACHE_HOME/tokensieve``, else ``~/.cache/tokensieve``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["CACHE_FORMAT", "MARKER_FILE", "cache_root", "converted_dir", "ensure_converted", "is_converted"]

logger = logging.getLogger("tokensieve")

#: Bumped when the layout of a converted folder changes; old entries are then ignored.
CACHE_FORMAT = 1

#: Written last into a converted folder; its presence marks the folder complete.
MARKER_FILE = "tokensieve-conversion.json"


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder that holds tokensieve's caches.

    Parameters
    ----------
    cache_dir
        An explicit folder; overrides the environment.

    Returns
    -------
    pathlib.Path
        ``cache_dir``, else ``$TOKENSIEVE_CACHE``, else ``$XDG_CACHE_HOME/tokensieve``,
        else ``~/.cache/tokensieve`` (not created here).
    """
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("TOKENSIEVE_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "tokensieve"


def _source_key(source: Path) -> tuple[str, dict[str, object]]:
    resolved = source.resolve()
    st = resolved.stat()
    info: dict[str, object] = {
        "source": str(resolved),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "format": CACHE_FORMAT,
    }
    digest = hashlib.sha256(json.dumps(info, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return digest, info


def converted_dir(source: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the conversion of ``source`` lives (whether or not it exists yet).

    Parameters
    ----------
    source
        The GGUF file (it must exist: its size and modification time are part of the key).
    cache_dir
        The cache root (see :func:`cache_root`).

    Returns
    -------
    pathlib.Path
        ``<cache root>/models/<file stem>-<16 hex digits>``.
    """
    src = Path(source)
    digest, _ = _source_key(src)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", src.stem)[:80] or "model"
    return cache_root(cache_dir) / "models" / f"{stem}-{digest}"


def is_converted(folder: Path) -> bool:
    """Whether ``folder`` is a complete conversion (its marker file exists)."""
    return (folder / MARKER_FILE).is_file()


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (no-op where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def ensure_converted(
    source: str | os.PathLike[str],
    convert: Callable[[Path], None],
    cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[Path, bool]:
    """Return the converted folder of ``source``, running ``convert`` if it is missing.

    Parameters
    ----------
    source
        The file to convert.
    convert
        Writes the conversion into the (empty, existing) folder it is given.
        Called at most once per cache entry across processes.
    cache_dir
        The cache root (see :func:`cache_root`).

    Returns
    -------
    tuple of (pathlib.Path, bool)
        The folder, and whether this call converted it.

    Raises
    ------
    OSError
        When the cache cannot be written. A failed conversion leaves nothing
        behind but the exception ``convert`` raised.
    """
    src = Path(source)
    final = converted_dir(src, cache_dir)
    if is_converted(final):
        return final, False
    final.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(final.parent / f".{final.name}.lock"):
        if is_converted(final):  # another process finished it while we waited
            return final, False
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
        try:
            convert(tmp)
            _, info = _source_key(src)
            info["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            (tmp / MARKER_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
            if final.exists():  # an incomplete leftover (no marker): replace it
                shutil.rmtree(final)
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    logger.info("converted %s into %s", src, final)
    return final, True
