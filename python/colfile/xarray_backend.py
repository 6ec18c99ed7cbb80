"""xarray backend: ``xr.open_dataset(path, engine="colfile", group="1/")``.

A group of a File becomes an :class:`xarray.Dataset`: each column directly
in the group is a variable, read lazily (nothing is read until values are
asked for, and then only the rows asked for).  Columns of one length share
the row dimension ``row`` (``row_<length>`` for each length when the group
holds columns of several lengths); a vector column (``nmemb > 1``) gets a
second dimension ``<name>_component``.  Column attributes become the
variable's attrs, the group's (the File's for the root) the Dataset's.  A
block without data (a header-only ``Header``, as bigfile writers keep their
global attributes in) opens as a Dataset of its attributes alone.

With ``chunks={}`` (or ``"auto"``) the dask chunks follow the columns' blob
boundaries (the variables' ``preferred_chunks`` encoding).

Installed as the ``colfile`` engine by the package's ``xarray.backends``
entry point; needs xarray (``pip install colfile[xarray]``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from . import column as _column
from .column import Column
from .file import File, Group

__all__ = ["ColfileBackendArray", "ColfileBackendEntrypoint", "group_dataset",
           "open_datatree", "to_xarray", "write_dataset"]


class ColfileBackendArray(BackendArray):
    """A column as xarray's lazily indexed backend array.

    Row keys (integers, slices, integer arrays) go to the column's own
    indexing, which reads only those rows; the component key of a vector
    column is applied to the rows read.
    """

    def __init__(self, column: _column.Column) -> None:
        self.column = column
        self.shape = column.shape
        self.dtype = column.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._raw_getitem)

    def _raw_getitem(self, key: tuple[Any, ...]) -> np.ndarray:
        rows = key[0]
        if isinstance(rows, np.ndarray) and rows.size == 0:
            arr = np.empty((0,) + self.shape[1:], self.dtype)
        else:
            arr = np.asarray(self.column[rows])
        if len(key) > 1:
            # an integer row key dropped the row axis already
            lead = (slice(None),) * (arr.ndim - (len(self.shape) - 1))
            arr = arr[lead + tuple(key[1:])]
        return arr


def _prefix(group: str | None) -> str:
    """``"1"``, ``"/1/"``, ``"1/"`` -> ``"1/"``; None, ``""``, ``"/"`` -> ``""``."""
    if group is None:
        return ""
    g = str(group).strip("/")
    return g + "/" if g else ""


def _row_dims(sizes: dict[str, int], dim_prefix: str) -> dict[str, str]:
    lengths = set(sizes.values())
    if len(lengths) <= 1:
        return {n: dim_prefix + "row" for n in sizes}
    return {n: f"{dim_prefix}row_{s}" for n, s in sizes.items()}


def _variable(col: _column.Column, rowdim: str, name: str, dim_prefix: str) -> xr.Variable:
    dims: tuple[str, ...] = (rowdim,)
    preferred: dict[str, Any] = {}
    blobs = tuple(r for r in col.blob_rows if r > 0)
    if blobs:
        preferred[rowdim] = blobs
    if col.nmemb > 1:
        dims += (f"{dim_prefix}{name}_component",)
        preferred[dims[1]] = col.nmemb
    data = indexing.LazilyIndexedArray(ColfileBackendArray(col))
    encoding = {"preferred_chunks": preferred, "nfile": col.nfile,
                "blob_rows": tuple(col.blob_rows), "source": col.path}
    return xr.Variable(dims, data, attrs=dict(col.attrs), encoding=encoding)


def group_dataset(group: Group, drop_variables: Iterable[str] | str | None = None,
                  dim_prefix: str = "") -> xr.Dataset:
    """The columns directly in ``group`` (a :class:`~colfile.File` or
    :class:`~colfile.Group`) as a lazy :class:`xarray.Dataset`, its
    dimension names starting with ``dim_prefix``.

    Columns without data (header-only, attributes-only) are left out, and
    so are the columns of sub-groups (:func:`open_datatree` gives those).
    """
    if isinstance(drop_variables, str):
        drop_variables = [drop_variables]
    drop = set(drop_variables or ())
    cols: dict[str, Column] = {}
    for name in group.columns:
        if "/" in name or name in drop:
            continue
        col = group[name]
        if col.kind == "data":
            cols[name] = col
    dims = _row_dims({n: c.size for n, c in cols.items()}, dim_prefix)
    variables = {n: _variable(c, dims[n], n, dim_prefix) for n, c in cols.items()}
    return xr.Dataset(variables, attrs=dict(group.attrs))


def _open(filename_or_obj: Any) -> tuple[Group, bool]:
    """The File or Group to read, and whether it was opened here."""
    if isinstance(filename_or_obj, Group):
        return filename_or_obj, False
    if isinstance(filename_or_obj, (str, os.PathLike)):
        return File(filename_or_obj, "r"), True
    raise TypeError("the colfile engine opens a path, a colfile.File or a colfile.Group, "
                    f"not {type(filename_or_obj).__name__}")


def _subgroup(root: Group, prefix: str) -> Group:
    return root[prefix] if prefix else root


def _metadata_block(root: Group, prefix: str) -> Column | None:
    """The header-only (or attributes-only) block named ``prefix`` without
    its slash (bigfile's way of storing a ``Header``), if it is one."""
    name = prefix.rstrip("/")
    if not name or name not in root:
        return None
    col = root[name]
    return col if col.kind != "data" else None


def _node(root: Group, prefix: str, drop_variables: Any, dim_prefix: str = "") -> xr.Dataset:
    block = _metadata_block(root, prefix)
    if block is not None:
        return xr.Dataset(attrs=dict(block.attrs))
    return group_dataset(_subgroup(root, prefix), drop_variables, dim_prefix)


def _group_names(root: Group) -> list[str]:
    """Every directory holding columns below ``root``, and every block
    without data (header-only, attributes-only), as ``"a/b/"``."""
    found = {""}
    for name in root.columns:
        parts = name.split("/")
        if root[name].kind == "data":
            parts = parts[:-1]
        for i in range(1, len(parts) + 1):
            found.add("/".join(parts[:i]) + "/")
    return sorted(found)


class ColfileBackendEntrypoint(BackendEntrypoint):
    """The ``colfile`` engine of :func:`xarray.open_dataset`."""

    description = "Open colfile (bigfile format) Files with xarray"
    url = "https://github.com/colfile/colfile/blob/main/docs/xarray.md"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "group")
    supports_groups = True

    def open_dataset(self, filename_or_obj: Any, *,
                     drop_variables: str | Iterable[str] | None = None,
                     group: str | None = None) -> xr.Dataset:
        root, opened = _open(filename_or_obj)
        try:
            ds = _node(root, _prefix(group), drop_variables)
        except BaseException:
            if opened:
                root.file.close()
            raise
        if opened:
            ds.set_close(root.file.close)
        return ds

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if isinstance(filename_or_obj, Group):
            return True
        if not isinstance(filename_or_obj, (str, os.PathLike)):
            return False
        path = os.fspath(filename_or_obj)
        if not os.path.isdir(path):
            return False
        # a File or group holds column directories with a header file, or
        # has attributes of its own (attr-v2)
        if os.path.isfile(os.path.join(path, "attr-v2")):
            return True
        try:
            entries = list(os.scandir(path))
        except OSError:
            return False
        return any(e.is_dir() and os.path.isfile(os.path.join(e.path, "header"))
                   for e in entries)

    def open_groups_as_dict(self, filename_or_obj: Any, *,
                            drop_variables: str | Iterable[str] | None = None,
                            ) -> dict[str, xr.Dataset]:
        root, opened = _open(filename_or_obj)
        try:
            out = {}
            for prefix in _group_names(root):
                node = "/" + prefix.rstrip("/")
                # a node sees its parents' dimensions: each group's are its own
                dims = prefix.replace("/", ".")
                out[node] = _node(root, prefix, drop_variables, dims)
        except BaseException:
            if opened:
                root.file.close()
            raise
        if opened:
            # every node reads through the one File; closing the root closes it
            out["/"].set_close(root.file.close)
        return out

    def open_datatree(self, filename_or_obj: Any, *,
                      drop_variables: str | Iterable[str] | None = None) -> xr.DataTree:
        groups = self.open_groups_as_dict(filename_or_obj, drop_variables=drop_variables)
        tree = xr.DataTree.from_dict(groups)
        tree.set_close(groups["/"]._close)
        return tree


def to_xarray(source: Any, group: str | None = None, *, chunks: Any = None,
              drop_variables: str | Iterable[str] | None = None) -> xr.Dataset:
    """A group of a File as a lazy :class:`xarray.Dataset` (see
    :mod:`colfile.xarray_backend`).

    ``source`` is a path, a :class:`~colfile.File` or a
    :class:`~colfile.Group` (then ``group`` is relative to it); ``chunks``
    as for :func:`xarray.open_dataset` (``{}``: one dask chunk per blob).
    A File passed in stays open (and must stay open while the Dataset is
    read); a File opened here from a path closes with the Dataset.
    """
    return xr.open_dataset(source, engine=ColfileBackendEntrypoint, group=group,
                           chunks=chunks, drop_variables=drop_variables)


def open_datatree(source: Any, *, chunks: Any = None) -> xr.DataTree:
    """The whole File as an :class:`xarray.DataTree`: a node per directory
    holding columns (``/`` the File's own columns and attributes).

    A node inherits its parents' dimensions, so the dimensions of group
    ``a/b`` are named ``a.b.row``, ``a.b.<name>_component`` (the root's
    ``row``, ``<name>_component``)."""
    return xr.open_datatree(source, engine=ColfileBackendEntrypoint, chunks=chunks)


def write_dataset(ds: xr.Dataset, target: Group, group: str | None = None, *,
                  nfile: int | None = None, overwrite: bool = False) -> None:
    """Write the data variables of ``ds`` as columns of ``group`` below
    ``target`` (a writable :class:`~colfile.File` or :class:`~colfile.Group`),
    their attrs as column attributes and ``ds.attrs`` as the group's.

    Each variable must have one dimension (a scalar column) or two (a
    vector column: rows by components).  Values are computed (a dask-backed
    variable is loaded) one variable at a time.  Coordinates are written
    as columns too.
    """
    prefix = _prefix(group)
    if prefix and not overwrite and prefix in target:
        raise ValueError(f"{os.path.join(target.path, prefix)}: group exists "
                         "(overwrite=True writes into it)")
    dest = target.require_group(prefix.rstrip("/")) if prefix else target
    for name, var in ds.variables.items():
        if var.ndim not in (1, 2):
            raise ValueError(f"variable {name!r} has {var.ndim} dimensions {var.dims}: "
                             "a column holds 1 (rows) or 2 (rows, components)")
        kwargs: dict[str, Any] = {"data": np.asarray(var.values)}
        if nfile is not None:
            kwargs["nfile"] = nfile
        col = dest.create(str(name), overwrite=overwrite, **kwargs)
        for k, v in var.attrs.items():
            col.attrs[str(k)] = v
    for k, v in ds.attrs.items():
        dest.attrs[str(k)] = v
