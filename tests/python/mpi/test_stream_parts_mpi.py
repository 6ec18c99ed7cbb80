"""The Python stream commit under comm= writes the table in parts: rank 0
receives small records only (counted through the communicator), and the
table is a serial writer's, byte for byte (stream_parts_count.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpirun import launch

SCRIPT = Path(__file__).resolve().parent / "stream_parts_count.py"


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_flush_in_parts(tmp_path: Path, nranks: int) -> None:
    proc = launch(nranks, [sys.executable, SCRIPT, tmp_path])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ok: tables equal" in proc.stdout
