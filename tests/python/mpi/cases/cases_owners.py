"""A large column closes by chunk owners (``colfile.mpi``): rank 0
receives per-blob summaries and one summary per page of 256 chunk-index
records, not every chunk's statistics, and the column is byte for byte the
gathering close's and a serial write's, for random uneven splits whose
boundaries fall inside chunks (with ranks that write nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import same_on_all_ranks, tree

import colfile
from colfile import _owners

#: 3 rows a chunk, 2 components, 110001 rows in 3 blobs: 36668 chunks and
#: 73336 chunk records, more than the statistics text holds (2^16)
CHUNK, NMEMB, TOTAL, NFILE = 3, 2, 110001, 3


def values(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = (rng.random((TOTAL, NMEMB)) - 0.5) * 1e6
    v[rng.integers(0, TOTAL, 100), 1] = np.nan
    return v


def split(seed: int, size: int) -> list[int]:
    rng = np.random.default_rng(1000 + seed)
    lo = sorted(int(x) for x in rng.integers(0, TOTAL + 1, size - 1))
    if size > 2 and seed % 2:
        lo[1] = lo[0]  # rank 1 writes nothing
    return [0, *lo, TOTAL]


def write(comm: Any, path: Path, v: np.ndarray, lo: list[int]) -> int:
    before = _owners.root_bytes
    r = comm.rank
    with colfile.File(path, "w", comm=comm) as f:
        col = f.create("x", np.dtype(("<f8", (NMEMB,))), size=TOTAL, nfile=NFILE, chunk_rows=CHUNK)
        col.write_all(v[lo[r]:lo[r + 1]], start=lo[r], mode="throttled")
    return _owners.root_bytes - before


@pytest.mark.parametrize("seed", [1, 2])
def test_owners_same_bytes_small_root(comm: Any, shared: Path, seed: int) -> None:
    v = values(seed)
    lo = same_on_all_ranks(comm, split(seed, comm.size))
    by_owners = write(comm, shared / "own", v, lo)
    _owners.gather_all = True
    try:
        write(comm, shared / "all", v, lo)
    finally:
        _owners.gather_all = False
    if comm.rank == 0:
        with colfile.File(shared / "ref", "w") as f:
            f.create("x", data=v, nfile=NFILE, chunk_rows=CHUNK)
        own = tree(shared / "own" / "x")
        assert own == tree(shared / "all" / "x")
        assert own == tree(shared / "ref" / "x")
        assert "colfile-index-v1" in own
        # per-blob summaries and one part of a chunk per rank, a flag per
        # blob, a page summary per 256 records (and one per rank more)
        pages = 36668 // 256 + 1
        assert by_owners <= 512 * comm.size + 16 * NFILE + (pages + comm.size) * 256
        if comm.size > 1:
            assert by_owners > 0  # the owners closed it
    comm.barrier()
