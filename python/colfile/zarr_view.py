"""A read-only zarr v3 view of a colfile File, without a copy of the data.

:class:`ColfileStore` is a zarr store over a File: its metadata documents
(``zarr.json``) are made from the File's columns, groups and attributes
when the store is opened, and each chunk is assembled, when zarr asks for
it, from the byte ranges of the blobs that hold its rows (read by colfile,
so checksums and torn-column checks apply as to any read).  Nothing is
written anywhere; writes through the store raise
:class:`~colfile.ReadOnlyError`.

:func:`to_zarr` returns the view as a read-only :class:`zarr.Group`, and
``xr.open_zarr(ColfileStore(path))`` reads it with xarray.

The mapping (docs/zarr.md):

* a column is an array of shape ``(rows,)`` (``(rows, nmemb)`` for a
  vector column), of the column's dtype, byte order included (the ``bytes``
  codec's ``endian``), without compression; fixed-length byte strings
  (``S<n>``) are zarr's ``null_terminated_bytes``;
* the installed zarr has only regular chunk grids, so bigfile's uneven
  blobs are served through a regular grid: the chunk is the blob size when
  every blob but the last has the same number of rows, the largest blob
  otherwise, capped at ``chunk_bytes``; a chunk that spans blobs is
  assembled from each blob's byte range;
* groups (directories) are zarr groups, and so are header-only blocks
  (bigfile's ``Header``), holding their attributes; a column's and a group's
  attributes are the array's and the group's attributes, the File's those
  of the root group; numbers and arrays become JSON numbers and lists
  (a complex value a ``[real, imag]`` pair);
* dimension names follow the ``colfile`` xarray engine: ``row`` (``row_<n>``
  in a group holding columns of several lengths) and ``<name>_component``;
* the root ``zarr.json`` carries consolidated metadata, so opening the
  view reads no further document.

Needs zarr 3 (``pip install colfile[zarr]``).
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from collections.abc import AsyncIterator, Iterable
from typing import Any

import numpy as np
import zarr
from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, Store, \
    SuffixByteRequest
from zarr.codecs import BytesCodec
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype
from zarr.storage import MemoryStore

from .column import Column
from .errors import ReadOnlyError
from .file import File, Group

__all__ = ["ColfileStore", "to_zarr", "CHUNK_BYTES"]

#: The largest chunk the view serves, in bytes (whole rows; at least a row).
CHUNK_BYTES = 64 << 20

_CHUNK_KEY = re.compile(r"^(?P<array>.+)/c/(?P<row>\d+)(?:/(?P<comp>\d+))?$")


def _json_value(value: Any) -> Any:
    """A colfile attribute value as JSON (numbers, strings and lists)."""
    if isinstance(value, np.ndarray):
        return [_json_value(v) for v in value.tolist()] if value.ndim else _json_value(value[()])
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _attrs(am: Any) -> dict[str, Any]:
    return {key: _json_value(am[key]) for key in am}


def _chunk_rows(col: Column, chunk_bytes: int) -> int:
    """Rows per chunk: the blob size if the blobs are even (the last one may
    be short), the largest blob otherwise, at most ``chunk_bytes``."""
    blobs = [r for r in col.blob_rows if r > 0]
    if not blobs:
        return 1
    rows = blobs[0] if all(r == blobs[0] for r in blobs[:-1]) and blobs[-1] <= blobs[0] \
        else max(blobs)
    row_bytes = col.dtype.itemsize * col.nmemb
    return max(1, min(rows, chunk_bytes // max(1, row_bytes)))


def _plan(f: Group) -> tuple[list[str], list[str]]:
    """The groups (directories, with or without columns) and the columns of
    ``f``, as paths relative to it."""
    columns = list(f.columns)
    groups: set[str] = set()
    for name in columns:
        parts = name.split("/")
        for i in range(1, len(parts)):
            groups.add("/".join(parts[:i]))
    root = f.path
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        if rel != "." and rel not in columns and not any(rel.startswith(c + "/")
                                                         for c in columns):
            groups.add(rel)
    clash = sorted(groups.intersection(columns))
    if clash:
        raise ValueError(f"{root}: {clash[0]!r} is a column with other columns below it, "
                         "which zarr cannot show (an array has no members)")
    return sorted(groups), columns


class ColfileStore(Store):
    """A read-only zarr v3 store over a colfile :class:`~colfile.File` (or a
    :class:`~colfile.Group`, or the path of a File, opened read-only here
    and closed by :meth:`close`).

    ``chunk_bytes`` caps the size of a chunk (see the module documentation
    for how chunks follow blobs)."""

    supports_writes = False
    supports_deletes = False
    supports_partial_writes = False
    supports_listing = True

    def __init__(self, source: Any, *, chunk_bytes: int = CHUNK_BYTES) -> None:
        super().__init__(read_only=True)
        if isinstance(source, Group):
            self._group, self._owned = source, False
        elif isinstance(source, (str, os.PathLike)):
            self._group, self._owned = File(os.fspath(source), "r"), True
        else:
            raise TypeError("ColfileStore views a path, a colfile.File or a colfile.Group, "
                            f"not {type(source).__name__}")
        if int(chunk_bytes) < 1:
            raise ValueError(f"chunk_bytes must be positive, not {chunk_bytes}")
        self._chunk_bytes = int(chunk_bytes)
        self._lock = threading.Lock()
        self._columns: dict[str, tuple[Column, int]] = {}
        with warnings.catch_warnings():
            # zarr's notes that S<n> and consolidated metadata are not yet in
            # the v3 spec: the view is read by this zarr, which supports both
            warnings.simplefilter("ignore")
            self._meta: dict[str, bytes] = self._metadata()

    # -- metadata -----------------------------------------------------------

    def _metadata(self) -> dict[str, bytes]:
        g = self._group
        mem = MemoryStore()
        groups, columns = _plan(g)
        zarr.create_group(mem, attributes=_attrs(g.attrs), zarr_format=3)
        for name in groups:
            zarr.create_group(mem, path=name, attributes=_attrs(g[name + "/"].attrs),
                              zarr_format=3)
        by_dir: dict[str, dict[str, int]] = {}
        cols: dict[str, Column] = {}
        for name in columns:
            col = g[name]
            if col.kind != "data":
                # a header-only block (bigfile's Header): a group of its attributes
                zarr.create_group(mem, path=name, attributes=_attrs(col.attrs), zarr_format=3)
                continue
            cols[name] = col
            d, _, base = name.rpartition("/")
            by_dir.setdefault(d, {})[base] = col.size
        for name, col in cols.items():
            d, _, base = name.rpartition("/")
            lengths = set(by_dir[d].values())
            rowdim = "row" if len(lengths) <= 1 else f"row_{col.size}"
            self._array(mem, name, base, col, rowdim)
        zarr.consolidate_metadata(mem, zarr_format=3)
        out: dict[str, bytes] = {}
        for key, buf in mem._store_dict.items():
            out[key] = buf.to_bytes()
        return out

    def _array(self, mem: MemoryStore, name: str, base: str, col: Column, rowdim: str) -> None:
        dt = col.dtype
        rows = _chunk_rows(col, self._chunk_bytes)
        shape: tuple[int, ...] = (col.size,)
        chunks: tuple[int, ...] = (rows,)
        dims: tuple[str, ...] = (rowdim,)
        if col.nmemb > 1:
            shape += (col.nmemb,)
            chunks += (col.nmemb,)
            dims += (f"{base}_component",)
        endian = "big" if dt.byteorder == ">" else "little"
        serializer = BytesCodec(endian=endian) if dt.itemsize > 1 else BytesCodec(endian=None)
        fill = b"" if dt.kind == "S" else 0
        zarr.create_array(mem, name=name, shape=shape, chunks=chunks,
                          dtype=dt.newbyteorder("=") if dt.itemsize > 1 else dt,
                          fill_value=fill, compressors=None, filters=None,
                          serializer=serializer, dimension_names=dims,
                          attributes=_attrs(col.attrs), zarr_format=3)
        self._columns[name] = (col, rows)

    # -- the Store interface ------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ColfileStore) and other._group.path == self._group.path \
            and other._group.name == self._group.name and other._chunk_bytes == self._chunk_bytes

    def __repr__(self) -> str:
        return f"ColfileStore({self._group.path!r})"

    def with_read_only(self, read_only: bool = False) -> ColfileStore:
        if not read_only:
            self._refuse("open for writing")
        return self

    def _refuse(self, what: str, key: str = "") -> None:
        where = os.path.join(self._group.path, key) if key else self._group.path
        raise ReadOnlyError(f"{where}: the zarr view of a colfile File is read-only "
                            f"(cannot {what}); write through colfile.File instead")

    def _chunk(self, key: str) -> bytes | None:
        m = _CHUNK_KEY.match(key)
        if m is None or m.group("array") not in self._columns:
            return None
        col, rows = self._columns[m.group("array")]
        i = int(m.group("row"))
        if (m.group("comp") is not None) != (col.nmemb > 1):
            return None
        if m.group("comp") is not None and int(m.group("comp")) != 0:
            return None
        lo = i * rows
        if lo >= col.size:
            return None
        hi = min(col.size, lo + rows)
        with self._lock:  # one column handle, read from zarr's threads
            data = np.ascontiguousarray(col[lo:hi]).tobytes()
        row_bytes = col.dtype.itemsize * col.nmemb
        # zarr's bytes codec wants whole chunks: the last one is padded
        return data + bytes(row_bytes * (rows - (hi - lo)))

    def _value(self, key: str) -> bytes | None:
        meta = self._meta.get(key)
        return meta if meta is not None else self._chunk(key)

    async def get(self, key: str, prototype: BufferPrototype | None = None,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        if prototype is None:
            prototype = default_buffer_prototype()
        value = self._value(key)
        if value is None:
            return None
        if byte_range is not None:
            n = len(value)
            if isinstance(byte_range, RangeByteRequest):
                value = value[byte_range.start:byte_range.end]
            elif isinstance(byte_range, OffsetByteRequest):
                value = value[byte_range.offset:]
            elif isinstance(byte_range, SuffixByteRequest):
                value = value[max(0, n - byte_range.suffix):]
            else:
                raise TypeError(f"unexpected byte range {byte_range!r}")
        return prototype.buffer.from_bytes(value)

    async def get_partial_values(self, prototype: BufferPrototype,
                                 key_ranges: Iterable[tuple[str, ByteRequest | None]]
                                 ) -> list[Buffer | None]:
        return [await self.get(k, prototype, r) for k, r in key_ranges]

    async def exists(self, key: str) -> bool:
        if key in self._meta:
            return True
        m = _CHUNK_KEY.match(key)
        return m is not None and self._chunk_exists(m)

    def _chunk_exists(self, m: re.Match[str]) -> bool:
        entry = self._columns.get(m.group("array"))
        if entry is None:
            return False
        col, rows = entry
        comp_ok = (m.group("comp") == "0") if col.nmemb > 1 else m.group("comp") is None
        return comp_ok and int(m.group("row")) * rows < col.size

    async def set(self, key: str, value: Buffer) -> None:
        self._refuse("write", key)

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        self._refuse("write", key)

    async def delete(self, key: str) -> None:
        self._refuse("delete", key)

    async def delete_dir(self, prefix: str) -> None:
        self._refuse("delete", prefix)

    async def clear(self) -> None:
        self._refuse("clear the store")

    def _keys(self) -> list[str]:
        keys = list(self._meta)
        for name, (col, rows) in self._columns.items():
            suffix = "/0" if col.nmemb > 1 else ""
            keys += [f"{name}/c/{i}{suffix}" for i in range(-(-col.size // rows))]
        return keys

    async def list(self) -> AsyncIterator[str]:
        for key in self._keys():
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in self._keys():
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        prefix = prefix.rstrip("/")
        start = prefix + "/" if prefix else ""
        seen = set()
        for key in self._keys():
            if key.startswith(start):
                child = key[len(start):].split("/", 1)[0]
                if child not in seen:
                    seen.add(child)
                    yield child

    def close(self) -> None:
        """Close the File if the store opened it."""
        if self._owned:
            self._group.close()  # type: ignore[attr-defined]
        super().close()


def to_zarr(source: Any, *, chunk_bytes: int = CHUNK_BYTES) -> zarr.Group:
    """The File at ``source`` (a path, a :class:`~colfile.File` or a
    :class:`~colfile.Group`) as a read-only :class:`zarr.Group` over a
    :class:`ColfileStore`; its ``store`` is the store (for
    ``xr.open_zarr(group.store)``)."""
    store = ColfileStore(source, chunk_bytes=chunk_bytes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_group(store, mode="r", zarr_format=3)

