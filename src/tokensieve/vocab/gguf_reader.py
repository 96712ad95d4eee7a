"""Reading the key/value metadata at the head of a GGUF file.

A GGUF file starts with ``b"GGUF"``, a version, the tensor and key/value counts,
then the key/value pairs; the tensor data follows and is never touched here.
Only the pairs asked for are decoded (string arrays such as the 49k tokens of a
vocabulary become a list of ``str``; numeric arrays a numpy array); the others
are skipped, the BPE merges included. That keeps loading a vocabulary from a
multi-gigabyte model file to a few tens of milliseconds, where the ``gguf``
package's ``GGUFReader`` also indexes every tensor and every array element.

Versions 2 and 3 are read, in either byte order. Every read is bounds-checked;
a truncated or inconsistent file raises :class:`~tokensieve.errors.VocabularyError`.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import VocabularyError
from .common import PathLike

__all__ = ["read_gguf_metadata"]

_MAGIC = b"GGUF"
(
    _UINT8,
    _INT8,
    _UINT16,
    _INT16,
    _UINT32,
    _INT32,
    _FLOAT32,
    _BOOL,
    _STRING,
    _ARRAY,
    _UINT64,
    _INT64,
    _FLOAT64,
) = range(13)
_MAX_NESTING = 8
# value type -> (struct code, numpy dtype code)
_SCALARS: dict[int, tuple[str, str]] = {
    _UINT8: ("B", "u1"),
    _INT8: ("b", "i1"),
    _UINT16: ("H", "u2"),
    _INT16: ("h", "i2"),
    _UINT32: ("I", "u4"),
    _INT32: ("i", "i4"),
    _FLOAT32: ("f", "f4"),
    _BOOL: ("?", "?"),
    _UINT64: ("Q", "u8"),
    _INT64: ("q", "i8"),
    _FLOAT64: ("d", "f8"),
}


class _Cursor:
    """Bounds-checked sequential reads from a buffer."""

    def __init__(self, buf: Any, order: str, source: str) -> None:
        self.buf = buf
        self.size = len(buf)
        self.pos = 0
        self.order = order
        self.source = source

    def fail(self, what: str) -> VocabularyError:
        return VocabularyError(f"{self.source}: {what} (at byte {self.pos} of {self.size})")

    def need(self, n: int, what: str) -> None:
        if n < 0 or n > self.size - self.pos:
            raise self.fail(f"truncated GGUF file: {what} needs {n} bytes")

    def scalar(self, code: str, what: str) -> Any:
        size = struct.calcsize(code)
        self.need(size, what)
        (value,) = struct.unpack_from(self.order + code, self.buf, self.pos)
        self.pos += size
        return value

    def raw_string(self, what: str) -> bytes:
        length = self.scalar("Q", what)
        self.need(length, what)
        data: bytes = self.buf[self.pos : self.pos + length]
        self.pos += length
        return data

    def string(self, what: str) -> str:
        return self.raw_string(what).decode("utf-8", "surrogateescape")

    def skip_strings(self, count: int, what: str) -> None:
        self.need(count * 8, what)
        unpack = struct.Struct(self.order + "Q").unpack_from
        buf, pos, size = self.buf, self.pos, self.size
        for _ in range(count):
            if pos + 8 > size:
                self.pos = pos
                raise self.fail(f"truncated GGUF file in {what}")
            (length,) = unpack(buf, pos)
            pos += 8 + length
        if pos > size:
            self.pos = size
            raise self.fail(f"truncated GGUF file in {what}")
        self.pos = pos

    def strings(self, count: int, what: str) -> list[str]:
        self.need(count * 8, what)
        unpack = struct.Struct(self.order + "Q").unpack_from
        buf, pos, size = self.buf, self.pos, self.size
        out: list[str] = []
        append = out.append
        for _ in range(count):
            if pos + 8 > size:
                self.pos = pos
                raise self.fail(f"truncated GGUF file in {what}")
            (length,) = unpack(buf, pos)
            pos += 8
            if length > size - pos:
                self.pos = pos
                raise self.fail(f"truncated GGUF file in {what}")
            append(buf[pos : pos + length].decode("utf-8", "surrogateescape"))
            pos += length
        self.pos = pos
        return out


def read_gguf_metadata(path: PathLike, arrays: Collection[str] = ()) -> dict[str, Any]:
    """Read the key/value metadata of a GGUF file.

    Parameters
    ----------
    path
        The ``.gguf`` file.
    arrays
        Keys whose array values are decoded. Other arrays are skipped and
        appear in the result as ``None``; scalar values are always decoded.

    Returns
    -------
    dict
        Key to value: ``str``, ``int``, ``float``, ``bool``, ``list[str]``
        (string arrays), a numpy array (numeric arrays) or ``None``.

    Raises
    ------
    VocabularyError
        When the file cannot be read, is not GGUF, has an unsupported version,
        or is truncated or malformed.
    """
    p = Path(path)
    source = str(p)
    try:
        with open(p, "rb") as f:
            size = f.seek(0, 2)
            if size < 24:
                raise VocabularyError(f"{source}: not a GGUF file (only {size} bytes)")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return _read(buf, source, frozenset(arrays))
    except OSError as e:
        raise VocabularyError(f"{source}: cannot read GGUF file: {e}") from e


def _read(buf: Any, source: str, arrays: frozenset[str]) -> dict[str, Any]:
    if buf[:4] != _MAGIC:
        raise VocabularyError(f"{source}: not a GGUF file (magic {bytes(buf[:4])!r}, expected {_MAGIC!r})")
    (version,) = struct.unpack_from("<I", buf, 4)
    order = "<"
    if version & 0xFFFF == 0:  # written big-endian
        order = ">"
        (version,) = struct.unpack_from(">I", buf, 4)
    if version not in (2, 3):
        raise VocabularyError(f"{source}: unsupported GGUF version {version} (2 and 3 are supported)")
    cur = _Cursor(buf, order, source)
    cur.pos = 8
    cur.scalar("Q", "tensor count")
    kv_count = cur.scalar("Q", "key/value count")
    # every pair takes at least 8 (key length) + 4 (type) bytes
    cur.need(kv_count * 12, f"{kv_count} key/value pairs")
    out: dict[str, Any] = {}
    for _ in range(kv_count):
        key = cur.string("a metadata key")
        vtype = cur.scalar("I", f"the type of {key!r}")
        out[key] = _value(cur, vtype, key, key in arrays)
    return out


def _value(cur: _Cursor, vtype: int, key: str, want_array: bool, depth: int = 0) -> Any:
    if vtype in _SCALARS:
        return cur.scalar(_SCALARS[vtype][0], f"the value of {key!r}")
    if vtype == _STRING:
        return cur.string(f"the value of {key!r}")
    if vtype != _ARRAY:
        raise cur.fail(f"metadata key {key!r} has unknown value type {vtype}")
    etype = cur.scalar("I", f"the element type of {key!r}")
    count = cur.scalar("Q", f"the length of {key!r}")
    if etype == _STRING:
        if want_array:
            return cur.strings(count, f"the strings of {key!r}")
        cur.skip_strings(count, f"the strings of {key!r}")
        return None
    if etype in _SCALARS:
        dtype = np.dtype(cur.order + _SCALARS[etype][1])
        nbytes = count * dtype.itemsize
        cur.need(nbytes, f"the values of {key!r}")
        value = (
            np.frombuffer(cur.buf, dtype=dtype, count=count, offset=cur.pos).copy() if want_array else None
        )
        cur.pos += nbytes
        return value
    if etype == _ARRAY:
        # nested arrays: no tokenizer key uses them; skip element by element
        if depth >= _MAX_NESTING:
            raise cur.fail(f"metadata key {key!r} nests arrays deeper than {_MAX_NESTING}")
        for _ in range(count):
            _value(cur, _ARRAY, key, False, depth + 1)
        return None
    raise cur.fail(f"metadata key {key!r} is an array of unknown type {etype}")
