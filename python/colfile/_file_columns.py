"""How a File opens, creates and removes columns and the attribute blocks
of groups, serially and under MPI: the internals its groups use.  Part of
:class:`~colfile.File`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import mpi as _mpi
from ._core import column as _c
from ._core import dtype as _cdtype
from ._core import file as _cf
from ._constants import (
    CF_EARG,
    CF_ENAME,
    CF_ENOENT,
    CF_OPEN_NOCHECK,
    CF_OPEN_NODURABLE,
    CF_OPEN_READ,
    CF_OPEN_TORN_OK,
    CF_OPEN_VERIFY,
    CF_OPEN_WRITE,
)
from ._dtypes import as_array, column_dtype
from ._ints import INT64_MAX, NFILE_MAX, column_bytes, whole
from ._warnings import CatalogWarning, TornWarning
from ._group import _UNSET
from .column import Column
from .errors import CF_EEXIST, CF_EREADONLY, ColumnExistsError, ColumnNotFoundError, InvalidArgumentError, ReadOnlyError, TornError

if TYPE_CHECKING:
    from .file import File

__all__ = ["FileColumns"]

_name_check = _cf.name_check


def _split_rows(size: int, nfile: int) -> Any:
    """bigfile's split of ``size`` rows over ``nfile`` blobs (what
    ``cf_column_create`` does): blob i gets (i+1)*size//nfile - i*size//nfile."""
    if nfile == 0:
        return []
    if size <= INT64_MAX // nfile:  # no product overflows: vectorised
        edges = np.arange(nfile + 1, dtype=np.int64) * size // nfile
        return np.diff(edges)
    return [(i + 1) * size // nfile - i * size // nfile for i in range(nfile)]



def _warn_torn(handle: Any, stacklevel: int) -> None:
    """Warn that the column just opened (with ``torn="warn"``) is torn;
    ``stacklevel`` as warnings.warn's, counted from the caller."""
    warnings.warn(f"{_c.path(handle)}: an in-place update was "
                  "interrupted; rows may mix old and new values (colfile repair "
                  "clears this)", TornWarning, stacklevel=stacklevel + 1)


class FileColumns:
    """Opening, creating and removing columns and attribute blocks (see
    :class:`~colfile.File`, which is one)."""

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
            code = _c.probe(h, full + ".", raise_codes=(CF_ENAME,))
            if code == 0:
                # the directory of a column is no group (as in h5py, a
                # dataset is not a group)
                return not self._is_column(h, full[:-1])
            if code == CF_ENOENT:  # no such directory
                return False
            return True  # the directory is there; its attribute files are not fine
        return bool(self._on_root(run)) if self._coll_meta else run()

    @property
    def catalog_stale(self) -> bool:
        """True once a listing of this File (on this rank: under MPI rank
        0 lists for a collective read) found its catalog
        (``.colfile-catalog/``) stale without the File's generation showing
        it (see :class:`~colfile.CatalogWarning`, which a read-only File
        gives): ``colfile index``, or the close of a writable File,
        rebuilds it."""
        with self._lock:
            return _cf.catalog_stale(self._check_open())

    @staticmethod
    def _is_column(h: Any, name: str) -> bool:
        """True if ``name`` opens as a column on File handle ``h``."""
        if not name:
            return False
        return _c.probe(h, name) == 0

    def _checked_name(self, full: str) -> Any:
        def prep() -> str:
            self._check_open()
            if not self._comm.serial:
                _name_check(full, self.path)
            return full
        return self._same("column name", prep)

    def _list(self) -> list[str]:
        def run() -> tuple[list[str], bool]:
            with self._lock:
                h = self._check_open()
                return _cf.list_names(h), _cf.catalog_stale(h)

        self._check_open()
        self._settle()
        if self._coll_meta:
            self._enter("listing (collective_metadata=True)")
            names, stale = self._on_root(run)
            names = list(names)
        else:
            names, stale = run()  # independent under MPI: this rank lists
        # once per read-only File (a writable one's close rebuilds the
        # catalog), on rank 0 only (every rank may see it)
        if (stale and self._mode == "r" and self._comm.rank == 0
                and not getattr(self, "_catalog_warned", False)):
            self._catalog_warned = True
            warnings.warn(
                f"{self._path}: the catalog (.colfile-catalog/) lists other columns than the "
                "File holds, though the File's generation shows no colfile writer changed them: "
                "a writer that does not record it (bigfile, a copy, an older colfile) did. "
                "This listing was read from the directories; on Lustre, GPFS, BeeGFS or NFS a "
                f"later one may trust the stale catalog: run `colfile index {self._path}` to "
                "rebuild it", CatalogWarning, stacklevel=3)
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
        try:
            if create_attrs is not None:
                handle = _c.open_block(h, full, create_attrs)
            else:
                handle = _c.open(h, full)
        except ColumnNotFoundError as exc:
            if os.path.isdir(os.path.join(self._path, full)):
                raise ColumnNotFoundError(
                    f"{exc} (a directory: use ['{full}/'] for its group)",
                    exc.code) from None
            raise
        if handle is not None and warn and _c.torn(handle):
            _warn_torn(handle, stacklevel)
        return handle

    def _open_column(self, full: str) -> Column:
        with self._lock:
            serial = self._comm.serial
            if self._coll_meta:
                self._enter("file[name] (collective_metadata=True)")
                # before the cache: every rank must take the same path
                self._checked_name(full)
            elif not serial:
                self._check_open()
                _name_check(full, self.path)
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
                opened = _c.open_read(h, full)
                if opened is None:
                    handle, desc = self._open_handle(h, full), None
                else:
                    handle, torn, desc = opened
                    if torn:
                        _warn_torn(handle, 3)
            elif self._coll_meta:
                handle, desc = _mpi.replicate(self._comm, h, self._opener(h, full)), None
            else:
                handle, desc = self._independent_handle(full), None
            col = Column(handle, self, name=full, desc=desc)
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
                self._aux = _cf.open(self._abspath, CF_OPEN_READ | CF_OPEN_NOCHECK)
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
                handle = self._open_handle(h, full, warn=False)
                if _c.torn(handle):  # a File opened with torn='warn'
                    if self._ours(full):
                        return self._adopt(handle)
                    _warn_torn(handle, 3)
                return handle
            reader = self._open_handle(self._aux_handle(), full)
        except TornError:
            if not self._ours(full):
                raise
            # marked by in-place writes under way in this File (its ranks'
            # writes, merged by its next collective commit)
            if self._comm.rank == 0:
                return self._adopt(self._open_handle(self._torn_handle(), full, warn=False))
            reader = self._open_handle(self._torn_handle(CF_OPEN_READ), full, warn=False)
        try:
            meta = _c.export_meta(reader)
        finally:
            _c.release(reader)
        return _c.open_meta(h, meta)

    @staticmethod
    def _adopt(handle: Any) -> Any:
        """Rank 0's handle opened over the torn marker of this File's ranks'
        in-place writes: it commits them, so the marker is their update
        under way, not a crash.  The header's byte sums and colfile-v1 are
        still the committed ones (replicas write no metadata): the handle
        keeps them and the collective commit merges every rank's writes
        into them, as when rank 0 opens first (``cf_column_adopt_update``).
        A repair instead would recompute the byte sums from the blobs and
        lose the bytes they overwrote (format.md 6), so the File's sums
        would depend on which rank opened the column first."""
        try:
            _c.adopt_update(handle)
        except BaseException:
            _c.release(handle)
            raise
        return handle

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

    def _torn_handle(self, mode: int = CF_OPEN_WRITE) -> Any:
        """A ``cf_file *`` of this File that opens columns marked torn
        (``CF_OPEN_TORN_OK``), writable or not; see ``_ours``."""
        with self._lock:
            key = "_torn_fh" if mode == CF_OPEN_WRITE else "_torn_rd"
            fh = getattr(self, key)
            if fh is None:
                fh = _cf.open(self._abspath, (self._flags & (CF_OPEN_NODURABLE | CF_OPEN_VERIFY)) | mode
                              | CF_OPEN_TORN_OK | CF_OPEN_NOCHECK)
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
                _name_check(full, self.path)
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
            itemsize = _cdtype.itemsize(tok.encode("ascii"))
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
                if rows is None and not nf and total:
                    raise InvalidArgumentError(
                        f"{os.path.join(self._path, full)}: {total} rows need at least one "
                        "blob (nfile 0)", CF_EARG)
                blobs = rows if rows is not None else _split_rows(total, nf or 0)
                arr_rows = np.ascontiguousarray(blobs, dtype=np.int64)
                # chunk rows are set before anything is written, and (under
                # MPI) before rank 0 exports the snapshot the replicas are
                # built from
                return _c.create(h, full, tok, nmemb, arr_rows, overwrite,
                                 specs[0]["chunk_rows"])

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
                if group:
                    _cf.remove_group(h, name)
                else:
                    _cf.remove(h, full)

            self._on_root(run)

    def _move(self, src: str, dst: str) -> None:
        if not self._comm.serial:
            self._enter("move()")
        with self._lock:
            self._checked_name(src)
            self._checked_name(dst)
            if not self.writable:
                raise ReadOnlyError(f"{self._path}: File is open read-only; cannot rename "
                                    f"{src!r}", CF_EREADONLY)
            # this File's own handles of the old name would read a path
            # that no longer leads to the column
            self._forget(src)
            h = self._check_open()
            self._settle()
            self._on_root(lambda: _cf.rename(h, src, dst))

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
            _name_check(full, self.path)
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
