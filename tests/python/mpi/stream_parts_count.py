"""Run under mpiexec by test_stream_parts_mpi.py: a stream written on every
rank through a communicator that counts what rank 0 receives through it
(pickled bytes of gather, allgather, allreduce, recv, exscan) during each
flush, then the same appends from one process: the tables must match byte
for byte and rank 0 must have received only small records.

    mpiexec -n N python stream_parts_count.py DIR
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI
from stream_rows import rows

import colfile
import colfile.stream as cs

counting = False
received = 0


def _count(objs):
    global received
    if counting and MPI.COMM_WORLD.rank == 0:
        received += sum(len(pickle.dumps(o)) for o in objs)


class Counting(MPI.Intracomm):
    """COMM_WORLD, counting what rank 0 gets from the others."""

    def gather(self, obj, root=0):
        out = super().gather(obj, root)
        if out is not None:
            _count(out[1:])
        return out

    def allgather(self, obj):
        out = super().allgather(obj)
        _count(out[1:])
        return out

    def allreduce(self, obj, op=MPI.SUM):
        _count([obj] * (self.size - 1))
        return super().allreduce(obj, op)

    def exscan(self, obj, op=MPI.SUM):
        _count([obj] * (self.size - 1))
        return super().exscan(obj, op)

    def recv(self, buf=None, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=None):
        out = super().recv(buf, source, tag, status)
        _count([out])
        return out


def sizes(task: int, step: int) -> int:
    return 0 if task == 2 else (1800 * task + 333) * (step + 1)


def main() -> None:
    global counting, received
    d = Path(sys.argv[1])
    world = MPI.COMM_WORLD
    rank, size = world.rank, world.size
    comm = Counting(world)
    worst = 0
    with colfile.File(str(d / "f"), "a", comm=comm) as f:
        w = cs.create(f, "mpi", "<f8", nmemb=3, files=2 if size > 1 else 1, chunk=4096, align=4096)
        for k in range(3):
            w.append(rows(rank, sizes(rank, k - 1) if k else 0, sizes(rank, k)))
            world.Barrier()
            received, counting = 0, True
            w.flush()
            counting = False
            worst = max(worst, received)
        w.close()
    if rank == 0:
        with colfile.File(str(d / "f"), "a") as f:
            w = cs.create(f, "serial", "<f8", nmemb=3, tasks=size, files=2 if size > 1 else 1, chunk=4096,
                          align=4096)
            for k in range(3):
                for t in range(size):
                    w.task(t).append(rows(t, sizes(t, k - 1) if k else 0, sizes(t, k)))
                w.flush()
            w.close()
        a = (d / "f" / "mpi" / "colfile-stream-v1").read_bytes()
        b = (d / "f" / "serial" / "colfile-stream-v1").read_bytes()
        assert a == b, "the tables differ"
        bound = 4096 + 64 * size
        assert worst <= bound, f"rank 0 received {worst} bytes in a flush of {size} ranks (bound {bound})"
        print(f"ok: tables equal, rank 0 received at most {worst} bytes per flush")


if __name__ == "__main__":
    main()
