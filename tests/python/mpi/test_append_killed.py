"""A collective append whose processes are killed before the close (every
rank ends with ``os._exit`` after appending and writing: no close, no
finalizer, no MPI_Finalize) leaves the column at its previous version, and
the next writer appends as if nothing had happened."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
from mpirun import launch, mpiexec

SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    from mpi4py import MPI
    import colfile

    comm = MPI.COMM_WORLD
    path, step = sys.argv[1], sys.argv[2]
    if step == "create":
        with colfile.File(path, "w", comm=comm) as f:
            f.create("x", "f8", data=np.arange(comm.rank, comm.rank + 1) * 0.5)
    else:
        f = colfile.File(path, "a", comm=comm)
        col = f["x"]
        n = col.size
        col.append(np.arange(n + 2 * comm.rank, n + 2 * comm.rank + 2) * 0.5)
        if step == "kill":
            comm.barrier()
            os._exit(0)
        f.close()
""")


def test_killed_append_keeps_previous_version(tmp_path: Path, lib: Any) -> None:
    import colfile

    mpiexec()
    script = tmp_path / "append.py"
    script.write_text(SCRIPT)
    path = tmp_path / "f"
    for nranks in (2, 4):
        proc = launch(nranks, [sys.executable, script, path, "create"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        launch(nranks, [sys.executable, script, path, "kill"])  # its status is MPI's business
        with colfile.File(path) as f:
            col = f["x"]
            assert col.size == nranks and col.nfile == 1
            assert np.array_equal(col[:], np.arange(nranks) * 0.5)
            assert col.verify_blob(0) == {"OK"}
        # the blob the killed append wrote is there, listed by no header
        assert (path / "x" / "000001").stat().st_size == 2 * nranks * 8
        proc = launch(nranks, [sys.executable, script, path, "append"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        with colfile.File(path) as f:
            col = f["x"]
            assert col.blob_rows == [nranks, 2 * nranks]
            assert np.array_equal(col[:], np.arange(3 * nranks) * 0.5)
            assert all(col.verify_blob(i) == {"OK"} for i in range(col.nfile))
