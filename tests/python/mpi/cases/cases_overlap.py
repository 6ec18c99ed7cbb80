"""A collective write whose ranks' rows overlap (a wrong ``start``,
usually) raises on every rank, before any byte is written, with the C
layer's message naming the column, the two ranks and their rows; gaps and
empty ranges are fine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import same_on_all_ranks

import colfile

ROWS = 5
MODES = ["throttled", "aggregated", "auto"]


def value(rows: np.ndarray) -> np.ndarray:
    return rows * 3 + 0.5


def blob_sizes(path: Path, n: int) -> list[int]:
    return [(path / "x" / f"{i:06X}").stat().st_size
            if (path / "x" / f"{i:06X}").exists() else 0 for i in range(n)]


def expected(path: Path, lo: int, a: tuple[int, int], hi: int, b: tuple[int, int]) -> str:
    return (f"rank {lo}: {path / 'x'}: rows [{a[0]}, {a[1]}) here overlap rows "
            f"[{b[0]}, {b[1]}) of rank {hi}: each row may be written by one rank only "
            f"(is start right on every rank?)")


@pytest.mark.parametrize("mode", MODES)
def test_same_start_everywhere(comm: Any, shared: Path, mode: str) -> None:
    if comm.size < 2:
        pytest.skip("one rank cannot overlap itself")
    path = shared / "f"
    with colfile.File(path, "w", comm=comm) as f:
        col = f.create("x", "f8", size=ROWS * comm.size, nfile=comm.size)
        with pytest.raises(colfile.InvalidArgumentError) as info:
            col.write_all(value(np.arange(ROWS)), 0, mode=mode)
        msg = same_on_all_ranks(comm, str(info.value))
        assert msg == expected(path, 0, (0, ROWS), 1, (0, ROWS))
        assert info.value.rank == 0 and info.value.code == colfile.errors.CF_EARG
        comm.barrier()
        assert blob_sizes(path, comm.size) == [0] * comm.size  # nothing written
        col.write_all(value(np.arange(ROWS) + ROWS * comm.rank), mode=mode)
    if comm.rank == 0:
        with colfile.File(path) as f:
            col = f["x"]
            assert np.array_equal(col[:], value(np.arange(ROWS * comm.size)))
            assert all(col.verify_blob(i) == {"OK"} for i in range(col.nfile))


@pytest.mark.parametrize("mode", MODES)
def test_partial_overlap_named(comm: Any, shared: Path, mode: str) -> None:
    size, rank = comm.size, comm.rank
    if size < 2:
        pytest.skip("one rank cannot overlap itself")
    path = shared / "f"
    start, count = (rank + 1) * ROWS, ROWS
    if rank == size - 1:
        start, count = 0, 2
    if rank == size - 2:
        start, count = 1, 4
    with colfile.File(path, "w", comm=comm) as f:
        col = f.create("x", "f8", size=ROWS * size, nfile=size)
        with pytest.raises(colfile.InvalidArgumentError) as info:
            col.write_all(value(np.arange(start, start + count)), start, mode=mode)
        msg = same_on_all_ranks(comm, str(info.value))
        assert msg == expected(path, size - 2, (1, 5), size - 1, (0, 2))
        assert info.value.rank == size - 2
        comm.barrier()
        assert blob_sizes(path, size) == [0] * size


@pytest.mark.parametrize("mode", MODES)
def test_gaps_and_empty_ranges_pass(comm: Any, shared: Path, mode: str) -> None:
    size, rank = comm.size, comm.rank
    path = shared / "f"
    start = (size - 1 - rank) * ROWS
    with colfile.File(path, "w", comm=comm) as f:
        col = f.create("x", "f8", size=ROWS * size, nfile=size)
        col.write_all(value(np.arange(start, start + 3)), start, mode=mode)
        last = rank == size - 1
        rest = np.arange(0) if last else np.arange(start + 3, start + 5)
        col.write_all(value(rest), 1 if last else start + 3, mode=mode)
    if rank == 0:
        with colfile.File(path) as f:
            col = f["x"]
            assert np.array_equal(col[0:3], value(np.arange(3)))
            assert np.array_equal(col[ROWS:], value(np.arange(ROWS, ROWS * size)))


def test_find_overlap() -> None:
    from colfile.mpi import find_overlap

    assert find_overlap([0, 5, 10], [5, 5, 5]) is None
    assert find_overlap([10, 5, 0], [5, 5, 5]) is None
    assert find_overlap([0, 4], [5, 5]) == (0, 1)
    assert find_overlap([4, 0, 9], [5, 5, 1]) == (0, 1)
    assert find_overlap([0, 0, 2], [10, 0, 1]) == (0, 2)  # empty ranges never overlap
    assert find_overlap([0, 3, 1], [2, 4, 5]) == (0, 2)  # sorted by start: 0, 1, 3
