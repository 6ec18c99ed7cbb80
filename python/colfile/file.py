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
from typing import Any

import numpy as np

from . import _opener
from . import mpi as _mpi
from ._deferred import Committer
from ._core import file as _cf
from ._constants import (
    CF_OPEN_CREATE,
    CF_OPEN_DIGEST_HELPER,
    CF_OPEN_DIGEST_INLINE,
    CF_OPEN_EXCL,
    CF_OPEN_NODURABLE,
    CF_OPEN_NOLOCKING,
    CF_OPEN_READ,
    CF_OPEN_TORN_OK,
    CF_OPEN_TRUNCATE,
    CF_OPEN_VERIFY,
    CF_OPEN_WRITE,
)
from ._file_columns import FileColumns
from ._file_commit import FileCommit
from ._group import Group
from ._warnings import FileSystemWarning, TornWarning
from .attrs import decode_value, numeric_dtype
from .column import Column
from .errors import ClosedError, Error
from .locking import LockingWarning, lock_scope, scope_note

__all__ = ["File", "Group", "MODES", "TornWarning", "FileSystemWarning"]


#: The open modes and their libcolfile flags (one table, one place).
MODES: dict[str, int] = {
    "r": CF_OPEN_READ,
    "r+": CF_OPEN_WRITE,
    "w": CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_TRUNCATE,
    "w-": CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_EXCL,
    "x": CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_EXCL,
    "a": CF_OPEN_WRITE | CF_OPEN_CREATE,
}


#: What changes on network file systems (docs/reliability.md).
_SHARED_FS_NOTES = {
    "nfs": "the writer lock needs the NFS lock manager (a writer fails with BusyError/"
           "StorageError where it is missing), and readers on other clients see a commit "
           "only once their attribute cache expires (actimeo)",
    "cifs": "writer locks and directory swaps depend on the server; commits may not be atomic",
    "smb2": "writer locks and directory swaps depend on the server; commits may not be atomic",
}




_release_file = _cf.close



def _reopen_file(abspath: str, torn_ok: bool, verify: bool) -> File:
    """Unpickle a File: open it again, read-only and serial."""
    return File(abspath, "r", torn="warn" if torn_ok else "raise", verify=verify)


#: File(digest=...): the cf_open_flags of each placement
DIGESTS = {"auto": 0, "inline": CF_OPEN_DIGEST_INLINE, "helper": CF_OPEN_DIGEST_HELPER}


def _open_flags(mode: str, durable: Any, torn: str, verify: Any, locking: Any = True,
                digest: Any = "auto") -> int:
    """The cf_file_open flags of File's arguments (ValueError if invalid)."""
    flags = MODES.get(mode) if type(mode) is str else None
    if flags is None:
        raise ValueError(f"invalid mode {mode!r}: use one of "
                         f"{', '.join(repr(m) for m in MODES)}")
    if locking is False:
        flags |= CF_OPEN_NOLOCKING
    elif locking is not True and locking != "local":
        raise ValueError(f"invalid locking={locking!r}: use True, False or 'local'")
    if torn != "raise":
        if torn != "warn":
            raise ValueError(f"invalid torn={torn!r}: use 'raise' or 'warn'")
        flags |= CF_OPEN_TORN_OK
    if not durable:
        flags |= CF_OPEN_NODURABLE
    if verify:
        flags |= CF_OPEN_VERIFY
    place = DIGESTS.get(digest) if type(digest) is str else None
    if place is None:
        raise ValueError(f"invalid digest={digest!r}: use 'auto', 'inline' or 'helper'")
    return flags | place


#: threading.RLock is a Python function returning this type
_RLock = _thread.RLock


_name_check = _cf.name_check


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
            _cf.forget_locks(h)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_locks_in_child)


class File(FileColumns, FileCommit, Group):
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
        the blob and its rows.  A read of part of a blob checks the chunks
        it reads whole whose CRC32C the chunk index of a large column
        records (docs/format.md 8.6); the rest is not checked.
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
    digest : {'auto', 'inline', 'helper'}, default 'auto'
        Where a write computes its byte sums, CRC32C and statistics:
        ``'inline'`` on the writing thread, piece by piece after copying
        it; ``'helper'`` on a helper thread beside it (for large writes),
        which is faster while a core is idle and slower when every core
        runs a rank; ``'auto'`` a helper only when this process may run on
        at least 2 CPUs and the ranks of its node (under ``comm=``, those
        sharing memory; else 1) may run on at least 2 CPUs each.  The
        bytes written are the same either way; :attr:`digest_placement`
        tells the choice (docs/performance.md).

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
                 locking: bool | str = True, digest: str = "auto") -> None:
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
            if flags is None or torn != "raise" or not durable or verify or locking is not True \
                    or digest != "auto":
                flags = _open_flags(mode, durable, torn, verify, locking, digest)
            handle = _cf.open(path, flags)
        else:
            def prep() -> tuple[str, str, bool, str, bool, Any, Any]:
                _open_flags(mode, durable, torn, verify, locking, digest)
                if deferred:
                    raise ValueError("deferred=True is for serial Files: under comm= "
                                     "closing a column is collective")
                _cf.encode_path(path)  # a NUL byte: the error agreed on every rank
                return self._path, mode, bool(durable), torn, bool(verify), locking, digest

            # every rank must be given the same path and options
            try:
                self._same("File path and options", prep)
                flags = _open_flags(mode, durable, torn, verify, locking, digest)
                handle = _mpi.open_file(self._comm, path, flags)
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
                                if flags & CF_OPEN_WRITE else None)
        if flags & CF_OPEN_WRITE:
            _WRITABLE.add(self)
        if deferred and flags & CF_OPEN_WRITE:
            self._commits = Committer()
        if flags & CF_OPEN_WRITE and self._comm.rank == 0:
            fs = _cf.fs_type(handle)
            if fs in _SHARED_FS_NOTES:
                warnings.warn(f"{self._path}: on {fs}: {_SHARED_FS_NOTES[fs]}", FileSystemWarning,
                              stacklevel=2)
            if locking is not False:
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
        if self._flags & CF_OPEN_WRITE:
            raise TypeError(f"{self._path}: a File open for writing (mode {self._mode!r}) "
                            "cannot be pickled: close it and pickle File(path, 'r')")
        return (_reopen_file, (self._abspath, bool(self._flags & CF_OPEN_TORN_OK),
                               bool(self._flags & CF_OPEN_VERIFY)))

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

    def _enter(self, op: str) -> None:
        """The agreement step of collective operation ``op`` of this File
        (``Comm.enter``): every rank must be in it (CollectiveError)."""
        self._check_open()
        self._comm.enter(op, self._path)

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
        def run() -> bytes:
            with self._lock:
                return _cf.column_attrs(self._check_open())

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
        def run() -> list[str]:
            with self._lock:
                return _cf.cleanup(self._check_open(), dry_run, force)

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
        return _cf.lock_scope(self._check_open())

    @property
    def digest_placement(self) -> str:
        """Where this handle's writes digest their bytes: ``'inline'`` or
        ``'helper'`` (``digest=``, or what ``'auto'`` chose for this
        process; ranks may differ where their CPUs do).  A read-only File
        writes nothing: ``'auto'`` gives ``'inline'`` there, without
        asking for the CPUs."""
        return _cf.digest_placement(self._check_open())

    @property
    def fs_type(self) -> str:
        """The file system holding the File (``cf_file_fs_type``): ``'ext4'``,
        ``'xfs'``, ``'tmpfs'``, ``'nfs'``, ``'lustre'``, ..., ``'other'``."""
        return _cf.fs_type(self._check_open())

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

    def __enter__(self) -> File:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# the File that unpickled columns and dask and histogram tasks reopen
_opener.register(File)
