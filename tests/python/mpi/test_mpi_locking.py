"""locking= under MPI: every rank of ``mpiexec -n 2`` and ``-n 4`` runs
under the lock shim in its noflock mode (every lock call fails with
ENOSYS, as on Lustre mounted noflock): a collective write fails on every
rank with the error that names locking=False, and with locking=False it
writes the column (so the flag reaches every rank)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from mpirun import child_env, launch
from shims import shim_library

REPO = Path(__file__).resolve().parents[3]

_SCRIPT = """
import sys
import colfile
from mpi4py import MPI

comm = MPI.COMM_WORLD
path, locking = sys.argv[1], sys.argv[2] == "true"
n = 5
try:
    with colfile.File(path, "a", comm=comm, locking=locking) as f:
        c = f.create("x", "i8", size=n * comm.size, nfile=2)
        c[comm.rank * n:(comm.rank + 1) * n] = range(comm.rank * n, (comm.rank + 1) * n)
    with colfile.File(path, "r") as f:
        ok = f["x"][:].tolist() == list(range(n * comm.size))
    print(f"rank {comm.rank} OK {ok}", flush=True)
except colfile.Error as exc:
    print(f"rank {comm.rank} ERROR {exc}".replace("\\n", " "), flush=True)
"""


@pytest.fixture(scope="module")
def lockshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lockshim.so: the build's, else compiled here."""
    return shim_library(tmp_path_factory, "locking", "lockshim")


@pytest.mark.parametrize("nranks", [2, 4])
def test_noflock_under_mpi(nranks: int, tmp_path: Path, lockshim: Path) -> None:
    script = tmp_path / "write.py"
    script.write_text(_SCRIPT)
    env = child_env(LOCKSHIM_MODE="noflock")
    # the ranks only: mpiexec itself runs without the shim
    args = ["env", f"LD_PRELOAD={lockshim}", sys.executable, str(script)]
    r = launch(nranks, [*args, str(tmp_path / "f"), "true"], env=env)
    # (ranks' lines may arrive interleaved)
    assert sorted(re.findall(r"rank (\d+) ERROR", r.stdout)) == [str(i) for i in range(nranks)], r.stdout + r.stderr
    assert r.stdout.count("locking=False") == nranks, r.stdout
    r = launch(nranks, [*args, str(tmp_path / "g"), "false"], env=env)
    assert sorted(re.findall(r"rank (\d+) OK True", r.stdout)) == [str(i) for i in range(nranks)], r.stdout + r.stderr
    assert "ERROR" not in r.stdout
    assert not os.path.exists(tmp_path / "g" / ".colfile-lock")
