"""Queries evaluated as dask tasks (one per group of cells) against the
serial evaluation; the serial meaning of the MPI options of where() and
Selection.read (the MPI runs are in mpi/cases/cases_query_parallel.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import colfile
from colfile import _parallel


@pytest.fixture
def snap(path: str) -> Any:
    rng = np.random.default_rng(11)
    n = 30000
    data = {"pos": np.sort(rng.uniform(-50, 50, (n, 3)), axis=0),
            "id": np.arange(n), "m": rng.exponential(1, n)}
    with colfile.File(path, "w") as f:
        f.create("pos", data=data["pos"], chunk_rows=300)
        f.create("id", data=data["id"], chunk_rows=1000)
        f.create("m", data=data["m"], chunk_rows=700)
    return path, data


@pytest.mark.parametrize("expr", ["pos[0]**2 + pos[1]**2 < 15**2", "id % 7 == 3",
                                  "(m > 2) & (pos[2] < 0)", "id < 0"])
def test_dask_where_equals_serial(snap: Any, monkeypatch: Any, expr: str) -> None:
    path, data = snap
    monkeypatch.setattr(_parallel, "GROUP_BYTES", 50_000)  # many tasks
    with colfile.File(path) as f:
        serial = colfile.where(f, expr)
        got = colfile.where(f, expr, dask=True)
        np.testing.assert_array_equal(got.rows, serial.rows)
        assert got.ranges == serial.ranges
        np.testing.assert_array_equal(got.read("m"), serial.read("m"))
        for key in ("chunks", "skipped", "all_match", "scanned", "selected", "bytes_read"):
            assert getattr(got.report, key) == getattr(serial.report, key), key
        p = colfile.query.as_predicate(expr, f._query_resolver())
        assert len(_parallel.groups(_parallel.plan(p, [], f._comm), 50_000)) > 1 or \
            serial.report.skipped == serial.report.chunks


def test_serial_meaning_of_mpi_options(snap: Any) -> None:
    path, data = snap
    with colfile.File(path) as f:
        sel = colfile.where(f, "id % 1000 == 0", parallel=True)  # no comm: serial
        assert sel.read("id", share=True).tolist() == list(range(0, 30000, 1000))
        np.testing.assert_array_equal(sel.share_rows(), sel.rows)
        assert colfile.where(f, "id % 1000 == 0", parallel=False).count == 30


def test_share_cuts_equal_work(snap: Any) -> None:
    """The cut of the cells over ranks (the same on every rank) is
    contiguous, covers every cell and balances the rows to scan."""
    path, _ = snap
    with colfile.File(path) as f:
        p = colfile.query.as_predicate("id % 2 == 0", f._query_resolver())
        plan = _parallel.plan(p, [], f._comm)

        class FakeRanks:  # only size and rank are read by share()
            serial = False

            def __init__(self, size: int, rank: int) -> None:
                self.size, self.rank = size, rank

        for size in (2, 3, 4, 7):
            cuts = [_parallel.share(plan, FakeRanks(size, r), read_all=False)  # type: ignore[arg-type]
                    for r in range(size)]
            assert cuts[0][0] == 0 and cuts[-1][1] == plan.ncells
            assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
            rows = [int(plan.bounds[k1] - plan.bounds[k0]) for k0, k1 in cuts]
            assert max(rows) - min(rows) <= 2 * int(np.diff(plan.bounds).max())


def test_runs_travel_as_runs_or_bits() -> None:
    """A rank sends its runs, or a bitmap of its rows when that is smaller;
    both come back as the same runs."""
    from colfile.query import _pack_runs, _unpack_runs
    rng = np.random.default_rng(4)
    for density in (0.001, 0.5, 0.999):
        mask = rng.random(10_000) < density
        mask[:3] = [True, False, True]
        d = np.diff(np.concatenate([[0], mask.view(np.int8), [0]]))
        s, e = np.flatnonzero(d == 1) + 500, np.flatnonzero(d == -1) + 500
        packed = _pack_runs(s, e, 500, 10_500)
        assert packed[0] == ("bits" if density == 0.5 else "runs")  # many short runs: bits
        got = _unpack_runs(packed)
        np.testing.assert_array_equal(got[0], s)
        np.testing.assert_array_equal(got[1], e)
        assert _pack_runs(s, e, 500, 10_500, packed=False)[0] == "runs"
