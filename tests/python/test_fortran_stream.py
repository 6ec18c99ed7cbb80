"""Streams across languages: streams a Fortran MPI program appended to (one
task per rank, a different number of rows on each, reopened and appended
to) and streams a serial Fortran program wrote for three tasks
(tests/fortran/test_fortran_stream_serial.f90) read from Python exactly, and streams Python wrote read from Fortran,
per task and as the global view (tests/fortran/test_fortran_stream_mpi.f90,
built in $COLFILE_C_BUILD).  Row k of task t: pos = t*1000 + k + j/4
(j = 1..3), id = t*100000 + k, tag = b't<t>r<k>'."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import colfile
import colfile.stream

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


def _program(name: str = "test_fortran_stream_mpi") -> str:
    build = os.environ.get("COLFILE_C_BUILD")
    exe = os.path.join(build, name) if build else ""
    if not os.path.exists(exe) or not os.path.exists(MPIEXEC):
        if os.environ.get("CI") and os.path.exists(os.path.join(build or "", "fortran_cross")):
            pytest.fail(f"no {name} or no mpiexec in a build with the Fortran modules")
        pytest.skip(f"no {name} in $COLFILE_C_BUILD (built with -DCOLFILE_FORTRAN=ON and MPI)")
    return exe


def _run(n: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MPIR_CVAR_CH4_PROGRESS_THROTTLE="1",
               MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT="16")
    return subprocess.run([MPIEXEC, "-n", str(n), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=120, env=env)


def rows(t: int, k0: int, n: int) -> dict[str, np.ndarray]:
    k = np.arange(k0, k0 + n)
    return {
        "pos": t * 1000.0 + k[:, None] + np.arange(1, 4)[None, :] / 4.0,
        "id": (t * 100000 + k).astype("i8"),
        "tag": np.array([f"t{t}r{i}".encode() for i in k], "S6"),
    }


def fortran_rows(t: int) -> int:
    """Rows of task t after the Fortran program: 3t + 2 (none on task 1),
    then t + 1 more after the reopen."""
    return (0 if t == 1 else 3 * t + 2) + t + 1


@pytest.mark.parametrize("nranks", [2, 4])
def test_fortran_streams_read_by_python(tmp_path, nranks) -> None:
    path = str(tmp_path / "f")
    p = _run(nranks, _program(), "write", path)
    assert p.returncode == 0 and "test_fortran_stream_mpi: ok" in p.stdout, p.stdout
    with colfile.File(path) as f:
        assert colfile.stream.list_streams(f) == ["id", "pos", "tag"]
        for name, dtype in (("pos", "<f8"), ("id", "<i8"), ("tag", "S6")):
            s = colfile.stream.open(f, name, verify=True)
            want = [rows(t, 0, fortran_rows(t))[name] for t in range(nranks)]
            assert s.dtype == np.dtype(dtype)
            assert len(s) == sum(len(w) for w in want)
            for t in range(nranks):
                assert s.task_size(t) == fortran_rows(t)
                got = s.task(t)
                assert got.dtype == np.dtype(dtype)
                np.testing.assert_array_equal(got, want[t], err_msg=f"{name} task {t}")
            np.testing.assert_array_equal(s[:], np.concatenate(want), err_msg=name)
            s.close()


def test_fortran_serial_streams_read_by_python(tmp_path) -> None:
    path = str(tmp_path / "f")
    p = subprocess.run([_program("test_fortran_stream_serial"), path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    assert p.returncode == 0 and "test_fortran_stream_serial: ok" in p.stdout, p.stdout
    counts = [4, 2, 7]
    with colfile.File(path) as f:
        for name in ("pos", "id", "tag"):
            s = colfile.stream.open(f, name, verify=True)
            assert s.tasks == 3
            want = [rows(t, 0, n)[name] for t, n in enumerate(counts)]
            for t in range(3):
                np.testing.assert_array_equal(s.task(t), want[t], err_msg=f"{name} task {t}")
            np.testing.assert_array_equal(s[:], np.concatenate(want), err_msg=name)
            s.close()


def _python_streams(path: str, wrong: bool = False) -> None:
    counts = [4, 0, 7]
    with colfile.File(path, "w") as f:
        for name, dtype, nmemb in (("pos", "f8", 3), ("id", "i8", 1), ("tag", "S6", 1)):
            with colfile.stream.create(f, name, dtype, nmemb=nmemb, tasks=3, chunk=4096) as w:
                for t, n in enumerate(counts):
                    r = rows(t, 0, n)[name]
                    if wrong and name == "id" and t == 2:
                        r = r.copy()
                        r[5] += 1
                    # in two pieces
                    w.task(t).append(r[: n // 2])
                    w.task(t).append(r[n // 2:])


def test_python_streams_read_by_fortran(tmp_path) -> None:
    exe = _program()
    path = str(tmp_path / "f")
    _python_streams(path)
    p = _run(1, exe, "read", path)
    assert p.returncode == 0 and "test_fortran_stream_mpi: ok" in p.stdout, p.stdout
    # A wrong value is found: the Fortran side really compares.
    bad = str(tmp_path / "bad")
    _python_streams(bad, wrong=True)
    p = _run(1, exe, "read", bad)
    assert p.returncode != 0 and "id rows of a task" in p.stdout, p.stdout
