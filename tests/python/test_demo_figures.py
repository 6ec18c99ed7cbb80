"""The demo's printed figures are the best of at least three runs of each
phase, numpy's measured in the same runs as colfile's: every GB/s, ratio
and millisecond figure it prints is recomputed here from the times of
every run it records (``--json``), so no single run's figure or ratio can
be printed."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from childenv import child_env

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo.py"
sys.path.insert(0, str(ROOT / "tests" / "python" / "mpi"))
from mpirun import launch, mpiexec  # noqa: E402


def test_demo_prints_best_of_runs_only(tmp_path: Path, lib: Any) -> None:
    mpiexec()
    record = tmp_path / "runs.json"
    proc = launch(2, [sys.executable, str(DEMO), "--rows", "65536", "--dir", str(tmp_path / "demo"),
                      "--repeats", "4", "--json", str(record)], env=child_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    runs = json.loads(record.read_text())
    times, nbytes = runs["seconds_per_run"], runs["bytes"]
    assert runs["ranks"] == 2
    assert set(times) == {"numpy write", "colfile write", "numpy read", "colfile read", "query", "ids", "hist"}
    # phases timed together ran together: the same number of runs, 3 or more
    rw = {len(times[k]) for k in ("numpy write", "colfile write", "numpy read", "colfile read")}
    qh = {len(times[k]) for k in ("query", "ids", "hist")}
    assert len(rw) == 1 and len(qh) == 1, times
    n_rw, n_qh = rw.pop(), qh.pop()
    assert 3 <= n_rw <= 4 and 3 <= n_qh <= 4
    timing = next(line for line in out.splitlines() if line.startswith("  timing: "))
    assert f"write and read: best of {n_rw} runs" in timing, timing
    assert f"query and hist: best of {n_qh} runs" in timing, timing
    best = {k: min(v) for k, v in times.items()}
    for what, how in (("write", " + fsync"), ("read", "")):
        line = next(x for x in out.splitlines() if x.startswith(f"  {what} "))
        cf, np_ = best[f"colfile {what}"], best[f"numpy {what}"]
        want = (f"colfile {nbytes / cf / 1e9:6.2f} GB/s   numpy raw{how} (a file per rank and column) "
                f"{nbytes / np_ / 1e9:6.2f} GB/s   colfile/numpy {np_ / cf:.2f}")
        assert line.endswith(want), (line, want, times)
        assert runs["printed"][what]["colfile/numpy"] == np_ / cf
    query = next(x for x in out.splitlines() if x.startswith("  query "))
    assert re.search(rf" particles in {best['query'] * 1e3:.1f} ms, their IDs in {best['ids'] * 1e3:.1f} ms$",
                     query), (query, times)
    hist = next(x for x in out.splitlines() if x.startswith("  hist "))
    assert f", 10 bins, {best['hist'] * 1e3:.1f} ms: " in hist, (hist, times)
    # every other figure line holds no number of a timing: no ratio or speed besides these
    figures = [x for x in out.splitlines() if re.search(r"GB/s|ms\b|colfile/numpy|x faster", x)]
    assert len(figures) == 4, figures
