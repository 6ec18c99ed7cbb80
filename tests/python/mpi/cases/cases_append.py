"""Collective appends (``Column.append`` under ``comm=``): what
``cf_mpi_column_grow`` does in C (tests/mpi/test_mpi_grow.c): planned
blobs, none for an empty append, blobs aligned to ranks, one commit at the
close (readers see the previous version until then; a writer killed
before it: test_append_killed.py), and uncommitted writes made before the
append kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import same_on_all_ranks

import colfile
from colfile.mpi import plan_nfile


def check(path: Path, name: str, size: int, nfile: int) -> None:
    with colfile.File(path) as f:
        col = f[name]
        assert col.size == size and col.nfile == nfile, (col.size, col.blob_rows)
        assert np.array_equal(col[:], np.arange(size) * 0.5)
        assert all(col.verify_blob(i) == {"OK"} for i in range(col.nfile))


def two_rows_each(comm: Any, path: Path) -> None:
    """A new File at ``path`` with a column ``x`` of 2 rows per rank,
    ``0.5 * (2 * rank, 2 * rank + 1)``."""
    with colfile.File(path, "w", comm=comm) as f:
        f.create("x", "f8", data=np.arange(comm.rank * 2, comm.rank * 2 + 2) * 0.5)


def test_planned_blobs_and_empty_appends(comm: Any, shared: Path) -> None:
    size, rank = comm.size, comm.rank
    path = shared / "f"
    with colfile.File(path, "w", comm=comm) as f:
        col = f.create("x", "f8", data=np.arange(rank * 2, rank * 2 + 2) * 0.5)
        # writes before an append are kept (they move to rank 0, uncommitted)
        n, nfile = 2 * size, 1
        for step in range(4):  # rank r adds (r + step) % 3 rows: some none
            first = n + sum((r + step) % 3 for r in range(rank))
            col.append(np.arange(first, first + (rank + step) % 3) * 0.5)
            added = sum((r + step) % 3 for r in range(size))
            n, nfile = n + added, nfile + (added > 0)  # one blob per append with rows
            assert col.size == n and col.nfile == nfile
        col.append(np.zeros(0))  # no rows anywhere: no blob
        assert col.nfile == nfile
    if rank == 0:
        check(path, "x", n, nfile)


def test_aligned_and_counted(comm: Any, shared: Path) -> None:
    size, rank = comm.size, comm.rank
    path = shared / "f"
    with colfile.File(path, "w", comm=comm) as f:
        col = f.create("x", "f8", size=0)
        start = rank * (rank + 1) // 2
        col.append(np.arange(start, start + rank + 1) * 0.5, nfile=size,
                   align_blobs_to_ranks=True)
        assert col.blob_rows[1:] == [r + 1 for r in range(size)]
        n = size * (size + 1) // 2
        col.append(np.arange(n + rank, n + rank + 1) * 0.5, nfile=3)
        assert col.nfile == 1 + size + 3
        assert plan_nfile(8 * size, size) == 1
    if rank == 0:
        check(path, "x", n + size, 1 + size + 3)


def test_readers_see_previous_version_until_close(comm: Any, shared: Path) -> None:
    size, rank = comm.size, comm.rank
    path = shared / "f"
    with colfile.File(path, "w", comm=comm) as f:
        f.create("x", "f8", data=np.arange(rank, rank + 1) * 0.5)
    with colfile.File(path, "a", comm=comm) as f:
        col = f["x"]
        col.append(np.arange(size + rank * 2, size + rank * 2 + 2) * 0.5)
        comm.barrier()
        if rank == 0:
            check(path, "x", size, 1)
        comm.barrier()
    if rank == 0:
        check(path, "x", 3 * size, 2)


def test_errors_agreed(comm: Any, shared: Path) -> None:
    size, rank = comm.size, comm.rank
    path = shared / "f"
    with colfile.File(path, "w", comm=comm) as f:
        col = f.create("x", "f8", data=np.arange(rank, rank + 1) * 0.5)
        if size > 1:
            with pytest.raises(colfile.InvalidArgumentError) as info:
                col.append([1.0], nfile=2 if rank == size - 1 else 1)
            msg = same_on_all_ranks(comm, str(info.value))
            assert "append nfile differs between ranks" in msg
        assert col.nfile == 1
    if rank == 0:
        check(path, "x", size, 1)


def test_append_to_a_column_opened_with_getitem(comm: Any, shared: Path) -> None:
    """``f[name]`` opens a column on each rank alone (metadata reads are
    independent); a collective append on it makes it the ranks' together,
    so its close commits the new blobs, and what the File does next (an
    attribute and a flush) finds the column whole."""
    size, rank = comm.size, comm.rank
    path = shared / "f"
    two_rows_each(comm, path)
    with colfile.File(path, "a", comm=comm) as f:
        with f["x"] as col:
            n = 2 * size
            col.append(np.arange(n + 3 * rank, n + 3 * rank + 3) * 0.5, nfile=2)
        f.attrs["Time"] = 1.0
        f.flush()
        assert f["x"].size == 5 * size
    if rank == 0:
        check(path, "x", 5 * size, 3)


def test_write_all_through_getitem_commits_at_the_column_close(comm: Any, shared: Path) -> None:
    """A collective ``write_all`` on a column opened with ``f[name]`` makes
    it the ranks' together: its close commits the rows (as for a column
    made by ``create``), so a reader sees the new version, checksums
    included, before the File closes -- a writer killed after the close
    keeps them (the crash harness's 2-rank Python writer found this)."""
    size, rank = comm.size, comm.rank
    path = shared / "f"
    two_rows_each(comm, path)
    with colfile.File(path, "r+", comm=comm) as f:
        with f["x"] as col:
            col.write_all(np.full(2, -1.0 - rank), start=2 * rank)
        seen = None
        if rank == 0:
            # another handle, before f closes; a verifying read checks the
            # CRC32C the commit recorded (the byte sum counts rewritten
            # bytes twice, as bigfile's does: not a check of an update)
            try:
                with colfile.File(path, verify=True) as g:
                    c = g["x"]
                    seen = (c[:].tolist(), c.ext_state, c.torn)
            except colfile.Error as exc:  # reported on every rank, no hang
                seen = repr(exc)
        seen = comm.bcast(seen, root=0)
    assert seen == ([-1.0 - r for r in range(size) for _ in range(2)], "current", False), seen
