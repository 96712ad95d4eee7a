"""Index files: uncompressed ``.npz`` (memory-mappable) and Parquet (via pyarrow).

:func:`write_index` and :func:`read_index` turn an index's step tables into
named arrays and back; the functions below store those arrays.

``np.savez`` stores each array as an uncompressed zip member; ``np.load`` does
not map members of an ``.npz``, so :func:`load_npz` finds each member's data
offset in the zip's local header and maps it with :class:`numpy.memmap`.

A Parquet file holds one row; every array is a column of type
``large_list<T>`` (its flattened values, typed), and the schema metadata key
``tokensieve.static_index`` records each array's shape and dtype. Parquet
pages are encoded, so a Parquet index is decoded into memory on load.
"""

from __future__ import annotations

import json
import struct
import zipfile
from typing import Any

import numpy as np

from ._build import Layout
from ._errors import CatalogError
from ._tables import StepTables

__all__ = ["load_npz", "load_parquet", "read_index", "save_npz", "save_parquet", "write_index"]

_FORMAT_VERSION = 1

_PARQUET_KEY = b"tokensieve.static_index"


def write_index(path: str, t: StepTables) -> None:
    """Write an index's arrays to ``path`` (``.npz``, else Parquet)."""
    arrays: dict[str, np.ndarray] = {
        "row_ptr": t.row_ptr,
        "edge_token": t.edge_token,
        "level_start": t.layout.level_start,
        "level_width": t.layout.level_width,
        "item_rank": np.zeros(0, dtype=np.int32) if t.layout.item_rank is None else t.layout.item_rank,
        "meta": np.array(
            [
                _FORMAT_VERSION,
                t.vocab_size,
                -1 if t.eos is None else t.eos,
                t.dense_depth,
                t.max_length,
                t.num_unique,
                t.num_sequences,
                t.layout.item_rank is not None,
            ],
            dtype=np.int64,
        ),
    }
    for d, (m, c) in enumerate(zip(t.dense_mask, t.layout.dense_child, strict=True)):
        arrays[f"dense_mask_{d}"] = m
        arrays[f"dense_child_{d}"] = c
    if path.endswith(".npz"):
        save_npz(path, arrays)
    else:
        save_parquet(path, arrays)


def read_index(path: str, *, mmap: bool) -> tuple[Layout, dict[str, Any]]:
    """The layout written by :func:`write_index` and the index's other arguments (by keyword).

    Raises
    ------
    CatalogError
        When the file cannot be read, holds no saved index, or another format version.
    """
    if path.endswith((".parquet", ".pq")):
        arrays = load_parquet(path, mmap=mmap)
    else:
        arrays = load_npz(path, mmap=mmap)
    try:
        meta = [int(x) for x in arrays["meta"]]
        version, vocab, eos, dense_depth, max_length, num_unique, num_sequences, has_items = meta
        masks = [arrays[f"dense_mask_{d}"] for d in range(dense_depth)]
        children = [arrays[f"dense_child_{d}"] for d in range(dense_depth)]
        layout = Layout(
            row_ptr=arrays["row_ptr"],
            edge_token=arrays["edge_token"],
            level_start=np.asarray(arrays["level_start"]),
            level_width=np.asarray(arrays["level_width"]),
            item_rank=arrays["item_rank"] if has_items else None,
            dense_mask=masks,
            dense_child=children,
            num_unique=num_unique,
            num_sequences=num_sequences,
        )
    except (KeyError, ValueError) as exc:
        raise CatalogError(f"{path!r} is not a saved StaticIndex: {exc}") from exc
    if version != _FORMAT_VERSION:
        raise CatalogError(f"unsupported index format version {version} (expected {_FORMAT_VERSION})")
    args = {
        "vocab_size": vocab,
        "eos_token": None if eos < 0 else eos,
        "dense_depth": dense_depth,
        "max_length": max_length,
    }
    return layout, args


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError(
            "Parquet index files need pyarrow: pip install pyarrow (or use a .npz path)"
        ) from exc
    return pa, pq


def save_parquet(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` as one Parquet row (one typed list column per array)."""
    pa, pq = _pyarrow()
    columns = []
    layout: dict[str, Any] = {}
    for name, a in arrays.items():
        arr = np.ascontiguousarray(a)
        flat = arr.reshape(-1)
        offsets = pa.array(np.array([0, flat.size], dtype=np.int64))
        columns.append(pa.LargeListArray.from_arrays(offsets, pa.array(flat)))
        layout[name] = {"shape": list(arr.shape), "dtype": arr.dtype.str}
    table = pa.Table.from_arrays(columns, names=list(arrays))
    table = table.replace_schema_metadata({_PARQUET_KEY: json.dumps(layout).encode()})
    pq.write_table(table, path, compression="zstd", use_dictionary=False)


def load_parquet(path: str, *, mmap: bool) -> dict[str, np.ndarray]:
    """Read every array of a Parquet file written by :func:`save_parquet`."""
    pa, pq = _pyarrow()
    try:
        table = pq.read_table(path, memory_map=mmap)
    except (OSError, pa.ArrowException) as exc:
        raise CatalogError(f"cannot read index file {path!r}: {exc}") from exc
    meta = table.schema.metadata or {}
    if _PARQUET_KEY not in meta:
        raise CatalogError(f"{path!r} is not a saved StaticIndex: no {_PARQUET_KEY.decode()} metadata")
    try:
        layout = json.loads(meta[_PARQUET_KEY])
        out: dict[str, np.ndarray] = {}
        for name, info in layout.items():
            dtype = np.dtype(info["dtype"])
            if dtype.hasobject:
                raise ValueError(f"column {name} has dtype {dtype}")
            column = table.column(name).combine_chunks()
            values = column.flatten().to_numpy(zero_copy_only=False)
            out[name] = np.ascontiguousarray(values, dtype=dtype).reshape(info["shape"])
    except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:
        raise CatalogError(f"{path!r} is not a saved StaticIndex: {exc}") from exc
    return out


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
