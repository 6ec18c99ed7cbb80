"""colfile.stream under ``comm=``: one task per rank, appends with no
communication, collective flush and close, the defaults (one file per
node, or per rank on a local disk), reads on any subset of ranks, and arguments refused on every rank.

Run on every rank by ``test_mpi_layer.py`` (n = 1, 2, 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import same_on_all_ranks

import colfile
import colfile.stream as cs

#: file systems whose buffered writes to one file take turns (docs/streams.md)
LOCAL_FILE_SYSTEMS = {"ext4", "xfs", "btrfs", "tmpfs", "zfs", "bcachefs", "overlayfs"}


def test_defaults_growing_and_empty_tasks(comm: Any, shared: Path) -> None:
    from mpi4py import MPI

    with colfile.File(shared / "f", "a", comm=comm) as f:
        w = cs.create(f, "s", "<u2", nmemb=2)
        assert w.tasks == comm.size and w.chunk % w.align == 0 and w.chunk >= 1 << 20
        # one file per node on a network or parallel file system (the ranks
        # on one host share one); one per rank on a local one, whose writes
        # to one file take turns
        hosts = len(set(comm.allgather(MPI.Get_processor_name())))
        local = f.fs_type in LOCAL_FILE_SYSTEMS
        assert w.files == (comm.size if local else hosts), (f.fs_type, w.files)
        rows = 0 if comm.rank % 2 else 3 * comm.rank + 1
        for k in range(rows):  # one row at a time
            w.append(np.array([[comm.rank, k]], dtype="<u2"))
        with pytest.raises(colfile.InvalidArgumentError):
            w.task((comm.rank + 1) % comm.size + comm.size)
        w.close()
        s = cs.open(f, "s")
        sizes = [0 if r % 2 else 3 * r + 1 for r in range(comm.size)]
        assert same_on_all_ranks(comm, s.size) == sum(sizes)
        for r in range(comm.size):
            np.testing.assert_array_equal(s.task(r), np.stack([np.full(sizes[r], r), np.arange(sizes[r])], 1))


def test_read_on_one_rank_while_others_write_more(comm: Any, shared: Path) -> None:
    with colfile.File(shared / "f", "a", comm=comm) as f:
        w = cs.create(f, "log", "raw", chunk=4096, align=4096)
        w.append(f"rank {comm.rank}\n".encode())
        w.flush()
        w.append(b"later\n")
        if comm.rank == comm.size - 1:  # a reader alone, no collective
            s = cs.open(f, "log", verify=True)
            assert s[:].tobytes() == b"".join(f"rank {r}\n".encode() for r in range(comm.size))
        comm.barrier()
        w.discard()  # the last commit stays
        s = cs.open(f, "log")
        assert s.commit == 1 and s.task(comm.rank).tobytes() == f"rank {comm.rank}\n".encode()


def test_refused_on_every_rank(comm: Any, shared: Path) -> None:
    with colfile.File(shared / "f", "a", comm=comm) as f:
        f.create("col", data=np.arange(3)).close()
        busy = f.create("busy", data=np.arange(2))  # open: its writer holds the name
        with pytest.raises(colfile.BusyError):
            cs.create(f, "busy", "<f8")
        busy.close()
        with pytest.raises(colfile.Error) as exc:
            cs.create(f, "col", "<f8")
        assert "is a column" in str(exc.value)
        with pytest.raises(colfile.InvalidArgumentError):
            cs.create(f, "x", "<f8", tasks=comm.size + 1)
        assert cs.list_streams(f) == []


def test_reopen_after_a_crash(comm: Any, shared: Path) -> None:
    """The next job appends to what the last one committed."""
    with colfile.File(shared / "f", "a", comm=comm) as f:
        w = cs.create(f, "ckpt", "<i4", chunk=4096, align=4096)
        w.append(np.arange(comm.rank * 10, dtype="<i4"))
        w.flush()
        w.append(np.full(5000, -1, "<i4"))  # never committed
        w.discard()
        w = cs.reopen(f, "ckpt")
        assert w.task().rows == comm.rank * 10
        w.append(np.arange(comm.rank * 10, comm.rank * 10 + 3, dtype="<i4"))
        w.close()
        s = cs.open(f, "ckpt", verify=True)
        assert s.commit == 2
        for r in range(comm.size):
            np.testing.assert_array_equal(s.task(r), np.arange(r * 10 + 3))
