"""What a selective read fetches from disk: the byte ranges of the rows it
will read, neighbours less than :data:`GAP_BYTES` apart joined into one
range, announced to the kernel (``posix_fadvise(POSIX_FADV_WILLNEED)``)
up to :data:`AHEAD_BYTES` before they are read.

Why: a read the kernel did not expect is served by its own read-ahead,
which grows with a sequential run and goes on past the run's end, so a
query that reads many runs of chunks pulls in the bytes after each of them
too (about twice the bytes needed for runs of a few MiB on Linux with the
default 128 KiB window).  Pages announced with WILLNEED are read exactly
(rounded to pages) and carry no read-ahead mark, so the reads that follow
find them in the page cache (or in flight) and start no read-ahead of
their own.  Announcing the next ranges while the current one is read and
filtered keeps the device busy: the data arrives while the CPU works.

The reads themselves stay exact (the rows needed, through
``cf_column_read``/``cf_column_read_rows``): what :class:`Ahead` changes
is only what the kernel fetches and when.  On platforms without
``posix_fadvise``, or for a blob that cannot be opened, nothing is
announced and the reads are as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["GAP_BYTES", "AHEAD_BYTES", "Ahead", "join_ranges"]

#: Ranges of one blob closer than this are fetched as one range, the gap
#: with them.  A split costs the device one more request: a random 4 KiB
#: read took 0.4-0.6 ms on the virtual disk of the development machine,
#: which streams 0.5-0.8 GB/s (the time of 200-500 KiB), and takes about
#: 0.08 ms on an NVMe SSD streaming 2-3 GB/s (160-240 KiB).  128 KiB is
#: below both break-even points, and it is what the kernel's default
#: read-ahead window would have read past the first range anyway.
GAP_BYTES = 128 << 10

#: The most bytes announced ahead of the read in progress: two units of
#: Selection.read (:data:`colfile._runs.UNIT_BYTES`), eight pieces of a
#: query's scan; enough to keep a device streaming at a few GB/s busy for
#: several ms while a piece is filtered, small enough that the pages are
#: still cached when the read comes (they are ordinary page-cache pages,
#: evicted like any other).
AHEAD_BYTES = 32 << 20

_WILLNEED = getattr(os, "POSIX_FADV_WILLNEED", None)

#: Blob files of one column held open at once for announcing (a column may
#: have thousands of blobs; descriptors are a limited resource).
_OPEN_BLOBS = 8


def join_ranges(starts: np.ndarray, stops: np.ndarray, gap: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, disjoint ``[start, stop)`` ranges with those less than
    ``gap`` apart joined.

    >>> join_ranges(np.array([0, 10, 50]), np.array([5, 20, 60]), 6)
    (array([ 0, 50]), array([20, 60]))
    """
    starts = np.asarray(starts, np.int64)
    stops = np.asarray(stops, np.int64)
    if len(starts) < 2:
        return starts, stops
    cut = np.flatnonzero(starts[1:] - stops[:-1] >= gap)
    first = np.concatenate([[0], cut + 1])
    last = np.concatenate([cut, [len(starts) - 1]])
    return starts[first], stops[last]


class _Blobs:
    """The blob files of one column, opened read-only when first
    announced (never written through), with the first row of each."""

    def __init__(self, col: Any) -> None:
        self.dir = col.path
        self.rowbytes = col.itemsize * max(col.nmemb, 1)
        rows = np.asarray(col.blob_rows, np.int64)
        self.first = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
        self.fds: dict[int, int | None] = {}

    def fd(self, i: int) -> int | None:
        if i not in self.fds:
            if len(self.fds) >= _OPEN_BLOBS:  # reads go forward: the oldest is done
                old = self.fds.pop(next(iter(self.fds)))
                if old is not None:
                    os.close(old)
            try:
                self.fds[i] = os.open(os.path.join(self.dir, f"{i:06X}"),
                                      os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError:  # a hint only: the read will say what is wrong
                self.fds[i] = None
        return self.fds[i]

    def spans(self, a: int, b: int) -> Iterable[tuple[int, int, int]]:
        """``(blob, offset, length)`` in bytes of rows ``[a, b)``."""
        i = int(np.searchsorted(self.first, a, side="right")) - 1
        while a < b and i < len(self.first) - 1:
            end = min(b, int(self.first[i + 1]))
            if end > a:
                yield i, (a - int(self.first[i])) * self.rowbytes, (end - a) * self.rowbytes
            a = end
            i += 1

    def close(self) -> None:
        for fd in self.fds.values():
            if fd is not None:
                os.close(fd)
        self.fds.clear()


class Ahead:
    """Announces the reads of a list to the kernel, a bounded window ahead.

    ``reads`` are ``(column, start, stop)`` row ranges in the order they
    will be read.  Before reading entry ``i``, call :meth:`at` with ``i``:
    entries ``i`` and after, up to :data:`AHEAD_BYTES` of them (and at
    least ``i + 1``), not yet announced, are announced, per blob file, as
    byte ranges with gaps under :data:`GAP_BYTES` filled.  Use as a
    context manager (closes the blob files it opened).
    """

    def __init__(self, reads: list[tuple[Any, int, int]], ahead_bytes: int | None = None,
                 gap_bytes: int | None = None) -> None:
        self.reads = reads
        self.ahead = AHEAD_BYTES if ahead_bytes is None else int(ahead_bytes)
        self.gap = GAP_BYTES if gap_bytes is None else int(gap_bytes)
        self.blobs: dict[int, _Blobs] = {}
        self.done = 0  # entries announced: 0..done-1
        self.bytes = 0  # bytes announced (gaps included)
        self.enabled = _WILLNEED is not None and len(reads) > 0
        rowbytes: dict[int, int] = {}
        for col, _, _ in reads:
            if id(col) not in rowbytes:
                rowbytes[id(col)] = col.itemsize * max(col.nmemb, 1)
        sizes = [(b - a) * rowbytes[id(col)] for col, a, b in reads]
        self.cum = np.concatenate([[0], np.cumsum(np.asarray(sizes, np.int64))])

    def __enter__(self) -> Ahead:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        for b in self.blobs.values():
            b.close()

    def _blobs(self, col: Any) -> _Blobs:
        k = id(col)
        if k not in self.blobs:
            self.blobs[k] = _Blobs(col)
        return self.blobs[k]

    def at(self, i: int) -> None:
        """Entry ``i`` is about to be read."""
        n = len(self.reads)
        if not self.enabled or self.done >= n:
            return
        cum = self.cum
        # in batches: once less than half the window is announced ahead
        if self.done >= i + 2 and cum[self.done] - cum[i] >= self.ahead // 2:
            return
        end = int(np.searchsorted(cum, cum[i] + self.ahead, side="left"))
        end = min(n, max(end, i + 2))
        j = max(self.done, i)
        if end <= j:
            return
        pending: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for col, a, b in self.reads[j:end]:
            bl = self._blobs(col)
            for blob, off, nb in bl.spans(a, b):
                pending.setdefault((id(col), blob), []).append((off, off + nb))
        self.done = end
        for (k, blob), spans in pending.items():
            fd = self.blobs[k].fd(blob)
            if fd is None:
                continue
            s = np.asarray([x[0] for x in spans], np.int64)
            e = np.asarray([x[1] for x in spans], np.int64)
            order = np.argsort(s, kind="stable")
            s, e = s[order], e[order]
            # overlapping or touching spans (components read apart) join too
            e = np.maximum.accumulate(e)
            s, e = join_ranges(s, e, self.gap)
            for off, stop in zip(s.tolist(), e.tolist()):
                try:
                    os.posix_fadvise(fd, off, stop - off, _WILLNEED)  # type: ignore[arg-type]
                except OSError:
                    break
                self.bytes += stop - off
