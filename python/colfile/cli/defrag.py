"""``colfile defrag``: rewrite a stream as an ordinary column."""

from __future__ import annotations

import argparse
from typing import Any

import colfile.stream as cs
import colfile.stream_tools as st

from ._common import NotFoundError, command_parser, open_file, positive_int
from ._launch import communicator

HELP = "rewrite a stream as an ordinary column that bigfile reads"

DESCRIPTION = """\
Rewrite the stream NAME as an ordinary column of the same name: its rows in
the global view's order (task 0's, then task 1's, ...), split over NFILE
blobs by bigfile's rule, readable by bigfile 0.1.52.  The stream's chunks
are checked against their CRC32C as they are read, and the column's rows
are read back and compared with the stream's before the column is
committed; the commit then replaces the stream in one atomic step, so that
a crash leaves the stream or the column, never neither.

Under mpiexec (or with --mpi) every rank copies and checks an even share of
the rows, with collective writes; a failure on any rank fails every rank
and commits nothing."""

EPILOG = """\
examples:
  colfile defrag run particles
  colfile defrag run particles --nfile 16
  mpiexec -n 8 colfile defrag run particles"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "defrag", HELP, DESCRIPTION, EPILOG)
    p.add_argument("path", metavar="PATH", help="the File (a directory)")
    p.add_argument("name", metavar="NAME", help="the stream")
    p.add_argument("--nfile", type=positive_int, default=None,
                   help="blobs of the column (default: one per 256 MiB)")
    p.add_argument("-v", "--verbose", action="store_true", help="say what was done")
    p.add_argument("--mpi", action="store_true",
                   help="use MPI (mpi4py) even without a launcher's environment")
    return p


def run(args: Any) -> int:
    comm = communicator(args.mpi)
    with open_file(args.path, "r+", **({"comm": comm} if comm is not None else {})) as f:
        if args.name not in cs.list_streams(f):
            raise NotFoundError(f"{f.path}: no stream {args.name!r}")
        st.defrag(f, args.name, args.nfile)
        if args.verbose and (comm is None or comm.rank == 0):
            col = f[args.name]
            print(f"{args.name}: {col.shape[0]} rows in {col.nfile} blobs")
            col.close()
    return 0
