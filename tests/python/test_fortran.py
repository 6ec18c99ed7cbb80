"""Files written by the Fortran module read from Python and by bigfile
0.1.52 with the exact values, and a File written from Python read from
Fortran (tests/fortran/fortran_cross.f90, built in $COLFILE_C_BUILD).

The values follow formulas that both sides compute in IEEE arithmetic the
same way; the Fortran program checks its side and exits non-zero naming
the first wrong column.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import colfile

N = 10


def _program() -> str:
    build = os.environ.get("COLFILE_C_BUILD")
    exe = os.path.join(build, "fortran_cross") if build else ""
    if not os.path.exists(exe):
        # ./run test builds the Fortran modules wherever apt-get can fetch gfortran.
        if os.environ.get("CI") and shutil.which("apt-get") and shutil.which("dpkg"):
            pytest.fail("no fortran_cross in $COLFILE_C_BUILD (CI with apt-get: the Fortran modules must be built)")
        pytest.skip("no fortran_cross in $COLFILE_C_BUILD (built with -DCOLFILE_FORTRAN=ON)")
    return exe


def _run(*args: str) -> str:
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert p.returncode == 0, p.stdout
    return p.stdout


def expected() -> dict[str, np.ndarray]:
    r = np.arange(N)
    return {
        "pos": r[:, None] * 0.1 + np.arange(3)[None, :],
        "id": (r * 1000003 - 5).astype("i8"),
        "mass": (r * np.float32(0.5)).astype("f4"),
        "type": (r % 3).astype("i4"),
        "name": np.array([f"p{i}".encode() for i in r], "S6"),
        "flag": r % 2 == 0,
        "cplx": (r + 1j * (-r * 0.25)).astype("c16"),
    }


DTYPES = {"pos": "<f8", "id": "<i8", "mass": "<f4", "type": "<i4", "name": "|S6", "flag": "|b1",
          "cplx": "<c16"}


def test_fortran_file_read_by_python(tmp_path) -> None:
    path = str(tmp_path / "f")
    _run(_program(), "write", path)
    want = expected()
    with colfile.File(path) as f:
        assert sorted(f.columns) == sorted(want)
        for name, values in want.items():
            got = f[name][:]
            assert got.dtype == np.dtype(DTYPES[name]), name
            np.testing.assert_array_equal(got, values, err_msg=name)
        assert f["pos"].shape == (N, 3)
        np.testing.assert_array_equal(f["pos"].attrs["units"], [1.0, 2.0, 3.0])
        assert f.attrs["time"] == 1.25
        assert f.attrs["code"] == "fortran"
        assert f.attrs["npart"] == N


def test_fortran_file_read_by_bigfile(tmp_path) -> None:
    bigfile = pytest.importorskip("bigfile")
    path = str(tmp_path / "f")
    _run(_program(), "write", path)
    want = expected()
    b = bigfile.File(path)
    assert sorted(b.list_blocks()) == sorted(want)
    for name, values in want.items():
        with b.open(name) as blk:
            got = blk[:]
            assert got.dtype == np.dtype(DTYPES[name]), name
            np.testing.assert_array_equal(got, values, err_msg=name)
    with b.open("pos") as blk:
        assert blk.Nfile == 2
        np.testing.assert_array_equal(blk.attrs["units"], [1.0, 2.0, 3.0])
    with b.open(".") as blk:
        assert blk.attrs["time"] == 1.25
        assert blk.attrs["npart"] == N


def test_python_file_read_by_fortran(tmp_path) -> None:
    exe = _program()
    path = str(tmp_path / "f")
    want = expected()
    with colfile.File(path, "w") as f:
        for name, values in want.items():
            f.create(name, data=values.astype(DTYPES[name]), nfile=3)
        f["pos"].attrs["units"] = np.array([1.0, 2.0, 3.0])
        f.attrs.update({"time": 1.25, "code": "python", "npart": N})
    assert "read ok" in _run(exe, "read", path)
    # A wrong value is found: the Fortran side really compares.
    with colfile.File(path, "a") as f:
        f["mass"][4:5] = np.array([99.0], "f4")
    p = subprocess.run([exe, "read", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120)
    assert p.returncode != 0 and "wrong mass" in p.stdout, p.stdout
