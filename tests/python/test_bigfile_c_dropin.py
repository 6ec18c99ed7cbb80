"""Trees written through colfile's bigfile C drop-in (compat/bigfile) are
read by bigfile 0.1.52's Python module and by colfile, and pass
``colfile check`` (the drop-in records CRC32C for every blob).

The writers are the C programs of the release build ($COLFILE_C_BUILD):
compat/bigfile/tests/bf_mpi_dropin (the differential test's program) and
examples/c/bigfile_snapshot.c.  The reverse direction -- trees of the
original libbigfile read by the drop-in -- is part of the differential
CTest (compat/bigfile/tests/differential.py).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import colfile

bigfile = pytest.importorskip("bigfile")
pytestmark = pytest.mark.filterwarnings("ignore:Data type alias:DeprecationWarning")

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


def _program(name: str) -> str:
    build = os.environ.get("COLFILE_C_BUILD")
    exe = os.path.join(build, "compat", "bigfile", "tests", name) if build else ""
    if not os.path.exists(exe) or not os.path.exists(MPIEXEC):
        if os.environ.get("CI"):
            pytest.fail(f"no {name} in $COLFILE_C_BUILD or no mpiexec (CI is set: this test must run)")
        pytest.skip(f"no {name} in $COLFILE_C_BUILD, or no mpiexec beside python")
    return exe


def _run(*args: str) -> str:
    env = dict(os.environ, MPIR_CVAR_CH4_PROGRESS_THROTTLE="1",
               MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT="16")
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout
    return p.stdout


def _check(path: str) -> str:
    p = subprocess.run([sys.executable, "-m", "colfile.cli", "check", path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    assert p.returncode == 0, p.stdout
    return p.stdout


@pytest.mark.parametrize("ranks", [1, 3])
def test_snapshot_example_read_by_bigfile_and_colfile(tmp_path, ranks: int) -> None:
    exe = _program("example_bigfile_snapshot")
    path = str(tmp_path / "snap")
    _run(MPIEXEC, "-n", str(ranks), exe, "write", path)
    # rank r holds 1000 + 250 r particles, rank 1 none
    total = sum(0 if r == 1 else 1000 + 250 * r for r in range(ranks))
    i = np.arange(total)
    pos = 0.001 * i[:, None] + np.arange(3)[None, :]
    vel = ((i % 97)[:, None] - np.arange(3)[None, :]).astype("f4")
    mass = (1 + i % 3).astype("f4")
    ids = (1000000 + i).astype("u8")

    b = bigfile.File(path)
    assert sorted(b.list_blocks()) == ["1/ID", "1/Mass", "1/Position", "1/Velocity", "Header"]
    assert b["Header"].attrs["TotNumPart"][1] == total
    assert b["Header"].attrs["NTask"][0] == ranks
    np.testing.assert_array_equal(b["1/Position"][:], pos)
    np.testing.assert_array_equal(b["1/Velocity"][:], vel)
    np.testing.assert_array_equal(b["1/Mass"][:], mass)
    np.testing.assert_array_equal(b["1/ID"][:], ids)
    assert b["1/Position"].Nfile == 2

    with colfile.File(path, "r", verify=True) as f:
        np.testing.assert_array_equal(f["1/Position"][:], pos)
        np.testing.assert_array_equal(f["1/ID"][:], ids)
        assert f["Header"].attrs["Time"] == 0.5
    _check(path)


def test_differential_program_tree_read_by_bigfile_and_colfile(tmp_path) -> None:
    exe = _program("bf_mpi_dropin")
    path = str(tmp_path / "t")
    _run(MPIEXEC, "-n", "4", exe, "write", path)
    # rows: rank r holds 3 + 2 r, rank 1 none; the global row g holds
    # position g + 0.125 k, id 1000 + g
    total = sum(0 if r == 1 else 3 + 2 * r for r in range(4))
    g = np.arange(total)
    b = bigfile.File(path)
    np.testing.assert_array_equal(b["1/Position"][:], (g[:, None] + 0.125 * np.arange(3)).astype("f4"))
    # 1/ID was written in two collective calls, each rank's first half
    # then its second half: the rows follow the calls, then the ranks
    n = [0 if r == 1 else 3 + 2 * r for r in range(4)]
    first = np.cumsum([0] + n[:-1])
    halves = [np.arange(f, f + k // 2) for f, k in zip(first, n)]
    halves += [np.arange(f + k // 2, f + k) for f, k in zip(first, n)]
    np.testing.assert_array_equal(b["1/ID"][:], 1000 + np.concatenate(halves))
    np.testing.assert_array_equal(b["rec/id"][:total], 1000 + g)
    assert b["Header"].attrs["Label"] == "snap"
    assert b["1/Position"].attrs["Unit"][0] == 0.5
    mass = b["1/Mass"]
    # grown twice: 7 + 2 + 3 files; the appended rows hold -g, then 7 8 9
    assert mass.Nfile == 12 and mass.size == 2 * total + 3
    np.testing.assert_array_equal(mass[total:], np.concatenate([-g, [7, 8, 9]]).astype("f4"))
    with colfile.File(path, "r") as f:
        for name in ("1/Position", "1/Velocity", "1/ID", "1/Mass", "2/Mass"):
            np.testing.assert_array_equal(f[name][:], b[name][:])
    # rec/* have two rows appended that nothing wrote: check says so, and
    # every other column passes
    out = subprocess.run([sys.executable, "-m", "colfile.cli", "check", path], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=120).stdout
    bad = {line.split(":")[0] for line in out.splitlines() if "short" in line.lower() or "missing" in line.lower()}
    assert all("rec/" in x for x in bad), out
