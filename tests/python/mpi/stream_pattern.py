"""The Python twin of tests/mpi/cf_stream_pattern.c: the same stream from
colfile.stream under comm= (or, with --serial, from one process writing
every task), then every rank reads it back and checks it.

    mpiexec -n N python stream_pattern.py FILE [--serial N]
"""

from __future__ import annotations

import sys

import numpy as np

import colfile
import colfile.stream as cs


def rows_of(r: int) -> int:
    return 0 if r == 1 else 500 * r + 7


def pattern(r: int, start: int, stop: int) -> np.ndarray:
    i = np.arange(start, stop, dtype=np.float64)
    return np.stack([r * 1e6 + i, -i, i / 2], axis=1)


def append_rows(task: cs.StreamTask, r: int, start: int, stop: int) -> None:
    at, step = start, 1
    while at < stop:
        n = min(step, stop - at)
        task.append(pattern(r, at, at + n))
        at, step = at + n, step * 2


def main() -> None:
    path = sys.argv[1]
    if len(sys.argv) == 4 and sys.argv[2] == "--serial":
        size = int(sys.argv[3])
        with colfile.File(path, "a") as f:
            w = cs.create(f, "s", "<f8", nmemb=3, tasks=size, files=2 if size > 1 else 1, chunk=4096, align=4096)
            for r in range(size):
                append_rows(w.task(r), r, 0, rows_of(r) // 2)
            w.flush()
            for r in range(size):
                append_rows(w.task(r), r, rows_of(r) // 2, rows_of(r))
            w.close()
        return
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    with colfile.File(path, "a", comm=comm) as f:
        w = cs.create(f, "s", "<f8", nmemb=3, files=2 if size > 1 else 1, chunk=4096, align=4096)
        append_rows(w.task(), rank, 0, rows_of(rank) // 2)
        w.flush()
        append_rows(w.task(), rank, rows_of(rank) // 2, rows_of(rank))
        w.close()
        s = cs.open(f, "s", verify=True)
        assert s.tasks == size and s.commit == 2
        for r in range(size):
            np.testing.assert_array_equal(s.task(r), pattern(r, 0, rows_of(r)))
        np.testing.assert_array_equal(s[:], np.concatenate([pattern(r, 0, rows_of(r)) for r in range(size)]))


if __name__ == "__main__":
    main()
