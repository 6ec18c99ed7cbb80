"""Blob-owner writes of :func:`colfile.mpi.write_all` (``mode='blob_owners'``).

The algorithm of the C layer's ``CF_IO_BLOB_OWNERS`` (``cf_mpi_column_write``,
src/mpi/mpi_io.c), so that both store the same bytes through the same
writers: each blob holding written rows has one writer, its owner -- the rank
holding the blob's first written row.  Every other rank sends its rows of the
blob, converted to the column's dtype, to the owner in pieces of at most
``piece_rows`` rows (point-to-point), and the owner writes each piece; no
other rank opens the blob, so no file has two writers and no extent lock
changes hands.  A rank takes part only in the blobs its rows touch, in blob
order; owners take turns in blob order, ``concurrency`` at once, passing a
token as the C layer does.  Every wait is for a lower or the same blob, so
nothing waits in a circle.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._core import plan as _plan

#: message tags, on the File's own communicator (the C layer's values)
TAG_TURN = 0x5CF1
TAG_BLOB = 0x5CF2


class Layout:
    """The written ranges (sorted by start; they do not overlap) and the
    blobs' first rows, with the owner of each blob."""

    def __init__(self, starts: Sequence[int], counts: Sequence[int],
                 blob_rows: Sequence[int]) -> None:
        self.spans = sorted((int(s), int(s) + int(n), r)
                            for r, (s, n) in enumerate(zip(starts, counts)) if n)
        self.ends = [e for _, e, _ in self.spans]
        self.first = [0]
        for n in blob_rows:
            self.first.append(self.first[-1] + int(n))

    def span_after(self, row: int) -> int:
        """The first span ending after ``row``."""
        return bisect_right(self.ends, row)

    def blob_of(self, row: int) -> int:
        """The (non-empty) blob holding ``row``."""
        return bisect_right(self.first, row, 0, len(self.first) - 1) - 1

    def owner(self, b: int) -> int:
        """The rank writing blob b, or -1 if nobody writes a row of it."""
        lo, hi = self.first[b], self.first[b + 1]
        if lo == hi:
            return -1
        i = self.span_after(lo)
        return self.spans[i][2] if i < len(self.spans) and self.spans[i][0] < hi else -1

    def pieces(self, b: int) -> list[tuple[int, int, int]]:
        """``(rank, first row, end row)`` of every rank's rows of blob b."""
        lo, hi = self.first[b], self.first[b + 1]
        out = []
        i = self.span_after(lo)
        while i < len(self.spans) and self.spans[i][0] < hi:
            s, e, r = self.spans[i]
            out.append((r, max(s, lo), min(e, hi)))
            i += 1
        return out


def owners(starts: Sequence[int], counts: Sequence[int], blob_rows: Sequence[int]) -> list[int]:
    """The owner of each blob (-1: no rank writes a row of it).

    >>> owners([0, 5, 8], [5, 3, 2], [4, 3, 3])
    [0, 0, 1]
    """
    lay = Layout(starts, counts, blob_rows)
    return [lay.owner(b) for b in range(len(blob_rows))]


def write(comm: Any, col: Any, arr: np.ndarray, starts: Sequence[int], counts: Sequence[int],
          concurrency: int, piece_rows: int, direct: np.ndarray | None,
          convert: Callable[[np.ndarray, int, int, np.ndarray], None]) -> BaseException | None:
    """This rank's part of a blob-owner write of ``col``; ``arr`` holds its
    rows (``counts[rank]`` of them from ``starts[rank]``), ``direct`` their
    bytes if they are already the column's (else ``None``), and
    ``convert(arr, i0, i1, out)`` puts rows i0:i1 of it, in the column's
    dtype, into the byte buffer ``out``.  Returns this rank's failure (the caller agrees on
    it); the messages are exchanged in full whatever fails."""
    me = comm.rank
    mpi = comm.comm
    rowbytes = col.itemsize * max(col.nmemb, 1)
    lay = Layout(starts, counts, col.blob_rows)
    start, count = int(starts[me]), int(counts[me])
    end = start + count
    nfile = len(lay.first) - 1
    # owners in blob order, and this rank's place among them
    order: list[int] = []
    for b in range(nfile):
        o = lay.owner(b)
        if o >= 0 and (not order or order[-1] != o):
            order.append(o)
    index = order.index(me) if me in order else -1
    _, nturns = _plan.turn(max(index, 0), len(order), concurrency)
    failure: BaseException | None = None
    in_turn = False
    token = np.zeros(0, np.uint8)
    b0 = lay.blob_of(start) if count else 0
    b1 = lay.blob_of(end - 1) if count else -1
    for b in range(b0, b1 + 1):
        lo, hi = lay.first[b], lay.first[b + 1]
        owner = lay.owner(b)
        if owner != me:
            for p in range(max(start, lo), min(end, hi), piece_rows):
                k = min(min(end, hi) - p, piece_rows)
                if direct is not None:
                    buf = direct[(p - start) * rowbytes:(p - start + k) * rowbytes]
                else:
                    buf = np.zeros(k * rowbytes, np.uint8)
                    if failure is None:
                        try:
                            convert(arr, p - start, p - start + k, buf)
                        except Exception as exc:
                            failure = exc
                mpi.Send(buf, dest=owner, tag=TAG_BLOB)
            continue
        if not in_turn:
            if nturns > 1 and index % nturns != 0:
                mpi.Recv(token, source=order[index - 1], tag=TAG_TURN)
            in_turn = True
        for r, a, z in lay.pieces(b):
            if r == me:
                if failure is None:
                    try:
                        col._write_contig(a, z - a, arr[a - start:z - start])
                    except Exception as exc:
                        failure = exc
                continue
            for p in range(a, z, piece_rows):
                k = min(z - p, piece_rows)
                got = np.empty(k * rowbytes, np.uint8)
                mpi.Recv(got, source=r, tag=TAG_BLOB)
                if failure is None:
                    try:
                        col._write_bytes(p, k, got)
                    except Exception as exc:
                        failure = exc
    if in_turn and nturns > 1 and index % nturns != nturns - 1 and index + 1 < len(order):
        mpi.Send(token, dest=order[index + 1], tag=TAG_TURN)
    return failure
