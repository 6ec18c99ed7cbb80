"""Convert a zarr group (format 3 or 2, read with zarr) into a colfile File.

The mapping is that of the HDF5 converter (:mod:`colfile.convert`,
docs/zarr.md): groups are groups, 1-d arrays columns, 2-d arrays of
``n x k`` vector columns of ``k`` components, a structured (zarr format 2)
array a group of one column per field; attributes of the root, groups and
arrays are copied (JSON numbers and lists of numbers become numeric
attributes, strings and lists of strings string attributes; objects and
nulls are refused).  Arrays of more than 2 dimensions, variable-length
strings and names colfile cannot hold are refused before anything is
written.  The destination is written under a hidden name, read back and
compared with the source, made durable and renamed into place, as for
HDF5; ``comm=`` splits the rows over the ranks the same way.

Needs zarr 3 (``pip install colfile[zarr]``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import zarr

from .convert import (BATCH_BYTES, ConvertError, _check_attrs, _check_columns_of, _copy_in,
                      _on_root, _prepare_destination, _remove)

__all__ = ["from_zarr"]


def _attr_value(value: Any, where: str) -> Any:
    """A JSON attribute value in the form the HDF5 path's checks take."""
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return np.array(value, dtype=object)
    if isinstance(value, list) and all(isinstance(v, (bool, int, float)) for v in value):
        if not value:
            raise ConvertError(f"{where}: an empty list is not supported (no dtype)")
        return np.asarray(value)
    raise ConvertError(f"{where}: a JSON {type(value).__name__} attribute is not supported "
                       "(colfile attributes are numbers, strings or lists of them)")


class _Node:
    """A zarr group or array seen through the interface the HDF5 path
    reads: ``attrs`` (converted), and for arrays ``shape``, ``ndim``,
    ``dtype`` and row slices as numpy arrays."""

    def __init__(self, obj: Any, where: str) -> None:
        self._obj = obj
        self.attrs = {k: _attr_value(v, f"{where}: attribute {k!r}")
                      for k, v in obj.attrs.asdict().items()}
        if isinstance(obj, zarr.Array):
            self.shape = tuple(obj.shape)
            self.ndim = len(self.shape)
            self.dtype = _stored_dtype(obj)

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.asarray(self._obj[key]).astype(self.dtype, copy=False)


def _stored_dtype(arr: Any) -> np.dtype[Any]:
    """The array's dtype in the byte order its chunks are stored in (zarr
    hands out native order; a format 3 array keeps its order in the
    ``bytes`` codec), so that the column keeps it too."""
    dt = np.dtype(arr.dtype)
    if dt.itemsize > 1 and dt.names is None and arr.metadata.zarr_format == 3:
        for codec in arr.metadata.codecs:
            endian = getattr(codec, "endian", None)
            if endian is not None and getattr(codec, "to_dict", None) and \
                    codec.to_dict().get("name") == "bytes":
                return dt.newbyteorder(">" if getattr(endian, "value", endian) == "big"
                                       else "<")
    return dt


def _plan_zarr(root: Any, src: str) -> tuple[_Node, list[tuple[str, _Node]],
                                              list[tuple[str, _Node]]]:
    """The root, the groups and the arrays of ``root``, checked before
    anything is written."""
    top = _Node(root, f"{src}: /")
    _check_attrs(top, f"{src}: /")
    groups: list[tuple[str, _Node]] = []
    arrays: list[tuple[str, _Node]] = []
    for name, obj in sorted(root.members(max_depth=None), key=lambda m: m[0]):
        where = f"{src}: /{name}"
        if any(c.isspace() for c in name) or name.startswith(".") or "/." in name:
            raise ConvertError(f"{where}: a name colfile cannot store (spaces or a leading "
                               "dot)")
        node = _Node(obj, where)
        _check_attrs(node, where)
        if isinstance(obj, zarr.Group):
            groups.append((name, node))
            continue
        _check_columns_of(node.dtype, node.shape, where, "array")
        arrays.append((name, node))
    return top, groups, arrays


def from_zarr(src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
              nfile: int | None = None, chunk_rows: int | None = None,
              overwrite: bool = False, verify: bool = True, durable: bool = True,
              batch_bytes: int = BATCH_BYTES, comm: Any = None) -> list[str]:
    """Copy the zarr group at ``src`` (a directory) into a new colfile File
    ``dst``; the options are those of :func:`colfile.convert.from_hdf5`.
    Returns the names of the columns written."""
    src, dst = os.fspath(src), os.fspath(dst)
    rank = comm.Get_rank() if comm is not None else 0

    def prepare() -> str:
        if not os.path.isdir(src):
            raise FileNotFoundError(f"{src}: no such zarr group (not a directory)")
        return _prepare_destination(src, dst, overwrite)

    tmp = _on_root(comm, prepare)
    try:
        try:
            root = zarr.open_group(src, mode="r")
        except Exception as exc:  # zarr's own errors for a missing or bad zarr.json
            raise ConvertError(f"{src}: not a readable zarr group ({exc})") from None
        top, groups, arrays = _plan_zarr(root, src)
        return _copy_in(src, dst, tmp, top, groups, arrays, nfile=nfile, chunk_rows=chunk_rows,
                        verify=verify, durable=durable, batch_bytes=batch_bytes, comm=comm)
    except BaseException:
        if rank == 0:
            _remove(tmp)
        raise
