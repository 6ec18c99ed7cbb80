"""The binary chunk index of large columns (``colfile-index-v1``,
docs/format.md 8.6), as query planning uses it.

Level 0 of the index holds one record per chunk (the statistics of
:meth:`Column.chunk_stats <colfile.Column.chunk_stats>`); each level above
holds one record per group of ``fanout`` records below it, with their
merged statistics, up to a top level of at most ``fanout`` records.  A
planner decides a comparison on the top records first and reads the
records under one only where the statistics cannot decide (the chunk index
is read in verified pages with ``pread``, never whole): planning a query
over 10**6 chunks reads kilobytes when the data are clustered, and the
statistics text is not parsed at all.

Below level 0, ``f4`` and ``f8`` columns indexed by ``colfile index``
(run serially; writes never compute it) have a *fine level*
(:data:`FINE_LEVEL`): the minimum and maximum of every sub-chunk of one
4 KiB page per component, a fixed number per chunk.  A planner reads the
fine records of the chunks level 0 cannot decide, and reads only the
sub-chunks they cannot decide either.

Columns without a current index (small columns, Files written by bigfile
or by an older colfile) are planned from :meth:`Column.chunk_stats
<colfile.Column.chunk_stats>`, as before; a damaged index gives a warning
and the same fallback, never a wrong answer.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> from colfile import chunkindex
>>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
>>> c = f.create("x", data=np.arange(100000.0), chunk_rows=16)
>>> f.flush()
>>> info = chunkindex.info(c)
>>> info["state"], info["levels"], info["chunks"]
('current', 2, 6250)
>>> top = chunkindex.nodes(c, 1, 0, chunkindex.count(c, 1))
>>> len(top), int(top["rows"].sum()), float(top["max"].max())
(25, 100000, 99999.0)
>>> f.close()
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._core import chunkindex as _ci
from ._core.integrity import CHUNK_STATS_DTYPE
from .errors import Error

if TYPE_CHECKING:
    import colfile

#: the level number of the fine level (min and max per sub-chunk)
FINE_LEVEL = -1

__all__ = ["FINE_LEVEL", "info", "count", "nodes", "bytes_read", "chunk_crc32c", "problem", "plan_table", "IndexWarning"]


class IndexWarning(UserWarning):
    """A column's chunk index is damaged: planning falls back to the text
    statistics (slower, still exact); ``colfile index`` rebuilds it."""


def info(col: colfile.Column) -> dict[str, Any]:
    """What the column's chunk index is (``cf_column_index_info``).

    Returns
    -------
    dict
        ``state`` (``"absent"``, ``"current"``, ``"stale"`` or
        ``"damaged"``), ``levels``, ``fanout``, ``chunks``, ``chunk_rows``
        (0 unless current) and ``problem`` (what is wrong with a damaged
        one, naming the file).
    """
    with col._lock:
        return _ci.info(col._handle())


def count(col: colfile.Column, level: int) -> int:
    """Records of ``level`` (0: chunks; :data:`FINE_LEVEL`: sub-chunks, a
    fixed number per chunk) of a current index, else 0."""
    with col._lock:
        return _ci.count(col._handle(), level)


def nodes(col: colfile.Column, level: int, first: int, n: int, component: int = 0) -> np.ndarray:
    """Records ``first`` .. ``first + n - 1`` of ``level`` for one component,
    as records of :data:`colfile.column.CHUNK_STATS_DTYPE` (``first_row``
    and ``rows``: the rows below each record; ``valid`` False where a chunk
    below has unknown statistics).  Reads only the pages holding them.

    Raises
    ------
    FormatError
        A page fails its CRC32C or the file is cut short.
    """
    with col._lock:
        raw = _ci.nodes(col._handle(), level, first, n, component)
    out = np.empty(int(n), CHUNK_STATS_DTYPE)
    for name in CHUNK_STATS_DTYPE.names or ():
        out[name] = raw[name]
    return out


def bytes_read(col: colfile.Column) -> int:
    """Bytes of the chunk index this handle has read so far."""
    with col._lock:
        return _ci.bytes_read(col._handle())


def chunk_crc32c(col: colfile.Column, k: int) -> int | None:
    """The CRC32C of chunk ``k``'s bytes, when known (the index or this
    handle's writes), else None."""
    with col._lock:
        return _ci.chunk_crc32c(col._handle(), k)


def problem(col: colfile.Column) -> str | None:
    """What is wrong with the column's chunk index, reading all of it (every
    page checked against its CRC32C), or None when it is absent, stale
    (another version's: unused, not damage) or sound."""
    meta = info(col)
    if meta["state"] == "damaged":
        return str(meta["problem"])
    if meta["state"] != "current":
        return None
    try:
        for level in [*range(meta["levels"]), FINE_LEVEL]:
            n = count(col, level)
            for first in range(0, n, 1 << 16):
                nodes(col, level, first, min(1 << 16, n - first))
    except Error as exc:
        return str(exc)
    return None


def expected_fine_rows(dtype: Any, chunk_rows: int) -> int:
    """Rows per sub-chunk of the fine level ``colfile index`` writes for a column of
    ``dtype`` with ``chunk_rows`` rows per chunk (docs/format.md 8.6): a
    power of two holding at least 4 KiB per component and at least
    ``chunk_rows / 1024``, for native ``f4`` and ``f8`` columns; 0 where
    colfile writes none (other dtypes, chunks of one sub-chunk)."""
    dt = np.dtype(dtype)
    dt = dt.base if dt.shape else dt
    if dt.kind != "f" or dt.itemsize not in (4, 8) or chunk_rows < 2:
        return 0
    if dt.itemsize > 1 and not dt.isnative:
        return 0
    r = 1
    while r * dt.itemsize < 4096:
        r <<= 1
    while r * 1024 < chunk_rows:
        r <<= 1
    return r if r < chunk_rows else 0


def _runs(idx: np.ndarray) -> list[tuple[int, int]]:
    """Sorted indices as (first, n) runs of consecutive ones."""
    if len(idx) == 0:
        return []
    cut = np.flatnonzero(np.diff(idx) != 1) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [len(idx)]])
    return [(int(idx[s]), int(e - s)) for s, e in zip(starts, ends)]


def plan_table(col: colfile.Column, comps: Sequence[int], leaves: Sequence[Any],
               undecided: Callable[[Any, np.ndarray], np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]] | None:
    """``first_row``, ``rows`` and, per component, statistics records that
    tile the column's rows, from the chunk index: whole groups of chunks
    where every comparison of ``leaves`` on this column is decided for the
    group (NONE or ALL), single chunks where one is not.  None when the
    column has no current index (plan from the chunk statistics instead);
    a damaged index warns (:class:`IndexWarning`) and gives None.

    ``leaves`` are the comparisons on this column (objects with the
    ``fields`` they read here); ``undecided(leaf, records)`` says, per
    record, where the statistics (by component) cannot decide the
    comparison.  Without leaves the
    top level's records are returned (a histogram's range needs no more).
    """
    if not _ci.available() or getattr(col, "kind", "data") != "data":
        return None
    try:
        meta = info(col)
    except Error:  # no index information: plan as before
        return None
    if meta["state"] == "damaged":
        warnings.warn(f"{meta['problem']}; planning from the text statistics", IndexWarning, stacklevel=4)
        return None
    if meta["state"] != "current" or meta["chunks"] == 0:
        return None
    comps = sorted(set(list(comps) + [f.component or 0 for leaf in leaves for f in leaf.fields])) or [0]
    fanout = meta["fanout"]
    level = meta["levels"] - 1
    fine_m = count(col, FINE_LEVEL) // meta["chunks"] if leaves else 0
    todo = np.arange(count(col, level), dtype=np.int64)
    done_first: list[np.ndarray] = []
    done_rows: list[np.ndarray] = []
    done_stats: dict[int, list[np.ndarray]] = {j: [] for j in comps}
    try:
        while len(todo):
            stats = {j: np.concatenate([nodes(col, level, a, n, j) for a, n in _runs(todo)]) for j in comps}
            some = np.zeros(len(todo), bool)
            if level > 0:
                for leaf in leaves:
                    some |= undecided(leaf, stats)
            elif fine_m:
                # leaves that also read other columns are decided per cell later
                for leaf in leaves:
                    if not getattr(leaf, "cross", False):
                        some |= undecided(leaf, stats)
            if level == 0 and some.any():
                # chunks the levels cannot decide: their sub-chunks instead,
                # where the fine level knows them all
                at = np.flatnonzero(some)
                ok, sub = _refine(col, todo[at], comps, fine_m)
                some[at[~ok]] = False
                if ok.any():
                    done_first.append(sub[comps[0]]["first_row"])
                    done_rows.append(sub[comps[0]]["rows"])
                    for j in comps:
                        done_stats[j].append(sub[j])
            keep = ~some
            first = stats[comps[0]]["first_row"]
            done_first.append(first[keep])
            done_rows.append(stats[comps[0]]["rows"][keep])
            for j in comps:
                done_stats[j].append(stats[j][keep])
            if level == 0 or not some.any():
                break
            below = todo[some]
            level -= 1
            n_below = count(col, level)
            kids = (below[:, None] * fanout + np.arange(fanout)[None, :]).ravel()
            todo = kids[kids < n_below]
    except Error as exc:  # a page that fails its CRC32C: the index is damaged
        warnings.warn(f"{exc}; planning from the text statistics", IndexWarning, stacklevel=4)
        return None
    first = np.concatenate(done_first)
    order = np.argsort(first, kind="stable")
    rows = np.concatenate(done_rows)[order]
    tables = {j: np.concatenate(done_stats[j])[order] for j in comps}
    return first[order].astype(np.int64), rows.astype(np.int64), tables


def _refine(col: colfile.Column, chunks: np.ndarray, comps: Sequence[int], m: int
            ) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The fine level's records of ``chunks`` (per component, the
    non-empty sub-chunks of the chunks it knows whole), and per chunk
    whether it does: a chunk with NaNs, or whose block is unknown, keeps
    its own record.  A block that fails its CRC32C warns
    (:class:`IndexWarning`) and refines nothing: the chunks are still
    planned, from their level 0 records."""
    ok = np.zeros(len(chunks), bool)
    recs: dict[int, list[np.ndarray]] = {j: [] for j in comps}
    try:
        for i, k in enumerate(chunks.tolist()):
            # component by component, one chunk at a time: its block is read once
            got = {j: nodes(col, FINE_LEVEL, k * m, m, j) for j in comps}
            used = got[comps[0]]["rows"] > 0
            if not all(bool(got[j]["valid"][used].all()) for j in comps):
                continue
            ok[i] = True
            for j in comps:
                recs[j].append(got[j][used])
    except Error as exc:
        warnings.warn(f"{exc}; planning from the chunk records", IndexWarning, stacklevel=5)
        return np.zeros(len(chunks), bool), {j: np.zeros(0, CHUNK_STATS_DTYPE) for j in comps}
    return ok, {j: np.concatenate(recs[j]) if recs[j] else np.zeros(0, CHUNK_STATS_DTYPE) for j in comps}
