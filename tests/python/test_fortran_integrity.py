"""Statistics, verification and repair from Fortran against Python's: chunk
statistics of columns and streams Python wrote, blob status after a flipped
byte, repair of one copy from Fortran and of another from Python
(tests/fortran/test_fortran_integrity.f90, built in $COLFILE_C_BUILD; it
prints doubles as the integers of their bits, so the comparison is exact)."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import colfile
import colfile.stream
from colfile._core.constants import BLOB_STATUS, REPAIR_BITS

from damage import flip_bits


def _program() -> str:
    build = os.environ.get("COLFILE_C_BUILD")
    exe = os.path.join(build, "test_fortran_integrity") if build else ""
    if not os.path.exists(exe):
        if os.environ.get("CI") and os.path.exists(os.path.join(build or "", "fortran_cross")):
            pytest.fail("no test_fortran_integrity in a build with the Fortran modules")
        pytest.skip("no test_fortran_integrity in $COLFILE_C_BUILD (built with -DCOLFILE_FORTRAN=ON)")
    return exe


def _run(*args: str) -> list[list[str]]:
    p = subprocess.run([_program(), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout
    return [line.split() for line in p.stdout.splitlines() if line.strip()]


def _bits(x: float) -> int:
    return int(np.array(x, "<f8").view("<i8"))


def _record(r: np.void) -> list[int]:
    return [int(r["blob"]), int(r["first_row"]), int(r["rows"]), int(r["valid"]), int(r["ordered"]),
            int(r["count"]), int(r["nan_count"]), _bits(r["min"]), _bits(r["max"]), _bits(r["sum"])]


def _columns(path: str) -> None:
    rng = np.random.default_rng(5)
    pos = rng.normal(size=(1000, 3)) * 1e3
    pos[rng.integers(0, 1000, 20), rng.integers(0, 3, 20)] = np.nan
    with colfile.File(path, "w") as f:
        f.create("pos", data=pos, nfile=3, chunk_rows=64)
        f.create("id", data=rng.integers(-2**62, 2**62, 777), nfile=2, chunk_rows=100)
        f.create("u", data=rng.integers(0, 65535, 300).astype("u2"), chunk_rows=7)


@pytest.mark.parametrize("name", ["pos", "id", "u"])
def test_chunk_stats_as_python(tmp_path, name) -> None:
    path = str(tmp_path / "f")
    _columns(path)
    lines = _run("stats", path, name)
    with colfile.File(path) as f:
        want = f[name].chunk_stats()
    want = want.reshape(len(want), -1)
    got = {(int(ln[1]), int(ln[2])): [int(v) for v in ln[3:]] for ln in lines if ln[0] == "chunk"}
    assert len(got) == want.size
    for k in range(want.shape[0]):
        for j in range(want.shape[1]):
            assert got[(k, j)] == _record(want[k, j]), (name, k, j)


def test_verify_and_repair_as_python(tmp_path) -> None:
    path = str(tmp_path / "f")
    _columns(path)
    # flip a bit in the middle of blob 1 of pos
    blob = os.path.join(path, "pos", "000001")
    flip_bits(blob, 1000, 0x10)
    lines = _run("verify", path, "pos")
    with colfile.File(path) as f:
        c = f["pos"]
        want = [c.verify_blob(i) for i in range(c.nfile)]
    names = dict(BLOB_STATUS)
    status = {int(ln[1]): int(ln[2]) for ln in lines if ln[0] == "blob"}
    assert [{names[b] for b in names if s & b} or {"OK"} for _, s in sorted(status.items())] == want
    assert status[1] != 0 and status[0] == status[2] == 0
    column = next(ln for ln in lines if ln[0] == "column")
    assert int(column[1]) == status[1] and int(column[2]) == 1

    # the same repair from both sides
    other = str(tmp_path / "g")
    shutil.copytree(path, other)
    fixed = int(next(ln for ln in _run("repair", path, "pos") if ln[0] == "fixed")[1])
    with colfile.File(other, "a") as f:
        py_fixed = f["pos"].repair()
    assert {n for bit, n in REPAIR_BITS if fixed & bit} == py_fixed
    with colfile.File(path) as f, colfile.File(other) as g:
        assert all(f["pos"].verify_blob(i) == {"OK"} for i in range(3))
        np.testing.assert_array_equal(f["pos"][:], g["pos"][:])
        a, b = f["pos"].chunk_stats(), g["pos"].chunk_stats()
        assert a.tobytes() == b.tobytes()
    assert all(int(ln[2]) == 0 for ln in _run("verify", path, "pos") if ln[0] == "blob")


def test_stream_stats_and_check_as_python(tmp_path) -> None:
    path = str(tmp_path / "f")
    rng = np.random.default_rng(9)
    data = [rng.normal(size=(n, 2)) for n in (300, 0, 517)]
    data[2][17, 1] = np.nan
    with colfile.File(path, "w") as f:
        with colfile.stream.create(f, "s", "f8", nmemb=2, tasks=3, chunk=4096) as w:
            for t, d in enumerate(data):
                w.task(t).append(d)
    lines = _run("sstats", path, "s")
    with colfile.File(path) as f:
        s = colfile.stream.open(f, "s")
        want = s.chunk_stats()
        chunks = [(t, b) for t in range(3) for b in range(len(s.task_chunks(t)))]
        where = s.task_chunks(2)[1]
        s.close()
    got = [[int(v) for v in ln[4:]] for ln in lines if ln[0] == "chunk"]
    assert len(got) == want.size
    assert got == [_record(want[i, j]) for i in range(want.shape[0]) for j in range(2)]
    checks = {(int(ln[1]), int(ln[2])): int(ln[3]) for ln in lines if ln[0] == "check"}
    assert checks == {c: 0 for c in chunks}
    # a flipped byte in chunk 1 of task 2 is found there, and only there
    flip_bits(os.path.join(path, "s", f"colfile-stream-data-{where['file']:06X}"), where["offset"] + 5, 1)
    lines = _run("sstats", path, "s")
    bad = {(int(ln[1]), int(ln[2])): (int(ln[3]), " ".join(ln[4:])) for ln in lines if ln[0] == "check"}
    assert bad[(2, 1)][0] == -11, bad[(2, 1)]  # COLFILE_ECHECKSUM
    assert all(v[0] == 0 for k, v in bad.items() if k != (2, 1))
