"""Columns: numpy-style reads and writes of one column of a File.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> path = os.path.join(tempfile.mkdtemp(), "demo")
>>> with colfile.File(path, "w") as f:
...     pos = f.create("Position", ("f8", 3), size=4, nfile=2)
...     pos[:] = np.arange(12.0).reshape(4, 3)
...     pos.shape, pos.blob_rows
((4, 3), [2, 2])
>>> with colfile.File(path) as f:
...     f["Position"][::-2, 0]
array([9., 3.])
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _indexing
from . import mpi as _mpi
from ._buffers import PLACE_MIN_BYTES, empty_at
from ._dtypes import as_array, from_token, token
from ._ffi import ERROR_P, encode_name, ffi, lib, new_error, take_strings
from ._ints import INT64_MAX, NFILE_MAX, whole
from .attrs import AttributeManager
from .errors import ClosedError, CollectiveError, Error, IncompleteWarning, RangeError, raise_error

if TYPE_CHECKING:
    import dask.array

    from .file import File

__all__ = ["Column", "CHUNK_STATS_DTYPE"]

#: The record of :meth:`Column.chunk_stats`: the fields of ``cf_chunk_stats``.
CHUNK_STATS_DTYPE = np.dtype([
    ("blob", "i8"), ("first_row", "i8"), ("rows", "i8"), ("valid", "?"), ("ordered", "?"),
    ("count", "i8"), ("nan_count", "i8"), ("min", "f8"), ("max", "f8"), ("sum", "f8")])

_KINDS = {0: "data", 1: "header-only", 2: "attrs-only"}

_BLOB_STATUS = (
    (0x01, "MISSING"),
    (0x02, "SHORT"),
    (0x04, "LONG"),
    (0x08, "SUM_MISMATCH"),
    (0x10, "CRC_MISMATCH"),
    (0x20, "CRC_UNKNOWN"),
    (0x40, "STATS_MISMATCH"),
    (0x80, "STATS_DAMAGED"),
)

# enum cf_ext_state, by value
_EXT_STATES = ("current", "absent", "unbound", "stale", "damaged", "updating", "torn")

_REPAIR_BITS = (
    (0x01, "sums"),
    (0x02, "crc"),
    (0x04, "truncated"),
    (0x08, "stray"),
    (0x10, "torn"),
)


def _release(handle: Any, made: list[int | None] | None = None, what: str = "") -> None:
    """Finalizer: close a handle nobody closed (errors cannot be reported;
    rows never written of blobs it made are warned about, see Column.close)."""
    ranges: list[tuple[int, int]] = []
    if made is not None and made[0] is not None:
        try:
            ranges = _unwritten_of(handle, made[0])
        except Exception:  # the library may be gone at interpreter exit
            ranges = []
    lib().cf_column_close(handle, ffi.NULL)
    if ranges:
        try:
            _warn_unwritten(what, ranges, 2)
        except Exception:
            pass


def _unwritten_of(h: Any, first: int) -> list[tuple[int, int]]:
    """Row ranges ``[a, b)`` of blobs ``first``, ``first + 1``, ... of the
    column handle ``h`` that their files hold no bytes for (never
    written): what a read raises IncompleteError for.  Merged where they
    touch."""
    L = lib()
    err = new_error()
    held_p = ffi.new("int64_t *")
    out: list[tuple[int, int]] = []
    row = 0
    for b in range(int(L.cf_column_nfile(h))):
        n = int(L.cf_column_blob_rows(h, b))
        if b >= first and n:
            rc = L.cf_column_blob_rows_held(h, b, held_p, err)
            if rc < 0:
                raise_error(rc, err)
            held = int(held_p[0])
            if held < n:
                a = row + held
                if out and out[-1][1] == a:
                    out[-1] = (out[-1][0], row + n)
                else:
                    out.append((a, row + n))
        row += n
    return out


def _warn_unwritten(what: str, ranges: list[tuple[int, int]], stacklevel: int) -> None:
    shown = ", ".join(f"{a}..{b - 1}" for a, b in ranges[:8])
    if len(ranges) > 8:
        shown += f" and {len(ranges) - 8} more range(s)"
    total = sum(b - a for a, b in ranges)
    warnings.warn(IncompleteWarning(
        f"{what} closed with {total} row(s) never written (rows {shown}): reading them "
        "raises IncompleteError"), stacklevel=stacklevel + 1)


#: the Columns holding a handle that can commit: a forked child forgets them
_WRITERS: weakref.WeakSet[Column] = weakref.WeakSet()


def _forget_in_child() -> None:
    """After os.fork(), in the child: the writable columns open in the
    parent are the parent's.  Their handles are released without a commit
    (cf_column_forget), so that the child neither commits them at its exit
    nor keeps their writer locks held through inherited descriptors, and
    the Column objects are closed here."""
    for col in list(_WRITERS):
        h, col._h = col._h, None
        if col._finalizer is not None:
            col._finalizer.detach()
        if h is not None:
            lib().cf_column_forget(h)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


_DTYPES: dict[str, np.dtype[Any]] = {}
_ATTR_BUFS = threading.local()
#: what opening a column allocates, parsed once
_DESC_P = ffi.typeof("cf_column_desc *")
#: the out-parameters of cf_column_attr_get (Column._attr_get), parsed once
_ATTR_OUT = (ffi.typeof("const char **"), ffi.typeof("int64_t *"),
             ffi.typeof("const void **"), ERROR_P)


def _dtype_of(tok: str) -> np.dtype[Any]:
    """``from_token``, remembered per token (opening thousands of columns
    would otherwise build the same numpy dtype each time)."""
    dt = _DTYPES.get(tok)
    if dt is None:
        dt = _DTYPES[tok] = from_token(tok)
    return dt


def _ptr(arr: np.ndarray) -> Any:
    """The address of element 0 of ``arr`` (whatever its strides).  A
    C-contiguous array is passed as its buffer (which keeps it alive while
    the pointer is), much cheaper than ``arr.ctypes``."""
    if arr.flags.c_contiguous and arr.size:
        return ffi.from_buffer(arr)
    return ffi.cast("void *", arr.ctypes.data)


def fold(rawsum: int) -> int:
    """The SysV fold of a bigfile running byte sum (what ``sum -s`` prints).

    >>> fold(96585)
    31050
    """
    return int(lib().cf_checksum_fold(rawsum))


class Column:
    """One column of a :class:`~colfile.File`: ``size`` rows of ``nmemb``
    elements of ``dtype``, spread over ``nfile`` blob files.

    Get one with ``file[name]`` or :meth:`File.create <colfile.Group.create>`;
    do not call the constructor.  Indexing reads (``col[10:20]``,
    ``col[[3, 1, 2]]``, ``col[mask]``, ``col[:, 0]``) and assignment writes,
    with numpy's semantics on the first axis (rows) and, for vector columns,
    the second (the elements of a row).

    Assigning to part of each row of a vector column (``col[:, 1] = v``)
    reads the rows, assigns and writes them back whole (one handle does
    such updates one at a time, so threads may fill different components
    of the same rows); the components of rows never written are zeros
    then.  Reading rows never written: see :meth:`File.create
    <colfile.Group.create>` and :class:`~colfile.IncompleteError`.

    A column handle stays open until :meth:`close`, the end of a ``with``
    block, the closing of its File, or garbage collection; closing commits
    the header (checksums).  A handle may be shared between threads: the
    calls on one handle are serialised, while distinct handles run in
    parallel (the GIL is released inside libcolfile).

    A read-only column pickles: unpickling opens its File again, read-only,
    by its absolute path, and the column in it (see :class:`~colfile.File`);
    a column open for writing refuses to be pickled (``TypeError``).

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> x = f.create("x", data=np.arange(10, dtype="i4"))
    >>> x.dtype, x.shape, len(x)
    (dtype('int32'), (10,), 10)
    >>> x[[7, 2, 2]]
    array([7, 2, 2], dtype=int32)
    >>> x[x[:] % 3 == 0] = -1
    >>> x.read(0, 4, dtype="f8")
    array([-1.,  1.,  2., -1.])
    >>> f.close()
    """

    def __init__(self, handle: Any, file: File | None = None, *, comm: Any = None,
                 name: str | None = None) -> None:
        # Opening a column is mostly this method when the catalog is fresh:
        # kept to plain steps (the Comm of a File is taken as it is).
        self._h: Any = handle
        if comm is None:
            comm = file._comm if file is not None else None
        self._comm: _mpi.Comm = comm if isinstance(comm, _mpi.Comm) else _mpi.as_comm(comm)
        self._lock = threading.Lock()
        # read-modify-writes of part of rows (_indexing.setitem), one at a time
        self._rmw_lock = threading.Lock()
        # [blob]: blobs from this one on were made by this handle (create: 0,
        # append: the first new one): its close, or its finalizer, warns
        # about rows of them never written
        self._made: list[int | None] = [None]
        if file is not None:
            self._file_ref: Any = weakref.ref(file)
            # absolute: to_dask() and pickles reopen it from anywhere
            self._file_path: str | None = file._abspath
            self._file_flags: int = file._flags
        else:
            self._file_ref = self._file_path = None
            self._file_flags = 0
        d = ffi.new(_DESC_P)
        lib().cf_column_describe(handle, d)  # one call: each costs ~1.5 us
        self._writable = bool(d.writable)
        # A handle that can commit is closed (committed) by a finalizer that
        # also runs at exit; a read-only one holds only memory, which __del__
        # gives back: a weakref.finalize costs more than opening from the
        # catalog.
        self._finalizer: Any = None
        # File(deferred=True): close() hands the handle to the File's committer
        self._defer: Any = file._commits if self._writable and file is not None else None
        tostr = ffi.string  # the core never gives NULL here
        # the name the opener passed is the one the core keeps (one call less)
        self._name = name if name is not None else tostr(d.name).decode("utf-8",
                                                                        "surrogateescape")
        self._path = tostr(d.path).decode("utf-8", "surrogateescape")
        if self._writable:
            self._finalizer = weakref.finalize(self, _release, handle, self._made, self._what_made())
            _WRITERS.add(self)
        self._token = tok = tostr(d.dtype).decode("ascii")
        dt = _DTYPES.get(tok)
        self._dtype = dt if dt is not None else _dtype_of(tok)
        self._nmemb = n = d.nmemb
        self._row_shape = () if n == 1 else (n,)
        self._rowbytes = self._dtype.itemsize * n
        self._kind = d.kind
        # rows were written through this handle (under MPI, File.close asks)
        self._wrote = False
        # under MPI: opened by this rank alone (file[name]), see close()
        self._independent = False

    def __del__(self) -> None:
        # read-only handles (see __init__); errors cannot be reported here
        h = getattr(self, "_h", None)
        if h is not None and getattr(self, "_finalizer", 0) is None:
            self._h = None
            try:
                lib().cf_column_close(h, ffi.NULL)
            except Exception:  # the library is gone at interpreter exit
                pass

    # ------------------------------------------------------------------
    # plumbing

    def _handle(self) -> Any:
        h = self._h
        if h is None:
            raise ClosedError(f"{self._path}: column {self._name!r} is closed")
        return h

    def _call(self, fname: str, *args: Any, context: str = "file") -> int:
        err = new_error()
        fn = getattr(lib(), fname)
        with self._lock:
            rc = fn(self._handle(), *args, err)
        if rc < 0:
            raise_error(rc, err, context)
        return int(rc)

    def _strides(self, arr: np.ndarray) -> tuple[int, int]:
        if arr.ndim == 1:
            return arr.strides[0], arr.itemsize
        return arr.strides[0], arr.strides[1]

    # the primitives of _indexing.RowIO

    def _read_contig(self, start: int, count: int, out: np.ndarray) -> None:
        # The most frequent call: spelled out (no getattr, no dtype token
        # when ``out`` has the column's dtype: NULL means that in C).
        rs, es = self._strides(out)
        dt = out.dtype
        tok = ffi.NULL if dt == self._dtype else token(dt)
        err = ffi.new(ERROR_P)
        L = lib()
        with self._lock:
            rc = L.cf_column_read(self._handle(), start, count, _ptr(out), tok, rs, es, err)
        if rc < 0:
            raise_error(rc, err, "file")

    def _new_rows(self, count: int, first: int, dtype: np.dtype[Any] | None = None) -> np.ndarray:
        """A new array for ``count`` rows read from row ``first`` on, of the
        column's dtype or ``dtype``; a large one read without conversion is
        placed for the copy that fills it (_buffers)."""
        dt = self._dtype if dtype is None else dtype
        shape = (count,) + self._row_shape
        if count * self._rowbytes < PLACE_MIN_BYTES or dt != self._dtype:
            return np.empty(shape, dt)
        with self._lock:
            offset = lib().cf_column_row_offset(self._handle(), first)
        return empty_at(shape, dt, offset)

    def _read_rows(self, rows: np.ndarray, out: np.ndarray) -> None:
        rs, es = self._strides(out)
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        self._call("cf_column_read_rows", ffi.cast("int64_t *", rows.ctypes.data),
                   len(rows), _ptr(out), token(out.dtype), rs, es)

    def _read_step(self, start: int, step: int, count: int, out: np.ndarray) -> None:
        rs, es = self._strides(out)
        self._call("cf_column_read_step", start, step, count, _ptr(out), token(out.dtype), rs, es)

    def _write_contig(self, start: int, count: int, data: np.ndarray) -> None:
        # Spelled out like _read_contig (a create with data= comes here once
        # per column): NULL dtype when the rows already have the column's.
        rs, es = self._strides(data)
        dt = data.dtype
        tok = ffi.NULL if dt == self._dtype else token(dt)
        err = ffi.new(ERROR_P)
        L = lib()
        with self._lock:
            rc = L.cf_column_write(self._handle(), start, count, _ptr(data), tok, rs, es, err)
        self._wrote = True
        if rc < 0:
            raise_error(rc, err, "file")

    # several writers, one commit (the parallel layers move these bytes)

    def _pending_export(self) -> bytes:
        """This handle's uncommitted write state (per-blob byte-sum increments
        and CRC32C of the ranges written), leaving the handle clean so its
        close commits nothing.  See ``cf_column_pending_export``."""
        buf = ffi.new("void **")
        size = ffi.new("size_t *")
        self._call("cf_column_pending_export", buf, size)
        try:
            return bytes(ffi.buffer(buf[0], size[0]))
        finally:
            lib().cf_free(buf[0])

    def _discard(self) -> None:
        """Give up uncommitted changes: closing commits nothing
        (``cf_column_discard``)."""
        with self._lock:
            lib().cf_column_discard(self._handle())

    def _pending_merge(self, state: bytes) -> None:
        """Add another handle's exported state; the next flush commits both."""
        self._call("cf_column_pending_merge", state, len(state))

    def _write_bytes(self, start: int, count: int, buf: np.ndarray) -> None:
        """Write ``count`` rows already in the column's dtype, packed in the
        contiguous byte buffer ``buf``."""
        rowbytes = self.itemsize * max(self._nmemb, 1)
        assert buf.nbytes >= count * rowbytes
        self._wrote = True
        self._call("cf_column_write", start, count, _ptr(buf), self._token.encode("ascii"),
                   rowbytes, self.itemsize)

    def _file_handle(self) -> Any:
        """The ``cf_file *`` of the File this column was opened through."""
        f = self.file
        if f is None:
            raise ValueError(f"{self._path}: this column was not opened through a File")
        return f._check_open()

    def _replace_handle(self, handle: Any) -> None:
        """Adopt a new ``cf_column *`` for the same column, releasing the old."""
        with self._lock:
            old = self._h
            if self._finalizer is not None:
                self._finalizer.detach()
            self._h = handle
            self._finalizer = weakref.finalize(self, _release, handle, self._made,
                                               self._what_made())
            _WRITERS.add(self)
        if old is not None:
            lib().cf_column_close(old, ffi.NULL)

    def _write_sorted(self, rows: np.ndarray, data: np.ndarray) -> None:
        rs, es = self._strides(data)
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        self._wrote = True
        self._call("cf_column_write_rows", ffi.cast("int64_t *", rows.ctypes.data),
                   len(rows), _ptr(data), token(data.dtype), rs, es)

    # ------------------------------------------------------------------
    # description

    @property
    def name(self) -> str:
        """The column's name relative to its File (``"1/Position"``)."""
        return self._name

    @property
    def path(self) -> str:
        """The column's directory on disk."""
        return self._path

    @property
    def file(self) -> File | None:
        """The :class:`~colfile.File` this handle was opened through."""
        return self._file_ref() if self._file_ref is not None else None

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy dtype of one element as stored (``dtype('<f8')``,
        ``dtype('bool')`` for ``<b1``, ``dtype('S7')``)."""
        return self._dtype

    @property
    def nmemb(self) -> int:
        """Elements per row (1 for scalar columns, 0 for header-only)."""
        return self._nmemb

    @property
    def itemsize(self) -> int:
        """Bytes of one element."""
        return self._dtype.itemsize

    @property
    def kind(self) -> str:
        """``"data"``, ``"header-only"`` or ``"attrs-only"``."""
        return _KINDS.get(self._kind, str(self._kind))

    @property
    def writable(self) -> bool:
        """True if opened for writing."""
        return self._writable

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._h is None

    @property
    def size(self) -> int:
        """Rows in the column."""
        with self._lock:
            return int(lib().cf_column_size(self._handle()))

    @property
    def shape(self) -> tuple[int, ...]:
        """``(size,)`` when ``nmemb == 1``, else ``(size, nmemb)``."""
        return (self.size,) + self._row_shape

    @property
    def ndim(self) -> int:
        """1 for scalar columns, 2 for vector columns."""
        return 1 + len(self._row_shape)

    @property
    def nfile(self) -> int:
        """Number of blob files."""
        with self._lock:
            return int(lib().cf_column_nfile(self._handle()))

    @property
    def blob_rows(self) -> list[int]:
        """Rows held by each blob file, in file order."""
        L = lib()
        with self._lock:
            h = self._handle()
            return [int(L.cf_column_blob_rows(h, i)) for i in range(L.cf_column_nfile(h))]

    @property
    def attrs(self) -> AttributeManager:
        """The column's attributes, a mutable mapping (see
        :class:`~colfile.attrs.AttributeManager`)."""
        return AttributeManager(lambda create: self, self._path)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        if self._h is None:
            return f"<colfile.Column {self._name!r} (closed)>"
        kind = "" if self._kind == 0 else f" {self.kind}"
        return (f"<colfile.Column {self._name!r}{kind} shape={self.shape} "
                f"dtype={self._dtype.str} nfile={self.nfile}>")

    def _repr_html_(self) -> str:
        from . import _html

        return _html.column(self)

    # ------------------------------------------------------------------
    # life cycle

    @property
    def comm(self) -> Any:
        """The communicator this column is open on (``None`` if serial)."""
        return None if self._comm.serial else self._comm.user

    def flush(self) -> None:
        """Commit pending metadata (header checksums) to disk.

        Under MPI collective for a column every rank made or opened
        together (``create``, ``collective_metadata=True``): the other
        ranks' write state is merged into rank 0's handle, which commits
        one header.  Independent (nothing to do) for a read-only column,
        and for one this rank opened alone (``file[name]``): the File's
        collective flush or close commits its rows."""
        if self._comm.serial or not self._writable:
            self._flush_local()
        elif not self._independent:
            self._enter("Column.flush()")
            _mpi.commit(self._comm, self)

    def _commit(self, close: bool) -> None:
        """Under MPI, within a collective of the File: commit (and close)
        this column together with every rank (``mpi.commit``)."""
        _mpi.commit(self._comm, self, close=close)

    def _enter(self, op: str) -> None:
        """The agreement step of a collective operation on this column
        (``Comm.enter``); if the ranks are out of step, this rank's handle
        is released without committing anything, and the error raised."""
        try:
            self._comm.enter(op, self._path)
        except CollectiveError:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """Release the handle without committing anything (its changes are
        discarded; the error saying so is not raised: the caller raises
        why)."""
        if self._h is None:
            return
        try:
            if self._writable:
                self._discard()
            self._close_local()
        except Error:
            pass

    def _flush_local(self) -> None:
        self._call("cf_column_flush")

    def close(self) -> None:
        """Flush and release the handle.  Closing twice is harmless.  On a
        File opened with ``deferred=True`` the commit runs in the background
        and its errors are raised by the File (see :class:`~colfile.File`).

        Under MPI collective for a column every rank made or opened
        together (see :meth:`flush`).  Closing a read-only column, or one
        this rank opened alone (``file[name]``), is independent: the rows
        written through it are committed by the File's next collective
        flush or close."""
        if self._comm.serial or self._h is None or not self._writable:
            self._close_local()
        elif self._independent:
            # opened by this rank alone: closed alone; the rows it wrote are
            # committed by the File's next collective flush or close
            if self._wrote and self._kind == 0:
                state = self._pending_export()
                f = self._file_ref() if self._file_ref is not None else None
                if f is not None:
                    f._save_state(self._name, state)
            self._close_local()
        else:
            self._enter("Column.close()")
            _mpi.commit(self._comm, self, close=True)

    def _unwritten_ranges(self) -> list[tuple[int, int]]:
        """Row ranges ``[a, b)`` of the blobs this handle made that hold no
        data (see _unwritten_of)."""
        first = self._new_blobs_from
        if first is None or not self._writable or self._kind != 0:
            return []
        with self._lock:
            h = self._h
            return [] if h is None else _unwritten_of(h, first)

    def _close_local(self) -> None:
        # Rows never written are known once every write is in (under MPI:
        # rank 0, after the other ranks handed over theirs).
        ranges: list[tuple[int, int]] = []
        if self._new_blobs_from is not None and self._h is not None and (
                self._comm.serial or self._comm.rank == 0):
            try:
                ranges = self._unwritten_ranges()
            except Exception:  # the close below reports what is wrong
                ranges = []
        self._close_handle()
        if ranges:
            _warn_unwritten(self._what_made(), ranges, 3)

    def _close_handle(self) -> None:
        with self._lock:
            h = self._h
            if h is None:
                return
            self._h = None
            if self._finalizer is not None:
                self._finalizer.detach()
            if self._defer is not None:
                self._defer.submit(self._name, h)
                return
            if not self._writable:  # only frees memory: cannot fail
                lib().cf_column_close(h, ffi.NULL)
                return
            err = ffi.new(ERROR_P)
            rc = lib().cf_column_close(h, err)
        if rc < 0:
            raise_error(rc, err)

    def __reduce__(self) -> Any:
        # see File.__reduce__: read-only handles only
        if self._h is None:
            raise ClosedError(f"{self._path}: column {self._name!r} is closed: cannot pickle it")
        if self._writable:
            raise TypeError(f"{self._path}: a column open for writing cannot be pickled: "
                            "close it, then pickle a read-only one (File(path, 'r')[name])")
        if self._file_path is None:
            raise TypeError(f"{self._path}: a column not opened through a File cannot be "
                            "pickled")
        from .file import _TORN_OK, _VERIFY

        flags = self._file_flags
        return (_reopen_column, (self._file_path, self._name, bool(flags & _TORN_OK),
                                 bool(flags & _VERIFY)))

    def __enter__(self) -> Column:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------
    # reading

    def __getitem__(self, key: Any) -> Any:
        if type(key) is slice and key.step is None:
            return self._read_slice(key)
        return _indexing.getitem(self, key, self.size, self._row_shape,
                                 self._dtype, self._what())

    def _read_slice(self, key: slice) -> np.ndarray:
        """``col[a:b]``: what ``_indexing.getitem`` does for a slice without
        a step, in the fewest steps (a small read's cost is mostly these)."""
        L = lib()
        err = ffi.new(ERROR_P)
        with self._lock:
            h = self._h
            if h is None:
                self._handle()  # raises ClosedError
            start, stop, _ = key.indices(L.cf_column_size(h))
            n = stop - start if stop > start else 0
            if n * self._rowbytes < PLACE_MIN_BYTES:
                out = np.empty((n,) + self._row_shape, self._dtype)
            else:  # placed for the copy (_buffers)
                out = empty_at((n,) + self._row_shape, self._dtype,
                               L.cf_column_row_offset(h, start))
            if n:  # a new array: C-contiguous, passed as its buffer (see _ptr)
                rc = L.cf_column_read(h, start, n, ffi.from_buffer(out), ffi.NULL,
                                      out.strides[0], out.itemsize, err)
                if rc < 0:
                    raise_error(rc, err, "file")
        return out

    def __iter__(self) -> Iterator[Any]:
        """Iterate over rows, reading blocks of rows at a time."""
        size = self.size
        step = max(1, (1 << 20) // max(1, self.itemsize * max(self._nmemb, 1)))
        for start in range(0, size, step):
            yield from self.read(start, min(size, start + step))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy is False:  # numpy 2's protocol: the rows are on disk
            raise ValueError(f"{self._what()}: unable to avoid a copy: reading the "
                             "column makes a new array")
        return self.read(dtype=dtype)

    def _what(self) -> str:
        return f"column {self._path!r}"

    def _range(self, start: int, stop: int | None, size: int,
               default_count: int | None = None) -> tuple[int, int]:
        start = whole(start, "start", low=-INT64_MAX - 1)
        if stop is not None:
            stop = whole(stop, "stop", low=-INT64_MAX - 1)
        if start < 0:
            start += size
        if stop is None:
            stop = size if default_count is None else start + default_count
        elif stop < 0:
            stop += size
        if not 0 <= start <= stop <= size:
            raise RangeError(f"{self._what()}: rows [{start}, {stop}) are outside "
                             f"[0, {size})")
        return start, stop

    def read(self, start: int = 0, stop: int | None = None, out: np.ndarray | None = None,
             dtype: Any = None) -> np.ndarray:
        """Read the rows ``start:stop`` (contiguous).

        Parameters
        ----------
        start, stop : int
            Row range; negative values count from the end.  ``stop``
            defaults to the end, or to ``start + len(out)``.
        out : numpy.ndarray, optional
            Where to read to: shape ``(n,)`` or ``(n, nmemb)``, any strides,
            any dtype the core converts to (kinds i u f c b, or S for
            byte-string columns).  Filled in place with no intermediate copy.
        dtype : dtype spec, optional
            The dtype of the new array when ``out`` is not given (values are
            converted by libcolfile with numpy's unsafe-cast rules).

        Returns
        -------
        numpy.ndarray
            ``out``, or a new array (a large one is placed where the copy
            into it is fastest, as a view of a slightly longer buffer:
            docs/performance.md, "Where a new array starts").

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> c = f.create("c", data=np.arange(6, dtype="i8"))
        >>> buf = np.zeros(10, dtype="f4")
        >>> c.read(1, 4, out=buf[:9:3])
        array([1., 2., 3.], dtype=float32)
        >>> buf[:4]
        array([1., 0., 0., 2.], dtype=float32)
        >>> f.close()
        """
        size = self.size
        if out is None:
            start, stop = self._range(start, stop, size)
            dt = self._dtype if dtype is None else np.dtype(dtype)
            out = self._new_rows(stop - start, start, dt)
        else:
            if not isinstance(out, np.ndarray):
                raise TypeError(f"out must be a numpy array, not {type(out).__name__}")
            if dtype is not None and np.dtype(dtype) != out.dtype:
                raise ValueError(f"dtype={dtype!r} contradicts out.dtype={out.dtype}")
            if not out.flags.writeable:
                raise ValueError("out is read-only")
            if out.ndim == 0:
                raise ValueError("out must have at least one dimension")
            start, stop = self._range(start, stop, size, default_count=len(out))
            want = (stop - start,) + self._row_shape
            ok = out.shape == want or (self._nmemb == 1 and out.shape == want + (1,))
            if not ok:
                raise ValueError(f"{self._what()}: out has shape {out.shape}, "
                                 f"rows {start}:{stop} need {want}")
        if stop > start:
            self._read_contig(start, stop - start, out)
        return out

    # ------------------------------------------------------------------
    # writing

    def __setitem__(self, key: Any, value: Any) -> None:
        _indexing.setitem(self, key, value, self.size, self._row_shape,
                          self._dtype, self._what())

    def write(self, start: int, data: Any) -> None:
        """Write ``data`` (``n`` rows) to rows ``start:start+n``.

        The data keeps its dtype, byte order and strides; libcolfile converts
        while writing and never modifies the caller's array.
        """
        arr = as_array(data, self._dtype)
        if arr.ndim == 0:
            raise ValueError("write() needs an array of rows, not a scalar")
        n = len(arr)
        size = self.size
        start = whole(start, "start", low=-INT64_MAX - 1)
        if start < 0:
            start += size
        start, _ = self._range(start, start + n, size)
        arr = self._rows_of(arr, n)
        if n:
            self._write_contig(start, n, arr)

    @property
    def _new_blobs_from(self) -> int | None:
        return self._made[0]

    @_new_blobs_from.setter
    def _new_blobs_from(self, first: int | None) -> None:
        # under MPI rank 0 warns, once every rank's writes are in
        if first is None or self._comm.serial or self._comm.rank == 0:
            self._made[0] = first

    def _what_made(self) -> str:
        return f"{self._path}: column {self._name!r}"

    def _made_blobs_from(self, first: int) -> None:
        if self._new_blobs_from is None or first < self._new_blobs_from:
            self._new_blobs_from = first

    def _rows_missing(self, rows: np.ndarray) -> np.ndarray | None:
        """For a read-modify-write: which of ``rows`` (in range) hold no data
        (past the last row written in their blob: a read would raise
        IncompleteError); None when all hold data."""
        counts = np.asarray(self.blob_rows, dtype=np.int64)
        if len(rows) == 0 or len(counts) == 0:
            return None
        firsts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        blob = np.searchsorted(firsts, rows, side="right") - 1
        ends = firsts + counts
        L = lib()
        err = new_error()
        held_p = ffi.new("int64_t *")
        with self._lock:
            h = self._handle()
            for b in np.unique(blob).tolist():
                rc = L.cf_column_blob_rows_held(h, b, held_p, err)
                if rc < 0:
                    raise_error(rc, err)
                ends[b] = firsts[b] + int(held_p[0])
        missing = rows >= ends[blob]
        return missing if missing.any() else None

    def _rows_of(self, arr: np.ndarray, n: int) -> np.ndarray:
        shape = (n,) + self._row_shape
        if arr.shape == shape:
            return arr  # already rows: nothing to broadcast
        try:
            return np.broadcast_to(arr, shape)
        except ValueError:
            raise ValueError(f"{self._what()}: data of shape {arr.shape} does not fit "
                             f"rows of shape {self._row_shape}") from None

    def append(self, data: Any, nfile: int | None = None, *,
               align_blobs_to_ranks: bool = False) -> None:
        """Add ``len(data)`` rows at the end, in new blob files.

        Existing blobs are never rewritten: every append that adds rows adds
        blobs (so 20 small appends make 20 more blobs; append several steps
        at once, or rewrite the column, where fewer files matter).

        Under ``comm=`` this is collective (``cf_mpi_column_grow`` and a
        collective write in C, step for step, the same bytes): each rank
        passes *its* rows, stored in rank order after the existing ones.
        The new rows are committed with the column's next collective close
        (or flush); processes killed before then leave the previous version.

        Parameters
        ----------
        data : array_like
            This rank's rows (may be empty).
        nfile : int, optional
            New blobs.  By default planned as for :meth:`File.create
            <colfile.File.create>`: ``cf_plan_nfile`` of the appended bytes
            (one per 256 MiB, at most one per rank; 1 when serial), and none
            when no rank adds a row.
        align_blobs_to_ranks : bool
            Cut the new blobs on rank boundaries (``cf_plan_blobs_by_rank``)
            instead of splitting the rows evenly; needs ``nfile`` <= the
            number of ranks.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> c = f.create("c", "i4")
        >>> c.append([1, 2, 3]); c.append(np.arange(4), nfile=2); c.append([])
        >>> c[:], c.blob_rows
        (array([1, 2, 3, 0, 1, 2, 3], dtype=int32), [0, 3, 2, 2])
        >>> f.close()
        """
        if not self._comm.serial:
            first_new = self.nfile
            _mpi.append(self._comm, self, data, nfile, align_blobs_to_ranks=align_blobs_to_ranks)
            self._made_blobs_from(first_new)
            return
        arr = as_array(data, self._dtype)
        if arr.ndim == 0:
            raise ValueError("append() needs an array of rows, not a scalar")
        n = len(arr)
        arr = self._rows_of(arr, n)
        if nfile is None:
            if n == 0:
                return  # nothing to add: no blob either
            nfile = _mpi.plan_nfile(n * self.itemsize * max(self.nmemb, 1), 1)
        nfile = whole(nfile, "nfile", high=NFILE_MAX,
                      limit=f"the most blobs a column may have, {NFILE_MAX}")
        old = self.size
        first_new = self.nfile
        self._call("cf_column_grow", n, nfile)
        self._made_blobs_from(first_new)
        if n:
            self._write_contig(old, n, arr)

    # ------------------------------------------------------------------
    # collective I/O (also serial: then this process is the only rank)

    def write_all(self, data: Any, start: int | None = None, *, mode: str = "auto",
                  concurrency: int | None = None) -> None:
        """Write every rank's rows at once (collective under MPI).

        Each rank passes *its own* rows; by default they are stored in rank
        order, rank r's from the sum of the lengths of ranks ``0..r-1`` (an
        exclusive scan), which serially is row 0.

        Parameters
        ----------
        data : array_like
            This rank's rows (``(n,)`` or ``(n, nmemb)``; any dtype the core
            converts from; may be empty).
        start : int, optional
            Where this rank's rows go (give it on every rank or on none).
        mode : {'auto', 'throttled', 'aggregated'}
            ``'throttled'``: every rank writes its own rows, at most
            ``concurrency`` ranks at a time (``cf_plan_turn``; a barrier
            between turns).  ``'aggregated'``: consecutive ranks form
            groups of about 64 MiB (``cf_plan_groups``); each converts its
            rows to the column dtype with the core's converter, and the
            group's first rank gathers them and writes them with one
            request per piece of at most 64 MiB.  ``'auto'``: aggregated
            when ranks hold less than 4 MiB on average, else throttled
            (``cf_plan_mode``).  One rank always writes directly, and so do
            communicators without ``Split``/``Gatherv``.
        concurrency : int, optional
            Ranks doing I/O at once in throttled mode (default
            ``CF_PLAN_CONCURRENCY``, 64).

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> c = f.create("c", "i4", size=4)
        >>> c.write_all([1, 2, 3, 4]); c[:]
        array([1, 2, 3, 4], dtype=int32)
        >>> f.close()
        """
        _mpi.write_all(self._comm, self, data, start, mode=mode, concurrency=concurrency)

    def read_all(self, start: int | None = None, count: int | None = None, *,
                 dtype: Any = None, concurrency: int | None = None) -> np.ndarray:
        """Read rows on every rank at once (collective under MPI).

        By default each rank reads its even share of the rows
        (:meth:`rank_slice`, ``cf_plan_share``), whatever the number of
        ranks that wrote the column.  ``start`` and ``count`` choose this
        rank's rows instead (``count`` alone: ranks read consecutive runs in
        rank order, as :meth:`write_all` stores them; ``start`` alone: to the
        end).  ``concurrency`` limits the ranks reading at once (default:
        all).  Errors on any rank are raised on every rank.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> c = f.create("c", data=np.arange(5))
        >>> c.read_all(), c.read_all(3), c.rank_slice()
        (array([0, 1, 2, 3, 4]), array([3, 4]), slice(0, 5, None))
        >>> f.close()
        """
        return _mpi.read_all(self._comm, self, start, count, dtype=dtype,
                             concurrency=concurrency)

    def rank_slice(self) -> slice:
        """The rows of this rank's even share (``cf_plan_share``; all rows
        when serial).  Independent: no communication."""
        return _mpi.rank_slice(self._comm, self.size)

    # ------------------------------------------------------------------
    # attributes (used by attrs.AttributeManager)

    def _attr_get(self, name: str) -> tuple[str, int, bytes]:
        # the out-parameters: this thread's, allocated once (they are read
        # before the call returns to Python code that could use them again)
        bufs = getattr(_ATTR_BUFS, "v", None)
        if bufs is None:
            bufs = _ATTR_BUFS.v = tuple(ffi.new(t) for t in _ATTR_OUT)
        tok, nmemb, data, err = bufs
        with self._lock:
            rc = lib().cf_column_attr_get(self._handle(), encode_name(name),
                                          tok, nmemb, data, err)
            if rc < 0:
                raise_error(rc, err, "attr")
            t = ffi.string(tok[0]).decode("ascii", "surrogateescape")
            n = nmemb[0]
            width = int(t[2:]) if t[2:].isdigit() else 0
            nbytes = n * width
            raw = ffi.buffer(data[0], nbytes)[:] if nbytes else b""
        return t, n, raw

    def _attr_set(self, name: str, tok: str, nmemb: int, data: bytes) -> None:
        # Under MPI every rank calls: rank 0's handle writes the files, the
        # replicas keep the value in memory; failures are agreed on.
        def call() -> None:
            err = ffi.new(ERROR_P)
            buf = ffi.from_buffer(data) if data else ffi.NULL
            L = lib()
            with self._lock:
                rc = L.cf_column_attr_set(self._handle(), encode_name(name), tok.encode("ascii"),
                                          nmemb, buf, err)
            if rc < 0:
                raise_error(rc, err, "attr")

        if self._comm.serial:
            call()
        else:
            self._enter("attrs[name] = value")
            _mpi.agree(self._comm, call)

    def _attr_delete(self, name: str) -> None:
        if not self._comm.serial:
            self._enter("del attrs[name]")
        _mpi.agree(self._comm, lambda: self._call(
            "cf_column_attr_delete", encode_name(name), context="attr"))

    def _attr_names(self) -> list[str]:
        names = ffi.new("char ***")
        count = ffi.new("int64_t *")
        self._call("cf_column_attr_names", names, count)
        return take_strings(names[0], count[0])

    # ------------------------------------------------------------------
    # blobs, checksums

    def blob_info(self, i: int) -> dict[str, Any]:
        """What the metadata says about blob ``i``.

        Returns
        -------
        dict
            ``rows``; ``sum`` (bigfile's running byte sum) and ``fold`` (its
            SysV fold, as in the header); ``crc32c`` (int, or None when no
            current CRC32C is recorded).
        """
        L = lib()
        crc = ffi.new("uint32_t *")
        with self._lock:
            h = self._handle()
            rows = int(L.cf_column_blob_rows(h, i))
            if rows < 0 or i < 0:
                raise RangeError(f"{self._what()}: no blob {i} "
                                 f"(nfile is {L.cf_column_nfile(h)})")
            s = int(L.cf_column_blob_sum(h, i))
            known = L.cf_column_blob_crc32c(h, i, crc)
        return {"rows": rows, "sum": s, "fold": fold(s),
                "crc32c": int(crc[0]) if known else None}

    def checksums(self) -> list[dict[str, Any]]:
        """:meth:`blob_info` of every blob."""
        return [self.blob_info(i) for i in range(self.nfile)]

    def verify_blob(self, i: int) -> set[str]:
        """Read blob ``i`` and compare it with the metadata.

        Returns
        -------
        set of str
            ``{"OK"}``, or some of ``MISSING``, ``SHORT``, ``LONG``,
            ``SUM_MISMATCH``, ``CRC_MISMATCH``, ``CRC_UNKNOWN``,
            ``STATS_MISMATCH`` (recorded statistics disagree with the data),
            ``STATS_DAMAGED`` (recorded statistics are inconsistent in
            themselves, e.g. a minimum above the maximum).
        """
        status = ffi.new("unsigned *")
        self._call("cf_column_verify_blob", i, status)
        bits = int(status[0])
        found = {name for bit, name in _BLOB_STATUS if bits & bit}
        return found or {"OK"}

    @property
    def ext_state(self) -> str:
        """Whether the CRC32C values and statistics recorded for the column
        apply to its data (``cf_column_ext_state``; docs/format.md 8.1):
        ``"current"`` (they do, and reads, checks and queries use them), or,
        all of them being unknown then, ``"absent"`` (none recorded),
        ``"unbound"`` (recorded by an older colfile), ``"stale"`` (the header
        changed since: another tool wrote the column, or a copy did not keep
        modification times; ``colfile index`` recomputes them),
        ``"damaged"`` (the file fails its checksum; ``colfile repair``),
        ``"updating"`` (another process is updating rows in place) or
        ``"torn"`` (such an update was interrupted).  Under MPI, a column
        opened collectively gets rank 0's CRC32C and statistics (what rank 0
        trusts): only rank 0 tells the state of the files."""
        state = ffi.new("int *")
        self._call("cf_column_ext_state", state)
        return _EXT_STATES[state[0]]

    @property
    def torn(self) -> bool:
        """True if the column was marked torn when opened (an in-place
        update was interrupted; possible only with ``File(...,
        torn='warn')``)."""
        with self._lock:
            return bool(lib().cf_column_torn(self._handle()))

    def repair(self) -> set[str]:
        """Make the column consistent with the data its blobs hold, and
        commit (``cf_column_repair``): recompute byte sums, CRC32C and
        statistics, cut bytes past each blob's rows, remove blobs numbered
        beyond NFILE, clear the torn mark.  The rows are not changed.

        Returns
        -------
        set of str
            What was fixed: some of ``sums``, ``crc``, ``truncated``,
            ``stray``, ``torn``.

        Raises
        ------
        FormatError
            A blob is missing or short: its rows cannot be recovered.
        BusyError
            Another writer holds the column.
        """
        fixed = ffi.new("unsigned *")
        self._call("cf_column_repair", fixed)
        bits = int(fixed[0])
        return {name for bit, name in _REPAIR_BITS if bits & bit}

    # ------------------------------------------------------------------
    # data characteristics (per-chunk statistics) and queries

    @property
    def chunk_rows(self) -> int:
        """Rows per statistics chunk (``cf_column_chunk_rows``; 0 for
        columns without data).  Chunks restart at every blob."""
        with self._lock:
            return int(lib().cf_column_chunk_rows(self._handle()))

    def chunk_stats(self, component: int | None = None) -> np.ndarray:
        """The per-chunk statistics of the column (``cf_column_chunk_stats``).

        Parameters
        ----------
        component : int, optional
            The vector component (negative counts from the end).  By default
            all of them: the result then has shape ``(nchunks, nmemb)`` for
            vector columns.

        Returns
        -------
        numpy.ndarray
            A structured array of records in row order with the fields of
            ``cf_chunk_stats``: ``blob``, ``first_row``, ``rows``, ``valid``
            (False: unknown or stale -- never trust the other numbers then),
            ``ordered``, ``count``, ``nan_count``, ``min``, ``max`` (doubles
            rounded outward), ``sum``.  A blob whose statistics are known
            has one record per chunk; a blob whose statistics are unknown
            has one record (``valid`` False) covering all its rows, so the
            result grows with the statistics that exist, never with the
            rows a header claims.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> c = f.create("c", "f8", size=6, chunk_rows=4)
        >>> c[:] = [3.0, 1.0, np.nan, 2.0, 7.0, 5.0]
        >>> c.flush()
        >>> s = c.chunk_stats()
        >>> s["first_row"], s["rows"], s["nan_count"], s["min"], s["max"]
        (array([0, 4]), array([4, 2]), array([1, 0]), array([1., 5.]), array([3., 7.]))
        >>> f.close()
        """
        L = lib()
        nmemb = max(self._nmemb, 1)
        if component is None:
            comps = list(range(nmemb))
        else:
            j = int(component)
            if not -nmemb <= j < nmemb:
                raise IndexError(f"{self._what()}: component {component} is out of range "
                                 f"for {nmemb} component(s)")
            comps = [j % nmemb]
        recs: list[list[tuple[Any, ...]]] = []
        with self._lock:
            h = self._handle()
            st = ffi.new("cf_chunk_stats *")
            err = new_error()

            def get(k: int, j: int) -> tuple[Any, ...]:
                rc = L.cf_column_chunk_stats(h, k, j, st, err)
                if rc < 0:
                    raise_error(rc, err)
                return (st.blob, st.first_row, st.rows, st.valid, st.ordered,
                        st.count, st.nan_count, st.min, st.max, st.sum)

            crows = int(L.cf_column_chunk_rows(h)) if self._kind == 0 else 0
            k = 0  # the blob's first chunk, in the numbering of cf_column_chunk_stats
            for b in range(int(L.cf_column_nfile(h)) if crows > 0 else 0):
                rows = int(L.cf_column_blob_rows(h, b))
                nc = -(-rows // crows) if rows > 0 else 0
                if nc == 0:
                    continue
                # validity is the blob's: unknown statistics come as one record
                first = get(k, comps[0])
                if not first[3]:
                    rec = (b, first[1], rows, False, first[4], 0, 0, np.nan, np.nan, 0.0)
                    recs.append([rec] * len(comps))
                else:
                    for kk in range(k, k + nc):
                        recs.append([first if kk == k and i == 0 else get(kk, j)
                                     for i, j in enumerate(comps)])
                k += nc
        out = np.zeros((len(recs), len(comps)), CHUNK_STATS_DTYPE)
        for r, row in enumerate(recs):
            for i, rec in enumerate(row):
                out[r, i] = rec
        if component is not None or self._nmemb <= 1:
            return out[:, 0]
        return out

    def index_blobs(self, blobs: Any = None) -> None:
        """Recompute the CRC32C and statistics of blobs from their data
        (``cf_column_index_blob``), for columns written by other tools or
        with stale statistics; committed by the next :meth:`flush` or
        :meth:`close`.  ``blobs``: blob numbers (default all)."""
        todo = range(self.nfile) if blobs is None else [int(b) for b in blobs]
        # pending state to commit, like a write's: under MPI a column opened
        # by one rank alone hands it to the File's collective close
        self._wrote = True
        for b in todo:
            self._call("cf_column_index_blob", b)

    def field(self, j: int | None = None) -> Any:
        """A lazy reference to the values of this column (component ``j``
        of a vector column), to build query predicates from: see
        :mod:`colfile.query`.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> pos = f.create("pos", data=np.arange(12.0).reshape(4, 3))
        >>> (pos.field(0) > 2) & (pos.field(2) < 11)
        <colfile.Predicate (pos[0] > 2) & (pos[2] < 11)>
        >>> f.close()
        """
        from .query import Field

        return Field(self, j)

    def where(self, predicate: Any) -> Any:
        """The rows where ``predicate`` holds, skipping chunks whose
        statistics decide it: a :class:`~colfile.query.Selection`.

        ``predicate`` is a :class:`~colfile.query.Predicate` or an expression
        string naming this column (by its name or its last path component)
        and, if the column belongs to a File, any column of the File.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> m = f.create("Mass", data=np.array([5.0, 1.0, 7.0, 3.0]))
        >>> m.where("Mass > 2").rows
        array([0, 2, 3])
        >>> m.where(m.field() <= 3).read("Mass")
        array([1., 3.])
        >>> f.close()
        """
        from .query import where

        return where(self, predicate)

    # ------------------------------------------------------------------
    # dask

    def to_dask(self, chunks: Any = "auto") -> dask.array.Array:
        """A lazy dask array of the column.

        Each chunk is read by a task that opens the File afresh, read-only,
        by its absolute path: the graph pickles and runs in threads, in
        other processes and on ``dask.distributed`` workers, whatever their
        working directory.  The tasks read what is committed: flush a
        column being written (or close it) before computing.

        Parameters
        ----------
        chunks : int, str, tuple or dict, default ``"auto"``
            As for :func:`dask.array.from_array`: rows per chunk (an int
            applies to every axis, as in dask), ``-1`` for a whole axis,
            explicit sizes per axis, or a dict of axes.  ``"auto"`` gives
            chunks of about 8 MiB (``colfile._dask.CHUNK_BYTES``) and a byte
            size such as ``"64MiB"`` chunks of that size; both end chunks on
            blob boundaries where they can (small blobs merged, large ones
            cut into equal pieces) and keep each row of a vector column
            whole.  ``"blobs"``: one chunk per non-empty blob.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> c = f.create("c", data=np.arange(10.0), nfile=3)
        >>> c.flush()
        >>> c.to_dask().chunks, c.to_dask(chunks="blobs").chunks, c.to_dask(chunks=4).chunks
        (((10,),), ((3, 3, 4),), ((4, 4, 2),))
        >>> float(c.to_dask(chunks=4).sum().compute())
        45.0
        >>> f.close()
        """
        from . import _dask

        return _dask.column(self, chunks)


def _reopen_column(file_path: str, name: str, torn_ok: bool, verify: bool) -> Column:
    """Unpickle a Column: open its File again (read-only, serial) and the
    column in it; the column keeps that File alive."""
    from .file import _reopen_file

    f = _reopen_file(file_path, torn_ok, verify)
    col: Column = f[name]
    col._owner = f
    return col
