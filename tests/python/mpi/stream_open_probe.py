"""The Python twin of tests/mpi/cf_stream_open_probe.c (run by
test_stream_open_twins.py): every rank opens stream NAME of FILE with
``colfile.stream.open(..., collective=True)`` and writes its share of the
global view to OUT.<rank>; rank 0 prints, in rank order, "rank R opened B
read C" (the table bytes rank R read at the open and after its share).

    mpiexec -n N python stream_open_probe.py FILE NAME OUT
"""

from __future__ import annotations

import sys

from mpi4py import MPI

import colfile
import colfile.stream as cs


def main(path: str, name: str, out: str) -> None:
    comm = MPI.COMM_WORLD
    with colfile.File(path, "r", comm=comm) as f:
        s = cs.open(f, name, collective=True)
        opened = s.table_bytes
        first = s.size * comm.rank // comm.size
        rows = s.read(first, s.size * (comm.rank + 1) // comm.size - first)
        with open(f"{out}.{comm.rank}", "wb") as fh:
            fh.write(rows.tobytes())
        counts = comm.gather((opened, s.table_bytes), root=0)
        s.close()
    if comm.rank == 0:
        for k, (a, b) in enumerate(counts):
            print(f"rank {k} opened {a} read {b}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
