"""bench/streams.py under mpiexec: a --quick run on 2 ranks (one stream
task per rank, one file per rank, collective grows) whose every trial reads
back what each rank appended.  Nothing about speed."""

from __future__ import annotations

import sys
from pathlib import Path

from mpirun import launch

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "streams.py"


def test_bench_streams_two_ranks(tmp_path: Path) -> None:
    proc = launch(2, [sys.executable, SCRIPT, "--quick", "--tmpdir", tmp_path])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "2 processes" in proc.stdout and "every trial verified" in proc.stdout
    assert proc.stdout.count("every trial verified") == 1  # rank 0 reports
