"""``colfile query``: the rows where a condition holds, found with the
per-chunk statistics first (chunks that cannot match are never read)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

import colfile

from . import _hist
from ._common import (CliError, JsonRows, NotFoundError, UsageError, column_headers, column_info,
                      command_parser, dump_json, fmt_bytes, group_names, json_row_values, open_file)
from ._format import TextRows, formatter, piece_cells

#: the attribute kinds colfile writes (docs/format.md 7.3)
_WRITABLE_KINDS = "iufcbSa"

HELP = "print (or count, or copy) the rows where a condition holds"

DESCRIPTION = """\
Evaluate the condition EXPR over the columns of the File and print the
matching rows of the --columns (default: the columns named in EXPR), as
aligned text (the default) or CSV, formatted as 'colfile cat' does.  Rows
come out in row order.

EXPR compares expressions of columns and numbers and combines the
comparisons with & (and), | (or), ~ (not) and parentheses, as numpy does:

  (Position[0] > 100) & (ID < 5000)       Position[0]: element 0 of each row
  10 <= Mass < 20                         chained comparisons
  Position[0]**2 + Position[1]**2 < 100   arithmetic: + - * / // % ** and -x
  (ID % 2 == 0) & (log10(Mass) > 10)      abs sqrt exp log log10 floor
  isin(ID, [3, 17, 42])                   one of the numbers
  ~(Flag == 1) | (Mass != 0)              NaN compares false except with !=
  1/Position[0] > 5                       a path written plainly (x / 2 divides)
  ('odd name' > 1e10)                     quote other names

Comparisons are < <= > >= == !=; values have numpy's semantics (integer
division, wrapping, NaN).  Names are column names of the File, or of GROUP
with --group.  Results are exact (numpy's
evaluation on the stored values); the per-chunk statistics only decide
which chunks need to be read: a chunk whose minimum and maximum (carried
through the arithmetic by interval arithmetic) exclude the condition is
skipped, one whose range satisfies it whole is taken without
reading the condition's columns.  Chunks with unknown statistics (Files
written by bigfile: run 'colfile index') are read.  --report tells what was
skipped."""

EPILOG = """\
examples:
  colfile query snapshot -g 1 '(Position[0] > 100) & (ID < 5000)'
  colfile query snapshot -g 1 'Mass > 1e12' -c ID,Mass --csv --header > heavy.csv
  colfile query snapshot "'1/Mass' > 1e12" --count --report
  colfile query snapshot -g 1 '(Position[0] < 10)' -c ID,Position,Mass --out slab
  colfile query snapshot -g 1 'ID == 42' -c Position,Velocity --limit 1
  colfile query snapshot -g 1 'Mass > 1e12' -c Mass --hist --bins 30
  colfile query snapshot -g 1 'Mass > 1e12' -c Mass --plot mass.png

--hist prints one line per bin, [low, high) count and a bar of #, over the
matching rows of the one column named with -c (or, without -c, the one
column of the condition); NaNs are left out, the range is the values'
minimum to maximum.  --plot draws the same histogram into a picture.

--report writes to stderr what evaluating the condition skipped: chunks
(cells of the rows cut at every chunk boundary of the columns in EXPR)
skipped because no row can match, taken whole because every row matches,
and scanned; the bytes read against the size of those columns.
--json prints one object: "path", "expr", "group" (null without --group),
"matches" (rows where EXPR holds), "columns" (name, dtype, nmemb, shape of
each) and "rows", a list of objects keyed by the column names as given
(a list per row for vector columns), with "index", the row numbers of the
listed rows; with --count only "path", "expr", "group" and "matches" (at
most N with --limit).  Values are written as in 'colfile cat --json'.
--out writes the selected rows of the --columns, with their dtypes and
attributes, to the new File NEWFILE (which must not exist) and prints one
line; with --limit, only the first N rows.  The attributes of the File and
of the groups above the copied columns are copied as well.

exit status: 0 done (also when no row matches), 1 failure, 2 usage error,
a malformed EXPR, or no such File, group or column"""

#: Rows read and printed at once.
PIECE_ROWS = 65536


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "query", HELP, DESCRIPTION, EPILOG)
    p.add_argument("path", metavar="PATH", help="the File (a directory)")
    p.add_argument("expr", metavar="EXPR", help="the condition, e.g. '(Mass > 1) & (ID < 10)'")
    p.add_argument("-c", "--columns", metavar="A,B", action="append", default=[],
                   help="comma-separated columns to print or copy (default: those in "
                        "EXPR); may be repeated")
    p.add_argument("-g", "--group", metavar="GROUP", default=None,
                   help="look names up in this group (e.g. 1 for 1/ID, 1/Mass)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--count", action="store_true",
                     help="print only the number of matching rows")
    out.add_argument("--out", metavar="NEWFILE", default=None,
                     help="write the selected rows to a new File instead of printing them")
    p.add_argument("--csv", action="store_true", help="CSV output (RFC 4180 quoting)")
    p.add_argument("--header", action="store_true", help="print a line of column names first")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--hist", action="store_true",
                   help="print a histogram of the one column of -c (or of the condition) "
                        "over the matching rows, instead of the rows")
    p.add_argument("--bins", type=int, default=20, metavar="N",
                   help="bins of --hist and --plot (default 20)")
    p.add_argument("--plot", metavar="OUT.png", default=None,
                   help="draw that histogram into a picture (needs matplotlib: "
                        "pip install colfile[plot])")
    p.add_argument("-n", "--limit", type=int, default=None, metavar="N",
                   help="at most the first N matching rows")
    p.add_argument("--report", action="store_true",
                   help="tell on stderr what was skipped, read and selected")
    p.add_argument("--piece-rows", type=int, default=PIECE_ROWS, help=argparse.SUPPRESS)
    return p


def _column_names(args: Any) -> list[str]:
    names: list[str] = []
    for group in args.columns:
        names.extend(n for n in group.split(",") if n)
    return list(dict.fromkeys(names))


def _source(f: Any, group: str | None) -> Any:
    if group is None or group.strip("/") in ("", "."):
        return f
    try:
        g = f.get(group.strip("/") + "/")
    except colfile.InvalidNameError as exc:
        raise CliError(f"bad group name {group!r}: {exc}") from None
    if g is None:
        raise NotFoundError(f"{f.path}: no group {group!r}")
    return g


def _resolve(source: Any, name: str, size: int) -> Any:
    try:
        col = source[name]
    except colfile.InvalidNameError as exc:
        raise CliError(f"bad column name {name!r}: {exc}") from None
    except KeyError:
        raise NotFoundError(f"{source.path}: no column {name!r}") from None
    if not isinstance(col, colfile.Column):
        raise NotFoundError(f"{source.path}: {name!r} is a group, not a column")
    if col.kind != "data":
        raise CliError(f"{source.path}: {name!r} is a {col.kind} block: it holds "
                       "attributes, no rows")
    if col.size != size:
        raise CliError(f"{name!r} has {col.size} rows, the columns of the condition "
                       f"{size}: they cannot be printed side by side")
    return col


def _report(sel: Any, elapsed: float, shown: int | None, cols: list[Any]) -> None:
    """What evaluating the condition skipped and read (``cols``: the
    columns of the condition)."""
    r = sel.report
    err = sys.stderr
    def pct(a: int, b: int) -> str:
        if not b:
            return ""
        p = 100.0 * a / b
        return f" ({p:.1f}%)" if p >= 0.1 or p == 0 else " (<0.1%)"

    print(f"query over {', '.join(r.columns)}: {sel.count} of {sel.size} rows match"
          f"{pct(sel.count, sel.size)}"
          + ("" if shown is None or shown == sel.count else f", first {shown} used"), file=err)
    print(f"  chunks: {r.chunks} in all, {r.skipped} skipped (no match), {r.all_match} "
          f"taken whole (all match), {r.scanned} scanned", file=err)
    print(f"  read:   {fmt_bytes(r.bytes_read)} of {fmt_bytes(r.bytes_total)} of the "
          f"condition's columns ({r.bytes_read} of {r.bytes_total} bytes"
          + (f", {pct(r.bytes_read, r.bytes_total)[2:]}" if r.bytes_total else ")"),
          file=err)
    print(f"  time:   {elapsed:.3f} s to evaluate", file=err)
    for col in cols:
        st = col.chunk_stats(0)  # one record per blob whose statistics are unknown
        unknown = int(np.count_nonzero(~st["valid"]))
        if unknown:
            blobs = len(np.unique(st["blob"]))
            print(f"  note:   {unknown} of {blobs} blob{'s' if blobs != 1 else ''} of {col.name} "
                  f"{'have' if unknown != 1 else 'has'} no statistics and "
                  f"{'were' if unknown != 1 else 'was'} read; 'colfile index' computes them",
                  file=err)
    err.flush()


def _print_rows(args: Any, names: list[str], cols: list[Any], rows: np.ndarray) -> None:
    out = sys.stdout
    headers, right = column_headers(names, cols)
    fmts = [formatter(c.dtype) for c in cols]
    printer = TextRows(out, headers, right, args.csv, args.header)
    step = max(int(args.piece_rows), 1)
    first = True
    pos = 0
    n = len(rows)
    while pos < n or (first and args.header):
        piece = rows[pos:pos + step]
        printer.write(piece_cells([col[piece] if len(piece) else np.empty(
            (0,) + tuple(col.shape[1:]), col.dtype) for col in cols], fmts))
        first = False
        pos += len(piece)
        if pos >= n:
            break
    out.flush()


def _print_json(args: Any, f: Any, names: list[str], cols: list[Any], matches: int,
                rows: np.ndarray) -> None:
    out = sys.stdout
    doc = JsonRows({"path": f.path, "expr": args.expr, "group": args.group,
                    "matches": matches,
                    "columns": [column_info(n, c) for n, c in zip(names, cols)],
                    "index": rows.tolist()}, out)
    step = max(int(args.piece_rows), 1)
    for pos in range(0, len(rows), step):
        piece = rows[pos:pos + step]
        doc.add(names, [json_row_values(c[piece]) for c in cols])
    doc.close()
    out.flush()


def _copy_attrs(src: Any, dst: Any, what: str) -> None:
    """Copy every attribute of ``src`` to ``dst`` (attribute managers) in
    its stored form, except kinds colfile does not write (said on stderr)."""
    for a in src:
        tok, nmemb, data = src.raw(a)
        if tok[1:2] not in _WRITABLE_KINDS:  # another tool's kind: colfile writes none
            print(f"colfile query: attribute {a!r} of {what} ({tok}) not copied: "
                  "colfile keeps such kinds but does not write them", file=sys.stderr)
            continue
        dst.set_raw(a, tok, nmemb, data)


def _write_out(args: Any, f: Any, cols: list[Any], rows: np.ndarray) -> None:
    try:
        g = colfile.File(args.out, "x")
    except FileExistsError:
        raise CliError(f"{args.out}: exists; --out writes a new File") from None
    except colfile.Error as exc:
        if "exist" in str(exc).lower():
            raise CliError(f"{args.out}: exists; --out writes a new File") from None
        raise
    n = len(rows)
    step = max(int(args.piece_rows), 1)
    with g:
        for col in cols:
            dtype = col.dtype if col.nmemb <= 1 and col.ndim == 1 else (col.dtype, col.nmemb)
            new = g.create(col.name, dtype, size=n)
            for pos in range(0, n, step):
                new.write(pos, col[rows[pos:pos + step]])
            _copy_attrs(col.attrs, new.attrs, repr(col.name))
            new.close()
        # the attributes of the File and of every group above a copied
        # column (BoxSize, Time, MassTable...) describe the rows too
        _copy_attrs(f.attrs, g.attrs, "the File")
        for grp in group_names(c.name for c in cols):
            _copy_attrs(f[grp + "/"].attrs, g[grp + "/"].attrs, f"group {grp!r}")
    what = ", ".join(c.name for c in cols)
    print(f"wrote {n} row{'s' if n != 1 else ''} of {len(cols)} column"
          f"{'s' if len(cols) != 1 else ''} ({what}) to {args.out}")


def run(args: Any) -> int:
    if args.limit is not None and args.limit < 0:
        raise UsageError(f"--limit must be 0 or more, not {args.limit}",
                         hint="try 'colfile query --help'")
    if args.piece_rows < 1:
        raise UsageError("--piece-rows must be at least 1")
    if args.out is not None and (args.csv or args.header or args.json):
        raise UsageError("--out writes a File: --csv, --header and --json do not apply",
                         hint="try 'colfile query --help'")
    if args.json and (args.csv or args.header):
        raise UsageError("--json prints JSON: --csv and --header do not apply",
                         hint="try 'colfile query --help'")
    if args.hist or args.plot is not None:
        _hist.check_args(args)
    with open_file(args.path) as f:
        source = _source(f, args.group)
        t0 = time.perf_counter()
        try:
            sel = colfile.where(source, args.expr)
        except colfile.ExpressionError as exc:
            raise UsageError(f"bad expression: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise CliError(str(exc)) from None
        elapsed = time.perf_counter() - t0
        fields = sel.predicate.fields
        fields = fields() if callable(fields) else fields
        names = _column_names(args)
        if not names:
            names = list(dict.fromkeys(fl.column.name for fl in fields))
            source_for_names = f
        else:
            source_for_names = source
        cols = [_resolve(source_for_names, n, sel.size) for n in names]
        if args.hist or args.plot is not None:
            rows = sel.rows if args.limit is None else sel.rows[:args.limit]
            _hist.show(args, names, cols, rows)
            return 0
        shown = None
        count = sel.count if args.limit is None else min(sel.count, args.limit)
        if args.count and args.json:
            dump_json({"path": f.path, "expr": args.expr, "group": args.group,
                       "matches": count}, sys.stdout)
        elif args.count:
            print(count)
        else:
            rows = sel.rows
            if args.limit is not None:
                rows = rows[:args.limit]
            shown = len(rows)
            if args.out is not None:
                _write_out(args, f, cols, rows)
            elif args.json:
                _print_json(args, f, names, cols, sel.count, rows)
            else:
                _print_rows(args, names, cols, rows)
        if args.report:
            _report(sel, elapsed, shown, list({id(fl.column): fl.column
                                               for fl in fields}.values()))
    return 0
