"""Queries and histograms over a stream's global view (the rows of all
tasks in task order, as :class:`~colfile.stream.Stream` reads them), by
the column query engine (:mod:`colfile.query`, :mod:`colfile.histograms`):
the same expression language, the same exact results, and the per-chunk
statistics each task recorded as it appended used to skip the chunks that
cannot match.

:class:`StreamColumn` is the adapter: the global view as the engine sees a
read-only column.  Its chunks are the stream's chunks that rows start in
(a chunk that a long row only passes through holds none, and is left
out), in global row order, so that they tile the rows as a column's do;
an empty task has none.  A stream without statistics (``raw``, or written
before streams kept them) is read whole, with the same results.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> from colfile import stream
>>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
>>> with stream.create(f, "x", "<f8", tasks=2, chunk=4096, align=4096) as w:
...     w.task(0).append(np.arange(1000.0))
...     w.task(1).append(np.arange(1000.0, 3000.0))
>>> s = stream.open(f, "x")
>>> sel = s.where("x >= 2500")
>>> sel.count, int(sel.rows[0]), sel.report.skipped
(500, 2500, 4)
>>> h, edges = s.histogram(bins=3, range=(0, 3000), where="x < 1500")
>>> h.tolist()
[1000, 500, 0]
>>> f.close()
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import histograms as _h
from . import mpi as _mpi
from . import query as _q
from ._column_base import ColumnBase
from ._core.integrity import CHUNK_STATS_DTYPE
from ._expr import Field
from .errors import Error

if TYPE_CHECKING:
    from .stream import Stream

__all__ = ["StreamColumn", "where", "histogram"]

# rows of a scattered read taken in one contiguous read when the gap to
# the next selected row is at most this many rows
_GAP_ROWS = 64


class StreamColumn(ColumnBase):
    """A stream's global view as a read-only column of the query engine
    (no handle of its own: it reads through the :class:`Stream`)."""

    def __init__(self, stream: Stream) -> None:  # no ColumnHandle: nothing to open
        self._stream = stream
        self._name = stream.name
        self._path = stream._path
        self._comm = _mpi.SELF  # a stream is read with no communication
        self._lock = threading.RLock()
        self._h = None
        self._stats: np.ndarray | None = None

    def __del__(self) -> None:
        pass

    # -- what the engine reads of a column ---------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def file(self) -> Any:
        return self._stream.file

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._stream.dtype

    @property
    def nmemb(self) -> int:
        return self._stream.nmemb

    @property
    def itemsize(self) -> int:
        return int(self._stream.dtype.itemsize)

    @property
    def kind(self) -> str:
        return "data"

    @property
    def closed(self) -> bool:
        return self._stream._h is None

    @property
    def size(self) -> int:
        return self._stream.size

    @property
    def _dtype(self) -> np.dtype[Any]:
        return self._stream.dtype

    @property
    def _row_shape(self) -> tuple[int, ...]:
        return () if self.nmemb == 1 else (self.nmemb,)

    @property
    def blob_rows(self) -> list[int]:
        """Rows per task (the tasks are the view's blobs)."""
        return [self._stream.task_size(t) for t in range(self._stream.tasks)]

    def _what(self) -> str:
        return f"stream {self._path!r}/{self._name!r}"

    def _handle(self) -> Any:
        # the chunk index of columns does not exist for streams: plan from
        # the per-chunk statistics
        raise Error(f"{self._what()}: a stream has no chunk index")

    def read(self, start: int = 0, stop: int | None = None, out: np.ndarray | None = None,
             dtype: Any = None) -> np.ndarray:
        """Rows ``start:stop`` of the global view."""
        size = self.size
        stop = size if stop is None else stop
        start, stop = self._range(start, stop, size)
        rows = self._stream.read(start, stop - start)
        if out is None:
            return rows if dtype is None else rows.astype(dtype)
        out[...] = rows
        return out

    def chunk_stats(self, component: int | None = None) -> np.ndarray:
        """The stream's chunk statistics without the chunks no row starts
        in: records that tile the global view's rows."""
        if self._stats is None:
            cs = self._stream.chunk_stats()
            cs = cs.reshape(len(cs), self.nmemb)
            self._stats = cs[cs["rows"][:, 0] > 0] if len(cs) else np.zeros((0, self.nmemb), CHUNK_STATS_DTYPE)
        cs = self._stats
        if component is not None:
            return cs[:, int(component) % self.nmemb]
        return cs[:, 0] if self.nmemb == 1 else cs

    # -- scattered reads (Selection.read of short runs) --------------------
    def _new_rows(self, count: int, first: int) -> np.ndarray:
        return np.empty((count,) + self._row_shape, self.dtype)

    def _read_contig(self, start: int, count: int, out: np.ndarray) -> None:
        out[...] = self._stream.read(start, count)

    def _read_rows(self, rows: np.ndarray, out: np.ndarray) -> None:
        order = np.argsort(rows, kind="stable")
        srt = rows[order]
        cut = np.flatnonzero(np.diff(srt) > _GAP_ROWS) + 1
        at = 0
        for part in np.split(srt, cut):
            if not len(part):
                continue
            lo = int(part[0])
            block = self._stream.read(lo, int(part[-1]) - lo + 1)
            out[order[at:at + len(part)]] = block[part - lo]
            at += len(part)

    def _read_step(self, start: int, step: int, count: int, out: np.ndarray) -> None:
        self._read_rows(start + step * np.arange(count, dtype=np.int64), out)

    # -- queries -----------------------------------------------------------
    def field(self, j: int | None = None) -> Field:
        """The values of the view (component ``j`` of a vector stream) as a
        lazy :class:`~colfile.query.Field`."""
        return Field(self, j)

    def _query_resolver(self) -> Callable[[str], ColumnBase]:
        """Names in an expression: this stream by its name or its last path
        component, then the other streams of its File (of equal length)."""
        base = self._name.rpartition("/")[2]
        stream = self._stream
        others: dict[str, StreamColumn] = {}

        def resolve(name: str) -> ColumnBase:
            if name in (self._name, base):
                return self
            if name not in others:
                try:
                    # (the stream's own class: stream.py imports this module)
                    others[name] = StreamColumn(type(stream)(stream.file, name, stream._verify))
                except Error as exc:
                    raise KeyError(f"{name!r}: not this stream ({self._name!r}) and no stream of "
                                   f"its File: {exc}") from None
            return others[name]
        return resolve


def where(stream: Stream, expr: Any, *, piece_bytes: int | None = None) -> _q.Selection:
    """The rows of the stream's global view where ``expr`` holds
    (:func:`colfile.where`'s language: ``"(x > 3) & (x[1] < 0)"`` names
    the stream, by its name or last path component), skipping the chunks
    whose statistics decide it; evaluated by this process alone."""
    col = stream._column()
    return _q.where(col, expr, piece_bytes=piece_bytes, parallel=False)


def histogram(stream: Stream, component: int | None = None, bins: Any = 10, range: Any = None,
              where: Any = None, weights: Any = None, density: bool = False, *,
              return_report: bool = False, piece_bytes: int | None = None) -> Any:
    """:func:`colfile.histogram` of the global view (component
    ``component`` of a vector stream), over the rows where ``where``
    holds."""
    col = stream._column()
    return _h.histogram(col.field(component), bins, range, where, weights, density,
                        return_report=return_report, piece_bytes=piece_bytes)
