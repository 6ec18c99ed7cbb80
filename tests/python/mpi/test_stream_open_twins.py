"""The C (cf_mpi_stream_open, tests/mpi/cf_stream_open_probe.c) and the
Python (colfile.stream.open(..., collective=True), stream_open_probe.py)
opens in slices of one stream at 1, 2 and 4 ranks read the same bytes of
its table on each rank, at the open and after the rank's share, and give
each rank the share a serial reader gives (more tasks than ranks; uneven,
empty tasks).

The C program is looked for in ``$COLFILE_C_BUILD/tests/mpi/``; without it
the test is skipped, unless ``CI`` is set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mpirun import child_env, launch, unavailable

import colfile
import colfile.stream as cs

PROBE = Path(__file__).parent / "stream_open_probe.py"

WRITE = """
import sys, numpy as np, colfile, colfile.stream as cs
path, tasks = sys.argv[1], int(sys.argv[2])
def rows(t, a, b):
    i = np.arange(a, b, dtype=np.float64)
    return np.stack([t * 1e6 + i, -i, i / 2], axis=1)
sizes = [0 if t % 4 == 1 else 700 * (t % 4) + 450 + 13 * t for t in range(tasks)]
with colfile.File(path, "a") as f:
    w = cs.create(f, "s", "<f8", nmemb=3, tasks=tasks, files=2, chunk=512, align=512)
    for t in range(tasks):
        w.task(t).append(rows(t, 0, sizes[t]))
    w.close()
"""


def c_probe() -> Path:
    build = os.environ.get("COLFILE_C_BUILD")
    exe = Path(build) / "tests" / "mpi" / "cf_stream_open_probe" if build else None
    if exe is None or not exe.is_file():
        unavailable(f"no C build with cf_stream_open_probe ({exe})")
    assert exe is not None
    return exe


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_c_and_python_open_alike(nranks: int, tmp_path: Path) -> None:
    exe = c_probe()
    tasks = 3 * nranks + 2
    proc = subprocess.run([sys.executable, "-c", WRITE, str(tmp_path / "f"), str(tasks)], env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-5000:]
    table = (tmp_path / "f" / "s" / "colfile-stream-v1").read_bytes()
    proc_c = launch(nranks, [exe, tmp_path / "f", "s", tmp_path / "c"], timeout=120)
    assert proc_c.returncode == 0, proc_c.stdout[-5000:] + proc_c.stderr[-5000:]
    proc_py = launch(nranks, [sys.executable, PROBE, tmp_path / "f", "s", tmp_path / "py"], timeout=120)
    assert proc_py.returncode == 0, proc_py.stdout[-5000:] + proc_py.stderr[-5000:]
    lines = proc_c.stdout.splitlines()
    assert len(lines) == nranks and lines == proc_py.stdout.splitlines()
    opened = [int(line.split()[3]) for line in lines]
    assert all(n > 0 for n in opened)
    if nranks == 4:  # two readers (two physical files): ranks 1 and 3 read the head and checksum lines only
        assert opened[1] < len(table) // 8 and opened[3] < len(table) // 8, (opened, len(table))
    with colfile.File(tmp_path / "f", "r") as f:
        s = cs.open(f, "s")
        for r in range(nranks):
            first = s.size * r // nranks
            want = s.read(first, s.size * (r + 1) // nranks - first).tobytes()
            assert (tmp_path / f"c.{r}").read_bytes() == want, f"rank {r}'s share (C)"
            assert (tmp_path / f"py.{r}").read_bytes() == want, f"rank {r}'s share (Python)"
        s.close()
