"""A stream's create and commit under comm= make few collectives (each is
a wait for the slowest rank: on an oversubscribed node they cost more
than the appends of a small stream), and a commit after a task's write
failed fails on every rank (stream_sync_count.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpirun import launch

SCRIPT = Path(__file__).resolve().parent / "stream_sync_count.py"


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_create_and_commit_syncs(tmp_path: Path, nranks: int) -> None:
    proc = launch(nranks, [sys.executable, SCRIPT, tmp_path])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ok: few collectives" in proc.stdout, proc.stdout[-3000:]
