"""A column's handle: opening, describing, committing and releasing it,
and the row primitives the reads and writes of :class:`~colfile.Column`
are built from (:mod:`colfile._indexing`'s RowIO).  The base of
:class:`~colfile.Column`; see there for the contract.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _html
from . import mpi as _mpi
from ._buffers import PLACE_MIN_BYTES, empty_at
from ._dtypes import from_token, token
from ._core import column as _c
from ._core import integrity as _integrity
from ._core.constants import KIND_NAMES
from .attrs import AttributeManager
from .errors import ClosedError, CollectiveError, Error, IncompleteWarning

if TYPE_CHECKING:
    from .file import File

__all__ = ["ColumnHandle", "fold"]



def _release(handle: Any, made: list[int | None] | None = None, what: str = "") -> None:
    """Finalizer: close a handle nobody closed (errors cannot be reported;
    rows never written of blobs it made are warned about, see Column.close)."""
    ranges: list[tuple[int, int]] = []
    if made is not None and made[0] is not None:
        try:
            ranges = _unwritten_of(handle, made[0])
        except Exception:  # the library may be gone at interpreter exit
            ranges = []
    _c.release(handle)
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
    out: list[tuple[int, int]] = []
    row = 0
    for b, n in enumerate(_c.all_blob_rows(h)):
        if b >= first and n:
            held = _c.blob_rows_held(h, b)
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
_WRITERS: weakref.WeakSet[ColumnHandle] = weakref.WeakSet()


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
            _c.forget(h)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


_DTYPES: dict[str, np.dtype[Any]] = {}


def _dtype_of(tok: str) -> np.dtype[Any]:
    """``from_token``, remembered per token (opening thousands of columns
    would otherwise build the same numpy dtype each time)."""
    dt = _DTYPES.get(tok)
    if dt is None:
        dt = _DTYPES[tok] = from_token(tok)
    return dt


def fold(rawsum: int) -> int:
    """The SysV fold of a bigfile running byte sum (what ``sum -s`` prints).

    >>> fold(96585)
    31050
    """
    return _integrity.fold(rawsum)


class ColumnHandle:
    """A column's handle and what depends on it alone (see
    :class:`~colfile.Column`, which is one)."""

    def __init__(self, handle: Any, file: File | None = None, *, comm: Any = None,
                 name: str | None = None,
                 desc: tuple[str, str, str, int, bool, int] | None = None) -> None:
        # Opening a column is mostly this method when the catalog is fresh:
        # kept to plain steps (the Comm of a File is taken as it is; ``desc``
        # is _c.describe(handle, name) when the opener already has it).
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
        self._name, self._path, tok, kind, writable, n = \
            desc if desc is not None else _c.describe(handle, name)
        self._writable = writable
        # A handle that can commit is closed (committed) by a finalizer that
        # also runs at exit; a read-only one holds only memory, which __del__
        # gives back: a weakref.finalize costs more than opening from the
        # catalog.
        self._finalizer: Any = None
        # File(deferred=True): close() hands the handle to the File's committer
        self._defer: Any = file._commits if self._writable and file is not None else None
        if self._writable:
            self._finalizer = weakref.finalize(self, _release, handle, self._made, self._what_made())
            _WRITERS.add(self)
        self._token = tok
        dt = _DTYPES.get(tok)
        self._dtype = dt if dt is not None else _dtype_of(tok)
        self._nmemb = n
        self._row_shape = () if n == 1 else (n,)
        self._rowbytes = self._dtype.itemsize * n
        self._kind = kind
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
                _c.release(h)
            except Exception:  # the library is gone at interpreter exit
                pass

    # ------------------------------------------------------------------
    # plumbing

    def _handle(self) -> Any:
        h = self._h
        if h is None:
            raise ClosedError(f"{self._path}: column {self._name!r} is closed")
        return h

    def _call(self, fn: Any, *args: Any) -> Any:
        """``fn(handle, *args)``, a function of the binding tier, on this
        handle (one call at a time); ``fn`` may also name a C column
        function (``"cf_column_grow"``), called with an error record."""
        if type(fn) is str:
            fn = _c.by_name(fn)
        with self._lock:
            return fn(self._handle(), *args)

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
        tok = None if dt == self._dtype else token(dt)
        with self._lock:
            _c.read(self._handle(), start, count, out, tok, rs, es)

    def _new_rows(self, count: int, first: int, dtype: np.dtype[Any] | None = None) -> np.ndarray:
        """A new array for ``count`` rows read from row ``first`` on, of the
        column's dtype or ``dtype``; a large one read without conversion is
        placed for the copy that fills it (_buffers)."""
        dt = self._dtype if dtype is None else dtype
        shape = (count,) + self._row_shape
        if count * self._rowbytes < PLACE_MIN_BYTES or dt != self._dtype:
            return np.empty(shape, dt)
        with self._lock:
            offset = _c.row_offset(self._handle(), first)
        return empty_at(shape, dt, offset)

    def _read_rows(self, rows: np.ndarray, out: np.ndarray) -> None:
        rs, es = self._strides(out)
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        self._call(_c.read_rows, rows, out, token(out.dtype), rs, es)

    def _read_step(self, start: int, step: int, count: int, out: np.ndarray) -> None:
        rs, es = self._strides(out)
        self._call(_c.read_step, start, step, count, out, token(out.dtype), rs, es)

    def _write_contig(self, start: int, count: int, data: np.ndarray) -> None:
        # Spelled out like _read_contig (a create with data= comes here once
        # per column): NULL dtype when the rows already have the column's.
        rs, es = self._strides(data)
        dt = data.dtype
        tok = None if dt == self._dtype else token(dt)
        with self._lock:
            h = self._handle()
            try:
                _c.write(h, start, count, data, tok, rs, es)
            finally:
                self._wrote = True

    # several writers, one commit (the parallel layers move these bytes)

    def _pending_export(self) -> bytes:
        """This handle's uncommitted write state (per-blob byte-sum increments
        and CRC32C of the ranges written), leaving the handle clean so its
        close commits nothing.  See ``cf_column_pending_export``."""
        return self._call(_c.pending_export)

    def _discard(self) -> None:
        """Give up uncommitted changes: closing commits nothing
        (``cf_column_discard``)."""
        with self._lock:
            _c.discard(self._handle())

    def _pending_merge(self, state: bytes) -> None:
        """Add another handle's exported state; the next flush commits both."""
        self._call(_c.pending_merge, state)

    def _write_bytes(self, start: int, count: int, buf: np.ndarray) -> None:
        """Write ``count`` rows already in the column's dtype, packed in the
        contiguous byte buffer ``buf``."""
        rowbytes = self.itemsize * max(self._nmemb, 1)
        assert buf.nbytes >= count * rowbytes
        self._wrote = True
        self._call(_c.write, start, count, buf, self._token.encode("ascii"),
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
            _c.release(old)

    def _write_sorted(self, rows: np.ndarray, data: np.ndarray) -> None:
        rs, es = self._strides(data)
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        self._wrote = True
        self._call(_c.write_rows, rows, data, token(data.dtype), rs, es)

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
        return KIND_NAMES.get(self._kind, str(self._kind))

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
            return _c.size(self._handle())

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
            return _c.nfile(self._handle())

    @property
    def blob_rows(self) -> list[int]:
        """Rows held by each blob file, in file order."""
        with self._lock:
            return _c.all_blob_rows(self._handle())

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
        self._call(_c.flush)

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
                _c.release(h)
                return
            _c.close(h)


    def __enter__(self) -> ColumnHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

