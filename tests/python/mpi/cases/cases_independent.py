"""Under ``comm=`` reading metadata and rows is independent, as in h5py's
parallel mode: every read works on one rank, on any subset of ranks and on
all of them, and sees what the collective changes before it made.  Only
operations that change the File are collective, and a collective made by
some ranks only (or ranks in different collectives) raises
:class:`colfile.CollectiveError` naming the operation -- never a hang,
never an MPI "Message truncated".

Run on every rank by ``test_mpi_layer.py`` (n = 1, 2, 4); each case has a
deadline (conftest.py) that fails the run rather than hang it."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import same_on_all_ranks

import colfile

# ---------------------------------------------------------------------------
# helpers


def subsets(size: int) -> list[tuple[int, ...]]:
    """The rank subsets every read runs on: each rank alone, every other
    rank, all but rank 0, and all (every subset with up to 3 ranks)."""
    ranks = range(size)
    if size <= 3:
        return [s for k in range(1, size + 1) for s in itertools.combinations(ranks, k)]
    out = [(r,) for r in ranks] + [tuple(ranks[::2]), tuple(ranks[1::2]),
                                   tuple(ranks[1:]), tuple(ranks)]
    return list(dict.fromkeys(out))


def plain(v: Any) -> Any:
    """A value comparable with ``==`` (numpy scalars and arrays as lists)."""
    if isinstance(v, dict):
        return {k: plain(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, (np.ndarray, np.generic)):
        return v.tolist()
    return v


POS = np.arange(30, dtype="f4").reshape(10, 3)
IDS = np.arange(100, 110, dtype="i8")
MASS = np.linspace(0.0, 1.0, 7)


def build(f: colfile.File) -> None:
    """The File every read case looks at (collective)."""
    f.create("1/Position", data=POS if f.comm.rank == 0 else POS[:0])
    f.create("1/ID", "i8", size=len(IDS), nfile=2).write_all(
        IDS if f.comm.rank == 0 else IDS[:0])
    mass = f.create("2/Mass", "f8", size=len(MASS), blob_rows=[3, 0, 4])
    if f.comm.rank == 0:  # an independent write
        mass[:] = MASS
    f.create("meta", None)
    f.require_group("empty")
    f.attrs["BoxSize"] = 1000.0
    f.attrs["Names"] = "gas stars"
    f["1/"].attrs["Mass"] = [0.5, 0.25]
    f["1/ID"].attrs["unit"] = "none"
    f["2/Mass"].attrs["unit"] = "Msun"


def built_rows() -> dict[str, Any]:
    return {"1/Position": POS.tolist(), "1/ID": IDS.tolist(), "2/Mass": MASS.tolist()}


EXPECTED = {
    "columns": ["1/ID", "1/Position", "2/Mass", "meta"],
    "group 1": ["ID", "Position"],
    "contains": [True, False, True, False, False, True],
    "file attrs": {"BoxSize": 1000.0, "Names": "gas stars"},
    "attr names": ["BoxSize", "Names"],
    "group attrs": {"Mass": [0.5, 0.25]},
    "empty attrs": {},
    "described": {
        "1/ID": ["<i8", [10], 10, 2, [5, 5], "data", {"unit": "none"}],
        "1/Position": ["<f4", [10, 3], 10, 1, [10], "data", {}],
        "2/Mass": ["<f8", [7], 7, 3, [3, 0, 4], "data", {"unit": "Msun"}],
        "meta": ["header-only", {}],
    },
    "column attrs": {"1/ID": {"unit": "none"}, "1/Position": {}, "2/Mass": {"unit": "Msun"},
                     "meta": {}},
    "rows": built_rows(),
    "dataset": [[101, [3.0, 4.0, 5.0]], [109, [27.0, 28.0, 29.0]]],
}


def read_everything(f: colfile.File, rng: np.random.Generator) -> dict[str, Any]:
    """Every metadata read there is, and rows (all, and a random selection
    checked against numpy), as plain values."""
    out: dict[str, Any] = {}
    out["columns"] = f.columns
    assert f.keys() == list(f) == f.columns and len(f) == len(f.columns)
    out["group 1"] = f["1/"].columns
    out["contains"] = ["1/ID" in f, "nope" in f, "1/" in f, "zz/" in f, "2/zz" in f,
                       "empty/" in f]
    assert f.get("nope") is None and f["1/"].get("nope", 7) == 7
    with pytest.raises(colfile.ColumnNotFoundError, match="nope"):
        f["nope"]
    with pytest.raises(colfile.ColumnNotFoundError, match="no such group"):
        f["zz/"]
    out["file attrs"] = plain(dict(f.attrs))
    out["attr names"] = sorted(f.attrs)
    assert len(f.attrs) == 2 and "BoxSize" in f.attrs and "nope" not in f.attrs
    with pytest.raises(colfile.AttributeNotFoundError, match="nope"):
        f.attrs["nope"]
    out["group attrs"] = plain(dict(f["1/"].attrs))
    out["empty attrs"] = plain(dict(f["empty/"].attrs))
    described: dict[str, Any] = {}
    rows: dict[str, Any] = {}
    for name in f.columns:
        c = f[name]
        if c.kind != "data":
            described[name] = [c.kind, plain(dict(c.attrs))]
            continue
        described[name] = [c.dtype.str, list(c.shape), c.size, c.nfile, c.blob_rows, c.kind,
                           plain(dict(c.attrs))]
        rows[name] = c[:].tolist()
        want = np.asarray(EXPECTED["rows"][name], dtype=c.dtype)
        sel = np.sort(rng.choice(len(want), size=rng.integers(0, len(want) + 1),
                                 replace=False)) if len(want) else np.zeros(0, int)
        assert c[sel].tolist() == want[sel].tolist()
        start = int(rng.integers(0, len(want) + 1))
        assert c.read(start, len(want)).tolist() == want[start:].tolist()
        assert c[::-2].tolist() == want[::-2].tolist()
        repr(c)
    out["described"] = described
    out["column attrs"] = plain(f.column_attrs())
    out["rows"] = rows
    ds = colfile.Dataset(f["1/"], ["ID", "Position"])
    out["dataset"] = [[int(r["ID"]), r["Position"].tolist()] for r in ds[[1, 9]]]
    repr(f), repr(f["1/"]), repr(f.attrs)
    return out


def run_on(comm: Any, ranks: tuple[int, ...], fn: Any) -> Any:
    """``fn()`` on ``ranks`` only; the failures of every rank are agreed
    afterwards (so that no rank goes on alone)."""
    err = None
    result = None
    if comm.rank in ranks:
        try:
            result = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, agreed
            err = f"rank {comm.rank}: {type(exc).__name__}: {exc}"
    errors = [e for e in comm.allgather(err) if e]
    assert not errors, errors
    return result


# ---------------------------------------------------------------------------
# metadata reads on any subset of ranks


@pytest.mark.parametrize("mode", ["w", "r", "a"])
def test_metadata_reads_on_any_subset(comm: Any, shared: Path, mode: str) -> None:
    path = shared / "f"
    with colfile.File(path, "w", comm=comm) as f:
        build(f)
        if mode == "w":  # before any commit: the File's own uncommitted state
            for i, s in enumerate(subsets(comm.size)):
                rng = np.random.default_rng(i * 100 + comm.rank)
                got = run_on(comm, s, lambda: read_everything(f, rng))
                if comm.rank in s:
                    assert got == EXPECTED
                f.flush()  # a collective after each subset: still in step
    if mode == "w":
        return
    with colfile.File(path, mode, comm=comm) as f:
        for i, s in enumerate(subsets(comm.size)):
            rng = np.random.default_rng(i * 100 + comm.rank)
            got = run_on(comm, s, lambda: read_everything(f, rng))
            if comm.rank in s:
                assert got == EXPECTED
            if mode == "a":
                f.flush()
        # and every rank at once, in the same File
        assert same_on_all_ranks(comm, plain(read_everything(f, np.random.default_rng(1)))) \
            == EXPECTED


def test_reads_on_one_rank_do_not_block(comm: Any, shared: Path) -> None:
    """The issue's two lines: rank 0 alone reads an attribute and lists."""
    with colfile.File(shared / "f", "w", comm=comm) as f:
        f.attrs["BoxSize"] = 1000.0
        f.create("x", data=np.arange(4) if comm.rank == 0 else np.arange(0))
    with colfile.File(shared / "f", comm=comm) as f:
        if comm.rank == 0:
            assert float(f.attrs["BoxSize"]) == 1000.0
        if comm.rank == comm.size - 1:
            assert f.columns == ["x"]
            assert f["x"][:].tolist() == [0, 1, 2, 3]


def test_reads_see_collective_changes(comm: Any, shared: Path) -> None:
    """A read after a collective change sees it, on every rank -- also on
    a rank that read (and so cached) the old state before."""
    last = comm.size - 1
    with colfile.File(shared / "f", "w", comm=comm) as f:
        f.attrs["a"] = 1
        x = f.create("x", "i4", size=4 * comm.size)
        x.write_all(np.full(4, comm.rank))
        step = 0

        def subset() -> tuple[int, ...]:
            nonlocal step
            step += 1
            return ((step % comm.size,), (last,), tuple(range(comm.size)))[step % 3]

        # attribute of the File (a rank cached its value before the change)
        run_on(comm, (last,), lambda: f.attrs["a"] == 1 or pytest.fail("old"))
        f.attrs["a"] = 2
        run_on(comm, subset(), lambda: int(f.attrs["a"]) == 2 or pytest.fail(f.attrs["a"]))
        run_on(comm, (last,), lambda: dict(f.attrs) == {"a": 2} or pytest.fail("stale"))
        del f.attrs["a"]
        run_on(comm, (last,), lambda: "a" not in f.attrs or pytest.fail("stale"))
        # rows written collectively, read by a rank that opened the column alone
        want = np.repeat(np.arange(comm.size), 4)
        run_on(comm, subset(), lambda: (f["x"][:] == want).all() or pytest.fail("rows"))
        x.write_all(np.full(4, 10 + comm.rank))
        run_on(comm, subset(), lambda: (f["x"][:] == want + 10).all() or pytest.fail("rows"))
        # columns made and removed collectively
        f.create("y", "f8", size=2)
        run_on(comm, subset(), lambda: (f.columns == ["x", "y"] and "y" in f and
                                        f["y"].shape == (2,)) or pytest.fail(f.columns))
        del f["y"]
        run_on(comm, subset(), lambda: (f.columns == ["x"] and "y" not in f) or
               pytest.fail(f.columns))
        f.require_group("g")
        f["g/"].attrs["z"] = 3
        run_on(comm, subset(), lambda: ("g/" in f and int(f["g/"].attrs["z"]) == 3) or
               pytest.fail("group"))
        # a column closed collectively and opened again by one rank
        x.close()
        run_on(comm, subset(), lambda: (f["x"][:] == want + 10).all() or pytest.fail("rows"))
        # appended rows (append is collective on a column every rank holds)
        xx = f["x"]
        xx.append(np.full(1, 50 + comm.rank))
        run_on(comm, subset(), lambda: (f["x"].size == 5 * comm.size) or pytest.fail("size"))
    with colfile.File(shared / "f", comm=comm) as f:
        got = run_on(comm, subset(), lambda: f["x"][:].tolist())
        if got is not None:
            assert got == (want + 10).tolist() + [50 + r for r in range(comm.size)]
        run_on(comm, (0,), lambda: plain(f.column_attrs()) == {"x": {}} or pytest.fail("attrs"))


def test_independent_writes_committed_at_close(comm: Any, shared: Path) -> None:
    """A rank that opens a column alone and writes its rows: the File's
    collective close commits them (with the checksums of every writer)."""
    n = 3 * comm.size
    with colfile.File(shared / "f", "w", comm=comm) as f:
        f.create("x", "i8", size=n, nfile=2).write_all(np.zeros(3, "i8"))
    with colfile.File(shared / "f", "a", comm=comm) as f:
        if comm.rank % 2 == 1 or comm.size == 1:
            f["x"][3 * comm.rank:3 * comm.rank + 3] = comm.rank + 1
    with colfile.File(shared / "f", comm=comm) as f:
        want = [(r + 1 if r % 2 == 1 or comm.size == 1 else 0) for r in range(comm.size)
                for _ in range(3)]
        assert f["x"][:].tolist() == want
        for i in range(f["x"].nfile):
            assert f["x"].verify_blob(i) <= {"OK", "SUM_MISMATCH"}


# ---------------------------------------------------------------------------
# collectives made by some ranks only


def collective(op: str, f: colfile.File) -> None:
    """One collective operation of a writable File (with column ``x``)."""
    if op == "attrs set":
        f.attrs["k"] = 1
    elif op == "create":
        f.create("z", "i4", size=2)
    elif op == "del":
        del f["x"]
    elif op == "flush":
        f.flush()
    elif op == "require_group":
        f.require_group("g")
    elif op == "write_all":
        f["x"].write_all(np.zeros(0, "i4"))
    elif op == "read_all":
        f["x"].read_all()
    elif op == "column close":
        f["x"].close()  # a column made collectively closes collectively
    elif op == "cleanup":
        f.cleanup(dry_run=True)
    else:
        raise AssertionError(op)


OP_NAMES = {"attrs set": "attrs[name] = value", "create": "create()",
            "del": "del file[name]", "flush": "File.flush()",
            "require_group": "require_group()", "write_all": "Column.write_all()",
            "read_all": "Column.read_all()", "column close": "Column.close()",
            "cleanup": "File.cleanup()"}


@pytest.mark.parametrize("op", list(OP_NAMES))
def test_collective_on_some_ranks_fails(comm: Any, shared: Path, op: str) -> None:
    """Ranks that make a collective alone wait at most mpi_timeout, then
    raise CollectiveError naming it; the File then closes on every rank
    (raising, committing nothing more) instead of hanging."""
    if comm.size == 1:
        pytest.skip("needs a rank that does not call")
    alone = (0,) if op != "column close" else (comm.size - 1,)
    f = colfile.File(shared / "f", "w", comm=comm, mpi_timeout=1)
    f.create("x", "i4", size=comm.size).write_all([comm.rank])
    f.flush()
    t0 = time.monotonic()
    if comm.rank in alone:
        with pytest.raises(colfile.CollectiveError) as info:
            collective(op, f)
        msg = str(info.value)
        assert OP_NAMES[op] in msg and "1 s" in msg and str(shared / "f") in msg, msg
        assert "Message truncated" not in msg
    comm.barrier()  # the others are busy elsewhere meanwhile
    assert time.monotonic() - t0 < 30
    with pytest.raises(colfile.CollectiveError) as info:
        f.close()
    assert f.closed
    msg = str(info.value)
    assert ("out of step" in msg) if comm.rank in alone else \
        (f"{OP_NAMES[op]}" in msg and "File.close()" in msg), msg
    # what was committed before is intact, and the File opens again
    with colfile.File(shared / "f", comm=comm) as f:
        assert f["x"][:].tolist() == list(range(comm.size))


@pytest.mark.parametrize("ops", [("flush", "create"), ("attrs set", "del"),
                                 ("read_all", "write_all"), ("create", "require_group")])
def test_different_collectives_fail_on_every_rank(comm: Any, shared: Path,
                                                  ops: tuple[str, str]) -> None:
    """Rank 0 in one collective, the others in another: every rank raises
    CollectiveError naming both, at once (no deadline needed)."""
    if comm.size == 1:
        pytest.skip("needs two ranks")
    f = colfile.File(shared / "f", "w", comm=comm, mpi_timeout=60)
    f.create("x", "i4", size=comm.size).write_all([comm.rank])
    t0 = time.monotonic()
    with pytest.raises(colfile.CollectiveError) as info:
        collective(ops[0] if comm.rank == 0 else ops[1], f)
    assert time.monotonic() - t0 < 30  # found by the agreement, not the deadline
    msg = str(info.value)
    assert "different collective operations" in msg
    assert f"rank 0 {OP_NAMES[ops[0]]}" in msg and OP_NAMES[ops[1]] in msg, msg
    with pytest.raises(colfile.CollectiveError, match="out of step"):
        f.close()
    assert f.closed
    with colfile.File(shared / "f", comm=comm) as f:  # nothing was committed
        assert f.columns == [] or f["x"].size == comm.size


def test_timeout_setting(comm: Any, shared: Path, monkeypatch: Any) -> None:
    from colfile import mpi as cmpi

    assert cmpi.resolve_timeout(None) == float(os.environ.get("COLFILE_MPI_TIMEOUT", 300))
    monkeypatch.setenv("COLFILE_MPI_TIMEOUT", "7.5")
    assert cmpi.resolve_timeout(None) == 7.5 and cmpi.resolve_timeout(2) == 2.0
    assert cmpi.resolve_timeout(0) == float("inf")
    monkeypatch.setenv("COLFILE_MPI_TIMEOUT", "soon")
    with pytest.raises(colfile.InvalidArgumentError, match="COLFILE_MPI_TIMEOUT='soon'"):
        cmpi.resolve_timeout(None)
    with pytest.raises(TypeError, match="mpi_timeout"):
        cmpi.resolve_timeout("3")
    monkeypatch.delenv("COLFILE_MPI_TIMEOUT")
    with colfile.File(shared / "f", "w", comm=comm, mpi_timeout=12) as f:
        assert f.comm is comm
        assert f._comm.timeout == 12.0


# ---------------------------------------------------------------------------
# collective_metadata=True: rank 0 reads metadata for all, collectively


def test_collective_metadata_reads(comm: Any, shared: Path) -> None:
    """With collective_metadata=True every rank makes the metadata reads
    together (rank 0 reads, the others get its result); one rank reading
    alone raises CollectiveError naming the read, never hangs."""
    with colfile.File(shared / "f", "w", comm=comm) as f:
        build(f)
    with colfile.File(shared / "f", comm=comm, collective_metadata=True,
                      mpi_timeout=1) as f:
        got = read_everything(f, np.random.default_rng(comm.rank))
        assert same_on_all_ranks(comm, plain(got)) == EXPECTED
        if comm.size == 1:
            return
        for read, what in ((lambda: f.columns, "listing"),
                           (lambda: f.attrs["BoxSize"], "attrs[name]"),
                           (lambda: f["2/Mass"], "file[name]")):
            if comm.rank == 0:
                with pytest.raises(colfile.CollectiveError,
                                   match=f"{re_escape(what)} \\(collective_metadata=True\\) is "
                                         "collective, but not every rank"):
                    read()
            comm.barrier()
            with pytest.raises(colfile.CollectiveError):
                f.close()  # out of step: raises, and closes
            assert f.closed
            f = colfile.File(shared / "f", comm=comm, collective_metadata=True, mpi_timeout=1)


def re_escape(s: str) -> str:
    import re

    return re.escape(s)


def test_column_opened_alone_closes_alone(comm: Any, shared: Path) -> None:
    """A column a rank opened alone (file[name]) in a writable File closes
    alone, written or not; the File's collective flush or close commits
    what every rank wrote through such handles."""
    n = comm.size
    with colfile.File(shared / "f", "w", comm=comm) as f:
        f.create("x", "i8", size=3 * n, nfile=2).write_all(np.zeros(3, "i8"))
        f.create("y", "f4", size=n).write_all(np.zeros(1, "f4"))
    with colfile.File(shared / "f", "a", comm=comm, mpi_timeout=20) as f:
        t0 = time.monotonic()
        if comm.rank == 0:  # a look at one column, closed at once
            c = f["y"]
            assert c[:].tolist() == [0.0] * n
            c.close()
        assert time.monotonic() - t0 < 10  # nobody waited for the others
        # every rank opens x, some write their rows, every rank closes it
        x = f["x"]
        if comm.rank % 2 == 0:
            x[3 * comm.rank:3 * comm.rank + 3] = comm.rank + 1
        x.flush()
        x.close()
        assert x.closed
        # the last rank writes y through a handle of its own, closed alone;
        # after rank 0's look at y (ranks see each other's uncommitted
        # in-place writes as they happen: without the barrier that look
        # races with this write)
        comm.barrier()
        if comm.rank == n - 1:
            y = f["y"]
            y[comm.rank] = 7.5
            y.close()
        f.flush()  # commits them (collective)
        run_on(comm, (0,), lambda: f["y"][:].tolist() == [0.0] * (n - 1) + [7.5] or
               pytest.fail(f["y"][:]))
        # and after the flush: more rows, by another rank, left to the close
        if comm.rank == 0:
            f["y"][0] = 1.5
    with colfile.File(shared / "f", comm=comm) as f:
        want = [(r + 1 if r % 2 == 0 else 0) for r in range(n) for _ in range(3)]
        assert f["x"][:].tolist() == want
        want_y = [0.0] * n
        want_y[n - 1] = 7.5
        want_y[0] = 1.5
        assert f["y"][:].tolist() == want_y
        for name in ("x", "y"):
            for i in range(f[name].nfile):
                assert f[name].verify_blob(i) <= {"OK", "SUM_MISMATCH"}, (name, i)
