"""``colfile join``: concatenate Files with the same columns along rows."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import colfile.tools

from ._common import (UsageError, add_tool_output, command_parser, positive_int, run_tool,
                      tool_columns)

HELP = "concatenate Files with the same columns along rows"

DESCRIPTION = """\
Write to the new File DST the rows of every SRC one after the other.  The
sources must hold the same columns with the same dtypes and components
(-c restricts the join to some columns, which every source must hold).  A
column's blobs are those of the sources in order unless --nfile splits its
rows evenly.  Attributes (File, groups, columns) come from the first SRC.
Written, verified and renamed into place as 'colfile cp' does; DST must
not exist unless --overwrite is given."""

EPILOG = """\
examples:
  colfile join all part0 part1 part2
  colfile join all part0 part1 -c 1/Position,1/ID --nfile 8"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "join", HELP, DESCRIPTION, EPILOG)
    p.add_argument("dst", metavar="DST", help="the new File")
    p.add_argument("srcs", metavar="SRC", nargs="+", help="the Files to concatenate, in order")
    p.add_argument("-c", "--columns", metavar="A,B",
                   help="join only these columns, groups or patterns (comma separated)")
    p.add_argument("--nfile", type=positive_int, metavar="N", help="blobs of each column")
    p.add_argument("-v", "--verbose", action="store_true", help="print each column joined")
    add_tool_output(p)
    return p


def run(args: Any) -> int:
    if args.chunk_mb <= 0:
        raise UsageError("--chunk-mb must be positive", hint="try 'colfile join --help'")
    names = [c for c in args.columns.split(",") if c] if args.columns else []
    cols = tool_columns(args.srcs[0], names)  # as the first source resolves them
    done = run_tool(colfile.tools.join, args.dst, args.srcs, cols, nfile=args.nfile,
                    overwrite=args.overwrite, chunk_bytes=int(args.chunk_mb * (1 << 20)))
    if args.verbose:
        for name in done:
            print(f"joined {name}", file=sys.stdout)
    return 0
