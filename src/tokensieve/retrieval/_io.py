"""Uncompressed ``.npz`` files whose members can be memory-mapped.

``np.savez`` stores each array as an uncompressed zip member; ``np.load`` does
not map members of an ``.npz``, so :func:`load_npz` finds each member's data
offset in the zip's local header and maps it with :class:`numpy.memmap`.
"""

from __future__ import annotations

import struct
import zipfile

import numpy as np

from ._errors import CatalogError

__all__ = ["load_npz", "save_npz"]


def save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` (uncompressed, so they can be mapped)."""
    with open(path, "wb") as fh:
        np.savez(fh, **{name: np.ascontiguousarray(a) for name, a in arrays.items()})  # type: ignore[arg-type]


def load_npz(path: str, *, mmap: bool) -> dict[str, np.ndarray]:
    """Read every array of an ``.npz``; map stored members read-only when ``mmap``."""
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise CatalogError(f"cannot read index file {path!r}: {exc}") from exc
    out: dict[str, np.ndarray] = {}
    with zf, open(path, "rb") as fh:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            name = info.filename[: -len(".npy")]
            if mmap and info.compress_type == zipfile.ZIP_STORED:
                out[name] = _map_member(path, fh, info)
            else:
                with zf.open(info) as member:
                    out[name] = np.lib.format.read_array(member, allow_pickle=False)
    return out


def _map_member(path: str, fh, info: zipfile.ZipInfo) -> np.ndarray:
    fh.seek(info.header_offset)
    header = fh.read(30)
    if header[:4] != b"PK\x03\x04":
        raise CatalogError(f"{path!r}: corrupt zip member {info.filename}")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    fh.seek(info.header_offset + 30 + name_len + extra_len)
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    if dtype.hasobject:
        raise CatalogError(f"{path!r}: member {info.filename} holds Python objects")
    offset = fh.tell()
    if int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype=dtype)
    mapped = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C")
    return np.asarray(mapped)  # a plain ndarray view: no memmap subclass overhead per call
