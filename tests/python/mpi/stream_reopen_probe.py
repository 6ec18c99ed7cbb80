"""The Python twin of tests/mpi/cf_stream_reopen_probe.c (run by
test_stream_reopen_twins.py): every rank reopens stream NAME of FILE under
comm=, appends 40 r + 3 rows (row i of the task: r * 1e6 + i, -i, i / 2)
and closes it; rank 0 prints "rank R read B rows N" for each rank.

    mpiexec -n N python stream_reopen_probe.py FILE NAME
"""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

import colfile
import colfile.stream as cs


def main() -> None:
    world = MPI.COMM_WORLD
    rank = world.rank
    with colfile.File(sys.argv[1], "a", comm=world) as f:
        w = cs.reopen(f, sys.argv[2])
        have, read = w.task().rows, w.table_bytes
        i = np.arange(have, have + 40 * rank + 3, dtype=np.float64)
        w.append(np.stack([rank * 1e6 + i, -i, i / 2], axis=1))
        w.close()
    seen = world.gather((read, have), root=0)
    if rank == 0:
        for r, (b, n) in enumerate(seen):
            print(f"rank {r} read {b} rows {n}")


if __name__ == "__main__":
    main()
