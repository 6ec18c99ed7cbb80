"""Lazy dask arrays of columns, datasets and selections (``to_dask``).

Every chunk of such an array is read by a task that opens the File afresh,
read-only, by its absolute path: the graph pickles, and runs in threads, in
other processes and on ``dask.distributed`` workers whatever their working
directory.

The ``chunks=`` argument takes what :func:`dask.array.from_array` takes
(rows per chunk as an int, ``-1`` or ``None`` for a whole axis, explicit
sizes as a tuple per axis, a dict of axes, ``"auto"`` or a byte size such
as ``"64MiB"``), with these differences for ``"auto"`` and byte sizes on
the row axis: chunks hold about :data:`CHUNK_BYTES` (or the size given),
``"auto"`` makes about :data:`AUTO_MAX_CHUNKS` chunks at most (larger ones
for a huge column; blob boundaries may add a few), and a column's chunks end on blob boundaries where they can
(small blobs are merged, a blob larger than a chunk is cut into equal
pieces), so that a chunk's task reads whole blobs.  On the component axis
of a vector column ``"auto"`` keeps each row whole.  ``"blobs"`` gives one
chunk per non-empty blob.
"""

from __future__ import annotations

from numbers import Number
from typing import Any, Sequence

import numpy as np

from . import _opener, _runs

__all__ = ["CHUNK_BYTES", "AUTO_MAX_CHUNKS", "chunks_for", "row_chunks"]

#: Bytes of data per chunk that ``chunks="auto"`` aims at: reading this much
#: takes a few milliseconds, far more than dask's cost per task, and a column
#: of a few million rows still gives several chunks to work on in parallel.
CHUNK_BYTES = 8 << 20

#: The most chunks ``"auto"`` makes of an axis: beyond ``CHUNK_BYTES *
#: AUTO_MAX_CHUNKS`` bytes (80 GiB) its chunks grow instead, so that the graph
#: of a huge column stays small enough to build and schedule.
AUTO_MAX_CHUNKS = 10_000


def _limit(spec: str) -> int:
    if spec == "auto":
        return CHUNK_BYTES
    from dask.utils import parse_bytes

    try:
        n = int(parse_bytes(spec))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"chunks={spec!r}: not 'auto', 'blobs' or a byte size "
                         f"such as '64MiB' ({exc})") from None
    if n <= 0:
        raise ValueError(f"chunks={spec!r}: a chunk must hold at least one byte")
    return n


def row_chunks(size: int, edges: Sequence[int], rowbytes: int, limit: int) -> tuple[int, ...]:
    """Rows per chunk for ``size`` rows of ``rowbytes`` bytes, about
    ``limit`` bytes each, cut at the row numbers ``edges`` where possible
    (consecutive pieces between edges are merged while they fit; a piece
    larger than a chunk is cut into equal parts)."""
    if size == 0:
        return (0,)
    target = max(1, limit // max(1, rowbytes))
    cuts = sorted({0, size, *(e for e in edges if 0 < e < size)})
    out: list[int] = []
    cur = 0
    for a, b in zip(cuts[:-1], cuts[1:]):
        n = b - a
        if cur and cur + n > target:
            out.append(cur)
            cur = 0
        if n > target:
            parts = -(-n // target)
            base, extra = divmod(n, parts)
            out.extend([base + 1] * extra + [base] * (parts - extra))
        else:
            cur += n
    if cur:
        out.append(cur)
    return tuple(out)


def _per_axis(spec: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """``spec`` as one entry per axis, as dask's normalize_chunks reads it."""
    if isinstance(spec, np.ndarray):
        spec = spec.tolist()
    if isinstance(spec, list):
        spec = tuple(spec)
    if spec is None:
        raise ValueError("chunks=None: give 'auto', rows per chunk, or chunk sizes")
    if isinstance(spec, (Number, str)):
        return (spec,) * len(shape)
    if isinstance(spec, dict):
        bad = [k for k in spec if k not in range(len(shape))]
        if bad:
            raise ValueError(f"chunks={spec!r}: no axis {bad[0]!r} in shape {shape}")
        return tuple(spec.get(i, None) for i in range(len(shape)))
    if not isinstance(spec, tuple):
        raise TypeError(f"chunks must be an int, a str, a tuple or a dict, not "
                        f"{type(spec).__name__}")
    if len(shape) == 1 and len(spec) > 1 and all(isinstance(c, (Number, str)) for c in spec):
        return (spec,)  # explicit sizes of the only axis
    if len(spec) != len(shape):
        raise ValueError(f"chunks={spec!r} has {len(spec)} axes, the array has shape {shape}")
    return spec


def chunks_for(spec: Any, shape: tuple[int, ...], itemsize: int, edges: Sequence[int],
               blob_rows: Sequence[int] | None = None) -> tuple[tuple[int, ...], ...]:
    """The chunks of an array of ``shape`` (rows first) for ``spec``;
    ``edges`` are the row numbers where blobs start (see the module notes)."""
    from dask.array.core import normalize_chunks

    if isinstance(spec, str) and spec == "blobs":
        if blob_rows is None:
            raise ValueError("chunks='blobs' is for a column: this array has no blobs")
        rows = tuple(r for r in blob_rows if r > 0) or (0,)
        return (rows,) + tuple((n,) for n in shape[1:])
    axes = list(_per_axis(spec, shape))
    for i in range(1, len(shape)):
        if isinstance(axes[i], str):
            _limit(axes[i])  # checks it
            axes[i] = -1  # components: each row whole
    if isinstance(axes[0], str):
        rest = normalize_chunks(tuple([1] + axes[1:]), (1,) + shape[1:])[1:]
        width = max((max(c) for c in rest), default=1)
        rowbytes = itemsize * width
        limit = _limit(axes[0])
        if axes[0] == "auto":
            limit = max(limit, -(-shape[0] * rowbytes // AUTO_MAX_CHUNKS))
        axes[0] = row_chunks(shape[0], edges, rowbytes, limit)
    return tuple(normalize_chunks(tuple(axes), shape))


def rows_only(spec: Any, size: int, rowbytes: int, edges: Sequence[int]) -> tuple[int, ...]:
    """Row chunks for arrays of ``size`` rows whose other axes stay whole
    (``Dataset.to_dask``, ``Selection.to_dask``)."""
    if isinstance(spec, str) and spec == "blobs":
        raise ValueError("chunks='blobs' is for a single column: give 'auto', rows per "
                         "chunk or chunk sizes")
    if isinstance(spec, dict):
        spec = spec.get(0, None)
    if isinstance(spec, tuple) and len(spec) == 1 and not isinstance(spec[0], (Number, str)):
        spec = spec[0]  # ((3, 4),): the sizes of the row axis
    return chunks_for(spec, (size,), max(1, rowbytes), edges)[0]


def _token(*parts: Any) -> str:
    from dask.base import tokenize

    return str(tokenize(*parts))


# ---------------------------------------------------------------------------
# what the tasks read


class ColumnReader:
    """Array-like handed to :func:`dask.array.from_array`: each read opens
    the File read-only by its absolute path (picklable, no open handle)."""

    def __init__(self, file_path: str, name: str, shape: tuple[int, ...],
                 dtype: np.dtype[Any]) -> None:
        self.file_path = file_path
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.ndim = len(shape)

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        return (type(self).__name__, self.file_path, self.name, self.shape, self.dtype.str)

    def __getitem__(self, key: Any) -> np.ndarray:
        with _opener.open_file(self.file_path) as f:
            return np.asarray(f[self.name][key])


class SelectionReader:
    """Array-like of the rows of a column that a Selection selected (its
    runs ``starts``/``stops``): a read of output rows ``[a, b)`` reads only
    those rows of the column."""

    def __init__(self, file_path: str, name: str, size: int, starts: np.ndarray,
                 stops: np.ndarray, row_shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self.file_path = file_path
        self.name = name
        self.size = size
        self.starts = starts
        self.stops = stops
        # where each run begins in the output
        self.offsets = np.concatenate([[0], np.cumsum(stops - starts)]).astype(np.int64)
        count = int(self.offsets[-1])
        self.shape = (count,) + row_shape
        self.dtype = dtype
        self.ndim = len(self.shape)

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        return (type(self).__name__, self.file_path, self.name, self.size,
                self.starts, self.stops, self.shape, self.dtype.str)

    def _block(self, a: int, b: int) -> np.ndarray:
        """Output rows ``[a, b)``."""
        out = np.empty((b - a,) + self.shape[1:], self.dtype)
        if b <= a:
            return out
        off = self.offsets
        i = int(np.searchsorted(off, a, side="right")) - 1
        j = int(np.searchsorted(off, b, side="left"))
        starts = self.starts[i:j].copy()
        stops = self.stops[i:j].copy()
        starts[0] += a - off[i]
        stops[-1] -= off[j] - b
        with _opener.open_file(self.file_path) as f:
            col = f[self.name]
            if col.size != self.size:
                raise ValueError(f"{col._what()} has {col.size} rows now, the selection was "
                                 f"made on {self.size}")
            _runs.read(col, starts, stops, out)
        return out

    def __getitem__(self, key: Any) -> np.ndarray:
        # dask (fancy=False) asks for slices and integers only
        key = key if isinstance(key, tuple) else (key,)
        first, rest = (key[0], key[1:]) if key else (slice(None), ())
        count = self.shape[0]
        if isinstance(first, slice):
            r = range(count)[first]
            if len(r) == 0:
                return np.empty((0,) + self.shape[1:], self.dtype)[(slice(None),) + rest]
            lo, hi = min(r[0], r[-1]), max(r[0], r[-1]) + 1
            stop = r[-1] - lo + (1 if r.step > 0 else -1)
            rel = slice(r[0] - lo, stop if stop >= 0 else None, r.step)
            return self._block(lo, hi)[(rel,) + rest]
        if isinstance(first, (int, np.integer)):
            i = range(count)[int(first)]
            return self._block(i, i + 1)[(0,) + rest]
        raise TypeError(f"selection of {self.name!r}: cannot index rows by "
                        f"{type(first).__name__}")


# ---------------------------------------------------------------------------
# the arrays


def _from_reader(reader: Any, chunks: tuple[tuple[int, ...], ...], kind: str, name: str,
                 token: str) -> Any:
    import dask.array as da

    return da.from_array(
        reader, chunks=chunks, lock=False, asarray=True, fancy=False,
        meta=np.empty((0,) * reader.ndim, reader.dtype),
        name=f"colfile-{kind}-{name}-{token}")


def _abs_path(col: Any) -> str:
    if col._file_path is None:
        raise ValueError(f"{col._what()} was not opened through a File: to_dask() "
                         "reopens it by path")
    return str(col._file_path)


def _edges(col: Any) -> list[int]:
    return np.cumsum([0] + col.blob_rows).tolist()


def column(col: Any, chunks: Any) -> Any:
    path = _abs_path(col)
    shape = col.shape
    ch = chunks_for(chunks, shape, col.itemsize, _edges(col), col.blob_rows)
    reader = ColumnReader(path, col.name, shape, col.dtype)
    return _from_reader(reader, ch, "column", col.name, _token(reader, ch))


def dataset(ds: Any, chunks: Any) -> dict[str, Any]:
    cols = ds._cols
    # chunks end on the blob boundaries all the columns share
    common = set.intersection(*(set(_edges(c)) for c in cols.values()))
    rowbytes = max(c.itemsize * max(c.nmemb, 1) for c in cols.values())
    rows = rows_only(chunks, ds.size, rowbytes, sorted(common))
    out = {}
    for n, c in cols.items():
        reader = ColumnReader(_abs_path(c), c.name, c.shape, c.dtype)
        ch = (rows,) + tuple((k,) for k in c.shape[1:])
        out[n] = _from_reader(reader, ch, "column", c.name, _token(reader, ch))
    return out


def selection(sel: Any, names: Any, chunks: Any) -> Any:
    if isinstance(names, (list, tuple)):
        cols = [sel._column(n) for n in names]
        labels = [n if isinstance(n, str) else c.name for n, c in zip(names, cols)]
        rowbytes = max((c.itemsize * max(c.nmemb, 1) for c in cols), default=1)
        rows = rows_only(chunks, sel.count, rowbytes, [])
        return {lab: _selected(sel, c, rows) for lab, c in zip(labels, cols)}
    col = sel._column(names)
    rows = rows_only(chunks, sel.count, col.itemsize * max(col.nmemb, 1), [])
    return _selected(sel, col, rows)


def _selected(sel: Any, col: Any, rows: tuple[int, ...]) -> Any:
    reader = SelectionReader(_abs_path(col), col.name, sel.size, sel._starts, sel._stops,
                             col._row_shape, col.dtype)
    ch = (rows,) + tuple((k,) for k in col._row_shape)
    return _from_reader(reader, ch, "selection", col.name, _token(reader, ch))

