"""The C (cf_mpi_stream_reopen, tests/mpi/cf_stream_reopen_probe.c) and the
Python (colfile.stream.reopen under comm=, stream_reopen_probe.py) reopens
of one stream at 1, 2 and 4 ranks read the same bytes of its table on each
rank, give each task the same committed rows, and after the same appends
leave the same files, byte for byte, as one serial process that reopens
and appends.

The C program is looked for in ``$COLFILE_C_BUILD/tests/mpi/``; without it
the test is skipped, unless ``CI`` is set."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from mpirun import tree
from stream_twins import c_probe, run_twins, write

PROBE = Path(__file__).parent / "stream_reopen_probe.py"


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_c_and_python_reopen_alike(nranks: int, tmp_path: Path) -> None:
    exe = c_probe("cf_stream_reopen_probe")
    write(tmp_path / "c", nranks, "tasks")
    shutil.copytree(tmp_path / "c", tmp_path / "py")
    write(tmp_path / "serial", nranks, "tasks", "append")
    table = (tmp_path / "c" / "s" / "colfile-stream-v1").read_bytes()
    read = np.array(run_twins(nranks, [exe, tmp_path / "c", "s"], [PROBE, tmp_path / "py", "s"]))
    assert (read > 0).all()
    if nranks == 4:  # each rank reads its share, never the whole table
        assert (read < len(table)).all(), (read, len(table))
    want = tree(tmp_path / "serial" / "s")
    assert tree(tmp_path / "c" / "s") == want
    assert tree(tmp_path / "py" / "s") == want
