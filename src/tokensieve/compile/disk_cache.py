"""A size-bounded on-disk cache of compiled grammars, so a second process starts warm.

Entries are keyed by a SHA-256 of (format version, what was compiled, the
vocabulary's hash and size, the limits). Each is one file written atomically
(temporary file, then rename); when the folder grows past ``max_bytes`` the
least recently used entries are removed. Entries are pickles read with a
restricted unpickler that only builds numpy arrays and plain containers, so a
tampered cache file cannot run code; an unreadable entry is treated as a miss
and removed.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["DiskCache", "cache_key"]

logger = logging.getLogger("tokensieve")

FORMAT_VERSION = 3

_ALLOWED = {
    ("builtins", "frozenset"),
    ("builtins", "set"),
    ("builtins", "tuple"),
    ("builtins", "list"),
    ("builtins", "dict"),
    ("builtins", "bytes"),
    ("builtins", "bytearray"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("collections", "OrderedDict"),
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a cache entry")


def cache_key(*parts: object) -> str:
    """A hex SHA-256 of the parts' ``repr`` (with the cache format version)."""
    h = hashlib.sha256(f"tokensieve-cache-v{FORMAT_VERSION}".encode())
    for part in parts:
        data = part if isinstance(part, bytes) else repr(part).encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class DiskCache:
    """Compiled-grammar snapshots in a folder.

    Parameters
    ----------
    directory
        The folder (created when missing).
    max_bytes
        Total size kept; least recently used entries are removed beyond it.
    """

    def __init__(self, directory: str | os.PathLike[str], max_bytes: int = 512 << 20) -> None:
        self.directory = Path(directory)
        self.max_bytes = int(max_bytes)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.tsg"

    def get(self, key: str) -> Any | None:
        """The stored snapshot, or None when missing or unreadable."""
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            value = _SafeUnpickler(io.BytesIO(data)).load()
        except Exception as exc:  # a damaged entry is a miss
            logger.warning("dropping unreadable cache entry %s: %s", path.name, exc)
            path.unlink(missing_ok=True)
            return None
        try:
            os.utime(path)
        except OSError:
            pass
        return value

    def put(self, key: str, snapshot: Any) -> None:
        """Store a snapshot (plain containers and numpy arrays only)."""
        data = pickle.dumps(snapshot, protocol=pickle.HIGHEST_PROTOCOL)
        if len(data) > self.max_bytes:
            return
        fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self._path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._evict()

    def _evict(self) -> None:
        entries = []
        total = 0
        for p in self.directory.glob("*.tsg"):
            try:
                st = p.stat()
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, p))
            total += st.st_size
        entries.sort()
        while total > self.max_bytes and entries:
            _, size, p = entries.pop(0)
            p.unlink(missing_ok=True)
            total -= size

    def clear(self) -> None:
        """Remove every entry."""
        for p in self.directory.glob("*.tsg"):
            p.unlink(missing_ok=True)
