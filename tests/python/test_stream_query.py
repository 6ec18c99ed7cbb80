"""Queries and histograms over a stream's global view (colfile.stream_query):
the column query engine's results, checked against numpy on the rows read
back, for random streams with empty tasks, rows that straddle chunks and
rows longer than a chunk; chunks that the statistics decide are skipped."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colfile
import colfile.stream as cs
import colfile.stream_query

CHUNK = 4096


def make(path, dtype, nmemb, sizes, seed, sorted_=True, raw=False):
    """A stream of len(sizes) tasks; each task's rows ascending in
    component 0 (so that chunks have narrow ranges), NaNs in floats."""
    rng = np.random.default_rng(seed)
    f = colfile.File(str(path), "w")
    dt = np.dtype(dtype)
    tasks = []
    with cs.create(f, "s", "raw" if raw else dt, nmemb=nmemb, tasks=len(sizes), files=min(2, len(sizes)),
                   chunk=CHUNK, align=CHUNK) as w:
        for t, n in enumerate(sizes):
            if dt.kind == "f":
                v = rng.normal(t * 50.0, 40.0, (n, nmemb)).astype(dt)
                v[rng.random((n, nmemb)) < 0.03] = np.nan
            else:
                info = np.iinfo(dt)
                v = rng.integers(max(info.min, -1000), min(info.max, 1000), (n, nmemb), endpoint=True).astype(dt)
            if sorted_ and n:
                v = v[np.argsort(v[:, 0], kind="stable")]
            rows = v[:, 0] if nmemb == 1 else v
            at = 0
            while at < n:  # pieces of varying size: rows straddle chunks
                m = int(rng.integers(1, 700))
                w.task(t).append(rows[at:at + m])
                at += m
            tasks.append(rows)
    full = np.concatenate(tasks) if tasks else np.zeros(0, dt)
    return f, full


PREDICATES = [
    ("s > {a}", lambda x, a, b: x > a),
    ("(s >= {a}) & (s < {b})", lambda x, a, b: (x >= a) & (x < b)),
    ("~(s < {a}) | (s == {b})", lambda x, a, b: ~(x < a) | (x == b)),
    ("s * 2 + 1 <= {a}", lambda x, a, b: x * 2 + 1 <= a),
    ("s != {a}", lambda x, a, b: x != a),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.sampled_from([0, 0, 1, 5, 170, 600, 1500]), min_size=1, max_size=5),
       dtype=st.sampled_from(["<f8", "<f4", "<i4", "<u2", ">i8"]),
       nmemb=st.sampled_from([1, 3]),
       which=st.integers(0, len(PREDICATES) - 1),
       a=st.integers(-100, 250), b=st.integers(-100, 250),
       seed=st.integers(0, 2**32 - 1))
def test_where_matches_numpy(tmp_path_factory, sizes, dtype, nmemb, which, a, b, seed):
    f, full = make(tmp_path_factory.mktemp("q") / "f", dtype, nmemb, sizes, seed)
    try:
        s = cs.open(f, "s")
        text, fn = PREDICATES[which]
        comp = "" if nmemb == 1 else "[1]"
        expr = text.replace("s", "s" + comp).format(a=a, b=b)
        x = full if nmemb == 1 else full[:, 1]
        with np.errstate(all="ignore"):
            want = np.flatnonzero(fn(x, a, b))
        sel = s.where(expr)
        np.testing.assert_array_equal(sel.rows, want)
        got = sel.read("s")
        np.testing.assert_array_equal(got, full[want])
        # a predicate built from the field gives the same
        fld = s.field(None if nmemb == 1 else 1)
        np.testing.assert_array_equal(s.where(fld > a).rows, np.flatnonzero(x > a))
        # as colfile.where on the stream
        np.testing.assert_array_equal(colfile.where(s, expr).rows, want)
        assert sel.report.chunks == sel.report.skipped + sel.report.all_match + sel.report.scanned
    finally:
        f.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.sampled_from([0, 3, 400, 1200]), min_size=1, max_size=4),
       dtype=st.sampled_from(["<f8", "<i4"]),
       a=st.integers(-50, 150), bins=st.integers(1, 12), seed=st.integers(0, 2**32 - 1))
def test_histogram_matches_numpy(tmp_path_factory, sizes, dtype, a, bins, seed):
    f, full = make(tmp_path_factory.mktemp("h") / "f", dtype, 3, sizes, seed)
    try:
        s = cs.open(f, "s")
        x, y = full[:, 0], full[:, 2]
        mask = y > a
        h, edges = s.histogram(0, bins=bins, range=(-100, 300), where=f"s[2] > {a}")
        want, wedges = np.histogram(x[mask], bins=bins, range=(-100, 300))
        np.testing.assert_array_equal(h, want)
        np.testing.assert_array_equal(edges, wedges)
        # range from the statistics and the data, as numpy's from the values
        sel = x[mask & ~np.isnan(x)] if x.dtype.kind == "f" else x[mask]
        if len(sel) and np.all(np.isfinite(sel)):
            h2, e2 = s.histogram(0, bins=bins, where=f"s[2] > {a}")
            w2, we2 = np.histogram(sel, bins=bins)
            np.testing.assert_array_equal(h2, w2)
            np.testing.assert_allclose(e2, we2)
        # weights and colfile.histogram on a stream field
        hw, _ = colfile.histogram(s.field(0), bins=bins, range=(-100, 300), weights=s.field(1))
        ww, _ = np.histogram(x, bins=bins, range=(-100, 300), weights=full[:, 1])
        np.testing.assert_allclose(hw, ww)
    finally:
        f.close()


def test_chunks_are_skipped(tmp_path):
    f, full = make(tmp_path / "f", "<f8", 1, [3000, 0, 2000, 2500], 7)
    try:
        s = cs.open(f, "s")
        sel = s.where("s > 180")
        np.testing.assert_array_equal(sel.rows, np.flatnonzero(full > 180))
        r = sel.report
        assert r.chunks == len(s.chunk_stats())  # no chunk without a row start here
        assert r.skipped > r.chunks // 2
        assert r.bytes_read < r.bytes_total // 2
        assert r.selected == len(sel.rows)
    finally:
        f.close()


def test_rows_longer_than_a_chunk(tmp_path):
    """600 doubles a row (4800 bytes): some chunks hold no row start and
    are left out of the tiling; results are still numpy's."""
    f, full = make(tmp_path / "f", "<f8", 600, [0, 9, 4, 0, 13], 3)
    try:
        s = cs.open(f, "s")
        cst = s.chunk_stats(0)
        assert (cst["rows"] == 0).any()
        tiles = s._column().chunk_stats(0)
        assert (tiles["rows"] > 0).all() and tiles["rows"].sum() == len(full)
        np.testing.assert_array_equal(tiles["first_row"], np.concatenate([[0], np.cumsum(tiles["rows"])[:-1]]))
        for j in (0, 599):
            sel = s.where(f"s[{j}] > 60")
            np.testing.assert_array_equal(sel.rows, np.flatnonzero(full[:, j] > 60))
        h, _ = s.histogram(5, bins=4, range=(0, 200), where="s[7] < 100")
        np.testing.assert_array_equal(h, np.histogram(full[full[:, 7] < 100, 5], bins=4, range=(0, 200))[0])
    finally:
        f.close()


def test_raw_and_empty_streams(tmp_path):
    """A raw stream records no statistics: every chunk is read, same rows.
    A stream of empty tasks selects nothing."""
    f = colfile.File(str(tmp_path / "f"), "w")
    try:
        data = np.arange(5000, dtype=np.uint8)
        with cs.create(f, "r", "raw", tasks=3, chunk=CHUNK, align=CHUNK) as w:
            w.task(0).append(data[:3000])
            w.task(2).append(data[3000:])
        with cs.create(f, "e", "<i8", tasks=2, chunk=CHUNK, align=CHUNK):
            pass
        r = cs.open(f, "r")
        sel = r.where("r < 10")
        np.testing.assert_array_equal(sel.rows, np.flatnonzero(data < 10))
        assert sel.report.skipped == 0 and sel.report.scanned == sel.report.chunks
        e = cs.open(f, "e")
        assert e.where("e > 0").count == 0
        assert e.histogram(bins=2, range=(0, 1))[0].tolist() == [0, 0]
    finally:
        f.close()


def test_names_and_errors(tmp_path):
    f, full = make(tmp_path / "f", "<i4", 1, [100, 50], 1)
    try:
        with cs.create(f, "grp/t", "<i4", tasks=1, chunk=CHUNK, align=CHUNK) as w:
            w.task(0).append(np.arange(150, dtype=np.int32))
        s = cs.open(f, "s")
        # another stream of the File by name, of the same length
        t = cs.open(f, "grp/t")
        np.testing.assert_array_equal(t.where("t < 20").rows, np.arange(20))  # the last path component
        both = s.where("(s > 0) & ('grp/t' < 20)")
        np.testing.assert_array_equal(both.rows, np.flatnonzero((full > 0) & (np.arange(150) < 20)))
        with pytest.raises(Exception, match="nothing"):
            s.where("nothing > 1")
        with pytest.raises(IndexError):
            s.field(0)
        s.close()
        with pytest.raises(ValueError, match="closed"):
            s.where("s > 1")
    finally:
        f.close()


def test_doctest():
    assert doctest.testmod(colfile.stream_query).failed == 0
