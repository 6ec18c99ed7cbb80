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
Long ranges (:data:`STREAM_BYTES`) are the exception: the kernel's
read-ahead streams those best, and its overshoot is small beside them.

The reads themselves stay exact (the rows needed, through
``cf_column_read``/``cf_column_read_rows``): what :class:`Ahead` changes
is only what the kernel fetches and when.  On platforms without
``posix_fadvise``, or for a blob that cannot be opened, nothing is
announced and the reads are as before.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["GAP_BYTES", "AHEAD_BYTES", "STREAM_BYTES", "Ahead", "join_ranges"]

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

#: A range at least this long (after joining) is not announced: the
#: kernel's own read-ahead streams a long sequential read faster than the
#: announcements do (a cold 56 MB read of two runs took 77 ms through
#: read-ahead and 123 ms announced, on the development machine), and what
#: it reads past the end of such a range is a small part of it.
STREAM_BYTES = 8 << 20

#: Blob files held open at once for announcing (a column may have
#: thousands of blobs; descriptors are a limited resource).
_OPEN_BLOBS = 8

#: Once this much is to be announced, a helper thread announces it
#: (:class:`_Helper`); smaller reads do it themselves (no thread started).
_HELPER_BYTES = 4 << 20

#: The helper announces in pieces of at most this many bytes, in order, so
#: the reader finds the first ones fetched first.
_PIECE_BYTES = 2 << 20


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


class _Files:
    """Blob files opened read-only to announce their ranges (never read or
    written through), at most :data:`_OPEN_BLOBS` at a time: announcements
    go forward, so the file used longest ago is closed first."""

    def __init__(self) -> None:
        self.fds: dict[str, int | None] = {}

    def fd(self, path: str) -> int | None:
        if path in self.fds:
            return self.fds[path]
        if len(self.fds) >= _OPEN_BLOBS:
            old = self.fds.pop(next(iter(self.fds)))
            if old is not None:
                os.close(old)
        try:
            fd: int | None = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:  # a hint only: the read will say what is wrong
            fd = None
        self.fds[path] = fd
        return fd

    def announce(self, path: str, off: int, n: int) -> None:
        fd = self.fd(path)
        if fd is None:
            return
        try:
            os.posix_fadvise(fd, off, n, _WILLNEED)  # type: ignore[arg-type]
        except OSError:
            pass

    def close(self) -> None:
        for fd in self.fds.values():
            if fd is not None:
                os.close(fd)
        self.fds.clear()


class _Helper(threading.Thread):
    """Makes the announcements in order, off the reading thread: for a
    range of many MiB, ``posix_fadvise`` returns only once the device has
    taken most of the requests (its queue is full until then), which would
    stop the reader for as long as the read takes."""

    def __init__(self, files: _Files) -> None:
        super().__init__(name="colfile-fetch", daemon=True)
        self.files = files
        self.jobs: queue.SimpleQueue[tuple[str, int, int] | None] = queue.SimpleQueue()
        self.stopping = False

    def run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None or self.stopping:
                return
            self.files.announce(*job)

    def stop(self) -> None:
        """Drop what is not announced yet and wait for the announcement in
        progress (at most :data:`_PIECE_BYTES`)."""
        self.stopping = True
        self.jobs.put(None)
        self.join()


class _Blobs:
    """Where the rows of one column are: its blob files and the first row
    of each."""

    def __init__(self, col: Any) -> None:
        self.dir = col.path
        self.rowbytes = col.itemsize * max(col.nmemb, 1)
        rows = np.asarray(col.blob_rows, np.int64)
        self.first = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)

    def path(self, i: int) -> str:
        return os.path.join(self.dir, f"{i:06X}")

    def spans(self, a: int, b: int) -> Iterable[tuple[int, int, int]]:
        """``(blob, offset, length)`` in bytes of rows ``[a, b)``."""
        i = int(np.searchsorted(self.first, a, side="right")) - 1
        while a < b and i < len(self.first) - 1:
            end = min(b, int(self.first[i + 1]))
            if end > a:
                yield i, (a - int(self.first[i])) * self.rowbytes, (end - a) * self.rowbytes
            a = end
            i += 1


class Ahead:
    """Announces the reads of a sequence to the kernel, a bounded window ahead.

    ``reads`` are ``(column, start, stop)`` row ranges in the order they
    will be read (any iterable: it is consumed only as far as the window
    reaches, so a scan over a column of any length never lists its pieces
    at once).  Before reading entry ``i`` (``i`` = 0, 1, 2, ...), call
    :meth:`at` with ``i``: entries ``i`` and after, up to :data:`AHEAD_BYTES`
    of them (and at least ``i + 1``), not yet announced, are announced, per
    blob file, as byte ranges with gaps under :data:`GAP_BYTES` filled.
    Small windows are announced by the calling thread; once
    :data:`_HELPER_BYTES` are to be announced, a helper thread makes the
    announcements, in pieces of at most :data:`_PIECE_BYTES` (see
    :class:`_Helper`).  Use as a context manager (stops the helper, closes
    the blob files it opened).
    """

    def __init__(self, reads: Iterable[tuple[Any, int, int]], ahead_bytes: int | None = None,
                 gap_bytes: int | None = None) -> None:
        self.ahead = AHEAD_BYTES if ahead_bytes is None else int(ahead_bytes)
        self.gap = GAP_BYTES if gap_bytes is None else int(gap_bytes)
        self.blobs: dict[int, _Blobs] = {}
        self.files = _Files()
        self.helper: _Helper | None = None
        self.done = 0  # entries announced: 0..done-1
        self.bytes = 0  # bytes announced (gaps included)
        self.enabled = _WILLNEED is not None
        self._reads = iter(reads)
        self._exhausted = False
        #: entries taken from reads and not yet passed: (index, column, a, b,
        #: bytes of the entries before it)
        self._window: deque[tuple[int, Any, int, int, int]] = deque()
        self._taken = 0  # entries taken from reads
        self._taken_bytes = 0  # their bytes

    def _take(self, index: int, until_bytes: int) -> None:
        """Take entries from reads until entry ``index`` is taken and their
        bytes reach ``until_bytes`` (or reads ends)."""
        while not self._exhausted and (self._taken <= index or self._taken_bytes < until_bytes):
            try:
                col, a, b = next(self._reads)
            except StopIteration:
                self._exhausted = True
                return
            self._window.append((self._taken, col, int(a), int(b), self._taken_bytes))
            self._taken += 1
            self._taken_bytes += (int(b) - int(a)) * self._blobs(col).rowbytes

    def _start(self, index: int) -> int:
        """Bytes of the entries before entry ``index`` (taken already)."""
        if index >= self._taken:
            return self._taken_bytes
        return self._window[index - self._window[0][0]][4]

    def announced_past(self, i: int) -> int:
        """Bytes announced beyond the start of entry ``i`` (the entry
        :meth:`at` was last called with, or a later one)."""
        return self._start(self.done) - self._start(i) if self.done > i else 0

    def __enter__(self) -> Ahead:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self.helper is not None:
            self.helper.stop()
            self.helper = None
        self.files.close()

    def _blobs(self, col: Any) -> _Blobs:
        k = id(col)
        if k not in self.blobs:
            self.blobs[k] = _Blobs(col)
        return self.blobs[k]

    def at(self, i: int) -> None:
        """Entry ``i`` is about to be read."""
        if not self.enabled:
            return
        # entries before i are read: the window starts at i
        while self._window and self._window[0][0] < i:
            self._window.popleft()
        self._take(i, 0)
        if i >= self._taken:
            return
        # in batches: once less than half the window is announced ahead
        if self.done >= i + 2 and self.announced_past(i) >= self.ahead // 2:
            return
        limit = self._start(i) + self.ahead
        self._take(i + 1, limit)
        # the entries starting before the limit, at least two
        end = i + 1
        while end < self._taken and (end < i + 2 or self._start(end) < limit):
            end += 1
        j = max(self.done, i)
        if end <= j:
            return
        pending: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
        for r, col, a, b, _ in list(self._window)[j - i:end - i]:
            bl = self._blobs(col)
            for blob, off, nb in bl.spans(a, b):
                pending.setdefault((id(col), blob), []).append((off, off + nb, r))
        self.done = end
        jobs: list[tuple[int, str, int, int]] = []  # (first read, path, offset, length)
        for (k, blob), spans in pending.items():
            sp = np.asarray(spans, np.int64).reshape(-1, 3)
            sp = sp[np.argsort(sp[:, 0], kind="stable")]
            s, r = sp[:, 0], sp[:, 2]
            # overlapping or touching spans (components read apart) join too
            e = np.maximum.accumulate(sp[:, 1])
            heads = np.concatenate([[0], np.flatnonzero(s[1:] - e[:-1] >= self.gap) + 1])
            tails = np.append(heads[1:], len(s)) - 1
            first = np.minimum.reduceat(r, heads)
            path = self.blobs[k].path(blob)
            for off, stop, fr in zip(s[heads].tolist(), e[tails].tolist(), first.tolist()):
                if stop - off >= STREAM_BYTES:
                    continue  # the kernel's read-ahead streams it faster
                for p in range(off, stop, _PIECE_BYTES):
                    jobs.append((fr, path, p, min(stop, p + _PIECE_BYTES) - p))
                self.bytes += stop - off
        jobs.sort(key=lambda job: (job[0], job[2]))  # in the order of the reads
        if self.helper is None and self.bytes >= _HELPER_BYTES:
            self.helper = _Helper(self.files)
            self.helper.start()
        for _, path, off, nb in jobs:
            if self.helper is not None:
                self.helper.jobs.put((path, off, nb))
            else:
                self.files.announce(path, off, nb)
