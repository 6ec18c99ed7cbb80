"""Smoke test of bench/placement.py: a tiny run checks every read against
the file and prints one row per remainder; it asserts nothing about speed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "placement.py"


def test_placement_quick(tmp_path: Path) -> None:
    cmd = [sys.executable, str(SCRIPT), "--mib", "2", "--small-mib", "1", "--iters", "2",
           "--prime-mib", "1", "--tmpdir", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    header = "| (destination - file offset) % 64 | q1 (us) | median (us) | GB/s (q1) | vs best |"
    assert rows.count(header) == 2
    firsts = [r.split(" | ")[0] for r in rows if r != header]
    assert firsts == [f"| {r}" for r in range(0, 64, 8)] * 2
    assert "1.00x |" in "".join(rows)
    assert os.listdir(tmp_path) == []  # its file is removed


def test_placement_refuses_a_short_read_as_long_as_the_file(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--mib", "2", "--small-mib", "2",
                           "--tmpdir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--small-mib must be in 1..--mib - 1" in proc.stderr
