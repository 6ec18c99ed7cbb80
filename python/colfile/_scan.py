"""How a query reads: chunk statistics turned into decisions per cell of
the grid over the referenced columns (:func:`decide`, :class:`Plan`), and
the scan that reads only the cells the statistics cannot decide
(:func:`scan`), with what it read and skipped (:class:`Report`).  Shared by
:mod:`colfile.query` and :mod:`colfile.histograms`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field as dc_field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _fetch, chunkindex
from ._arith import clamp_to_int, interval_verdicts
from ._core.integrity import CHUNK_STATS_DTYPE
from ._expr import ALL, NONE, OPS, SOME, Field, Predicate
from ._html import human_size

if TYPE_CHECKING:
    from .column import Column

__all__ = ["decide", "Plan", "Report", "new_report", "scan"]


# ---------------------------------------------------------------------------
# chunk statistics -> per-cell decisions

_STATS_FIELDS = ("valid", "ordered", "count", "nan_count", "min", "max")


class _OnColumn:
    """A leaf as the chunk index of one column sees it: its fields on that
    column; ``cross`` when it also reads other columns (then the index
    cannot decide it alone, and gives single chunks)."""

    def __init__(self, leaf: Predicate, col: Column) -> None:
        self.leaf = leaf
        self.fields = [f for f in leaf.fields if f.column is col]
        self.cross = len(self.fields) != len(leaf.fields)


def _undecided(on: _OnColumn, stats: dict[int, np.ndarray]) -> np.ndarray:
    """Where the statistics records (per component) cannot decide a leaf
    (SOME)."""
    if on.cross:
        return np.ones(len(next(iter(stats.values()))), bool)

    def records(f: Field) -> tuple[np.ndarray, np.ndarray]:
        st = stats[f.component or 0]
        return st, st["rows"]
    return on.leaf._decide(records) == SOME  # type: ignore[attr-defined, no-any-return]


def _chunk_table(col: Column, comps: Sequence[int], leaves: Sequence[_OnColumn] = ()
                 ) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]]:
    """``first_row``, ``rows`` and, per component, the statistics of every
    chunk of ``col``.  A column with a chunk index gives groups of chunks
    where the comparisons ``leaves`` on it are decided for the whole group
    (:func:`colfile.chunkindex.plan_table`: the text statistics are not
    read).  A library without statistics, or a chunk list that
    does not tile the rows, gives one chunk per non-empty blob with no valid
    statistics (everything is read: slower, still exact)."""
    size = col.size
    comps = list(comps) or [0]
    indexed = chunkindex.plan_table(col, comps, leaves, _undecided) if size else None
    if indexed is not None:
        return indexed
    try:
        full = col.chunk_stats()
    except AttributeError:  # a libcolfile without statistics
        full = None
    if full is not None:
        if full.ndim == 1:
            full = full[:, None]
        first = full["first_row"][:, 0] if len(full) else np.zeros(0, np.int64)
        rows = full["rows"][:, 0] if len(full) else np.zeros(0, np.int64)
        tiles = (len(first) > 0 and first[0] == 0 and np.all(rows > 0)
                 and np.all(first[1:] == first[:-1] + rows[:-1])
                 and int(first[-1] + rows[-1]) == size)
        if tiles or (size == 0 and len(first) == 0):
            return (first.astype(np.int64), rows.astype(np.int64),
                    {j: full[:, j] for j in comps})
    blob = np.asarray([r for r in col.blob_rows if r > 0], np.int64)
    if int(blob.sum()) != size:
        blob = np.asarray([size] if size else [], np.int64)
    first = np.concatenate([[0], np.cumsum(blob)[:-1]]).astype(np.int64) if len(blob) else \
        np.zeros(0, np.int64)
    empty = np.zeros(len(blob), CHUNK_STATS_DTYPE)
    return first, blob, {j: empty for j in comps}


def _bounds_in_dtype(lo: np.ndarray, hi: np.ndarray, dtype: np.dtype[Any]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The statistics' min and max (doubles, rounded outward) as values of
    the column's dtype that still bound the data: ``(lo, hi, ok)``; ``ok``
    is False where that is impossible (non-finite integer bounds, float
    bounds that are not values of the dtype)."""
    kind = dtype.kind
    if kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            lo_d = lo.astype(dtype)
            hi_d = hi.astype(dtype)
            ok = (lo_d.astype(np.float64) == lo) & (hi_d.astype(np.float64) == hi)
        return lo_d, hi_d, ok & ~np.isnan(lo) & ~np.isnan(hi)
    ok = np.isfinite(lo) & np.isfinite(hi)
    lo_f = np.floor(np.where(ok, lo, 0.0))
    hi_f = np.ceil(np.where(ok, hi, 0.0))
    if kind == "b":
        lo_d = np.clip(lo_f, 0, 1).astype(bool)
        hi_d = np.clip(hi_f, 0, 1).astype(bool)
        return lo_d, hi_d, ok
    lo_d, hi_d = clamp_to_int(lo_f, hi_f, dtype)
    return lo_d, hi_d, ok


def _is_nan(value: Any) -> bool:
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def decide(op: str, value: Any, dtype: Any, stats: np.ndarray,
           rows: np.ndarray | None = None) -> np.ndarray:
    """Decide ``x OP value`` per chunk from statistics: NONE (0), SOME (1)
    or ALL (2) for every record of ``stats``.

    Parameters
    ----------
    op : str
        ``<``, ``<=``, ``>``, ``>=``, ``==`` or ``!=``.
    value
        The constant (as in the predicate).
    dtype
        The column's dtype.
    stats : numpy.ndarray
        Records with the fields ``valid``, ``ordered``, ``count``,
        ``nan_count``, ``min``, ``max`` (as :meth:`Column.chunk_stats
        <colfile.Column.chunk_stats>` gives them).
    rows : numpy.ndarray, optional
        The rows of each chunk: statistics whose count differs are not used.

    Returns
    -------
    numpy.ndarray of int8

    Notes
    -----
    A chunk's values x satisfy ``lo <= x <= hi`` for min and max (rounded
    outward) converted to bounds in the column's dtype.  numpy compares an
    array with a scalar by converting both to a common type with monotone
    casts, so ``x < c`` holds for all x if it holds for ``hi``, and for none
    if it fails for ``lo``; ``==`` is ALL if it holds at both bounds.  The
    decision is made by the same numpy comparison on the bounds as the
    exact evaluation makes on the data, so the two always agree -- integers
    beyond 2**53, constants beyond the dtype's range and narrow floats
    included.  NaN values (never counted in min/max) compare False, except
    with ``!=``.  Invalid statistics, unordered kinds, inconsistent records
    give SOME.

    Examples
    --------
    >>> from colfile.column import CHUNK_STATS_DTYPE
    >>> st = np.zeros(4, CHUNK_STATS_DTYPE)
    >>> st["valid"] = st["ordered"] = True
    >>> st["count"] = 10
    >>> st["nan_count"] = [0, 0, 3, 0]
    >>> st["min"], st["max"] = [0, 5, 5, 1], [4, 9, 9, 2]
    >>> st["valid"][3] = False
    >>> decide("<", 5, "f8", st)   # NONE, NONE... per chunk
    array([2, 0, 0, 1], dtype=int8)
    >>> decide("!=", 1e300, "f8", st)
    array([2, 2, 2, 1], dtype=int8)
    """
    dtype = np.dtype(dtype)
    n = len(stats)
    if op not in OPS:
        raise ValueError(f"unknown comparison {op!r}")
    if _is_nan(value):  # NaN compares False, and != True, whatever x is
        return np.full(n, ALL if op == "!=" else NONE, np.int8)
    count = stats["count"].astype(np.int64)
    nan = stats["nan_count"].astype(np.int64)
    ok = stats["valid"].astype(bool) & stats["ordered"].astype(bool)
    ok &= (nan >= 0) & (nan <= count) & (count >= 0)
    if rows is not None:
        ok &= count == rows
    if dtype.kind != "f":
        ok &= nan == 0
    nonnan = count - nan
    allnan = ok & (nonnan == 0)
    lo = stats["min"].astype(np.float64)
    hi = stats["max"].astype(np.float64)
    lo_d, hi_d, bounded = _bounds_in_dtype(lo, hi, dtype)
    ranged = ok & ~allnan & bounded
    ranged &= lo_d <= hi_d
    # a constant beyond the range of a narrow float dtype overflows to inf
    # in numpy's cast, as it would on the full array
    all_, none = interval_verdicts(op, lo_d, hi_d, value, value, nan > 0)
    out = np.full(n, SOME, np.int8)
    out[ranged & none] = NONE
    out[ranged & all_ & ~none] = ALL
    out[allnan] = ALL if op == "!=" else NONE
    return out


# ---------------------------------------------------------------------------
# the plan: grid cells and their states


class Plan:
    """The grid of cells over the rows of the referenced columns, with the
    state of every leaf comparison and of the predicate in every cell."""

    def __init__(self, predicate: Predicate | None, fields: Sequence[Field],
                 arrays: dict[str, np.ndarray] | None = None) -> None:
        self.predicate = predicate
        self.leaves: list[Predicate] = predicate._leaves() if predicate is not None else []
        self.fields = list(fields)
        cols: dict[int, Column] = {}
        for f in [f for leaf in self.leaves for f in leaf.fields] + self.fields:
            cols.setdefault(id(f.column), f.column)
        if not cols:
            raise ValueError("nothing to evaluate: no column referenced")
        self.columns = cols
        sizes = {c.name: c.size for c in cols.values()}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"the columns of a query must have equal lengths: {sizes}")
        self.size = next(iter(sizes.values()))
        self.rowbytes = {k: c.itemsize * max(c.nmemb, 1) for k, c in cols.items()}
        self.tables: dict[tuple[int, int], np.ndarray] = {}
        if arrays is None:
            arrays = self._build()
        self.bounds = arrays["bounds"]
        self.state = arrays["state"]
        self.leaf_state = arrays["leaf_state"]
        self.field_stats = arrays.get("field_stats")

    @property
    def ncells(self) -> int:
        return len(self.bounds) - 1

    def arrays(self) -> dict[str, Any]:
        return {"bounds": self.bounds, "state": self.state, "leaf_state": self.leaf_state,
                "field_stats": self.field_stats}

    def _build(self) -> dict[str, Any]:
        comps: dict[int, set[int]] = {k: set() for k in self.columns}
        for f in [f for leaf in self.leaves for f in leaf.fields] + self.fields:
            comps[id(f.column)].add(f.component or 0)
        firsts = []
        for k, col in self.columns.items():
            on = [_OnColumn(leaf, col) for leaf in self.leaves]
            first, rows, stats = _chunk_table(col, sorted(comps[k]), [o for o in on if o.fields])
            firsts.append(first)
            for j, st in stats.items():
                self.tables[(k, j)] = st
            self.tables[(k, -1)] = np.stack([first, rows]) if len(first) else \
                np.zeros((2, 0), np.int64)
        if self.size == 0:
            bounds = np.zeros(1, np.int64)
        else:
            bounds = np.unique(np.concatenate(firsts + [np.asarray([0, self.size])]))
        starts = bounds[:-1]
        nleaves = len(self.leaves)
        leaf_state = np.empty((nleaves, len(starts)), np.int8)
        for i, leaf in enumerate(self.leaves):
            leaf_state[i] = self._cell_stats_decide(leaf, starts)
        if self.predicate is None:
            state = np.full(len(starts), ALL, np.int8)
        else:
            states = {id(leaf): leaf_state[i] for i, leaf in enumerate(self.leaves)}
            state = np.asarray(self.predicate._states(states), np.int8)
        # per histogrammed field: the statistics of the chunks (for range=None)
        field_stats = [self._field_chunks(f) for f in self.fields]
        return {"bounds": bounds.astype(np.int64), "state": state, "leaf_state": leaf_state,
                "field_stats": field_stats}

    def _chunks_of(self, f: Field, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = id(f.column)
        first_rows = self.tables[(k, -1)]
        idx = np.searchsorted(first_rows[0], starts, side="right") - 1
        return idx, first_rows[1]

    def _cell_stats_decide(self, leaf: Predicate, starts: np.ndarray) -> np.ndarray:
        def records(f: Field) -> tuple[np.ndarray, np.ndarray]:
            idx, rows = self._chunks_of(f, starts)
            st = self.tables[(id(f.column), f.component or 0)]
            return st[idx], rows[idx]
        return np.asarray(leaf._decide(records), np.int8)  # type: ignore[attr-defined]

    def _field_chunks(self, f: Field) -> np.ndarray:
        return self.tables[(id(f.column), f.component or 0)]


# ---------------------------------------------------------------------------
# scanning the cells


@dataclass
class Report:
    """What a query or histogram read and skipped.

    Attributes
    ----------
    chunks : int
        Cells of the grid (the chunks of the referenced columns, or their
        sub-chunks where the chunk index's fine level refined them, cut
        where any of them has a boundary).
    skipped : int
        Cells the statistics excluded (NONE): never read.
    all_match : int
        Cells the statistics included whole (ALL): the predicate's columns
        were not read there.
    scanned : int
        Cells read and evaluated (SOME).
    rows : int
        Rows covered by the cells.
    selected : int or None
        Rows that matched (None when not yet known, as for a dask graph).
    bytes_read : int
        Bytes of column data read.
    bytes_total : int
        Bytes of all the columns referenced (predicate, histogrammed
        fields, weights).
    columns : tuple of str
        The columns referenced.
    """

    chunks: int = 0
    skipped: int = 0
    all_match: int = 0
    scanned: int = 0
    rows: int = 0
    selected: int | None = 0
    bytes_read: int = 0
    bytes_total: int = 0
    columns: tuple[str, ...] = dc_field(default_factory=tuple)
    kind: str = "query"

    def merged(self, other: Report) -> Report:
        """Counts of two disjoint parts of one evaluation (MPI ranks)."""
        sel = None if self.selected is None or other.selected is None else \
            self.selected + other.selected
        return Report(self.chunks + other.chunks, self.skipped + other.skipped,
                      self.all_match + other.all_match, self.scanned + other.scanned,
                      self.rows + other.rows, sel, self.bytes_read + other.bytes_read,
                      max(self.bytes_total, other.bytes_total), self.columns, self.kind)

    def __str__(self) -> str:
        pct = f" ({100 * self.bytes_read / self.bytes_total:.0f}%)" if self.bytes_total else ""
        sel = "" if self.selected is None else f"; {self.selected} of {self.rows} rows selected"
        return (f"{self.kind} over {', '.join(self.columns)}: {self.chunks} chunks, "
                f"{self.skipped} skipped (no match), {self.all_match} taken whole (all match), "
                f"{self.scanned} scanned; read {human_size(self.bytes_read)} of "
                f"{human_size(self.bytes_total)}{pct}{sel}")


def new_report(plan: Plan, kind: str) -> Report:
    names = tuple(c.name for c in plan.columns.values())
    total = sum(plan.size * rb for rb in plan.rowbytes.values())
    return Report(bytes_total=total, columns=names, kind=kind)


def _expand(values: np.ndarray, bounds: np.ndarray, k0: int, k1: int, a: int,
            b: int) -> np.ndarray:
    """Per-cell values of cells k0..k1-1, repeated over their rows within
    [a, b)."""
    lo = np.maximum(bounds[k0:k1], a)
    hi = np.minimum(bounds[k0 + 1:k1 + 1], b)
    return np.repeat(values[k0:k1], np.maximum(hi - lo, 0))


def scan(plan: Plan, k_lo: int, k_hi: int, want: Sequence[Field], report: Report,
          visit: Callable[[int, int, np.ndarray | None, dict[int, np.ndarray]], None] | None,
          piece_bytes: int) -> None:
    """Visit the rows of cells ``k_lo..k_hi-1`` that may match.

    For every run of cells that are not NONE, in pieces of at most
    ``piece_bytes`` of column data, ``visit(a, b, mask, blocks)`` gets the
    rows ``[a, b)``, ``mask`` (None: every row matches; else a bool array)
    and ``blocks``: the rows read, by ``id(column)`` -- always the columns of
    ``want``, plus those needed to decide undecided comparisons.  With
    ``visit`` None nothing is read (the report is filled in all the same:
    what is read depends only on the plan).  The kernel is told which byte
    ranges the next pieces read before they are read
    (:class:`colfile._fetch.Ahead`): it fetches those, gaps under
    :data:`colfile._fetch.GAP_BYTES` filled, while this piece is filtered,
    and nothing past them.
    """
    pb = int(piece_bytes)
    state = plan.state
    bounds = plan.bounds
    col_keys = list(plan.columns)
    col_index = {k: i for i, k in enumerate(col_keys)}
    want_bits = 0
    for f in want:
        want_bits |= 1 << col_index[id(f.column)]
    ks = slice(k_lo, k_hi)
    st = state[ks]
    report.chunks += k_hi - k_lo
    report.skipped += int(np.count_nonzero(st == NONE))
    report.all_match += int(np.count_nonzero(st == ALL))
    report.scanned += int(np.count_nonzero(st == SOME))
    report.rows += int(bounds[k_hi] - bounds[k_lo]) if k_hi > k_lo else 0
    if k_hi <= k_lo:
        return
    # which columns each cell needs: those of undecided leaves (SOME cells)
    bits = np.zeros(k_hi - k_lo, dtype=object if len(col_keys) > 62 else np.int64)
    for i, leaf in enumerate(plan.leaves):
        undecided = (plan.leaf_state[i, ks] == SOME) & (st == SOME)
        bit = 0
        for f in leaf.fields:
            bit |= 1 << col_index[id(f.column)]
        bits[undecided] = bits[undecided] | bit
    bits = bits | want_bits
    key_state = st.astype(np.int64)
    # runs of consecutive cells with the same (state, columns), NONE excluded
    change = np.ones(k_hi - k_lo, bool)
    if k_hi - k_lo > 1:
        change[1:] = (key_state[1:] != key_state[:-1]) | (bits[1:] != bits[:-1])
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], k_hi - k_lo)
    # the runs to read, in order: (state, k0, k1, columns, rows per piece)
    runs: list[tuple[int, int, int, list[int], int]] = []
    for r0, r1 in zip(starts.tolist(), ends.tolist()):
        s = int(key_state[r0])
        if s == NONE:
            continue
        k0, k1 = k_lo + r0, k_lo + r1
        need = int(bits[r0])
        read_keys = [k for k in col_keys if need >> col_index[k] & 1]
        rowbytes = sum(plan.rowbytes[k] for k in read_keys)
        report.bytes_read += int(bounds[k1] - bounds[k0]) * rowbytes
        runs.append((s, k0, k1, read_keys, max(1, pb // max(rowbytes, 1)) if read_keys else 0))
    if visit is None or not runs:
        return

    def pieces() -> Iterator[tuple[int, int, int, list[int], int, int]]:
        """(state, k0, k1, columns, a, b): made as they are read, never
        listed (a run may hold more pieces than memory)."""
        for s, k0, k1, read_keys, step in runs:
            a_run, b_run = int(bounds[k0]), int(bounds[k1])
            for a in range(a_run, b_run, step or max(1, b_run - a_run)):
                yield s, k0, k1, read_keys, a, min(b_run, a + step) if step else b_run

    leaf_ids = [id(leaf) for leaf in plan.leaves]
    leaf_all = plan.leaf_state == ALL
    # what the pieces read, announced to the kernel ahead of the reads
    reads = ((plan.columns[k], a, b) for _, _, _, keys, a, b in pieces() for k in keys)
    with _fetch.Ahead(reads) as ahead:
        r = 0
        for s, k0, k1, read_keys, a, b in pieces():
            blocks = {}
            for k in read_keys:
                ahead.at(r)
                r += 1
                blocks[k] = plan.columns[k].read(a, b)
            if s == ALL:
                visit(a, b, None, blocks)
                continue
            # SOME: exact where the column was read, the cell's state elsewhere
            vals: dict[int, np.ndarray] = {}
            c0 = k0 + int(np.searchsorted(bounds[k0:k1 + 1], a, side="right")) - 1
            c1 = k0 + int(np.searchsorted(bounds[k0:k1 + 1], b, side="left"))
            for i, leaf in enumerate(plan.leaves):
                if all(id(f.column) in blocks for f in leaf.fields):
                    vals[leaf_ids[i]] = leaf._evaluate(blocks)  # type: ignore[attr-defined]
                else:
                    vals[leaf_ids[i]] = _expand(leaf_all[i], bounds, c0, c1, a, b)
            assert plan.predicate is not None
            mask = np.asarray(plan.predicate._eval(vals), bool)
            visit(a, b, mask, blocks)
