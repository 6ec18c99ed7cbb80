"""Write the cross-language test pattern with colfile's Python MPI layer.

    mpiexec -n N python write_pattern.py DIR --total N --nfile K \\
        --mode throttled|aggregated|blob_owners|auto [--concurrency C] \\
        [--layout even|skewed|uneven] [--align] [--appends K] [--chunk-rows R] [--serial]

The C program ``tests/mpi/cf_write_pattern.c`` (libcolfile-mpi) does exactly
the same, so the two trees must be identical byte for byte (and identical to
a serial write, ``--serial``: no MPI, one process holding every row).

File DIR is opened with mode 'w' collectively and gets, in this order, the
columns

=========  =====  =====  ===========================================
column     dtype  nmemb  value of row ``row``, element ``j``
=========  =====  =====  ===========================================
Position   f8     3      ``row + 0.25*j``
Velocity   f4     3      ``float32(row % 1000) - 0.5*j`` (in float32)
ID         i8     1      ``row*3 + 1``
Mass       f4     1      ``1.0 + (row % 7)``
=========  =====  =====  ===========================================

each created with ``nfile`` K (0: automatic) and written with one
collective write, and the File attributes ``BoxSize`` (f8 1000.0) and
``Time`` (f8 0.5).  With ``--appends K`` (K > 0) a fifth column ``Log``
(i8, value ``row*5 + 1``) is created empty and grown by K collective
appends (``Column.append``, default blobs), append s (1..K) adding
``37*s + 5`` rows split over the ranks as below.  Rows per rank: ``even`` gives rank r
``cf_plan_share(total, nranks, r)``; ``skewed`` gives rank 0 nothing and
ranks 1..n-1 ``cf_plan_share(total, n-1, r-1)`` (one rank: everything);
``uneven`` starts rank r's rows at ``total*r^2/n^2 + r`` (at most total).
``--chunk-rows R`` (with ``--nfile`` K > 0) creates each column with K
blobs and R rows per chunk.

MPI is used under a launcher (PMI_RANK, PMI_SIZE or OMPI_COMM_WORLD_SIZE
set), unless ``--serial``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np


def rows_of(total: int, nranks: int, rank: int, layout: str) -> tuple[int, int]:
    """``(first, count)`` of this rank's rows."""
    from colfile.mpi import plan_share

    if layout == "uneven":
        def start(r: int) -> int:
            if r <= 0:
                return 0
            if r >= nranks:
                return total
            return min(total, int(float(total) * r * r / (float(nranks) * nranks)) + r)

        return start(rank), start(rank + 1) - start(rank)
    if layout == "even" or nranks == 1:
        return plan_share(total, nranks, rank)
    if rank == 0:
        return 0, 0
    return plan_share(total, nranks - 1, rank - 1)


def columns(first: int, count: int) -> list[tuple[str, Any, np.ndarray]]:
    """(name, dtype spec, this rank's rows) of the four columns, in order."""
    row = np.arange(first, first + count, dtype=np.int64)
    j3 = np.arange(3)
    position = row.astype(np.float64)[:, None] + 0.25 * j3
    velocity = ((row % 1000).astype(np.float32)[:, None]
                - np.float32(0.5) * j3.astype(np.float32))
    assert velocity.dtype == np.float32
    ident = row * 3 + 1
    mass = np.float32(1.0) + (row % 7).astype(np.float32)
    return [("Position", ("f8", 3), position), ("Velocity", ("f4", 3), velocity),
            ("ID", "i8", ident), ("Mass", "f4", mass)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir")
    p.add_argument("--total", type=int, required=True)
    p.add_argument("--nfile", type=int, required=True)
    p.add_argument("--mode", choices=("throttled", "aggregated", "blob_owners", "auto"),
                   required=True)
    p.add_argument("--concurrency", type=int, default=None)
    p.add_argument("--layout", choices=("even", "skewed", "uneven"), default="even")
    p.add_argument("--chunk-rows", type=int, default=None)
    p.add_argument("--align", action="store_true")
    p.add_argument("--appends", type=int, default=0)
    p.add_argument("--serial", action="store_true", help="no MPI: one process")
    args = p.parse_args(argv)

    import colfile

    comm: Any = None
    launched = any(os.environ.get(k) for k in ("PMI_RANK", "PMI_SIZE",
                                               "OMPI_COMM_WORLD_SIZE"))
    if launched and not args.serial:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    rank = 0 if comm is None else comm.rank
    nranks = 1 if comm is None else comm.size
    first, count = rows_of(args.total, nranks, rank, args.layout)
    with colfile.File(args.dir, "w", comm=comm) as f:
        for name, dtype, data in columns(first, count):
            if args.chunk_rows and comm is not None:
                # with chunk_rows: nfile blobs splitting the rows evenly,
                # this rank's rows at its place (as cf_write_pattern)
                total = sum(comm.allgather(len(data)))
                col = f.create(name, dtype, size=total, nfile=args.nfile,
                               chunk_rows=args.chunk_rows)
                col.write_all(data, start=first, mode=args.mode, concurrency=args.concurrency)
            else:
                f.create(name, dtype, data=data, nfile=args.nfile or None,
                         align_blobs_to_ranks=args.align, mode=args.mode,
                         concurrency=args.concurrency, chunk_rows=args.chunk_rows)
        if args.appends:
            log = f.create("Log", "i8", data=np.zeros(0, np.int64), mode=args.mode)
            for step in range(1, args.appends + 1):
                a, n = rows_of(37 * step + 5, nranks, rank, args.layout)
                rows = np.arange(log.size + a, log.size + a + n, dtype=np.int64)
                log.append(rows * 5 + 1)
        f.attrs["BoxSize"] = np.float64(1000.0)
        f.attrs["Time"] = np.float64(0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
