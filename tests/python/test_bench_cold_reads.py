"""Smoke test of bench/cold_reads.py: a tiny run must check its reads and
print the table of the three readers; it asserts nothing about speed."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from benchscript import refusal, run_script, table_rows
from childenv import child_env

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "cold_reads.py"


def test_cold_reads_quick(tmp_path: Path, lib: Any) -> None:
    env = child_env()
    cmd = [sys.executable, str(SCRIPT), "--rows", "4096", "--read-rows", "40", "--rounds", "1",
           "--iters", "2", "--prime", str(1 << 20), "--tmpdir", str(tmp_path)]
    rows = table_rows(run_script(cmd, env=env))
    assert rows[0] == "| reader | min | p10 | q1 | median | p10 vs numpy |"
    assert [r.split(" | ")[0] for r in rows[1:]] == ["| numpy", "| colfile", "| colfile-cffi"]
    assert rows[1].endswith("| 1.00x |")
    assert os.listdir(tmp_path) == []  # its snapshot is removed


def test_cold_reads_refuses_a_read_longer_than_the_snapshot(tmp_path: Path) -> None:
    stderr = refusal([sys.executable, str(SCRIPT), "--rows", "10", "--read-rows", "11",
                      "--tmpdir", str(tmp_path)])
    assert "--read-rows must be in 1..--rows" in stderr
