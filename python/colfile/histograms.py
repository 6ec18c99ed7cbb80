"""Histograms of columns, conditional on a predicate, computed chunk by
chunk with bounded memory, skipping what the chunk statistics exclude.

:func:`histogram`, :func:`histogram2d` and :func:`histogramdd` take
:class:`~colfile.query.Field` objects (``col.field(j)``, or a scalar
:class:`~colfile.Column`) and return what :func:`numpy.histogram`,
:func:`numpy.histogram2d` and :func:`numpy.histogramdd` return for the
same values -- the selected rows, NaNs removed -- with the same bins and
edges:

* ``where=`` restricts the rows to a :class:`~colfile.query.Predicate` (or
  an expression string, names resolved in the group of the field, then in
  its File).  Cells of
  the query grid (:mod:`colfile.query`) that the statistics exclude are not
  read; cells they include whole are histogrammed without evaluating the
  predicate (only the histogrammed field is read there).
* ``range=None`` takes the range from the statistics (min of the chunk
  minima, max of the maxima) when no ``where`` is given and every chunk's
  statistics are valid and exact; otherwise from one pass over the selected
  values, then the histogram pass.
* **NaNs are ignored** (rows with a NaN in a histogrammed field; numpy would
  refuse them with ``range=None`` and drop them with an explicit range).
  Infinite values with ``range=None`` raise ``ValueError`` as in numpy.
* The data are processed in pieces of at most
  :data:`colfile.query.PIECE_BYTES`; numpy bins each piece with the global
  bin edges, so counts are exactly numpy's.  With ``weights`` the sums are
  numpy's up to floating point summation order.
* Under MPI (the field's File opened with ``comm=``) the call is collective:
  rank 0 reads the statistics and broadcasts the plan, each rank processes
  a contiguous share of the grid cells of about equal work (rows to read),
  and the histograms (and reports) are summed over the ranks; every rank
  gets the result.
* ``dask=True`` returns the histogram as a lazy dask array: one task per
  group of cells (about :data:`GROUP_BYTES` of column data), each opening
  the File by path (the graph pickles), summed.  Building the graph reads
  the statistics (and makes the range pass if one is needed) at once; it is
  never collective.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
>>> rng = np.random.default_rng(1)
>>> m = f.create("Mass", data=rng.uniform(0, 10, 1000), chunk_rows=100)
>>> pos = f.create("Position", data=np.sort(rng.uniform(0, 100, (1000, 3)), axis=0),
...                chunk_rows=100)
>>> f.flush()
>>> h, edges = colfile.histogram(m, bins=5, range=(0, 10), where="Position[0] < 30")
>>> h, edges
(array([65, 65, 59, 66, 58]), array([ 0.,  2.,  4.,  6.,  8., 10.]))
>>> x = m[:][pos[:, 0] < 30]
>>> np.array_equal(h, np.histogram(x, bins=5, range=(0, 10))[0])
True
>>> h, e, report = colfile.histogram(m, 5, (0, 10), where=pos.field(0) < 30,
...                                  return_report=True)
>>> report.skipped, report.scanned, report.all_match
(6, 1, 3)
>>> H, xe, ye = colfile.histogram2d(pos.field(0), pos.field(1), bins=2)
>>> H
array([[487.,  16.],
       [  0., 497.]])
>>> f.close()
"""

from __future__ import annotations

import builtins  # range(): the parameters named range shadow it
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _opener, _parallel
from . import mpi as _mpi
from . import query as _q
from ._expr import NONE, Field, Predicate, from_spec
from ._scan import Plan, Report, new_report, scan
from .column import Column

__all__ = ["histogram", "histogram2d", "histogramdd", "GROUP_BYTES"]

#: Data (bytes of the referenced columns) per task of a dask histogram.
GROUP_BYTES = _parallel.GROUP_BYTES


# ---------------------------------------------------------------------------
# arguments


def _piece_bytes(piece_bytes: int | None) -> int:
    """``piece_bytes``, by default :data:`colfile.query.PIECE_BYTES`."""
    return _q.PIECE_BYTES if piece_bytes is None else int(piece_bytes)


def _as_field(obj: Any, what: str) -> Field:
    if isinstance(obj, Field):
        return obj
    if isinstance(obj, Column):
        return obj.field()
    raise TypeError(f"{what} must be a colfile Field (col.field(j)) or a scalar Column, "
                    f"not {type(obj).__name__}")


def _setup(fields: Sequence[Any], weights: Any, where: Any, more: Sequence[Field] = ()
           ) -> tuple[list[Field], Field | None, Predicate | None, _mpi.Comm]:
    names = ["x", "y"] if len(fields) == 2 else ["field"]
    fs = [_as_field(f, n) for f, n in zip(fields, names)]
    wf = None if weights is None else _as_field(weights, "weights")
    pred = None
    if where is not None:
        pred = _q.as_predicate(where, fs[0].column._query_resolver())
    every = fs + list(more) + ([wf] if wf is not None else []) + \
        (pred.fields if pred is not None else [])
    return fs, wf, pred, _parallel.comm_of(every)


def _plan(pred: Predicate | None, fields: list[Field], comm: _mpi.Comm) -> Plan:
    return _parallel.plan(pred, fields, comm)


def _cells(plan: Plan, comm: _mpi.Comm) -> tuple[int, int]:
    return _parallel.share(plan, comm, read_all=True)


def _nan_free(arrs: list[np.ndarray]) -> np.ndarray | None:
    keep = None
    for a in arrs:
        if a.dtype.kind == "f":
            k = ~np.isnan(a)
            keep = k if keep is None else keep & k
    return keep


def _pieces(plan: Plan, k0: int, k1: int, fields: list[Field], wf: Field | None,
            report: Report, convert: Any, piece_bytes: int | None, fn: Any) -> None:
    """Call ``fn(values, weights)`` for the selected, NaN-free values of
    every piece of cells ``k0..k1-1`` (values converted by ``convert``)."""
    want = fields + ([wf] if wf is not None else [])

    def visit(a: int, b: int, mask: np.ndarray | None, blocks: dict[int, np.ndarray]) -> None:
        vals = [convert(f._values(blocks[id(f.column)])) for f in fields]
        w = None if wf is None else wf._values(blocks[id(wf.column)])
        if mask is not None:
            vals = [v[mask] for v in vals]
            w = None if w is None else w[mask]
        keep = _nan_free(vals)
        if keep is not None and not keep.all():
            vals = [v[keep] for v in vals]
            w = None if w is None else w[keep]
        assert report.selected is not None
        report.selected += len(vals[0])
        fn(vals, w)

    scan(plan, k0, k1, want, report, visit, _piece_bytes(piece_bytes))


def _stats_range(plan: Plan, i: int, dtype: np.dtype[Any], stored: np.dtype[Any],
                 others_nan_free: bool) -> tuple[bool, Any]:
    """``(usable, (lo, hi) or None)`` for field i (stored as ``stored``,
    binned as ``dtype``) from its chunk statistics: usable when every chunk
    is valid and min/max are exact values."""
    st = plan.field_stats[i] if plan.field_stats is not None else None
    if st is None or not others_nan_free:
        return False, None
    if len(st) == 0:
        return True, None
    if not (st["valid"].all() and st["ordered"].all()):
        return False, None
    nonnan = st["count"] - st["nan_count"]
    has = nonnan > 0
    if not has.any():
        return True, None
    lo = st["min"][has]
    hi = st["max"][has]
    if np.isnan(lo).any() or np.isnan(hi).any():
        return False, None
    mn, mx = float(lo.min()), float(hi.max())
    if stored.kind in "iub":
        if not (abs(mn) <= 2.0 ** 53 and abs(mx) <= 2.0 ** 53):
            return False, None  # min/max rounded outward: not exact
        return True, (dtype.type(int(mn)), dtype.type(int(mx)))
    return True, (dtype.type(mn), dtype.type(mx))


def _nan_free_everywhere(plan: Plan, i: int) -> bool:
    st = plan.field_stats[i] if plan.field_stats is not None else None
    if st is None:
        return False
    return bool(len(st) == 0 or (st["valid"].all() and (st["nan_count"] == 0).all()))


def _reduce_minmax(parts: list[Any]) -> Any:
    """Combine per-rank [(lo, hi) or None per dimension]."""
    out: list[Any] = []
    for dim in zip(*parts):
        got = [d for d in dim if d is not None]
        if not got:
            out.append(None)
        else:
            out.append((min(d[0] for d in got), max(d[1] for d in got)))
    return out


def _ranges(plan: Plan, fields: list[Field], wf: Field | None, dtypes: list[np.dtype[Any]],
            need: list[bool], comm: _mpi.Comm, k0: int, k1: int, convert: Any,
            piece_bytes: int | None, report: Report) -> list[Any]:
    """Per dimension the (lo, hi) of the selected NaN-free values (numpy
    scalars of the binning dtype), or None if there are none; only for the
    dimensions in ``need``."""
    result: list[Any] = [None] * len(fields)
    todo = []
    nd = len(fields)
    for i in range(nd):
        if not need[i]:
            continue
        others = all(_nan_free_everywhere(plan, j) for j in range(nd) if j != i)
        ok, rng = (False, None) if plan.predicate is not None else \
            _stats_range(plan, i, dtypes[i], fields[i].dtype, others)
        if ok:
            result[i] = rng
        else:
            todo.append(i)
    if not todo:
        return result

    def local_pass() -> tuple[list[Any], int]:
        local: list[Any] = [None] * nd

        def fn(vals: list[np.ndarray], w: Any) -> None:
            if not len(vals[0]):
                return
            for i in todo:
                lo, hi = vals[i].min(), vals[i].max()
                cur = local[i]
                local[i] = (lo, hi) if cur is None else (min(cur[0], lo), max(cur[1], hi))

        scratch = Report(columns=report.columns, bytes_total=report.bytes_total)
        _pieces(plan, k0, k1, fields, None, scratch, convert, piece_bytes, fn)
        return local, scratch.bytes_read

    # every rank's share, then agreed (errors too) and combined
    parts = _mpi.agree(comm, local_pass, collect=True)
    report.bytes_read += parts[comm.rank][1]
    merged = _reduce_minmax([p[0] for p in parts])
    for i in todo:
        result[i] = merged[i]
    return result


def _outer_edges(found: Any, rng: Any) -> tuple[Any, Any]:
    """numpy's ``_get_outer_edges``: ``found`` is (min, max) of the values
    or None when there are none."""
    if rng is not None:
        first, last = rng
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif found is None:
        first, last = 0, 1
    else:
        first, last = found
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first = first - 0.5
        last = last + 0.5
    return first, last


def _sum_over_ranks(comm: _mpi.Comm, local: Any) -> tuple[np.ndarray, Report]:
    """Run ``local()`` (this rank's ``(hist, report)``) on every rank, agree
    on errors, and sum the results in rank order."""
    parts = _mpi.agree(comm, local, collect=True)
    total = parts[0][0].copy()
    rep = parts[0][1]
    for v, r in parts[1:]:
        total += v
        rep = rep.merged(r)
    return total, rep


def _count_bins(bins: Any) -> int:
    try:
        n = operator.index(bins)
    except TypeError:
        raise TypeError("`bins` must be an integer, or a sequence of edges") from None
    if n < 1:
        raise ValueError("`bins` must be positive, when an integer")
    return n


# ---------------------------------------------------------------------------
# 1-d


def _value_dtype(f: Field) -> np.dtype[Any]:
    # numpy.histogram converts bool input to uint8
    return np.dtype(np.uint8) if f.dtype.kind == "b" else f.dtype.newbyteorder("=")


def _to_uint8_if_bool(v: np.ndarray) -> np.ndarray:
    return v.view(np.uint8) if v.dtype.kind == "b" else v


def histogram(field: Any, bins: Any = 10, range: Any = None, where: Any = None,
              weights: Any = None, density: bool = False, *, dask: bool = False,
              return_report: bool = False, piece_bytes: int | None = None) -> Any:
    """The histogram of a field's values (in the rows where ``where``
    holds), as :func:`numpy.histogram` computes it.

    Parameters
    ----------
    field : Field or Column
        What to histogram: ``col.field(j)``, or a scalar column.
    bins : int or sequence of scalars
        Number of equal-width bins, or the bin edges (monotonic).  numpy's
        named bin rules (``'auto'``...) need all the data and are not
        supported.
    range : (float, float), optional
        The range of equal-width bins.  Default: min and max of the
        selected values (from the chunk statistics when possible).
    where : Predicate or str, optional
        Rows to include; names in a string are columns of the field's
        group (``Mass`` of ``Group/Mass`` finds ``Group/ID`` as ``ID``),
        then of its File.
    weights : Field or Column, optional
        A weight per row (a column of the same length).
    density : bool
        As in numpy: the counts (or sums of weights) divided by their total
        and by the bin widths, so that the histogram integrates to 1.
    dask : bool
        Return the histogram as a lazy dask array (see the module notes);
        ``range=None`` is resolved now.
    return_report : bool
        Also return the :class:`~colfile.query.Report` (with ``dask``, what
        the graph will read; ``selected`` is None).
    piece_bytes : int, optional
        Most column data in memory at once (default
        :data:`colfile.query.PIECE_BYTES`).

    Returns
    -------
    hist : numpy.ndarray (or dask array)
        Counts (int64), or sums of weights (the weights' dtype); float64
        densities with ``density``.
    bin_edges : numpy.ndarray
    report : Report
        Only with ``return_report``.

    Notes
    -----
    Rows whose value is NaN are ignored.  Collective under MPI (see the
    module notes).

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> v = f.create("v", data=np.array([1.0, 2.0, np.nan, 2.5, 4.0]))
    >>> w = f.create("w", data=np.array([1, 1, 1, 2, 1]))
    >>> colfile.histogram(v, bins=3)
    (array([1, 2, 1]), array([1., 2., 3., 4.]))
    >>> colfile.histogram(v, bins=[0, 2, 5], weights=w, where="w < 2")
    (array([1, 2]), array([0, 2, 5]))
    >>> colfile.histogram(v, bins=[0, 2, 5], density=True)[0]
    array([0.125, 0.25 ])
    >>> f.close()
    """
    fs, wf, pred, comm = _setup([field], weights, where)
    fx = fs[0]
    dtype = _value_dtype(fx)
    uniform = np.ndim(bins) == 0
    if isinstance(bins, str):
        raise ValueError(f"bins={bins!r}: named bin rules need all the data; give a number "
                         "of bins or the edges")
    edges_given = None
    nbins = 0
    if uniform:
        nbins = _count_bins(bins)
        if range is not None:
            np.histogram_bin_edges(np.empty(0, dtype), nbins, range)  # numpy's checks
    else:
        edges_given = np.asarray(bins)
        np.histogram_bin_edges(np.empty(0, dtype), edges_given)  # monotonic, 1-d
    ntype = np.dtype(np.intp) if wf is None else wf.dtype.newbyteorder("=")
    all_fields = [fx] + ([wf] if wf is not None else [])
    if dask:  # building a graph is never collective
        comm = _mpi.SELF
    plan = _plan(pred, all_fields, comm)
    report = new_report(plan, "histogram")
    k0, k1 = (0, plan.ncells) if dask else _cells(plan, comm)
    convert = _to_uint8_if_bool
    if uniform:
        rng = range
        if rng is None:
            (found,) = _ranges(plan, [fx], wf, [dtype], [True], comm, k0, k1, convert,
                               piece_bytes, report)
            rng = found if found is not None else (0, 1)
            _outer_edges(found, None)  # numpy's error for infinite values
        hist_args: dict[str, Any] = {"bins": nbins, "range": rng}
        edges = np.histogram_bin_edges(np.empty(0, dtype), nbins, rng)
    else:
        hist_args = {"bins": edges_given}
        edges = np.histogram_bin_edges(np.empty(0, dtype), edges_given)
    nb = len(edges) - 1
    if dask:
        h = _dask_hist(plan, pred, [fx], wf, "1d", hist_args, (nb,), ntype, piece_bytes)
        report.selected = None
        scan(plan, 0, plan.ncells, all_fields, report, None, _piece_bytes(piece_bytes))
    else:
        h, report = _sum_over_ranks(comm, lambda: (_hist_cells(
            plan, k0, k1, [fx], wf, "1d", hist_args, (nb,), ntype, report, piece_bytes),
            report))
    if density:  # numpy's arithmetic, in numpy's order
        h = h / np.array(np.diff(edges), float) / h.sum()
    return (h, edges, report) if return_report else (h, edges)


def _hist_cells(plan: Plan, k0: int, k1: int, fields: list[Field], wf: Field | None,
                kind: str, hist_args: dict[str, Any], shape: tuple[int, ...],
                ntype: np.dtype[Any], report: Report, piece_bytes: int | None) -> np.ndarray:
    total = np.zeros(shape, ntype)

    if kind == "1d":
        def fn(vals: list[np.ndarray], w: Any) -> None:
            nonlocal total
            if len(vals[0]):
                h, _ = np.histogram(vals[0], weights=w, **hist_args)
                total += h
        convert = _to_uint8_if_bool
    else:
        def fn(vals: list[np.ndarray], w: Any) -> None:
            nonlocal total
            if len(vals[0]):
                h, _ = np.histogramdd(vals, weights=w, **hist_args)
                total += h

        def convert(v: np.ndarray) -> np.ndarray:
            return v

    _pieces(plan, k0, k1, fields, wf, report, convert, piece_bytes, fn)
    return total


# ---------------------------------------------------------------------------
# 2-d


def _bins2d(bins: Any) -> list[Any]:
    """numpy.histogram2d's reading of ``bins``: per dimension a count or
    edges."""
    if isinstance(bins, str):
        raise ValueError(f"bins={bins!r}: give numbers of bins or edges")
    try:
        n = len(bins)
    except TypeError:
        return [bins, bins]
    if n != 1 and n != 2:
        e = np.asarray(bins)
        return [e, e]
    if n != 2:
        raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    return list(bins)


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, where: Any = None,
                weights: Any = None, density: bool = False, *, dask: bool = False,
                return_report: bool = False, piece_bytes: int | None = None) -> Any:
    """The 2-d histogram of two fields (in the rows where ``where`` holds),
    as :func:`numpy.histogram2d` computes it.

    Parameters
    ----------
    x, y : Field or Column
        The two coordinates (columns of the same length, e.g.
        ``pos.field(0)``, ``pos.field(1)``).
    bins : int, [int, int], array or [array, array]
        As in :func:`numpy.histogram2d`.
    range : [[xmin, xmax], [ymin, ymax]], optional
        Either may be None.  Default: from the statistics or one pass.
    where, weights, dask, return_report, piece_bytes
        As in :func:`histogram`.
    density : bool
        As in numpy: divided by the total and by the bin areas.

    Returns
    -------
    H : numpy.ndarray (float64) or dask array
    xedges, yedges : numpy.ndarray
    report : Report
        Only with ``return_report``.

    Notes
    -----
    Rows with a NaN in ``x`` or ``y`` are ignored.  As numpy does, both
    coordinates are binned in their common dtype.

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> p = f.create("p", data=np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.2], [np.nan, 1]]))
    >>> H, xe, ye = colfile.histogram2d(p.field(0), p.field(1), bins=2)
    >>> H, xe
    (array([[1., 0.],
           [1., 1.]]), array([0. , 0.5, 1. ]))
    >>> f.close()
    """
    fs, wf, pred, comm = _setup([x, y], weights, where)
    hist, edges, report = _histnd(fs, wf, pred, comm, _bins2d(bins), range, density, dask,
                                  piece_bytes)
    return (hist, edges[0], edges[1], report) if return_report else \
        (hist, edges[0], edges[1])


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, where: Any = None,
                weights: Any = None, density: bool = False, *, dask: bool = False,
                return_report: bool = False, piece_bytes: int | None = None) -> Any:
    """The D-dimensional histogram of fields (in the rows where ``where``
    holds), as :func:`numpy.histogramdd` computes it.

    Parameters
    ----------
    sample : sequence of Field or Column, or a vector Column
        The D coordinates (columns of the same length); a vector column
        stands for its components.
    bins : int, sequence of ints, or sequence of arrays
        As in :func:`numpy.histogramdd`: one count for all dimensions, or a
        count or the edges per dimension.
    range : sequence of (min, max) or None, optional
        Per dimension; default from the statistics or one pass.
    where, weights, density, dask, return_report, piece_bytes
        As in :func:`histogram2d`.

    Returns
    -------
    H : numpy.ndarray (float64) or dask array
    edges : list of numpy.ndarray
    report : Report
        Only with ``return_report``.

    Notes
    -----
    Rows with a NaN in any coordinate are ignored.  As numpy does, all the
    coordinates are binned in their common dtype.

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> p = f.create("p", data=np.array([[0.0, 0, 1], [1, 1, 0], [1, 0.2, 1], [0.5, 1, 1]]))
    >>> H, edges = colfile.histogramdd(p, bins=2)
    >>> H.shape, float(H[1, 0, 1]), [e.tolist() for e in edges][0]
    ((2, 2, 2), 1.0, [0.0, 0.5, 1.0])
    >>> colfile.histogramdd([p.field(0), p.field(2)], bins=[2, [0, 1, 2]], where="p[1] < 1")[0]
    array([[0., 1.],
           [0., 1.]])
    >>> f.close()
    """
    if isinstance(sample, Column) and sample.nmemb > 1:
        sample = [sample.field(j) for j in builtins.range(sample.nmemb)]
    elif isinstance(sample, (Field, Column)):
        sample = [sample]
    sample = list(sample)
    if not sample:
        raise ValueError("histogramdd needs at least one field")
    names = [f"sample[{i}]" for i in builtins.range(len(sample))]
    fs = [_as_field(f, n) for f, n in zip(sample, names)]
    _, wf, pred, comm = _setup(fs[:1], weights, where, fs)
    d = len(fs)
    try:
        m = len(bins)
    except TypeError:
        per_dim = d * [bins]
    else:
        if isinstance(bins, str):
            raise ValueError(f"bins={bins!r}: give numbers of bins or edges")
        if m != d:
            raise ValueError("The dimension of bins must be equal to the dimension of the "
                             "sample x.")
        per_dim = list(bins)
    hist, edges, report = _histnd(fs, wf, pred, comm, per_dim, range, density, dask,
                                  piece_bytes)
    return (hist, edges, report) if return_report else (hist, edges)


def _histnd(fs: list[Field], wf: Field | None, pred: Predicate | None, comm: _mpi.Comm,
            per_dim: list[Any], range: Any, density: bool, dask: bool,
            piece_bytes: int | None) -> tuple[Any, list[np.ndarray], Report]:
    """histogram2d and histogramdd: numpy.histogramdd's edges, then the
    counts over the selected cells (summed over ranks, or a dask graph)."""
    d = len(fs)
    if range is None:
        range = [None] * d
    if len(range) != d:
        raise ValueError("range must hold one (min, max) or None per dimension")
    common = np.result_type(*[f.dtype for f in fs]).newbyteorder("=")
    counts = []
    for i, b in enumerate(per_dim):
        if np.ndim(b) == 0:
            if b < 1:
                raise ValueError(f"`bins[{i}]` must be positive, when an integer")
            try:
                counts.append(operator.index(b))
            except TypeError:
                raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from None
        else:
            e = np.asarray(b)
            if e.ndim != 1 or np.any(e[:-1] > e[1:]):
                raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an "
                                 "array")
            counts.append(None)
    for i in builtins.range(d):
        if counts[i] is not None and range[i] is not None:
            _outer_edges(None, range[i])  # numpy's checks
    all_fields = fs + ([wf] if wf is not None else [])
    if dask:  # building a graph is never collective
        comm = _mpi.SELF
    plan = _plan(pred, all_fields, comm)
    report = new_report(plan, "histogram")
    k0, k1 = (0, plan.ncells) if dask else _cells(plan, comm)

    def convert(v: np.ndarray) -> np.ndarray:
        return v.astype(common, copy=False)

    need = [counts[i] is not None and range[i] is None for i in builtins.range(d)]
    found: list[Any] = [None] * d
    if any(need):
        found = _ranges(plan, fs, wf, [common] * d, need, comm, k0, k1, convert,
                        piece_bytes, report)
    edges = []
    for i in builtins.range(d):
        if counts[i] is None:
            edges.append(np.asarray(per_dim[i]))
        else:
            first, last = _outer_edges(found[i], range[i])
            edges.append(np.linspace(first, last, counts[i] + 1))
    hist_args = {"bins": edges}
    shape = tuple(len(e) - 1 for e in edges)
    ntype = np.dtype(np.float64)
    if dask:
        hist = _dask_hist(plan, pred, fs, wf, "dd", hist_args, shape, ntype, piece_bytes)
        report.selected = None
        scan(plan, 0, plan.ncells, all_fields, report, None, _piece_bytes(piece_bytes))
    else:
        hist, report = _sum_over_ranks(comm, lambda: (_hist_cells(
            plan, k0, k1, fs, wf, "dd", hist_args, shape, ntype, report, piece_bytes),
            report))
    if density:  # numpy.histogramdd's arithmetic, in its order
        s = hist.sum()
        for i in builtins.range(d):
            dshape = np.ones(d, int)
            dshape[i] = shape[i]
            hist = hist / np.diff(edges[i]).reshape(dshape)
        hist = hist / s
    return hist, edges, report


# ---------------------------------------------------------------------------
# dask


def _field_spec(f: Field) -> tuple[str, str, int | None]:
    col = f.column
    if col._file_path is None:
        raise ValueError(f"{col._what()} was not opened through a File: a dask graph "
                         "reopens it by path")
    return (col._file_path, col.name, f.component)


def _task(pred_spec: Any, field_specs: list[Any], w_spec: Any, arrays: dict[str, Any],
          kind: str, hist_args: dict[str, Any], shape: tuple[int, ...], ntype: str,
          piece_bytes: int | None) -> np.ndarray:
    """One dask task: open the Files by path, histogram the given cells."""
    with _opener.opened_columns() as column:
        fields = [Field(column(p, n), j) for p, n, j in field_specs]
        wf = None if w_spec is None else Field(column(*w_spec[:2]), w_spec[2])
        pred = None if pred_spec is None else from_spec(pred_spec, column)
        plan = Plan(pred, fields + ([wf] if wf is not None else []), arrays)
        report = Report()
        return _hist_cells(plan, 0, plan.ncells, fields, wf, kind, hist_args, shape,
                           np.dtype(ntype), report, piece_bytes)


def _dask_hist(plan: Plan, pred: Predicate | None, fields: list[Field], wf: Field | None,
               kind: str, hist_args: dict[str, Any], shape: tuple[int, ...],
               ntype: np.dtype[Any], piece_bytes: int | None) -> Any:
    import dask
    import dask.array as da

    pred_spec = None if pred is None else pred._spec()
    field_specs = [_field_spec(f) for f in fields]
    w_spec = None if wf is None else _field_spec(wf)
    parts = []
    task = dask.delayed(_task, pure=True)
    for k0, k1 in _parallel.groups(plan, GROUP_BYTES):
        arrays = _parallel.sub_arrays(plan, k0, k1)
        d = task(pred_spec, field_specs, w_spec, arrays, kind, hist_args, shape, ntype.str,
                 piece_bytes)
        parts.append(da.from_delayed(d, shape=shape, dtype=ntype))
    if not parts:
        return da.zeros(shape, dtype=ntype)
    if len(parts) == 1:
        return parts[0]
    return da.stack(parts).sum(axis=0, dtype=ntype)
