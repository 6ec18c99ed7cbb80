"""Smoke test of bench/read_instructions.py: a tiny run under callgrind of
the colfile under test prints its instructions and Python calls per small
read; it asserts nothing about their size beyond being counted."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from benchscript import refusal, run_script, table_rows

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "read_instructions.py"


def test_read_instructions_quick(tmp_path: Path, lib: object) -> None:
    if shutil.which("valgrind") is None:
        if os.environ.get("CI"):
            pytest.fail("valgrind is needed")
        pytest.skip("valgrind not found")
    import colfile
    from colfile import _ffi

    tree = f"{Path(colfile.__file__).resolve().parents[1]},{_ffi.library_path()}"
    rows = table_rows(run_script([sys.executable, str(SCRIPT), tree, "--rows", "2000",
                                  "--reads", "2", "--tmpdir", str(tmp_path)], timeout=900))
    assert rows[0] == "| tree | instructions per read (20 rows of 4 columns) |"
    count = re.fullmatch(r"\| .+ \| ([\d,]+) \|", rows[1])
    assert count and int(count.group(1).replace(",", "")) > 1000, rows
    calls = re.fullmatch(r"\| .+: Python calls per read \| ([\d.]+) \|", rows[2])
    assert calls and float(calls.group(1)) > 10, rows
    assert os.listdir(tmp_path) == []  # its files are removed


def test_read_instructions_refuses_a_tree_without_colfile(tmp_path: Path) -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind not found")
    stderr = refusal([sys.executable, str(SCRIPT), str(tmp_path)])
    assert "no colfile package in" in stderr
