"""Parallel queries: where(), Selection.read and histograms on a File opened
with comm= split the cells to scan over the ranks and combine the results;
every rank must get the serial answer (rows globally sorted), and the work
(cells scanned, bytes read) must be shared, not repeated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import fail_reads_on_last_rank, query_table, same_on_all_ranks, serial_snapshot

import colfile


def table(n: int) -> dict[str, np.ndarray]:
    rng, out = query_table(7, n, (-50, 50))
    out["m"] = rng.exponential(1.0, n).astype("f4")
    return out


LAYOUT = {"x": {"chunk_rows": 97, "nfile": 3}, "id": {"chunk_rows": 250},
          "pos": {"chunk_rows": 128, "nfile": 2}, "m": {"chunk_rows": 333}}


@pytest.fixture
def snapshot(comm: Any, shared: Path) -> tuple[Path, dict[str, np.ndarray]]:
    n = 5003
    data = table(n)
    return serial_snapshot(comm, shared / "snap", data, LAYOUT), data


EXPRS = [
    "id % 3 == 0",
    "pos[0]**2 + pos[1]**2 < 20**2",
    "(x > 5) & (id < 4000)",
    "isin(id // 100, [1, 7, 49]) | (sqrt(abs(pos[2])) > 6.9)",
    "id > 99999",
    "(m * 2 > 3) | (x != x)",
]


@pytest.mark.parametrize("expr", EXPRS)
def test_where_equals_serial(comm: Any, snapshot: Any, expr: str) -> None:
    path, data = snapshot
    with colfile.File(path) as f:
        serial = colfile.where(f, expr)
        want_rows = serial.rows
        want_x = serial.read("x")
        want_both = serial.read(["id", "pos"])
    with colfile.File(path, comm=comm) as f:
        sel = colfile.where(f, expr, piece_bytes=4096)
        rows = sel.rows
        x = sel.read("x")
        both = sel.read(["id", "pos"])
        mine = sel.read("id", share=True)
        share_rows = sel.share_rows()
    np.testing.assert_array_equal(rows, want_rows)
    assert np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(both, want_both)
    # the shares are consecutive pieces of the selection, in rank order
    np.testing.assert_array_equal(mine, share_rows)
    pieces = comm.allgather(mine)
    np.testing.assert_array_equal(np.concatenate(pieces), want_rows)
    r, s = sel.report, serial.report
    for key in ("chunks", "skipped", "all_match", "scanned", "rows", "selected",
                "bytes_read", "bytes_total"):
        assert getattr(r, key) == getattr(s, key), key
    same_on_all_ranks(comm, (rows.tolist(), str(r)))


def test_work_is_shared(comm: Any, snapshot: Any) -> None:
    """Each rank scans its own cells: the cells scanned per rank add up to
    the serial count (not size times it), and with several ranks no rank
    scans them all."""
    path, _ = snapshot
    expr = "id % 2 == 0"  # every cell undecided
    with colfile.File(path, comm=comm) as f:
        from colfile import _parallel
        from colfile.query import as_predicate
        pred = as_predicate(expr, f._query_resolver())
        plan = _parallel.plan(pred, [], f._comm)
        k0, k1 = _parallel.share(plan, f._comm, read_all=False)
        ranges = comm.allgather((k0, k1))
        sel = colfile.where(f, expr)
    assert ranges[0][0] == 0 and ranges[-1][1] == plan.ncells
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    mine = k1 - k0
    if comm.size > 1:
        assert mine < plan.ncells
        # about equal work: no rank more than twice its share (+ one cell)
        assert mine <= 2 * plan.ncells / comm.size + 1
    assert sel.report.scanned == plan.ncells


def test_independent_where_and_histograms(comm: Any, snapshot: Any) -> None:
    path, data = snapshot
    with colfile.File(path) as f:
        want = colfile.histogramdd(f["pos"], bins=4, where="id % 5 < 2", density=True)
        want2 = colfile.histogram2d(f["pos"].field(0), f["m"], bins=3, weights=f["x"],
                                    where="x == x")
    with colfile.File(path, comm=comm) as f:
        got = colfile.histogramdd(f["pos"], bins=4, where="id % 5 < 2", density=True)
        got2 = colfile.histogram2d(f["pos"].field(0), f["m"], bins=3, weights=f["x"],
                                   where="x == x")
        ids = f["id"]  # a collective open
        if comm.rank == comm.size - 1:  # one rank alone
            sel = colfile.where(f, ids.field() % 1000 == 0, parallel=False)
            assert sel.rows.tolist() == list(range(0, 5003, 1000))
            assert sel.read(ids).tolist() == list(range(0, 5003, 1000))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got2[0], want2[0], rtol=1e-12)
    same_on_all_ranks(comm, got[0].tolist())


def test_errors_are_agreed(comm: Any, snapshot: Any, monkeypatch: Any) -> None:
    path, _ = snapshot
    with colfile.File(path, comm=comm) as f:
        with pytest.raises(colfile.ExpressionError):
            colfile.where(f, "nope % 2 == 1")
        bad = fail_reads_on_last_rank(comm, monkeypatch)
        with pytest.raises(OSError, match=f"rank {bad}: boom"):
            colfile.where(f, "id % 2 == 1")
        monkeypatch.undo()
        assert colfile.where(f, "id % 2 == 1").count == 2501
