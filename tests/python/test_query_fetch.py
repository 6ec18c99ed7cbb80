"""What selective reads fetch from disk: only the chunks that can hold
selected rows, announced to the kernel ahead of the reads (colfile._fetch),
with nothing read past them; counted by the kernel (/proc/self/io
read_bytes) on blobs dropped from the page cache.  And the reads' results,
whatever the windows and gaps, identical to numpy on random data."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colfile
from colfile import _fetch, _runs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from pagecache import read_bytes  # noqa: E402  (bench/pagecache.py)

FAST = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def drop_cache(col: Any) -> None:
    """The blobs of ``col`` out of the page cache (clean pages: synced
    first)."""
    for i in range(col.nfile):
        fd = os.open(os.path.join(col.path, f"{i:06X}"), os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


N = 1 << 21          # rows: 16 MiB per f8 column
CHUNK = 1 << 14      # 128 KiB chunks, 128 of them


@pytest.fixture(scope="module")
def cold_file(tmp_path_factory: Any) -> Any:
    if read_bytes() is None or not hasattr(os, "posix_fadvise"):
        pytest.skip("needs /proc/self/io and posix_fadvise")
    path = str(tmp_path_factory.mktemp("fetch") / "f")
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(0, 1000, N))
    y = rng.normal(0, 1, N)
    with colfile.File(path, "w") as f:
        f.create("x", data=x, chunk_rows=CHUNK)
        f.create("y", data=y, chunk_rows=CHUNK)
    f = colfile.File(path)
    # does this file system count reads from its device (tmpfs does not)?
    drop_cache(f["y"])
    r0 = read_bytes()
    f["y"][:]
    if read_bytes() - r0 < N * 8 // 2:  # type: ignore[operator]
        f.close()
        pytest.skip("the temporary directory's file system does not count reads from disk")
    yield f, x, y
    f.close()


def slabs(x: np.ndarray, k: int) -> tuple[str, np.ndarray]:
    """k disjoint slabs of x, each about 5 chunks wide, far apart."""
    parts = []
    mask = np.zeros(len(x), bool)
    for j in range(k):
        r0 = (2 * j + 1) * len(x) // (2 * k) + 77
        a, b = float(x[r0]), float(x[r0 + 5 * CHUNK])
        parts.append(f"((x >= {a!r}) & (x < {b!r}))")
        mask |= (x >= a) & (x < b)
    return " | ".join(parts), mask


def cold_count(f: Any, fn: Any) -> tuple[int, Any]:
    for name in ("x", "y"):
        drop_cache(f[name])
    r0 = read_bytes()
    out = fn()
    return read_bytes() - r0, out  # type: ignore[operator]


def test_histogram_over_selection_reads_only_its_chunks(cold_file: Any) -> None:
    """A histogram of y where x lies in 8 slabs reads y (and x at the
    slabs' edges) in 8 runs of chunks: the kernel reads those bytes and no
    more (its read-ahead went past the end of every run before the reads
    were announced: about 1.9x the bytes)."""
    f, x, y = cold_file
    expr, mask = slabs(x, 8)
    got, (h, edges, rep) = cold_count(f, lambda: colfile.histogram(
        f["y"], bins=32, range=(-4, 4), where=expr, return_report=True))
    want, _ = np.histogram(y[mask], bins=32, range=(-4, 4))
    assert np.array_equal(h, want)
    need = rep.bytes_read
    assert 0 < need < 0.3 * rep.bytes_total
    # pages are 4 KiB: each run (and the edge reads of x) rounded out
    assert need <= got <= need + 64 * 4096, (got, need, rep)


def test_selection_read_reads_only_the_selected_chunks(cold_file: Any) -> None:
    f, x, y = cold_file
    expr, mask = slabs(x, 8)
    sel = colfile.where(f, expr)
    assert np.array_equal(sel.mask(), mask)
    drop_cache(f["y"])
    r0 = read_bytes()
    got = sel.read("y")
    fetched = read_bytes() - r0  # type: ignore[operator]
    assert np.array_equal(got, y[mask])
    need = sel.count * 8
    assert need <= fetched <= need + 32 * 4096, (fetched, need)


def test_scattered_rows_fetch_coalesced_ranges(cold_file: Any) -> None:
    """Every 40th row of the slabs (gaps of 320 bytes, under GAP_BYTES):
    the ranges between them are fetched whole, once, and nothing else."""
    f, x, y = cold_file
    _, mask = slabs(x, 4)
    rows = np.flatnonzero(mask)[::40]
    starts, stops = rows, rows + 1
    out = np.empty(len(rows))
    drop_cache(f["y"])
    r0 = read_bytes()
    _runs.read(f["y"], starts, stops, out)
    fetched = read_bytes() - r0  # type: ignore[operator]
    assert np.array_equal(out, y[rows])
    spans = _fetch.join_ranges(rows * 8, rows * 8 + 8, _fetch.GAP_BYTES)
    need = int(np.sum(spans[1] - spans[0]))
    assert len(spans[0]) == 4
    assert need <= fetched <= need + 16 * 4096, (fetched, need)


def test_ahead_window_is_bounded(tmp_path: Path) -> None:
    """What Ahead announces runs at most AHEAD_BYTES (and one entry) past the
    read in progress, and covers every read before it is made."""
    with colfile.File(str(tmp_path / "f"), "w") as f:
        f.create("v", data=np.arange(100000, dtype="f8"), nfile=3)
    with colfile.File(str(tmp_path / "f")) as f:
        col = f["v"]
        reads = [(col, a, a + 500) for a in range(0, 100000, 1000)]
        ahead = _fetch.Ahead(reads, ahead_bytes=20000, gap_bytes=4000)
        try:
            for i in range(len(reads)):
                ahead.at(i)
                assert ahead.done > i or not ahead.enabled
                if ahead.enabled:
                    past = ahead.announced_past(i)
                    assert past <= 20000 + 2 * 4000
            if ahead.enabled:
                assert ahead.bytes == 100 * 500 * 8  # gaps of 4000 bytes, not under 4000
        finally:
            ahead.close()
        with _fetch.Ahead(reads, gap_bytes=4001) as joined:
            joined.at(0)
            assert not joined.enabled or joined.bytes > 100 * 500 * 8


# ---------------------------------------------------------------------------
# results: identical to numpy whatever the windows


@pytest.fixture(scope="module")
def scratch() -> Any:
    d = tempfile.mkdtemp(dir=FAST)
    yield d
    shutil.rmtree(d, ignore_errors=True)


_count = [0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), n=st.integers(1, 3000), chunk=st.integers(1, 300),
       nfile=st.integers(1, 4), lo=st.floats(-1.2, 1.2), width=st.floats(0, 1.5),
       gap=st.sampled_from([8, 64, 1000, 128 << 10]), unit=st.sampled_from([16, 200, 4 << 20]),
       ahead=st.sampled_from([1, 100, 5000, 16 << 20]), piece=st.integers(8, 4000),
       modulo=st.integers(1, 5))
def test_reads_equal_numpy(scratch: str, monkeypatch: Any, seed: int, n: int, chunk: int,
                           nfile: int, lo: float, width: float, gap: int, unit: int,
                           ahead: int, piece: int, modulo: int) -> None:
    monkeypatch.setattr(_fetch, "GAP_BYTES", gap)
    monkeypatch.setattr(_fetch, "AHEAD_BYTES", ahead)
    monkeypatch.setattr(_runs, "UNIT_BYTES", unit)
    monkeypatch.setattr(_runs, "RUN_BYTES", 64 + (seed % 3) * 400)
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-1, 1, n))
    x[rng.random(n) < 0.02] = np.nan
    v = rng.normal(0, 1, (n, 3)).astype("f4")
    ids = rng.permutation(n)
    _count[0] += 1
    path = os.path.join(scratch, f"f{_count[0]}")
    with colfile.File(path, "w") as f:
        f.create("x", data=x, chunk_rows=chunk, nfile=min(nfile, n))
        f.create("v", data=v, chunk_rows=max(1, chunk // 2))
        f.create("id", data=ids, nfile=nfile if n >= nfile else 1)
    with colfile.File(path) as f:
        hi = lo + width
        expr = f"(x >= {lo!r}) & (x < {hi!r}) & (id % {modulo} == 0)"
        mask = (x >= lo) & (x < hi) & (ids % modulo == 0)
        sel = colfile.where(f, expr, piece_bytes=piece)
        assert np.array_equal(sel.mask(), mask)
        assert np.array_equal(sel.read("v"), v[mask])
        both = sel.read(["x", "id"])
        assert np.array_equal(both["x"], x[mask]) and np.array_equal(both["id"], ids[mask])
        h, e = colfile.histogram(f["v"].field(1), bins=7, range=(-2, 2), where=expr,
                                 piece_bytes=piece)
        hw, ew = np.histogram(v[mask, 1], bins=7, range=(-2, 2))
        assert np.array_equal(h, hw) and np.array_equal(e, ew)
    shutil.rmtree(path, ignore_errors=True)


def test_selection_indexed_by_names(tmp_path: Path) -> None:
    """``sel[name]`` and ``sel[[names]]`` read the selected rows, as read()."""
    x = np.array([4, 8, 1, 9, 9, 0])
    v = np.arange(12.0).reshape(6, 2)
    with colfile.File(str(tmp_path / "f"), "w") as f:
        f.create("x", data=x)
        f.create("G/v", data=v)
        sel = colfile.where(f, "x > 3")
        assert np.array_equal(sel["G/v"], v[x > 3])
        both = sel[["x", "G/v"]]
        assert both.dtype.names == ("x", "G/v")
        assert np.array_equal(both["x"], x[x > 3]) and np.array_equal(both["G/v"], v[x > 3])
        assert np.array_equal(sel[("x",)]["x"], x[x > 3])
        assert np.array_equal(sel[f["x"]], x[x > 3])
        with pytest.raises(TypeError, match="indexed by column names"):
            sel[0]


def test_ahead_holds_few_descriptors(tmp_path: Path) -> None:
    """A read over many blobs holds at most a few of them open to announce
    them (a column may have more blobs than a process may open files)."""
    x = np.arange(3000.0)
    with colfile.File(str(tmp_path / "f"), "w") as f:
        f.create("x", data=x, nfile=300, chunk_rows=5)
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    with colfile.File(str(tmp_path / "f")) as f:
        col = f["x"]
        reads = [(col, a, a + 10) for a in range(0, 3000, 10)]
        with _fetch.Ahead(reads, ahead_bytes=1 << 30) as ahead:
            ahead.at(0)  # 24 KB: announced by this thread, 300 blobs
            assert ahead.helper is None
            assert not ahead.enabled or ahead.done == len(reads)
            assert len(ahead.files.fds) <= _fetch._OPEN_BLOBS
            if fds is not None:
                assert len(os.listdir("/proc/self/fd")) <= fds + _fetch._OPEN_BLOBS + 4
            ahead.close()
            assert len(ahead.files.fds) == 0
        sel = colfile.where(f, "x % 7 == 1")
        assert np.array_equal(sel["x"], x[x % 7 == 1])
        assert np.array_equal(colfile.histogram(col, bins=5, where="x % 7 == 1")[0],
                              np.histogram(x[x % 7 == 1], bins=5)[0])


def test_long_ranges_are_left_to_the_kernel(tmp_path: Path) -> None:
    """A range of STREAM_BYTES or more (after joining) is not announced:
    the kernel's read-ahead streams it; shorter ones are."""
    x = np.arange(4 << 20, dtype="f8")  # 32 MiB
    with colfile.File(str(tmp_path / "f"), "w") as f:
        f.create("x", data=x)
    with colfile.File(str(tmp_path / "f")) as f:
        col = f["x"]
        step = _fetch.STREAM_BYTES // 8
        with _fetch.Ahead([(col, 0, step)], ahead_bytes=1 << 30) as ahead:
            ahead.at(0)
            assert ahead.bytes == 0 and (ahead.done == 1 or not ahead.enabled)
        with _fetch.Ahead([(col, 0, step - 1), (col, step + 100000, 2 * step)]) as ahead:
            ahead.at(0)
            assert not ahead.enabled or ahead.bytes == 8 * (2 * step - 100001)
        out = np.empty(3 * step)
        _runs.read(col, np.array([0]), np.array([3 * step]), out)
        assert np.array_equal(out, x[:3 * step])


def test_helper_announces_large_reads_in_order(tmp_path: Path) -> None:
    """Past _HELPER_BYTES the helper thread announces, in pieces, every
    range; closing stops it (no thread left behind)."""
    x = np.arange(3 << 20, dtype="f8")  # 24 MiB
    with colfile.File(str(tmp_path / "f"), "w") as f:
        f.create("x", data=x, nfile=2)
        f.create("y", data=x[::-1].copy(), nfile=3)
    with colfile.File(str(tmp_path / "f")) as f:
        reads = [(f[nm], a, a + (1 << 18)) for a in range(0, 3 << 20, 1 << 18) for nm in "xy"]
        with _fetch.Ahead(reads, ahead_bytes=8 << 20) as ahead:
            for i in range(len(reads)):
                ahead.at(i)
            if ahead.enabled:
                assert ahead.helper is not None and ahead.helper.is_alive()
                assert ahead.bytes == 2 * x.nbytes
        assert ahead.helper is None
        assert not [t for t in __import__("threading").enumerate() if t.name == "colfile-fetch"]
