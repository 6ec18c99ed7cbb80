"""Smoke test of bench/pinned.py: a tiny run of every configuration (1 and
2 pinned ranks, 1 unpinned) and both phases reads every file back, prints
the tables and names the digest placement colfile chose; it asserts nothing
about speed."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from benchscript import refusal, run_script, table_rows
from childenv import child_env

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "pinned.py"
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def _need_mpi() -> None:
    if MPIEXEC.exists() and importlib.util.find_spec("mpi4py") is not None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"no mpiexec next to {sys.executable} or no mpi4py")
    pytest.skip("no mpiexec or mpi4py")


@pytest.mark.parametrize("two", ["mpi", "halves"])
def test_pinned_quick(tmp_path: Path, lib: object, two: str) -> None:
    _need_mpi()
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("2 pinned ranks need 2 CPUs")
    out = tmp_path / "runs.json"
    cmd = [sys.executable, str(SCRIPT), "--mib", "1", "--repeats", "1", "--unpinned",
           "--two", two, "--tmpdir", str(tmp_path), "--json", str(out)]
    text = run_script(cmd, env=child_env(), timeout=600)
    rows = table_rows(text)
    for phase in ("write", "write_fsync"):
        assert f"{phase}: 1 MiB of f8x3, 1 repeats" in text
        assert f"{phase}: 2 pinned ranks / 1 pinned rank (speed, medians)" in text
    # a rank pinned to one core has no idle core for a helper: auto digests inline
    pinned = [r for r in rows if "pinned |" in r and "unpinned" not in r]
    assert len(pinned) == 4 and all(r.endswith("| inline |") for r in pinned), pinned
    assert sum(r.startswith("| 1 unpinned |") for r in rows) == 2
    assert sum(r.startswith("| colfile | ") for r in rows) == 2
    runs = json.loads(out.read_text())["runs"]
    assert len(runs) == 3 * 2 * 2  # configurations x phases x systems
    assert all(r["ok"] and r["bytes"] == (1 << 20) // 24 * 24 for r in runs)
    for r in runs:
        if r["config"] != "1 unpinned":
            assert all(len(c) == 1 for c in r["cpus"]), r
    assert sorted(os.listdir(tmp_path)) == ["runs.json"]  # its files are removed


def test_pinned_refuses_an_unknown_phase(tmp_path: Path) -> None:
    stderr = refusal([sys.executable, str(SCRIPT), "--phases", "write,read",
                      "--tmpdir", str(tmp_path)])
    assert "--phases: read: choose from write, write_fsync" in stderr
