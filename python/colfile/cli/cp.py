"""``colfile cp``: copy a File (or some of its columns), repartitioned or
converted."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

import colfile.tools

from ._common import (UsageError, add_src_dst_columns, add_tool_output, command_parser,
                      positive_int, run_tool, tool_columns)
from ._launch import communicator

HELP = "copy a File or columns to a new File (--nfile, --dtype)"

DESCRIPTION = """\
Copy the File SRC, or the COLUMNs named (columns, groups or patterns), to a
new File DST with the attributes of the File, of the groups and of the
columns.  Each column keeps its blob layout unless --nfile splits its rows
evenly over N blobs; --dtype converts the elements of every column with
data (numpy's astype: floats to integers truncate; bytes convert only to
bytes, numbers to numbers, complex to complex), vector columns keep their
components; header-only blocks are copied as such.

The copy is written under a hidden name next to DST, read back with its
checksums verified and compared row for row with the source, and only then
renamed to DST: a failure leaves DST as it was.  DST must not exist unless
--overwrite is given.  Rows move in bounded chunks (--chunk-mb).

Under mpiexec (or with --mpi) every rank copies and verifies an even share
of each column's rows, the new File is written collectively, and rank 0
renames it into place; an error on any rank fails the command on all."""

EPILOG = """\
examples:
  colfile cp snapshot copy
  colfile cp snapshot small 1/Position 1/ID --nfile 4
  colfile cp snapshot single --dtype f4 1/Mass
  colfile cp snapshot copy --overwrite
  mpiexec -n 8 colfile cp snapshot copy --nfile 64"""


def _dtype(text: str) -> np.dtype[Any]:
    try:
        dt = np.dtype(text)
    except TypeError:
        raise argparse.ArgumentTypeError(f"not a dtype: {text!r}") from None
    if dt.kind not in "iufcbS" or dt.shape or dt.fields:
        raise argparse.ArgumentTypeError(f"not a column dtype (kinds i u f c b S): {text!r}")
    return dt


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "cp", HELP, DESCRIPTION, EPILOG)
    add_src_dst_columns(p, "copy")
    p.add_argument("--nfile", type=positive_int, metavar="N",
                   help="split each column's rows evenly over N blobs")
    p.add_argument("--dtype", type=_dtype, metavar="DTYPE",
                   help="convert the elements of every column (f4, >i8, S16, ...)")
    p.add_argument("-v", "--verbose", action="store_true", help="print each column copied")
    p.add_argument("--mpi", action="store_true",
                   help="use MPI (mpi4py) even without a launcher's environment")
    add_tool_output(p)
    return p


def run(args: Any) -> int:
    if args.chunk_mb <= 0:
        raise UsageError("--chunk-mb must be positive", hint="try 'colfile cp --help'")
    comm = communicator(args.mpi)
    cols = tool_columns(args.src, args.columns)
    done = run_tool(colfile.tools.copy, args.src, args.dst, cols, nfile=args.nfile,
                    dtype=args.dtype, overwrite=args.overwrite,
                    chunk_bytes=int(args.chunk_mb * (1 << 20)), comm=comm)
    if args.verbose and (comm is None or comm.Get_rank() == 0):
        for name in done:
            print(f"copied {name}", file=sys.stdout)
    return 0
