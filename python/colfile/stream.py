"""Task-local streams: every task appends rows of unknown count, with no
communication, into a few shared physical files; a commit records how far
each task got (docs/streams.md, docs/format.md 8.7).

Writing, serially for several tasks::

    with colfile.File("run", "a") as f:
        with colfile.stream.create(f, "log", "<f8", tasks=4) as w:
            w.task(2).append(np.arange(10.0))
            w.flush()                        # a checkpoint: committed, still open

and under MPI (``File(..., comm=comm)``), one task per rank::

    with colfile.stream.create(f, "particles", "<f4", nmemb=3) as w:
        w.append(positions)                  # this rank's task; no communication

Reading, by any number of processes::

    s = colfile.stream.open(f, "particles")
    s.task(3)          # task 3's rows, in the order it appended them
    s[1000:2000]       # the global view: task 0's rows, then task 1's, ...
    s.to_dask()

and by every rank of a job at once, none reading the whole table::

    s = colfile.stream.open(f, "particles", collective=True)   # f opened with comm=
    s[first:first + count]                                      # this rank's share

The C and Python writers share the core, so the same appends give the same
bytes whichever wrote them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from . import mpi as _mpi
from . import _stream_open as _so
from . import stream_query as _sq
from ._core import stream as _s
from ._core.integrity import CHUNK_STATS_DTYPE
from ._dtypes import token
from .errors import DTypeError, InvalidArgumentError

from .file import File

if TYPE_CHECKING:
    import dask.array

    import colfile

__all__ = ["create", "reopen", "open", "list_streams", "StreamWriter", "StreamTask", "Stream"]


def _row_dtype(dtype: Any) -> tuple[str, np.dtype[Any]]:
    """(the token C gets, the numpy dtype of one element)."""
    if isinstance(dtype, str) and dtype == "raw":
        return "raw", np.dtype(np.uint8)
    dt = np.dtype(dtype)
    return token(dt).decode(), dt


def _nodes(comm: Any) -> int:
    """The nodes: groups of ranks that share memory (as cf_mpi_stream_files
    counts them, so that C and Python choose alike)."""
    split = getattr(comm, "Split_type", None)
    if split is None:
        return 1
    from mpi4py import MPI  # noqa: PLC0415 -- only reached under mpi4py
    node = split(MPI.COMM_TYPE_SHARED)
    try:
        return int(comm.allreduce(1 if node.rank == 0 else 0))
    finally:
        node.Free()


class StreamTask:
    """One task's logical stream (made by :meth:`StreamWriter.task`)."""

    def __init__(self, writer: StreamWriter, handle: Any, index: int) -> None:
        self._writer = writer
        self._h = handle
        self._err = _s.error_record()  # reused by every append: C writes it only on a failure
        #: the task's number
        self.index = index

    def append(self, rows: Any) -> None:
        """Append ``rows`` (an array of the stream's dtype, shape ``(n,)``
        or ``(n, nmemb)``; bytes for a raw stream) at the end of the task's
        stream.  No communication; part of the stream at the next commit."""
        self._writer._check_open()
        w = self._writer
        if w.raw:  # any bytes: of a bytes-like object, or of an array as it is in memory
            if isinstance(rows, (bytes, bytearray, memoryview)):
                arr = np.frombuffer(rows, np.uint8)
            else:
                # the bytes tobytes() gives (C order), without copying a
                # contiguous array's
                a = np.asarray(rows)
                if not a.flags.c_contiguous:
                    a = np.ascontiguousarray(a)
                arr = a.reshape(-1).view(np.uint8)
        elif type(rows) is np.ndarray and rows.dtype == w.dtype and rows.flags.c_contiguous:
            arr = rows  # the common case, checked cheaply: no conversion
        else:
            arr = np.asarray(rows)
            if arr.dtype != w.dtype:
                try:  # numpy's same_kind rule: no float to int, no complex to float
                    arr = arr.astype(w.dtype, casting="same_kind")
                except TypeError as exc:
                    raise DTypeError(f"{w.name}: cannot append {arr.dtype} rows to a stream of {w.dtype}: "
                                     f"{exc}") from None
            arr = np.ascontiguousarray(arr)
        if w.nmemb > 1 and arr.size % w.nmemb:
            raise InvalidArgumentError(f"{w.name}: {arr.size} values are not whole rows of {w.nmemb}")
        _s.append(self._h, arr, arr.size // w.nmemb, self._err)

    @property
    def rows(self) -> int:
        """Rows appended so far (committed or not)."""
        return _s.task_rows(self._h)


class StreamWriter:
    """A stream being written (made by :func:`create`).  Commits with
    :meth:`flush` and :meth:`close`; a writer dropped without them leaves
    the stream at its last commit (absent if never committed)."""

    def __init__(self, file: colfile.File, name: str, tok: str, dt: np.dtype[Any], nmemb: int,
                 handle: Any, layout: tuple[int, int, int, int], owner: bool) -> None:
        self.file = file
        self.name = name
        self.dtype = dt
        self.nmemb = nmemb
        self.raw = tok == "raw"
        self.tasks, self.files, self.chunk, self.align = layout
        self._h = handle
        self._owner = owner
        self._comm = file._comm
        self._tasks: dict[int, StreamTask] = {}
        self._fcomm: Any = None  # under MPI: the ranks of this rank's physical file

    def _check_open(self) -> None:
        if self._h is None:
            raise ValueError(f"stream {self.name!r} is closed")

    @property
    def table_bytes(self) -> int:
        """Bytes of the committed table this process read when the stream
        was reopened (0 for a new stream)."""
        self._check_open()
        return _s.writer_table_bytes(self._h)

    def task(self, index: int | None = None) -> StreamTask:
        """The writer of task ``index`` (under MPI: this rank's, the
        default; serially: any task, 0 by default)."""
        self._check_open()
        if not self._comm.serial:
            if index not in (None, self._comm.rank):
                raise InvalidArgumentError(f"{self.name}: under comm= rank {self._comm.rank} writes task "
                                           f"{self._comm.rank} only, not {index}")
            index = self._comm.rank
        index = 0 if index is None else int(index)
        t = self._tasks.get(index)
        if t is None:
            t = StreamTask(self, _s.task_open(self._h, index), index)
            self._tasks[index] = t
        return t

    def append(self, rows: Any) -> None:
        """``task().append(rows)``: this rank's task under MPI, task 0
        serially."""
        self.task().append(rows)

    def flush(self) -> None:
        """Commit what every task has appended (collective under MPI): each
        task's file is made durable and the table replaced atomically; the
        first commit makes the stream visible."""
        self._check_open()
        if self._comm.serial:
            _s.flush(self._h)
            return
        self._flush_parts()

    def _flush_parts(self) -> None:
        """The commit under MPI, in parts (``cf_stream_task_part``; the
        table ``cf_mpi_stream_flush`` writes): rank 0 writes the table's
        head and checksum line, the last rank of each physical file its
        ranks' lines, so no rank receives every task's chunk CRCs and
        statistics; rank 0 gets one (length, CRC32C) pair per rank.  Four
        collectives whatever the layout (a gather, a scatter, a gather, a
        broadcast; a gather per physical file besides when ranks share
        one): each is a wait for the slowest rank."""
        comm = self._comm
        mc = comm.comm
        me = comm.rank
        text, crc, failure = b"", 0, None
        try:
            text, crc = _s.task_part(self.task()._h)
        except Exception as exc:
            failure = exc
        got = mc.gather((_mpi._status(failure, me) if failure else None, len(text), crc), root=0)
        tmp, total, all_crc = "", 0, 0
        orders: list[Any] | None = None
        if me == 0:
            bad = [g[0] for g in got if g[0] is not None]
            if not bad:
                try:
                    tmp, hlen, all_crc = _s.part_begin(self._h)
                except Exception as exc:
                    bad = [_mpi._status(exc, 0)]
            if bad:
                orders = [(bad, None)] * comm.size
            else:  # each rank's lines go after the head and the lines of the ranks before it
                orders, total = [], hlen
                for _, n, c in got:
                    orders.append((None, (tmp, total)))
                    all_crc = _s.crc32c_join(all_crc, c, n)
                    total += n
        bad, where = mc.scatter(orders, root=0)
        if bad:
            raise _mpi._rebuild(bad) from failure
        tmp, at = where
        failure = None
        try:
            if self.files == self.tasks:  # one task per file: each rank writes its own lines
                _s.part_write(self._h, tmp, at, text, True)
            else:
                if self._fcomm is None:  # the ranks of one physical file (neighbours)
                    self._fcomm = mc.Split(_s.file_of(self.tasks, self.files, me)[0], me)
                fc = self._fcomm
                parts = fc.gather((at, text), root=fc.size - 1)
                if fc.rank == fc.size - 1:
                    _s.part_write(self._h, tmp, parts[0][0], b"".join(t for _, t in parts), True)
        except Exception as exc:
            failure = exc
        got = mc.gather(_mpi._status(failure, me) if failure else None, root=0)
        outcome = None
        if me == 0:
            bad = [g for g in got if g is not None]
            try:
                _s.part_end(self._h, tmp, total, all_crc, not bad)
            except Exception as exc:
                bad = bad or [_mpi._status(exc, 0)]
            outcome = bad or None
        outcome = mc.bcast(outcome, root=0)
        if outcome:
            raise _mpi._rebuild(outcome) from failure

    def close(self) -> None:
        """Commit (:meth:`flush`) and release the writer (also on failure)."""
        if self._h is None:
            return
        try:
            self.flush()
        finally:
            self.discard()

    def discard(self) -> None:
        """Release the writer without committing."""
        if self._h is not None:
            _s.discard(self._h)
            self._h = None
            self._tasks.clear()
        if self._fcomm is not None:
            self._fcomm.Free()
            self._fcomm = None

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.close()
        else:
            self.discard()


def create(file: colfile.File, name: str, dtype: Any, *, nmemb: int = 1, tasks: int | None = None,
           files: int = 0, chunk: int = 0, align: int = 0) -> StreamWriter:
    """Create stream ``name`` in the writable ``file``.

    Parameters
    ----------
    dtype : numpy dtype or ``"raw"``
        The element type (a column dtype), or opaque bytes.
    nmemb : int
        Elements per row.
    tasks : int, optional
        Serially, the number of tasks (default 1).  Under ``comm=`` every
        rank is one task (``tasks`` must then be the communicator's size).
    files : int
        Physical files (0: one serially; under MPI one per node, or one
        per task on a local file system such as ext4 or xfs:
        ``cf_stream_files_default``).
    chunk, align : int
        Bytes per chunk (0: 1 MiB) and their alignment (0: the File's
        ``st_blksize``).

    Until the first commit nothing is visible at ``name``; an existing
    stream there is replaced then.
    """
    tok, dt = _row_dtype(dtype)
    comm = file._comm
    fh = file._h
    if comm.serial:
        layout = _s.layout_choose(fh, 1 if tasks is None else int(tasks), files, chunk, align)
        return StreamWriter(file, name, tok, dt, nmemb, _s.create(fh, name, tok, nmemb, layout), layout, True)
    if tasks not in (None, comm.size):
        raise InvalidArgumentError(f"{name}: under comm= there is one task per rank ({comm.size}), "
                                   f"not {tasks}")
    if files == 0:
        # the nodes count only on a file system where the default is one
        # file per node: rank 0's decides (the one whose layout counts), and
        # on a local one no rank waits for the others to count them
        mine = 0
        if comm.rank == 0:
            one = _s.files_default(fh, comm.size, 1)
            mine = one if one == _s.files_default(fh, comm.size, comm.size) else 0
        files = comm.bcast(mine, root=0) or _s.files_default(fh, comm.size, _nodes(comm.comm))
    return _collective(file, name, lambda: _s.create(fh, name, tok, nmemb, _s.layout_choose(
        fh, comm.size, files, chunk, align)))


def reopen(file: colfile.File, name: str) -> StreamWriter:
    """Reopen the committed stream ``name`` of the writable ``file`` to
    append more: a job restarting from its last checkpoint.  Its dtype and
    layout are the stream's; every task continues after its committed
    rows (what a crash left beyond them is written over).  Under
    ``comm=`` collective, one task per rank: the stream must have as many
    tasks as the communicator has ranks.  The table is then read in
    slices, as ``cf_mpi_stream_reopen`` reads it: rank 0 its head and
    checksum lines, a few ranks (one per physical file, more for a large
    table) a byte range each, and each rank receives its own task's
    lines; no rank reads the whole table (:attr:`StreamWriter.table_bytes`
    counts what this rank read)."""
    comm = file._comm
    if comm.serial:
        h = _s.reopen(file._h, name)
        layout, tok, nmemb = _s.writer_info(h)
        return StreamWriter(file, name, tok, _row_dtype(tok)[1], nmemb, h, layout, True)
    fh = file._h
    made: list[Any] = []

    def owner() -> tuple[bytes, int, str]:
        h, head, tlen = _s.reopen_head(fh, name)
        made.append(h)
        tasks = _s.writer_info(h)[0][0]
        if tasks != comm.size:
            raise InvalidArgumentError(f"{file.path}/{name}: a stream of {tasks} tasks, reopened by {comm.size} "
                                       "ranks (appends need one task per rank, as many as it was written with)")
        return head, tlen, _s.writer_dir(h)

    is_owner = comm.rank == 0
    try:
        head, tlen, where = _mpi.agree(comm, owner, root=0)
        h = _mpi.agree(comm, lambda: made[0] if is_owner else _s.join_head(fh, name, where, head),
                       undo=lambda x: _s.discard(x) if x is not None and not is_owner else None)
    except Exception:
        if made:
            _s.discard(made[0])
        raise
    try:
        th = _resume_in_slices(comm, h, len(head), tlen)
    except Exception:
        _s.discard(h)
        raise
    layout, tok, nmemb = _s.writer_info(h)
    w = StreamWriter(file, name, tok, _row_dtype(tok)[1], nmemb, h, layout, is_owner)
    w._tasks[comm.rank] = StreamTask(w, th, comm.rank)
    return w


_TAG_SLICE, _TAG_LINES = 0x5CF4, 0x5CF6
_slice_readers = _so.slice_readers
#: A reader of a table read in slices reads at most about this much of it.
SLICE_BYTES = _so.SLICE_BYTES


def _resume_in_slices(comm: Any, h: Any, hlen: int, tlen: int) -> Any:
    """Every rank's task state from the table read in slices (as
    ``cf_mpi_stream_reopen``): reader ``j`` of ``r`` (rank ``j * size //
    r``) reads its range of the task lines; rank 0 checks, from one small
    record per reader, that the ranges make the sealed table; each task's
    lines go to its rank, which continues after them.  Returns this rank's
    task handle."""
    mc = comm.comm
    me, size = comm.rank, comm.size
    end = tlen - 17
    body = end - hlen
    r = _slice_readers(size, _s.writer_info(h)[0][1], body)
    j = -(-me * r // size)
    j = j if j < r and j * size // r == me else -1

    def at(k: int) -> int:
        return hlen + k * body // r

    def read() -> Any:
        return _s.table_slice(h, at(j), at(j + 1), end) if j >= 0 else None

    mine = _mpi.agree(comm, read)
    if j >= 0:
        record = (at(j + 1) - at(j), mine[2], mine[0], len(mine[1]))
        if j > 0:
            mc.send(record, dest=0, tag=_TAG_SLICE)

    def check() -> None:
        _s.slices_check(h, *_so.join_slices(mc, record, r, size, _TAG_SLICE))

    _mpi.agree(comm, check, root=0)
    own: bytes | None = None
    sends = []
    if mine is not None:
        for i, lines in enumerate(mine[1]):
            if mine[0] + i == me:
                own = lines
            else:
                sends.append(mc.isend(lines, dest=mine[0] + i, tag=_TAG_LINES))
    if own is None:
        own = mc.recv(tag=_TAG_LINES)
    for q in sends:
        q.wait()

    def resume() -> Any:
        _s.task_resume(h, me, own)
        return _s.task_open(h, me)

    return _mpi.agree(comm, resume)


def _collective(file: colfile.File, name: str, make: Any) -> StreamWriter:
    """Under ``comm=``: rank 0 makes the owner's writer (``make()``), the
    others join it in its directory, and each rank opens its task."""
    comm = file._comm
    fh = file._h
    made: list[Any] = []

    def owner() -> tuple[tuple[int, int, int, int], str, int, str]:
        made.append(make())
        layout, tok, nmemb = _s.writer_info(made[0])
        return layout, tok, nmemb, _s.writer_dir(made[0])

    layout, tok, nmemb, where = _mpi.agree(comm, owner, root=0)
    is_owner = comm.rank == 0

    def join() -> tuple[Any, Any]:
        h = made[0] if is_owner else _s.join(fh, name, where, tok, nmemb, layout)
        try:
            return h, _s.task_open(h, comm.rank)
        except Exception:
            if not is_owner:
                _s.discard(h)
            raise

    try:
        h, th = _mpi.agree(comm, join, undo=lambda ht: _s.discard(ht[0]) if ht and not is_owner else None)
    except Exception:
        if made:
            _s.discard(made[0])
        raise
    w = StreamWriter(file, name, tok, _row_dtype(tok)[1], nmemb, h, layout, is_owner)
    w._tasks[comm.rank] = StreamTask(w, th, comm.rank)
    return w


class Stream:
    """A committed stream, read-only: per task (:meth:`task`) or as one
    column (the global view: task 0's rows, then task 1's, ...), with
    numpy slicing and :meth:`to_dask`."""

    def __init__(self, file: colfile.File, name: str, verify: bool = False, collective: bool = False) -> None:
        self.file = file
        self.name = name
        self._path = str(file.path)
        self._h = None
        slices = collective and not file._comm.serial  # serially there is nothing to share
        self._h = _so.open_in_slices(file._comm, file._h, name) if slices else _s.open(file._h, name)
        _s.set_verify(self._h, verify)
        self._verify = verify
        meta = _s.info(self._h)
        self.tasks: int = meta["tasks"]
        self.files: int = meta["files"]
        self.chunk: int = meta["chunk"]
        self.align: int = meta["align"]
        self.commit: int = meta["commit"]
        self.nmemb: int = meta["nmemb"]
        self.raw = meta["dtype"] == "raw"
        self.dtype = np.dtype(np.uint8) if self.raw else np.dtype(meta["dtype"])
        self.size = _s.size(self._h)

    @property
    def table_bytes(self) -> int:
        """Bytes of the committed table this process has read: the whole
        table for a reader opened alone; for one opened with
        ``collective=True`` its head and checksum lines, its slice (a
        reader rank's) and the lines of the tasks it has read since."""
        return _s.reader_table_bytes(self._check())

    # -- the array protocol of the global view ---------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return (self.size,) if self.nmemb == 1 else (self.size, self.nmemb)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.size

    def _empty(self, n: int) -> np.ndarray:
        return np.empty((n,) if self.nmemb == 1 else (n, self.nmemb), self.dtype)

    def read(self, start: int = 0, count: int | None = None) -> np.ndarray:
        """Rows ``start .. start+count-1`` of the global view."""
        count = self.size - start if count is None else count
        out = self._empty(count)
        _s.read(self._check(), start, count, out)
        return out

    def __getitem__(self, key: Any) -> np.ndarray:
        rest: tuple[Any, ...] = ()
        if isinstance(key, tuple):
            key, rest = (key[0], key[1:]) if key else (slice(None), ())
        if isinstance(key, (int, np.integer)):
            i = int(key) + (self.size if key < 0 else 0)
            if not 0 <= i < self.size:
                raise IndexError(f"{self.name}: row {key} out of range for {self.size} rows")
            out = self.read(i, 1)[0]
        elif isinstance(key, slice):
            lo, hi, step = key.indices(self.size)
            if step > 0:
                out = self.read(lo, max(0, hi - lo))[::step] if hi > lo else self._empty(0)
            else:
                out = self.read(hi + 1, lo - hi)[::-1][::-step] if lo > hi else self._empty(0)
        else:
            idx = np.asarray(key)
            if idx.dtype == bool:
                idx = np.flatnonzero(idx)
            idx = np.where(idx < 0, idx + self.size, idx).astype(np.int64)
            if idx.size and (idx.min() < 0 or idx.max() >= self.size):
                raise IndexError(f"{self.name}: an index is out of range for {self.size} rows")
            out = self._empty(idx.size)
            for k, i in enumerate(idx):
                out[k] = self.read(int(i), 1)[0]
        return out[(slice(None),) + rest] if rest else out

    def to_dask(self, chunks: Any = "auto") -> dask.array.Array:
        """The global view as a dask array (each block read by its task)."""
        import dask.array as da  # noqa: PLC0415 -- dask is optional

        return da.from_array(self, chunks=chunks, asarray=False, fancy=False, lock=False)

    def __reduce__(self) -> Any:
        return (_reopen, (self._path, self.name, self._verify))

    # -- per task -----------------------------------------------------------
    def task(self, index: int) -> np.ndarray:
        """Task ``index``'s committed rows, in the order it appended them."""
        n = _s.task_size(self._check(), index)
        if n < 0:
            raise IndexError(f"{self.name}: no task {index} (of {self.tasks})")
        out = self._empty(n)
        _s.read_task(self._h, index, 0, n, out)
        return out

    def task_size(self, index: int) -> int:
        """Committed rows of task ``index``."""
        return _s.task_size(self._check(), index)

    def task_start(self, index: int) -> int:
        """Task ``index``'s first row in the global view."""
        return _s.task_start(self._check(), index)

    def task_chunks(self, index: int) -> list[dict[str, int]]:
        """Where task ``index``'s chunks are: file, offset, bytes, crc32c."""
        n = self.task_size(index) * self.nmemb * self.dtype.itemsize
        out = []
        for b in range(-(-n // self.chunk)):
            f, off, used, crc = _s.chunk(self._h, index, b)
            out.append({"file": f, "offset": off, "bytes": used, "crc32c": crc})
        return out

    # -- statistics ---------------------------------------------------------
    def chunk_stats(self, component: int | None = None) -> np.ndarray:
        """The per-chunk statistics of the global view, computed as each
        task appended: one record per chunk of each task, in row order
        (task 0's chunks, then task 1's, ...), with the fields of
        ``Column.chunk_stats`` (``blob`` is the task; ``first_row`` and
        ``rows`` the rows that start in the chunk, counted in the global
        view; a chunk that a long row only passes through has none).
        ``valid`` is False for a stream that records no statistics (raw,
        or written before streams kept them).  By default all components:
        shape ``(nchunks, nmemb)`` for ``nmemb > 1``."""
        h = self._check()
        comps = list(range(self.nmemb)) if component is None else [int(component) % self.nmemb]
        if component is not None and not -self.nmemb <= int(component) < self.nmemb:
            raise IndexError(f"{self.name}: component {component} is out of range for {self.nmemb}")
        rowbytes = self.nmemb * self.dtype.itemsize
        recs = []
        for t in range(self.tasks):
            for b in range(-(-self.task_size(t) * rowbytes // self.chunk)):
                recs.append([_s.chunk_stats(h, t, b, j) for j in comps])
        out = np.zeros((len(recs), len(comps)), CHUNK_STATS_DTYPE)
        for r, row in enumerate(recs):
            for i, rec in enumerate(row):
                out[r, i] = rec
        return out[:, 0] if component is not None or self.nmemb == 1 else out

    def stats(self) -> dict[str, Any]:
        """The whole global view's statistics per component, folded from
        the chunks' (no data read): ``count``, ``nan_count``, ``min``,
        ``max`` (doubles rounded outward, NaN when there is no ordered
        value) and ``sum`` (each chunk's exact sum, correctly rounded,
        added with ``math.fsum``) as arrays of ``nmemb``.  ValueError
        for a stream that records no statistics."""
        cs = self.chunk_stats()
        cs = cs.reshape(len(cs), self.nmemb)
        if len(cs) and not cs["valid"].all():
            raise ValueError(f"{self.name}: the stream records no statistics (raw, or written before "
                             "streams kept them)")
        with np.errstate(invalid="ignore"):
            mn = np.fmin.reduce(cs["min"], axis=0, initial=np.nan) if len(cs) else np.full(self.nmemb, np.nan)
            mx = np.fmax.reduce(cs["max"], axis=0, initial=np.nan) if len(cs) else np.full(self.nmemb, np.nan)
        sums = np.array([math.fsum(cs["sum"][:, j]) for j in range(self.nmemb)])
        return {"count": cs["count"].sum(axis=0), "nan_count": cs["nan_count"].sum(axis=0),
                "min": mn, "max": mx, "sum": sums}

    # -- queries (colfile.stream_query) ---------------------------------------
    def _column(self) -> Any:
        self._check()
        if getattr(self, "_as_column", None) is None:
            self._as_column = _sq.StreamColumn(self)
        return self._as_column

    def field(self, j: int | None = None) -> Any:
        """The global view's values (component ``j`` of a vector stream)
        as a lazy :class:`~colfile.query.Field`, for predicates and
        :func:`colfile.histogram`."""
        return self._column().field(j)

    def _query_resolver(self) -> Any:
        return self._column()._query_resolver()

    def where(self, expr: Any, *, piece_bytes: int | None = None) -> Any:
        """The rows of the global view where ``expr`` holds, as
        :func:`colfile.where` gives them for a column (a
        :class:`~colfile.query.Selection`; the stream is named by its name
        or last path component: ``s.where("x[0] > 3")``), skipping chunks
        by the statistics each task recorded.  No communication."""
        return _sq.where(self, expr, piece_bytes=piece_bytes)

    def histogram(self, component: int | None = None, bins: Any = 10, range: Any = None,  # noqa: A002
                  where: Any = None, weights: Any = None, density: bool = False, *,
                  return_report: bool = False, piece_bytes: int | None = None) -> Any:
        """:func:`colfile.histogram` of the global view (of component
        ``component`` of a vector stream) over the rows where ``where``
        holds, skipping chunks by their statistics."""
        return _sq.histogram(self, component, bins, range, where, weights, density,
                         return_report=return_report, piece_bytes=piece_bytes)

    def _check(self) -> Any:
        if self._h is None:
            raise ValueError(f"stream {self.name!r} is closed")
        return self._h

    def close(self) -> None:
        self._as_column = None
        if self._h is not None:
            _s.reader_close(self._h)
            self._h = None

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return (f"<colfile.stream.Stream {self.name!r} {self.dtype} x{self.nmemb}, {self.size} rows "
                f"from {self.tasks} tasks in {self.files} files>")


def _reopen(path: str, name: str, verify: bool) -> Stream:
    return Stream(File(path, "r"), name, verify)


def open(file: colfile.File, name: str, *, verify: bool = False, collective: bool = False) -> Stream:  # noqa: A001
    """The committed stream ``name`` of ``file``.  ``verify`` checks each
    chunk read whole against its CRC32C.

    By default any process opens it alone, with no communication, and
    reads its whole table.  With ``collective=True`` on a File opened with
    ``comm=``, every rank of the communicator opens it together and no
    rank reads the whole table (as ``cf_mpi_stream_open``): a few ranks
    read a slice of it each, every rank learns each task's row count, and
    a rank reads a task's chunk records only when it reads that task
    (:attr:`Stream.table_bytes` counts what it read).  A damaged table is
    refused on every rank alike."""
    return Stream(file, name, verify, collective)


def list_streams(file: colfile.File) -> list[str]:
    """The streams of ``file``, sorted (they are not among its columns)."""
    return _s.list_streams(file._h)

