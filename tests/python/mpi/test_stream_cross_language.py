"""Streams written under MPI by C (tests/mpi/cf_stream_pattern.c,
libcolfile-mpi) and by Python (stream_pattern.py, colfile.stream with
comm=) at 1, 2 and 4 ranks, with uneven, empty and growing appends and a
checkpoint flush, are the same bytes, file for file, as one serial Python
process writing every task (docs/format.md 8.7).

The C program is looked for in ``$COLFILE_C_BUILD/tests/mpi/``; without it
the C side is skipped, unless ``CI`` is set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import numpy as np
from mpirun import child_env, launch, tree, unavailable
from stream_pattern import pattern, rows_of

WRITER = Path(__file__).parent / "stream_pattern.py"


def c_writer() -> Path:
    build = os.environ.get("COLFILE_C_BUILD")
    exe = Path(build) / "tests" / "mpi" / "cf_stream_pattern" if build else None
    if exe is None or not exe.is_file():
        unavailable(f"no C build with cf_stream_pattern ({exe})")
    assert exe is not None
    return exe


def stream_files(path: Path) -> dict[str, bytes]:
    files = tree(path / "s")
    assert "colfile-stream-v1" in files
    return files


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_c_python_and_serial_write_the_same_stream(nranks: int, tmp_path: Path) -> None:
    serial = tmp_path / "serial"
    proc = subprocess.run([sys.executable, str(WRITER), str(serial), "--serial", str(nranks)],
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-5000:]
    want = stream_files(serial)
    py = tmp_path / "py"
    proc = launch(nranks, [sys.executable, WRITER, py])
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    assert stream_files(py) == want
    c = tmp_path / "c"
    proc = launch(nranks, [c_writer(), c])
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    assert stream_files(c) == want


@pytest.mark.parametrize("nranks", [2, 4])
def test_defrag_under_mpiexec(nranks: int, tmp_path: Path) -> None:
    """``mpiexec -n N colfile defrag``: every rank copies a share; the
    column is the one a serial defrag makes (header and blobs byte for
    byte), bigfile 0.1.52 reads it, and the stream is gone."""
    bigfile = pytest.importorskip("bigfile")
    trees = {}
    for ranks in (1, nranks):
        path = tmp_path / f"n{ranks}"
        proc = launch(nranks, [sys.executable, WRITER, path])
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
        proc = launch(ranks, [sys.executable, "-m", "colfile", "defrag", path, "s", "--nfile", "3", "--mpi"])
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
        files = tree(path / "s")
        assert not [n for n in files if n.startswith("colfile-stream")]
        trees[ranks] = {n: b for n, b in files.items() if n == "header" or n.startswith("0000")}
        bf = bigfile.File(str(path))
        want = np.concatenate([pattern(r, 0, rows_of(r)) for r in range(nranks)])
        np.testing.assert_array_equal(bf["s"][:], want)
    assert trees[1] == trees[nranks] and len(trees[1]) == 4
