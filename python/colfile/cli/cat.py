"""``colfile cat``: rows of columns as aligned text or CSV."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

import colfile

from ._common import (CliError, JsonRows, NotFoundError, UsageError, column_headers, column_info,
                      command_parser, json_row_values, open_file)
from ._format import TextRows, formatter, piece_cells

HELP = "print rows of columns as aligned text or CSV"

DESCRIPTION = """\
Print rows of one or more columns side by side, as aligned text (the
default) or as CSV.  The columns must have the same number of rows.  A
vector column (nmemb > 1) gives one output column per element, named
NAME[0], NAME[1], ...  Integers are exact, floats are printed in their
shortest form that reads back to the same value (nan, inf, -inf), complex
values as 1.5-2j, booleans as true/false.  Byte-string columns lose their
NUL padding, are shown as UTF-8 where valid, and have control characters,
backslashes and undecodable bytes escaped (\\n, \\\\, \\xff)."""

EPILOG = """\
examples:
  colfile cat snapshot -c 1/ID,1/Position --count 5 --header
  colfile cat snapshot 1/ID 1/Mass --start 1000 --count 10
  colfile cat snapshot -c 1/Mass --start -3          the last three rows
  colfile cat snapshot -c 1/ID,1/Mass --csv --header > table.csv
  colfile cat snapshot -c 1/ID,1/Position --count 3 --json

--json prints one object: "path", "columns" (name, dtype, nmemb, shape of
each), "start", "count" and "rows", a list of objects, one per row, keyed
by the column names as given (a list per row for vector columns).  As in
the other commands' JSON, non-finite floats are "nan", "inf", "-inf",
complex values [real, imag], byte strings text with escapes."""

CHUNK_ROWS = 65536


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "cat", HELP, DESCRIPTION, EPILOG)
    p.add_argument("path", metavar="PATH", help="the File (a directory)")
    p.add_argument("names", metavar="COLUMN", nargs="*",
                   help="columns to print (also possible with --columns)")
    p.add_argument("-c", "--columns", metavar="A,B", action="append", default=[],
                   help="comma-separated column names; may be repeated")
    p.add_argument("-s", "--start", type=int, default=0, metavar="N",
                   help="first row (default 0; negative counts from the end)")
    p.add_argument("-n", "--count", type=int, default=None, metavar="N",
                   help="number of rows (default: to the end)")
    p.add_argument("--csv", action="store_true", help="CSV output (RFC 4180 quoting)")
    p.add_argument("--header", action="store_true", help="print a line of column names first")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS, help=argparse.SUPPRESS)
    p.set_defaults(_extra_positionals="names")
    return p


# ---------------------------------------------------------------------------


def _names(args: Any) -> list[str]:
    names: list[str] = []
    for group in args.columns:
        names.extend(n for n in group.split(",") if n)
    names.extend(args.names)
    if not names:
        raise UsageError("no columns given: name them after PATH or with --columns A,B",
                         hint="try 'colfile cat --help'")
    return names


def _open_columns(f: Any, names: list[str]) -> list[Any]:
    cols = []
    for name in names:
        try:
            col = f[name]
        except colfile.InvalidNameError as exc:
            raise CliError(f"bad column name {name!r}: {exc}") from None
        except KeyError:
            if name.rstrip("/") and f.get(name.rstrip("/") + "/") is not None:
                raise NotFoundError(f"{f.path}: {name!r} is a group, not a column; "
                               "name the columns inside it") from None
            raise NotFoundError(f"{f.path}: no column {name!r}") from None
        if col.kind != "data":
            raise CliError(f"{f.path}: {name!r} is a {col.kind} block: it holds "
                           "attributes, no rows")
        cols.append(col)
    return cols


def _row_range(args: Any, size: int) -> tuple[int, int]:
    start = args.start
    if start < 0:
        start += size
        if start < 0:
            raise UsageError(f"--start {args.start} is before the first row "
                             f"(the columns have {size} rows)")
    elif start > size:
        raise UsageError(f"--start {start} is past the end (the columns have {size} rows)")
    if args.count is None:
        stop = size
    else:
        if args.count < 0:
            raise UsageError(f"--count must be 0 or more, not {args.count}")
        stop = min(size, start + args.count)
    return start, stop


def _json(f: Any, args: Any, names: list[str], cols: list[Any], start: int, stop: int,
          out: Any) -> None:
    doc = JsonRows({"path": f.path, "columns": [column_info(n, c) for n, c in zip(names, cols)],
                    "start": start, "count": stop - start}, out)
    for pos in range(start, stop, args.chunk_rows):
        end = min(stop, pos + args.chunk_rows)
        doc.add(names, [json_row_values(c.read(pos, end)) for c in cols])
    doc.close()
    out.flush()


def run(args: Any) -> int:
    names = _names(args)
    if args.chunk_rows < 1:
        raise UsageError("--chunk-rows must be at least 1")
    if args.json and (args.csv or args.header):
        raise UsageError("--json prints JSON: --csv and --header do not apply",
                         hint="try 'colfile cat --help'")
    out = sys.stdout
    with open_file(args.path) as f:
        cols = _open_columns(f, names)
        sizes = [c.size for c in cols]
        if len(set(sizes)) > 1:
            desc = ", ".join(f"{n} has {s}" for n, s in zip(names, sizes))
            raise CliError(f"columns of different lengths cannot be printed side by side: "
                           f"{desc} rows")
        size = sizes[0]
        start, stop = _row_range(args, size)
        if args.json:
            _json(f, args, names, cols, start, stop, out)
            return 0

        headers, right = column_headers(names, cols)
        fmts = [formatter(col.dtype) for col in cols]
        printer = TextRows(out, headers, right, args.csv, args.header)
        first_chunk = True
        pos = start
        while pos < stop or (first_chunk and args.header):
            end = min(stop, pos + args.chunk_rows)
            printer.write(piece_cells([col.read(pos, end) if end > pos else np.empty(
                (0,) + tuple(col.shape[1:]), col.dtype) for col in cols], fmts))
            first_chunk = False
            pos = end
            if pos >= stop:
                break
        out.flush()
    return 0
