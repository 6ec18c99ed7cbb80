"""Run under mpiexec by test_stream_syncs_mpi.py: how many collectives a
stream's create and commit make under comm= (each is a wait for the
slowest rank), counted through the File's communicator, with the default
layout on a local file system (one physical file per task) and with ranks
sharing files; then a task whose write failed: the commit fails on every
rank naming that rank, and the stream stays at its last commit.

    mpiexec -n N python stream_sync_count.py DIR
"""

from __future__ import annotations

import resource
import signal
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from mpi4py import MPI

import colfile
import colfile.stream as cs

calls: Counter[str] = Counter()


def counted(name: str):  # type: ignore[no-untyped-def]
    base = getattr(MPI.Intracomm, name)

    def call(self, *args, **kw):  # type: ignore[no-untyped-def]
        calls[name] += 1
        return base(self, *args, **kw)
    return call


# every collective of mpi4py's pickling and buffer interfaces colfile uses
NAMES = ("barrier", "Barrier", "bcast", "Bcast", "gather", "Gather", "Gatherv", "scatter", "Scatter", "allgather",
         "Allgather", "Allgatherv", "Iallgather", "allreduce", "Allreduce", "reduce", "exscan", "Exscan", "scan",
         "Split", "Split_type", "Dup", "alltoall")
Counting = type("Counting", (MPI.Intracomm,), {n: counted(n) for n in NAMES})


def syncs(fn):  # type: ignore[no-untyped-def]
    """fn()'s result and the collectives it made (names, sorted)."""
    calls.clear()
    out = fn()
    return out, sorted(calls.elements())


def main() -> None:
    d = Path(sys.argv[1])
    world = MPI.COMM_WORLD
    rank, size = world.rank, world.size
    comm = Counting(world)
    report = []
    with colfile.File(str(d / "f"), "a", comm=comm, durable=False) as f:
        local = f.fs_type in ("ext4", "xfs", "btrfs", "tmpfs", "zfs", "bcachefs", "overlayfs")
        w, made = syncs(lambda: cs.create(f, "s", "<f8"))
        assert w.files == size or not local, (f.fs_type, w.files)
        w.append(np.arange(rank * 10.0, rank * 10.0 + 3 + rank))
        _, flushed = syncs(w.flush)
        _, closed = syncs(w.close)
        report.append(("create", made))
        report.append(("flush", flushed))
        if local:
            # a create with the default layout: the decision, the layout, the join
            assert len(made) <= 3 and "Split_type" not in made, made
        # a commit: the parts' lengths in, their offsets out, the writes' outcomes in, the commit's out
        assert len(flushed) <= 4, flushed
        assert len(closed) <= 4, closed
        w = cs.create(f, "shared", "<f8", files=max(1, size // 2))
        w.append(np.full(5 + rank, float(rank)))
        _, shared = syncs(w.flush)
        report.append(("flush, two tasks a file", shared))
        # one more: the gather of the ranks of each physical file (split once, at the first flush)
        assert len(shared) <= 4 + 2, shared
        w.append(np.full(2, -1.0))
        _, again = syncs(w.flush)
        assert len(again) <= 4 + 1, again
        w.close()
        # a task whose write failed: the commit fails on every rank, naming it
        w = cs.create(f, "broken", "<f8", chunk=4096, align=4096)
        w.append(np.full(100, float(rank)))
        w.flush()
        bad = size - 1
        if rank == bad:
            old = resource.getrlimit(resource.RLIMIT_FSIZE)
            prev = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (8192, old[1]))
            try:
                w.append(np.zeros(16384))  # past the limit, too large to wait in the task's buffer: the write fails
                raise AssertionError("the write past RLIMIT_FSIZE succeeded")
            except colfile.Error:
                pass
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, old)
                signal.signal(signal.SIGXFSZ, prev)
        else:
            w.append(np.ones(50))
        try:
            w.flush()
            raise AssertionError("a commit with a failed task succeeded")
        except colfile.Error as exc:
            assert f"rank {bad}" in str(exc), str(exc)
        w.discard()
        s = cs.open(f, "broken")
        assert s.commit == 1 and [s.task_size(t) for t in range(size)] == [100] * size
        assert np.array_equal(s.task(rank), np.full(100, float(rank)))
        s.close()
        world.Barrier()
    if rank == 0:
        for what, names in report:
            print(f"{what}: {len(names)} collectives {names}")
        print("ok: few collectives, a failed task fails the commit on every rank")


if __name__ == "__main__":
    main()
