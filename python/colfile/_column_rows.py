"""Reading and writing a column's rows: numpy indexing, contiguous reads
and writes, appends, and the collective reads and writes under MPI.  Part
of :class:`~colfile.Column`; see there for the contract.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _indexing
from . import mpi as _mpi
from ._buffers import PLACE_MIN_BYTES, empty_at
from ._dtypes import as_array
from ._core import column as _c
from ._ints import INT64_MAX, NFILE_MAX, whole
from .errors import RangeError
from ._column_handle import ColumnHandle

if TYPE_CHECKING:
    from .file import File

__all__ = ["ColumnRows"]


class ColumnRows(ColumnHandle):
    """The rows of a column (see :class:`~colfile.Column`, which is one)."""

    # ------------------------------------------------------------------
    # reading

    def __getitem__(self, key: Any) -> Any:
        if type(key) is slice and key.step is None:
            # col[a:b], the common small read, in the fewest Python calls
            # (a small read's cost is mostly these): one into the binding
            # tier, large arrays placed for the copy (_buffers)
            with self._lock:
                h = self._h
                if h is None:
                    self._handle()  # raises ClosedError
                return _c.read_slice(h, key, self._row_shape, self._dtype, self._rowbytes,
                                     PLACE_MIN_BYTES, empty_at)
        return _indexing.getitem(self, key, self.size, self._row_shape,
                                 self._dtype, self._what())

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
        with self._lock:
            h = self._handle()
            for b in np.unique(blob).tolist():
                ends[b] = firsts[b] + _c.blob_rows_held(h, b)
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
        self._call(_c.grow, n, nfile)
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
        mode : {'auto', 'throttled', 'aggregated', 'blob_owners'}
            ``'throttled'``: every rank writes its own rows, at most
            ``concurrency`` ranks at a time (``cf_plan_turn``; a barrier
            between turns).  ``'aggregated'``: consecutive ranks form
            groups of about 64 MiB (``cf_plan_groups``); each converts its
            rows to the column dtype with the core's converter, and the
            group's first rank gathers them and writes them with one
            request per piece of at most 64 MiB.  ``'blob_owners'``: each
            blob has one writer, the rank holding its first written row;
            the other ranks send it their rows of the blob (in pieces of
            at most 64 MiB), so no two processes write one file (no extent
            lock changes hands on Lustre or GPFS: the setting to use at
            scale, docs/scale.md).  ``'auto'``: aggregated
            when ranks hold less than 4 MiB on average, else throttled
            (``cf_plan_mode``; never ``'blob_owners'``).  One rank always
            writes directly, and so do communicators without
            ``Split``/``Gatherv`` (``Send``/``Recv`` for ``'blob_owners'``).
        concurrency : int, optional
            Ranks (blob owners) doing I/O at once in throttled
            (``'blob_owners'``) mode (default
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
