"""Files and groups.

A :class:`File` is a directory of columns (the bigfile format); a
:class:`Group` is a view of the columns below a sub-directory.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> path = os.path.join(tempfile.mkdtemp(), "snapshot")
>>> with colfile.File(path, "w") as f:
...     _ = f.create("1/Position", ("f4", 3), size=5, nfile=2)
...     _ = f.create("1/ID", data=np.arange(5, dtype="u8"))
...     f["1/"].attrs["Mass"] = 0.5
>>> with colfile.File(path) as f:
...     g = f["1/"]
...     f.columns, g.columns, "ID" in g, float(g.attrs["Mass"])
(['1/ID', '1/Position'], ['ID', 'Position'], True, 0.5)
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ._dtypes import as_array, split_vector, token
from ._ffi import encode, encode_name, ffi, lib, new_error, string
from .attrs import AttributeManager
from .column import Column
from .errors import (
    ClosedError,
    ColumnNotFoundError,
    Error,
    raise_error,
)

__all__ = ["File", "Group", "MODES"]

_READ, _WRITE, _CREATE, _EXCL, _TRUNCATE = 0x0, 0x1, 0x2, 0x4, 0x8

#: The open modes and their libcolfile flags (one table, one place).
MODES: dict[str, int] = {
    "r": _READ,
    "r+": _WRITE,
    "w": _WRITE | _CREATE | _TRUNCATE,
    "w-": _WRITE | _CREATE | _EXCL,
    "x": _WRITE | _CREATE | _EXCL,
    "a": _WRITE | _CREATE,
}


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


def _release_file(handle: Any) -> None:
    lib().cf_file_close(handle)


class Group:
    """The columns below a directory of a File: ``file["grp/"]``.

    A group is a view: it holds no handle of its own.  Names given to a group
    are relative to it (``g["x"]`` is ``file["grp/x"]``).  ``g.attrs`` are the
    attributes of the directory (block ``"grp/."`` in bigfile terms).

    Listing (:attr:`columns`, ``iter``, ``len``, ``keys``) gives the column
    names below the group at any depth, sorted, as bigfile lists them (a
    header-only block hides whatever lies below it).
    """

    _prefix: str

    def __init__(self, file: File, prefix: str) -> None:
        self._file_obj = file
        self._prefix = prefix

    @property
    def _file(self) -> File:
        return self._file_obj

    # -- description ---------------------------------------------------

    @property
    def file(self) -> File:
        """The File this group belongs to."""
        return self._file

    @property
    def name(self) -> str:
        """The group's name relative to the File (``""`` for the File)."""
        return self._prefix.rstrip("/")

    @property
    def path(self) -> str:
        """The group's directory on disk."""
        if not self._prefix:
            return self._file.path
        return os.path.join(self._file.path, self._prefix.rstrip("/"))

    @property
    def attrs(self) -> AttributeManager:
        """The attributes of this group (of the File for a File)."""
        full = self._prefix + "."
        f = self._file
        return AttributeManager(lambda create: f._attr_column(full, create),
                                self.path)

    def __repr__(self) -> str:
        if self._file.closed:
            return f"<colfile.Group {self.name!r} (closed file)>"
        return f"<colfile.Group {self.name!r} in {self._file.path!r} ({len(self)} columns)>"

    # -- names -----------------------------------------------------------

    def _full(self, name: str) -> str:
        if not isinstance(name, str):
            raise TypeError(f"column names are str, not {type(name).__name__}")
        return self._prefix + name

    @property
    def columns(self) -> list[str]:
        """Sorted names of the columns below this group (relative to it)."""
        n = len(self._prefix)
        return [c[n:] for c in self._file._list() if c.startswith(self._prefix)]

    def keys(self) -> list[str]:
        """Same as :attr:`columns`."""
        return self.columns

    def values(self) -> list[Column]:
        """The columns, opened."""
        return [self[k] for k in self.columns]

    def items(self) -> list[tuple[str, Column]]:
        """``(name, column)`` pairs."""
        return [(k, self[k]) for k in self.columns]

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name.endswith("/"):
            return os.path.isdir(os.path.join(self.path, name))
        try:
            self._file._open_column(self._full(name))
        except (ColumnNotFoundError, ValueError):
            return False
        return True

    def get(self, name: str, default: Any = None) -> Any:
        """``self[name]``, or ``default`` if there is no such column."""
        try:
            return self[name]
        except KeyError:
            return default

    # -- access ----------------------------------------------------------

    def __getitem__(self, name: str) -> Any:
        """``g["col"]`` opens a column; ``g["sub/"]`` (trailing slash) gives
        the group of an existing directory."""
        full = self._full(name)
        if full.endswith("/"):
            self._file._check_open()
            if not os.path.isdir(os.path.join(self._file.path, full)):
                raise ColumnNotFoundError(
                    f"{os.path.join(self._file.path, full)}: no such group")
            return Group(self._file, full)
        return self._file._open_column(full)

    def __delitem__(self, name: str) -> None:
        """Remove a column (its header, attributes and blobs)."""
        self._file._remove(self._full(name))

    def create(self, name: str, dtype: Any = _UNSET, size: int | None = None,
               nfile: int = 1, *, blob_rows: Sequence[int] | None = None,
               data: Any = None) -> Column:
        """Create (or replace) a column and return it open for writing.

        Parameters
        ----------
        name : str
            Column name, relative to this group; ``/`` makes sub-directories.
        dtype : dtype spec or None
            The element dtype: kinds i u f c b (bool) and S, either byte
            order.  A sub-array dtype such as ``("f8", 3)`` makes a vector
            column with ``nmemb`` 3.  ``None`` makes a header-only block
            (metadata, no data).  Optional when ``data`` is given.
        size : int, optional
            Rows (default 0, or ``len(data)``).
        nfile : int
            Blob files to spread the rows over (bigfile's split rule).
        blob_rows : sequence of int, optional
            The rows of each blob explicitly (overrides ``nfile``).
        data : array_like, optional
            Rows to write right away (h5py style); its dtype is the default
            ``dtype`` and a 2-d array makes a vector column.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> f.create("v", ("f8", 3), size=10, blob_rows=[4, 0, 6]).shape
        (10, 3)
        >>> f.create("meta", None).kind
        'header-only'
        >>> f.create("s", data=["ab", "c"])[:]
        array([b'ab', b'c'], dtype='|S2')
        >>> f.close()
        """
        return self._file._create(self._full(name), dtype, size, nfile, blob_rows, data)

    def create_group(self, name: str) -> Group:
        """Create directory ``name`` (with an empty attribute file) and return
        its group; :class:`~colfile.AlreadyExistsError` if it exists."""
        from .errors import AlreadyExistsError

        full = self._full(name).rstrip("/") + "/"
        if os.path.isdir(os.path.join(self._file.path, full)):
            raise AlreadyExistsError(f"{os.path.join(self._file.path, full)}: group exists")
        return self.require_group(name)

    def require_group(self, name: str) -> Group:
        """The group ``name``, created if it does not exist."""
        full = self._full(name).rstrip("/") + "/"
        self._file._attr_column(full + ".", True)
        return Group(self._file, full)


class File(Group):
    """A colfile/bigfile File: a directory of columns.

    Parameters
    ----------
    path : str or os.PathLike
        The File's directory.
    mode : {'r', 'r+', 'w', 'w-', 'x', 'a'}
        ``'r'`` read only, must exist; ``'r+'`` read/write, must exist;
        ``'w'`` create, or empty an existing File (refused if the directory
        holds foreign files); ``'w-'`` or ``'x'`` create, fail if it exists;
        ``'a'`` read/write, create if needed.
    comm : None
        Reserved for colfile's MPI layer; only ``None`` is accepted for now.

    Notes
    -----
    ``file[name]`` opens a column (cached: while a handle is alive, the same
    :class:`~colfile.Column` object is returned).  Closing the File closes
    every column opened through it, which commits their headers; using them
    afterwards raises :class:`~colfile.ClosedError`.

    Examples
    --------
    >>> import os, tempfile, colfile
    >>> path = os.path.join(tempfile.mkdtemp(), "f")
    >>> with colfile.File(path, "x") as f:
    ...     f.create("a/x", "i4", size=3)[:] = 7
    >>> f = colfile.File(path, "r")
    >>> f["a/x"][:], list(f), "a/x" in f, len(f)
    (array([7, 7, 7], dtype=int32), ['a/x'], True, 1)
    >>> f.close(); f.closed
    True
    """

    def __init__(self, path: str | os.PathLike[str], mode: str = "r", *,
                 comm: Any = None) -> None:
        if comm is not None:
            raise ValueError("comm= needs colfile's MPI support, which is not "
                             "available in this version; pass comm=None")
        if mode not in MODES:
            raise ValueError(f"invalid mode {mode!r}: use one of "
                             f"{', '.join(repr(m) for m in MODES)}")
        # A File is the group of its root; it does not store itself (no
        # reference cycle, so dropping the last reference frees it at once).
        self._prefix = ""
        self._mode = mode
        self._lock = threading.RLock()  # guards the C handle and the caches
        self._cols: weakref.WeakValueDictionary[str, Column] = weakref.WeakValueDictionary()
        self._attr_cols: dict[str, Column] = {}
        out = ffi.new("cf_file **")
        err = new_error()
        rc = lib().cf_file_open(out, encode(path), MODES[mode], err)
        if rc < 0:
            raise_error(rc, err, "file")
        self._h: Any = out[0]
        self._finalizer = weakref.finalize(self, _release_file, self._h)
        self._path = string(lib().cf_file_path(self._h))

    # -- description ---------------------------------------------------

    @property
    def _file(self) -> File:
        return self

    @property
    def path(self) -> str:
        """The File's directory as given when opening."""
        return self._path

    @property
    def mode(self) -> str:
        """The mode it was opened with."""
        return self._mode

    @property
    def writable(self) -> bool:
        """True unless opened with ``'r'``."""
        return self._mode != "r"

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._h is None

    def __repr__(self) -> str:
        if self._h is None:
            return f"<colfile.File {self._path!r} (closed)>"
        return f"<colfile.File {self._path!r} mode={self._mode!r}>"

    # -- life cycle ------------------------------------------------------

    def _check_open(self) -> Any:
        h = self._h
        if h is None:
            raise ClosedError(f"{self._path}: File is closed")
        return h

    def _live(self) -> list[Column]:
        with self._lock:
            found = {id(c): c for c in [*self._cols.values(), *self._attr_cols.values()]}
        return [c for c in found.values() if not c.closed]

    def flush(self) -> None:
        """Commit the metadata of every open column."""
        for col in self._live():
            col.flush()

    def close(self) -> None:
        """Close every column opened through this File, then the File.

        The first error met while committing a column is raised after all
        handles are released.  Closing twice is harmless.
        """
        if self._h is None:
            return
        first: Error | None = None
        for col in self._live():
            try:
                col.close()
            except Error as exc:
                first = first or exc
        self._cols.clear()
        self._attr_cols.clear()
        with self._lock:
            h, self._h = self._h, None
            self._finalizer.detach()
            lib().cf_file_close(h)
        if first is not None:
            raise first

    def __enter__(self) -> File:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- internals used by Group ----------------------------------------

    def _list(self) -> list[str]:
        names = ffi.new("char ***")
        count = ffi.new("int64_t *")
        err = new_error()
        L = lib()
        with self._lock:
            rc = L.cf_file_list(self._check_open(), names, count, err)
        if rc < 0:
            raise_error(rc, err)
        try:
            return [string(names[0][i]) for i in range(count[0])]
        finally:
            L.cf_names_free(names[0], count[0])

    def _open_column(self, full: str) -> Column:
        with self._lock:
            col = self._cols.get(full)
            if col is not None and not col.closed:
                return col
            out = ffi.new("cf_column **")
            err = new_error()
            rc = lib().cf_column_open(out, self._check_open(), encode_name(full), err)
            if rc >= 0:
                col = Column(out[0], self)
                self._cols[full] = col
                return col
        try:
            raise_error(rc, err, "column")
        except ColumnNotFoundError as exc:
            if os.path.isdir(os.path.join(self._path, full)):
                raise ColumnNotFoundError(
                    f"{exc} (a directory: use ['{full}/'] for its group)", exc.code) from None
            raise

    def _forget(self, full: str) -> None:
        """Close our live handle on ``full`` before it is replaced or removed."""
        with self._lock:
            self._attr_cols.pop(full, None)
            col = self._cols.pop(full, None)
            if col is not None:
                col.close()

    def _create(self, full: str, dtype: Any, size: int | None, nfile: int,
                blob_rows: Sequence[int] | None, data: Any) -> Column:
        self._check_open()
        arr = None
        if data is not None:
            arr = np.asarray(data)
            if arr.dtype.kind == "U":
                arr = np.char.encode(arr, "utf-8")
            if arr.ndim not in (1, 2):
                raise ValueError(f"data must be 1-d (rows) or 2-d (rows of vectors), "
                                 f"not {arr.ndim}-d")
            if dtype is _UNSET:
                if arr.dtype.kind not in "iufcbS":
                    raise ValueError(f"cannot store data of dtype {arr.dtype}; "
                                     "give dtype=")
                dtype = arr.dtype if arr.ndim == 1 else (arr.dtype, arr.shape[1])
            if size is not None and size != len(arr):
                raise ValueError(f"size={size} but data has {len(arr)} rows")
            size = len(arr)
            if dtype is None:
                raise ValueError("dtype=None makes a header-only block, which holds no data")
        elif dtype is _UNSET:
            raise TypeError("create() needs a dtype (None for a header-only block) "
                            "or data")
        size = 0 if size is None else int(size)
        rows = None
        if dtype is None:
            tok, nmemb, size, nfile = ffi.NULL, 0, 0, 0
        else:
            base, nmemb = split_vector(dtype)
            tok = token(base)
            if blob_rows is not None:
                rows = np.ascontiguousarray(blob_rows, dtype=np.int64).reshape(-1)
                if (data is not None or size) and int(rows.sum()) != size:
                    raise ValueError(f"blob_rows sum to {int(rows.sum())}, "
                                     f"but size is {size}")
        out = ffi.new("cf_column **")
        err = new_error()
        name = encode_name(full)
        with self._lock:
            h = self._check_open()
            self._forget(full)
            if rows is not None:
                rc = lib().cf_column_create_blobs(
                    out, h, name, tok, nmemb, len(rows),
                    ffi.cast("int64_t *", rows.ctypes.data), err)
            else:
                rc = lib().cf_column_create(out, h, name, tok, nmemb, size, nfile, err)
            if rc < 0:
                raise_error(rc, err)
            col = Column(out[0], self)
            self._cols[full] = col
        if arr is not None and len(arr):
            col.write(0, as_array(arr, col.dtype))
        return col

    def _remove(self, full: str) -> None:
        err = new_error()
        with self._lock:
            h = self._check_open()
            self._forget(full)
            rc = lib().cf_file_remove(h, encode_name(full), err)
        if rc < 0:
            raise_error(rc, err, "column")

    def _attr_column(self, full: str, create: bool) -> Column | None:
        """The handle holding the attributes of ``"."`` or ``"grp/."`` (kept
        open until the File closes); ``None`` if the directory does not exist
        and ``create`` is False."""
        with self._lock:
            col = self._attr_cols.get(full)
            if col is not None and not col.closed:
                return col
            try:
                col = self._open_column(full)
            except ColumnNotFoundError:
                if not create:
                    return None
                out = ffi.new("cf_column **")
                err = new_error()
                rc = lib().cf_column_create(out, self._check_open(), encode_name(full),
                                            ffi.NULL, 0, 0, 0, err)
                if rc < 0:
                    raise_error(rc, err)
                col = Column(out[0], self)
                self._cols[full] = col
            self._attr_cols[full] = col
            return col
