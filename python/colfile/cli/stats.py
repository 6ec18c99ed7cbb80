"""``colfile stats``: the per-chunk statistics of a column (count, NaNs,
min, max, sum), per blob and for the whole column, without reading data."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import numpy as np

import colfile
from colfile import plots

from . import _plot
from ._common import (CliError, NotFoundError, UsageError, blob_id, command_parser, dump_json,
                      jsonable, open_file, table)

HELP = "show a column's per-chunk count, NaNs, min, max and sum"

DESCRIPTION = """\
Show the data characteristics colfile records for COLUMN: for every chunk of
rows (chunks restart at every blob; see docs/format.md 8.4) and every
element of a row (component), the number of values, the number of NaNs, the
minimum, the maximum and the sum.  Each blob is followed by its totals,
combined from its chunks ('all'), and the column by its grand total.
Nothing but the metadata is read: this is what queries use to skip data.

  count   values in the chunk (its rows), NaNs included
  nan     NaN values (always 0 for integers and booleans)
  min     smallest non-NaN value (nan when every value is NaN)
  max     largest non-NaN value
  sum     sum of the non-NaN values (booleans: the number of true values)

Complex and byte-string columns have no order: their min, max and sum are
shown as '-'.  Statistics are UNKNOWN for blobs written by another tool
(bigfile), written with statistics switched off, or changed since they
were computed (stale); unknown numbers are never shown and never used to
skip data.  'colfile index PATH COLUMN' computes them."""

EPILOG = """\
examples:
  colfile stats snapshot 1/Mass
  colfile stats snapshot 1/Position --component 0     x only
  colfile stats snapshot 1/ID --blob 3                one blob (or --blob 000003)
  colfile stats snapshot 1/Position --totals          blob and column totals only
  colfile stats snapshot 1/Mass --json | jq '.total'
  colfile stats snapshot 1/                            every column of group 1
  colfile stats snapshot 1/Mass --plot mass.png       and draw min..max per chunk

Text columns: blob (its file name), chunk (number within the blob, or
'all' for the blob's total, shown for blobs of more than one chunk and
with --totals), rows (first-last, counted in the column),
state ('valid', or 'UNKNOWN'), comp (the component, for vector columns),
then count, nan, min, max, sum.  Integer min and max are exact up to 2**53
and rounded outward beyond.  JSON gives the same numbers (non-finite floats
as "nan", "inf", "-inf"; unknown ones as null).  For a group, the columns
below it come one after the other (JSON: {"path", "group", "columns": [...]},
one entry per column as for a column)."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "stats", HELP, DESCRIPTION, EPILOG)
    p.add_argument("path", metavar="PATH", help="the File (a directory)")
    p.add_argument("column", metavar="COLUMN",
                   help="the column, or a group (1 or 1/): every data column below it")
    p.add_argument("-b", "--blob", metavar="N", action="append", type=_blob_arg,
                   default=None,
                   help="only blob N: its number, or its file name of 6 hex digits "
                        "(e.g. 00000A); may be repeated")
    p.add_argument("-j", "--component", metavar="J", type=int, default=None,
                   help="only element J of each row of a vector column "
                        "(negative counts from the end)")
    p.add_argument("-t", "--totals", action="store_true",
                   help="only the blob totals and the column total, no chunk lines")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--plot", metavar="OUT.png", default=None,
                   help="also draw the minimum and maximum of each chunk along the rows "
                        "(one column; needs matplotlib: pip install colfile[plot])")
    return p


def _blob_arg(text: str) -> Any:
    """A blob number (decimal) or a blob file name (6 hex digits)."""
    t = text.strip()
    if len(t) == 6 and all(ch in "0123456789abcdefABCDEF" for ch in t):
        return int(t, 16)
    try:
        n = int(t, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a blob number or a 6-hex-digit blob file name: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"a blob number is not negative: {n}")
    return n


# ---------------------------------------------------------------------------
# numbers


def _combine(recs: np.ndarray) -> dict[str, Any]:
    """Totals of chunk records (all valid) of one component: counts add, min
    and max over the chunks that have a non-NaN value, sums add."""
    mins = recs["min"][~np.isnan(recs["min"])]
    maxs = recs["max"][~np.isnan(recs["max"])]
    return {
        "count": int(recs["count"].sum()),
        "nan": int(recs["nan_count"].sum()),
        "min": float(mins.min()) if len(mins) else math.nan,
        "max": float(maxs.max()) if len(maxs) else math.nan,
        "sum": float(math.fsum(recs["sum"].tolist())) if len(recs) else 0.0,
    }


def _numbers(rec: np.void) -> dict[str, Any]:
    return {"count": int(rec["count"]), "nan": int(rec["nan_count"]),
            "min": float(rec["min"]), "max": float(rec["max"]), "sum": float(rec["sum"])}


class _Fmt:
    """Text of the numbers of a column of dtype ``dtype``."""

    def __init__(self, dtype: np.dtype[Any], ordered: bool) -> None:
        self.kind = dtype.kind
        self.dtype = dtype
        self.ordered = ordered

    def _special(self, x: float) -> str | None:
        """'-' for an unordered kind, nan and the infinities; else None."""
        if not self.ordered:
            return "-"
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return None

    def bound(self, x: float) -> str:
        special = self._special(x)
        if special is not None:
            return special
        if self.kind in "iub":
            return str(int(x))
        if self.kind == "f" and self.dtype.itemsize < 8:
            # the bounds are exact widenings of the stored values: show them
            # in the column's own shortest form (0.1 for an f4 0.1)
            return str(self.dtype.type(x))
        return repr(float(x))

    def total(self, x: float) -> str:
        special = self._special(x)
        if special is not None:
            return special
        if self.kind in "iub" and abs(x) < 2.0**53 and x == int(x):
            return str(int(x))
        return repr(float(x))


def _json_numbers(nums: dict[str, Any] | None, ordered: bool, kind: str) -> Any:
    if nums is None:
        return None
    out = dict(nums)
    if not ordered:
        out["min"] = out["max"] = out["sum"] = None
    elif kind in "iub":
        for k in ("min", "max"):
            if math.isfinite(out[k]):
                out[k] = int(out[k])
        if math.isfinite(out["sum"]) and abs(out["sum"]) < 2.0**53 and out["sum"] == int(out["sum"]):
            out["sum"] = int(out["sum"])
    return jsonable(out)


def _rows_text(first: int, rows: int) -> str:
    if rows <= 0:
        return "-"
    return f"{first}-{first + rows - 1}"


# ---------------------------------------------------------------------------


def _gather(col: Any, comps: list[int]) -> np.ndarray:
    """Chunk records, shape (nchunks, len(comps))."""
    if len(comps) == 1:
        return col.chunk_stats(comps[0]).reshape(-1, 1)
    stats = col.chunk_stats()
    return stats.reshape(len(stats), -1)[:, comps]


def _columns(f: Any, name: str) -> tuple[list[Any], bool]:
    """The columns NAME stands for, and whether it is a group: a column, or
    a group (``1`` or ``1/``) standing for the data columns below it."""
    if name.rstrip("/"):
        try:
            col = f[name.rstrip("/")]
        except colfile.InvalidNameError as exc:
            raise CliError(f"bad column name {name!r}: {exc}") from None
        except KeyError:
            pass
        else:
            if col.kind != "data":
                raise CliError(f"{f.path}: {name!r} is a {col.kind} block: it holds "
                               "attributes, no rows and no statistics")
            return [col], False
    group = name.rstrip("/")
    try:
        found = group != "" and f.get(group + "/") is not None
    except colfile.InvalidNameError as exc:
        raise CliError(f"bad group name {name!r}: {exc}") from None
    if not found:
        raise NotFoundError(f"{f.path}: no column or group {name!r}")
    cols = [f[n] for n in f.columns if n.startswith(group + "/")]
    return [c for c in cols if c.kind == "data"], True


def run(args: Any) -> int:
    out = sys.stdout
    with open_file(args.path) as f:
        cols, is_group = _columns(f, args.column)
        if is_group and args.plot is not None:
            raise UsageError(f"{args.column!r} is a group: --plot draws one column",
                             hint="try 'colfile stats --help'")
        if args.plot is not None:
            _plot.check_target(args.plot)
        if is_group and (args.blob is not None or args.component is not None):
            raise UsageError(f"{args.column!r} is a group: --blob and --component apply "
                             "to one column", hint="try 'colfile stats --help'")
        docs = []
        for i, col in enumerate(cols):
            if i and not args.json:
                print(file=out)
            docs.append(_one(f, col, args, out))
        if args.json and is_group:
            dump_json({"path": f.path, "group": args.column.rstrip("/"),
                       "columns": docs}, out)
        elif args.json:
            dump_json(docs[0], out)
        elif is_group and not cols:
            print(f"{args.column.rstrip('/')}: a group without data columns", file=out)
        out.flush()
        if args.plot is not None:
            col = cols[0]
            _plot.draw(args.plot, lambda: plots.stats_figure(col, args.component))
    return 0


def _one(f: Any, col: Any, args: Any, out: Any) -> Any:
    """The statistics of one column of ``f``: printed, or (--json) returned."""
    name = col.name
    nmemb = max(col.nmemb, 1)
    vector = col.nmemb > 1
    if args.component is not None:
        j = args.component
        if not -nmemb <= j < nmemb:
            raise UsageError(f"--component {j} is out of range: {name!r} has {nmemb} "
                             f"element{'s' if nmemb != 1 else ''} per row",
                             hint="try 'colfile stats --help'")
        comps = [j % nmemb]
    else:
        comps = list(range(nmemb))
    show_comp = vector or args.component is not None
    nfile = col.nfile
    blobs = list(range(nfile)) if args.blob is None else list(dict.fromkeys(args.blob))
    for b in blobs:
        if b >= nfile:
            raise UsageError(f"--blob {b} ({blob_id(b)}) does not exist: {name!r} has "
                             f"{nfile} blob{'s' if nfile != 1 else ''}",
                             hint="try 'colfile stats --help'")
    recs = _gather(col, comps)
    blob_rows = col.blob_rows
    starts = np.concatenate([[0], np.cumsum(blob_rows)]).astype(np.int64)
    chunk_blob = recs["blob"][:, 0] if len(recs) else np.zeros(0, np.int64)
    ordered = bool(recs["ordered"][0, 0]) if len(recs) else \
        col.dtype.kind not in "cSa"
    fmt = _Fmt(col.dtype, ordered)
    kind = col.dtype.kind

    blob_docs: list[dict[str, Any]] = []
    known_blobs = 0
    for b in range(nfile):
        sel = np.flatnonzero(chunk_blob == b)
        r = recs[sel]
        known = bool(r["valid"].all())  # a blob without rows has nothing to know
        known_blobs += known
        doc: dict[str, Any] = {"blob": b, "id": blob_id(b), "first_row": int(starts[b]),
                               "rows": int(blob_rows[b]), "known": known,
                               "chunks": [], "total": None}
        # a blob whose statistics are unknown comes as one record, not
        # per chunk: it lists no chunks, only its "all" line
        for i, k in enumerate(sel.tolist() if known else []):
            rec = r[i]
            valid = bool(rec[0]["valid"])
            doc["chunks"].append({
                "index": int(k), "chunk": i, "first_row": int(rec[0]["first_row"]),
                "rows": int(rec[0]["rows"]), "valid": valid,
                "components": [None if not valid else _numbers(rec[c])
                               for c in range(len(comps))]})
        if known:
            doc["total"] = [_combine(r[:, c]) for c in range(len(comps))]
        blob_docs.append(doc)
    all_known = known_blobs == nfile
    if all_known and nfile:
        total = [_combine(recs[:, c]) for c in range(len(comps))]
    elif nfile == 0:
        total = [_combine(recs[:0, c]) for c in range(len(comps))]
    else:
        total = None

    if args.json:
        return {
            "path": f.path, "column": col.name, "dtype": col.dtype.str, "nmemb": col.nmemb,
            "size": col.size, "nfile": nfile, "chunk_rows": col.chunk_rows,
            "components": comps, "ordered": ordered,
            "blobs_known": known_blobs,
            "blobs": [{**{k: v for k, v in d.items() if k not in ("chunks", "total")},
                       **({} if args.totals else {"chunks": [
                           {**{k: v for k, v in ch.items() if k != "components"},
                            "components": [_json_numbers(n, ordered, kind)
                                           for n in ch["components"]]}
                           for ch in d["chunks"]]}),
                       "total": None if d["total"] is None else
                       [_json_numbers(n, ordered, kind) for n in d["total"]]}
                      for d in blob_docs if d["blob"] in blobs],
            "total": None if total is None else
            [_json_numbers(n, ordered, kind) for n in total],
        }

    shape = f"{col.dtype.str}" + (f" x {col.nmemb}" if vector else "")
    print(f"{col.name}: {shape}, {col.size} rows in {nfile} blob{'s' if nfile != 1 else ''}"
          f", chunks of {col.chunk_rows} rows; statistics known for {known_blobs} of "
          f"{nfile} blob{'s' if nfile != 1 else ''}", file=out)
    head = ["blob", "chunk", "rows", "state"] + (["comp"] if show_comp else []) + \
        ["count", "nan", "min", "max", "sum"]
    right = [False, False, False, False] + ([True] if show_comp else []) + \
        [True, True, True, True, True]
    rows: list[list[str]] = [head]

    def numbers(nums: dict[str, Any] | None) -> list[str]:
        if nums is None:
            return ["-"] * 5
        return [str(nums["count"]), str(nums["nan"]), fmt.bound(nums["min"]),
                fmt.bound(nums["max"]), fmt.total(nums["sum"])]

    def add(bcell: str, ccell: str, rcell: str, state: str,
            per_comp: list[dict[str, Any] | None]) -> None:
        for c, nums in enumerate(per_comp):
            lead = [bcell, ccell, rcell, state] if c == 0 else ["", "", "", ""]
            rows.append(lead + ([str(comps[c])] if show_comp else []) + numbers(nums))

    for d in blob_docs:
        if d["blob"] not in blobs:
            continue
        bid = d["id"]
        if not args.totals:
            for ch in d["chunks"]:
                add(bid, str(ch["chunk"]), _rows_text(ch["first_row"], ch["rows"]),
                    "valid" if ch["valid"] else "UNKNOWN", ch["components"])
        if not args.totals and len(d["chunks"]) == 1:
            continue  # its one chunk line is its total
        state = "valid" if d["known"] else "UNKNOWN"
        if d["rows"] == 0:
            state = "no rows"
        add(bid, "all", _rows_text(d["first_row"], d["rows"]), state,
            d["total"] if d["total"] is not None else [None] * len(comps))
    if args.blob is None or len(blobs) > 1 or nfile == 1:
        missing = nfile - known_blobs
        state = "valid" if total is not None else f"UNKNOWN ({missing} blob" \
            f"{'s' if missing != 1 else ''})"
        add("column", "all", _rows_text(0, col.size), state,
            total if total is not None else [None] * len(comps))
    for line in table(rows, right=right):
        print(line, file=out)
    if known_blobs < nfile:
        k = nfile - known_blobs
        print(f"UNKNOWN: {k} of {nfile} blob{'s' if nfile != 1 else ''} "
              f"{'has' if k == 1 else 'have'} no current statistics (never computed: "
              "written by another tool or with statistics off; or stale: the data "
              f"changed since); 'colfile index {args.path} {col.name}' computes them",
              file=out)
    return None
