"""Smoke test of bench/placement.py: a tiny run checks every read against
the file and prints one row per remainder; it asserts nothing about speed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from benchscript import refusal, run_script, table_rows

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "placement.py"


def test_placement_quick(tmp_path: Path) -> None:
    cmd = [sys.executable, str(SCRIPT), "--mib", "2", "--small-mib", "1", "--iters", "2",
           "--prime-mib", "1", "--tmpdir", str(tmp_path)]
    rows = table_rows(run_script(cmd))
    header = "| (destination - file offset) % 64 | q1 (us) | median (us) | GB/s (q1) | vs best |"
    assert rows.count(header) == 2
    firsts = [r.split(" | ")[0] for r in rows if r != header]
    assert firsts == [f"| {r}" for r in range(0, 64, 8)] * 2
    assert "1.00x |" in "".join(rows)
    assert os.listdir(tmp_path) == []  # its file is removed


def test_placement_refuses_a_short_read_as_long_as_the_file(tmp_path: Path) -> None:
    stderr = refusal([sys.executable, str(SCRIPT), "--mib", "2", "--small-mib", "2",
                      "--tmpdir", str(tmp_path)])
    assert "--small-mib must be in 1..--mib - 1" in stderr
