"""Reads large enough to go through a memory map of the page cache
(src/io/readmap.c) or two threads' preads (src/io/readsplit.c): the same bytes as
through pread alone (``COLFILE_NO_MMAP=1``),
into any destination layout and dtype; checksums checked on the way; a blob
cut short is an error, never a crash."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any, Iterator

import numpy as np
import pytest

import colfile

N = 2_950_000  # rows of f8 x 3: 70.8 MB
BLOB_ROWS = [2_900_001, 49_999]  # blob 0 spans two map windows; blob 1 is pread
WINDOW = 64 << 20  # CF__MAP_WINDOW_BYTES


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory, lib: Any) -> Iterator[tuple[str, np.ndarray]]:
    path = str(tmp_path_factory.mktemp("readmap") / "f")
    data = np.arange(3 * N, dtype="<f8").reshape(N, 3)
    with colfile.File(path, "w") as f:
        f.create("x", ("<f8", 3), size=N, blob_rows=BLOB_ROWS)[:] = data
    with colfile.File(path) as f:  # in the page cache: reads map it
        f["x"][:]
    yield path, data


@pytest.fixture(params=["map", "pread", "one-cpu"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """map: maps allowed; pread: COLFILE_NO_MMAP=1; one-cpu: maps allowed
    and this thread pinned to one CPU.  With two CPUs or more, cached copies
    run as pread on two threads (readsplit.h) and gathers use the maps; on
    one CPU copies into touched memory come out of the maps."""
    monkeypatch.setenv("COLFILE_NO_MMAP", "1" if request.param == "pread" else "0")
    before = os.sched_getaffinity(0)
    if request.param == "one-cpu":
        os.sched_setaffinity(0, {min(before)})
    try:
        yield str(request.param)
    finally:
        os.sched_setaffinity(0, before)


def test_whole_and_partial_reads(big: Any, mode: str) -> None:
    path, data = big
    with colfile.File(path) as f:
        x = f["x"]
        np.testing.assert_array_equal(x[:], data)
        np.testing.assert_array_equal(x[123:2_950_000 - 7], data[123:-7])
        np.testing.assert_array_equal(x.read(1, 2_900_005), data[1:2_900_005])


@pytest.mark.parametrize("layout", ["contiguous", "strided", "row-padded", "f4", ">f8", "i8"])
def test_read_into_out(big: Any, mode: str, layout: str) -> None:
    path, data = big
    if layout == "strided":
        out = np.zeros((2 * N, 3))[::2]
    elif layout == "row-padded":
        out = np.zeros((N, 4))[:, 1:]
    elif layout in ("f4", ">f8", "i8"):
        out = np.zeros((N, 3), layout)
    else:
        out = np.zeros((N, 3))
    with colfile.File(path) as f:
        got = f["x"].read(out=out)
    assert got is out
    np.testing.assert_array_equal(out, data.astype(out.dtype))


def test_out_that_cannot_hold_the_rows(big: Any) -> None:
    path, _ = big
    with colfile.File(path) as f:
        with pytest.raises(ValueError, match="shape"):
            f["x"].read(out=np.zeros((N, 2)))
        with pytest.raises(ValueError, match="read-only"):
            a = np.zeros((N, 3))
            a.flags.writeable = False
            f["x"].read(out=a)
        with pytest.raises(colfile.DTypeError):
            f["x"].read(out=np.zeros((N, 3), "U3"))


@pytest.mark.parametrize("step", [2, 3, 16, 1000, 2_949_999, -1, -7])
def test_stepped_reads(big: Any, mode: str, step: int) -> None:
    path, data = big
    with colfile.File(path) as f:
        np.testing.assert_array_equal(f["x"][::step], data[::step])
        np.testing.assert_array_equal(f["x"][5:-3:step, 1], data[5:-3:step, 1])
        # converting, into a strided destination
        count = len(range(0, N, abs(step)))
        out = np.zeros((count, 4), ">f4")[:, :3]
        f["x"]._read_step(0, abs(step), count, out)
        np.testing.assert_array_equal(out, data[::abs(step)].astype("f4"))


@pytest.mark.parametrize("kind", ["sorted", "unsorted", "repeats", "sparse"])
def test_fancy_reads(big: Any, mode: str, kind: str) -> None:
    path, data = big
    rng = np.random.default_rng(11)
    if kind == "sparse":
        rows = rng.choice(N, size=50, replace=False)
    else:
        rows = rng.choice(N, size=300_000, replace=kind == "repeats")
    if kind == "sorted":
        rows = np.sort(rows)
    with colfile.File(path) as f:
        np.testing.assert_array_equal(f["x"][rows], data[rows])
        np.testing.assert_array_equal(f["x"][rows, 2], data[rows, 2])


@pytest.mark.parametrize("where", [0, (192 << 10) - 1, 192 << 10, 2 << 20, WINDOW - 1, WINDOW, WINDOW + 5,
                                   BLOB_ROWS[0] * 24 - 1, BLOB_ROWS[0] * 24, N * 24 - 1])
def test_verify_finds_a_flipped_bit(big: Any, mode: str, where: int) -> None:
    path, data = big
    blob, at = (0, where) if where < BLOB_ROWS[0] * 24 else (1, where - BLOB_ROWS[0] * 24)
    name = os.path.join(path, "x", f"{blob:06d}")
    fd = os.open(name, os.O_RDWR)
    try:
        orig = os.pread(fd, 1, at)
        os.pwrite(fd, bytes([orig[0] ^ 0x20]), at)
        try:
            with colfile.File(path, verify=True) as f:
                with pytest.raises(colfile.ChecksumError, match=f"x/{blob:06d}"):
                    f["x"][:]
                with pytest.raises(colfile.ChecksumError):
                    f["x"].read(out=np.zeros((N, 3), "f4"))
                # a touched buffer of the column's own dtype: the copy (and
                # its CRC) comes out of the map in "one-cpu" mode, from two
                # threads' preads (two CRCs combined) in "map" mode
                touched = np.ones((N, 3), "<f8")
                with pytest.raises(colfile.ChecksumError, match=f"x/{blob:06d}"):
                    f["x"].read(out=touched)
        finally:
            os.pwrite(fd, orig, at)
    finally:
        os.close(fd)
    with colfile.File(path, verify=True) as f:
        np.testing.assert_array_equal(f["x"][:], data)


def test_blob_cut_short_under_an_open_handle_is_an_error(tmp_path: Any, lib: Any) -> None:
    """Run in a child: a SIGBUS would kill it, which the test reports."""
    path = str(tmp_path / "f")
    code = textwrap.dedent(f"""
        import os, numpy as np, colfile
        n = 1_000_000
        with colfile.File({path!r}, "w") as f:
            f.create("x", ("<f8", 3), size=n)[:] = np.arange(3 * n, dtype="<f8").reshape(n, 3)
        with colfile.File({path!r}) as f:
            x = f["x"]
            x[:10]
            os.truncate(os.path.join({path!r}, "x", "000000"), 10 << 20)
            try:
                x[:]
            except colfile.FormatError as exc:
                assert "000000" in str(exc) and "blob holds 10485760 bytes" in str(exc), exc
            else:
                raise AssertionError("read past the end of a cut blob")
            for key in (slice(None, None, 2), np.arange(0, n, 3), slice(400_000, None)):
                try:
                    x[key]
                except colfile.FormatError:
                    pass
                else:
                    raise AssertionError(f"read past the end of a cut blob: {{key}}")
            np.testing.assert_array_equal(x[:400_000], np.arange(1_200_000.0).reshape(-1, 3))
        print("ok")
        """)
    env = dict(os.environ, COLFILE_NO_MMAP="0")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.strip() == "ok"
