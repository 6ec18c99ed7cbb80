"""examples/demo.py, the README's main job (``./run demo``): its figures are
the best of several runs, numpy beside colfile measured the same way in the
same run, and it says so."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from childenv import child_env

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo.py"
sys.path.insert(0, str(ROOT / "tests" / "python" / "mpi"))
sys.path.insert(0, str(ROOT / "examples"))
from mpirun import launch, mpiexec  # noqa: E402
import demo  # noqa: E402


def test_settled() -> None:
    """Runs settle when the two fastest agree within 5% (or 1 ms)."""
    assert not demo.settled([])
    assert not demo.settled([1.0])
    assert demo.settled([1.0, 1.04])
    assert demo.settled([3.0, 1.0, 1.04, 2.0])       # the two fastest, in any order
    assert not demo.settled([1.0, 1.06, 3.0])
    assert demo.settled([0.0002, 0.0011])            # both within a millisecond
    assert not demo.settled([0.0002, 0.0013])


def run(tmp_path: Path, *args: str) -> Any:
    return launch(2, [sys.executable, str(DEMO), "--rows", "65536", "--dir", str(tmp_path),
                      *args], env=child_env())


def test_demo_reports_how_it_timed(tmp_path: Path, lib: Any) -> None:
    mpiexec()
    proc = run(tmp_path, "--repeats", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    # rank 0 alone prints; with --repeats 3 every phase runs exactly 3 times
    assert out.count("colfile 0.") == 1, out
    timing = next(line for line in out.splitlines() if line.startswith("  timing: "))
    assert "the best of several runs (numpy and colfile taking turns)" in timing
    assert re.search(r"touched and freed \d+ MB of memory \(memory priming, as in bench/\)",
                     timing), timing
    assert "write and read: best of 3 runs" in timing and "query and hist: best of 3 runs" in timing
    for what in ("write", "read"):
        line = next(x for x in out.splitlines() if x.startswith(f"  {what} "))
        assert re.search(r"colfile +\d+\.\d\d GB/s +numpy raw.* +\d+\.\d\d GB/s +colfile/numpy "
                         r"\d+\.\d\d$", line), line
    assert "verified: every value read back equals what was written" in out
    assert "check  4 blobs: all intact" in out


def test_demo_needs_three_runs(tmp_path: Path, lib: Any) -> None:
    mpiexec()
    proc = run(tmp_path, "--repeats", "2")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--repeats must be at least 3" in proc.stderr
