"""Appends to and updates of a committed large column close by chunk
owners (``colfile.mpi``, as ``tests/mpi/test_mpi_owners_append.c`` in C):
rank 0 receives per-blob summaries, the append's empty write states and
one summary per page of 256 index records, the owners copy the committed
records of the blobs not written, and the column is byte for byte the
gathering close's and a serial change's, for random uneven splits whose
boundaries fall inside chunks (ranks that write nothing included).  An
update of part of a blob (the commit reads it back) closes the gathering
way, with the same bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import same_on_all_ranks, tree

import colfile
from colfile import _owners

#: 2 rows a chunk, 2 components: 150001 rows in 3 blobs (50000, 50000,
#: 50001) are 75001 chunks, more than an owner's slice of 65536; an append
#: adds 20001 rows in 2 blobs
CHUNK, NMEMB, OLD, NFILE, NEW, NEW_FILES = 2, 2, 150001, 3, 20001, 2
#: the rows each change writes: an append's, a whole blob's, part of one
RANGES = {"append": (OLD, OLD + NEW), "blob": (50000, 100000), "part": (60001, 70000)}


def values(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = (rng.random((n, NMEMB)) - 0.5) * 1e6
    v[rng.integers(0, n, 50), 1] = np.nan
    return v


def split(seed: int, size: int, a: int, b: int) -> list[int]:
    """Uneven cuts of rows [a, b): rank r's start at a + (b - a) r^2 / n^2
    plus r plus a random shift (rank 0 writes the least, the last ranks
    the most); with an odd seed and more than 2 ranks rank 1 writes
    nothing."""
    rng = np.random.default_rng(1000 + seed)
    lo = [min(b, a + (b - a) * r * r // (size * size) + r + int(rng.integers(0, 5))) for r in range(1, size)]
    if size > 2 and seed % 2:
        lo[1] = lo[0]
    return [a, *lo, b]


def base(path: Path, seed: int) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=values(seed, OLD), nfile=NFILE, chunk_rows=CHUNK)


def change(comm: Any, path: Path, kind: str, new: np.ndarray, lo: list[int]) -> tuple[int, int]:
    """The change made collectively; the bytes rank 0 received and the
    closes whose owners wrote the chunk index."""
    a = RANGES[kind][0]
    r = comm.rank
    mine = new[lo[r] - a:lo[r + 1] - a]
    before, closes = _owners.root_bytes, _owners.index_closes
    with colfile.File(path, "a", comm=comm) as f:
        col = f["x"]
        if kind == "append":
            col.append(mine, nfile=NEW_FILES)
        else:
            col.write_all(mine, start=lo[r], mode="throttled")
    return _owners.root_bytes - before, _owners.index_closes - closes


@pytest.mark.parametrize("kind,seed", [("append", 1), ("append", 2), ("blob", 1), ("blob", 2), ("part", 3)])
def test_changes_close_by_owners(comm: Any, shared: Path, kind: str, seed: int) -> None:
    a, b = RANGES[kind]
    new = values(seed + 7, b - a)
    lo = same_on_all_ranks(comm, split(seed, comm.size, a, b))
    if comm.rank == 0:
        for name in ("own", "all", "ref"):
            base(shared / name, seed)
        with colfile.File(shared / "ref", "a") as f:
            if kind == "append":
                f["x"].append(new, nfile=NEW_FILES)
            else:
                f["x"][a:b] = new
    comm.barrier()
    by_owners, closes = change(comm, shared / "own", kind, new, lo)
    # the owners wrote the index (with more than one rank), but where the
    # commit reads a blob back
    assert closes == (comm.size > 1 and kind != "part")
    _owners.gather_all = True
    try:
        gathered = change(comm, shared / "all", kind, new, lo)[0]
    finally:
        _owners.gather_all = False
    if comm.rank == 0:
        want = tree(shared / "ref" / "x")
        assert "colfile-index-v1" in want
        assert tree(shared / "own" / "x") == want
        assert tree(shared / "all" / "x") == want
        with colfile.File(shared / "own") as f:
            got = f["x"][a:b]
            stats = f["x"].chunk_stats(1)
        assert np.array_equal(got, new, equal_nan=True)
        chunks = 75001 + (10001 if kind == "append" else 0)
        # every chunk's statistics known, from the index the owners wrote
        assert len(stats) == chunks and stats["valid"].all()
        pages = chunks // 256 + 1
        bound = 512 * comm.size + 16 * (NFILE + NEW_FILES) + (pages + comm.size) * 256
        print(f"{kind} seed {seed}, {comm.size} ranks: rank 0 received {by_owners} bytes by owners, "
              f"{gathered} gathering (bound {bound})")
        if kind != "part":
            assert by_owners <= bound
