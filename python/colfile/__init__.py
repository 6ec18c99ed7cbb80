"""colfile: massively parallel I/O for large table-like scientific data.

The successor of bigfile: it reads and writes bigfile's on-disk format
exactly.  A :class:`File` is a directory of :class:`Column` objects (``size``
rows of ``nmemb`` elements each), grouped by ``/`` in their names
(:class:`Group`), with attributes on columns, groups and Files; a
:class:`Dataset` reads several columns as one structured array.

Under MPI the same classes do parallel I/O: ``File(path, mode,
comm=MPI.COMM_WORLD)`` opens the File on every rank, and creating columns,
collective writes (:meth:`Column.write_all`) and reads
(:meth:`Column.read_all`) and closing are collective; see :mod:`colfile.mpi`
(mpi4py is needed only then).

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> path = os.path.join(tempfile.mkdtemp(), "catalog")
>>> with colfile.File(path, "w") as f:
...     _ = f.create("Mass", data=np.array([1.5, 2.0, 0.5]))
...     f.attrs["Unit"] = "1e10 Msun/h"
>>> with colfile.File(path) as f:
...     f["Mass"][f["Mass"][:] > 1], f.attrs["Unit"]
(array([1.5, 2. ]), '1e10 Msun/h')
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from . import errors
from ._core import library as _library
from .attrs import AttributeManager
from .column import Column
from .dataset import Dataset
from .errors import (
    AlreadyExistsError,
    AttributeNotFoundError,
    BusyError,
    ChecksumError,
    ClosedError,
    CollectiveError,
    ColumnExistsError,
    ColumnKindError,
    ColumnNotFoundError,
    DTypeError,
    Error,
    FormatError,
    IncompleteError,
    IncompleteWarning,
    InvalidArgumentError,
    InvalidNameError,
    NoSuchFileError,
    OutOfMemoryError,
    RangeError,
    ReadOnlyError,
    ReplacedError,
    StorageError,
    TornError,
)
from ._warnings import CatalogWarning
from .file import File, FileSystemWarning, Group, TornWarning
from .locking import LockingWarning
from .histograms import histogram, histogram2d, histogramdd
from .query import ExpressionError, Field, Predicate, Report, Selection, where


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("colfile")
    except Exception:  # PackageNotFoundError, or no metadata at all
        return "0.1.0"


if TYPE_CHECKING:
    __version__: str


def __getattr__(name: str) -> str:
    # __version__ on first use: reading the installed metadata imports
    # importlib.metadata and scans sys.path, about half of what importing
    # colfile costs otherwise
    if name == "__version__":
        version = _version()
        globals()["__version__"] = version
        return version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_xarray(source, group=None, **kwargs):  # type: ignore[no-untyped-def]
    """A group of a File as a lazy :class:`xarray.Dataset`: see
    :func:`colfile.xarray_backend.to_xarray` (needs xarray)."""
    # xarray is optional and heavy: its backend module loads on first use
    backend = importlib.import_module(f"{__name__}.xarray_backend")
    return backend.to_xarray(source, group, **kwargs)


def to_zarr(source, **kwargs):  # type: ignore[no-untyped-def]
    """A File as a read-only :class:`zarr.Group` reading its blobs in place:
    see :func:`colfile.zarr_view.to_zarr` (needs zarr 3)."""
    view = importlib.import_module(f"{__name__}.zarr_view")
    return view.to_zarr(source, **kwargs)


def library_version() -> str:
    """The version of the libcolfile actually loaded (``cf_version()``)."""
    return _library.version()


__all__ = [
    "File",
    "Group",
    "Column",
    "Dataset",
    "AttributeManager",
    "Field",
    "Predicate",
    "Selection",
    "Report",
    "ExpressionError",
    "where",
    "histogram",
    "histogram2d",
    "histogramdd",
    "errors",
    "library_version",
    "to_xarray",
    "to_zarr",
    "__version__",
    "Error",
    "AlreadyExistsError",
    "AttributeNotFoundError",
    "BusyError",
    "ChecksumError",
    "ClosedError",
    "CollectiveError",
    "ColumnExistsError",
    "ColumnKindError",
    "ColumnNotFoundError",
    "DTypeError",
    "FormatError",
    "IncompleteError",
    "IncompleteWarning",
    "InvalidArgumentError",
    "InvalidNameError",
    "NoSuchFileError",
    "OutOfMemoryError",
    "RangeError",
    "ReadOnlyError",
    "ReplacedError",
    "StorageError",
    "TornError",
    "TornWarning",
    "CatalogWarning",
    "FileSystemWarning",
    "LockingWarning",
]
