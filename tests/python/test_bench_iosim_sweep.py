"""Smoke test of bench/iosim_sweep.py and of the memory priming it adds to
both iosims (bench/primed_iosim.py and bench/primed_iosim.c): priming is
benchmark-only, so the iosims themselves have no option for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchscript import run_script, table_rows

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python" / "mpi"))
sys.path.insert(0, str(ROOT / "bench"))
from mpirun import c_iosim, child_env, mpiexec  # noqa: E402
import iosim_sweep  # noqa: E402

SCRIPT = ROOT / "bench" / "iosim_sweep.py"

#: Bytes a primed run touches: far above what an unprimed run of 1000 rows
#: holds at its peak (about 50 MB for Python, 20 MB for C).
PRIME = 400 << 20

#: Reads the peak resident memory of the processes a command starts.
PEAK = ("import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(p.stderr)\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
        "print(p.stdout)\n")


def peak(cmd: list[str], env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """The largest resident size of any process ``cmd`` started, and the
    JSON report it printed."""
    proc = subprocess.run([sys.executable, "-c", PEAK, *cmd], env=env, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    first, report = proc.stdout.split("\n", 1)
    status, rss = map(int, first.split())
    assert status == 0, proc.stdout + proc.stderr
    return rss, json.loads(report.strip().splitlines()[-1])


@pytest.mark.parametrize("layer", ["Python", "C"])
def test_priming_reaches_the_iosim(layer: str, tmp_path: Path, lib: Any) -> None:
    """Each rank of a primed run touches the bytes asked for (its peak
    resident size shows them); the same run unprimed does not."""
    mpiexec()
    env = child_env(TMPDIR=str(tmp_path))
    base = [str(mpiexec()), "-n", "1"]
    args = ["--rows", "1000", "--json"]
    if layer == "C":
        preload = iosim_sweep.build_preload(tmp_path, "primed_iosim")
        plain = [*base, str(c_iosim()), *args]
        primed, primed_env = plain, {**env, "LD_PRELOAD": str(preload),
                                     "COLFILE_BENCH_PRIME": str(PRIME)}
    else:
        plain = [*base, sys.executable, "-m", "colfile.cli", "iosim", *args]
        primed = [*base, sys.executable, str(ROOT / "bench" / "primed_iosim.py"),
                  "--prime", str(PRIME), *args]
        primed_env = env
    rss_plain, report_plain = peak(plain, env)
    rss_primed, report_primed = peak(primed, primed_env)
    assert report_plain["verified"] and report_primed["verified"]
    assert rss_plain < PRIME // 2, rss_plain
    assert rss_primed >= PRIME, rss_primed


def test_sweep_quick(tmp_path: Path, lib: Any) -> None:
    """A small sweep: both layers, 1 and 2 ranks, every mode; the tables
    and the markdown section it writes."""
    mpiexec()
    md = tmp_path / "results.md"
    md.write_text("# iosim\n\n<!-- iosim:begin -->\nold\n<!-- iosim:end -->\nafter\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    cmd = [sys.executable, str(SCRIPT), "--ranks", "1,2", "--loads", "small", "--repeats", "1",
           "--durable-load", "small", "--cost-us", "0", "--c-iosim", str(c_iosim()),
           "--scratch", str(scratch), "--markdown", str(md)]
    out = run_script(cmd, env=child_env(TMPDIR=str(tmp_path)), timeout=600)
    rows = table_rows(out)
    page = [r for r in rows if r.startswith("| small | ")]
    for layer in ("C", "Python"):
        for n in (1, 2):
            for mode in ("throttled", "aggregated", "auto"):
                assert any(r.startswith(f"| small | {n} | {layer} | {mode} (") for r in page), \
                    (layer, n, mode, out)
    assert "each rank touched and freed 2x the bytes it writes" in out
    text = md.read_text()
    assert text.startswith("# iosim\n\n<!-- iosim:begin -->\nCommand: ")
    assert text.endswith("<!-- iosim:end -->\nafter\n") and "old" not in text
    assert os.listdir(scratch) == []  # the libraries it built are gone
