"""Create and partial-row writes under MPI: every rank gets the same
ColumnExistsError for a column that exists or lies below a column; each
rank fills components of its own rows never written (zeros elsewhere);
rank 0 warns at close about rows no rank wrote."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import same_on_all_ranks

import colfile


def test_create_existing_column_fails_on_every_rank(comm: Any, shared: Path) -> None:
    with colfile.File(shared / "f", "w", comm=comm) as f:
        f.create("x", "i4", size=comm.size).write_all([comm.rank])
        with pytest.raises(colfile.ColumnExistsError) as info:
            f.create("x", "f8", size=2)
        same_on_all_ranks(comm, (type(info.value).__name__, str(info.value).split(": ", 1)[-1]))
        assert "overwrite=True" in str(info.value)
        with pytest.raises(colfile.ColumnExistsError, match="cannot hold columns"):
            f.create("x/sub", "i4", size=2)
        assert f["x"].read_all(0, comm.size).tolist() == list(range(comm.size))
        f.create("x", "i4", size=1, overwrite=True).write_all([7] if comm.rank == 0 else [])
    with colfile.File(shared / "f", "a", comm=comm) as f:
        with pytest.raises(colfile.ColumnExistsError):
            f.create("x", "i4", size=1)
        with pytest.raises(colfile.ColumnExistsError, match="cannot hold columns"):
            f.create("x/deeper/y", "i4", size=1)
        assert f.columns == ["x"]
        assert f["x"].read_all(0, 1).tolist() == [7]


def test_ranks_fill_components_of_rows_never_written(comm: Any, shared: Path) -> None:
    n = 5
    total = n * comm.size
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every row is written: no warning
        with colfile.File(shared / "f", "w", comm=comm) as f:
            c = f.create("v", ("f8", 3), size=total, nfile=max(1, comm.size // 2))
            mine = slice(comm.rank * n, (comm.rank + 1) * n)
            c[mine, 0] = np.arange(n) + 10 * comm.rank
            c[mine, 2] = -1.0
            got = c[mine]
            assert got[:, 1].tolist() == [0.0] * n  # never written: zeros
            c[mine, 1:2] = np.full((n, 1), 0.5)
    with colfile.File(shared / "f", comm=comm) as f:
        allrows = f["v"].read_all(0, total)
    ref = np.zeros((total, 3))
    for r in range(comm.size):
        ref[r * n:(r + 1) * n, 0] = np.arange(n) + 10 * r
    ref[:, 1] = 0.5
    ref[:, 2] = -1.0
    np.testing.assert_array_equal(allrows, ref)


def test_rank_zero_warns_about_rows_no_rank_wrote(comm: Any, shared: Path) -> None:
    with colfile.File(shared / "f", "w", comm=comm) as f:
        c = f.create("v", "i8", size=4 * comm.size, nfile=comm.size)
        c.write_all(np.full(2, comm.rank))  # rows 0..2*size-1 of 4*size
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            c.close()
        mine = [w for w in rec if issubclass(w.category, colfile.IncompleteWarning)]
        if comm.rank == 0:
            assert len(mine) == 1 and "'v'" in str(mine[0].message)
        else:
            assert mine == []
    with colfile.File(shared / "f", comm=comm) as f:
        with pytest.raises(colfile.IncompleteError):
            f["v"].read_all(0, 4 * comm.size)
