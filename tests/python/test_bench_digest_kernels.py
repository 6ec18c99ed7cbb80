"""Smoke test of bench/digest_kernels.py: the per-byte cost of each digest
kernel, built against the sources and static library of the build under
test, for one column; it asserts the table's shape and that every kernel
was timed, nothing about the figures."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from benchscript import run_script, table_rows

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "digest_kernels.py"


def build_dir() -> Path:
    for cand in (os.environ.get("COLFILE_C_BUILD"), ROOT / "build" / "release"):
        if cand and (Path(cand) / "libcolfile.a").is_file():
            return Path(cand)
    if os.environ.get("CI"):
        pytest.fail("no build with libcolfile.a")
    pytest.skip("no build with libcolfile.a (set COLFILE_C_BUILD)")


def test_digest_kernels_quick(tmp_path: Path) -> None:
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        pytest.skip("the program reads the x86-64 time stamp counter")
    rows = table_rows(run_script([sys.executable, str(SCRIPT), f"{ROOT}={build_dir()}", "--quick",
                                  "--repeats", "1", "--columns", "i8x1", "--tmpdir", str(tmp_path)],
                                 timeout=600))
    assert rows[0].startswith("| column | kernel | ")
    kernels = {}
    for row in rows[1:]:
        m = re.fullmatch(r"\| (\w+) \| (\w+) \| ([\d.]+) \|", row)
        assert m, row
        kernels[m.group(2)] = float(m.group(3))
        assert m.group(1) == "i8x1"
    assert set(kernels) == {"sysv", "crc", "sumcrc", "stats", "digest", "pwrite"}
    assert all(v > 0 for v in kernels.values()), kernels
    assert os.listdir(tmp_path) == []  # its scratch File is removed
