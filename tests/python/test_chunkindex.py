"""The binary chunk index (colfile-index-v1, docs/format.md 8.6) in query
planning: decisions from its coarse levels, a bounded number of bytes read,
exact results against numpy whatever the index says or lacks, a warning
and the text statistics for a damaged one, `colfile index` rebuilding it,
and partial reads that verify the chunks they read whole."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colfile
from colfile import chunkindex

INDEX = "colfile-index-v1"


def _flip(path: Path, at: int) -> None:
    """Flip a bit of byte `at` (from the end when negative), keeping the
    file's times (a silent corruption)."""
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_doctests(lib: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = doctest.testmod(chunkindex, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def _sorted_file(path: Path, n: int, chunk_rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    x = np.sort(rng.normal(size=n))
    y = rng.random(n)
    with colfile.File(str(path), "w") as f:
        f.create("x", data=x, chunk_rows=chunk_rows)
        f.create("y", data=y, chunk_rows=chunk_rows)
    return x, y


def test_planning_reads_the_coarse_levels(lib: Any, tmp_path: Path) -> None:
    n = 1 << 20
    x, y = _sorted_file(tmp_path / "f", n, 64)  # 16384 chunks
    with colfile.File(str(tmp_path / "f"), "r") as f:
        col = f["x"]
        meta = chunkindex.info(col)
        assert meta["state"] == "current" and meta["chunks"] == n // 64 and meta["levels"] == 2
        sel = colfile.where(f, "(x > 2.5) & (y < 0.5)")
        assert np.array_equal(sel.rows, np.flatnonzero((x > 2.5) & (y < 0.5)))
        # x is decided on the top level (64 records) and the pages under the
        # few groups that straddle 2.5; the index holds 16384 chunk records
        size = (tmp_path / "f" / "x" / INDEX).stat().st_size
        assert chunkindex.bytes_read(col) < 4 * 256 * 40 + 64 * 40 + 1024
        assert chunkindex.bytes_read(col) < size / 20
        assert sel.report.skipped > 0.95 * (n // 64)
        # the same answer from the text statistics alone
        hist_idx = colfile.histogram(f["y"].field(), bins=7, range=(0, 1), where="x < -1")
    os.unlink(tmp_path / "f" / "x" / INDEX)
    os.unlink(tmp_path / "f" / "y" / INDEX)
    with colfile.File(str(tmp_path / "f"), "r") as f:
        assert chunkindex.info(f["x"])["state"] == "absent"
        sel2 = colfile.where(f, "(x > 2.5) & (y < 0.5)")
        assert np.array_equal(sel2.rows, sel.rows)
        assert sel2.report.skipped == sel.report.skipped
        hist_txt = colfile.histogram(f["y"].field(), bins=7, range=(0, 1), where="x < -1")
    assert np.array_equal(hist_idx[0], hist_txt[0])
    assert np.array_equal(hist_idx[0], np.histogram(y[x < -1], bins=7, range=(0, 1))[0])


def test_damaged_index_warns_and_stays_exact(lib: Any, tmp_path: Path) -> None:
    x, _ = _sorted_file(tmp_path / "f", 1 << 16, 16)
    _flip(tmp_path / "f" / "x" / INDEX, -50)  # a chunk record near the end
    with colfile.File(str(tmp_path / "f"), "r") as f:
        with pytest.warns(chunkindex.IndexWarning, match=r"x/colfile-index-v1: .*fail their CRC32C"):
            sel = colfile.where(f, "x > 3")
        assert np.array_equal(sel.rows, np.flatnonzero(x > 3))
        assert chunkindex.info(f["x"])["state"] == "damaged"
    # the head
    _flip(tmp_path / "f" / "x" / INDEX, -50)
    _flip(tmp_path / "f" / "x" / INDEX, 40)
    with colfile.File(str(tmp_path / "f"), "r") as f:
        with pytest.warns(chunkindex.IndexWarning, match="head fails its CRC32C"):
            sel = colfile.where(f, "x < -3")
        assert np.array_equal(sel.rows, np.flatnonzero(x < -3))
    # `colfile index` rebuilds it
    from colfile.cli import main

    assert main(["index", "-q", str(tmp_path / "f"), "x"]) == 0
    with colfile.File(str(tmp_path / "f"), "r") as f:
        assert chunkindex.info(f["x"])["state"] == "current"
        with warnings.catch_warnings():
            warnings.simplefilter("error", chunkindex.IndexWarning)
            sel = colfile.where(f, "x < -3")
        assert np.array_equal(sel.rows, np.flatnonzero(x < -3))
        assert chunkindex.chunk_crc32c(f["x"], 7) is not None


def test_truncated_index_warns_and_stays_exact(lib: Any, tmp_path: Path) -> None:
    x, _ = _sorted_file(tmp_path / "f", 1 << 15, 8)
    p = tmp_path / "f" / "x" / INDEX
    stat = p.stat()
    with open(p, "r+b") as fh:
        fh.truncate(stat.st_size - 100)
    os.utime(p, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with colfile.File(str(tmp_path / "f"), "r") as f:
        with pytest.warns(chunkindex.IndexWarning, match="truncated"):
            sel = colfile.where(f, "x > 1")
        assert np.array_equal(sel.rows, np.flatnonzero(x > 1))


def test_stale_index_is_not_used(lib: Any, tmp_path: Path) -> None:
    x, _ = _sorted_file(tmp_path / "f", 1 << 14, 4)
    os.utime(tmp_path / "f" / "x" / "header")  # a header write since the commit
    with colfile.File(str(tmp_path / "f"), "r") as f:
        assert chunkindex.info(f["x"])["state"] == "stale"
        sel = colfile.where(f, "x > 1")
        assert np.array_equal(sel.rows, np.flatnonzero(x > 1))
        assert sel.report.skipped == 0  # nothing trusted


def test_partial_reads_verify_chunks(lib: Any, tmp_path: Path) -> None:
    v = np.arange(20000, dtype="f8")
    with colfile.File(str(tmp_path / "f"), "w") as f:
        f.create("v", data=v, chunk_rows=16)
    _flip(tmp_path / "f" / "v" / "000000", 5000 * 8 + 2)  # row 5000: chunk 312
    with colfile.File(str(tmp_path / "f"), "r", verify=True) as f:
        col = f["v"]
        assert np.array_equal(col[100:4000], v[100:4000])
        assert np.array_equal(col[4995:5005][[0, -1]], v[[4995, 5004]])  # no chunk read whole
        with pytest.raises(colfile.ChecksumError, match=r"chunk 312 \(rows 4992\.\.5007\)"):
            col[4992:5008]
        with pytest.raises(colfile.ChecksumError, match="chunk 312"):
            col[1000:9000]
    with colfile.File(str(tmp_path / "f"), "r") as f:
        assert f["v"][4992:5008][0] == 4992.0  # unchecked without verify


def test_more_than_4m_chunks(lib: Any, tmp_path: Path) -> None:
    """2^22 + 1000 statistics chunks: the text holds none, the index all;
    statistics and chunk CRC32C survive a reopen, and a query plans from
    kilobytes of the index."""
    n = (1 << 22) + 1000
    x = np.arange(n, dtype="<i4") * 3 - 7
    with colfile.File(str(tmp_path / "f"), "w") as f:
        f.create("x", data=x, chunk_rows=1, nfile=3)
    assert (tmp_path / "f" / "x" / "colfile-v1").stat().st_size < 4096
    with colfile.File(str(tmp_path / "f"), "r") as f:
        col = f["x"]
        sel = colfile.where(f, "(x >= 600000) & (x < 600300)")
        assert np.array_equal(sel.rows, np.flatnonzero((x >= 600000) & (x < 600300)))
        assert chunkindex.bytes_read(col) < 64 << 10
        rec = chunkindex.nodes(col, 0, n - 1, 1)
        assert rec["valid"][0] and rec["min"][0] == x[-1]
        assert chunkindex.chunk_crc32c(col, 12345) is not None


# ---------------------------------------------------------------------------
# property: index-planned queries equal numpy

_OPS = ["<", "<=", ">", ">=", "==", "!="]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), chunk=st.sampled_from([1, 2, 3]),
       clustered=st.booleans(), dtype=st.sampled_from(["<f8", "<f4", "<i8", "<u2", ">i4"]),
       ops=st.lists(st.tuples(st.sampled_from(_OPS), st.integers(0, 1), st.floats(-1.5, 1.5)),
                    min_size=1, max_size=3),
       joins=st.lists(st.sampled_from(["&", "|"]), min_size=2, max_size=2))
def test_property_index_queries_match_numpy(lib: Any, seed: int, chunk: int, clustered: bool, dtype: str,
                                            ops: list[tuple[str, int, float]], joins: list[str]) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3100, 6000))
    a = rng.normal(size=n) * 100
    b = rng.normal(size=n) * 100
    if clustered:
        a.sort()
    if np.dtype(dtype).kind == "f":
        a[rng.random(n) < 0.02] = np.nan
    cols = {"a": a.astype(dtype) if np.dtype(dtype).kind == "f" else
            np.clip(a, np.iinfo(dtype).min, np.iinfo(dtype).max).astype(dtype),
            "b": b}
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
        with colfile.File(os.path.join(d, "f"), "w") as f:
            for name, v in cols.items():
                f.create(name, data=v, chunk_rows=chunk, nfile=int(rng.integers(1, 4)))
        with colfile.File(os.path.join(d, "f"), "r") as f:
            assert chunkindex.info(f["a"])["state"] == "current"
            parts, masks = [], []
            for k, (op, which, q) in enumerate(ops):
                name = "ab"[which]
                vals = cols[name]
                c = float(np.nanquantile(vals.astype("f8"), (q + 1.5) / 3)) if vals.size else 0.0
                if np.dtype(vals.dtype).kind in "iu":
                    c = float(np.round(c))
                parts.append(f"({name} {op} {c!r})")
                with np.errstate(invalid="ignore"):
                    masks.append({"<": np.less, "<=": np.less_equal, ">": np.greater,
                                  ">=": np.greater_equal, "==": np.equal,
                                  "!=": np.not_equal}[op](vals, c))
            expr, mask = parts[0], masks[0]
            for k in range(1, len(parts)):
                j = joins[k - 1]
                expr = f"({expr}) {j} {parts[k]}"
                mask = (mask & masks[k]) if j == "&" else (mask | masks[k])
            sel = colfile.where(f, expr)
            assert np.array_equal(sel.rows, np.flatnonzero(mask)), expr


def test_cli_help_mentions_the_index(lib: Any) -> None:
    out = subprocess.run([sys.executable, "-m", "colfile.cli", "index", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "colfile-index-v1" in out


def test_check_reports_a_damaged_index_and_repair_fixes_it(lib: Any, tmp_path: Path) -> None:
    _sorted_file(tmp_path / "f", 1 << 14, 4)
    _flip(tmp_path / "f" / "x" / INDEX, 3000)  # a record deep in level 0
    from colfile.cli import main

    assert main(["check", "-q", str(tmp_path / "f")]) == 1
    out = subprocess.run([sys.executable, "-m", "colfile.cli", "check", str(tmp_path / "f")],
                         capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert "x/colfile-index-v1" in out.stdout + out.stderr and "fail their CRC32C" in out.stdout + out.stderr
    assert main(["repair", "-q", str(tmp_path / "f")]) == 0
    assert main(["check", "-q", str(tmp_path / "f")]) == 0


def test_large_column_text_without_chunk_lines_is_not_damage(lib: Any, tmp_path: Path) -> None:
    """Above 2^16 chunk records the statistics text keeps its head lines
    alone (with the column's fine CHUNK): check finds nothing wrong."""
    x = np.arange(70000, dtype="<i8")
    with colfile.File(str(tmp_path / "f"), "w") as f:
        f.create("x", data=x, chunk_rows=1)
    text = (tmp_path / "f" / "x" / "colfile-v1").read_text()
    assert "CHUNK: 1\n" in text and "\n0 0 count=" not in text
    with colfile.File(str(tmp_path / "f"), "r") as f:
        col = f["x"]
        assert col.ext_state == "current"
        assert col.verify_blob(0) == {"OK"}
        st = col.chunk_stats()
        assert len(st) == 70000 and st["valid"].all() and np.array_equal(st["min"], x.astype("f8"))
    from colfile.cli import main

    assert main(["check", "-q", str(tmp_path / "f")]) == 0
