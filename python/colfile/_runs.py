"""Runs of rows: sorted, disjoint ``[start, stop)`` ranges, as a query's
selection holds them, and how they are read."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _fetch, _indexing

__all__ = ["RUN_BYTES", "UNIT_BYTES", "rows_of", "slice_runs", "units", "read"]

#: Runs of selected rows of at least this many bytes are read by
#: :meth:`Selection.read <colfile.Selection.read>` as contiguous ranges;
#: shorter ones go through one scattered read (``cf_column_read_rows``) per
#: unit (:func:`units`).
RUN_BYTES = 64 << 10


def rows_of(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The rows of the runs, sorted (int64).

    >>> rows_of(np.array([1, 5]), np.array([3, 6]))
    array([1, 2, 5])
    """
    lengths = stops - starts
    n = int(lengths.sum())
    if n == 0:
        return np.zeros(0, np.int64)
    # each run: start, start+1, ...; built without a Python loop
    step = np.ones(n, np.int64)
    heads = np.cumsum(lengths)[:-1]
    step[0] = starts[0]
    if len(heads):
        step[heads] = starts[1:] - stops[:-1] + 1
    return np.cumsum(step)


def slice_runs(starts: np.ndarray, stops: np.ndarray, lo: int, hi: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """The runs of the selected rows number ``lo..hi-1`` (counting selected
    rows from 0).

    >>> slice_runs(np.array([1, 5, 9]), np.array([3, 8, 10]), 1, 4)
    (array([2, 5]), array([3, 7]))
    """
    lengths = stops - starts
    ends = np.cumsum(lengths)
    begins = ends - lengths
    keep = (ends > lo) & (begins < hi)
    s = starts[keep] + np.maximum(lo - begins[keep], 0)
    e = stops[keep] - np.maximum(ends[keep] - hi, 0)
    return s.astype(np.int64), e.astype(np.int64)


#: :func:`read` reads in units spanning at most this many bytes of the
#: column (a long run may exceed it): one scattered read per unit for its
#: short runs, and the read-ahead window (:mod:`colfile._fetch`) moves unit
#: by unit.
UNIT_BYTES = 16 << 20


def units(starts: np.ndarray, stops: np.ndarray, rowbytes: int) -> np.ndarray:
    """Where the runs are cut into units of :func:`read`: the index of the
    first run of each unit.  A unit ends at a gap of at least
    :data:`colfile._fetch.GAP_BYTES` (what is fetched stops there) and where
    the runs cross a multiple of :data:`UNIT_BYTES`.

    >>> units(np.array([0, 10, 10**6]), np.array([5, 20, 10**6 + 1]), 8)
    array([0, 2])
    """
    if not len(starts):
        return np.zeros(0, np.int64)
    gap_rows = -(-_fetch.GAP_BYTES // rowbytes)
    unit_rows = max(1, UNIT_BYTES // rowbytes)
    cut = np.ones(len(starts), bool)
    cut[1:] = (starts[1:] - stops[:-1] >= gap_rows) | \
        (starts[1:] // unit_rows != starts[:-1] // unit_rows)
    return np.flatnonzero(cut)


def read(col: Any, starts: np.ndarray, stops: np.ndarray, out: np.ndarray) -> None:
    """Read the rows of the runs of column ``col`` into ``out`` (in order),
    unit by unit (:func:`units`), each announced to the kernel before it
    is read (:class:`colfile._fetch.Ahead`; ranges of
    :data:`colfile._fetch.STREAM_BYTES` or more are left to its
    read-ahead): in a unit, long runs as contiguous reads, the others with
    one scattered read."""
    if not len(starts):
        return
    rowbytes = col.itemsize * max(col.nmemb, 1)
    lengths = stops - starts
    long_ = lengths * rowbytes >= RUN_BYTES
    pos = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    first = units(starts, stops, rowbytes)
    last = np.append(first[1:], len(starts))
    spans = [(col, int(starts[u]), int(stops[v - 1])) for u, v in zip(first.tolist(), last.tolist())]
    with _fetch.Ahead(spans) as ahead:
        for i, (u, v) in enumerate(zip(first.tolist(), last.tolist())):
            ahead.at(i)
            _read_unit(col, starts[u:v], stops[u:v], pos[u:v], lengths[u:v], long_[u:v], out)


def _read_unit(col: Any, starts: np.ndarray, stops: np.ndarray, pos: np.ndarray,
               lengths: np.ndarray, long_: np.ndarray, out: np.ndarray) -> None:
    for s, e, p in zip(starts[long_].tolist(), stops[long_].tolist(), pos[long_].tolist()):
        col.read(s, e, out=out[p:p + e - s])
    if long_.all():
        return
    short = ~long_
    rows = rows_of(starts[short], stops[short])
    at = rows - np.repeat(starts[short] - pos[short], lengths[short])
    tmp = np.empty((len(rows),) + out.shape[1:], out.dtype)
    sel = _indexing.Rows.from_rows(rows)
    sel.is_sorted = True
    _indexing.read(sel, col, tmp)
    out[at] = tmp
