"""Queries that skip chunks: predicates over columns, evaluated with the
per-chunk statistics first and the data only where those cannot decide.

Every write of libcolfile records, per chunk of rows and vector component,
the count of values, the NaN count, min and max (``cf_column_chunk_stats``).
A query uses them as an index:

* **Fields and predicates.**  ``col.field(j)`` (or ``ds.field(name, j)``)
  is a lazy :class:`Field`; arithmetic on fields gives an :class:`Expr`
  (``x**2 + y**2``, ``np.log10(m)``, ``ID % 2``, with numpy's semantics);
  comparing fields or expressions with numbers or with each other gives a
  :class:`Predicate`, as does :func:`isin`; predicates combine with ``&``,
  ``|`` and ``~``.  The same conditions can be written as a string in a
  small, safe expression language (:func:`parse`, a parser of its own):
  ``"(Position[0] > 100) & (ID % 2 == 0)"``.
* **The grid.**  The rows are cut at every chunk boundary of every column
  the predicate references (columns may have different blob layouts and
  chunk sizes).  In each cell of that grid each comparison is decided from
  the statistics of the chunk covering it: NONE (no row can match), ALL
  (every row matches) or SOME; the predicate combines these with
  three-valued logic (AND is NONE if any part is NONE, ALL if all are ALL;
  OR the dual; NOT swaps NONE and ALL).
* **Evaluation.**  NONE cells are never read; ALL cells are selected
  without being read; SOME cells are read -- only the columns whose
  comparisons are undecided there, adjacent cells coalesced into one read,
  in pieces of at most :data:`PIECE_BYTES` -- and evaluated exactly with
  numpy.  The byte ranges of the next pieces are announced to the kernel
  before they are read (:mod:`colfile._fetch`): it fetches them while a
  piece is filtered, and nothing past them.

Results are exact: identical to evaluating the same comparisons with numpy on
the full arrays as stored (``col[:] < 3``), NaNs included (NaN compares
False, except with ``!=``), whatever the statistics say.  Statistics that
are unknown or stale (``valid`` 0: written by another tool, the header
rewritten since they were recorded, ``colfile-v1`` damaged, or an in-place
update in progress or interrupted; ``Column.ext_state``) are never used:
those cells are read.  A decision from
the statistics relies only on min and max bounding the chunk's values (they
are rounded outward, so integers beyond 2**53 are bounded too) and on the
monotonicity of numpy's comparison: the bounds, taken in the column's dtype,
are compared with numpy exactly as the data would be.

Through arithmetic the bounds are carried by interval arithmetic
(:mod:`colfile._arith`): ``x**2 + y**2`` over a chunk where x lies in
[3, 5] and y in [-1, 2] lies in [9, 29], so ``x**2 + y**2 < 9`` skips it;
monotone functions map bounds, NaN counts say where NaN may occur.  Every
step rounds outward (float bounds widened by ulps, then rounded to the dtype
numpy computes in).  Where no sound bound can be derived -- an integer
result that could leave its dtype (numpy wraps), a division by an interval
holding 0, operations that can make NaN from infinities, an exponent that
is a column, unknown statistics -- the cell is read: results stay exact.

What a query skipped is in its :class:`Report`.  Histograms over the same
machinery are in :mod:`colfile.histograms`.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
>>> ids = f.create("ID", data=np.arange(1000), chunk_rows=100)
>>> mass = f.create("Mass", data=np.linspace(0, 1, 1000), chunk_rows=250)
>>> f.flush()
>>> ds = colfile.Dataset(f, ["ID", "Mass"])
>>> sel = ds.where("(ID >= 150) & (ID < 420) & (Mass < 0.2)")
>>> sel.count, sel.rows[:3], int(sel.rows[-1])
(50, array([150, 151, 152]), 199)
>>> sel.report.chunks, sel.report.skipped, sel.report.scanned
(12, 10, 2)
>>> print(sel.report)
query over ID, Mass: 12 chunks, 10 skipped (no match), 0 taken whole (all match),
2 scanned; read 2.0 KiB of 15.6 KiB (12%); 50 of 1000 rows selected
>>> sel.read("Mass")[:2]
array([0.15015015, 0.15115115])
>>> f.close()
"""


from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _dask, _html, _opener, _pandas, _parallel, _runs
from . import mpi as _mpi
from ._column_base import ColumnBase
from ._arith import Expr, Func, as_operand
from ._expr import (
    ALL,
    IsIn,
    NONE,
    SOME,
    And,
    Compare,
    ExpressionError,
    Field,
    Not,
    Or,
    Predicate,
    _constant,
    from_spec,
)
from ._parse import MAX_EXPRESSION as _MAX_EXPRESSION
from ._parse import parse
from ._expr import STATE_NAMES as _STATE_NAMES
from ._runs import RUN_BYTES
from ._scan import Plan, Report, decide, new_report, scan

if TYPE_CHECKING:
    from .column import Column

__all__ = [
    "Expr",
    "Field",
    "Predicate",
    "Selection",
    "Report",
    "ExpressionError",
    "parse",
    "where",
    "PIECE_BYTES",
    "sqrt",
    "exp",
    "log",
    "log10",
    "floor",
    "isin",
]

#: The most bytes of column data a query (or histogram) holds in memory at
#: once, per piece of a coalesced run of cells (tests lower it).
PIECE_BYTES = 4 << 20

# the parts a query is made of, defined in _expr, _scan and _runs, are
# colfile.query's names too
_PARTS = (ALL, NONE, SOME, And, Compare, Not, Or, _STATE_NAMES, _constant, _MAX_EXPRESSION,
          RUN_BYTES, decide)


# ---------------------------------------------------------------------------
# functions of the Python predicate builder (abs() is Python's; numpy's
# ufuncs work on fields too: np.sqrt(x))


def sqrt(x: Any) -> Expr:
    """``sqrt(x)`` of a field or expression, as :func:`numpy.sqrt`."""
    return Func("sqrt", as_operand(x))


def exp(x: Any) -> Expr:
    """``exp(x)``, as :func:`numpy.exp`."""
    return Func("exp", as_operand(x))


def log(x: Any) -> Expr:
    """``log(x)``, as :func:`numpy.log`."""
    return Func("log", as_operand(x))


def log10(x: Any) -> Expr:
    """``log10(x)``, as :func:`numpy.log10`."""
    return Func("log10", as_operand(x))


def floor(x: Any) -> Expr:
    """``floor(x)``, as :func:`numpy.floor`."""
    return Func("floor", as_operand(x))


def isin(x: Any, values: Any) -> Predicate:
    """True where ``x`` equals one of ``values`` (numpy's ``==``)."""
    return IsIn(x, values)


# ---------------------------------------------------------------------------
# selections


def _runs_of(mask: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray]:
    d = np.diff(np.concatenate([[0], mask.view(np.int8), [0]]))
    return (np.flatnonzero(d == 1) + offset).astype(np.int64), \
        (np.flatnonzero(d == -1) + offset).astype(np.int64)


class Selection:
    """The rows where a predicate holds (sorted, as run-length encoded
    ranges), and what evaluating it read.

    Attributes
    ----------
    size : int
        Rows of the columns queried.
    report : Report
        Chunks skipped, taken whole and scanned; bytes read.
    predicate : Predicate

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> _ = f.create("x", data=np.array([4, 8, 1, 9, 9, 0]))
    >>> _ = f.create("v", data=np.arange(12).reshape(6, 2))
    >>> sel = colfile.where(f, "x > 3")
    >>> sel.count, sel.rows, sel.ranges
    (4, array([0, 1, 3, 4]), [(0, 2), (3, 5)])
    >>> sel.mask()
    array([ True,  True, False,  True,  True, False])
    >>> sel.read("v")
    array([[0, 1],
           [2, 3],
           [6, 7],
           [8, 9]])
    >>> sel.read(["x", "v"])["x"]
    array([4, 8, 9, 9])
    >>> sel["x"]
    array([4, 8, 9, 9])
    >>> f.close()
    """

    def __init__(self, size: int, starts: np.ndarray, stops: np.ndarray, report: Report,
                 predicate: Predicate, resolve: Callable[[str], Column],
                 comm: Any = None) -> None:
        self._comm = comm
        self.size = size
        self._starts = starts
        self._stops = stops
        self.report = report
        self.predicate = predicate
        self._resolve = resolve
        self._rows: np.ndarray | None = None

    @property
    def count(self) -> int:
        """Number of rows selected."""
        return int(np.sum(self._stops - self._starts))

    def __len__(self) -> int:
        return self.count

    @property
    def ranges(self) -> list[tuple[int, int]]:
        """The selected rows as maximal ``(start, stop)`` ranges."""
        return list(zip(self._starts.tolist(), self._stops.tolist()))

    @property
    def rows(self) -> np.ndarray:
        """The selected rows, sorted (int64)."""
        if self._rows is None:
            self._rows = _runs.rows_of(self._starts, self._stops)
        return self._rows

    def mask(self) -> np.ndarray:
        """A bool array of :attr:`size` rows, True where selected."""
        d = np.zeros(self.size + 1, np.int8)
        d[self._starts] = 1  # maximal runs: no start is another run's stop
        d[self._stops] -= 1
        return np.cumsum(d[:-1], dtype=np.int8).astype(bool)

    def __repr__(self) -> str:
        return (f"<colfile.Selection {self.count} of {self.size} rows where "
                f"{self.predicate._text()}>")

    def _column(self, name: Any) -> Column:
        col = name if isinstance(name, ColumnBase) else self._resolve(name)
        if col.size != self.size:
            raise ValueError(f"{col._what()} has {col.size} rows, the selection was made "
                             f"on {self.size}")
        return col

    def read(self, names: Any, dtype: Any = None, *, share: bool = False) -> np.ndarray:
        """Read the selected rows of a column, or of several (a structured
        array, as :class:`~colfile.Dataset` gives).

        Only the selected rows are read: runs of at least
        :data:`RUN_BYTES` as contiguous ranges, the other rows with
        scattered reads (``cf_column_read_rows``), in units of at most 16 MiB
        whose byte ranges are announced to the kernel ahead of the reads
        (selected rows less than 128 KiB apart fetched as one range, nothing
        past them: docs/query.md, "What is read from disk").  Any column of
        the same length can be read, not only those of the predicate.

        Under MPI (a selection made by :func:`where` on a File opened with
        ``comm=``) the call is collective: each rank reads an even share of
        the selected rows (consecutive, in rank order); every rank gets all
        of them, or with ``share=True`` only its own share (then
        :meth:`share_rows` are their row numbers).

        Parameters
        ----------
        names : str, Column, or a list of them
            Names are resolved where the query was made (the Dataset, or
            the File of the column).
        dtype : dtype spec, optional
            For a single column: the dtype of the result.
        share : bool
            Under MPI: return only this rank's share of the rows.
        """
        comm = self._comm
        if comm is None or comm.serial or comm.size == 1:
            return self._read_runs(names, dtype, self._starts, self._stops)
        lo, n = _mpi.plan_share(self.count, comm.size, comm.rank)
        s, e = _runs.slice_runs(self._starts, self._stops, lo, lo + n)
        parts = _mpi.agree(comm, lambda: self._read_runs(names, dtype, s, e),
                           collect=not share)
        return parts if share else np.concatenate(parts)

    def __getitem__(self, names: Any) -> np.ndarray:
        """``sel["Mass"]``, ``sel[["ID", "Mass"]]``: :meth:`read` of those
        columns (collective under MPI, as :meth:`read`)."""
        if not isinstance(names, (str, list, tuple, ColumnBase)):
            raise TypeError(f"a Selection is indexed by column names, not "
                            f"{type(names).__name__}: use .rows for the row numbers")
        return self.read(list(names) if isinstance(names, tuple) else names)

    def share_rows(self) -> np.ndarray:
        """The rows of this rank's share under MPI (all rows otherwise): the
        rows of ``read(..., share=True)``."""
        comm = self._comm
        if comm is None or comm.serial or comm.size == 1:
            return self.rows
        lo, n = _mpi.plan_share(self.count, comm.size, comm.rank)
        return _runs.rows_of(*_runs.slice_runs(self._starts, self._stops, lo, lo + n))

    def _read_runs(self, names: Any, dtype: Any, starts: np.ndarray, stops: np.ndarray
                   ) -> np.ndarray:
        count = int(np.sum(stops - starts))
        if isinstance(names, (list, tuple)):
            cols = [self._column(n) for n in names]
            labels = [n if isinstance(n, str) else c.name for n, c in zip(names, cols)]
            fields = [(lab, c.dtype) if c.nmemb == 1 else (lab, c.dtype, (c.nmemb,))
                      for lab, c in zip(labels, cols)]
            out = np.empty(count, np.dtype(fields))
            for lab, c in zip(labels, cols):
                _runs.read(c, starts, stops, out[lab])
            return out
        col = self._column(names)
        arr = np.empty((count,) + col._row_shape, col.dtype if dtype is None else dtype)
        _runs.read(col, starts, stops, arr)
        return arr

    def to_dask(self, names: Any, chunks: Any = "auto") -> Any:
        """The selected rows of a column as a lazy dask array, or of several
        columns as a dict of them (name to array, with the same chunks
        along the rows, as :meth:`Dataset.to_dask
        <colfile.Dataset.to_dask>` gives).

        The selection's rows are known already; each chunk is read by a task
        that opens the File afresh, read-only, by its absolute path, and
        reads only the selected rows of its chunk (as :meth:`read`): it
        reads what is committed (flush a column being written first).

        Parameters
        ----------
        names : str, Column, or a list of them
            As for :meth:`read`.
        chunks : int, str or tuple, default ``"auto"``
            Selected rows per chunk, ``-1`` for one chunk, the sizes of the
            chunks, or ``"auto"``/a byte size such as ``"64MiB"`` (about
            that many bytes per chunk; 8 MiB for ``"auto"``).  The elements
            of a row are never split.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> _ = f.create("x", data=np.arange(10))
        >>> f.flush()  # the tasks read what is committed
        >>> sel = colfile.where(f, "x > 4")
        >>> d = sel.to_dask("x", chunks=2)
        >>> d.chunks, d.compute()
        (((2, 2, 1),), array([5, 6, 7, 8, 9]))
        >>> f.close()
        """
        return _dask.selection(self, names, chunks)

    def _repr_html_(self) -> str:
        return _html.selection(self)

    def to_pandas(self, names: Any) -> Any:
        """The selected rows of the columns ``names`` (as for :meth:`read`)
        as a :class:`pandas.DataFrame` indexed by row number, vector
        columns split into ``<name>_0``, ``<name>_1``, ... (needs pandas)."""
        return _pandas.selection_frame(self, names)

    def _read_into(self, col: Column, out: np.ndarray) -> None:
        _runs.read(col, self._starts, self._stops, out)


def _merge_runs(starts: list[np.ndarray], stops: list[np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray]:
    if not starts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    s = np.concatenate(starts)
    e = np.concatenate(stops)
    if len(s) > 1:
        joined = s[1:] == e[:-1]
        if joined.any():
            keep_start = np.concatenate([[True], ~joined])
            keep_stop = np.concatenate([~joined, [True]])
            s, e = s[keep_start], e[keep_stop]
    return s, e


def _scan_runs(plan: Plan, k0: int, k1: int, piece_bytes: int
               ) -> tuple[np.ndarray, np.ndarray, Report]:
    """The selected runs of cells ``k0..k1-1`` and what finding them read."""
    report = new_report(plan, "query")
    starts: list[np.ndarray] = []
    stops: list[np.ndarray] = []

    def visit(a: int, b: int, mask: np.ndarray | None, blocks: dict[int, np.ndarray]) -> None:
        if mask is None:
            starts.append(np.asarray([a], np.int64))
            stops.append(np.asarray([b], np.int64))
        else:
            s, e = _runs_of(mask, a)
            starts.append(s)
            stops.append(e)

    scan(plan, k0, k1, [], report, visit, piece_bytes)
    s, e = _merge_runs(starts, stops)
    report.selected = int(np.sum(e - s))
    return s, e, report


def _evaluate(predicate: Predicate, resolve: Callable[[str], Column],
              piece_bytes: int | None = None, comm: Any = None, dask: bool = False
              ) -> Selection:
    pb = PIECE_BYTES if piece_bytes is None else int(piece_bytes)
    if dask:
        return _evaluate_dask(predicate, resolve, pb)
    if comm is None or comm.serial:
        plan = Plan(predicate, [])
        s, e, report = _scan_runs(plan, 0, plan.ncells, pb)
        return Selection(plan.size, s, e, report, predicate, resolve)
    plan = _parallel.plan(predicate, [], comm)
    k0, k1 = _parallel.share(plan, comm, read_all=False)
    a, b = int(plan.bounds[k0]), int(plan.bounds[k1])

    def local() -> tuple[Any, Report]:
        s, e, rep = _scan_runs(plan, k0, k1, pb)
        return _pack_runs(s, e, a, b, comm.size > 1), rep

    # every rank's runs (errors agreed), joined in rank order: sorted
    parts = _mpi.agree(comm, local, collect=True)
    runs = [_unpack_runs(p[0]) for p in parts]
    s, e = _merge_runs([r[0] for r in runs], [r[1] for r in runs])
    report = parts[0][1]
    for p in parts[1:]:
        report = report.merged(p[1])
    return Selection(plan.size, s, e, report, predicate, resolve, comm)


def _pack_runs(s: np.ndarray, e: np.ndarray, a: int, b: int, packed: bool = True
               ) -> tuple[Any, ...]:
    """Runs within rows ``[a, b)`` as sent to the other ranks: the runs, or
    (``packed``) a bitmap of the rows where that is smaller (many short
    runs)."""
    if 16 * len(s) <= (b - a) // 8 + 64 or not packed:
        return ("runs", s, e)
    d = np.zeros(b - a + 1, np.int8)
    d[s - a] = 1
    d[e - a] -= 1
    return ("bits", a, b - a, np.packbits(np.cumsum(d[:-1], dtype=np.int8).astype(bool)))


def _unpack_runs(packed: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
    if packed[0] == "runs":
        return packed[1], packed[2]
    _, a, n, bits = packed
    return _runs_of(np.unpackbits(bits, count=n).astype(bool), a)


def _where_task(spec: Any, arrays: dict[str, Any], piece_bytes: int
                ) -> tuple[np.ndarray, np.ndarray, Report]:
    """One dask task: open the Files by path, find the runs of its cells."""
    with _opener.opened_columns() as column:
        pred = from_spec(spec, column)
        plan = Plan(pred, [], arrays)
        return _scan_runs(plan, 0, plan.ncells, piece_bytes)


def _evaluate_dask(predicate: Predicate, resolve: Callable[[str], Column],
                   piece_bytes: int) -> Selection:
    import dask

    plan = Plan(predicate, [])
    spec = predicate._spec()
    task = dask.delayed(_where_task, pure=True)
    tasks = [task(spec, _parallel.sub_arrays(plan, k0, k1), piece_bytes)
             for k0, k1 in _parallel.groups(plan, _parallel.GROUP_BYTES)]
    parts = dask.compute(*tasks)
    s, e = _merge_runs([p[0] for p in parts], [p[1] for p in parts])
    report = new_report(plan, "query")
    scan(plan, 0, plan.ncells, [], report, None, piece_bytes)  # what the tasks read
    report.selected = int(np.sum(e - s))
    return Selection(plan.size, s, e, report, predicate, resolve)


# ---------------------------------------------------------------------------
# where


def _resolver(source: Any) -> Callable[[str], Column]:
    """How names in an expression (and in Selection.read) are found: each
    kind of source (Column, Dataset, File or Group) says
    (``_query_resolver``)."""
    resolver = getattr(source, "_query_resolver", None)
    if resolver is None:
        raise TypeError(f"a query runs on a Column, Dataset, File or Group, not "
                        f"{type(source).__name__}")
    return resolver()  # type: ignore[no-any-return]


def as_predicate(expr: Any, resolve: Callable[[str], Column]) -> Predicate:
    """``expr`` as a :class:`Predicate` (strings are parsed with
    :func:`parse`)."""
    if isinstance(expr, Predicate):
        return expr
    if isinstance(expr, str):
        return parse(expr, resolve)
    if isinstance(expr, Field):
        raise TypeError(f"a Field ({expr.name}) is not a condition: compare it with a number")
    raise TypeError(f"a query condition is a Predicate or an expression string, not "
                    f"{type(expr).__name__}")


def where(source: Any, expr: Any, *, piece_bytes: int | None = None,
          parallel: bool | None = None, dask: bool = False) -> Selection:
    """The rows of ``source`` where ``expr`` holds, skipping the chunks
    whose statistics decide it.

    Parameters
    ----------
    source : Column, Dataset, File or Group
        Where names in ``expr`` are looked up (and in
        :meth:`Selection.read`).
    expr : Predicate or str
        The condition (see :func:`parse` for the string form).  All the
        columns it references must have the same length.  Names in a
        string are looked up in ``source``; for a Column, in its group
        first, then in its File.
    piece_bytes : int, optional
        The most column data held in memory at once (default
        :data:`PIECE_BYTES`).
    parallel : bool, optional
        Under MPI (the columns' File opened with ``comm=``): by default (or
        True) the query is collective -- rank 0 reads the statistics and
        broadcasts the plan, each rank scans a contiguous share of the
        cells of about equal work, and the runs are gathered in rank order,
        so every rank gets the same, sorted Selection (whose
        :meth:`Selection.read` is collective too).  False: this rank
        evaluates the whole query alone, with no communication (other ranks
        need not call).
    dask : bool
        Evaluate the cells as dask tasks, one per group of cells (about
        64 MiB of column data), each
        opening the File by path (read-only: what is committed), computed
        now with the current dask scheduler.  Never collective.

    Returns
    -------
    Selection

    Notes
    -----
    Looking up a name in a File opened with ``comm=`` opens the column
    collectively, so a string expression (or :meth:`Selection.read` by
    name) must be used on every rank even with ``parallel=False``; a
    predicate built from columns already open is then independent.

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> _ = f.create("a", data=np.array([1.0, np.nan, 3.0, 4.0]))
    >>> colfile.where(f, "a != 3").rows, colfile.where(f, "~(a == 3)").rows
    (array([0, 1, 3]), array([0, 1, 3]))
    >>> f.close()
    """
    resolve = _resolver(source)
    pred = as_predicate(expr, resolve)
    comm = _parallel.comm_of(pred.fields)
    if dask or parallel is False:
        comm = None
    return _evaluate(pred, resolve, piece_bytes, comm, dask)
