"""bigfile 0.1.52's Python API, implemented on colfile.

Code written for bigfile (nbodykit, for one) runs on colfile after changing
only its import::

    import colfile.compat.bigfile as bigfile
    from colfile.compat.bigfile import BigFile, BigFileMPI, BigData

The files written are bigfile files (colfile reads and writes bigfile
0.1.52's on-disk format exactly), so the original library and this module
can share data in both directions.

What is provided
----------------
``File``/``BigFile``, ``FileMPI``/``BigFileMPI``, ``Column``/``BigBlock``,
``ColumnMPI``/``BigBlockMPI``, ``Dataset``/``BigData``, ``Error``/
``BigFileError``, ``FileClosedError``/``BigFileClosedError``,
``ColumnClosedError``/``BigBlockClosedError``, ``set_buffer_size``,
``check_unique`` and ``__version__`` (``"0.1.52"``, the API level emulated;
colfile's own version is ``colfile.__version__``).

Semantics kept from bigfile
---------------------------
* ``File(filename, create=False)`` opens a directory for reading *and*
  writing; ``create=True`` makes it if needed (nothing is emptied).
  ``f.blocks`` is a cached listing (refreshed by ``create``;
  ``list_blocks()`` always lists), ``f['a/b']`` opens a block,
  ``f['grp/']`` gives ``subfile('grp/')``, ``in`` and iteration use
  ``blocks``.  Files and columns pickle (also when closed) and unpickle by
  reopening.
* Every ``open``/``[]`` gives an independent column handle; ``close`` (or
  the end of a ``with`` block) commits its header checksums.  As in bigfile
  0.1.52, a closed column stays usable: the next read, write or attribute
  access reopens the block (the checksums resume from the committed header)
  and what is written then is committed by the next ``close`` or when the
  object is garbage collected.  ``size``, ``dtype`` and ``Nfile`` are
  remembered at ``close``.
* ``Column.dtype`` carries the vector shape (``dtype(('<f4', (3,)))``);
  ``read(start, length)`` clips ``length`` at the end of the column (a
  negative length reads to the end); ``write(start, array)`` converts to the
  column dtype and raises :class:`Error` past the end; ``append(array,
  Nfile=1)`` adds new blobs; ``col[a:b]``, ``col[i]`` and ``col[...]`` read
  and write contiguous rows only (a step raises ``ValueError``); assigning to
  a slice writes the whole value from the slice's start, as bigfile does.
* half floats (``f2``) are pass-through: they are written and read without
  conversion, and converting to or from them raises :class:`Error`.
* Attributes (``col.attrs``): a ``str`` is stored as text (``<a1``) and reads
  back as ``str``; byte strings and lists of strings read back as a ``list``
  of ``str``; numbers, booleans, lists and arrays read back as numpy
  **arrays** (``attrs['n'] = 1`` reads ``array([1])``); kinds other tools
  wrote (``<U4``, ``<M8``, ``<O8``, ...) read back as arrays of opaque
  ``V<width>`` elements, the width in bytes as the token says.  Objects and object
  arrays raise ``ValueError``; names holding a space, tab or newline raise
  :class:`Error`.
* ``Dataset(file, column_names=None)`` reads several columns of one length
  as a structured array: ``ds[a:b]``, ``ds[i]``, ``ds['col']`` (the
  :class:`Column`), ``ds[['a', 'b']]`` (a narrower Dataset),
  ``ds['col', a:b]``, ``ds[a:b, 'col']``, ``ds[['a', 'b'], a:b]``,
  assignment of a structured array to a slice, and ``append``.  As in
  bigfile, every field is a sub-array of the column's ``nmemb`` elements,
  ``(1,)`` for a scalar column: ``ds[:4]['ID'].shape`` is ``(4, 1)`` and
  ``ds[:4]['ID'][:, 0]`` is the 1-d array (``ds['ID'][:4]``, read through
  the column, is ``(4,)``).
* ``FileMPI(comm, filename, create=False)`` and its columns are collective
  (any object with mpi4py's ``rank``, ``size``, ``barrier``, ``bcast``,
  ``gather`` and ``allgather`` will do as ``comm``); they are built on
  :mod:`colfile.mpi`, the layer behind ``colfile.File(..., comm=comm)``.
  Rank 0 alone opens or creates the File, lists blocks and opens or
  creates columns, and broadcasts the outcome (for a column, a snapshot of
  its metadata, from which the other ranks build *replica* handles without
  reading any metadata file); every rank writes its own rows; ``close`` and
  ``flush`` merge the write state of all ranks into the header, which rank
  0 writes (the header then holds what one writer of the same bytes would
  record).  Attributes of a ``ColumnMPI`` are written by rank 0, as
  bigfile's collective close does; values set on other ranks are kept in
  their replicas' memory.  A filename or block name that differs between
  ranks raises :class:`Error` on every rank; so does a failure on any rank
  during a collective (the exception of the lowest failing rank, its
  message prefixed ``rank N:``).

Differences from bigfile 0.1.52
-------------------------------
Where the original was wrong, this module follows colfile:

* **Names** follow colfile's stricter rules: besides space, tab and
  newline, carriage return, NUL, ``..`` components and colfile's reserved
  names are refused (:class:`Error`).  Redundant spellings bigfile passed to
  the file system are normalised instead of refused: a leading ``/``,
  doubled ``/`` and ``./`` components (``'./Header'`` is ``'Header'``).
* **Big-endian complex** data keeps numpy's layout: bigfile exchanged the
  real and imaginary parts when converting ``>c8``/``>c16``.
* **Empty attributes round-trip**: ``''`` reads back as ``''`` (bigfile gave
  ``'\\x00'``) and empty arrays are kept (bigfile wrote them and could not
  open the column again).
* **Crashes**: a block is visible from ``create`` (its empty version is
  committed at once, as bigfile writes its header then) and ``append``
  commits at once; writes into it are in-place updates, so a writer that
  dies before ``close`` leaves the block marked torn (readers raise,
  ``colfile repair`` fixes) instead of rows of zeros that read as data.
  Like bigfile, handles take no writer lock: several may write one block.
* **Caller arrays are never modified** (bigfile byte-swapped non-native
  input in place).
* **dtypes**: columns of kinds ``i u f c b S`` only; bigfile accepted any
  dtype (``U``, ``O``...) and wrote columns it could not read.  Conversions
  follow numpy's unsafe casting between numeric kinds (bigfile refused some,
  e.g. complex to integer); ``f2`` stays pass-through as in bigfile.
* ``write``/``append`` accept any array-like (bigfile insisted on an
  ``ndarray``); a scalar is one row.  A flat array written to a vector
  column must hold whole rows (bigfile silently dropped the remainder).
* ``read(..., out=)`` converts to ``out.dtype`` (bigfile required the exact
  column dtype).
* ``col[-1]`` reads the last row (bigfile failed); a row past the end raises
  ``IndexError`` (an :class:`Error` too).
* A slice whose stop lies before its start (``col[1:0]``) reads nothing, as
  in numpy (bigfile read to the end when it was one row back, and raised
  ``ValueError`` further back); ``read(start, length)`` reads to the end for
  any negative ``length`` (bigfile: only ``-1``).
* ``del col.attrs[name]`` is kept (bigfile's deletion was lost when the
  block was opened again).
* A closed File raises :class:`FileClosedError` when used (bigfile 0.1.52
  went on listing and opening); :class:`ColumnClosedError` is raised by an
  unattached ``Column()``.  Like bigfile's, these two are not :class:`Error`
  subclasses.
* MPI checksums: bigfile's collective close added up the running sums of
  all ranks, so the sums a reopened block had on disk were counted once per
  rank; colfile adds the sums each rank's own writes made, once (identical
  for new blocks, right for reopened ones).  The CRC32Cs of the ranges the
  ranks wrote combine, so a blob that the ranks' writes cover exactly gets
  its exact CRC32C (``colfile-v1``).  Close a ``ColumnMPI`` collectively:
  one left to the garbage collector after writes commits only rank 0's
  view.
* ``ColumnMPI.append`` is collective (every rank passes its own rows; they
  are stored in rank order).  bigfile appended independently on each rank.
* ``set_buffer_size`` is accepted and has no effect: libcolfile chunks its
  own I/O.
* :class:`Error` is :class:`colfile.Error`, so every colfile exception is a
  bigfile ``Error``; the specific ones also derive from the matching
  builtin (a missing block or attribute is a ``KeyError``, rows out of range
  an ``IndexError``...).  Messages are ``str``, not ``bytes``.

Examples
--------
>>> import os, tempfile, numpy
>>> import colfile.compat.bigfile as bigfile
>>> path = os.path.join(tempfile.mkdtemp(), "snap")
>>> with bigfile.File(path, create=True) as f:
...     with f.create("1/Position", dtype=("f4", 3), size=4, Nfile=2) as b:
...         b.write(0, numpy.arange(12).reshape(4, 3))
...         b.attrs["BoxSize"] = 100.0
...     f.blocks
['1/Position']
>>> with bigfile.File(path) as f:
...     b = f["1/Position"]
...     b.dtype, b.size, b.Nfile, b.attrs["BoxSize"], b[1]
(dtype(('<f4', (3,))), 4, 2, array([100.]), array([3., 4., 5.], dtype=float32))
"""

from __future__ import annotations

import operator
import os
import threading
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import mpi as _mpi
from .._constants import CF_OPEN_CREATE, CF_OPEN_NOLOCK, CF_OPEN_WRITE
from .._core import column as _c
from .._core import file as _cf
from .._ints import NFILE_MAX, whole
from ..column import Column as _CoreColumn
from ..errors import DTypeError, Error, RangeError
from ._base import (
    AttrSet,
    ColumnClosedError,
    FileClosedError,
    _core_column,
    _name,
    _same,
    _split_dtype,
)
from ._column import Column, ColumnMPI

__version__ = "0.1.52"

__all__ = [
    "File", "BigFile", "FileMPI", "BigFileMPI",
    "Column", "BigBlock", "ColumnMPI", "BigBlockMPI",
    "Dataset", "BigData",
    "Error", "BigFileError", "FileClosedError", "BigFileClosedError",
    "ColumnClosedError", "BigBlockClosedError",
    "set_buffer_size", "check_unique", "__version__",
]

# create_from_array's default: 32 Mi rows per blob, as bigfile chooses.
_ROWS_PER_FILE = 32 * 1024 * 1024

_buffer_size = 256 * 1024 * 1024


# ---------------------------------------------------------------------------
# exceptions

#: The base class of bigfile errors: colfile's own base class.
BigFileError = Error


BigFileClosedError = FileClosedError
BigBlockClosedError = ColumnClosedError


def set_buffer_size(bytes: int) -> None:  # noqa: A002 - bigfile's name
    """Accepted for compatibility; libcolfile sizes its own I/O chunks."""
    global _buffer_size
    _buffer_size = operator.index(bytes)



def check_unique(variable: Any, comm: Any) -> bool:
    """True if ``variable`` is the same on every rank of ``comm`` (collective)."""
    return len(set(comm.allgather(variable))) == 1


# ---------------------------------------------------------------------------
# files


class File:
    """A bigfile File: a directory of blocks.

    Parameters
    ----------
    filename : str or os.PathLike
        The directory.
    create : bool
        Make the directory if it does not exist (an existing File is kept).
    """

    comm: Any = None

    def __init__(self, filename: Any, create: bool = False) -> None:
        self._setup(filename, None)
        self._open_handle(create)

    def _setup(self, filename: Any, comm: Any) -> None:
        path = os.fspath(filename)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        self._basename: str = path
        self._lock = threading.RLock()
        self._h: Any = None
        self._finalizer: Any = None
        self._blocks: list[str] | None = None
        self.comm = comm
        self._mpi = None if comm is None else _mpi.as_comm(comm)

    def _open_handle(self, create: bool) -> None:
        flags = CF_OPEN_WRITE | CF_OPEN_NOLOCK | (CF_OPEN_CREATE if create else 0)
        self._h = _cf.open(self._basename, flags)
        self._finalizer = weakref.finalize(self, _cf.close, self._h)

    # -- description ---------------------------------------------------

    @property
    def basename(self) -> str:
        """The File's directory."""
        return self._basename

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._h is None

    @property
    def blocks(self) -> list[str]:
        """The block names, listed once and cached (``create`` refreshes;
        :meth:`list_blocks` always lists)."""
        if self._blocks is None:
            if self._h is None:
                return []
            self._blocks = self.list_blocks()
        return self._blocks

    def list_blocks(self) -> list[str]:
        """List the blocks on disk now (sorted)."""
        with self._lock:
            if self._h is None:
                raise FileClosedError(self)
            return _cf.list_names(self._h)

    def keys(self) -> list[str]:
        """Same as :attr:`blocks`."""
        return self.blocks

    def __contains__(self, key: object) -> bool:
        return key in self.blocks

    def __iter__(self) -> Iterator[str]:
        return iter(self.blocks)

    def __repr__(self) -> str:
        state = " (closed)" if self._h is None else ""
        return f"<{type(self).__name__} {self._basename!r}{state}>"

    # -- core handles --------------------------------------------------

    def _core_open(self, name: str) -> _CoreColumn:
        return _core_column(self._core_open_handle(name))

    def _core_open_handle(self, name: str) -> Any:
        nm = _c.encode_name(_name(name))
        with self._lock:
            if self._h is None:
                raise FileClosedError(self)
            return _c.open(self._h, nm)

    def _core_create(self, name: str, dtype: Any, size: int | None,
                     Nfile: int) -> _CoreColumn:
        return _core_column(self._core_create_handle(name, dtype, size, Nfile))

    def _core_create_handle(self, name: str, dtype: Any, size: int | None,
                            Nfile: int) -> Any:
        nm = _c.encode_name(_name(name))
        if dtype is None:
            tok, nmemb, rows, nfile = None, 0, 0, 0
        else:
            base, nmemb = _split_dtype(dtype)
            if base.kind not in "iufcbS" or base.names is not None:
                raise DTypeError(f"{self._basename}/{_name(name)}: cannot store dtype "
                                 f"{base} (colfile stores kinds i u f c b S)")
            tok = base.str
            rows = 0 if size is None else whole(size, "size")
            nfile = whole(Nfile, "Nfile", high=NFILE_MAX,
                          limit=f"the most blobs a column may have, {NFILE_MAX}")
        with self._lock:
            if self._h is None:
                raise FileClosedError(self)
            # bigfile makes a block visible at create: commit the empty
            # column now.  Its writes are then in-place updates, which mark
            # it torn until the handle commits, so a crash never leaves
            # unwritten rows that read as data.
            return _c.create_plain(self._h, nm, tok, nmemb, rows, nfile)

    def _new_column(self) -> Column:
        return Column()

    # -- blocks --------------------------------------------------------

    def open(self, blockname: str) -> Column:
        """Open block ``blockname`` (an independent handle)."""
        return self._new_column().open(self, blockname)

    def create(self, blockname: str, dtype: Any = None, size: int | None = None,
               Nfile: int = 1) -> Column:
        """Create (or replace) a block and open it.

        ``dtype`` may be a vector dtype (``('f4', 3)``); ``None`` makes a
        header-only block (``'.'`` or ``'grp/.'``: the attributes of the
        File or of a group).  ``size`` rows are spread over ``Nfile`` blobs.
        """
        col = self._new_column().create(self, blockname, dtype, size, Nfile)
        self._refresh()
        return col

    def _refresh(self) -> None:
        self._blocks = self.list_blocks()

    def _extent(self, n: int) -> tuple[int, int]:
        """(total rows, this process's first row) for create_from_array."""
        return n, 0

    def create_from_array(self, blockname: str, array: Any, Nfile: int | None = None,
                          memorylimit: int = 1024 * 1024 * 256) -> Column:
        """Create a block holding ``array`` (rows on the first axis; a 2-d
        array makes a vector block) and return it opened.

        ``Nfile`` defaults to one blob per 32 Mi rows.  ``array`` may be any
        array-like with ``dtype``, ``shape`` and slicing (a dask array, say);
        at most about ``memorylimit`` bytes are converted at a time.
        """
        n = len(array)
        size, offset = self._extent(n)
        if Nfile is None:
            Nfile = (size + _ROWS_PER_FILE - 1) // _ROWS_PER_FILE
        dtype = np.dtype((np.dtype(array.dtype), tuple(array.shape[1:])))
        itemsize = max(dtype.itemsize, 1)
        step = memorylimit // itemsize // 1024 * 1024
        if step <= 0:
            step = max(1, memorylimit // itemsize)
        with self.create(blockname, dtype, size, Nfile) as b:
            for i in range(0, n, step):
                b.write(offset + i, np.asarray(array[i:i + step]))
        return self.open(blockname)

    def subfile(self, key: str) -> File:
        """The File of sub-directory ``key``."""
        return File(os.path.join(self._basename, key.lstrip("/")))

    def __getitem__(self, key: str) -> Any:
        if not isinstance(key, (str, bytes)):
            raise TypeError(f"block names are str, not {type(key).__name__}")
        if isinstance(key, bytes):
            key = key.decode("utf-8")
        if key.endswith("/"):
            return self.subfile(key)
        return self.open(key)

    # -- life cycle ----------------------------------------------------

    def close(self) -> None:
        """Release the File handle; open blocks stay usable."""
        with self._lock:
            h, self._h = self._h, None
            if h is not None:
                self._finalizer.detach()
                _cf.close(h)

    def __enter__(self) -> File:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self) -> Any:
        return (_restore_file, (type(self), self._basename, self._h is None,
                                self._blocks, self.comm))


def _restore_file(cls: type, basename: str, closed: bool, blocks: list[str] | None,
                  comm: Any) -> File:
    f = cls.__new__(cls)
    File._setup(f, basename, comm)
    f._blocks = blocks
    if not closed:
        f._open_handle(False)
    return f


class FileMPI(File):
    """A File opened collectively by every rank of ``comm``.

    Built on :mod:`colfile.mpi`: rank 0 alone opens (and with
    ``create=True`` creates) the directory and lists the blocks, and
    broadcasts; the other ranks open it with ``CF_OPEN_NOCHECK``, touching
    nothing.  :class:`Error` on every rank if ``filename`` differs between
    ranks or opening fails on any.
    """

    def __init__(self, comm: Any, filename: Any, create: bool = False) -> None:
        self._setup(filename, comm)
        self._mpi = _mpi.as_comm(comm)
        _same(self._mpi, lambda: self._basename, "filename")
        flags = CF_OPEN_WRITE | CF_OPEN_NOLOCK | (CF_OPEN_CREATE if create else 0)
        self._h = _mpi.open_file(self._mpi, self._basename, flags)
        self._finalizer = weakref.finalize(self, _cf.close, self._h)
        self.refresh()

    @property
    def blocks(self) -> list[str]:
        """The block names as rank 0 listed them at open, ``create`` or
        :meth:`refresh`."""
        return self._blocks if self._blocks is not None else []

    def refresh(self) -> None:
        """List the blocks on rank 0 and broadcast (collective)."""
        self._blocks = _mpi.agree(self._mpi, self.list_blocks, root=0)

    def _refresh(self) -> None:
        self.refresh()

    def _new_column(self) -> Column:
        return ColumnMPI(self.comm)

    def _extent(self, n: int) -> tuple[int, int]:
        counts = self._mpi.allgather(n)
        return sum(counts), sum(counts[:self._mpi.rank])

    def subfile(self, key: str) -> FileMPI:
        """The FileMPI of sub-directory ``key`` (collective)."""
        return FileMPI(self.comm, os.path.join(self._basename, key.lstrip("/")))


# ---------------------------------------------------------------------------
# datasets


def _is_str(x: Any) -> bool:
    return isinstance(x, str)


def _is_str_list(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(s, str) for s in x)


class Dataset:
    """Several blocks of one length read as a structured array.

    Parameters
    ----------
    file : File
        Where the blocks are (a :class:`FileMPI` makes every operation
        collective).
    column_names : list of str, optional
        The blocks; all of ``file.blocks`` (sorted) by default.
    blocks : list of str, optional
        Deprecated spelling of ``column_names``.
    """

    def __init__(self, file: File, column_names: Any = None, blocks: Any = None) -> None:
        if blocks is not None:
            warnings.warn("blocks is deprecated, use column_names instead",
                          DeprecationWarning, stacklevel=2)
            if column_names is None:
                column_names = blocks
        if column_names is None:
            column_names = sorted(file.blocks)
        if isinstance(column_names, str):
            column_names = [column_names]
        self.file = file
        size: int | None = None
        fields = []
        for name in column_names:
            with file.open(name) as col:
                n, dt = col.size, col.dtype
            if size is None:
                size = n
            elif n != size:
                raise Error(f"Dataset length is inconsistent on {name}: "
                            f"{n} rows, not {size}")
            # bigfile's fields are always sub-arrays: (1,) for scalar columns
            fields.append((name, dt.base, dt.shape or (1,)))
        self.dtype: np.dtype[Any] = np.dtype(fields)
        self.size: int = size or 0

    @property
    def shape(self) -> tuple[int]:
        """``(size,)``."""
        return (self.size,)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {list(self.dtype.names or ())} size={self.size}>"

    def read(self, start: int, length: int, out: np.ndarray | None = None) -> np.ndarray:
        """Read ``length`` rows from ``start`` (clipped as Column.read)."""
        start, length = operator.index(start), operator.index(length)
        if not 0 <= start <= self.size:
            raise RangeError(f"reading beyond the dataset: start {start}, size {self.size}")
        if length < 0 or length > self.size - start:
            length = self.size - start
        if out is None:
            out = np.empty(length, self.dtype)
        elif len(out) != length:
            raise ValueError(f"out has {len(out)} rows, the request {length}")
        for name in self.dtype.names or ():
            with self.file.open(name) as col:
                field = out[name]
                col.read(start, length, field[:, 0] if col.dtype.shape == () else field)
        return out

    def write(self, start: int, buf: Any) -> None:
        """Write the fields of ``buf`` to their blocks from row ``start``."""
        buf = np.asarray(buf)
        for name in self.dtype.names or ():
            with self.file.open(name) as col:
                col.write(start, buf[name])

    def append(self, buf: Any, Nfile: int = 1) -> None:
        """Append the fields of ``buf`` to their blocks."""
        buf = np.asarray(buf)
        if buf.ndim == 0:
            buf = buf.reshape(1)
        for name in self.dtype.names or ():
            with self.file.open(name) as col:
                col.append(buf[name], Nfile=Nfile)
        if isinstance(self.file, FileMPI):
            self.size += sum(self.file.comm.allgather(len(buf)))
        else:
            self.size += len(buf)

    def _range(self, index: Any) -> tuple[int, int, bool]:
        return Column._start_of(self, index, self.size)  # type: ignore[arg-type]

    def _path(self) -> str:
        return repr(self)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, tuple):
            if len(index) == 2:
                first, second = index
                if _is_str(second) or _is_str_list(second):
                    first, second = second, first
                return self[first][second]
            if len(index) == 1:
                return self[index[0]]
        if _is_str(index):
            return self.file[index]
        if _is_str_list(index):
            missing = [n for n in index if n not in (self.dtype.names or ())]
            if missing:
                raise KeyError(f"no columns {missing} in {self!r}")
            return type(self)(self.file, index)
        start, stop, row = self._range(index)
        data = self.read(start, stop - start)
        return data[0] if row else data

    def __setitem__(self, index: Any, value: Any) -> None:
        start, stop, row = self._range(index)
        value = np.asarray(value)
        if value.ndim == 0:
            value = value.reshape(1)
        if len(value) != stop - start:
            raise ValueError(f"{len(value)} rows given for {stop - start}")
        self.write(start, value)


# ---------------------------------------------------------------------------
# bigfile's other names


class BigFile(File):
    """bigfile's older name of :class:`File`."""


class BigFileMPI(FileMPI):
    """bigfile's older name of :class:`FileMPI`."""


class BigData(Dataset):
    """bigfile's older name of :class:`Dataset`."""


BigBlock = Column
BigBlockMPI = ColumnMPI
ColumnLowLevelAPI = Column
FileLowLevelAPI = File
