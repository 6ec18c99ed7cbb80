"""colfile.File(..., comm=comm) on every rank: collective create, write, read
and close; independent writes; readers with any number of ranks;
attributes, groups, listing, append.

Every File written in parallel is compared byte for byte with the same data
written serially (by rank 0, without comm=)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import same_on_all_ranks, tree

import colfile
import colfile.mpi as cmpi


def layout_counts(kind: str, size: int, total: int = 103) -> list[int]:
    """Rows per rank: even, uneven, or with ranks that hold none."""
    if kind == "even":
        return [cmpi.plan_share(total, size, r)[1] for r in range(size)]
    if kind == "uneven":
        return [3 + 11 * r for r in range(size)]
    # zero rows on rank 0 and on the last rank (one rank: nothing at all)
    return [0 if r in (0, size - 1) else 17 + r for r in range(size)]


def my_rows(kind: str, comm: Any) -> tuple[list[int], int, int, slice]:
    """The rows per rank of a ``kind`` layout (:func:`layout_counts`), their
    total, and this rank's first row and rows."""
    counts = layout_counts(kind, comm.size)
    first = sum(counts[:comm.rank])
    return counts, sum(counts), first, slice(first, first + counts[comm.rank])


def global_data(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = np.arange(n)
    pos = rows[:, None] * 1.5 + np.arange(3) * 0.25
    ident = rows * 7 - 3
    mass = ((rows % 13) * 0.5).astype("f4")
    return pos, ident, mass


def serial_reference(path: Path, pos: np.ndarray, ident: np.ndarray, mass: np.ndarray,
                     nfile: int) -> None:
    with colfile.File(path, "w") as f:
        f.create("1/Position", ("f8", 3), size=len(pos), nfile=nfile)[:] = pos
        f.create("1/ID", "i8", size=len(ident), nfile=nfile)[:] = ident
        f.create("1/Mass", "f4", size=len(mass), nfile=nfile)[:] = mass


@pytest.mark.parametrize("kind", ["even", "uneven", "zero"])
def test_roundtrip(comm: Any, shared: Path, kind: str) -> None:
    counts, total, first, mine = my_rows(kind, comm)
    pos, ident, mass = global_data(total)
    path = shared / "par"
    with colfile.File(path, "w", comm=comm) as f:
        assert f.comm is comm
        p = f.create("1/Position", data=pos[mine], nfile=3)
        i = f.create("1/ID", data=ident[mine], nfile=3)
        m = f.create("1/Mass", data=mass[mine], nfile=3)
        assert p.shape == (total, 3) and i.shape == (total,) and m.dtype == np.dtype("f4")
        assert p.comm is comm and p.nfile == 3 and p.blob_rows == \
            [cmpi.plan_share(total, 3, b)[1] for b in range(3)]
        assert f.columns == ["1/ID", "1/Mass", "1/Position"]
        # independent reads see the data at once (same process wrote it or not)
        comm.barrier()
        assert np.array_equal(i[:], ident)
    # read back collectively, any way
    with colfile.File(path, "r", comm=comm) as f:
        p, i, m = f["1/Position"], f["1/ID"], f["1/Mass"]
        share = p.rank_slice()
        lo, n = cmpi.plan_share(total, comm.size, comm.rank)
        assert share == slice(lo, lo + n)
        assert np.array_equal(p.read_all(), pos[share])
        assert np.array_equal(i.read_all(count=counts[comm.rank]), ident[mine])
        assert np.array_equal(m.read_all(first, counts[comm.rank]), mass[mine])
        assert np.array_equal(m.read_all(dtype="f8"), mass[share].astype("f8"))
        rows = np.arange(comm.rank, total, comm.size + 1)
        assert np.array_equal(p[rows, 1], pos[rows, 1])
    if comm.rank == 0:
        serial_reference(shared / "ser", pos, ident, mass, nfile=3)
    comm.barrier()
    assert tree(path) == tree(shared / "ser")


@pytest.mark.parametrize("mode", ["throttled", "aggregated", "blob_owners", "auto"])
@pytest.mark.parametrize("tiny", [False, True], ids=["default", "tinygroups"])
def test_write_all_modes_equal_serial(comm: Any, shared: Path, mode: str, tiny: bool,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    if tiny:  # many aggregation groups, many pieces per leader (or owner)
        monkeypatch.setattr(cmpi, "GROUP_BYTES", 200)
        monkeypatch.setattr(cmpi, "PIECE_BYTES", 72)
    counts, total, first, mine = my_rows("uneven", comm)
    pos, ident, mass = global_data(total)
    path = shared / "par"
    with colfile.File(path, "w", comm=comm) as f:
        p = f.create("1/Position", ("f8", 3), size=total, nfile=3)
        i = f.create("1/ID", "i8", size=total, nfile=3)
        m = f.create("1/Mass", "f4", size=total, nfile=3)
        # strided sources, converted on the way: >i4 -> i8, f8 -> f4
        p.write_all(np.asfortranarray(pos[mine]), mode=mode,
                    concurrency=1 if tiny else None)
        i.write_all(ident[mine].astype(">i4"), mode=mode)
        m.write_all(mass[mine].astype("f8"), mode=mode, concurrency=2)
    if comm.rank == 0:
        serial_reference(shared / "ser", pos, ident, mass, nfile=3)
    comm.barrier()
    assert tree(path) == tree(shared / "ser")


@pytest.mark.parametrize("mode", ["throttled", "aggregated", "blob_owners"])
def test_write_all_explicit_start_and_vectors(comm: Any, shared: Path, mode: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmpi, "GROUP_BYTES", 64)
    size = comm.size
    n = 5
    total = n * size
    data = (np.arange(total * 2) % 251).astype("u1").reshape(total, 2)
    # ranks write in reverse order of the file, from strided, non-native data
    where = (size - 1 - comm.rank) * n
    local = np.ascontiguousarray(data[where:where + n].astype(">u2")[:, ::-1])[:, ::-1]
    with colfile.File(shared / "par", "w", comm=comm) as f:
        c = f.create("v", ("u1", 2), size=total, nfile=2)
        c.write_all(local, start=where, mode=mode)
        with pytest.raises(colfile.RangeError, match="rank 0: .*outside"):
            c.write_all(local, start=where + (comm.rank == 0))  # past the end
    if comm.rank == 0:
        with colfile.File(shared / "ser", "w") as f:
            f.create("v", ("u1", 2), size=total, nfile=2)[:] = data
    comm.barrier()
    assert tree(shared / "par") == tree(shared / "ser")


def test_create_with_data_options(comm: Any, shared: Path) -> None:
    counts, total, first, _ = my_rows("uneven", comm)
    local = np.arange(first, first + counts[comm.rank], dtype="i8")
    with colfile.File(shared / "f", "w", comm=comm) as f:
        # automatic nfile: small data, one blob
        assert f.create("auto", data=local).nfile == 1
        # blobs cut on rank boundaries
        c = f.create("aligned", data=local, nfile=comm.size, align_blobs_to_ranks=True)
        assert c.blob_rows == counts
        assert np.array_equal(c.read_all(count=len(local)), local)
        # the same global size stated by every rank, and nfile from the plan
        c = f.create("sized", "f4", size=total)
        assert c.nfile == cmpi.plan_nfile(total * 4, comm.size) == 1
        # zero rows everywhere
        assert f.create("empty", data=np.zeros((0, 2), "f8")).shape == (0, 2)
        # header-only blocks
        assert f.create("meta", None).kind == "header-only"
        # ranks without rows do not decide the dtype
        mine = (np.arange(2, dtype="i2") if comm.rank == comm.size - 1
                else np.zeros(0))
        assert f.create("typed", data=mine).dtype == np.dtype("i2")
        assert f.columns == ["aligned", "auto", "empty", "meta", "sized", "typed"]
    if comm.rank == 0:
        with colfile.File(shared / "f") as f:
            assert f["aligned"].verify_blob(0) == {"OK"}
            assert np.array_equal(f["auto"][:], np.arange(total))


def test_readers_with_any_number_of_ranks(comm: Any, shared: Path) -> None:
    total = 4 * 37 + 3
    data = np.arange(total, dtype="f8") * 2.5
    share = slice(*np.cumsum([0] + [cmpi.plan_share(total, comm.size, r)[1]
                                    for r in range(comm.size)])[comm.rank:comm.rank + 2])
    with colfile.File(shared / "f", "w", comm=comm) as f:
        f.create("x", data=data[share], nfile=comm.size)
    for k in range(1, comm.size + 1):
        reading = comm.rank < k
        sub = comm.Split(0 if reading else 1, comm.rank)
        try:
            if reading:
                with colfile.File(shared / "f", "r", comm=sub) as f:
                    part = f["x"].read_all()
                    assert f["x"].rank_slice() == slice(
                        cmpi.plan_share(total, k, sub.rank)[0],
                        sum(cmpi.plan_share(total, k, sub.rank)))
                got = sub.allgather(part)
                assert np.array_equal(np.concatenate(got), data)
        finally:
            sub.Free()
    # and a single process, without MPI
    if comm.rank == 0:
        with colfile.File(shared / "f") as f:
            assert np.array_equal(f["x"].read_all(), data)


def test_independent_writes_merge_at_close(comm: Any, shared: Path) -> None:
    total = 6 * comm.size + 5
    data = (np.arange(total * 3) * 0.5).reshape(total, 3)
    ids = np.arange(total) * 11
    with colfile.File(shared / "par", "w", comm=comm) as f:
        c = f.create("p", ("f8", 3), size=total, nfile=3)
        d = f.create("i", "i8", size=total, nfile=2)
        # rows r, r+size, ... : scattered, interleaved between ranks
        mine = np.arange(comm.rank, total, comm.size)
        c[mine] = data[mine]
        d[comm.rank::comm.size] = ids[comm.rank::comm.size]
        c.flush()  # collective commit in the middle
        # a second pass over contiguous slices, in two pieces each
        lo, n = cmpi.plan_share(total, comm.size, comm.rank)
        half = lo + n // 2
        c[half:lo + n] = data[half:lo + n]
        c[lo:half] = data[lo:half]
    with colfile.File(shared / "par", "r+", comm=comm) as f:
        e = f["i"]
        e[comm.rank::comm.size] = ids[comm.rank::comm.size] + 1  # rewrite on reopen
    if comm.rank == 0:
        with colfile.File(shared / "ser", "w") as f:
            c = f.create("p", ("f8", 3), size=total, nfile=3)
            for r in range(comm.size):
                c[np.arange(r, total, comm.size)] = data[r::comm.size]
            c.flush()
            for r in range(comm.size):
                lo, n = cmpi.plan_share(total, comm.size, r)
                c[lo:lo + n] = data[lo:lo + n]
            d = f.create("i", "i8", size=total, nfile=2)
            for r in range(comm.size):
                d[r::comm.size] = ids[r::comm.size]
        with colfile.File(shared / "ser", "r+") as f:
            f["i"][:] = ids + 1
        assert tree(shared / "par") == tree(shared / "ser")
        with colfile.File(shared / "par") as f:
            assert np.array_equal(f["p"][:], data)
            assert np.array_equal(f["i"][:], ids + 1)
            for col in (f["p"], f["i"]):
                for b in range(col.nfile):
                    assert col.verify_blob(b) <= {"OK", "SUM_MISMATCH"}, (col, b)
            # the sums count every byte written, as one serial writer's do
            assert [x["sum"] for x in f["i"].checksums()] == \
                [x["sum"] for x in colfile.File(shared / "ser")["i"].checksums()]


def test_attributes(comm: Any, shared: Path) -> None:
    with colfile.File(shared / "f", "w", comm=comm) as f:
        f.attrs["BoxSize"] = 1000.0
        f.attrs["rank"] = comm.rank  # rank 0's value is stored
        assert f.attrs["rank"] == comm.rank  # each rank sees its own
        c = f.create("x", "i4", size=4)
        c.attrs["units"] = "kpc"
        c.attrs["v"] = np.arange(3, dtype=">f4")
        del c.attrs["v"]
        g = f.require_group("grp")
        g.attrs["z"] = [1, 2]
        assert "grp/" in f and f["grp/"].attrs["z"].tolist() == [1, 2]
        last = comm.rank == comm.size - 1
        with pytest.raises(colfile.InvalidNameError, match=f"rank {comm.size - 1}: "):
            c.attrs["bad name" if last else "fine"] = 1
        with pytest.raises(colfile.AttributeNotFoundError, match="rank 0: "):
            del c.attrs["nope"]
    with colfile.File(shared / "f", comm=comm) as f:
        assert same_on_all_ranks(comm, dict(f.attrs)) == {
            "BoxSize": 1000.0, "rank": 0}
        assert f["x"].attrs["units"] == "kpc" and "v" not in f["x"].attrs
        assert f["grp/"].attrs["z"].tolist() == [1, 2]


def test_listing_groups_remove_append(comm: Any, shared: Path) -> None:
    with colfile.File(shared / "f", "w", comm=comm) as f:
        for name in ("a/x", "a/y", "b"):
            f.create(name, "f4", size=3)
        assert same_on_all_ranks(comm, f.columns) == ["a/x", "a/y", "b"]
        assert f["a/"].columns == ["x", "y"] and len(f) == 3
        assert "b" in f and "c" not in f and f.get("c") is None
        del f["a/y"]
        assert list(f) == ["a/x", "b"]
        f.create_group("g")
        with pytest.raises(colfile.AlreadyExistsError, match="group exists"):
            f.create_group("g")
        # opening is independent: each rank's own error, without a rank prefix
        with pytest.raises(colfile.ColumnNotFoundError, match="^/.*use \\['a/'\\] for its group"):
            f["a"]
        # collective append: rank r adds r+1 rows in 2 new blobs
        c = f.create("app", "i8", size=comm.size, nfile=1)
        c.write_all([comm.rank])
        c.append(np.full(comm.rank + 1, 100 + comm.rank), nfile=2)
        assert c.size == comm.size + comm.size * (comm.size + 1) // 2
        assert c.nfile == 3
        c.append(np.zeros((0,), "i8"), nfile=1)
    if comm.rank == 0:
        with colfile.File(shared / "f") as f:
            want = list(range(comm.size)) + [100 + r for r in range(comm.size)
                                             for _ in range(r + 1)]
            assert f["app"][:].tolist() == want
            assert all(f["app"].verify_blob(i) == {"OK"} for i in range(f["app"].nfile))


def test_columns_kept_until_close(comm: Any, shared: Path) -> None:
    """Under comm= the File holds its columns (a column dropped on one rank
    only must not change what close does)."""
    import gc

    f = colfile.File(shared / "f", "w", comm=comm)
    f.create("x", "i4", size=comm.size)[comm.rank] = comm.rank
    if comm.rank == 0:
        gc.collect()
    f.close()
    with colfile.File(shared / "f", comm=comm) as g:
        assert g["x"].read_all(0, comm.size).tolist() == list(range(comm.size))
        assert g["x"].verify_blob(0) == {"OK"}


def test_mpi_file_touches_no_metadata_on_other_ranks(comm: Any, shared: Path) -> None:
    """A File that does not exist: only rank 0 looks (and fails), every rank
    raises its error."""
    with pytest.raises(colfile.NoSuchFileError, match="rank 0: .*no such File"):
        colfile.File(shared / "missing", "r", comm=comm)
    with colfile.File(shared / "made", "x", comm=comm) as f:
        assert f.writable and f.columns == []
    with pytest.raises(colfile.AlreadyExistsError, match="rank 0: "):
        colfile.File(shared / "made", "x", comm=comm)
