"""An append to and an update of a committed large column, closed by
chunk owners, write the same bytes from C (``tests/mpi/cf_owners_change.c``)
and Python (``owners_change.py``) as one process making the same changes:
the chunk index whose records the owners copied and wrote included, for
uneven splits whose cuts fall inside chunks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mpirun import assert_same_files, c_mpi_program, launch, mpiexec, run_ok, run_serial, tree

PROGRAM = Path(__file__).parent / "owners_change.py"


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_appended_and_updated_large_column_same_bytes_in_c_and_python(nranks: int, tmp_path: Path) -> None:
    mpiexec()
    exe = c_mpi_program("cf_owners_change")
    ref, py, c = tmp_path / "ref", tmp_path / "py", tmp_path / "c"
    run_serial([PROGRAM, ref, "--serial"], timeout=300)
    run_ok(launch(nranks, [sys.executable, PROGRAM, py]))
    run_ok(launch(nranks, [exe, c]))
    want = tree(ref)
    assert "x/colfile-index-v1" in want and "x/000004" in want
    assert tree(py) == want
    assert_same_files(tree(c), want)
