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
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .. import mpi as _mpi
from .._ints import NFILE_MAX, whole
from ..attrs import encode_value, numeric_dtype
from .._core import column as _c
from .._core import file as _cf
from .._constants import CF_OPEN_CREATE, CF_OPEN_NOCHECK, CF_OPEN_NOLOCK, CF_OPEN_WRITE
from ..column import Column as _CoreColumn
from ..errors import ClosedError as _CoreClosedError
from ..errors import (
    ColumnKindError,
    DTypeError,
    Error,
    InvalidArgumentError,
    InvalidNameError,
    RangeError,
)

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


class FileClosedError(Exception):
    """A closed :class:`File` was used (not an :class:`Error`, as in bigfile)."""

    def __init__(self, file: Any = None) -> None:
        if isinstance(file, str) or file is None:
            msg = file or "File is closed"
        else:
            msg = f"File {getattr(file, 'basename', file)!r} is closed"
        super().__init__(msg)


class ColumnClosedError(Exception):
    """A closed :class:`Column` was used (not an :class:`Error`, as in bigfile)."""

    def __init__(self, column: Any = None) -> None:
        if isinstance(column, str) or column is None:
            msg = column or "Column is closed"
        else:
            msg = f"Column {getattr(column, '_name', None)!r} is closed"
        super().__init__(msg)


BigFileClosedError = FileClosedError
BigBlockClosedError = ColumnClosedError


def set_buffer_size(bytes: int) -> None:  # noqa: A002 - bigfile's name
    """Accepted for compatibility; libcolfile sizes its own I/O chunks."""
    global _buffer_size
    _buffer_size = operator.index(bytes)


# ---------------------------------------------------------------------------
# helpers


def _name(name: Any) -> str:
    """Normalise a block name: drop a leading ``/``, doubled ``/`` and ``.``
    components, keeping ``"."`` and a final ``"/."`` (attribute blocks).
    Anything else (spaces, ``..``, empty names) is left for libcolfile to
    refuse."""
    if isinstance(name, bytes):
        name = name.decode("utf-8", "surrogateescape")
    if not isinstance(name, str):
        raise TypeError(f"block names are str, not {type(name).__name__}")
    attrs_only = name == "." or name.endswith("/.")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if attrs_only:
        parts.append(".")
    return "/".join(parts)


def _split_dtype(dtype: Any) -> tuple[np.dtype[Any], int]:
    """(element dtype, nmemb) of a column dtype spec; sub-array shapes give
    nmemb as their product."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise DTypeError(f"not a dtype: {dtype!r} ({exc})") from None
    if dt.subdtype is None:
        return dt, 1
    base, shape = dt.subdtype
    return base, int(np.prod(shape, dtype=np.int64))


def _is_half(dt: np.dtype[Any]) -> bool:
    return dt.kind == "f" and dt.itemsize == 2


def _check_passthrough(src: np.dtype[Any], dst: np.dtype[Any], path: str) -> None:
    """bigfile treats f2 as a pass-through type: no conversion to or from it."""
    if _is_half(src) != _is_half(dst):
        raise DTypeError(f"{path}: no conversion between {src} and {dst} "
                         "(half floats are pass-through, as in bigfile)")



def _core_column(handle: Any) -> _CoreColumn:
    """Wrap a fresh ``cf_column *`` (closing it if wrapping fails)."""
    try:
        return _CoreColumn(handle, None)
    except BaseException:
        _c.release(handle)
        raise


def _open_core(basename: str, name: str) -> _CoreColumn:
    """Open column ``name`` of the File at ``basename`` on its own handle."""
    f = File(basename)
    try:
        return f._core_open(name)
    finally:
        f.close()


def check_unique(variable: Any, comm: Any) -> bool:
    """True if ``variable`` is the same on every rank of ``comm`` (collective)."""
    return len(set(comm.allgather(variable))) == 1


def _open_replica(basename: str, name: str) -> _CoreColumn:
    """A replica of column ``name`` (a handle that writes blobs but never
    metadata files): what a :class:`ColumnMPI` on a rank other than 0 uses
    when it reopens a block on its own after a close."""
    core = _open_core(basename, name)
    try:
        meta = _c.export_meta(core._handle())
    finally:
        core.close()
    return _core_column(_replica_handle(basename, meta))


def _replica_handle(basename: str, meta: bytes) -> Any:
    """A ``cf_column *`` built from a metadata snapshot, on a File handle
    opened with ``CF_OPEN_NOCHECK`` (touching nothing) just for that."""
    fh = _cf.open(basename, CF_OPEN_WRITE | CF_OPEN_NOCHECK | CF_OPEN_NOLOCK)
    try:
        return _c.open_meta(fh, meta)
    finally:
        _cf.close(fh)


def _same(comm: Any, fn: Callable[[], Any], what: str) -> Any:
    """``fn()`` on every rank (errors raised on all), checked to give the
    same value everywhere (:class:`Error` on every rank if not)."""
    return _mpi._check_same(_mpi.agree(comm, fn, collect=True), what)


# ---------------------------------------------------------------------------
# attributes


def _encode_attr(value: Any) -> tuple[str, int, bytes]:
    """bigfile's mapping of a Python value to (dtype token, nmemb, bytes):
    the same as colfile's (:func:`colfile.attrs.encode_value`)."""
    return encode_value(value)


def _decode_attr(token: str, nmemb: int, data: bytes) -> Any:
    """bigfile's reading of a stored attribute: text -> str, byte strings ->
    list of str, numbers -> numpy array (also for one element)."""
    kind = token[1:2]
    if kind == "a":
        return "" if data == b"\0" else data.decode("utf-8", "replace")
    if kind == "S":
        width = int(token[2:]) if token[2:].isdigit() else 1
        return [data[i * width:(i + 1) * width].rstrip(b"\0").decode("utf-8", "replace")
                for i in range(nmemb)]
    dt = numeric_dtype(token)
    if dt is None:  # another tool's kind (<U4, <M8, <O8, ...): opaque bytes
        w = int(token[2:]) if token[2:].isdigit() else 0
        if w < 1 or len(data) != nmemb * w:
            return data
        dt = np.dtype(f"V{w}")
    return np.frombuffer(data, dtype=dt, count=nmemb).copy()


def _check_attr_name(name: str) -> None:
    if not name or any(ch in name for ch in " \t\n\r\0"):
        raise InvalidNameError(f"attribute name {name!r} must be non-empty and hold "
                               "no space, tab, newline or CR")


class AttrSet:
    """The attributes of a block: ``column.attrs``.

    ``attrs[name]``, ``attrs[name] = value``, ``del attrs[name]``, ``in``,
    iteration and :meth:`keys` (a sorted list), with bigfile's value
    semantics (see the module documentation).  Every change is written to
    disk before it returns (for a :class:`ColumnMPI`, by rank 0).
    """

    def __init__(self, column: Column) -> None:
        self.bb = column

    @staticmethod
    def _key(name: Any) -> str:
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        if not isinstance(name, str):
            raise TypeError(f"attribute names are str, not {type(name).__name__}")
        return name

    def __getitem__(self, name: str) -> Any:
        return _decode_attr(*self.bb._attr_raw(self._key(name)))

    def __setitem__(self, name: str, value: Any) -> None:
        key = self._key(name)
        self.bb._attr_store(key, *_encode_attr(value))

    def __delitem__(self, name: str) -> None:
        self.bb._attr_delete(self._key(name))

    def __contains__(self, name: object) -> bool:
        try:
            self.bb._attr_raw(self._key(name))
        except (KeyError, TypeError, UnicodeDecodeError):
            return False
        return True

    def keys(self) -> list[str]:
        """The attribute names, sorted."""
        return self.bb._attr_names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def items(self) -> list[tuple[str, Any]]:
        """``(name, value)`` pairs."""
        return [(k, self[k]) for k in self.keys()]

    def values(self) -> list[Any]:
        """The values, in name order."""
        return [self[k] for k in self.keys()]

    def get(self, name: str, default: Any = None) -> Any:
        """``attrs[name]``, or ``default`` if absent."""
        try:
            return self[name]
        except KeyError:
            return default

    def __repr__(self) -> str:
        try:
            body = ",".join(f"{k}={self[k]!r}" for k in self.keys())
        except (ColumnClosedError, Error):
            body = "closed"
        return f"<AttrSet ({body})>"


# ---------------------------------------------------------------------------
# columns


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
