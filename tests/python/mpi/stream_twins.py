"""What the C and Python twins of the stream opens in slices share
(test_stream_open_twins.py, test_stream_reopen_twins.py): the stream they
read, written by one serial process, and the runs of the two probes, whose
lines (one per rank) must be the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mpirun import child_env, launch, unavailable

WRITE = """
import sys, numpy as np, colfile, colfile.stream as cs
path, tasks, files = sys.argv[1], int(sys.argv[2]), sys.argv[3]
files = tasks if files == "tasks" else int(files)
def rows(t, a, b):
    i = np.arange(a, b, dtype=np.float64)
    return np.stack([t * 1e6 + i, -i, i / 2], axis=1)
sizes = [0 if t % 4 == 1 else 700 * (t % 4) + 450 + 13 * t for t in range(tasks)]
with colfile.File(path, "a") as f:
    w = cs.create(f, "s", "<f8", nmemb=3, tasks=tasks, files=files, chunk=512, align=512)
    for t in range(tasks):
        w.task(t).append(rows(t, 0, sizes[t]))
    w.close()
    if sys.argv[4:] == ["append"]:  # the serial twin of the reopen probes' appends
        w = cs.reopen(f, "s")
        for t in range(tasks):
            w.task(t).append(rows(t, sizes[t], sizes[t] + 40 * t + 3))
        w.close()
"""


def write(path: Path, tasks: int, files: str, *extra: str) -> None:
    """Stream "s" of File `path`: `tasks` tasks (uneven, every fourth
    empty) of 3 <f8 over `files` physical files ("tasks": one a task),
    512-byte chunks; with "append" reopened once and appended to."""
    proc = subprocess.run([sys.executable, "-c", WRITE, str(path), str(tasks), files, *extra], env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-5000:]


def c_probe(name: str) -> Path:
    """The C probe `name` of the build in COLFILE_C_BUILD."""
    build = os.environ.get("COLFILE_C_BUILD")
    exe = Path(build) / "tests" / "mpi" / name if build else None
    if exe is None or not exe.is_file():
        unavailable(f"no C build with {name} ({exe})")
    assert exe is not None
    return exe


def run_twins(nranks: int, c_args: list[Any], py_args: list[Any]) -> list[int]:
    """Run the C probe and the Python one (``[exe, args...]`` each) under
    mpiexec -n nranks: both succeed and print the same line on each rank;
    the table bytes each rank read (the lines' fourth field)."""
    proc_c = launch(nranks, c_args, timeout=120)
    assert proc_c.returncode == 0, proc_c.stdout[-5000:] + proc_c.stderr[-5000:]
    proc_py = launch(nranks, [sys.executable, *py_args], timeout=120)
    assert proc_py.returncode == 0, proc_py.stdout[-5000:] + proc_py.stderr[-5000:]
    lines = proc_c.stdout.splitlines()
    assert len(lines) == nranks and lines == proc_py.stdout.splitlines()
    return [int(line.split()[3]) for line in lines]
