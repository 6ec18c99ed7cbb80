"""Smoke test of bench/digest_kernels.py --write: whole page-cache writes by
write(2) and by colfile's inline-digest write, built against the build under
test; it asserts the table's shape and that both were timed, nothing about
the figures."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from benchscript import run_script, table_rows
from test_bench_digest_kernels import ROOT, SCRIPT, build_dir


def test_digest_kernels_write(tmp_path: Path) -> None:
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        pytest.skip("the program reads the x86-64 time stamp counter")
    rows = table_rows(run_script([sys.executable, str(SCRIPT), f"{ROOT}={build_dir()}", "--write", "8",
                                  "--repeats", "1", "--tmpdir", str(tmp_path)], timeout=600))
    assert rows[0] == "| tree | tofile tick/B | colfile tick/B | colfile/tofile (speed) |"
    assert len(rows) == 2
    m = re.fullmatch(r"\| (\S+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)x \|", rows[1])
    assert m, rows[1]
    assert all(float(m.group(k)) > 0 for k in (2, 3, 4))
    assert os.listdir(tmp_path) == []  # its scratch files are removed
