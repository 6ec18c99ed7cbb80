"""A failure on one rank makes every rank raise: the same exception class,
the failing rank's message prefixed ``rank N:``, and nothing hangs (the
orchestrating test runs these under a timeout).

The failure is injected on the last rank (rank 0 when there is one)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import same_on_all_ranks

import colfile


def agreed(comm: Any, exc: BaseException) -> tuple[str, str]:
    """(class name, message), asserted equal on every rank."""
    return same_on_all_ranks(comm, (type(exc).__name__, str(exc)))


@pytest.fixture
def last(comm: Any) -> int:
    return comm.size - 1


def test_bad_name_on_one_rank(comm: Any, shared: Path, last: int) -> None:
    bad = comm.rank == last
    with colfile.File(shared / "f", "w", comm=comm) as f:
        with pytest.raises(colfile.InvalidNameError) as info:
            f.create("a b" if bad else "ab", "i4", size=10)
        name, msg = agreed(comm, info.value)
        assert msg.startswith(f"rank {last}: ") and "'a b'" in msg
        assert info.value.rank == last and info.value.failed_ranks == [last]
        assert f.columns == []  # nothing was created
        f.create("x", "i4", size=3)
        # opening a column is independent: a bad name fails on its rank only
        if bad:
            with pytest.raises(colfile.InvalidNameError, match="^.*'x y'"):
                f["x y"]
        else:
            assert f["x"].size == 3
        with pytest.raises(colfile.ColumnNotFoundError, match="^/.*nope"):
            f["nope"]
        # the File stays usable afterwards
        f["x"].write_all(np.arange(3) if comm.rank == 0 else [])
    with colfile.File(shared / "f", comm=comm) as f:
        assert f["x"].read_all(0, 3).tolist() == [0, 1, 2]


def test_missing_blob_read_by_one_rank(comm: Any, shared: Path, last: int) -> None:
    n = 4 * comm.size
    with colfile.File(shared / "f", "w", comm=comm) as f:
        f.create("x", "f8", size=n, nfile=comm.size).write_all(np.ones(4))
    if comm.rank == 0:
        os.remove(shared / "f" / "x" / f"{last:06d}")
    comm.barrier()
    with colfile.File(shared / "f", comm=comm) as f:
        col = f["x"]
        with pytest.raises(colfile.NoSuchFileError) as info:
            col.read_all()  # rank r reads blob r; only the last is gone
        name, msg = agreed(comm, info.value)
        assert msg.startswith(f"rank {last}: ") and f"{last:06d}" in msg
        assert info.value.failed_ranks == [last]
        if comm.rank != last:  # independent reads elsewhere still work
            assert col[:4].tolist() == [1.0] * 4


def test_read_only_file(comm: Any, shared: Path) -> None:
    with colfile.File(shared / "f", "w", comm=comm) as f:
        f.create("x", data=[0])
    with colfile.File(shared / "f", "r", comm=comm) as f:
        col = f["x"]
        for mode in ("throttled", "aggregated"):
            with pytest.raises(colfile.ReadOnlyError) as info:
                col.write_all([1], mode=mode)
            name, msg = agreed(comm, info.value)
            assert msg.startswith("rank 0: ") and "read-only" in msg
            assert info.value.failed_ranks == list(range(comm.size))
        with pytest.raises(colfile.ReadOnlyError, match="^rank 0: "):
            f.attrs["a"] = 1
        with pytest.raises(colfile.ReadOnlyError, match="^rank 0: "):
            col.attrs["a"] = 1
        with pytest.raises(colfile.ReadOnlyError, match="^rank 0: "):
            f.create("y", "i4", size=1)
        with pytest.raises(colfile.ReadOnlyError, match="^rank 0: "):
            col.append([1])
        assert col.read_all(0, comm.size).tolist() == [0] * comm.size


def test_inconsistent_arguments(comm: Any, shared: Path, last: int) -> None:
    if comm.size == 1:
        pytest.skip("one rank cannot disagree with itself")
    bad = comm.rank == last
    with pytest.raises(colfile.InvalidArgumentError, match=f"^rank {last}: .*path"):
        colfile.File(shared / ("g" if bad else "f"), "w", comm=comm)
    with pytest.raises(ValueError, match=f"^rank {last}: invalid mode"):
        colfile.File(shared / "f", "q" if bad else "w", comm=comm)
    with colfile.File(shared / "f", "w", comm=comm) as f:
        with pytest.raises(colfile.InvalidArgumentError, match=f"^rank {last}: size"):
            f.create("x", "i4", size=10 + bad)
        with pytest.raises(colfile.InvalidArgumentError, match=f"^rank {last}: dtype"):
            f.create("x", "i4" if bad else "i8", size=10)
        with pytest.raises(colfile.InvalidArgumentError, match=f"^rank {last}: nfile"):
            f.create("x", "i4", size=10, nfile=1 + bad)
        col = f.create("x", ("f4", 2), size=4 * comm.size)
        with pytest.raises(ValueError, match=f"^rank {last}: .*shape"):
            col.write_all(np.zeros((4, 3 if bad else 2)))
        with pytest.raises(colfile.DTypeError, match=f"^rank {last}: "):
            col.write_all(np.zeros((4, 2), "S3" if bad else "f4"), mode="aggregated")
        with pytest.raises(colfile.InvalidArgumentError, match=f"^rank {last}: .*mode"):
            col.write_all(np.zeros((4, 2)), mode="throttled" if bad else "aggregated")
        with pytest.raises(colfile.InvalidArgumentError, match="start"):
            col.write_all(np.zeros((4, 2)), start=None if comm.rank == 0 else 4 * comm.rank)
        with pytest.raises(colfile.InvalidArgumentError, match=f"^rank {last}: .*nfile"):
            col.append(np.zeros((1, 2)), nfile=1 + bad)
        # independent operations fail alone
        if bad:
            with pytest.raises(colfile.RangeError):
                col[4 * comm.size + 1] = [1, 2]
        col.write_all(np.full((4, 2), comm.rank, "f4"))
    with colfile.File(shared / "f", comm=comm) as f:
        assert f["x"].read_all(count=4).tolist() == [[comm.rank] * 2] * 4
        assert f["x"].verify_blob(0) == {"OK"}


def test_deferred_commits_are_serial_only(comm: Any, shared: Path, last: int) -> None:
    """deferred=True under comm= is refused on every rank, even when only
    one rank asks for it (no rank is left waiting in the open)."""
    with pytest.raises(ValueError, match=f"^rank {last}: deferred=True is for serial Files"):
        colfile.File(shared / "f", "w", comm=comm, deferred=comm.rank == last)
    with colfile.File(shared / "f", "w", comm=comm) as f:  # and nothing was left behind
        assert f.columns == []


def test_failure_while_committing(comm: Any, shared: Path) -> None:
    """Rank 0 cannot commit at close (a group holding another column
    appeared at the new column's name): every rank raises its error, and
    every rank's handles are released."""
    f = colfile.File(shared / "f", "w", comm=comm)
    col = f.create("x", "i4", size=comm.size)
    col.write_all([comm.rank])
    if comm.rank == 0:
        (shared / "f" / "x" / "other").mkdir(parents=True)
    comm.barrier()
    with pytest.raises(colfile.Error) as info:
        f.close()
    name, msg = agreed(comm, info.value)
    assert msg.startswith("rank 0: ") and "group" in msg
    assert f.closed and col.closed
