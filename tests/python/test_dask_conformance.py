"""dask: ``to_dask(chunks=)`` of a Column, a Dataset and a Selection, computed
with the threaded scheduler and on a real ``dask.distributed`` cluster whose
workers run in another directory; ``dask.array.store`` into columns from
several threads; File and Column pickling.  numpy is the oracle throughout."""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest

import colfile

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

RNG = np.random.default_rng(30)
X = RNG.standard_normal(1000)                       # f8, 4 uneven blobs
POS = RNG.uniform(0, 100, (1000, 3)).astype("f4")   # vector, 3 blobs
ID = np.arange(1000, dtype="i8")                    # 1 blob


def make(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("g/x", "f8", size=1000, blob_rows=[100, 0, 650, 250])[:] = X
        f.create("g/pos", ("f4", 3), size=1000, nfile=3)[:] = POS
        f.create("g/id", data=ID)


@pytest.fixture
def snap(tmp_path: Path, lib: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A File made in tmp_path, opened below by the RELATIVE path "snap"
    (the working directory is tmp_path)."""
    monkeypatch.chdir(tmp_path)
    make("snap")
    return "snap"


def threads(arr: Any) -> Any:
    return arr.compute(scheduler="threads", num_workers=4)


# ---------------------------------------------------------------------------
# chunks=


def test_default_chunks_split_a_big_single_blob_column(tmp_path: Path, lib: Any) -> None:
    p = str(tmp_path / "big")
    data = np.arange(2_000_000, dtype="f8")
    with colfile.File(p, "w") as f:
        f.create("x", data=data, nfile=1)
    with colfile.File(p) as f:
        d = f["x"].to_dask()
        # "auto": about 8 MiB per chunk, equal parts of the one blob
        assert d.chunks == ((1_000_000, 1_000_000),)
        assert threads(d.sum()) == data.sum()
        assert f["x"].to_dask(chunks="4MiB").chunks == ((500_000,) * 4,)


def test_auto_chunks_end_on_blob_boundaries(snap: str) -> None:
    with colfile.File(snap) as f:
        x = f["g/x"]
        assert x.blob_rows == [100, 0, 650, 250]
        # 6 KiB = 768 rows: blobs merged while they fit
        assert x.to_dask(chunks="6KiB").chunks == ((750, 250),)
        # 2 KiB = 256 rows: small blobs alone, the 650-row blob in 3 equal parts
        assert x.to_dask(chunks="2KiB").chunks == ((100, 217, 217, 216, 250),)
        assert x.to_dask(chunks="blobs").chunks == ((100, 650, 250),)
        assert x.to_dask().chunks == ((1000,),)
        # a vector column: "auto" keeps every row whole
        pos = f["g/pos"]
        assert pos.blob_rows == [333, 333, 334]
        assert pos.to_dask(chunks="4KiB").chunks == ((333, 333, 334), (3,))
        assert pos.to_dask(chunks=("4KiB", "auto")).chunks == ((333, 333, 334), (3,))


def test_auto_makes_a_bounded_number_of_chunks(snap: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from colfile import _dask

    monkeypatch.setattr(_dask, "CHUNK_BYTES", 400)  # 50 rows of x
    with colfile.File(snap) as f:
        assert len(f["g/x"].to_dask().chunks[0]) == 20  # 2 + 13 + 5
        monkeypatch.setattr(_dask, "AUTO_MAX_CHUNKS", 4)
        d = f["g/x"].to_dask()  # 2000-byte chunks, and the blob boundaries
        assert d.chunks == ((100, 217, 217, 216, 250),)
        np.testing.assert_array_equal(threads(d), X)
        # an explicit size is what the user asked for
        assert len(f["g/x"].to_dask(chunks="400B").chunks[0]) == 20


@pytest.mark.parametrize("chunks", [
    7, 250, -1, (300, 700), ((300, 700),), (123,), {0: 64}, "auto", "3KiB", "blobs",
])
def test_scalar_column_chunks_as_dask(snap: str, chunks: Any) -> None:
    from dask.array.core import normalize_chunks

    with colfile.File(snap) as f:
        d = f["g/x"].to_dask(chunks=chunks)
    if not (isinstance(chunks, str)):
        assert d.chunks == normalize_chunks(chunks, (1000,))
    assert sum(d.chunks[0]) == 1000 and d.dtype == X.dtype
    np.testing.assert_array_equal(threads(d), X)
    np.testing.assert_array_equal(threads(d[::-7]), X[::-7])
    np.testing.assert_array_equal(threads(d[[999, 3, 3, 500]]), X[[999, 3, 3, 500]])


@pytest.mark.parametrize("chunks", [
    2, (100, 1), (100, 2), (-1, 1), ((500, 500), (1, 2)), {1: 1}, {0: 128, 1: 2},
    ("auto", 1), "blobs",
])
def test_vector_column_chunks_as_dask(snap: str, chunks: Any) -> None:
    from dask.array.core import normalize_chunks

    with colfile.File(snap) as f:
        d = f["g/pos"].to_dask(chunks=chunks)
    if chunks == "blobs":
        assert d.chunks == ((333, 333, 334), (3,))
    elif "auto" not in str(chunks):
        assert d.chunks == normalize_chunks(chunks, (1000, 3))
    np.testing.assert_array_equal(threads(d), POS)
    np.testing.assert_array_equal(threads(d[17:900:3, 2]), POS[17:900:3, 2])
    np.testing.assert_allclose(threads(d.sum(axis=0, dtype="f8")), POS.sum(axis=0, dtype="f8"))
    np.testing.assert_array_equal(threads(d.max(axis=0)), POS.max(axis=0))


def test_two_chunkings_of_one_column_in_one_graph(snap: str) -> None:
    with colfile.File(snap) as f:
        a = f["g/x"].to_dask(chunks=3)
        b = f["g/x"].to_dask(chunks=7)
        assert a.name != b.name
        np.testing.assert_array_equal(threads(a + b), X + X)


def test_bad_chunks(snap: str) -> None:
    with colfile.File(snap) as f:
        x, pos = f["g/x"], f["g/pos"]
        with pytest.raises(ValueError):
            x.to_dask(chunks=(300, 600))  # does not add up to 1000
        with pytest.raises(ValueError, match="byte size"):
            x.to_dask(chunks="lots")
        with pytest.raises(ValueError, match="axes"):
            x.to_dask(chunks=((500, 500), (1,)))
        with pytest.raises(ValueError, match="axis"):
            pos.to_dask(chunks={2: 5})
        with pytest.raises(ValueError, match="chunks=None"):
            x.to_dask(chunks=None)
        with pytest.raises(ValueError, match="single column"):
            colfile.Dataset(f["g/"], ["x", "id"]).to_dask(chunks="blobs")


def test_empty_column(tmp_path: Path, lib: Any) -> None:
    p = str(tmp_path / "e")
    with colfile.File(p, "w") as f:
        f.create("e", "f4", size=0, nfile=0)
        f.create("v", ("i2", 2), size=0, nfile=1)
    with colfile.File(p) as f:
        for chunks in ("auto", 5, "blobs", -1):
            e = f["e"].to_dask(chunks=chunks)
            assert e.shape == (0,) and threads(e).shape == (0,)
            v = f["v"].to_dask(chunks=chunks)
            assert v.shape == (0, 2) and threads(v).dtype == np.dtype("i2")


# ---------------------------------------------------------------------------
# Dataset and Selection


def test_dataset_to_dask(snap: str) -> None:
    with colfile.File(snap) as f:
        ds = colfile.Dataset(f["g/"], ["x", "pos", "id"])
        d = ds.to_dask(chunks=300)
        assert list(d) == ["x", "pos", "id"]
        assert d["pos"].chunks == ((300, 300, 300, 100), (3,))
        assert d["x"].chunks[0] == d["id"].chunks[0] == d["pos"].chunks[0]
        auto = ds.to_dask(chunks="4KiB")
        # 4 KiB of the widest column (pos, 12 bytes a row), cut where every
        # column has a blob boundary (there is none: equal parts)
        assert auto["id"].chunks == ((334, 333, 333),)
        assert ds.to_dask()["x"].chunks == ((1000,),)
    np.testing.assert_array_equal(threads(d["x"]), X)
    np.testing.assert_array_equal(threads(d["pos"]), POS)
    np.testing.assert_array_equal(threads(d["id"] * 2 + d["x"]), ID * 2 + X)
    got = dask.compute(*auto.values(), scheduler="threads")
    for a, b in zip(got, (X, POS, ID)):
        np.testing.assert_array_equal(a, b)


def test_dataset_chunks_on_common_blob_boundaries(tmp_path: Path, lib: Any) -> None:
    p = str(tmp_path / "c")
    with colfile.File(p, "w") as f:
        f.create("a", "i4", size=100, blob_rows=[40, 60])[:] = np.arange(100)
        f.create("b", "i4", size=100, blob_rows=[40, 20, 40])[:] = -np.arange(100)
    with colfile.File(p) as f:
        ds = colfile.Dataset(f, ["a", "b"])
        # 60 rows fit: cut at 40, where both have a boundary, not at 60
        assert ds.to_dask(chunks="240B")["b"].chunks == ((40, 60),)
        d = ds.to_dask(chunks="200B")  # 50 rows: the 60 rows in two
        assert d["a"].chunks == ((40, 30, 30),)
        np.testing.assert_array_equal(threads(d["a"] + d["b"]), np.zeros(100, "i4"))


SELECTIONS = {
    "(x > 0.5) | ((id > 300) & (id < 310))": (X > 0.5) | ((ID > 300) & (ID < 310)),
    "id < 0": ID < 0,
    "id >= 0": ID >= 0,
    "pos[1] < 30": POS[:, 1] < 30,
}


@pytest.mark.parametrize("expr", list(SELECTIONS))
def test_selection_to_dask(snap: str, expr: str) -> None:
    mask = SELECTIONS[expr]
    with colfile.File(snap) as f:
        sel = colfile.where(f["g/"], expr)
        one = sel.to_dask("pos", chunks=37)
        many = sel.to_dask(["x", f["g/id"]], chunks="1KiB")
        auto = sel.to_dask("x")
    n = int(mask.sum())
    assert one.shape == (n, 3) and one.chunks[1] == (3,)
    assert set(many) == {"x", "g/id"} and many["x"].chunks == many["g/id"].chunks
    assert auto.chunks == ((n,),)
    np.testing.assert_array_equal(threads(one), POS[mask])
    np.testing.assert_array_equal(threads(one[::-3, 1]), POS[mask][::-3, 1])
    np.testing.assert_array_equal(threads(many["x"]), X[mask])
    np.testing.assert_array_equal(threads(many["g/id"]), ID[mask])
    if n:
        np.testing.assert_array_equal(threads(one[n // 2]), POS[mask][n // 2])


# ---------------------------------------------------------------------------
# absolute paths: after os.chdir, and pickled graphs


def test_to_dask_after_chdir(snap: str, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    with colfile.File(snap) as f:   # a relative path
        g = f["g/"]
        col = g["x"].to_dask(chunks=128)
        ds = colfile.Dataset(g, ["pos", "id"]).to_dask(chunks=200)
        sel = colfile.where(g, "x > 0").to_dask("pos", chunks=50)
        hist, _ = colfile.histogram(g["x"].field(), bins=5, range=(-2, 2), dask=True)
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    np.testing.assert_array_equal(threads(col), X)
    np.testing.assert_array_equal(threads(ds["pos"]), POS)
    np.testing.assert_array_equal(threads(ds["id"]), ID)
    np.testing.assert_array_equal(threads(sel), POS[X > 0])
    np.testing.assert_array_equal(threads(hist), np.histogram(X, bins=5, range=(-2, 2))[0])
    # and after pickling the graph
    again = pickle.loads(pickle.dumps(col))
    np.testing.assert_array_equal(threads(again), X)
    np.testing.assert_array_equal(col.compute(scheduler="processes", num_workers=2), X)


def test_default_to_dask_of_a_relative_file_after_chdir(snap: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with colfile.File(snap) as f:
        d = f["g/id"].to_dask()
    monkeypatch.chdir(tmp_path / "snap")  # "snap" does not exist from here
    np.testing.assert_array_equal(d.compute(scheduler="sync"), ID)


# ---------------------------------------------------------------------------
# pickling File and Column


def test_pickle_read_only_file_and_column(snap: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    f = colfile.File(snap, "r", verify=True)
    col = f["g/pos"]
    fb, cb = pickle.dumps(f), pickle.dumps(col)
    gb, db = pickle.dumps(f["g/"]), pickle.dumps(colfile.Dataset(f["g/"], ["id", "x"]))
    monkeypatch.chdir(tmp_path / "snap" / "g")  # somewhere without a "snap"
    f2 = pickle.loads(fb)
    c2 = pickle.loads(cb)
    try:
        assert f2.mode == "r" and not f2.writable
        assert f2.path == str(tmp_path / "snap") and os.path.isabs(f2.path)
        assert f2.columns == ["g/id", "g/pos", "g/x"]
        np.testing.assert_array_equal(f2["g/x"][:], X)
        assert c2.name == "g/pos" and not c2.writable and c2.file is not None
        np.testing.assert_array_equal(c2[:], POS)
        with pytest.raises(colfile.ReadOnlyError):
            c2[0] = 1
        # what holds a File pickles with it: a Group, a Dataset
        g = pickle.loads(gb)
        assert g.columns == ["id", "pos", "x"] and g.file.path == f2.path
        ds = pickle.loads(db)
        np.testing.assert_array_equal(ds[10:20]["x"], X[10:20])
        # the options of the File travel: verify=True still checks CRCs
        assert c2.file._flags == f._flags == f2._flags
        # a pickled column keeps its File open: it still reads once the
        # unpickled objects are all that is left
        del f2
        np.testing.assert_array_equal(c2[5:7], POS[5:7])
    finally:
        f.close()
        c2.file.close()


@pytest.mark.parametrize("mode", ["r+", "a", "w"])
def test_pickle_writer_refused(snap: str, mode: str) -> None:
    with colfile.File(snap, mode) as f:
        if mode == "w":
            f.create("g/x", data=X)
        col = f["g/x"]
        with pytest.raises(TypeError, match=f"{snap}.*open for writing.*cannot be pickled"):
            pickle.dumps(f)
        with pytest.raises(TypeError, match=r"g/x.*open for writing.*cannot be pickled"):
            pickle.dumps(col)
    with pytest.raises(colfile.ClosedError, match="closed"):
        pickle.dumps(f)
    with pytest.raises(colfile.ClosedError, match="closed"):
        pickle.dumps(col)


# ---------------------------------------------------------------------------
# a real dask.distributed cluster whose workers run in another directory


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    distributed = pytest.importorskip("distributed")
    elsewhere = tmp_path_factory.mktemp("workers")
    here = os.getcwd()
    os.chdir(elsewhere)  # the worker processes start (and stay) here
    try:
        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=logging.ERROR)
    finally:
        os.chdir(here)
    client = distributed.Client(lc)
    try:
        cwds = client.run(os.getcwd)
        assert len(cwds) == 2 and set(cwds.values()) == {str(elsewhere)}, cwds
        yield client, str(elsewhere)
    finally:
        client.close()
        lc.close()


def test_distributed_reads(snap: str, cluster: tuple[Any, str]) -> None:
    client, elsewhere = cluster
    assert os.getcwd() != elsewhere and not os.path.exists(os.path.join(elsewhere, snap))
    with colfile.File(snap) as f:   # relative to the test's directory only
        g = f["g/"]
        col = g["pos"].to_dask(chunks=(100, 2))
        ds = colfile.Dataset(g, ["x", "id"]).to_dask(chunks=333)
        sel = colfile.where(g, "x < -0.5").to_dask(["pos", "id"], chunks=40)
        total = client.compute(col.sum(axis=0)).result()
        got = client.gather(client.compute([col, ds["x"], ds["id"], sel["pos"], sel["id"]]))
        # the File and a Column themselves travel to the workers
        fsum = client.submit(lambda h: float(h["g/x"][:].sum()), f).result()
        csum = client.submit(lambda c: c[::2].tolist(), g["id"]).result()
    np.testing.assert_allclose(total, POS.sum(axis=0, dtype="f8"), rtol=1e-5)
    for a, b in zip(got, (POS, X, ID, POS[X < -0.5], ID[X < -0.5])):
        np.testing.assert_array_equal(a, b)
    assert fsum == pytest.approx(float(X.sum()))
    assert csum == ID[::2].tolist()


def test_distributed_store_of_computed_chunks(snap: str, cluster: tuple[Any, str],
                                              cli: Callable[..., tuple[int, str, str]]) -> None:
    """Read on the workers, write from the client: the usual pattern, as a
    writable column does not travel."""
    client, _ = cluster
    with colfile.File(snap) as f:
        doubled = f["g/pos"].to_dask(chunks=(128, 1)) * 2
    result = client.compute(doubled).result()
    with colfile.File(snap, "a") as f:
        out = f.create("g/pos2", ("f4", 3), size=1000, nfile=2)
        da.store(da.from_array(result, chunks=(100, -1)), out, lock=False,
                 scheduler="threads", num_workers=4)
    status, out_text, err = cli("check", snap)
    assert status == 0, out_text + err
    with colfile.File(snap) as f:
        np.testing.assert_array_equal(f["g/pos2"][:], POS * 2)


# ---------------------------------------------------------------------------
# dask.array.store into columns, several threads


STORE_CASES = [
    # (column dtype, shape, blob layout, source chunks)
    ("f8", (1000,), dict(blob_rows=[100, 0, 650, 250]), 37),
    ("i4", (1000,), dict(nfile=3), (500, 500)),
    ("f4", (1000, 3), dict(nfile=3), (70, 2)),        # rows and components split
    ("i8", (999, 4), dict(blob_rows=[1, 500, 498]), (41, 1)),
    ("f8", (600, 2), dict(nfile=4), (600, 1)),        # each thread one component
]


def _source(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    return (RNG.standard_normal(shape) * 1000).astype(dtype)


@pytest.mark.parametrize("dtype,shape,layout,chunks", STORE_CASES)
def test_store_into_written_rows(tmp_path: Path, lib: Any, dtype: str,
                                 shape: tuple[int, ...], layout: dict[str, Any], chunks: Any,
                                 cli: Callable[..., tuple[int, str, str]]) -> None:
    """Overwrite rows that hold data, with lock=False: the partial-row
    writes of different threads must not undo each other."""
    p = str(tmp_path / "s")
    src = _source(dtype, shape)
    with colfile.File(p, "w") as f:
        c = f.create("c", (dtype, shape[1]) if len(shape) > 1 else dtype, size=shape[0],
                     **layout)
        c[:] = 0
        da.store(da.from_array(src, chunks=chunks), c, lock=False, scheduler="threads",
                 num_workers=4)
        np.testing.assert_array_equal(c[:], src)
    status, out, err = cli("check", p)
    assert status == 0, out + err
    with colfile.File(p) as f:
        np.testing.assert_array_equal(f["c"][:], src)


@pytest.mark.parametrize("dtype,shape,layout,chunks", STORE_CASES)
def test_store_into_new_column(tmp_path: Path, lib: Any, dtype: str, shape: tuple[int, ...],
                               layout: dict[str, Any], chunks: Any,
                               cli: Callable[..., tuple[int, str, str]]) -> None:
    """Into a column never written: chunks that split the components write
    part of rows that hold nothing yet (as numpy and h5py allow)."""
    p = str(tmp_path / "s")
    src = _source(dtype, shape)
    with colfile.File(p, "w") as f:
        c = f.create("c", (dtype, shape[1]) if len(shape) > 1 else dtype, size=shape[0],
                     **layout)
        da.store(da.from_array(src, chunks=chunks), c, lock=False, scheduler="threads",
                 num_workers=4)
    status, out, err = cli("check", p)
    assert status == 0, out + err
    with colfile.File(p) as f:
        np.testing.assert_array_equal(f["c"][:], src)


def test_threads_writing_other_components_of_the_same_rows(tmp_path: Path, lib: Any) -> None:
    """Each task writes one component of 250 rows; 4 threads at once, five
    rounds (without per-handle serialisation of partial-row writes, most
    rounds lost some of them)."""
    p = str(tmp_path / "s")
    with colfile.File(p, "w") as f:
        c = f.create("c", ("f8", 3), size=12000, nfile=3)
        for k in range(5):
            src = _source("f8", (12000, 3))
            c[:] = 0
            da.store(da.from_array(src, chunks=(250, 1)), c, lock=False, scheduler="threads",
                     num_workers=4)
            np.testing.assert_array_equal(c[:], src, err_msg=f"round {k}")


def test_store_with_dask_default_lock(tmp_path: Path, lib: Any,
                                      cli: Callable[..., tuple[int, str, str]]) -> None:
    p = str(tmp_path / "s")
    src = _source("f8", (5000, 3))
    with colfile.File(p, "w") as f:
        c = f.create("c", ("f8", 3), size=5000, nfile=5)
        da.store(da.from_array(src, chunks=(512, 3)), c, scheduler="threads")
    assert cli("check", p)[0] == 0
    with colfile.File(p) as f:
        np.testing.assert_array_equal(f["c"].to_dask(chunks=999).compute(), src)


@pytest.mark.parametrize("key,value", [
    ((slice(0, 4), slice(None)), np.arange(12.0).reshape(4, 3)),
    ((slice(2, 6), slice(0, 3)), np.arange(3.0)),
    ((slice(1, 3), slice(0, 99)), np.full((1, 2, 3), 5.0)),
    ((3, slice(None)), np.ones((1, 3))),
    ((slice(None, None, 2), slice(None)), 7.0),
    ((slice(0, 6), slice(None, None, -1)), np.arange(18.0).reshape(6, 3)),
])
def test_keys_over_every_component_as_numpy(tmp_path: Path, lib: Any, key: Any,
                                            value: Any) -> None:
    """col[rows, :] (dask.array.store's keys) writes whole rows, also rows
    never written before, with numpy's broadcasting."""
    expect = np.zeros((6, 3))
    expect[key] = value
    with colfile.File(str(tmp_path / "k"), "w") as f:
        c = f.create("c", ("f8", 3), size=6, nfile=2)
        c[:] = 0
        c[key] = value
        np.testing.assert_array_equal(c[:], expect)
    if key[1] == slice(None) and isinstance(key[0], slice) and key[0].step is None:
        with colfile.File(str(tmp_path / "n"), "w") as f:
            c = f.create("c", ("f8", 3), size=key[0].stop, nfile=2)  # never written
            c[key] = value
            np.testing.assert_array_equal(c[:], expect[:key[0].stop])
