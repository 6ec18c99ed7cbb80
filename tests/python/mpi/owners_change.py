"""The Python twin of ``tests/mpi/cf_owners_change.c``
(test_owners_cross_language.py): a large committed column appended to and
updated collectively, so that its closes run by chunk owners::

    mpiexec -n N python owners_change.py DIR
    python owners_change.py DIR --serial

Rank 0 writes ``DIR/x`` alone (f8 x 2, 69999 rows in 3 blobs, 2 rows a
chunk: 35000 chunks, 70000 chunk records), then every rank appends its rows
of 9001 more in 2 blobs and closes, then rewrites its rows of blob 1 and
closes.  Rows are cut unevenly: rank r's start at
``a + int((b - a) * r^2 / n^2) + r`` (at most b).  Row i, component j holds
``(2 i + j) / 2 + 10^6 g`` in generation g (0 the base, 1 the append, 2 the
update).  ``--serial``: one process makes the same changes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import colfile

NMEMB, CHUNK, OLD, NFILE, NEW, NEW_FILES = 2, 2, 69999, 3, 9001, 2


def rows_of(first: int, n: int, gen: int) -> np.ndarray:
    i = np.arange(first, first + n, dtype=np.int64)[:, None]
    j = np.arange(NMEMB, dtype=np.int64)[None, :]
    return (2 * i + j).astype(np.float64) / 2 + 1e6 * gen


def start(a: int, b: int, r: int, n: int) -> int:
    if r <= 0:
        return a
    if r >= n:
        return b
    return min(b, a + int(float(b - a) * r * r / (float(n) * n)) + r)


def main(argv: list[str]) -> None:
    path = Path(argv[0])
    serial = "--serial" in argv[1:]
    comm = None
    if not serial:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    rank = comm.rank if comm else 0
    if rank == 0:
        with colfile.File(path, "w") as f:
            f.create("x", data=rows_of(0, OLD, 0), nfile=NFILE, chunk_rows=CHUNK)
    if comm is None:
        with colfile.File(path, "a") as f:
            f["x"].append(rows_of(OLD, NEW, 1), nfile=NEW_FILES)
        with colfile.File(path, "a") as f:
            f["x"][OLD // 3:2 * (OLD // 3)] = rows_of(OLD // 3, OLD // 3, 2)
        return
    comm.barrier()
    n = comm.size
    a, b = OLD, OLD + NEW
    lo, hi = start(a, b, rank, n), start(a, b, rank + 1, n)
    with colfile.File(path, "a", comm=comm) as f:
        f["x"].append(rows_of(lo, hi - lo, 1), nfile=NEW_FILES)
    a, b = OLD // 3, 2 * (OLD // 3)
    lo, hi = start(a, b, rank, n), start(a, b, rank + 1, n)
    with colfile.File(path, "a", comm=comm) as f:
        f["x"].write_all(rows_of(lo, hi - lo, 2), start=lo, mode="throttled")


if __name__ == "__main__":
    main(sys.argv[1:])
