"""``colfile query --hist`` and ``--plot``: a histogram of one column over
the matching rows, as text or as a picture."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from colfile import plots

from . import _plot
from ._common import UsageError, dump_json


def check_args(args: Any) -> None:
    """Refuse options that do not go with a histogram, before any work."""
    if args.bins < 1:
        raise UsageError(f"--bins must be at least 1, not {args.bins}",
                         hint="try 'colfile query --help'")
    if args.out is not None or args.count or args.csv or args.header:
        raise UsageError("--hist and --plot draw a histogram: --out, --count, --csv and "
                         "--header do not apply", hint="try 'colfile query --help'")
    if args.plot is not None:
        _plot.check_target(args.plot)


def _values(names: list[str], cols: list[Any], rows: np.ndarray) -> tuple[str, np.ndarray]:
    if len(cols) != 1:
        raise UsageError(f"--hist and --plot draw one column, not {len(cols)} "
                         f"({', '.join(names)}): name it with -c",
                         hint="try 'colfile query --help'")
    col, name = cols[0], names[0]
    if col.nmemb > 1:
        raise UsageError(f"{name!r} has {col.nmemb} components: a histogram is of one "
                         "scalar column", hint="try 'colfile query --help'")
    if col.dtype.kind not in "iufb":
        raise UsageError(f"{name!r} holds {col.dtype}: a histogram needs numbers",
                         hint="try 'colfile query --help'")
    values = np.asarray(col[rows] if len(rows) else np.empty(0, col.dtype), dtype=np.float64)
    return name, values[~np.isnan(values)]


def show(args: Any, names: list[str], cols: list[Any], rows: np.ndarray) -> None:
    name, values = _values(names, cols, rows)
    lo, hi = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    counts, edges = np.histogram(values, bins=args.bins, range=(lo, hi))
    if args.hist:
        out = sys.stdout
        if args.json:
            dump_json({"path": args.path, "expr": args.expr, "column": name,
                       "values": int(len(values)), "counts": counts.tolist(),
                       "edges": edges.tolist()}, out)
        else:
            out.write(f"{name}: {len(values)} values where {args.expr}\n")
            out.write(plots.text_histogram(counts, edges))
        out.flush()
    if args.plot is not None:
        title = f"{name} where {args.expr} ({len(values)} values)"
        _plot.draw(args.plot, lambda: plots.histogram_figure(counts, edges, name, title))
