"""A rank killed (SIGKILL; the launcher then ends the others) in the
middle of a stream commit written in parts -- rank 0 after it started the
temporary table, or a physical file's last rank after it wrote its ranks'
lines there -- leaves the stream exactly at its last commit (or absent
before the first); cleanup removes the temporary table once the job is
gone, and the stream reopens and takes more commits."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from mpirun import launch

import colfile
import colfile.stream as cs

SCRIPT = r"""
import os, signal, sys, numpy as np, colfile, colfile.stream as cs
from colfile._core import stream as core
from mpi4py import MPI
comm = MPI.COMM_WORLD
path, where, first = sys.argv[1], sys.argv[2], sys.argv[3] == "first"

def killing(fn, rank):
    def wrapped(*args, **kw):
        out = fn(*args, **kw)
        if comm.rank == rank:
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    return wrapped

f = colfile.File(path, "a", comm=comm)
w = cs.create(f, "s", "<i8", files=2, chunk=4096, align=4096)
w.append(np.arange(comm.rank * 700) + comm.rank * 10**6)
if not first:
    w.flush()
w.append(np.full(3000, -1))
if where == "begin":
    core.part_begin = killing(core.part_begin, 0)
else:  # the last rank of the last physical file: it writes, then dies
    core.part_write = killing(core.part_write, comm.size - 1)
w.flush()
comm.barrier()
"""


@pytest.mark.parametrize("where, first", [("begin", False), ("write", False), ("write", True)])
def test_killed_in_commit(where: str, first: bool, tmp_path: Path) -> None:
    path = tmp_path / "f"
    nranks = 4
    proc = launch(nranks, [sys.executable, "-c", SCRIPT, path, where, "first" if first else "later"],
                  timeout=120)
    assert proc.returncode != 0  # the job died
    with colfile.File(path, "a") as f:
        if first:
            assert cs.list_streams(f) == []
            f.cleanup()
            assert not [p for p in path.iterdir() if p.name.startswith(".colfile-stage.")]
            return
        stream_dir = path / "s"
        assert [p.name for p in stream_dir.glob(".colfile-stream-v1.tmp.*")]  # the commit was under way
        s = cs.open(f, "s", verify=True)
        assert s.commit == 1 and s.tasks == nranks
        for r in range(nranks):
            np.testing.assert_array_equal(s.task(r), np.arange(r * 700) + r * 10**6)
        s.close()
        lines = f.cleanup()
        assert any(".colfile-stream-v1.tmp." in line for line in lines), lines
        assert not list(stream_dir.glob(".colfile-stream-v1.tmp.*"))
        # the next job goes on from the commit
        w = cs.reopen(f, "s")
        for r in range(nranks):
            w.task(r).append(np.array([7, 8]))
        w.close()
        s = cs.open(f, "s", verify=True)
        assert s.commit == 2 and s.size == sum(r * 700 for r in range(nranks)) + 2 * nranks
        s.close()
