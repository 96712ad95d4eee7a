"""A size-bounded folder of built automata, so that a second process starts warm.

:class:`~tokensieve.GrammarCompiler` (``cache_dir=``) keeps here what the
front ends and the automaton stage built for a constraint (a
:class:`~tokensieve.automata.dfa.ByteDFA` or a
:class:`~tokensieve.automata.pushdown.RuleNetwork`, and the keywords reported
unenforced); token masks are computed again in the new process, as they would
be after a compile.

Entries are keyed by a SHA-256 of the cache format, a digest of the code that
builds automata, what was compiled (kind, source, options), the vocabulary's
hash and the limits. Each entry is one file: a magic number, the SHA-256 of its
key, the SHA-256 of the key and payload, the payload. It is written to a temporary file in the same folder and
renamed into place (``os.replace``), so concurrent writers and readers see a
whole entry or none. A truncated or altered entry fails its checksum and is a
miss (removed, then built and written again), and so is a whole entry found
under another key's name (copied or renamed there), which would otherwise give
another constraint's automaton. Payloads are pickles read by an
unpickler that builds only numpy arrays, plain containers and the automaton
classes, so a planted file cannot run code. Past ``max_bytes`` the least
recently used entries are removed, and so are temporary files older than ten
minutes (a writer killed before its rename leaves one).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import pickle
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["DiskCache", "cache_key"]

logger = logging.getLogger("tokensieve")

FORMAT_VERSION = 5
_MAGIC = b"TSGC\x05\x00\x00\x00"
_DIGEST = 32
_STALE_TMP_S = 600.0

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
    ("tokensieve.automata.dfa", "ByteDFA"),
    ("tokensieve.automata.dfa", "_from_edges"),
    ("tokensieve.automata.blank_chains", "BlankChains"),
    ("tokensieve.automata.layers", "LayerCopies"),
    ("tokensieve.automata.layers", "Unit"),
    ("tokensieve.automata.pushdown", "RuleNetwork"),
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a cache entry")


@cache
def code_digest() -> str:
    """A SHA-256 of the source of the stages that build automata (front ends, automata, compile).

    Part of every key, so that entries written by other code are never read.
    """
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    files = [root / "limits.py"]
    for folder in ("grammar", "automata", "compile"):
        files.extend(sorted((root / folder).rglob("*.py")))
    for path in files:
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def cache_key(*parts: object) -> str:
    """A hex SHA-256 of the parts' ``repr`` (bytes as they are), the cache format and :func:`code_digest`."""
    h = hashlib.sha256(f"tokensieve-cache-v{FORMAT_VERSION}-{code_digest()}".encode())
    for part in parts:
        data = part if isinstance(part, bytes) else repr(part).encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _key_tag(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def _checksum(tag: bytes, payload: bytes | memoryview) -> bytes:
    h = hashlib.sha256(tag)
    h.update(payload)
    return h.digest()


class DiskCache:
    """Built automata in a folder, shared by processes.

    Parameters
    ----------
    directory
        The folder (created when missing).
    max_bytes
        Total size of the entries kept; least recently used entries are
        removed beyond it (an entry larger than it is not written).

    Attributes
    ----------
    hits, misses
        Lookups that found a whole entry, and those that did not (missing,
        truncated, altered or unreadable), in this process.
    """

    def __init__(self, directory: str | os.PathLike[str], max_bytes: int = 1 << 30) -> None:
        self.directory = Path(directory).expanduser()
        self.max_bytes = int(max_bytes)
        if self.max_bytes < 0:
            raise ValueError(f"max_bytes must be at least 0, not {max_bytes!r}")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0

    def path(self, key: str) -> Path:
        """The file of the entry ``key``."""
        return self.directory / f"{key}.tsg"

    def get(self, key: str) -> Any | None:
        """The stored value, or None when missing, damaged or unreadable (a damaged entry is removed)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        tag = _key_tag(key)
        head = len(_MAGIC) + 2 * _DIGEST
        payload = memoryview(data)[head:]
        try:
            if data[: len(_MAGIC)] != _MAGIC or len(data) < head:
                raise ValueError("not a cache entry of this format")
            if data[len(_MAGIC) : len(_MAGIC) + _DIGEST] != tag:
                raise ValueError("the entry of another key")
            if _checksum(tag, payload) != data[len(_MAGIC) + _DIGEST : head]:
                raise ValueError("checksum mismatch (truncated or altered)")
            value = _SafeUnpickler(io.BytesIO(payload)).load()
        except Exception as exc:  # a damaged entry is a miss
            logger.warning("dropping unreadable cache entry %s: %s", path.name, exc)
            path.unlink(missing_ok=True)
            self.misses += 1
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:
            pass
        self.hits += 1
        return value

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (plain containers, numpy arrays and automata) under ``key``."""
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        if len(payload) + len(_MAGIC) + 2 * _DIGEST > self.max_bytes:
            return
        tag = _key_tag(key)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC)
                f.write(tag)
                f.write(_checksum(tag, payload))
                f.write(payload)
            os.replace(tmp, self.path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._evict()

    def _evict(self) -> None:
        now = time.time()
        for p in self.directory.glob(".*.tmp"):  # left by a writer that died before its rename
            try:
                if now - p.stat().st_mtime > _STALE_TMP_S:
                    p.unlink(missing_ok=True)
            except OSError:
                continue
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
