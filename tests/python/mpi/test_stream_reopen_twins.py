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
from stream_twins import run_twins, write


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_c_and_python_reopen_alike(nranks: int, tmp_path: Path) -> None:
    write(tmp_path / "c", nranks, "tasks")
    shutil.copytree(tmp_path / "c", tmp_path / "py")
    write(tmp_path / "serial", nranks, "tasks", "append")
    table = (tmp_path / "c" / "s" / "colfile-stream-v1").read_bytes()
    read = np.array(run_twins(nranks, "cf_stream_reopen_probe", [tmp_path / "c", "s"], [tmp_path / "py", "s"]))
    if nranks == 4:  # each rank reads its share, never the whole table
        assert (read < len(table)).all(), (read, len(table))
    want = tree(tmp_path / "serial" / "s")
    assert tree(tmp_path / "c" / "s") == want
    assert tree(tmp_path / "py" / "s") == want
