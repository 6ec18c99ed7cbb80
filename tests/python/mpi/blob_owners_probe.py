"""Run under mpiexec by test_blob_owners_mpi.py: how many processes hold
each blob file open after a collective write (a writer keeps the
descriptor it wrote a blob with, up to 8 blobs, until the commit fsyncs
through it), for throttled and blob-owner writes of uneven rows (some ranks
holding none) into 1, 3 and 7 blobs, in pieces of 1000 bytes, and whether
the rows read back.

    mpiexec -n N python blob_owners_probe.py DIR

Rank 0 prints one JSON object: {"<mode> <nfile>": {"open": [processes
per blob], "rows": [rows per blob], "ok": bool}}.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
from mpi4py import MPI

import colfile
import colfile.mpi

# pieces of 41 rows: rows of one rank reach their owner in several messages
colfile.mpi.GROUP_BYTES = 1000

def open_blobs(prefix: str, nfile: int) -> list[int]:
    """Descriptors of this process open on each blob file under prefix."""
    out = [0] * nfile
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        base = os.path.basename(target)
        if target.startswith(prefix) and len(base) == 6:
            try:
                b = int(base, 16)
            except ValueError:
                continue
            if b < nfile:
                out[b] += 1
    return out


def main() -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    # uneven shares; rank 1 holds none (with 3 ranks or more)
    counts = [0 if (r == 1 and size > 2) else 40 + 37 * r * r for r in range(size)]
    total, first = sum(counts), sum(counts[:rank])
    row = np.arange(first, first + counts[rank], dtype=np.float64)
    data = row[:, None] * 10 + np.arange(3)
    report = {}
    for mode in ("throttled", "blob_owners"):
        for nfile in (1, 3, 7):
            path = os.path.join(sys.argv[1], f"{mode}-{nfile}")
            with colfile.File(path, "w", comm=comm) as f:
                col = f.create("x", ("f8", 3), size=total, nfile=nfile)
                col.write_all(data, start=first, mode=mode)
                held = open_blobs(os.path.realpath(path), nfile)
                per_blob = comm.allreduce(np.array(held), op=MPI.SUM)
                rows = col.blob_rows
            with colfile.File(path) as f:
                ok = bool(np.array_equal(f["x"][:], np.arange(total)[:, None] * 10 + np.arange(3)))
            report[f"{mode} {nfile}"] = {"open": [int(x) for x in per_blob],
                                         "rows": list(rows), "ok": ok}
    if rank == 0:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
