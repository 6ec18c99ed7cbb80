"""The C (cf_mpi_stream_reopen, tests/mpi/cf_stream_reopen_probe.c) and the
Python (colfile.stream.reopen under comm=, stream_reopen_probe.py) reopens
of one stream at 1, 2 and 4 ranks read the same bytes of its table on each
rank, give each task the same committed rows, and after the same appends
leave the same files, byte for byte, as one serial process that reopens
and appends.

The C program is looked for in ``$COLFILE_C_BUILD/tests/mpi/``; without it
the test is skipped, unless ``CI`` is set."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mpirun import child_env, launch, tree, unavailable

PROBE = Path(__file__).parent / "stream_reopen_probe.py"

WRITE = """
import sys, numpy as np, colfile, colfile.stream as cs
path, tasks = sys.argv[1], int(sys.argv[2])
def rows(t, a, b):
    i = np.arange(a, b, dtype=np.float64)
    return np.stack([t * 1e6 + i, -i, i / 2], axis=1)
sizes = [0 if t % 4 == 1 else 700 * (t % 4) + 450 + 13 * t for t in range(tasks)]
with colfile.File(path, "a") as f:
    w = cs.create(f, "s", "<f8", nmemb=3, tasks=tasks, files=tasks, chunk=512, align=512)
    for t in range(tasks):
        w.task(t).append(rows(t, 0, sizes[t]))
    w.close()
    if sys.argv[3:] == ["append"]:  # the serial twin of the probes' appends
        w = cs.reopen(f, "s")
        for t in range(tasks):
            w.task(t).append(rows(t, sizes[t], sizes[t] + 40 * t + 3))
        w.close()
"""


def c_probe() -> Path:
    build = os.environ.get("COLFILE_C_BUILD")
    exe = Path(build) / "tests" / "mpi" / "cf_stream_reopen_probe" if build else None
    if exe is None or not exe.is_file():
        unavailable(f"no C build with cf_stream_reopen_probe ({exe})")
    assert exe is not None
    return exe


def write(path: Path, tasks: int, *extra: str) -> None:
    proc = subprocess.run([sys.executable, "-c", WRITE, str(path), str(tasks), *extra], env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-5000:]


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_c_and_python_reopen_alike(nranks: int, tmp_path: Path) -> None:
    exe = c_probe()
    write(tmp_path / "c", nranks)
    shutil.copytree(tmp_path / "c", tmp_path / "py")
    write(tmp_path / "serial", nranks, "append")
    table = (tmp_path / "c" / "s" / "colfile-stream-v1").read_bytes()
    proc_c = launch(nranks, [exe, tmp_path / "c", "s"], timeout=120)
    assert proc_c.returncode == 0, proc_c.stdout[-5000:] + proc_c.stderr[-5000:]
    proc_py = launch(nranks, [sys.executable, PROBE, tmp_path / "py", "s"], timeout=120)
    assert proc_py.returncode == 0, proc_py.stdout[-5000:] + proc_py.stderr[-5000:]
    lines = proc_c.stdout.splitlines()
    assert len(lines) == nranks and lines == proc_py.stdout.splitlines()
    read = np.array([int(line.split()[3]) for line in lines])
    assert (read > 0).all()
    if nranks == 4:  # each rank reads its share, never the whole table
        assert (read < len(table)).all(), (read, len(table))
    want = tree(tmp_path / "serial" / "s")
    assert tree(tmp_path / "c" / "s") == want
    assert tree(tmp_path / "py" / "s") == want
