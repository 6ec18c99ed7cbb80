"""A stream written by ``mpiexec -n N`` whose rank is killed (SIGKILL, the
launcher then ends the others) after a checkpoint flush, while every rank
appends more: the stream is exactly the checkpoint (docs/reliability.md).
Killed before the first flush, it is absent and repair removes what was
left."""

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
from mpi4py import MPI
comm = MPI.COMM_WORLD
path, flush, victim = sys.argv[1], sys.argv[2] == "flush", int(sys.argv[3])
f = colfile.File(path, "a", comm=comm)
w = cs.create(f, "s", "<i8", chunk=4096, align=4096)
w.append(np.arange(comm.rank * 100) + comm.rank * 10**6)
if flush:
    w.flush()
w.append(np.full(3000, -1))
comm.barrier()
if comm.rank == victim % comm.size:
    os.kill(os.getpid(), signal.SIGKILL)
comm.barrier()
"""


@pytest.mark.parametrize("nranks, flush", [(2, True), (4, True), (2, False)])
def test_killed_rank(nranks: int, flush: bool, tmp_path: Path) -> None:
    path = tmp_path / "f"
    proc = launch(nranks, [sys.executable, "-c", SCRIPT, path, "flush" if flush else "none", nranks - 1],
                  timeout=120)
    assert proc.returncode != 0  # the job died
    with colfile.File(path, "a") as f:
        if not flush:
            assert cs.list_streams(f) == []
            f.cleanup()
            assert not [p for p in path.iterdir() if p.name.startswith(".colfile-stage.")]
            return
        s = cs.open(f, "s", verify=True)
        assert s.commit == 1 and s.tasks == nranks
        for r in range(nranks):
            np.testing.assert_array_equal(s.task(r), np.arange(r * 100) + r * 10**6)
