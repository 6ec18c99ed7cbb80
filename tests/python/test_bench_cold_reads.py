"""Smoke test of bench/cold_reads.py: a tiny run must check its reads and
print the table of the three readers; it asserts nothing about speed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from childenv import child_env

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "cold_reads.py"


def test_cold_reads_quick(tmp_path: Path, lib: Any) -> None:
    env = child_env()
    cmd = [sys.executable, str(SCRIPT), "--rows", "4096", "--read-rows", "40", "--rounds", "1",
           "--iters", "2", "--prime", str(1 << 20), "--tmpdir", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert rows[0] == "| reader | min | p10 | q1 | median | p10 vs numpy |"
    assert [r.split(" | ")[0] for r in rows[1:]] == ["| numpy", "| colfile", "| colfile-cffi"]
    assert rows[1].endswith("| 1.00x |")
    assert os.listdir(tmp_path) == []  # its snapshot is removed


def test_cold_reads_refuses_a_read_longer_than_the_snapshot(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--rows", "10", "--read-rows", "11",
                           "--tmpdir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--read-rows must be in 1..--rows" in proc.stderr
