"""The Python reopen of a stream under comm= reads the table in slices, as
cf_mpi_stream_reopen does: no rank reads the whole table, and the appends
that follow give the bytes of one process's (stream_reopen_slices.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpirun import launch

SCRIPT = Path(__file__).resolve().parent / "stream_reopen_slices.py"


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_reopen_in_slices(tmp_path: Path, nranks: int) -> None:
    proc = launch(nranks, [sys.executable, SCRIPT, tmp_path], timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ok: files equal" in proc.stdout
