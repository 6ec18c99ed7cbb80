"""Queries and histograms under MPI: colfile.histogram on a File opened with
comm= is collective -- rank 0 reads the chunk statistics and broadcasts the
plan, each rank processes its share of the cells, the results are summed --
and must equal the serial result on every rank.  Columns created in parallel
with chunk_rows= get valid statistics from the merged writes of all ranks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import fail_reads_on_last_rank, query_table, same_on_all_ranks, serial_snapshot

import colfile


def table(n: int) -> dict[str, np.ndarray]:
    rng, out = query_table(42, n, (0, 100))
    out["w"] = rng.integers(0, 4, n).astype("f8")
    out["big"] = 2**53 + rng.integers(-50, 50, n)
    return out


LAYOUT = {"x": {"chunk_rows": 97, "nfile": 3}, "id": {"chunk_rows": 250},
          "pos": {"chunk_rows": 128, "nfile": 2}, "w": {"chunk_rows": 333},
          "big": {"chunk_rows": 61}}


@pytest.fixture
def snapshot(comm: Any, shared: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """Written serially by rank 0 (each column its own blob layout and chunk
    size), read by every rank."""
    n = 4321
    data = table(n)
    return serial_snapshot(comm, shared / "snap", data, LAYOUT), data


def check_statistics(path: Path, data: dict[str, np.ndarray]) -> None:
    with colfile.File(path) as f:  # serial, on every rank
        for name, kw in LAYOUT.items():
            col = f[name]
            assert col.chunk_rows == kw["chunk_rows"]
            st = col.chunk_stats()
            assert st["valid"].all(), name
            st = st.reshape(len(st), -1)
            vals = data[name].reshape(len(data[name]), -1)
            for k in range(len(st)):
                first, rows = int(st[k, 0]["first_row"]), int(st[k, 0]["rows"])
                for j in range(st.shape[1]):
                    c = vals[first:first + rows, j]
                    r = st[k, j]
                    nan = np.isnan(c) if c.dtype.kind == "f" else np.zeros(len(c), bool)
                    assert r["count"] == rows and r["nan_count"] == nan.sum()
                    good = c[~nan]
                    if len(good):
                        assert r["min"] <= good.min() and r["max"] >= good.max()


def test_parallel_create_with_chunk_rows(comm: Any, shared: Path) -> None:
    """Every rank writes its share; rank 0 chooses chunk_rows before the
    snapshot broadcast, the replicas must cut chunks the same way, and the
    statistics merged at close are valid and right."""
    n = 4321
    data = table(n)
    path = shared / "par"
    lo, cnt = colfile.mpi.plan_share(n, comm.size, comm.rank)
    seen = {}
    with colfile.File(path, "w", comm=comm) as f:
        for name, kw in LAYOUT.items():
            col = f.create(name, data=data[name][lo:lo + cnt], **kw)
            seen[name] = col.chunk_rows
    # asserted only now: a failed assertion between collectives would leave
    # the other ranks waiting
    assert seen == {k: v["chunk_rows"] for k, v in LAYOUT.items()}
    check_statistics(path, data)
    with colfile.File(path, comm=comm) as f:
        h = colfile.histogram(f["x"], bins=5, where="id < 2000")
    with colfile.File(path) as f:
        np.testing.assert_array_equal(h[0], colfile.histogram(f["x"], bins=5,
                                                              where="id < 2000")[0])


def test_serial_statistics(comm: Any, snapshot: Any) -> None:
    check_statistics(*snapshot)


CASES = [
    ("x", None, {"bins": 10}),
    ("x", "id < 1200", {"bins": 7}),
    ("x", "(pos[0] > 20) & (pos[0] < 70)", {"bins": 5, "range": (0, 10)}),
    ("pos1", "(x > 5) | (id >= 4000)", {"bins": [0, 10, 50, 99, 100]}),
    ("big", "id > 100", {"bins": 9}),
    ("id", "id > 99999", {"bins": 3}),
]


@pytest.mark.parametrize("name, where, kw", CASES)
def test_histogram_equals_serial(comm: Any, snapshot: Any, name: str, where: Any,
                                 kw: dict[str, Any]) -> None:
    path, data = snapshot
    with colfile.File(path) as f:
        fld = f["pos"].field(1) if name == "pos1" else f[name].field()
        serial = colfile.histogram(fld, where=where, return_report=True, **kw)
        serial_w = colfile.histogram(fld, where=where, weights=f["w"], **kw)
    with colfile.File(path, comm=comm) as f:
        fld = f["pos"].field(1) if name == "pos1" else f[name].field()
        got = colfile.histogram(fld, where=where, return_report=True, piece_bytes=2048, **kw)
        got_w = colfile.histogram(fld, where=where, weights=f["w"], **kw)
    np.testing.assert_array_equal(got[0], serial[0])
    np.testing.assert_array_equal(got[1], serial[1])
    np.testing.assert_array_equal(got_w[0], serial_w[0])  # integer weights: exact
    r, s = got[2], serial[2]
    for key in ("chunks", "skipped", "all_match", "scanned", "rows", "selected",
                "bytes_total"):
        assert getattr(r, key) == getattr(s, key), key
    same_on_all_ranks(comm, (got[0].tolist(), str(r)))


@pytest.mark.parametrize("where", [None, "id < 3000"])
def test_histogram2d_equals_serial(comm: Any, snapshot: Any, where: Any) -> None:
    path, data = snapshot
    with colfile.File(path) as f:
        serial = colfile.histogram2d(f["pos"].field(0), f["x"], bins=[4, 6], where=where)
    with colfile.File(path, comm=comm) as f:
        got = colfile.histogram2d(f["pos"].field(0), f["x"], bins=[4, 6], where=where)
    for a, b in zip(got, serial):
        np.testing.assert_array_equal(a, b)
    same_on_all_ranks(comm, got[0].tolist())


def test_errors_are_agreed(comm: Any, snapshot: Any, monkeypatch: Any) -> None:
    path, _ = snapshot
    with colfile.File(path, comm=comm) as f:
        x = f["x"]
        with pytest.raises(colfile.ExpressionError):
            colfile.histogram(x, where="nope > 1")
        # a failure on one rank only (reading its share of the cells) is
        # raised on every rank, naming that rank -- in the range pass and in
        # the histogram pass -- and nobody is left waiting
        bad = fail_reads_on_last_rank(comm, monkeypatch)
        with pytest.raises(OSError, match=f"rank {bad}: boom"):
            colfile.histogram(x, bins=2, range=(0, 10))
        with pytest.raises(OSError, match=f"rank {bad}: boom"):
            colfile.histogram(x, bins=2, where="id < 4000")
        monkeypatch.undo()
        h, _ = colfile.histogram(x, bins=2, range=(0, 10))
        same_on_all_ranks(comm, h.tolist())


def test_where_under_mpi(comm: Any, snapshot: Any) -> None:
    """where() under comm= is collective by default (every rank calls and
    gets the whole selection).  With parallel=False and a predicate built
    from columns already open it is independent: only some ranks call."""
    path, data = snapshot
    expected = (data["id"] >= 1000) & (data["id"] < 1500) & (data["x"] > 5)
    with colfile.File(path, comm=comm) as f:
        sel = colfile.where(f, "(id >= 1000) & (id < 1500) & (x > 5)")
        np.testing.assert_array_equal(sel.rows, np.flatnonzero(expected))
        ids, x = f["id"], f["x"]  # collective opens
        if comm.rank % 2 == 0:
            sel = colfile.where(f, ids.field().between(1000, 1500) & (x.field() > 5),
                                parallel=False)
            np.testing.assert_array_equal(sel.rows, np.flatnonzero(expected))
            np.testing.assert_array_equal(sel.read(x), data["x"][expected])
            assert sel.report.skipped > 0
