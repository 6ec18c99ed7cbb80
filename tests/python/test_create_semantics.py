"""What ``create`` may replace or hide, with h5py as the oracle.

h5py refuses to create a dataset where a name exists; colfile raises
ColumnExistsError (a FileExistsError and, as h5py's error, a ValueError)
unless ``overwrite=True``.  A column below a column would be invisible to
every listing (colfile's and bigfile's), so it is refused, as h5py refuses
a dataset below a dataset.  ``colfile.compat.bigfile`` keeps bigfile's
silent replace.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile


def _h5py_raises(tmp_path: Path, first: str, second: str) -> type[BaseException] | None:
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "oracle.h5", "w") as h:
        h.create_dataset(first, (3,), "f8")
        try:
            h.create_dataset(second, (3,), "f8")
        except Exception as exc:  # noqa: BLE001 - the oracle's class is the point
            return type(exc)
    return None


def test_create_refuses_an_existing_column(path: str, tmp_path: Path) -> None:
    oracle = _h5py_raises(tmp_path, "x", "x")
    assert oracle is not None and issubclass(oracle, ValueError)
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(4))
        with pytest.raises(colfile.ColumnExistsError) as info:
            f.create("x", "f4", size=2)
        assert isinstance(info.value, oracle)  # except ValueError, as for h5py
        assert isinstance(info.value, FileExistsError)
        assert isinstance(info.value, colfile.AlreadyExistsError)
        msg = str(info.value)
        assert os.path.join(path, "x") in msg and "overwrite=True" in msg
        assert f["x"][:].tolist() == [0, 1, 2, 3]  # nothing lost
        with pytest.raises(colfile.ColumnExistsError):
            f.create("x", data=np.zeros(3))
        f.create("meta", None)
        with pytest.raises(colfile.ColumnExistsError):
            f.create("meta", None)
    with colfile.File(path, "a") as f:
        with pytest.raises(colfile.ColumnExistsError):
            f["/".join(["x"])] and f.create("x", "i8", size=1)
        assert f["x"][:].tolist() == [0, 1, 2, 3]
        new = f.create("x", "f4", size=2, overwrite=True)
        new[:] = [7, 8]
    with colfile.File(path) as f:
        assert f["x"].dtype == np.dtype("<f4") and f["x"][:].tolist() == [7.0, 8.0]


def test_create_refuses_a_column_still_open_and_not_committed(path: str) -> None:
    with colfile.File(path, "w") as f:
        c = f.create("x", "i4", size=3)
        with pytest.raises(colfile.ColumnExistsError, match="'x' exists"):
            f.create("x", "i4", size=3)
        assert not c.closed  # the open handle was left alone
        c[:] = [1, 2, 3]
        f.create("x", "i4", size=1, overwrite=True)[:] = [9]
        assert c.closed
    with colfile.File(path) as f:
        assert f["x"][:].tolist() == [9]


def test_create_in_a_deferred_file_sees_queued_commits(path: str) -> None:
    with colfile.File(path, "w", deferred=True) as f:
        f.create("x", data=np.arange(3)).close()  # queued, not yet published
        with pytest.raises(colfile.ColumnExistsError):
            f.create("x", data=np.arange(5))
        f.create("y", data=np.arange(2)).close()
        f.create("y", data=np.arange(6), overwrite=True).close()
    with colfile.File(path) as f:
        assert f["x"].size == 3 and f["y"].size == 6


def test_mode_w_starts_empty(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(3))
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(5))  # a fresh File: nothing to replace
        assert f["x"].size == 5


def test_no_column_below_a_column(path: str, tmp_path: Path) -> None:
    oracle = _h5py_raises(tmp_path, "P", "P/sub")
    assert oracle is not None
    with colfile.File(path, "w") as f:
        f.create("P", data=np.arange(3))
        with pytest.raises(colfile.ColumnExistsError) as info:
            f.create("P/sub", "i4", size=2)
        msg = str(info.value)
        assert "'P' is a column" in msg and "P/sub" in msg and path in msg
        with pytest.raises(colfile.ColumnExistsError, match="cannot hold columns"):
            f.create("P/sub", "i4", size=2, overwrite=True)
        with pytest.raises(colfile.ColumnExistsError, match="'P' is a column"):
            f.create("P/a/b", "i4", size=2)
        # one still being written (not on disk yet) counts too
        q = f.create("Q", "i4", size=1)
        with pytest.raises(colfile.ColumnExistsError, match="'Q' is a column"):
            f.create("Q/sub", "i4", size=2)
        q[:] = [1]
        q.close()
        assert f.columns == ["P", "Q"]
    assert not (Path(path) / "P" / "sub").exists()
    with colfile.File(path, "a") as f:  # the core refuses too, without the File's memory
        with pytest.raises(colfile.ColumnExistsError, match="'P' is a column"):
            f.create("P/sub", "i4", size=2)
        assert f.columns == ["P", "Q"]


def test_no_column_over_a_group_of_columns(path: str, tmp_path: Path) -> None:
    oracle = _h5py_raises(tmp_path, "G/x", "G")
    assert oracle is not None and issubclass(oracle, ValueError)
    with colfile.File(path, "w") as f:
        f.create("G/x", data=np.arange(3))
        with pytest.raises(colfile.ColumnExistsError, match="group") as info:
            f.create("G", "i4", size=2, overwrite=True)
        assert isinstance(info.value, oracle)
        f["G/x"].close()
        with pytest.raises(colfile.ColumnExistsError, match="group"):
            f.create("G", "i4", size=2, overwrite=True)
        assert f.columns == ["G/x"] and f["G/x"][:].tolist() == [0, 1, 2]


def test_mpi_comm_self_create_refuses_too(path: str) -> None:
    pytest.importorskip("mpi4py")
    from mpi4py import MPI

    with colfile.File(path, "w", comm=MPI.COMM_SELF) as f:
        f.create("x", "i4", size=2).write_all([1, 2])
        with pytest.raises(colfile.ColumnExistsError, match="'x' exists"):
            f.create("x", "i4", size=2)
        with pytest.raises(colfile.ColumnExistsError, match="cannot hold columns"):
            f.create("x/y", "i4", size=2)
        f.create("x", "i4", size=1, overwrite=True).write_all([5])
    with colfile.File(path) as f:
        assert f["x"][:].tolist() == [5]


def test_compat_bigfile_create_keeps_replacing(path: str) -> None:
    from colfile.compat import bigfile

    with bigfile.File(path, create=True) as bf:
        with bf.create("x", "i8", 3) as b:
            b.write(0, np.arange(3))
        with bf.create("x", "f4", 2) as b:  # bigfile replaces silently
            b.write(0, np.array([1.5, 2.5], "f4"))
    with colfile.File(path) as f:
        assert f["x"].dtype == np.dtype("<f4") and f["x"][:].tolist() == [1.5, 2.5]


def test_cli_query_out_and_iosim_still_work(path: str, tmp_path: Path, capsys: Any) -> None:
    from colfile.cli import main

    with colfile.File(path, "w") as f:
        f.create("a", data=np.arange(10.0))
        f.create("b", data=np.arange(10))
    out = str(tmp_path / "sel")
    assert main(["query", path, "a > 4", "--out", out]) == 0
    with colfile.File(out) as g:
        assert g["a"][:].tolist() == [5.0, 6.0, 7.0, 8.0, 9.0]
    sim = str(tmp_path / "sim")
    for _ in range(2):  # the second run writes over the first
        assert main(["iosim", sim, "--rows", "1000"]) == 0
    capsys.readouterr()
