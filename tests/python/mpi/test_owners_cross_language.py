"""An append to and an update of a committed large column, closed by
chunk owners, write the same bytes from C (``tests/mpi/cf_owners_change.c``)
and Python (``owners_change.py``) as one process making the same changes:
the chunk index whose records the owners copied and wrote included, for
uneven splits whose cuts fall inside chunks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mpirun import child_env, launch, mpiexec, tree, unavailable

PROGRAM = Path(__file__).parent / "owners_change.py"


def c_program() -> Path:
    build = os.environ.get("COLFILE_C_BUILD")
    if not build:
        unavailable("COLFILE_C_BUILD is not set: no C build to take cf_owners_change from")
    exe = Path(build) / "tests" / "mpi" / "cf_owners_change"
    if not exe.is_file():
        unavailable(f"{exe} does not exist (build the C MPI layer)")
    return exe


def run_ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_appended_and_updated_large_column_same_bytes_in_c_and_python(nranks: int, tmp_path: Path) -> None:
    mpiexec()
    exe = c_program()
    ref, py, c = tmp_path / "ref", tmp_path / "py", tmp_path / "c"
    run_ok(subprocess.run([sys.executable, str(PROGRAM), str(ref), "--serial"], env=child_env(),
                          capture_output=True, text=True, timeout=300))
    run_ok(launch(nranks, [sys.executable, PROGRAM, py]))
    run_ok(launch(nranks, [exe, c]))
    want = tree(ref)
    assert "x/colfile-index-v1" in want and "x/000004" in want
    assert tree(py) == want
    got = tree(c)
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name
