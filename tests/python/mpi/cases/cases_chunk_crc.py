"""Chunks that several ranks wrote (``colfile.mpi``): the close joins the
ranks' CRC32C pieces of each chunk, so every chunk of the chunk index has
its CRC32C -- the index is byte for byte the one a serial write of the same
rows makes -- and a verifying read of part of a blob checks a chunk split
between ranks, and detects a flipped byte in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import same_on_all_ranks

import colfile
import colfile.chunkindex as ci

#: 4 rows a chunk, 4099 rows: 1025 chunks (enough for the chunk index); the
#: rank boundaries (2050 for 2 ranks; 1024, 2049, 3074 for 4) fall inside
#: chunks, but for 1024.
CHUNK, TOTAL = 4, 4099


def values(lo: int, hi: int) -> np.ndarray:
    return np.arange(lo, hi, dtype="f8") * 1.25 - 3


@pytest.mark.parametrize("nfile", [1, 3])
def test_chunks_split_between_ranks_verify(comm: Any, shared: Path, nfile: int) -> None:
    path = shared / f"F{nfile}"
    lo, n = colfile.mpi.plan_share(TOTAL, comm.size, comm.rank)
    with colfile.File(path, "w", comm=comm) as f:
        col = f.create("x", "f8", size=TOTAL, nfile=nfile, chunk_rows=CHUNK)
        col.write_all(values(lo, lo + n), start=lo, mode="throttled")
    starts = same_on_all_ranks(comm, comm.allgather(lo))
    failure = None
    if comm.rank == 0:
        try:
            check_on_rank0(path, starts, nfile)
        except BaseException as exc:  # raised after the barrier: the others wait
            failure = exc
    comm.barrier()
    if failure is not None:
        raise failure


def check_on_rank0(path: Path, starts: list[int], nfile: int) -> None:
    serial = path.with_name(path.name + "-serial")
    with colfile.File(serial, "w") as f:
        f.create("x", data=values(0, TOTAL), nfile=nfile, chunk_rows=CHUNK)
    index = "x/colfile-index-v1"
    assert (path / index).read_bytes() == (serial / index).read_bytes()
    with colfile.File(path) as f:
        col = f["x"]
        assert ci.info(col)["state"] == "current"
        chunks = ci.count(col, 0)
        assert all(ci.chunk_crc32c(col, k) is not None for k in range(chunks))
        blob_rows = [col.blob_info(i)["rows"] for i in range(nfile)]
    first = np.concatenate([[0], np.cumsum(blob_rows)])
    # the first rank boundary inside a chunk of its blob (one rank: row 2050)
    split = 2050
    for s in starts[1:]:
        b = int(np.searchsorted(first, s, side="right")) - 1
        if (s - first[b]) % CHUNK:
            split = s
            break
    b = int(np.searchsorted(first, split, side="right")) - 1
    k0 = int(first[b] + (split - first[b]) // CHUNK * CHUNK)
    with colfile.File(path, verify=True) as f:
        np.testing.assert_array_equal(f["x"][k0:k0 + CHUNK], values(k0, k0 + CHUNK))
    blob = path / "x" / f"{b:06X}"
    with open(blob, "r+b") as fp:
        fp.seek((split - int(first[b])) * 8 + 3)
        byte = fp.read(1)
        fp.seek(-1, 1)
        fp.write(bytes([byte[0] ^ 0x10]))
    with colfile.File(path, verify=True) as f:
        with pytest.raises(colfile.ChecksumError, match=f"{b:06X}"):
            f["x"][k0:k0 + CHUNK]
        np.testing.assert_array_equal(f["x"][k0 + CHUNK:k0 + 2 * CHUNK], values(k0 + CHUNK, k0 + 2 * CHUNK))
