"""Parallel I/O over MPI: what ``colfile.File(path, mode, comm=comm)`` does.

colfile's MPI support is this module: thin glue between a communicator and
the C core.  Every decision -- how many blobs a column gets, which rows go to
which blob, which ranks write in which turn, which ranks aggregate, how the
checksums of several writers merge, what a metadata snapshot holds -- is made
by the MPI-free core (``cf_plan_*``, ``cf_column_pending_export``/``merge``,
``cf_column_export_meta``/``cf_column_open_meta``); this module only moves the
numbers and bytes those functions consume and produce between ranks.  The C
layer ``libcolfile-mpi`` does the same, and the two write identical bytes
(see ``docs/parallel.md``).

Nothing is compiled against MPI: any MPI that mpi4py runs on works, and
mpi4py is not even imported here -- the communicator passed as ``comm=``
brings it.  Any object with mpi4py's ``rank``, ``size``, ``barrier``,
``bcast``, ``gather`` and ``allgather`` serves (aggregated writes also need
``Split`` and ``Gatherv``; without them writes are throttled instead).

The same classes serve serial and parallel use (as in h5py)::

    from mpi4py import MPI
    import colfile

    comm = MPI.COMM_WORLD
    with colfile.File("snapshot", "w", comm=comm) as f:
        # each rank passes ITS rows; the column holds all of them, rank order
        pos = f.create("1/Position", data=my_positions)          # collective
        f.create("1/ID", "i8", size=ntotal)                      # collective
        f["1/ID"].write_all(my_ids)                              # collective
        f.attrs["BoxSize"] = 1000.0                              # every rank
    with colfile.File("snapshot", comm=comm) as f:
        col = f["1/Position"]                                    # independent
        mine = col.read_all()                   # this rank's even share
        also = col[col.rank_slice()]            # the same, independently

What is collective
------------------
As in h5py's parallel mode, only what changes the File is collective.  Under
``comm=``, every rank must make the same collective calls, in the same
order:

* ``File(...)``, ``File.close``/``flush``/``cleanup``, ``create``,
  ``del file[name]``, ``create_group``/``require_group``;
* changing attributes (setting, deleting: every rank calls; rank 0's handle
  writes the files, the other ranks' handles -- *replicas* -- change only
  their memory);
* ``Column.write_all``, ``read_all``, ``append``; ``flush`` and ``close``
  of a writable column every rank holds from one collective call
  (``create``, or an open with ``collective_metadata=True``).

Everything that reads is independent -- any rank, any subset of ranks, no
communication: listing (``columns``, ``keys``, ``len``, ``iter``), ``in``,
``get``, ``file[name]`` and ``file["grp/"]``, reading attributes of the
File, of groups and of columns, :meth:`~colfile.File.column_attrs`, a
column's ``size``, ``dtype``, ``shape``, ``nfile``, ``blob_rows``...,
reading rows (``col[sel]``, ``col.read``), and closing a read-only column
or one this rank opened alone (``file[name]``).  Writing rows
independently (``col[sel] = v``, ``col.write``) works too; those writes are
committed by the collective close (or flush) of the column, or of the File
for a column a rank opened alone, which merges every rank's checksum state
into rank 0's header.

An independent read reads the metadata files itself, on the calling rank
(rank 0's handle, or a read-only handle of the File on the other ranks,
from which a rank opening a column of a writable File builds a replica as
if rank 0 had sent it).  It sees every collective change made before it:
what the File created and has not committed yet (columns, groups,
attributes) is held by every rank, and what it committed is on disk.  A
File keeps every column any rank opened until it closes; its collective
close commits, on every rank, the columns that any rank opened.

``File(..., collective_metadata=True)`` makes the metadata reads
collective instead (h5py's ``all_coll_metadata_ops``): rank 0 alone reads
metadata files and lists directories, and broadcasts a snapshot from which
the other ranks build their handles, so that the metadata load does not
grow with the number of ranks (for very many ranks).  Every rank must then
list, open columns and read attributes together.

A collective made by some ranks only
------------------------------------
Every collective operation starts with an agreement step: each rank sends
the id of the operation it is in (a non-blocking ``Iallgather`` on the
File's own duplicate of ``comm``) and polls it.  Ranks in different
collectives all raise :class:`~colfile.CollectiveError` at once, naming
what each rank called.  A rank whose collective the others do not join
within ``mpi_timeout`` seconds (``File(mpi_timeout=)``, else the
environment's ``COLFILE_MPI_TIMEOUT``, else 300; 0 waits forever) raises
:class:`~colfile.CollectiveError` naming the operation.  After either,
the File's communicator is out of step: every later collective of the
File raises at once, and :meth:`~colfile.File.close` releases the rank's
handles without committing anything more (and raises).  Nothing hangs and
no MPI message is mismatched ("Message truncated").

Errors
------
Every collective ends with an agreement (:func:`agree`): when any rank
fails, every rank raises the exception of the lowest failing rank -- the
same class (e.g. :class:`~colfile.ColumnNotFoundError`) with the message
``"rank N: <that rank's message>"`` -- so a failure on one rank never leaves
the others waiting.  ``exc.rank`` is N and ``exc.failed_ranks`` lists every
rank that failed.
"""

from __future__ import annotations

import builtins
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._dtypes import as_array, token
from ._ints import INT64_MAX, NFILE_MAX, whole
from ._core import column as _c
from ._core import dtype as _cdtype
from ._core import file as _cf
from ._core import owners as _owners_core, plan as _plan
from . import _blob_owners, _owners
from ._constants import (
    CF_OPEN_DIGEST_HELPER,
    CF_OPEN_DIGEST_INLINE,
    CF_OPEN_NOCHECK,
    CF_OPEN_NODURABLE,
    CF_OPEN_NOLOCK,
    CF_OPEN_NOLOCKING,
    CF_OPEN_TORN_OK,
    CF_OPEN_VERIFY,
    CF_OPEN_WRITE,
    CF_PLAN_CONCURRENCY,
    CF_PLAN_GROUP_BYTES,
)
from ._core.constants import IO_MODES as _IO_MODES
from ._comm import (
    DEFAULT_TIMEOUT,
    OPERATIONS,
    SELF,
    Comm,
    as_comm,
    file_comm,
    resolve_timeout,
)
from .errors import (
    CF_EARG,
    Error,
    InvalidArgumentError,
    RangeError,
    StorageError,
)

__all__ = [
    "Comm",
    "SELF",
    "as_comm",
    "agree",
    "IO_MODES",
    "PLAN_CONCURRENCY",
    "plan_share",
    "plan_nfile",
    "plan_blobs_by_rank",
    "plan_turn",
    "plan_groups",
    "plan_mode",
    "open_file",
    "replicate",
    "commit",
    "write_all",
    "read_all",
    "rank_slice",
    "find_overlap",
]

# the communicator is colfile.mpi's (its documentation shows it here)
for _public in (Comm, as_comm, file_comm, resolve_timeout):
    _public.__module__ = __name__
del _public

#: ``mode=`` of :func:`write_all` and the core's ``enum cf_io_mode``.
IO_MODES: dict[str, int] = dict(_IO_MODES)
_MODE_NAMES = {v: k for k, v in IO_MODES.items()}

#: How many ranks write at once in throttled mode unless ``concurrency=``
#: says otherwise (the core's ``CF_PLAN_CONCURRENCY``).
PLAN_CONCURRENCY: int = CF_PLAN_CONCURRENCY


#: Tuning of aggregated writes (0: the core's ``CF_PLAN_GROUP_BYTES``,
#: 64 MiB): the data per aggregation group (``cf_plan_groups``) and the most
#: a group leader gathers and writes at once.  Lowering them (tests do)
#: makes more groups and more pieces; the bytes written do not change.
GROUP_BYTES = 0
PIECE_BYTES = 0


# ---------------------------------------------------------------------------
# agreement on errors

# (rank, module, class qualname, code, message, already agreed, the failing
# ranks of an agreed error)
_Status = tuple[int, str, str, int, str, bool, list[int]]


def _message(exc: BaseException) -> str:
    if isinstance(exc, Error):
        return str(exc)
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc) or type(exc).__name__


def _status(exc: BaseException, rank: int) -> _Status:
    cls = type(exc)
    code = int(getattr(exc, "code", 0) or 0) if isinstance(exc, Error) else 0
    agreed = bool(getattr(exc, "_colfile_agreed", False))
    failed = list(getattr(exc, "failed_ranks", [rank])) if agreed else [rank]
    return (rank, cls.__module__, cls.__qualname__, code, _message(exc), agreed, failed)


def _exception_class(module: str, name: str) -> type[BaseException] | None:
    if module == "builtins":
        obj: Any = builtins
    else:
        obj = sys.modules.get(module)
        if obj is None and module.split(".")[0] == "colfile":
            try:
                obj = importlib.import_module(module)
            except ImportError:
                obj = None
    for part in name.split("."):
        obj = getattr(obj, part, None)
    if isinstance(obj, type) and issubclass(obj, Exception):
        return obj
    return None


def _rebuild(bad: list[_Status]) -> BaseException:
    rank, module, name, code, message, agreed, failed = bad[0]
    if agreed:  # raised by an inner agreement, on every rank alike: keep it
        text, rank, failed_ranks = message, failed[0], failed
    else:
        text, failed_ranks = f"rank {rank}: {message}", sorted({b[0] for b in bad})
    cls = _exception_class(module, name)
    exc: BaseException | None = None
    if cls is not None:
        try:
            exc = cls(text, code) if issubclass(cls, Error) else cls(text)
        except Exception:
            exc = None
    if exc is None:
        exc = Error(f"{name}: {text}", code)
    exc._colfile_agreed = True  # type: ignore[attr-defined]
    exc.rank = rank  # type: ignore[attr-defined]
    exc.failed_ranks = failed_ranks  # type: ignore[attr-defined]
    return exc


def agree(comm: Comm, fn: Callable[[], Any] | None = None, *, root: int | None = None,
          collect: bool = False, failure: BaseException | None = None,
          undo: Callable[[Any], None] | None = None) -> Any:
    """Run ``fn()`` and make every rank of ``comm`` agree on the outcome.

    This is the one agreement step every collective of colfile ends with.

    Parameters
    ----------
    comm : Comm
    fn : callable, optional
        The local work.  With ``root``, only rank ``root`` runs it.
    root : int, optional
        Only this rank runs ``fn``; its result (which must pickle) is
        broadcast and returned on every rank.
    collect : bool
        Return the list of every rank's result (rank order) instead of the
        local one.
    failure : Exception, optional
        An error this rank already met (``fn`` is then not run).
    undo : callable, optional
        Called with the local result on ranks that succeeded when another
        rank failed (to release what they made).

    Raises
    ------
    Exception
        When any rank failed, on every rank: the lowest failing rank's
        exception class, with the message ``"rank N: <message>"``.  With
        the serial stand-in :data:`SELF`, the original exception.

    Examples
    --------
    >>> agree(SELF, lambda: 42), agree(SELF, lambda: 7, collect=True)
    (42, [7])
    """
    result: Any = None
    if failure is None and fn is not None and (root is None or comm.rank == root):
        if comm.serial:
            return [fn()] if collect else fn()
        try:
            result = fn()
        except Exception as exc:
            failure = exc
    if comm.serial:
        if failure is not None:
            raise failure
        return [result] if collect else result
    if root is not None:
        msg = None
        if comm.rank == root:
            msg = (_status(failure, root), None) if failure is not None else (None, result)
        st, value = comm.bcast(msg, root=root)
        if st is not None:
            raise _rebuild([st]) from failure
        return result if comm.rank == root else value
    mine = _status(failure, comm.rank) if failure is not None else None
    items = comm.allgather((mine, result if collect else None))
    bad = [st for st, _ in items if st is not None]
    if bad:
        if failure is None and undo is not None:
            try:
                undo(result)
            except Exception:
                pass
        raise _rebuild(bad) from failure
    return [v for _, v in items] if collect else result


# ---------------------------------------------------------------------------
# the planning functions of the core


def plan_share(total: int, parts: int, i: int) -> tuple[int, int]:
    """``(first, count)`` of share ``i`` of ``total`` items split evenly
    over ``parts`` (``cf_plan_share``, bigfile's split).

    >>> [plan_share(10, 3, i) for i in range(3)]
    [(0, 3), (3, 3), (6, 4)]
    """
    return _plan.share(total, parts, i)


def plan_nfile(total_bytes: int, nranks: int, blob_bytes: int = 0) -> int:
    """Blobs for a column of ``total_bytes`` written by ``nranks`` ranks
    (``cf_plan_nfile``): one per 256 MiB, at most one per rank.

    >>> plan_nfile(3 << 30, 2), plan_nfile(3 << 30, 64), plan_nfile(100, 64)
    (2, 12, 1)
    """
    return _plan.nfile(total_bytes, nranks, blob_bytes)


def _int64s(values: Sequence[int]) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64).reshape(-1))


def plan_blobs_by_rank(rank_rows: Sequence[int], nfile: int) -> list[int]:
    """Rows per blob with every blob boundary on a rank boundary
    (``cf_plan_blobs_by_rank``).

    >>> plan_blobs_by_rank([0, 5, 5, 10], 2)
    [10, 10]
    """
    return _plan.blobs_by_rank(_int64s(rank_rows), nfile)


def plan_turn(rank: int, nranks: int, concurrency: int) -> tuple[int, int]:
    """``(turn, nturns)`` of gang throttling (``cf_plan_turn``): 8 ranks,
    4 at a time, take 2 turns; rank 5 goes in turn 1.

    >>> plan_turn(5, 8, 4)
    (1, 2)
    """
    return _plan.turn(rank, nranks, concurrency)


def plan_groups(rank_bytes: Sequence[int], group_bytes: int = 0) -> list[int]:
    """The aggregation leader of each rank (``cf_plan_groups``).

    >>> plan_groups([30 << 20, 30 << 20, 30 << 20])  # 64 MiB groups
    [0, 0, 2]
    """
    return _plan.groups(_int64s(rank_bytes), group_bytes)


def plan_mode(total_bytes: int, nranks: int, small_bytes: int = 0) -> str:
    """``'throttled'`` or ``'aggregated'``, as automatic mode decides
    (``cf_plan_mode``).

    >>> plan_mode(1 << 20, 4), plan_mode(64 << 20, 4)
    ('aggregated', 'throttled')
    """
    return _MODE_NAMES[_plan.mode(total_bytes, nranks, small_bytes)]


# ---------------------------------------------------------------------------
# Files and column handles


def open_file(comm: Comm, path: str | bytes | os.PathLike[str], flags: int) -> Any:
    """Open a File on every rank: rank 0 with ``flags`` (creating,
    truncating...), then the others with ``CF_OPEN_NOCHECK``, touching
    nothing.  Returns this rank's File handle."""
    def opener(fl: int) -> Callable[[], Any]:
        return lambda: _cf.open(path, fl)

    if comm.size == 1:
        return _on_node(comm, flags, agree(comm, opener(flags)))
    box: list[Any] = []

    def root_open() -> None:
        box.append(opener(flags)())

    agree(comm, root_open, root=0)
    if comm.rank == 0:
        return _on_node(comm, flags, agree(comm, lambda: box[0], undo=_cf.close))
    # The other ranks keep the behaviour bits (durability, torn, verify,
    # where writes digest).
    keep = (CF_OPEN_WRITE | CF_OPEN_NODURABLE | CF_OPEN_TORN_OK | CF_OPEN_VERIFY | CF_OPEN_NOLOCK
            | CF_OPEN_NOLOCKING | CF_OPEN_DIGEST_INLINE | CF_OPEN_DIGEST_HELPER)
    return _on_node(comm, flags, agree(comm, opener((flags & keep) | CF_OPEN_NOCHECK), undo=_cf.close))


def _on_node(comm: Comm, flags: int, fh: Any) -> Any:
    """Tell File handle ``fh`` how many ranks share this node
    (``MPI_COMM_TYPE_SHARED``) and how many CPUs they may run on together
    (the union of their affinity masks), as cf_mpi_file_open does: the
    digest placement depends on them.  Collective; returns ``fh``."""
    split = getattr(comm.comm, "Split_type", None)
    if split is None or flags & (CF_OPEN_DIGEST_INLINE | CF_OPEN_DIGEST_HELPER):
        return fh  # a stand-in without MPI (alone), or a placement given
    from mpi4py import MPI  # noqa: PLC0415 -- only reached under mpi4py
    node = split(MPI.COMM_TYPE_SHARED)
    try:
        mine = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        masks = node.allgather(mine)
    finally:
        node.Free()
    known = all(m is not None for m in masks)
    _cf.set_node(fh, len(masks), len(set().union(*masks)) if known else 0)
    return fh


def replicate(comm: Comm, fh: Any, make: Callable[[], Any]) -> Any:
    """A handle on one column on every rank.

    Rank 0 runs ``make()`` (which opens or creates the column and returns a
    ``cf_column *``, or ``None`` for "nothing there"), exports its metadata
    and broadcasts the bytes; every other rank builds a replica from them
    with ``cf_column_open_meta`` on its File handle ``fh``.  Returns this
    rank's column handle (or ``None`` everywhere).
    """
    if comm.size == 1:
        return agree(comm, make)
    made: list[Any] = []

    def give_up(h: Any) -> None:
        # discard first: a column make() has just created (staged, never
        # committed) then vanishes at close instead of being published
        # without its rows
        _c.discard(h)
        _c.release(h)

    def root_side() -> bytes | None:
        h = make()
        if h is None:
            return None
        made.append(h)
        try:
            return _c.export_meta(h)
        except BaseException:
            made.clear()
            give_up(h)
            raise

    meta = agree(comm, root_side, root=0)
    if meta is None:
        return None
    if comm.rank == 0:
        return agree(comm, lambda: made[0], undo=give_up)
    return agree(comm, lambda: _c.open_meta(fh, meta), undo=give_up)


def commit(comm: Comm, col: Any, close: bool = False) -> None:
    """Collective flush (or close) of a column open on every rank.

    Every rank but 0 exports its pending write state
    (``cf_column_pending_export``); rank 0 gathers and merges it
    (``cf_column_pending_merge``), then commits the header and extension
    file once; a column with more chunk records than the statistics text holds
    closes by chunk owners (:mod:`colfile._owners`).  ``col``: a Column.
    """
    failure: BaseException | None = None
    state: bytes | None = b""
    merging = (comm.size > 1 and col._writable and col._kind == 0)
    # (every rank decides alike: the layout and chunk size are rank 0's)
    if merging and _owners.usable(comm) and col._call(_owners_core.wanted):
        try:
            _owners.close(comm, col, agree)
        except Exception as exc:
            failure = exc
        merging = False
    if merging and comm.rank != 0:
        try:
            state = col._pending_export()
        except Exception as exc:
            failure, state = exc, None
    states = comm.gather(state, root=0) if merging else None
    try:
        if comm.rank == 0 and states is not None and failure is None:
            if any(st is None for st in states[1:]):
                failure = StorageError("a rank failed to hand over its writes (see its error); "
                                       "nothing committed")
            for st in states[1:]:
                if st and failure is None:
                    col._pending_merge(st)
    except Exception as exc:
        failure = exc
    if failure is not None and comm.rank == 0:
        col._discard()  # a failed rank's rows must not be committed
        col._new_blobs_from = None  # nor warned about as if they were
    try:
        if close:
            col._close_local()
        elif failure is None:
            col._flush_local()
    except Exception as exc:
        failure = failure or exc
    agree(comm, failure=failure)


# ---------------------------------------------------------------------------
# collective data movement


def _convert_rows(arr: np.ndarray, i0: int, i1: int, dst: np.ndarray, to: bytes,
                  itemsize: int, nmemb: int) -> None:
    """Rows ``i0:i1`` of ``arr`` converted to dtype ``to`` into the
    contiguous byte buffer ``dst``, by the core's converter."""
    count = i1 - i0
    if count <= 0:
        return
    part = arr[i0:i1]
    src = token(part.dtype)
    convert = _cdtype.convert
    rowbytes = itemsize * nmemb
    if part.ndim == 1:
        convert(dst, 0, itemsize, to, part, 0, part.strides[0], src, count)
        return
    rs, es = part.strides
    if rs == es * nmemb:
        convert(dst, 0, itemsize, to, part, 0, es, src, count * nmemb)
        return
    for j in range(nmemb):
        convert(dst, j * itemsize, rowbytes, to, part, j * es, rs, src, count)


def _check_same(values: list[Any], what: str) -> Any:
    first = values[0]
    for r, v in enumerate(values):
        if v != first:
            raise InvalidArgumentError(
                f"rank {r}: {what} differs between ranks: {v!r} on rank {r}, "
                f"{first!r} on rank 0")
    return first


def _can_convert(dtype: np.dtype, col: Any) -> None:
    """Raise the core's error if rows of ``dtype`` cannot be converted to
    the column's dtype (checked before aggregation sends any)."""
    try:
        _cdtype.check_convertible(token(col.dtype), token(dtype))
    except Error as exc:
        raise type(exc)(f"{col.path}: {exc}", exc.code) from None


def find_overlap(starts: Sequence[int], counts: Sequence[int]) -> tuple[int, int] | None:
    """The first two ranks whose rows overlap, ``(lo, hi)`` with lo < hi,
    or ``None``: sorted by start (then rank), the first non-empty range
    that starts before the furthest end seen so far overlaps the range of
    that end.  The C layer finds the same pair.

    >>> find_overlap([0, 0], [5, 5]), find_overlap([5, 0, 3], [5, 2, 0])
    ((0, 1), None)
    """
    spans = sorted((s, r) for r, (s, n) in enumerate(zip(starts, counts)) if n)
    end, holder = None, -1
    for s, r in spans:
        if end is not None and s < end:
            return (min(holder, r), max(holder, r))
        if end is None or s + counts[r] > end:
            end, holder = s + counts[r], r
    return None


def _refuse_overlap(col: Any, starts: Sequence[int], counts: Sequence[int]) -> None:
    """Raise, on every rank alike, if two ranks' rows overlap (a wrong
    ``start``, usually): their bytes would mix and the checksums match
    neither.  The message is the C layer's (cf_mpi_column_write)."""
    pair = find_overlap(starts, counts)
    if pair is None:
        return
    lo, hi = pair
    msg = (f"{col.path}: rows [{starts[lo]}, {starts[lo] + counts[lo]}) here overlap rows "
           f"[{starts[hi]}, {starts[hi] + counts[hi]}) of rank {hi}: each row may be written "
           f"by one rank only (is start right on every rank?)")
    raise _rebuild([(lo, InvalidArgumentError.__module__, InvalidArgumentError.__qualname__,
                     CF_EARG, msg, False, [lo])])


def write_all(comm: Comm, col: Any, data: Any, start: int | None = None, *,
              mode: str = "auto", concurrency: int | None = None) -> str:
    """Collective write of every rank's rows; see :meth:`colfile.Column.write_all`.

    Returns the mode used (``'throttled'``, ``'aggregated'`` or
    ``'blob_owners'``).
    """
    comm.enter("Column.write_all()", col._path)
    # every rank is in it: from here the column is the ranks' together, and
    # its close commits these rows collectively, as a column made by
    # create() (opened with file[name], it would otherwise be closed alone
    # and its rows committed only by the File's next flush or close)
    col._independent = False
    size = col.size
    nmemb = max(col.nmemb, 1)
    itemsize = col.itemsize
    rowbytes = itemsize * nmemb
    arr_box: list[np.ndarray] = []

    def prep() -> tuple[int, int | None, str, int | None]:
        if mode not in IO_MODES:
            raise ValueError(f"invalid mode {mode!r}: use one of "
                             f"{', '.join(repr(m) for m in IO_MODES)}")
        conc = None if concurrency is None else whole(concurrency, "concurrency", low=1)
        first = None if start is None else whole(start, "start", low=-INT64_MAX - 1)
        col._handle()
        if not col.writable:
            col._call(_c.refuse_write)  # the core's error
        arr = as_array(data, col.dtype)
        if arr.ndim == 0:
            raise ValueError("write_all() needs an array of rows, not a scalar")
        arr = col._rows_of(arr, len(arr))
        if mode != "throttled" and comm.size > 1 and comm.can_aggregate:
            _can_convert(arr.dtype, col)  # aggregation converts before sending
        arr_box.append(arr)
        return (len(arr), first, mode, conc)

    infos = agree(comm, prep, collect=True)
    arr = arr_box[0]
    counts = [i[0] for i in infos]
    given = [i[1] for i in infos]
    _check_same([i[2] for i in infos], "write_all mode")
    conc = _check_same([i[3] for i in infos], "write_all concurrency")
    if all(g is None for g in given):
        starts = [int(x) for x in np.concatenate([[0], np.cumsum(counts)[:-1]])]
    elif any(g is None for g in given):
        r = given.index(None)
        raise InvalidArgumentError(f"write_all: start is given on some ranks but not on "
                                   f"rank {r}: give it on every rank or on none")
    else:
        starts = [int(g) for g in given]  # type: ignore[arg-type]
    for r, (s, n) in enumerate(zip(starts, counts)):
        if s < 0 or s + n > size:
            raise RangeError(f"rank {r}: {col._what()}: rows [{s}, {s + n}) are outside "
                             f"[0, {size})")
    _refuse_overlap(col, starts, counts)
    rank_bytes = [n * rowbytes for n in counts]
    chosen = IO_MODES[mode]
    if chosen == 0:
        chosen = _plan.mode(sum(rank_bytes), comm.size, 0)
    if chosen == 2 and (comm.size == 1 or not comm.can_aggregate):
        chosen = 1
    if chosen == 3 and (comm.size == 1 or not comm.can_send):
        chosen = 1
    me = comm.rank
    n, s = counts[me], starts[me]
    failure: BaseException | None = None
    if chosen == 1:
        c = PLAN_CONCURRENCY if conc is None else conc
        turn, nturns = plan_turn(me, comm.size, c)
        for t in range(nturns):
            if t == turn and n:
                try:
                    col._write_contig(s, n, arr)
                except Exception as exc:
                    failure = exc
            if nturns > 1:
                comm.barrier()
        agree(comm, failure=failure)
        return "throttled"

    to = token(col.dtype)
    # Rows already in the column's dtype, contiguous, are sent as they are.
    direct = (arr.reshape(-1).view(np.uint8)
              if token(arr.dtype) == to and arr.flags.c_contiguous else None)
    if chosen == 3:
        piece_rows = max(1, (GROUP_BYTES or CF_PLAN_GROUP_BYTES) // max(rowbytes, 1))

        def convert(a: np.ndarray, i0: int, i1: int, out: np.ndarray) -> None:
            _convert_rows(a, i0, i1, out, to, itemsize, nmemb)

        failure = _blob_owners.write(comm, col, arr, starts, counts,
                                     PLAN_CONCURRENCY if conc is None else conc,
                                     piece_rows, direct, convert)
        agree(comm, failure=failure)
        return "blob_owners"

    # aggregated: convert (core converter), gather to group leaders in pieces
    leaders = plan_groups(rank_bytes, GROUP_BYTES)
    lead = leaders[me]
    members = [r for r in range(comm.size) if leaders[r] == lead]
    offsets = [0]
    for r in members:
        offsets.append(offsets[-1] + counts[r])
    total = offsets[-1]
    mine_at = members.index(me)
    lo, hi = offsets[mine_at], offsets[mine_at + 1]
    piece = max(1, (PIECE_BYTES or CF_PLAN_GROUP_BYTES) // max(rowbytes, 1))
    # One group (the usual case of small writes) gathers on comm itself: a
    # split is a collective of its own, costing more than a small write.
    single = len(set(leaders)) == 1
    sub = comm if single else comm.split(lead, me)
    try:
        for p0 in range(0, total, piece):
            p1 = min(total, p0 + piece)
            a, b = max(lo, p0), min(hi, p1)
            k = max(0, b - a)
            if direct is not None:
                send = direct[(a - lo) * rowbytes:(a - lo + k) * rowbytes]
            else:
                send = np.zeros(k * rowbytes, np.uint8)
                if k and failure is None:
                    try:
                        _convert_rows(arr, a - lo, b - lo, send, to, itemsize, nmemb)
                    except Exception as exc:
                        failure = exc
            sizes = [max(0, min(offsets[i + 1], p1) - max(offsets[i], p0)) * rowbytes
                     for i in range(len(members))]
            got = sub.gatherv(send, sizes, root=0)
            if me != lead or failure is not None:
                continue
            assert got is not None
            # write runs of members whose rows are neighbours in the file
            at = 0
            run_start, run_rows, run_at = -1, 0, 0
            runs: list[tuple[int, int, int]] = []
            for i, r in enumerate(members):
                rows_i = sizes[i] // rowbytes if rowbytes else 0
                if not rows_i:
                    continue
                first = starts[r] + max(offsets[i], p0) - offsets[i]
                if run_rows and run_start + run_rows == first:
                    run_rows += rows_i
                else:
                    if run_rows:
                        runs.append((run_start, run_rows, run_at))
                    run_start, run_rows, run_at = first, rows_i, at
                at += rows_i * rowbytes
            if run_rows:
                runs.append((run_start, run_rows, run_at))
            try:
                for first, rows_n, off in runs:
                    col._write_bytes(first, rows_n, got[off:off + rows_n * rowbytes])
            except Exception as exc:
                failure = exc
    finally:
        if not single:
            sub.free()
    agree(comm, failure=failure)
    return "aggregated"


def rank_slice(comm: Comm, size: int) -> slice:
    """This rank's even share of ``size`` rows (``cf_plan_share``)."""
    first, n = plan_share(size, comm.size, comm.rank)
    return slice(first, first + n)


def read_all(comm: Comm, col: Any, start: int | None = None, count: int | None = None, *,
             dtype: Any = None, concurrency: int | None = None) -> np.ndarray:
    """Collective read; see :meth:`colfile.Column.read_all`."""
    comm.enter("Column.read_all()", col._path)
    size = col.size

    def prep() -> tuple[int | None, int | None]:
        if concurrency is not None:
            whole(concurrency, "concurrency", low=1)
        n = None if count is None else whole(count, "count")
        first = None if start is None else whole(start, "start", low=-INT64_MAX - 1)
        col._handle()
        return (first, n)

    infos = agree(comm, prep, collect=True)
    me = comm.rank
    s, n = infos[me]
    if n is not None and s is None:
        # like write_all: each rank's rows follow the previous rank's
        if any(i[0] is not None or i[1] is None for i in infos):
            raise InvalidArgumentError("read_all: give count without start on every rank "
                                       "or on none")
        s = sum(i[1] for i in infos[:me])  # type: ignore[misc]
    elif s is None:
        s, n = plan_share(size, comm.size, me)
    elif n is None:
        n = size - s if 0 <= s <= size else 0
    failure: BaseException | None = None
    out: np.ndarray | None = None
    c = 0 if concurrency is None else int(concurrency)
    turn, nturns = plan_turn(me, comm.size, c)
    for t in range(nturns):
        if t == turn:
            try:
                out = col.read(s, s + n, dtype=dtype)
            except Exception as exc:
                failure = exc
        if nturns > 1:
            comm.barrier()
    agree(comm, failure=failure)
    assert out is not None
    return out


def append(comm: Comm, col: Any, data: Any, nfile: int | None = None, *,
           align_blobs_to_ranks: bool = False,
           file_handle: Callable[[], Any] | None = None) -> None:
    """Collective append; see :meth:`colfile.Column.append`.  What
    ``cf_mpi_column_grow`` and ``cf_mpi_column_write`` do in C, step for
    step: every rank passes its rows; the ranks' uncommitted writes move to
    rank 0, which adds the new blobs for all of them (rank order) --
    ``nfile``, or ``cf_plan_nfile`` of the appended bytes, split evenly or
    cut on rank boundaries -- and broadcasts the new layout, from which the
    other ranks build new replicas (on the ``cf_file *`` that
    ``file_handle()`` returns, default the column's File); then every rank
    writes its rows.  The next collective close commits it all."""
    comm.enter("Column.append()", col._path)
    # every rank is in it: from here the column is the ranks' together, and
    # its close commits the new blobs collectively (closed alone, a column
    # opened with file[name] would hand on its rows but lose the new layout)
    col._independent = False
    arr_box: list[np.ndarray] = []

    def prep() -> tuple[int, int | None, bool]:
        col._handle()
        arr = as_array(data, col.dtype)
        if arr.ndim == 0:
            raise ValueError("append() needs an array of rows, not a scalar")
        arr_box.append(col._rows_of(arr, len(arr)))
        nf = None if nfile is None else whole(
            nfile, "nfile", high=NFILE_MAX, limit=f"the most blobs a column may have, {NFILE_MAX}")
        return len(arr), nf, bool(align_blobs_to_ranks)

    infos = agree(comm, prep, collect=True)
    nf = _check_same([i[1] for i in infos], "append nfile")
    align = _check_same([i[2] for i in infos], "append align_blobs_to_ranks")
    counts = [i[0] for i in infos]
    total, offset = sum(counts), sum(counts[:comm.rank])
    old = col.size
    if total == 0 and nf is None:
        return  # nothing to add: no blob either
    if comm.size > 1:
        _owners.merge_pending(comm, col, agree)
    rowbytes = col.itemsize * max(col.nmemb, 1)

    def grow() -> bytes | None:
        n = plan_nfile(total * rowbytes, comm.size) if nf is None else nf
        if align:
            for rows in plan_blobs_by_rank(counts, n):
                col._call(_c.grow, rows, 1)
        else:
            col._call(_c.grow, total, n)
        return _c.export_meta(col._handle()) if comm.size > 1 else None

    try:
        meta = agree(comm, grow, root=0)
        if comm.size > 1:
            if comm.rank == 0:
                agree(comm)
            else:
                fh = file_handle or col._file_handle
                col._replace_handle(agree(comm, lambda: _c.open_meta(fh(), meta),
                                          undo=_c.release))
    except BaseException:
        if comm.rank == 0:
            col._discard()  # rank 0's layout must not be committed without the others
        raise
    write_all(comm, col, arr_box[0], old + offset)
