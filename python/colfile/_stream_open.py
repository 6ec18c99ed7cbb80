"""A committed stream's table read in slices by the ranks of a
communicator (docs/streams.md, "Reading under MPI"; as a reopen in
slices, ``colfile.stream.reopen``): no rank reads or holds the whole
table.  Rank 0 reads its head and checksum lines, every rank checks it
read the same, a few reader ranks (one per physical file, more for a
large table) each read a byte range of the task lines, rank 0 checks
from one small record per reader that the ranges make the sealed table,
and every rank then learns each task's committed bytes and where its
lines are (16 bytes a task); a rank reads a task's chunk records from
the table only when it reads that task."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import mpi as _mpi
from ._core import stream as _s

__all__ = ["SLICE_BYTES", "slice_readers", "open_in_slices"]

#: A reader of a table read in slices reads at most about this much of
#: the table (there is at least one reader per physical file); as
#: cf_mpi_stream_reopen and cf_mpi_stream_open.
SLICE_BYTES = 4 << 20
_TAG_SLICE = 0x5CF8


def slice_readers(ranks: int, files: int, body: int) -> int:
    """The reader ranks for ``body`` bytes of task lines in ``files``
    physical files: one per file, more for a large table, at most all."""
    return min(ranks, max(1, files, -(-body // SLICE_BYTES)))


def join_slices(mc: Any, record: tuple[int, int, int, int], r: int, size: int,
                tag: int = _TAG_SLICE) -> tuple[int, int, int]:
    """On rank 0: the readers' records (bytes, CRC32C, first task, tasks)
    of their ranges, reader 0's ``record`` and the others' received from
    rank ``k * size // r`` with ``tag``, joined in order: the bytes, their
    CRC32C and the task after a gapless run of tasks (-1: a gap or an
    overlap), as ``cf_mpi_stream_open`` and ``cf_mpi_stream_reopen`` do."""
    total, crc, nxt = 0, 0, 0
    for k in range(r):
        n, c, first, count = record if k == 0 else mc.recv(source=k * size // r, tag=tag)
        crc = _s.crc32c_join(crc, c, n)
        total += n
        if count > 0 and nxt >= 0:
            nxt = nxt + count if first == nxt else -1
    return total, crc, nxt


def open_in_slices(comm: Any, fh: Any, name: str) -> Any:
    """Collective: a reader handle of stream ``name`` on every rank of
    ``comm`` (a :class:`colfile.mpi.Comm`), opened in slices.  A damaged
    or replaced table fails every rank alike."""
    mc = comm.comm
    me, size = comm.rank, comm.size
    made: list[Any] = []

    def owner() -> tuple[bytes, int, int]:
        h, head, tlen = _s.open_head(fh, name)
        made.append(h)
        return head, tlen, _s.info(h)["files"]

    try:
        head, tlen, files = _mpi.agree(comm, owner, root=0)
        h = _mpi.agree(comm, lambda: made[0] if me == 0 else _s.join_reader(fh, name, head, tlen),
                       undo=lambda x: _s.reader_close(x) if x is not None and me != 0 else None)
    except Exception:
        if made:
            _s.reader_close(made[0])
        raise
    try:
        _index(comm, mc, me, size, h, len(head), tlen, files)
    except Exception:
        _s.reader_close(h)
        raise
    return h


def _index(comm: Any, mc: Any, me: int, size: int, h: Any, hlen: int, tlen: int, files: int) -> None:
    end = tlen - 17
    body = end - hlen
    r = slice_readers(size, files, body)
    j = -(-me * r // size)
    j = j if j < r and j * size // r == me else -1

    def at(k: int) -> int:
        return hlen + k * body // r

    mine = _mpi.agree(comm, lambda: _s.reader_slice(h, at(j), at(j + 1)) if j >= 0 else None)
    if mine is not None:
        record = (at(j + 1) - at(j), mine[3], mine[0], len(mine[2]))
        if j > 0:
            mc.send(record, dest=0, tag=_TAG_SLICE)

    def check() -> None:
        _s.reader_slices_check(h, *join_slices(mc, record, r, size))

    _mpi.agree(comm, check, root=0)
    # every task's bytes and lines' offsets, in reader order (= task order)
    pieces = [p for p in mc.allgather(None if mine is None else (mine[1][:-1], mine[2])) if p is not None]
    line_at = np.concatenate([p[0] for p in pieces] + [np.array([end], np.int64)])
    nbytes = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0, np.int64)
    _mpi.agree(comm, lambda: _s.reader_index(h, nbytes, line_at))
