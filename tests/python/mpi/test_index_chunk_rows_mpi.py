"""``colfile index --force --mpi`` under ``mpiexec -n 2`` and ``-n 4`` on
columns with their own chunk size and with the default one: the ranks
other than 0 index with the column's recorded CHUNK (not the default),
so the result equals the serial ``colfile index --force`` (colfile-v1
byte for byte, the same statistics), and a failure exits non-zero.
Real MPI runs; each launch fails the test if it hangs."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mpirun import colfile_cli, launch, mpiexec

TIMEOUT = 120


def _make(path: Path, chunk_rows: int | None, rows: int = 300000) -> None:
    import colfile

    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(rows, dtype="f8"), nfile=3, chunk_rows=chunk_rows)


def _stats(path: Path) -> Any:
    import colfile

    with colfile.File(path) as f:
        c = f["x"]
        return c.chunk_rows, c.chunk_stats().tobytes(), c[:].tobytes()


# 3 * 10^6 rows of 1024-row chunks: a chunk index, statistics text of
# head lines alone
@pytest.mark.parametrize("rows,chunk_rows", [(300000, 1024), (300000, None), (3000000, 1024)])
@pytest.mark.parametrize("nranks", [2, 4])
def test_index_mpi_keeps_chunk_rows(nranks: int, rows: int, chunk_rows: int | None,
                                    tmp_path: Path, lib: Any) -> None:
    mpiexec()
    from colfile.cli import main

    ser, par = tmp_path / "ser", tmp_path / "par"
    _make(ser, chunk_rows, rows)
    _make(par, chunk_rows, rows)
    assert main(["index", "--force", "-q", str(ser)]) == 0
    proc = launch(nranks, colfile_cli("index", "--force", "--mpi", par), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error" not in proc.stderr
    if chunk_rows is not None:
        assert _stats(par)[0] == chunk_rows
    assert _stats(par) == _stats(ser)
    # colfile-v1 (CRCs and statistics) as serial indexing writes it; the
    # chunk index's fine level is written by serial indexing only
    assert (par / "x" / "colfile-v1").read_bytes() == (ser / "x" / "colfile-v1").read_bytes()
    assert (par / "x" / "colfile-index-v1").exists() == (rows > 10**6)


@pytest.mark.parametrize("nranks", [2, 4])
def test_index_mpi_failure_exits_nonzero(nranks: int, tmp_path: Path, lib: Any) -> None:
    mpiexec()
    # every rank reports its own exit status
    cmd = shlex.join(colfile_cli("index", "--force", "--mpi", tmp_path / "missing"))
    proc = launch(nranks, ["sh", "-c", f'{cmd}; rc=$?; echo "rank-rc=$rc"; exit $rc'], timeout=TIMEOUT)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    codes = [line for line in proc.stdout.splitlines() if line.startswith("rank-rc=")]
    assert len(codes) == nranks and "rank-rc=0" not in codes, proc.stdout + proc.stderr
    assert "missing" in proc.stderr


# Each rank of a writable File rewrites its share of rows in place, or
# appends its rows; the collective close merges them into rank 0's handle.
_REWRITE = """
import sys
import numpy as np
import colfile
from mpi4py import MPI

comm = MPI.COMM_WORLD
with colfile.File(sys.argv[2], "a", comm=comm) as f:
    col = f["x"]
    n = len(col)
    if sys.argv[1] == "write":
        lo, hi = comm.rank * n // comm.size, (comm.rank + 1) * n // comm.size
        col[lo:hi] = np.arange(lo, hi, dtype="f8") * 2
    else:
        col.append(np.arange(1000, dtype="f8") + comm.rank * 1000)
"""


@pytest.mark.parametrize("what", ["write", "append"])
@pytest.mark.parametrize("nranks", [2, 4])
def test_mpi_writes_keep_chunk_rows(nranks: int, what: str, tmp_path: Path, lib: Any) -> None:
    mpiexec()
    import colfile

    path = tmp_path / "f"
    _make(path, 1024)
    proc = launch(nranks, [sys.executable, "-c", _REWRITE, what, path], timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n = 300000
    want = (np.arange(n, dtype="f8") * 2 if what == "write"
            else np.concatenate([np.arange(n, dtype="f8"), np.arange(1000 * nranks, dtype="f8")]))
    with colfile.File(path) as f:
        c = f["x"]
        assert c.chunk_rows == 1024 and c.ext_state == "current"
        assert np.array_equal(c[:], want)
        got = c.chunk_stats()
    # every chunk's statistics as the data says
    assert got["rows"].sum() == len(want) and got["valid"].all()
    for rec in got:
        part = want[rec["first_row"]:rec["first_row"] + rec["rows"]]
        assert rec["count"] == len(part) and rec["min"] == part.min()
        assert rec["max"] == part.max() and rec["sum"] == part.sum()
    proc = launch(nranks, colfile_cli("check", "--mpi", path), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
