"""The fine level of the chunk index (min and max per sub-chunk): never
written with the data (a write's index does not depend on how its rows were
split), built by ``colfile index`` from the data read back, used by query
planning to skip sub-chunks inside chunks the levels cannot decide; queries stay exact
(compared row for row with numpy on random predicates), columns without a
fine level plan as before, a damaged fine level warns and is not used."""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colfile
from colfile import chunkindex
from colfile.cli import main as cli

N = 1 << 19          # 1024 sub-chunks of 512 rows of f8: `colfile index` writes the index
CHUNK = 16384        # 32 sub-chunks per chunk


def _data(seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    # a clustered cloud: uniform in a box, in Morton order (as snapshots are)
    p = rng.uniform(0, 100, (N, 3))
    cell = (p / 100 * 1024).astype(np.uint64)
    key = np.zeros(N, np.uint64)
    for bit in range(10):
        for j in range(3):
            key |= ((cell[:, j] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(3 * bit + j)
    p = p[np.argsort(key, kind="stable")]
    x = np.sort(p[:, 0])
    p[rng.integers(0, N, 50), 1] = np.nan          # NaNs in a few chunks
    p[1000:1010, 2] = -0.0
    p[2000:2010, 2] = 0.0
    big = (1 << 60) + np.cumsum(rng.integers(0, 2000, N)).astype(np.int64)
    return {"P": p, "I": big, "F": np.sort(rng.normal(0, 10, N)).astype("f4"),
            "B": x.astype(">f8")}


@pytest.fixture(scope="module")
def snap():
    d = tempfile.mkdtemp(prefix="cf-fine-")
    data = _data()
    path = os.path.join(d, "snap")
    with colfile.File(path, "w") as f:
        for name, arr in data.items():
            f.create(name, data=arr, chunk_rows=CHUNK)
    cli(["index", "-q", path])
    f = colfile.File(path, "r")
    yield f, data, path
    f.close()
    shutil.rmtree(d, ignore_errors=True)


def test_write_leaves_no_fine_level(tmp_path):
    data = _data(11)
    path = str(tmp_path / "s")
    with colfile.File(path, "w") as f:
        f.create("P", data=data["P"], chunk_rows=CHUNK)
        f.create("Q", data=data["P"], chunk_rows=512)    # 1024 chunks: an index, levels only
    with colfile.File(path, "r") as f:
        assert chunkindex.info(f["P"])["state"] == "absent"
        assert chunkindex.info(f["Q"])["state"] == "current"
        assert chunkindex.count(f["Q"], chunkindex.FINE_LEVEL) == 0


def test_fine_level_built_by_index(snap):
    f, data, _ = snap
    p = f["P"]
    assert chunkindex.info(p)["state"] == "current"
    m = chunkindex.count(p, chunkindex.FINE_LEVEL) // chunkindex.count(p, 0)
    assert m == CHUNK // 512
    recs = chunkindex.nodes(p, chunkindex.FINE_LEVEL, 0, 3 * m, 0)
    x = data["P"][:, 0]
    for i, r in enumerate(recs):
        seg = x[i * 512:(i + 1) * 512]
        assert r["first_row"] == i * 512 and r["rows"] == 512 and r["valid"]
        assert r["min"] == seg.min() and r["max"] == seg.max()
    # integers and a non-native byte order have no fine level: their
    # indexes (if any) plan as before
    assert chunkindex.count(f["I"], chunkindex.FINE_LEVEL) == 0
    assert chunkindex.count(f["B"], chunkindex.FINE_LEVEL) == 0


def test_fine_level_reads_less(snap):
    f, data, _ = snap
    p = data["P"]
    expr = "(P[0] - 50)**2 + (P[1] - 15)**2 + (P[2] - 50)**2 < 15**2"
    sel = colfile.where(f, expr)
    want = np.flatnonzero((p[:, 0] - 50) ** 2 + (p[:, 1] - 15) ** 2 + (p[:, 2] - 50) ** 2 < 15 ** 2)
    np.testing.assert_array_equal(sel.rows, want)
    # the chunks the levels could not decide, read whole, against what was read
    st = f["P"].chunk_stats()
    lo, hi = st["min"], st["max"]
    d2 = sum(np.maximum(0, np.maximum(lo[:, j] - c, c - hi[:, j])) ** 2 for j, c in enumerate((50, 15, 50)))
    coarse = int((d2 < 15 ** 2).sum()) * CHUNK * 24
    assert 0 < sel.report.bytes_read < coarse * 0.6, (sel.report.bytes_read, coarse)


_P = st.floats(0, 100)
_R = st.floats(0.5, 40)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(cx=_P, cy=_P, cz=_P, r=_R, lo=st.integers(-5000, N * 1100), w=st.integers(0, 200000),
       t=st.floats(-40, 40, width=32), op=st.sampled_from(["&", "|"]))
def test_random_queries_match_numpy(snap, cx, cy, cz, r, lo, w, t, op):
    f, data, _ = snap
    p, i, fl = data["P"], data["I"], data["F"]
    base = 1 << 60
    exprs = {
        f"(P[0] - {cx!r})**2 + (P[1] - {cy!r})**2 + (P[2] - {cz!r})**2 < {r!r}**2":
            (p[:, 0] - cx) ** 2 + (p[:, 1] - cy) ** 2 + (p[:, 2] - cz) ** 2 < r ** 2,
        f"(I >= {base + lo}) & (I < {base + lo + w})": (i >= base + lo) & (i < base + lo + w),
        f"(F > {float(t)!r}) {op} (P[1] < {cy!r})":
            (fl > np.float32(t)) & (p[:, 1] < cy) if op == "&" else (fl > np.float32(t)) | (p[:, 1] < cy),
        f"P[2] != {cz!r}": p[:, 2] != cz,
        f"~(P[1] >= {cy!r})": ~(p[:, 1] >= cy),
    }
    for expr, mask in exprs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = colfile.where(f, expr).rows
        np.testing.assert_array_equal(got, np.flatnonzero(mask), err_msg=expr)


def test_histogram_with_fine_level(snap):
    f, data, _ = snap
    p = data["P"]
    h, edges = colfile.histogram(f["P"].field(2), bins=7, where="P[0] < 3.5")
    want, wedges = np.histogram(p[p[:, 0] < 3.5, 2], bins=7)
    np.testing.assert_array_equal(h, want)
    np.testing.assert_array_equal(edges, wedges)


def _index_path(path: str, name: str) -> str:
    return os.path.join(path, name, "colfile-index-v1")


def test_damaged_fine_block_warns_and_stays_exact(tmp_path):
    data = _data(3)
    path = str(tmp_path / "s")
    with colfile.File(path, "w") as f:
        f.create("P", data=data["P"], chunk_rows=CHUNK)
    cli(["index", "-q", path])
    ip = _index_path(path, "P")
    st_ = os.stat(ip)
    with open(ip, "r+b") as fh:   # a byte inside the fine level's last block
        fh.seek(st_.st_size - 100)
        b = fh.read(1)
        fh.seek(st_.st_size - 100)
        fh.write(bytes([b[0] ^ 0x40]))
    os.utime(ip, ns=(st_.st_atime_ns, st_.st_mtime_ns))
    p = data["P"]
    with colfile.File(path, "r") as f:
        with pytest.warns(chunkindex.IndexWarning, match="fine level"):
            sel = colfile.where(f, "P[0] > 99.9")
        np.testing.assert_array_equal(sel.rows, np.flatnonzero(p[:, 0] > 99.9))
        assert chunkindex.info(f["P"])["state"] == "current"
    # `colfile check` reports it, `colfile index --force` rebuilds it
    with colfile.File(path, "r") as f:
        assert "fine level" in str(chunkindex.problem(f["P"]))
    cli(["index", "--force", path])
    with colfile.File(path, "r") as f:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sel = colfile.where(f, "P[0] > 99.9")
        np.testing.assert_array_equal(sel.rows, np.flatnonzero(p[:, 0] > 99.9))
        assert chunkindex.count(f["P"], chunkindex.FINE_LEVEL) == N // 512


def test_index_rebuilds_a_missing_fine_level(tmp_path):
    data = _data(5)
    path = str(tmp_path / "s")
    with colfile.File(path, "w") as f:
        f.create("P", data=data["P"], chunk_rows=CHUNK)
    assert not os.path.exists(_index_path(path, "P"))   # a write builds no fine level
    with colfile.File(path, "r") as f:
        assert chunkindex.count(f["P"], chunkindex.FINE_LEVEL) == 0
        before = colfile.where(f, "P[0] < 0.2")
    cli(["index", path])
    with colfile.File(path, "r") as f:
        assert chunkindex.count(f["P"], chunkindex.FINE_LEVEL) == N // 512
        after = colfile.where(f, "P[0] < 0.2")
    np.testing.assert_array_equal(before.rows, after.rows)
    assert after.report.bytes_read < before.report.bytes_read


def test_rewritten_rows_keep_the_fine_level_exact(tmp_path):
    """Rows written twice, then indexed: the fine level is the data's."""
    data = _data(9)
    path = str(tmp_path / "s")
    p = data["P"].copy()
    with colfile.File(path, "w") as f:
        c = f.create("P", data=p, chunk_rows=CHUNK)
        p[5000:5100, 0] = 1e6
        c[5000:5100] = p[5000:5100]
    cli(["index", "-q", path])
    with colfile.File(path, "r") as f:
        assert chunkindex.count(f["P"], chunkindex.FINE_LEVEL) == N // 512
        sel = colfile.where(f, "P[0] > 1000")
        np.testing.assert_array_equal(sel.rows, np.arange(5000, 5100))
