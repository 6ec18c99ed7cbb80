"""Fixtures of the cases that run on every rank under ``mpiexec`` (launched
by ``tests/python/mpi/test_mpi_layer.py`` through ``run_rank.py``)."""

from __future__ import annotations

import faulthandler
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import colfile

# tests/python/mpi: the helpers shared with the serial session (the cases
# run with their own rootdir, which leaves it off the path)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mpirun import tree  # noqa: E402,F401  (the cases import it from here)


@pytest.fixture(scope="session")
def comm() -> Any:
    from mpi4py import MPI

    return MPI.COMM_WORLD


#: Seconds one case may take on a rank before the rank prints its stack and
#: exits (so that mpiexec ends the run: a hang fails, it does not stall).
CASE_TIMEOUT = float(os.environ.get("COLFILE_MPI_CASE_TIMEOUT", "120"))


@pytest.fixture(autouse=True)
def _in_step(comm: Any) -> Iterator[None]:
    """Every test starts and ends together on all ranks, within
    CASE_TIMEOUT."""
    fd = os.environ.get("COLFILE_MPI_CASE_FD")
    out = os.fdopen(int(fd), "w", closefd=False) if fd else sys.stderr
    faulthandler.dump_traceback_later(CASE_TIMEOUT, exit=True, file=out)
    comm.barrier()
    yield
    comm.barrier()
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture
def shared(comm: Any) -> Path:
    """A new directory, the same on every rank."""
    made = None
    if comm.rank == 0:
        made = tempfile.mkdtemp(dir=os.environ.get("COLFILE_MPI_TMP"))
    return Path(comm.bcast(made, root=0))


def same_on_all_ranks(comm: Any, value: Any) -> Any:
    """Assert that ``value`` is the same on every rank; return it."""
    values = comm.allgather(value)
    assert all(v == values[0] for v in values), values
    return values[0]


def serial_snapshot(comm: Any, path: Path, data: dict[str, Any], layout: dict[str, dict[str, Any]]) -> Path:
    """``data`` written serially by rank 0 at ``path``, each column with its
    keywords in ``layout``, for every rank to read once it returns."""
    if comm.rank == 0:
        with colfile.File(path, "w") as f:
            for name, kw in layout.items():
                f.create(name, data=data[name], **kw)
    comm.barrier()
    return path


def fail_reads_on_last_rank(comm: Any, monkeypatch: Any) -> int:
    """Make Column.read raise OSError("boom") on the last rank only (until
    ``monkeypatch.undo()``); return that rank."""
    bad = comm.size - 1
    if comm.rank == bad:
        def boom(*args: Any, **kwargs: Any) -> Any:
            raise OSError("boom")
        monkeypatch.setattr(colfile.Column, "read", boom)
    return bad


def query_table(seed: int, n: int, pos_range: tuple[float, float]) -> tuple[Any, dict[str, np.ndarray]]:
    """The columns every query case reads, of ``n`` rows: "x" (normal, 5%
    NaN), "id" (0 .. n - 1) and "pos" (3 components, uniform in
    ``pos_range``, sorted); with the generator (seeded ``seed``) that made
    them, for a case's own columns."""
    rng = np.random.default_rng(seed)
    x = rng.normal(5, 2, n)
    x[rng.random(n) < 0.05] = np.nan
    return rng, {"x": x, "id": np.arange(n, dtype="i8"), "pos": np.sort(rng.uniform(*pos_range, (n, 3)), axis=0)}
