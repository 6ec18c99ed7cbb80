"""colfile.compat.bigfile's FileMPI/ColumnMPI (built on colfile.mpi) on every
rank, compared with a serial write and read by the original bigfile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import tree

import colfile
import colfile.compat.bigfile as bf


def test_filempi_roundtrip(comm: Any, shared: Path) -> None:
    n = 50 * comm.size + 7
    data = np.arange(n * 3, dtype="f4").reshape(n, 3) / 3
    lo, hi = (np.array_split(np.arange(n), comm.size)[comm.rank][[0, -1]] + [0, 1])
    x = bf.FileMPI(comm, shared / "par", create=True)
    assert x.blocks == []
    with x.create("1/Velocity", ("f4", 3), n, Nfile=3) as b:
        assert isinstance(b, bf.ColumnMPI)
        b.write(lo, data[lo:hi])
        b.attrs["who"] = comm.rank
        assert b.attrs["who"].tolist() == [comm.rank]
    with x.create(".", dtype=None) as b:
        b.attrs["BoxSize"] = 1000.0
    with x["1/Velocity"] as b:
        assert np.array_equal(b[:], data)
        assert b.attrs["who"].tolist() == [0]
        b.append(np.full((comm.rank + 1, 3), comm.rank, "f4"), Nfile=1)
        assert b.size == n + comm.size * (comm.size + 1) // 2
    part = np.array_split(data, comm.size)[comm.rank]
    with x.create_from_array("1/Copy", part, Nfile=2, memorylimit=256):
        pass
    assert x.blocks == [".", "1/Copy", "1/Velocity"] or x.blocks == ["1/Copy", "1/Velocity"]
    with pytest.raises(bf.Error, match=f"rank {comm.size - 1}: "):
        x.create("a b" if comm.rank == comm.size - 1 else "ab", "f4", 3)
    ds = bf.Dataset(x, ["1/Copy"])
    assert ds.size == n and np.array_equal(ds[:]["1/Copy"], data)
    x.close()
    comm.barrier()
    if comm.rank == 0:
        ser = bf.File(shared / "ser", create=True)
        with ser.create("1/Velocity", ("f4", 3), n, Nfile=3) as b:
            b.write(0, data)
            b.attrs["who"] = 0
        with ser.create(".", dtype=None) as b:
            b.attrs["BoxSize"] = 1000.0
        with ser["1/Velocity"] as b:
            b.append(np.concatenate([np.full((r + 1, 3), r, "f4")
                                     for r in range(comm.size)]), Nfile=1)
        with ser.create("1/Copy", ("f4", 3), n, Nfile=2) as b:
            b.write(0, data)
        assert tree(shared / "par") == tree(shared / "ser")
        import bigfile

        with bigfile.File(str(shared / "par")) as o:
            assert np.array_equal(o["1/Velocity"][:n], data)
            assert o["."].attrs["BoxSize"] == 1000.0
        with colfile.File(shared / "par") as f:
            col = f["1/Velocity"]
            assert all(col.verify_blob(i) == {"OK"} for i in range(col.nfile))


def test_filempi_errors_on_every_rank(comm: Any, shared: Path) -> None:
    name = shared / ("bad%d" % comm.rank if comm.size > 1 else "missing/..")
    with pytest.raises(bf.Error):
        bf.FileMPI(comm, name, create=comm.size > 1)
    x = bf.FileMPI(comm, shared / "f", create=True)
    with pytest.raises(bf.Error, match="^rank 0: "):
        x.open("nothing")
    with pytest.raises(KeyError):
        x["nothing"]
    x.close()
