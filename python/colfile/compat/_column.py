"""Blocks of the bigfile compatibility layer: :class:`Column` (a block
opened through a File) and :class:`ColumnMPI` (one opened collectively).
Public through :mod:`colfile.compat.bigfile`.
"""

from __future__ import annotations

import operator
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import mpi as _mpi
from .._constants import CF_OPEN_NOCHECK, CF_OPEN_NOLOCK, CF_OPEN_WRITE
from .._core import file as _cf
from .._ints import NFILE_MAX, whole
from ..column import Column as _CoreColumn
from ..errors import ClosedError as _CoreClosedError
from ..errors import ColumnKindError, DTypeError, InvalidArgumentError, RangeError
from ._base import (
    AttrSet,
    ColumnClosedError,
    FileClosedError,
    _check_passthrough,
    _core_column,
    _name,
    _open_core,
    _open_replica,
    _same,
    _split_dtype,
)

if TYPE_CHECKING:
    from .bigfile import File

__all__ = ["Column", "ColumnMPI"]


class Column:
    """A block (column) of a bigfile File, opened with ``file[name]``,
    ``file.open(name)`` or ``file.create(...)``.

    ``Column()`` makes an unattached handle; :meth:`open` or :meth:`create`
    attach it to a block of a :class:`File`.

    As in bigfile 0.1.52, :meth:`close` commits the header and the object
    stays usable: the next read, write or attribute access reopens the block
    (its checksums resume from the committed header), and what is written
    then is committed by the next :meth:`close`, or when the object is
    garbage collected.  Only an unattached ``Column()`` raises
    :class:`ColumnClosedError`.
    """

    comm: Any = None

    def __init__(self) -> None:
        self._core: _CoreColumn | None = None
        self._basename: str | None = None
        self._name: str | None = None
        self._meta: tuple[int, np.dtype[Any], int] | None = None
        self._reopen_lock = threading.Lock()

    # -- plumbing ------------------------------------------------------

    def _live(self) -> _CoreColumn:
        """The open core handle, reopening the block after a close."""
        core = self._core
        if core is not None and not core.closed:
            return core
        if self._basename is None or self._name is None:
            raise ColumnClosedError(self)
        with self._reopen_lock:
            core = self._core
            if core is None or core.closed:
                core = self._reopen(self._basename, self._name)
                self._core, self._meta = core, None
        return core

    def _reopen(self, basename: str, name: str) -> _CoreColumn:
        """A fresh handle on the block, for use after a close."""
        return _open_core(basename, name)

    def _do(self, fn: Callable[[_CoreColumn], Any], retry: bool = True) -> Any:
        """``fn(core)`` on the live handle.  A handle closed by another
        thread before the call started is reopened (``retry``) or reported
        as :class:`ColumnClosedError`."""
        for _ in range(3 if retry else 1):
            core = self._live()
            try:
                return fn(core)
            except _CoreClosedError:
                continue
        raise ColumnClosedError(self)

    def _attach(self, core: _CoreColumn, basename: str) -> None:
        old = self._core
        self._core, self._basename, self._name, self._meta = core, basename, core.name, None
        if old is not None and not old.closed:
            old.close()

    def _path(self) -> str:
        core = self._core
        if core is not None:
            return core.path
        if self._basename is not None and self._name is not None:
            return os.path.join(self._basename, self._name)
        return "<unattached column>"

    # -- opening -------------------------------------------------------

    def open(self, f: File, blockname: str) -> Column:
        """Open block ``blockname`` of File ``f`` on this handle."""
        self._attach(f._core_open(blockname), f.basename)
        return self

    def create(self, f: File, blockname: str, dtype: Any = None, size: int | None = None,
               Nfile: int = 1) -> Column:
        """Create (or replace) block ``blockname`` of File ``f`` and open it
        on this handle; ``dtype=None`` makes a header-only block."""
        self._attach(f._core_create(blockname, dtype, size, Nfile), f.basename)
        return self

    # -- description ---------------------------------------------------

    @property
    def size(self) -> int:
        """Rows in the block."""
        meta = self._meta
        if meta is not None:
            return meta[0]
        return self._do(lambda c: c.size)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The dtype of one row: ``dtype('<f8')`` or, for vectors,
        ``dtype(('<f8', (3,)))``."""
        meta = self._meta
        if meta is not None:
            return meta[1]
        return self._do(self._dtype_of)

    @staticmethod
    def _dtype_of(c: _CoreColumn) -> np.dtype[Any]:
        if c.nmemb == 1:
            return c.dtype
        return np.dtype((c.dtype, (c.nmemb,)))

    @property
    def Nfile(self) -> int:  # noqa: N802 - bigfile's name
        """The number of blob files."""
        meta = self._meta
        if meta is not None:
            return meta[2]
        return self._do(lambda c: c.nfile)

    @property
    def attrs(self) -> AttrSet:
        """The block's attributes (see :class:`AttrSet`)."""
        return AttrSet(self)

    def __repr__(self) -> str:
        if self._name is None:
            return f"<{type(self).__name__} (not attached)>"
        state = " (closed)" if self._meta is not None else ""
        try:
            return (f"<{type(self).__name__}: {self._path()!r} dtype={self.dtype}, "
                    f"size={self.size}{state}>")
        except Exception:
            return f"<{type(self).__name__}: {self._path()!r}{state}>"

    # -- life cycle ----------------------------------------------------

    def flush(self) -> None:
        """Commit the header checksums to disk."""
        self._do(lambda c: c.flush())

    def close(self) -> None:
        """Commit the header and release the handle; closing twice is
        harmless.  ``size``, ``dtype`` and ``Nfile`` stay readable without
        reopening."""
        core = self._core
        if core is None or core.closed:
            return
        try:
            self._meta = (core.size, self._dtype_of(core), core.nfile)
        except _CoreClosedError:  # closed by another thread meanwhile
            return
        core.close()

    def __enter__(self) -> Column:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self) -> Any:
        is_open = self._core is not None and not self._core.closed
        return (_restore_column,
                (type(self), self.comm, self._basename, self._name, is_open, self._meta))

    # -- data ----------------------------------------------------------

    def _rows(self, c: _CoreColumn, buf: Any) -> np.ndarray:
        """``buf`` as rows for this column: 1-d for scalars, (n, nmemb)."""
        arr = np.asarray(buf)
        if arr.dtype.kind == "O":
            try:
                arr = np.asarray(buf, dtype=c.dtype)
            except (TypeError, ValueError) as exc:
                raise DTypeError(f"{c.path}: cannot convert {type(buf).__name__} "
                                 f"to {c.dtype}: {exc}") from None
        if arr.dtype.kind == "U" and c.dtype.kind != "S":
            raise DTypeError(f"{c.path}: cannot write {arr.dtype} strings to a "
                             f"{c.dtype} column")
        _check_passthrough(arr.dtype, c.dtype, c.path)
        nmemb = c.nmemb
        if nmemb == 0:
            raise ColumnKindError(f"{c.path}: a header-only block holds no data")
        if nmemb == 1:
            return arr.reshape(-1)
        if arr.ndim == 2 and arr.shape[1] == nmemb:
            return arr
        flat = arr.reshape(-1)
        if flat.size % nmemb:
            raise InvalidArgumentError(f"{c.path}: {flat.size} elements are not whole rows "
                                       f"of {nmemb}")
        return flat.reshape(-1, nmemb)

    def read(self, start: int, length: int, out: np.ndarray | None = None) -> np.ndarray:
        """Read ``length`` rows from row ``start`` (clipped at the end of the
        block; a negative ``length`` reads to the end) into ``out`` or a new
        array."""
        start, length = operator.index(start), operator.index(length)

        def run(c: _CoreColumn) -> np.ndarray:
            size = c.size
            n = length
            if not 0 <= start <= size:
                raise RangeError(f"{c.path}: reading beyond the block: start {start}, "
                                 f"size {size}")
            if n < 0 or n > size - start:
                n = size - start
            row = () if c.nmemb == 1 else (c.nmemb,)
            if out is None:
                result = np.empty((n,) + row, c.dtype)
            else:
                if not isinstance(out, np.ndarray):
                    raise TypeError(f"out must be a numpy array, not {type(out).__name__}")
                if len(out) != n:
                    raise ValueError(f"{c.path}: out has {len(out)} rows, the request {n}")
                _check_passthrough(c.dtype, out.dtype, c.path)
                result = out
            if n:
                c.read(start, start + n, out=result)
            return result

        return self._do(run)

    def write(self, start: int, buf: Any) -> None:
        """Write the rows of ``buf`` from row ``start``, converting them to
        the block's dtype; :class:`Error` if they do not fit."""
        start = operator.index(start)

        def run(c: _CoreColumn) -> None:
            arr = self._rows(c, buf)
            if start < 0:
                raise RangeError(f"{c.path}: writing before the block: start {start}")
            c.write(start, arr)

        self._do(run)

    def append(self, buf: Any, Nfile: int = 1) -> None:
        """Add the rows of ``buf`` at the end, in ``Nfile`` new blob files
        (committed at once, as bigfile does)."""
        nfile = whole(Nfile, "Nfile", high=NFILE_MAX,
                      limit=f"the most blobs a column may have, {NFILE_MAX}")

        def run(c: Any) -> None:
            c.append(self._rows(c, buf), nfile=nfile)
            c.flush()

        self._do(run, retry=False)

    def _start_of(self, index: Any, size: int) -> tuple[int, int, bool]:
        """(start, stop, is_row) of a bigfile index: slice, ``...`` or int."""
        if index is Ellipsis:
            return 0, size, False
        if isinstance(index, slice):
            start, stop, step = index.indices(size)
            if step != 1:
                raise ValueError("must request a contiguous chunk")
            return start, max(stop, start), False
        if isinstance(index, (bool, np.bool_)):
            raise TypeError("Expecting a slice, an int or ..., got a bool")
        try:
            i = operator.index(index)
        except TypeError:
            raise TypeError(f"Expecting a slice, an int or ..., got a "
                            f"`{type(index).__name__}`") from None
        if i < 0:
            i += size
        if not 0 <= i < size:
            raise RangeError(f"{self._path()}: row {operator.index(index)} is out of "
                             f"range for size {size}")
        return i, i + 1, True

    def __getitem__(self, index: Any) -> Any:
        start, stop, row = self._start_of(index, self.size)
        data = self.read(start, stop - start)
        return data[0] if row else data

    def __setitem__(self, index: Any, value: Any) -> None:
        start, _, _ = self._start_of(index, self.size)
        self.write(start, value)

    # -- attributes (used by AttrSet) -----------------------------------

    def _attr_raw(self, name: str) -> tuple[str, int, bytes]:
        return self._do(lambda c: c.attrs.raw(name))

    def _attr_store(self, name: str, token: str, nmemb: int, data: bytes) -> None:
        self._do(lambda c: c.attrs.set_raw(name, token, nmemb, data))

    def _attr_delete(self, name: str) -> None:
        def run(c: _CoreColumn) -> None:
            del c.attrs[name]
        self._do(run)

    def _attr_names(self) -> list[str]:
        return self._do(lambda c: sorted(c.attrs))


def _restore_column(cls: type, comm: Any, basename: str | None, name: str | None,
                    is_open: bool, meta: Any) -> Column:
    col = cls.__new__(cls)
    Column.__init__(col)
    if comm is not None:
        col.comm = comm
        col._mpi = _mpi.as_comm(comm)
    if basename is None or name is None:
        return col
    col._basename, col._name = basename, name
    if is_open:
        col._attach(col._reopen(basename, name), basename)
    else:
        col._meta = meta
    return col


class ColumnMPI(Column):
    """A block opened collectively by every rank of ``comm``.

    Built on :mod:`colfile.mpi`: ``open`` and ``create`` are collective --
    rank 0 alone reads (or writes) the block's metadata and broadcasts a
    snapshot, from which the other ranks build *replica* handles that write
    blobs but never metadata files.  Each rank writes its own rows;
    ``flush``/``close`` send every other rank's uncommitted write state
    (byte-sum increments and CRC32C of the ranges written, exported by
    libcolfile) to rank 0, whose handle merges them and commits one header:
    what a single writer of the same bytes would record.  ``append`` is
    collective.  Attributes are written by rank 0; the other ranks' replicas
    keep the values they set in memory.  A failure on any rank during a
    collective raises the same exception on every rank.
    """

    def __init__(self, comm: Any) -> None:
        super().__init__()
        self.comm = comm
        self._mpi = _mpi.as_comm(comm)

    def _reopen(self, basename: str, name: str) -> _CoreColumn:
        # after a close each rank reopens on its own: only rank 0 may write
        # metadata, the others get a replica
        if self._mpi.rank == 0:
            return _open_core(basename, name)
        return _open_replica(basename, name)

    # -- collective opening --------------------------------------------

    def _replicate(self, f: File, name: str, make: Callable[[], Any]) -> ColumnMPI:
        def prep() -> str:
            _cf.name_check(name)
            if f._h is None:
                raise FileClosedError(f)
            return name

        _same(self._mpi, prep, "blockname")
        handle = _mpi.replicate(self._mpi, f._h, make)
        self._attach(_core_column(handle), f.basename)
        return self

    def open(self, f: File, blockname: str) -> ColumnMPI:
        """Open ``blockname`` on every rank (collective)."""
        name = _name(blockname)
        return self._replicate(f, name, lambda: f._core_open_handle(name))

    def create(self, f: File, blockname: str, dtype: Any = None, size: int | None = None,
               Nfile: int = 1) -> ColumnMPI:
        """Rank 0 creates the block; every rank gets a handle (collective)."""
        name = _name(blockname)
        _same(self._mpi, lambda: (size, Nfile, None if dtype is None else
                                  str(_split_dtype(dtype))), "block size, Nfile or dtype")
        return self._replicate(f, name,
                               lambda: f._core_create_handle(name, dtype, size, Nfile))

    # -- collective commit ---------------------------------------------

    def flush(self) -> None:
        """Commit the merged header checksums (collective)."""
        _mpi.commit(self._mpi, self._live())

    def close(self) -> None:
        """Commit the merged header checksums and release (collective).
        Closing a closed handle does nothing."""
        core = self._core
        if core is None or core.closed:
            return
        try:
            self._meta = (core.size, self._dtype_of(core), core.nfile)
        except _CoreClosedError:
            return
        _mpi.commit(self._mpi, core, close=True)

    def append(self, buf: Any, Nfile: int = 1) -> None:
        """Collective append: each rank passes its rows; rank 0 adds
        ``Nfile`` blobs holding all of them, stored in rank order."""
        comm = self._mpi
        c = _mpi.agree(comm, self._live)
        arr = _mpi.agree(comm, lambda: self._rows(c, buf))
        basename = self._basename
        assert basename is not None
        files: list[Any] = []

        def file_handle() -> Any:
            h = _cf.open(basename, CF_OPEN_WRITE | CF_OPEN_NOCHECK | CF_OPEN_NOLOCK)
            files.append(h)
            return h

        try:
            _mpi.append(comm, c, arr, operator.index(Nfile), file_handle=file_handle)
        finally:
            for h in files:
                _cf.close(h)


for _cls in (Column, ColumnMPI):
    _cls.__module__ = "colfile.compat.bigfile"
del _cls
