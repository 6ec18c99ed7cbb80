"""A stream opened for reading under comm= with collective=True reads its
table in slices: every rank's reads equal a whole-table reader's, no rank
reads the whole table, a damaged table fails every rank
(stream_open_slices.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpirun import launch

SCRIPT = Path(__file__).resolve().parent / "stream_open_slices.py"


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_open_in_slices(tmp_path: Path, nranks: int) -> None:
    proc = launch(nranks, [sys.executable, SCRIPT, tmp_path], timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ok: global view read in slices" in proc.stdout
