"""Files and groups.

A :class:`File` is a directory of columns (the bigfile format); a
:class:`Group` is a view of the columns below a sub-directory.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> path = os.path.join(tempfile.mkdtemp(), "snapshot")
>>> with colfile.File(path, "w") as f:
...     _ = f.create("1/Position", data=np.zeros((5, 3), "f4"), nfile=2)
...     _ = f.create("1/ID", data=np.arange(5, dtype="u8"))
...     f["1/"].attrs["Mass"] = 0.5
>>> with colfile.File(path) as f:
...     g = f["1/"]
...     f.columns, g.columns, "ID" in g, float(g.attrs["Mass"])
(['1/ID', '1/Position'], ['ID', 'Position'], True, 0.5)
"""

from __future__ import annotations

import _thread
import os
import time
import warnings
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from . import mpi as _mpi
from ._deferred import Committer
from ._dtypes import as_array, column_dtype
from ._ffi import (_FS_ENCODING, ERROR_P, encode, encode_name, environment_open_flags, ffi, lib, new_error,
                   string, take_strings)
from ._ints import INT64_MAX, NFILE_MAX, column_bytes, whole
from .attrs import AttributeManager, decode_value, numeric_dtype
from .column import Column
from .errors import (
    CF_EEXIST,
    CF_EREADONLY,
    ClosedError,
    ColumnExistsError,
    ColumnNotFoundError,
    Error,
    InvalidArgumentError,
    ReadOnlyError,
    TornError,
    raise_error,
)

__all__ = ["File", "Group", "MODES", "TornWarning", "FileSystemWarning"]

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


class TornWarning(UserWarning):
    """A column marked torn was opened with ``torn='warn'``."""


class FileSystemWarning(UserWarning):
    """The File is on a file system where colfile's guarantees are weaker."""


#: What changes on network file systems (docs/reliability.md).
_SHARED_FS_NOTES = {
    "nfs": "the writer lock needs the NFS lock manager (a writer fails with BusyError/"
           "StorageError where it is missing), and readers on other clients see a commit "
           "only once their attribute cache expires (actimeo)",
    "cifs": "writer locks and directory swaps depend on the server; commits may not be atomic",
    "smb2": "writer locks and directory swaps depend on the server; commits may not be atomic",
}


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


def _release_file(handle: Any) -> None:
    lib().cf_file_close(handle)


#: the behaviour bits of cf_file_open (enum cf_open_flags, include/colfile.h)
_NODURABLE, _TORN_OK, _VERIFY, _NOLOCKING = 32, 64, 128, 512


def _reopen_file(abspath: str, torn_ok: bool, verify: bool) -> File:
    """Unpickle a File: open it again, read-only and serial."""
    return File(abspath, "r", torn="warn" if torn_ok else "raise", verify=verify)


def _open_flags(mode: str, durable: Any, torn: str, verify: Any, locking: Any = True) -> int:
    """The cf_file_open flags of File's arguments (ValueError if invalid)."""
    flags = MODES.get(mode) if type(mode) is str else None
    if flags is None:
        raise ValueError(f"invalid mode {mode!r}: use one of "
                         f"{', '.join(repr(m) for m in MODES)}")
    if locking is False:
        flags |= _NOLOCKING
    elif locking is not True and locking != "local":
        raise ValueError(f"invalid locking={locking!r}: use True, False or 'local'")
    if torn != "raise":
        if torn != "warn":
            raise ValueError(f"invalid torn={torn!r}: use 'raise' or 'warn'")
        flags |= _TORN_OK
    if not durable:
        flags |= _NODURABLE
    if verify:
        flags |= _VERIFY
    return flags


#: what opening a File or a column allocates (with an ERROR_P), parsed once
_FILE_PP = ffi.typeof("cf_file **")
_COLUMN_PP = ffi.typeof("cf_column **")
#: threading.RLock is a Python function returning this type
_RLock = _thread.RLock


_name_check = _mpi._name_check_or_raise


def _warn_torn(handle: Any, stacklevel: int) -> None:
    """Warn that the column just opened (with ``torn="warn"``) is torn;
    ``stacklevel`` as warnings.warn's, counted from the caller."""
    warnings.warn(f"{string(lib().cf_column_path(handle))}: an in-place update was "
                  "interrupted; rows may mix old and new values (colfile repair "
                  "clears this)", TornWarning, stacklevel=stacklevel + 1)


class _WeakColumns(dict):  # type: ignore[type-arg]
    """A serial File's cache of the columns it opened: name -> Column, held
    weakly.  A dict of weak references whose callbacks drop dead entries:
    what ``weakref.WeakValueDictionary`` does, but cheap to make, since
    opening a File is part of every small read."""

    __slots__ = ("__weakref__",)

    def __setitem__(self, name: str, col: Column) -> None:
        def gone(ref: Any, name: str = name, cache: Any = weakref.ref(self)) -> None:
            d = cache()
            if d is not None and dict.get(d, name) is ref:
                dict.__delitem__(d, name)

        dict.__setitem__(self, name, weakref.ref(col, gone))

    def __getitem__(self, name: str) -> Column:
        col = dict.__getitem__(self, name)()
        if col is None:
            raise KeyError(name)
        return col

    def __contains__(self, name: object) -> bool:
        return self.get(name) is not None  # type: ignore[arg-type]

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        ref = dict.get(self, name)
        col = ref() if ref is not None else None
        return default if col is None else col

    def pop(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        ref = dict.pop(self, name, None)
        col = ref() if ref is not None else None
        return default if col is None else col

    def values(self) -> list[Column]:  # type: ignore[override]
        found = []  # a loop: a comprehension is one more function call
        for ref in dict.values(self):
            col = ref()
            if col is not None:
                found.append(col)
        return found

    def items(self) -> list[tuple[str, Column]]:  # type: ignore[override]
        return [(n, c) for n, c in ((n, r()) for n, r in dict.items(self)) if c is not None]


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
        if f._comm.serial:
            return AttributeManager(lambda create: f._attr_column(full, create), self.path)
        if f._coll_meta:
            return AttributeManager(lambda create: f._attr_column(full, create, reading=True),
                                    self.path,
                                    writer=lambda create: f._attr_column(full, create))
        # under MPI reads are independent, changes collective
        return AttributeManager(lambda create: f._attr_reader(full), self.path,
                                writer=lambda create: f._attr_column(full, create))

    def __repr__(self) -> str:
        f = self._file
        if f.closed:
            return f"<colfile.Group {self.name!r} (closed file)>"
        # counting the columns waits for deferred commits; a failed one is
        # left for the File's next call to raise, not raised (and so lost) here
        if f._commits is not None and f._commits.wait():
            return f"<colfile.Group {self.name!r} in {f.path!r} (a deferred commit failed)>"
        return f"<colfile.Group {self.name!r} in {f.path!r} ({len(self)} columns)>"

    def _repr_html_(self) -> str:
        from . import _html

        return _html.group(self)

    def _ipython_key_completions_(self) -> list[str]:
        from . import _html

        return _html.key_completions(self)

    # -- names -----------------------------------------------------------

    def _full(self, name: str) -> str:
        if not isinstance(name, str):
            raise TypeError(f"column names are str, not {type(name).__name__}")
        if not name:
            _name_check(name)  # the core's InvalidNameError: never the group itself
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

    def __bool__(self) -> bool:
        # as h5py: an open File or group is true, even with no columns
        return not self._file.closed

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name.endswith("/"):
            try:
                return self._file._group_exists(self._full(name))
            except ValueError:  # an invalid name: no such group can exist
                return False
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
        the group of an existing directory that is not a column."""
        full = self._full(name)
        if full.endswith("/"):
            if not self._file._group_exists(full):
                raise ColumnNotFoundError(
                    f"{os.path.join(self._file.path, full)}: no such group")
            return Group(self._file, full)
        return self._file._open_column(full)

    def __delitem__(self, name: str) -> None:
        """``del g["col"]`` removes a column (its header, attributes and
        blobs); ``del g["sub/"]`` (trailing slash, as for ``g["sub/"]``)
        removes the group ``sub`` and everything below it.

        The column's writer lock is taken first (every column's below a
        group): :class:`~colfile.BusyError`, with nothing removed, while
        another handle or process writes one.  What is removed disappears
        in one rename before it is deleted, so a crash leaves it whole or
        absent (``colfile repair`` removes the hidden leftover)."""
        self._file._remove(self._full(name))

    def create(self, name: str, dtype: Any = _UNSET, size: int | None = None,
               nfile: int | None = None, *, blob_rows: Sequence[int] | None = None,
               data: Any = None, align_blobs_to_ranks: bool = False, mode: str = "auto",
               concurrency: int | None = None, chunk_rows: int | None = None,
               overwrite: bool = False) -> Column:
        """Create a column and return it open for writing.

        Under ``comm=`` this is collective: every rank passes the same
        arguments, except that ``data`` holds *this rank's* rows (any number,
        zero included): the column gets the sum of all ranks' rows, stored in
        rank order, written with one collective :meth:`Column.write_all
        <colfile.Column.write_all>` (``mode``, ``concurrency``).  Without
        ``data`` every rank states the same global ``size``.

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
            Rows (default 0, or the rows of ``data``: under ``comm=`` the
            sum over the ranks).
        nfile : int, optional
            Blob files to spread the rows over (bigfile's split rule).  By
            default one per 256 MiB of data, at most one per rank
            (``cf_plan_nfile``): 1 when serial.
        blob_rows : sequence of int, optional
            The rows of each blob explicitly (overrides ``nfile``).
        data : array_like, optional
            Rows to write right away (h5py style); its dtype is the default
            ``dtype`` and a 2-d array makes a vector column.  Under
            ``comm=``: this rank's rows (ranks holding no rows do not decide
            the default dtype).
        align_blobs_to_ranks : bool
            Cut the blobs on rank boundaries (``cf_plan_blobs_by_rank``:
            consecutive ranks share a blob, no rank writes two), instead of
            splitting the rows evenly.  Needs ``nfile`` <= the number of
            ranks.
        mode, concurrency
            How ``data`` is written: see :meth:`Column.write_all
            <colfile.Column.write_all>`.
        chunk_rows : int, optional
            Rows per statistics chunk (``cf_column_set_chunk_rows``): every
            write records min, max, count, NaN count and sum per chunk and
            component, which queries (:mod:`colfile.query`) use to skip
            data.  Smaller chunks skip more precisely and cost more
            metadata.  Default: the core's choice (a power of two, at most
            2**20 rows and 8 MiB per chunk).
        overwrite : bool
            Replace a column of that name (its rows and attributes are
            gone once the new one is committed).  By default a column that
            exists raises :class:`~colfile.ColumnExistsError` (a
            ``FileExistsError`` and a ``ValueError``) naming it, and nothing
            changes, as in h5py.  Files opened with mode ``"w"`` start
            empty, so this is needed only to replace what a File already
            held.

        Notes
        -----
        A column cannot be made below a column (``"P/sub"`` when ``P`` is
        one: nothing lists columns inside a column's directory), nor where
        a group holds columns (``"g"`` when ``"g/x"`` exists), even with
        ``overwrite=True``: both raise :class:`~colfile.ColumnExistsError`.

        The rows hold no data until written.  Rows skipped before a written
        row of the same blob read as zeros; rows after the last one written
        in their blob raise :class:`~colfile.IncompleteError` when read
        (they look like a blob cut short), and closing the column warns
        about them (:class:`~colfile.IncompleteWarning`); docs/writing.md.

        Sizes and counts must be whole numbers (``int`` or a numpy
        integer): anything else raises :class:`TypeError` naming the
        argument.  Numbers the format cannot hold raise
        :class:`~colfile.InvalidArgumentError` (a :class:`ValueError`)
        naming the limit: more than 2**24 blobs, or rows whose bytes exceed
        2**63-1.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> v = f.create("v", ("f8", 3), size=10, blob_rows=[4, 0, 6])
        >>> v[:] = 1.0; v.shape
        (10, 3)
        >>> try:
        ...     f.create("v", "i4", size=1)
        ... except colfile.ColumnExistsError:
        ...     print("exists")
        exists
        >>> f.create("v", data=np.arange(3), overwrite=True).shape
        (3,)
        >>> f.create("meta", None).kind
        'header-only'
        >>> f.create("s", data=["ab", "c"])[:]
        array([b'ab', b'c'], dtype='|S2')
        >>> f.close()
        """
        return self._file._create(self._full(name), dtype, size, nfile, blob_rows, data,
                                  align_blobs_to_ranks, mode, concurrency, chunk_rows,
                                  bool(overwrite))

    def create_group(self, name: str) -> Group:
        """Create directory ``name`` (with an empty attribute file) and return
        its group; :class:`~colfile.AlreadyExistsError` if it exists."""
        from .errors import AlreadyExistsError

        full = self._full(name).rstrip("/") + "/"
        f = self._file

        def taken() -> str | None:
            if f._group_exists(full):
                return "group exists"
            # read here, not through _column_named: under MPI this runs on
            # rank 0 alone (h5py: a ValueError too)
            if File._is_column(f._check_open(), full[:-1]):
                return "a column of that name exists"
            return None

        if not f._comm.serial:
            f._enter("create_group()")
            # rank 0 decides, so that every rank raises or none does
            why = taken() if f._coll_meta else f._on_root(taken)
        else:
            why = taken()
        if why is not None:
            raise AlreadyExistsError(f"{os.path.join(f.path, full[:-1])}: {why}")
        return self.require_group(name)

    def _column_named(self, full: str) -> bool:
        """True if column ``full`` exists (every rank agrees under MPI)."""
        f = self._file
        h = f._check_open()
        f._settle()
        return bool(f._on_root(lambda: File._is_column(h, full)))

    def require_group(self, name: str) -> Group:
        """The group ``name``, created if it does not exist;
        :class:`~colfile.ColumnKindError` (a ``TypeError``, as in h5py) if
        ``name`` is a column."""
        from .errors import ColumnKindError

        full = self._full(name).rstrip("/") + "/"
        if not self._file._comm.serial:
            self._file._enter("require_group()")
        if self._column_named(full[:-1]):
            raise ColumnKindError(f"{os.path.join(self._file.path, full[:-1])}: a column, "
                                  "not a group")
        self._file._attr_column(full + ".", True)
        return Group(self._file, full)


def _split_rows(size: int, nfile: int) -> Any:
    """bigfile's split of ``size`` rows over ``nfile`` blobs (what
    ``cf_column_create`` does): blob i gets (i+1)*size//nfile - i*size//nfile."""
    if nfile == 0:
        return []
    if size <= INT64_MAX // nfile:  # no product overflows: vectorised
        edges = np.arange(nfile + 1, dtype=np.int64) * size // nfile
        return np.diff(edges)
    return [(i + 1) * size // nfile - i * size // nfile for i in range(nfile)]


def _unpack_column_attrs(raw: bytes) -> dict[str, dict[str, Any]]:
    """Decode the buffer of ``cf_file_column_attrs`` (its layout is in
    include/colfile.h) into ``{column: {attribute: value}}``, each value as
    :func:`~colfile.attrs.decode_value` gives it.  One-element numeric
    attributes, the common case, are decoded together: one array per dtype
    token, whose elements are the numpy scalars ``decode_value`` returns."""
    ncols, nattrs, text_at, data_at = np.frombuffer(raw, dtype=np.uint64, count=4).tolist()
    cols = np.frombuffer(raw, dtype=np.uint64, count=4 * ncols, offset=32).reshape(ncols, 4)
    recs = np.frombuffer(raw, dtype=np.uint64, count=7 * nattrs,
                         offset=32 + 32 * ncols).reshape(nattrs, 7)
    text = raw[text_at:data_at]
    ascii_text = text.decode("ascii") if text.isascii() else None

    def texts(offsets: Any, lengths: Any) -> list[str]:
        if ascii_text is not None:  # one character per byte: slice the str
            t = ascii_text
            return [t[o:o + n] for o, n in zip((offsets - text_at).tolist(), lengths.tolist())]
        return [raw[o:o + n].decode("utf-8", "surrogateescape")
                for o, n in zip(offsets.tolist(), lengths.tolist())]

    names, keys = texts(cols[:, 0], cols[:, 1]), texts(recs[:, 0], recs[:, 1])
    values: list[Any] = [None] * nattrs
    nmemb, data_offset, data_len = recs[:, 4], recs[:, 5], recs[:, 6]
    heap = np.frombuffer(raw, dtype=np.uint8)
    for at in sorted(set(recs[:, 2].tolist())):  # the distinct tokens
        idx = np.flatnonzero(recs[:, 2] == at)
        tok = raw[at:at + int(recs[idx[0], 3])].decode("ascii", "surrogateescape")
        rest = idx
        dt = _scalar_dtype(tok)
        if dt is not None:
            one = idx[nmemb[idx] == 1]
            gathered = heap[data_offset[one].astype(np.intp)[:, None] + np.arange(dt.itemsize)]
            for i, v in zip(one.tolist(), np.frombuffer(gathered.tobytes(), dtype=dt)):
                values[i] = v
            rest = idx[nmemb[idx] != 1]
        for i, n, o, ln in zip(rest.tolist(), nmemb[rest].tolist(), data_offset[rest].tolist(),
                               data_len[rest].tolist()):
            values[i] = decode_value(tok, n, raw[o:o + ln])
    out: dict[str, dict[str, Any]] = {}
    for name, a, c in zip(names, cols[:, 2].tolist(), cols[:, 3].tolist()):
        out[name] = {keys[a]: values[a]} if c == 1 else dict(zip(keys[a:a + c], values[a:a + c]))
    return out


def _scalar_dtype(tok: str) -> np.dtype[Any] | None:
    """The numpy dtype whose scalars one-element attributes of token ``tok``
    decode to, or None for text kinds and tokens numpy does not know (those
    go through ``decode_value`` one by one)."""
    return numeric_dtype(tok)


#: the writable Files: a forked child closes its copies of their lock files
_WRITABLE: weakref.WeakSet[File] = weakref.WeakSet()


def _forget_locks_in_child() -> None:
    """After os.fork(), in the child: close the child's copies of the
    writer-lock files the parent's writable Files keep open, without
    unlocking anything (``cf_file_forget_locks``).  Should the parent die
    while the child lives, its column locks are then not kept held."""
    for f in list(_WRITABLE):
        h = f._h
        if h is not None:
            lib().cf_file_forget_locks(h)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_locks_in_child)


class File(Group):
    """A colfile/bigfile File: a directory of columns.

    Parameters
    ----------
    path : str or os.PathLike
        The File's directory.
    mode : {'r', 'r+', 'w', 'w-', 'x', 'a'}
        ``'r'`` read only, must exist; ``'r+'`` read/write, must exist;
        ``'w'`` create, or empty an existing File (refused if the directory
        holds foreign files, and with :class:`~colfile.BusyError`, removing
        nothing, while another process or handle writes any column of it);
        ``'w-'`` or ``'x'`` create, fail if it exists;
        ``'a'`` read/write, create if needed.
    comm : mpi4py communicator, optional
        Open the File on every rank of ``comm`` for parallel I/O (see
        :mod:`colfile.mpi`): opening is collective, rank 0 alone opens,
        creates or empties the directory and the other ranks touch nothing;
        an error on any rank is raised on every rank.  Then what changes the
        File is collective and what reads it (listing, attributes, opening
        and reading columns) independent, as in h5py.  mpi4py is only needed
        when ``comm`` is given.
    durable : bool, default True
        Make every commit durable with fsync (blob data before the header
        that describes it, then the directory).  ``False`` skips every fsync:
        commits stay atomic if the process dies, but a power loss or kernel
        crash may lose recent ones.  For scratch data
        (docs/reliability.md).
    torn : {'raise', 'warn'}, default 'raise'
        What opening a column marked torn does (an in-place update of it
        was interrupted, so its rows may mix old and new values):
        ``'raise'`` raises :class:`~colfile.TornError`, ``'warn'`` opens it
        with a :class:`~colfile.TornWarning`.  ``colfile repair`` clears
        the mark.
    verify : bool, default False
        Check the CRC32C of every blob a read covers whole (where one is
        recorded); a mismatch raises :class:`~colfile.ChecksumError` naming
        the blob and its rows.  Partial reads of a blob are not checked;
        :meth:`Column.verify_blob` and ``colfile check`` check everything.
        Off by default because it costs 10-25% of read speed here
        (docs/reliability.md).
    locking : {True, False, 'local'}, default True
        The writer lock that keeps a second writer of a column out
        (docs/reliability.md, "Locking on parallel file systems").
        ``True`` takes it, and a writable File warns
        (:class:`~colfile.locking.LockingWarning`) where the mount table
        shows that locks fail (Lustre ``noflock``) or only exclude writers
        on the same node (Lustre ``localflock``, NFS ``nolock`` or
        ``local_lock=``, BeeGFS).  ``'local'`` takes it too and accepts
        node-local locks without a warning (every writer runs on one node,
        or the job makes sure of one writer per column).  ``False`` takes
        no lock and makes no lock call: for file systems where locks fail.
        The caller then promises that one process at a time writes the
        File: nothing detects a second writer (whose commits could mix
        with yours or be lost), and ``colfile repair`` cannot tell a live
        writer from a dead one by its locks.
    deferred : bool, default False
        Commit closed columns in the background (serial Files only).
        :meth:`Column.close` then hands the column to a thread of the File
        and returns at once, so that its commit (its metadata files, the
        rename that publishes a new column, fsyncs) overlaps with the
        caller's next column: for Files of many small columns.  A column
        becomes visible to other processes when its commit is done, at the
        latest when :meth:`flush` or :meth:`close` returns.  This File
        waits for pending commits before anything that looks at its
        columns (opening, listing, removing, :meth:`column_attrs`, group
        and File attributes; these raise the first commit that failed, with
        the error closing it would have raised), and creating a column waits
        for those of the same name and of the names above and below it.
        :meth:`close` raises a failure that no call has reported yet.
        A child made by ``os.fork()`` leaves the columns its parent closed
        to the parent, which commits them.
    mpi_timeout : float, optional
        Under ``comm=``: the seconds a rank waits, at the start of a
        collective operation, for the other ranks to call one too, before
        it raises :class:`~colfile.CollectiveError` naming the operation
        (default: the environment's ``COLFILE_MPI_TIMEOUT``, else 300; 0
        waits forever).  Ranks calling different collectives raise at once.
    collective_metadata : bool, default False
        Under ``comm=``: make listing, opening columns and reading group
        and File attributes collective, with rank 0 alone reading metadata
        files for all ranks (h5py's ``all_coll_metadata_ops``): the
        metadata load then does not grow with the number of ranks.

    Notes
    -----
    ``file[name]`` opens a column (cached: while a handle is alive, the same
    :class:`~colfile.Column` object is returned).  Closing the File closes
    every column opened through it, which commits their headers; using them
    afterwards raises :class:`~colfile.ClosedError`.

    An open column reads the version it opened: when another process
    replaces or removes it, the column keeps reading the old version's
    files while they exist, then raises :class:`~colfile.ReplacedError`
    (reopen it), never rows of two versions (docs/reliability.md).  Each
    open column holds a file descriptor of its directory, and one of the
    blob it read last.

    Under ``comm=`` the File keeps every column any rank opened until it is
    closed (its collective close commits them on every rank, in name
    order), and which calls are collective is listed in :mod:`colfile.mpi`.

    A read-only File pickles (and so do its columns, see
    :class:`~colfile.Column`): unpickling opens the same directory again,
    read-only and serial, by its absolute path, so that it works in another
    process, after ``os.chdir`` and on a ``dask.distributed`` worker.  A File
    open for writing refuses to be pickled (``TypeError``): what it has not
    committed is invisible to other processes, and they cannot write its
    columns while it holds them.  A closed File raises
    :class:`~colfile.ClosedError`.

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
                 comm: Any = None, durable: bool = True, torn: str = "raise",
                 verify: bool = False, deferred: bool = False,
                 mpi_timeout: float | None = None,
                 collective_metadata: bool = False,
                 locking: bool | str = True) -> None:
        # A File is the group of its root; it does not store itself (no
        # reference cycle, so dropping the last reference frees it at once).
        self._prefix = ""
        self._mode = mode
        self._h: Any = None
        self._path = path if type(path) is str else os.fsdecode(os.fspath(path)) \
            if isinstance(path, (str, bytes, os.PathLike)) else str(path)
        if comm is None:
            if mpi_timeout is not None:
                _mpi.resolve_timeout(mpi_timeout)  # checked, though unused
            self._comm: _mpi.Comm = _mpi.SELF
        else:
            # the agreement step of File(...), then colfile's own duplicate
            self._comm = _mpi.file_comm(comm, mpi_timeout, self._path)
        self._lock = _RLock()  # guards the C handle and the caches
        serial = self._comm.serial
        self._cols: Any = _WeakColumns() if serial else {}
        self._attr_cols: dict[str, Column] = {}
        # under MPI: the handles of independent attribute reads, and a
        # read-only cf_file handle they (and, on ranks but 0 of a writable
        # File, independent column opens) are made on
        self._attr_read: dict[str, Column] = {}
        self._aux: Any = None
        self._close_failure: BaseException | None = None
        self._torn_fh: Any = None  # see _torn_handle
        self._torn_rd: Any = None
        self._opened_at = time.time()
        self._saved: dict[str, list[bytes]] = {}  # see _save_state
        # collective_metadata=True: metadata reads are collective, rank 0
        # reads for all (the opt-in of h5py's all_coll_metadata_ops)
        self._coll_meta = bool(collective_metadata) and not self._comm.serial
        self._commits: Committer | None = None
        # Serially the checks and the open in the fewest steps: opening a
        # File is part of every small read, and in a fresh process each
        # distinct step runs with cold caches (bench/cold_reads.py).
        # The core is given the absolute path, as h5py holds a descriptor: the
        # File keeps working after a chdir, and a pickle or a dask task
        # reopens the same directory from a process with another working
        # directory.  self._path stays as given.
        p = self._path
        if isinstance(path, (str, bytes, os.PathLike)) and p and p[0] != "/" and "\0" not in p:
            try:
                p = path = os.path.join(os.getcwd(), p)
            except OSError:  # the working directory is gone: keep the path given
                pass
        self._abspath = p
        if serial:
            # the defaults without _open_flags, a str path without encode():
            # in a fresh process every Python function run costs several
            # microseconds more than its work (bench/cold_reads.py)
            flags = MODES.get(mode) if type(mode) is str else None
            if flags is None or torn != "raise" or not durable or verify or locking is not True:
                flags = _open_flags(mode, durable, torn, verify, locking)
            raw = path.encode(_FS_ENCODING, "surrogateescape") \
                if type(path) is str and "\0" not in path else encode(path)
            out = ffi.new(_FILE_PP)
            err = ffi.new(ERROR_P)
            rc = lib().cf_file_open(out, raw, flags | environment_open_flags(), err)
            if rc < 0:
                raise_error(rc, err, "file")
            handle = out[0]
        else:
            def prep() -> tuple[str, str, bool, str, bool, Any]:
                _open_flags(mode, durable, torn, verify, locking)
                if deferred:
                    raise ValueError("deferred=True is for serial Files: under comm= "
                                     "closing a column is collective")
                encode(path)  # a NUL byte: the error agreed on every rank
                return self._path, mode, bool(durable), torn, bool(verify), locking

            # every rank must be given the same path and options
            try:
                self._same("File path and options", prep)
                flags = _open_flags(mode, durable, torn, verify, locking)
                handle = _mpi.open_file(self._comm, encode(path), flags)
            except BaseException:
                if self._comm.owned:
                    self._comm.free()
                raise
        self._h = handle
        self._flags = flags
        # A writable File's handle is released by a finalizer that also runs
        # at exit; a read-only one holds only memory, which __del__ gives
        # back (as for columns: cheaper).  self._path already is the path
        # the core keeps (cf_file_path: the same bytes, decoded the same).
        self._finalizer: Any = (weakref.finalize(self, _release_file, handle)
                                if flags & _WRITE else None)
        if flags & _WRITE:
            _WRITABLE.add(self)
        if deferred and flags & _WRITE:
            self._commits = Committer()
        if flags & _WRITE and self._comm.rank == 0:
            fs = string(lib().cf_file_fs_type(handle))
            if fs in _SHARED_FS_NOTES:
                warnings.warn(f"{self._path}: on {fs}: {_SHARED_FS_NOTES[fs]}", FileSystemWarning,
                              stacklevel=2)
            if locking is not False:
                from .locking import LockingWarning, lock_scope, scope_note

                scope, mount = lock_scope(self._path)
                note = None if locking == "local" and scope == "node" else scope_note(self._path, scope, mount)
                if note:
                    warnings.warn(note, LockingWarning, stacklevel=2)

    def __getitem__(self, name: str) -> Any:
        # Group.__getitem__ for the File's own group (no prefix), in fewer
        # steps for the common case, a column name
        if type(name) is str and name and name[-1] != "/":
            return self._open_column(name)
        return Group.__getitem__(self, name)

    def __del__(self) -> None:
        # read-only Files (see __init__); errors cannot be reported here
        h = getattr(self, "_h", None)
        if h is not None and getattr(self, "_finalizer", 0) is None:
            self._h = None
            try:
                _release_file(h)
            except Exception:  # the library is gone at interpreter exit
                pass

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
    def comm(self) -> Any:
        """The communicator given as ``comm=`` (``None`` when serial)."""
        return None if self._comm.serial else self._comm.user

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._h is None

    def __reduce__(self) -> Any:
        # Another process gets its own read-only handle on the same directory.
        # A writer is refused: its uncommitted columns and data are not
        # visible to another process, and a second writer could not take the
        # writer lock of its columns anyway.
        if self._h is None:
            raise ClosedError(f"{self._path}: File is closed: cannot pickle it")
        if self._flags & _WRITE:
            raise TypeError(f"{self._path}: a File open for writing (mode {self._mode!r}) "
                            "cannot be pickled: close it and pickle File(path, 'r')")
        return (_reopen_file, (self._abspath, bool(self._flags & _TORN_OK),
                               bool(self._flags & _VERIFY)))

    def __repr__(self) -> str:
        if self._h is None:
            return f"<colfile.File {self._path!r} (closed)>"
        return f"<colfile.File {self._path!r} mode={self._mode!r}>"

    # -- collectives -----------------------------------------------------

    def _same(self, what: str, prep: Any) -> Any:
        """Run ``prep()`` on every rank (errors agreed on) and check that it
        gave the same value everywhere; serially just ``prep()``."""
        comm = self._comm
        if comm.serial:
            return prep()
        values = _mpi.agree(comm, prep, collect=True)
        return _mpi._check_same(values, what)

    def _on_root(self, fn: Any) -> Any:
        """``fn()`` on rank 0, its result (or error) on every rank."""
        return _mpi.agree(self._comm, fn, root=0)

    def _group_exists(self, full: str) -> bool:
        """True if the directory of group ``full`` (ending in ``/``) exists.
        The core decides, on the attribute block ``full + "."``: it checks
        the name (:class:`~colfile.InvalidNameError` for ``../``, ``/etc/``,
        ``a//``...) and refuses a symbolic link below the File."""
        h = self._check_open()
        self._settle()
        if self._coll_meta:
            self._enter("group lookup (collective_metadata=True)")
            self._same("group name", lambda: (self._check_open(), full)[1])
        elif not self._comm.serial:
            # independent: a group this File made (collectively) and has
            # not committed yet is known to every rank
            col = self._attr_cols.get(full + ".")
            if col is not None and not col.closed:
                return True

        def run() -> bool:
            out = ffi.new("cf_column **")
            err = new_error()
            rc = lib().cf_column_open(out, h, encode_name(full + "."), err)
            if rc >= 0:
                lib().cf_column_close(out[0], ffi.NULL)
                # the directory of a column is no group (as in h5py, a
                # dataset is not a group)
                return not self._is_column(h, full[:-1])
            if err.code == -2:  # CF_ENOENT: no such directory
                return False
            if err.code == -4:  # CF_ENAME
                raise_error(rc, err)
            return True  # the directory is there; its attribute files are not fine
        return bool(self._on_root(run)) if self._coll_meta else run()

    def _enter(self, op: str) -> None:
        """The agreement step of collective operation ``op`` of this File
        (``Comm.enter``): every rank must be in it (CollectiveError)."""
        self._check_open()
        self._comm.enter(op, self._path)

    @staticmethod
    def _is_column(h: Any, name: str) -> bool:
        """True if ``name`` opens as a column on File handle ``h``."""
        if not name:
            return False
        out = ffi.new("cf_column **")
        if lib().cf_column_open(out, h, encode_name(name), ffi.NULL) < 0:
            return False
        lib().cf_column_close(out[0], ffi.NULL)
        return True

    def _checked_name(self, full: str) -> Any:
        def prep() -> str:
            self._check_open()
            if not self._comm.serial:
                _name_check(full)
            return full
        return self._same("column name", prep)

    # -- life cycle ------------------------------------------------------

    def _check_open(self) -> Any:
        h = self._h
        if h is None:
            raise ClosedError(f"{self._path}: File is closed")
        return h

    def _settle(self, name: str | None = None) -> None:
        """Wait for the deferred commits and raise the first that failed
        (``deferred=True``); with ``name``, only wait for those touching
        column ``name`` (Committer.settle)."""
        commits = self._commits
        if commits is not None and commits.pending():
            commits.settle(name)

    def _live(self) -> list[Column]:
        # loops, not comprehensions: each of those is a function call, and
        # closing a File is part of every small read (see __init__)
        live = []
        with self._lock:
            for c in self._cols.values():
                if c._h is not None:
                    live.append(c)
            for c in self._attr_cols.values():
                if c._h is not None and c not in live:
                    live.append(c)
        if not self._comm.serial:
            live.sort(key=lambda c: c.name)  # the same order on every rank
        return live

    def column_attrs(self) -> dict[str, dict[str, Any]]:
        """The attributes of every column, read in one call.

        Returns ``{column name: {attribute name: value}}`` for every name of
        :attr:`columns`, sorted, each value exactly what
        ``file[name].attrs[key]`` returns.  The core reads them all at once
        (``cf_file_column_attrs``): on a File opened ``'r'`` it takes them
        from the File's catalog wherever fresh ``lstat`` s prove the
        attribute files current (docs/format.md 8.5), and reads the files
        of every other column.  Much cheaper than opening each column for
        its attributes.

        Columns open through this File (and those it created but has not
        committed yet, which :attr:`columns` shows too) give the attributes
        their open handle holds, as ``file[name].attrs`` does.  Only
        attribute files are read, so a column whose header is damaged, or
        which is marked torn, still gives its attributes.  Group and File
        attributes are not included (``file["g/"].attrs``, ``file.attrs``).
        A damaged attribute file of any column raises the error reading
        that column's attributes would raise, naming the file.  Independent
        under MPI: the calling rank reads.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> path = os.path.join(tempfile.mkdtemp(), "f")
        >>> with colfile.File(path, "x") as f:
        ...     f.create("a", data=np.zeros(2, "i4")).attrs["index"] = 0
        ...     f.create("g/b", data=np.zeros(2)).attrs.update(index=1, unit="Mpc")
        >>> with colfile.File(path) as f:
        ...     attrs = f.column_attrs()
        >>> attrs["a"]["index"], attrs["g/b"]["unit"], sorted(attrs["g/b"])
        (np.int64(0), 'Mpc', ['index', 'unit'])
        """
        L = lib()

        def run() -> bytes:
            buf = ffi.new("void **")
            size = ffi.new("size_t *")
            err = new_error()
            with self._lock:
                rc = L.cf_file_column_attrs(self._check_open(), buf, size, err)
            if rc < 0:
                raise_error(rc, err, "column")
            try:
                return bytes(ffi.buffer(buf[0], size[0]))
            finally:
                L.cf_free(buf[0])

        self._check_open()
        self._settle()
        if self._coll_meta:
            self._enter("column_attrs() (collective_metadata=True)")
            out = _unpack_column_attrs(self._on_root(run))
        else:
            out = _unpack_column_attrs(run())  # independent under MPI too
        with self._lock:
            live = [(n, c) for n, c in list(self._cols.items())
                    if not c.closed and not n.endswith("/.") and n != "."]
        added = False
        for name, col in live:
            added = added or name not in out
            out[name] = {k: col.attrs[k] for k in col.attrs}
        return dict(sorted(out.items())) if added else out

    def cleanup(self, dry_run: bool = False, force: bool = False) -> list[str]:
        """Find what interrupted writers left behind and remove it (see
        ``cf_file_cleanup``): staging directories of creates that never
        committed, old versions moved aside by a commit (restored if their
        replacement never arrived), what an interrupted removal moved to a
        hidden ``.colfile-trash.*`` name, the blobs of a directory whose
        header is gone (other files in it stay), temporary metadata and lock
        files.
        Anything a live writer holds is left alone.  A staging directory
        is removed only when its owner record (host, process, start time)
        proves its writer gone, since locks may be node-local: one written
        from another host is reported ("... cannot prove gone: left") and
        stays unless ``force=True``, which removes it (use it only when no
        writer of the File is running anywhere; with ``locking=False`` it
        also removes every other leftover, whose locks are not looked at).
        Returns one line per item found.  On rank 0 only under MPI (the
        result is broadcast)."""
        L = lib()

        def run() -> list[str]:
            lines = ffi.new("char ***")
            count = ffi.new("int64_t *")
            err = new_error()
            with self._lock:
                rc = L.cf_file_cleanup(self._check_open(), (1 if dry_run else 0) | (2 if force else 0),
                                       lines, count, err)
            if rc < 0:
                raise_error(rc, err, "file")
            return take_strings(lines[0], count[0])

        self._settle()
        if not self._comm.serial:
            self._enter("File.cleanup()")
        return list(self._on_root(run))

    @property
    def lock_scope(self) -> str:
        """How far writer locks reach on the File's file system, from the
        mount table (``cf_file_lock_scope``): ``'cluster'`` (every client;
        local file systems too), ``'node'`` (node-local: Lustre
        ``localflock``, NFS ``nolock``, BeeGFS), ``'none'`` (lock calls
        fail: Lustre ``noflock``; open with ``locking=False``) or
        ``'unknown'``.  See :mod:`colfile.locking`."""
        return string(lib().cf_file_lock_scope(self._check_open()))

    @property
    def fs_type(self) -> str:
        """The file system holding the File (``cf_file_fs_type``): ``'ext4'``,
        ``'xfs'``, ``'tmpfs'``, ``'nfs'``, ``'lustre'``, ..., ``'other'``."""
        return string(lib().cf_file_fs_type(self._check_open()))

    def flush(self) -> None:
        """Commit the metadata of every open column (collective under MPI),
        and wait for the commits of closed ones (``deferred=True``)."""
        if not self._comm.serial:
            self._enter("File.flush()")
            for col in self._collective_live():
                col._commit(close=False)
            failure, self._close_failure = self._close_failure, None
            _mpi.agree(self._comm, failure=failure)
            return
        for col in self._live():
            col.flush()
        self._settle()

    def _collective_live(self) -> list[Column]:
        """Under MPI: the writable columns open on any rank (or written
        through a handle some rank opened alone and closed), open on every
        rank (ranks that have not opened one open it now), in name order,
        ready for a collective commit: the write state saved by the
        handles closed alone is merged into rank 0's handle."""
        comm = self._comm
        with self._lock:
            live = [c for c in self._live() if c._writable]
        mine = sorted({c.name for c in live})
        wrote = sorted({c.name for c in live if c._wrote} | set(self._saved))
        held = comm.allgather((mine, wrote))
        union: set[str] = set()
        written: set[str] = set()
        for names, w in held:
            union.update(names)
            written.update(w)
        union |= written
        missing = {n for n in union if any(n not in names for names, _ in held)}
        failure: BaseException | None = None
        repaired: list[str] = []
        # Rank 0 opens what it lacks, then hands its handle's snapshot to
        # the other ranks that lack it (as a collective open does): their
        # own open could find the marker of the in-place writes of the
        # ranks that had it.
        metas: dict[str, bytes | None] = {}
        if comm.rank == 0:
            for name in sorted(missing - set(mine)):
                try:
                    self._open_column(name)
                except Exception as exc:
                    failure = failure or exc
            # A handle opened over the marker of in-place writes of this
            # File's ranks (see _ours), which are all done (every rank is in
            # this collective): recompute the column's checksums from its
            # blobs, and commit (the others' write state is then dropped).
            for name in sorted(written):
                col = self._cols.get(name)
                try:
                    if col is not None and not col.closed and col._kind == 0 and col.torn:
                        col.repair()
                        repaired.append(name)
                except Exception as exc:
                    failure = failure or exc
            for name in sorted(missing):
                col = self._cols.get(name)
                try:
                    metas[name] = None if col is None or col.closed else \
                        _mpi._export_meta(col._handle())
                except Exception as exc:
                    failure = failure or exc
                    metas[name] = None
        metas, repaired = comm.bcast((metas, repaired), root=0)
        if comm.rank != 0:
            for name in sorted(missing - set(mine)):
                meta = metas.get(name)
                if meta is None:
                    continue  # rank 0's error is raised
                try:
                    col = Column(_mpi._open_meta(self._h, meta), self, name=name)
                    col._independent = True
                    self._cols[name] = col
                except Exception as exc:
                    failure = failure or exc
        for name in repaired:
            # rank 0's repair holds these rows' checksums: drop the others'
            self._saved.pop(name, None)
            col = self._cols.get(name)
            if comm.rank != 0 and col is not None and not col.closed and col._kind == 0:
                try:
                    col._pending_export()
                except Error as exc:
                    failure = failure or exc
        saved = [(n, st) for n, sts in sorted(self._saved.items()) for st in sts]
        self._saved = {}
        gathered = comm.gather(saved, root=0)
        if comm.rank == 0 and gathered is not None:
            for items in gathered:
                for name, st in items:
                    col = self._cols.get(name)
                    if col is None or col.closed:
                        continue  # its open failed: that error is raised
                    try:
                        col._pending_merge(st)
                    except Exception as exc:
                        failure = failure or exc
        with self._lock:
            cols = {c.name: c for c in self._live() if c._writable}
        # a column some rank could not open (another process removed it...)
        # is left out on every rank, and its error raised on every rank
        # (by agree, after the columns every rank has are committed)
        everywhere = set(cols)
        for names in comm.allgather(sorted(cols)):
            everywhere.intersection_update(names)
        self._close_failure = failure
        return [cols[n] for n in sorted(everywhere)]

    def _save_state(self, name: str, state: bytes) -> None:
        """Under MPI: keep the write state of a column this rank opened
        alone, wrote and closed, for the File's next collective commit."""
        with self._lock:
            self._saved.setdefault(name, []).append(state)

    def close(self) -> None:
        """Close every column opened through this File, then the File.

        A writable File then brings the File's catalog up to date (a cache
        of every column's metadata files that makes listing and opening
        columns cheap: docs/format.md 8.5); failing to write it is not an
        error.  The first error met while committing a column (here or,
        with ``deferred=True``, in the background) is raised after all
        handles are released.  Closing twice is harmless.  Collective under
        MPI.
        """
        if self._h is None:
            return
        first: Exception | None = None
        live = None
        if not self._comm.serial:
            try:
                self._enter("File.close()")
                live = self._collective_live()
            except Error:
                self._abandon()
                raise
        if self._cols or self._attr_cols:
            for col in self._live() if live is None else live:
                try:
                    if live is None:
                        col.close()
                    else:
                        col._commit(close=True)
                except Error as exc:
                    first = first or exc
            for col in list(self._cols.values()) + list(self._attr_cols.values()):
                col._close_local()  # read-only handles: independent
            self._cols.clear()
            self._attr_cols.clear()
        self._release_readers()
        if self._commits is not None:
            try:
                self._commits.settle()
            except Exception as exc:  # noqa: BLE001 - raised below, after the release
                first = first or exc
            self._commits.close()  # its thread ends
        comm = self._comm
        if not comm.serial and comm.broken is None:
            failure, self._close_failure = self._close_failure, None
            try:
                # a column some rank could not open: raised on every rank
                _mpi.agree(comm, failure=failure)
            except Error as exc:
                first = first or exc
        if self._mode != "r" and comm.broken is None:
            self._update_catalog()
        self._release_handle()
        if first is not None:
            raise first

    def _release_handle(self) -> None:
        """Release the cf_file handle (and under MPI the File's duplicate
        communicator, unless it is out of step: freeing is collective)."""
        with self._lock:
            h, self._h = self._h, None
            if self._finalizer is not None:
                self._finalizer.detach()
            for extra in (self._aux, self._torn_fh, self._torn_rd):
                if extra is not None:
                    lib().cf_file_close(extra)
            self._aux = self._torn_fh = self._torn_rd = None
            lib().cf_file_close(h)
        if self._comm.owned and self._comm.broken is None:
            self._comm.free()

    def _release_readers(self) -> None:
        """Close the handles of independent attribute reads (read-only)."""
        with self._lock:
            readers = list(self._attr_read.values())
            self._attr_read.clear()
        for col in readers:
            col._close_local()

    def _abandon(self) -> None:
        """Under MPI, once the ranks are out of step (a collective made by
        only some of them): release every handle on this rank without
        committing anything, and close the File."""
        with self._lock:
            cols = list(self._cols.values()) + list(self._attr_cols.values())
            self._cols.clear()
            self._attr_cols.clear()
        for col in cols:
            col._abandon()
        self._release_readers()
        self._release_handle()

    def _update_catalog(self) -> None:
        """Rebuild the File's catalog after this writer's commits
        (``cf_file_catalog_update``; rank 0 under MPI).  The catalog is a
        cache: a failure to write it (a read-only directory, ...) leaves
        readers on the per-column files and is not an error of the close."""
        h = self._h

        def run() -> None:
            lib().cf_file_catalog_update(h, new_error())

        self._on_root(run)

    def __enter__(self) -> File:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- internals used by Group ----------------------------------------

    def _list(self) -> list[str]:
        L = lib()

        def run() -> list[str]:
            names = ffi.new("char ***")
            count = ffi.new("int64_t *")
            err = new_error()
            with self._lock:
                rc = L.cf_file_list(self._check_open(), names, count, err)
            if rc < 0:
                raise_error(rc, err)
            return take_strings(names[0], count[0])

        self._check_open()
        self._settle()
        if self._coll_meta:
            self._enter("listing (collective_metadata=True)")
            names = list(self._on_root(run))
        else:
            names = run()  # independent under MPI: this rank lists
        # Columns this File created and has not committed yet are staged
        # out of sight of other readers, but this File shows them.
        with self._lock:
            live = [n for n, c in list(self._cols.items())
                    if not c.closed and not n.endswith("/.") and n != "."]
        extra = set(live) - set(names)
        return sorted(names + list(extra)) if extra else names

    def _opener(self, h: Any, full: str, create_attrs: bool | None = None) -> Any:
        """What rank 0 runs to open column ``full``: a ``cf_column *``.  With
        ``create_attrs`` (attribute blocks), a missing block gives ``None``
        (False) or is created (True)."""
        return lambda: self._open_handle(h, full, create_attrs, stacklevel=5)

    def _open_handle(self, h: Any, full: str, create_attrs: bool | None = None,
                     stacklevel: int = 4, warn: bool = True) -> Any:
        """``cf_column_open`` of ``full`` on File handle ``h``: the handle (a
        torn column warns, ``stacklevel`` from here), ``None`` or a new
        attribute block (see ``_opener``), or the error raised."""
        out = ffi.new(_COLUMN_PP)
        err = ffi.new(ERROR_P)
        L = lib()
        rc = L.cf_column_open(out, h, encode_name(full), err)
        if rc >= 0:
            if warn and L.cf_column_torn(out[0]):
                _warn_torn(out[0], stacklevel)
            return out[0]
        if create_attrs is not None and err.code == -2:  # CF_ENOENT
            if not create_attrs:
                return None
            rc = L.cf_column_create(out, h, encode_name(full), ffi.NULL, 0, 0, 0, err)
            if rc < 0:
                raise_error(rc, err)
            return out[0]
        try:
            raise_error(rc, err, "column")
        except ColumnNotFoundError as exc:
            if os.path.isdir(os.path.join(self._path, full)):
                raise ColumnNotFoundError(
                    f"{exc} (a directory: use ['{full}/'] for its group)",
                    exc.code) from None
            raise

    def _open_column(self, full: str) -> Column:
        with self._lock:
            serial = self._comm.serial
            if self._coll_meta:
                self._enter("file[name] (collective_metadata=True)")
                # before the cache: every rank must take the same path
                self._checked_name(full)
            elif not serial:
                self._check_open()
                _name_check(full)
            if self._cols:
                col = self._cols.get(full)
                if col is not None and not col.closed:
                    return col
            h = self._h
            if h is None:
                self._check_open()  # raises ClosedError
            if self._commits is not None:
                self._settle()
            # serially what _opener's closure does, without making one
            if serial:
                # _open_handle's common case inline, without an error record
                # (see __init__); a failure goes the long way, which opens
                # again to report it
                L = lib()
                out = ffi.new(_COLUMN_PP)
                raw = full.encode("utf-8", "surrogateescape")
                if 0 in raw or L.cf_column_open(out, h, raw, ffi.NULL) < 0:
                    handle = self._open_handle(h, full)
                else:
                    handle = out[0]
                    if L.cf_column_torn(handle):
                        _warn_torn(handle, 3)
            elif self._coll_meta:
                handle = _mpi.replicate(self._comm, h, self._opener(h, full))
            else:
                handle = self._independent_handle(full)
            col = Column(handle, self, name=full)
            col._independent = not serial and not self._coll_meta
            self._cols[full] = col
            return col

    def _aux_handle(self) -> Any:
        """Under MPI, a read-only ``cf_file *`` on this File (opened on first
        use, touching nothing): what independent reads of metadata open
        their handles on in a writable File, where this rank's handle would
        make writers (rank 0) or is not meant for metadata (the others)."""
        with self._lock:
            if self._aux is None:
                self._aux = _mpi.open_file_handle(encode(self._abspath), _READ | 0x10)  # NOCHECK
            return self._aux

    def _independent_handle(self, full: str) -> Any:
        """Under MPI: a handle on column ``full`` opened by this rank alone
        (reading its metadata files).  Rank 0, and every rank of a read-only
        File, opens it on its File handle.  The other ranks of a writable
        File read the metadata on a read-only handle and build a replica
        from it (``cf_column_open_meta``: it writes blobs, never metadata,
        and its writes are merged into rank 0's handle at the collective
        close), as if rank 0 had sent it."""
        h = self._check_open()
        if self._mode == "r":
            return self._open_handle(h, full)
        try:
            if self._comm.rank == 0:
                return self._open_handle(h, full)
            reader = self._open_handle(self._aux_handle(), full)
        except TornError:
            if not self._ours(full):
                raise
            # marked by in-place writes under way in this File (this
            # File's next collective commit repairs the column)
            if self._comm.rank == 0:
                return self._open_handle(self._torn_handle(), full, warn=False)
            reader = self._open_handle(self._torn_handle(_READ), full, warn=False)
        try:
            meta = _mpi._export_meta(reader)
        finally:
            lib().cf_column_close(reader, ffi.NULL)
        return _mpi._open_meta(h, meta)

    def _ours(self, full: str) -> bool:
        """Under MPI, in a writable File: whether column ``full``'s torn
        marker may be this File's own, an in-place update by ranks that
        opened the column alone, not committed yet: made since the File
        was opened (a marker older than that is an interrupted update)."""
        try:
            made = os.stat(os.path.join(self._path, full, "colfile-torn")).st_mtime
        except OSError:
            return False
        return made >= self._opened_at - 2.0  # (clocks of a shared file system)

    def _torn_handle(self, mode: int = _WRITE) -> Any:
        """A ``cf_file *`` of this File that opens columns marked torn
        (``CF_OPEN_TORN_OK``), writable or not; see ``_ours``."""
        with self._lock:
            key = "_torn_fh" if mode == _WRITE else "_torn_rd"
            fh = getattr(self, key)
            if fh is None:
                fh = _mpi.open_file_handle(
                    encode(self._abspath), (self._flags & (_NODURABLE | _VERIFY)) | mode
                    | _TORN_OK | 0x10)  # NOCHECK
                setattr(self, key, fh)
            return fh

    def _forget(self, full: str) -> None:
        """Close our live handle on ``full`` before it is replaced or removed."""
        with self._lock:
            self._attr_cols.pop(full, None)
            reader = self._attr_read.pop(full, None)
            if reader is not None:
                reader._close_local()
            col = self._cols.pop(full, None)
            if col is not None:
                col.close()

    def _refuse_existing(self, full: str, overwrite: bool) -> None:
        """ColumnExistsError if ``full`` is a column (unless ``overwrite``),
        lies below one, or is above one, among the columns this File has
        open (a new one is on disk only once committed; the core's create
        looks at the disk)."""
        where = os.path.join(self._path, full)
        for name, col in list(self._cols.items()):
            if col.closed or col._kind == 2:
                continue
            if full.startswith(name + "/"):
                raise ColumnExistsError(
                    f"{where}: {name!r} is a column, which cannot hold columns: "
                    f"{full!r} would not be listed", CF_EEXIST)
            if name.startswith(full + "/"):
                raise ColumnExistsError(
                    f"{where}: is a group holding the column {name!r}; a column cannot "
                    "replace it", CF_EEXIST)
        if overwrite:
            return
        col = self._cols.get(full)
        if col is not None and not col.closed and col._kind != 2:
            raise ColumnExistsError(
                f"{where}: column {full!r} exists; pass overwrite=True to replace it",
                CF_EEXIST)

    def _create(self, full: str, dtype: Any, size: int | None, nfile: int | None,
                blob_rows: Sequence[int] | None, data: Any, align: bool = False,
                mode: str = "auto", concurrency: int | None = None,
                chunk_rows: int | None = None, overwrite: bool = False) -> Column:
        comm = self._comm
        serial = comm.serial
        box: dict[str, Any] = {}

        def prep() -> dict[str, Any]:
            self._check_open()
            if not serial:
                _name_check(full)
            # before an open handle of ours on the name is closed; the core
            # checks what is on disk under the column's lock (make())
            self._refuse_existing(full, overwrite)
            arr = None
            dt = dtype
            inferred = False
            if data is not None:
                arr = np.asarray(data)
                if arr.dtype.kind == "U":
                    arr = np.char.encode(arr, "utf-8")
                if arr.ndim not in (1, 2):
                    raise ValueError(f"data must be 1-d (rows) or 2-d (rows of vectors), "
                                     f"not {arr.ndim}-d")
                if dt is _UNSET:
                    if arr.dtype.kind not in "iufcbS":
                        raise ValueError(f"cannot store data of dtype {arr.dtype}; "
                                         "give dtype=")
                    dt = arr.dtype if arr.ndim == 1 else (arr.dtype, arr.shape[1])
                    inferred = True
                if serial and size is not None and size != len(arr):
                    raise ValueError(f"size={size} but data has {len(arr)} rows")
                if dt is None:
                    raise ValueError("dtype=None makes a header-only block, which holds "
                                     "no data")
            elif dt is _UNSET:
                raise TypeError("create() needs a dtype (None for a header-only block) "
                                "or data")
            if mode not in _mpi.IO_MODES:
                raise ValueError(f"invalid mode {mode!r}: use one of "
                                 f"{', '.join(repr(m) for m in _mpi.IO_MODES)}")
            conc = None if concurrency is None else whole(concurrency, "concurrency", low=1)
            crows = None
            if chunk_rows is not None:
                if dt is None:
                    raise ValueError("chunk_rows= needs a column with data (dtype is None)")
                crows = whole(chunk_rows, "chunk_rows", low=1)
            size_ = None if size is None else whole(size, "size")
            nfile_ = None if nfile is None else whole(
                nfile, "nfile", high=NFILE_MAX, limit=f"the most blobs a column may have, {NFILE_MAX}")
            tok, nmemb = None, 0
            if dt is not None:
                tok, nmemb = column_dtype(dt, f"{self.path}/{full}")
            rows = None
            if blob_rows is not None and dt is not None:
                rows = tuple(whole(x, f"blob_rows[{i}]")
                             for i, x in enumerate(np.asarray(blob_rows, dtype=object).reshape(-1)))
                if len(rows) > NFILE_MAX:
                    raise InvalidArgumentError(f"blob_rows has {len(rows)} blobs: above the most "
                                               f"blobs a column may have, {NFILE_MAX}")
                if sum(rows) > INT64_MAX:
                    raise InvalidArgumentError(f"blob_rows sum to {sum(rows)} rows: above the "
                                               "largest 64-bit size, 2**63-1")
            box["arr"] = arr
            return {"name": full, "tok": tok, "nmemb": nmemb, "inferred": inferred,
                    "local": None if arr is None else len(arr),
                    "size": size_, "nfile": nfile_, "rows": rows,
                    "align": bool(align), "mode": mode, "chunk_rows": crows,
                    "concurrency": conc, "overwrite": overwrite}

        if not serial:
            self._enter("create()")
        specs: list[dict[str, Any]] = _mpi.agree(comm, prep, collect=True)
        if serial:
            # one process: nothing to compare between ranks
            has_data = specs[0]["local"] is not None
            tok, nmemb = specs[0]["tok"], specs[0]["nmemb"]
        else:
            same = _mpi._check_same
            for key, what in (("name", "column name"), ("size", "size"), ("nfile", "nfile"),
                              ("rows", "blob_rows"), ("align", "align_blobs_to_ranks"),
                              ("mode", "mode"), ("concurrency", "concurrency"),
                              ("chunk_rows", "chunk_rows"), ("overwrite", "overwrite"),
                              ("inferred", "whether dtype is given")):
                same([sp[key] for sp in specs], what)
            has_data = same([sp["local"] is not None for sp in specs], "whether data is given")
            typed = [sp for sp in specs if not sp["inferred"] or sp["local"]] or specs
            tok, nmemb = same([(sp["tok"], sp["nmemb"]) for sp in typed], "dtype")
        size_ = specs[0]["size"]
        if has_data:
            counts = [int(sp["local"]) for sp in specs]
            total = sum(counts)
            if size_ is not None and size_ != total:
                raise ValueError(f"size={size_} but the ranks' data have {total} rows "
                                 "in total")
        else:
            counts = []
            total = 0 if size_ is None else size_
        nf = specs[0]["nfile"]
        rows = specs[0]["rows"]
        if tok is None:
            nf, rows, total = 0, None, 0
        elif rows is not None:
            if (has_data or total) and sum(rows) != total:
                raise ValueError(f"blob_rows sum to {sum(rows)}, but size is {total}")
        if tok is not None:
            size_p = ffi.new("int64_t *")
            bad = lib().cf_dtype_itemsize(tok.encode("ascii"), size_p, ffi.NULL)
            itemsize = 0 if bad else int(size_p[0])
            column_bytes(total if rows is None else sum(rows), itemsize * nmemb)
            if rows is None:
                if nf is None:
                    nf = _mpi.plan_nfile(total * itemsize * nmemb, comm.size)
                if align:
                    rank_rows = counts if has_data else [
                        _mpi.plan_share(total, comm.size, r)[1] for r in range(comm.size)]
                    rows = tuple(_mpi.plan_blobs_by_rank(rank_rows, nf))

        with self._lock:
            self._forget(full)
            h = self._check_open()
            if self._commits is not None:
                self._settle(full)

            def make() -> Any:
                out = ffi.new("cf_column **")
                err = new_error()
                name = encode_name(full)
                ctok = ffi.NULL if tok is None else tok.encode("ascii")
                if rows is None and not nf and total:
                    raise InvalidArgumentError(
                        f"{os.path.join(self._path, full)}: {total} rows need at least one "
                        "blob (nfile 0)", lib().CF_EARG)
                blobs = rows if rows is not None else _split_rows(total, nf or 0)
                arr_rows = np.ascontiguousarray(blobs, dtype=np.int64)
                flags = lib().CF_CREATE_REPLACE if overwrite else 0
                rc = lib().cf_column_create_ex(
                    out, h, name, ctok, nmemb, len(arr_rows),
                    ffi.cast("int64_t *", arr_rows.ctypes.data), flags, err)
                if rc < 0:
                    raise_error(rc, err, "create")
                crows = specs[0]["chunk_rows"]
                if crows is not None:
                    # before anything is written, and (under MPI) before rank 0
                    # exports the snapshot the replicas are built from
                    rc = lib().cf_column_set_chunk_rows(out[0], crows, err)
                    if rc < 0:
                        lib().cf_column_close(out[0], ffi.NULL)
                        raise_error(rc, err)
                return out[0]

            handle = _mpi.replicate(comm, h, make)
            col = Column(handle, self, name=full)
            col._new_blobs_from = 0  # every blob is this handle's to fill
            self._cols[full] = col
        if has_data:
            arr = box["arr"]
            if serial:
                # One process: the rows go straight in (what write_all would
                # do, without its collective bookkeeping).
                if len(arr):
                    data_ = as_array(arr, col.dtype)
                    col._write_contig(0, len(data_), col._rows_of(data_, len(data_)))
            else:
                col.write_all(arr, mode=mode, concurrency=concurrency)
        return col

    def _remove(self, full: str) -> None:
        group = full.endswith("/")
        name = full.rstrip("/") if group else full
        if not self._comm.serial:
            self._enter("del file[name]")
        with self._lock:
            self._checked_name(name)
            if not self.writable:
                # refused before the open handles of the name are closed
                raise ReadOnlyError(f"{self._path}: File is open read-only; cannot remove "
                                    f"{full!r}", CF_EREADONLY)
            if group:
                for n in [n for n in list(self._cols) + list(self._attr_cols)
                          + list(self._attr_read)
                          if n == name or n.startswith(name + "/")]:
                    self._forget(n)
            else:
                self._forget(full)
            h = self._check_open()
            self._settle()

            def run() -> None:
                err = new_error()
                if group:
                    rc = lib().cf_file_remove_group(h, encode_name(name), err)
                else:
                    rc = lib().cf_file_remove(h, encode_name(full), err)
                if rc < 0:
                    raise_error(rc, err, "column")

            self._on_root(run)

    def _attr_column(self, full: str, create: bool, reading: bool = False) -> Column | None:
        """The handle holding the attributes of ``"."`` or ``"grp/."`` (kept
        open until the File closes); ``None`` if the directory does not exist
        and ``create`` is False.  Under MPI collective: the handle changes
        the attributes (``create`` True: to set one, False: to delete one)."""
        with self._lock:
            if not self._comm.serial:
                self._enter("attrs[name] (collective_metadata=True)" if reading else
                            "attrs[name] = value" if create else "del attrs[name]")
                self._checked_name(full)
                reader = self._attr_read.pop(full, None)
                if reader is not None:  # the collective handle replaces it
                    reader._close_local()
            col = self._attr_cols.get(full)
            if col is not None and not col.closed:
                return col
            # (under MPI _cols differs between ranks: not looked at)
            col = self._cols.get(full) if self._comm.serial else None
            if col is None or col.closed:
                h = self._check_open()
                self._settle()
                handle = _mpi.replicate(self._comm, h, self._opener(h, full, create))
                if handle is None:
                    return None
                col = Column(handle, self)
                self._cols[full] = col
            self._attr_cols[full] = col
            return col

    def _attr_reader(self, full: str) -> Column | None:
        """Under MPI: the handle to read the attributes of ``"."`` or
        ``"grp/."`` from, on this rank alone: the collective handle if an
        attribute change made one, else one this rank opens (read-only,
        kept until the File closes or a change replaces it); ``None`` if the
        directory does not exist."""
        with self._lock:
            h = self._check_open()
            _name_check(full)
            col = self._attr_cols.get(full)
            if col is not None and not col.closed:
                return col
            col = self._attr_read.get(full)
            if col is not None and not col.closed:
                return col
            base = h if self._mode == "r" else self._aux_handle()
            handle = self._open_handle(base, full, False)
            if handle is None:
                return None
            col = Column(handle, self)
            self._attr_read[full] = col
            return col
