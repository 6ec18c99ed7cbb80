"""A snapshot written from Fortran with the collective multi-column calls
(colfile_mpi_column_create_many, colfile_mpi_write_many with whole arrays,
a strided section, strings and a write in two pieces,
colfile_mpi_column_close_many; tests/fortran/test_fortran_many_mpi.f90,
built in $COLFILE_C_BUILD) read from Python with the exact values.
Global row g: pos = (g + 0.5, 2g, -g), id = 7g - 3, mass = g / 8,
tag = b'g<g>'; rank r writes 4r + 3 rows, rank 1 none."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import colfile

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


def _program() -> str:
    build = os.environ.get("COLFILE_C_BUILD")
    exe = os.path.join(build, "test_fortran_many_mpi") if build else ""
    if not os.path.exists(exe) or not os.path.exists(MPIEXEC):
        if os.environ.get("CI") and os.path.exists(os.path.join(build or "", "fortran_cross")):
            pytest.fail("no test_fortran_many_mpi or no mpiexec in a build with the Fortran modules")
        pytest.skip("no test_fortran_many_mpi in $COLFILE_C_BUILD (built with -DCOLFILE_FORTRAN=ON and MPI)")
    return exe


@pytest.mark.parametrize("nranks", [2, 4])
def test_fortran_snapshot_read_by_python(tmp_path, nranks) -> None:
    path = str(tmp_path / "f")
    env = dict(os.environ, MPIR_CVAR_CH4_PROGRESS_THROTTLE="1",
               MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT="16")
    p = subprocess.run([MPIEXEC, "-n", str(nranks), _program(), path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120, env=env)
    assert p.returncode == 0 and "test_fortran_many_mpi: ok" in p.stdout, p.stdout
    n = sum(0 if r == 1 else 4 * r + 3 for r in range(nranks))
    g = np.arange(n)
    want = {
        "part/pos": np.stack([g + 0.5, 2.0 * g, -1.0 * g], axis=1),
        "part/id": (7 * g - 3).astype("<i8"),
        "mass": (g.astype("f4") / np.float32(8)).astype("<f4"),
        "tag": np.array([f"g{i}".encode() for i in g], "S5"),
    }
    with colfile.File(path) as f:
        for name, values in want.items():
            c = f[name]
            got = c[:]
            assert got.dtype == values.dtype, name
            np.testing.assert_array_equal(got, values, err_msg=name)
            # committed with checksums that match the data
            assert all(c.verify_blob(i) == {"OK"} for i in range(c.nfile)), name
