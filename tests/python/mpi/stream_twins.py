"""What the C and Python twins of the stream opens in slices share
(test_stream_open_twins.py, test_stream_reopen_twins.py): the stream they
read, written by one serial process, and the runs of the two probes, whose
lines (one per rank) must be the same."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mpirun import c_mpi_program, launch, run_ok, run_serial

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
    run_serial(["-c", WRITE, path, tasks, files, *extra])


def run_twins(nranks: int, probe: str, c_args: list[Any], py_args: list[Any]) -> list[int]:
    """Run the C probe ``tests/mpi/<probe>`` of the build in COLFILE_C_BUILD
    (without it the test is skipped, unless CI is set) and its Python twin
    (``<probe without cf_>.py`` here), each with its arguments, under
    mpiexec -n nranks: both succeed and print the same line on each rank;
    the table bytes each rank read (the lines' fourth field), some on
    every rank."""
    proc_c = launch(nranks, [c_mpi_program(probe), *c_args], timeout=120)
    run_ok(proc_c)
    proc_py = launch(nranks, [sys.executable, Path(__file__).parent / f"{probe.removeprefix('cf_')}.py", *py_args],
                     timeout=120)
    run_ok(proc_py)
    lines = proc_c.stdout.splitlines()
    assert len(lines) == nranks and lines == proc_py.stdout.splitlines()
    read = [int(line.split()[3]) for line in lines]
    assert all(n > 0 for n in read), read
    return read
