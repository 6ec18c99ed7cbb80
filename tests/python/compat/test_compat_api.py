"""colfile.compat.bigfile: the bigfile 0.1.52 API on colfile.

Behaviour of every public name, and interoperability in both directions with
the original library (``import bigfile``, installed for the tests): what one
writes the other reads, and the same operations give the same bytes on disk.
The collective (FileMPI) layer is tested under ``mpiexec`` with 2 and 3 ranks.
"""

from __future__ import annotations

import gc
import os
import pickle
import shutil
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.testing import assert_array_equal, assert_equal

import colfile
import colfile.compat.bigfile as bf
from colfile._comm import _SelfComm as SelfComm  # a one-rank communicator with mpi4py's method names

@pytest.fixture(scope="module")
def orig() -> Any:
    """The original bigfile 0.1.52: always installed where the tests run."""
    import bigfile as original

    assert original.__version__ == "0.1.52"
    return original


@pytest.fixture
def fpath(tmp_path: Path, lib: Any) -> str:
    return str(tmp_path / "f")


# ---------------------------------------------------------------------------
# names


def test_public_names() -> None:
    assert bf.__version__ == "0.1.52"
    assert bf.BigFile.__mro__[1] is bf.File
    assert bf.BigFileMPI.__mro__[1] is bf.FileMPI
    assert bf.BigData.__mro__[1] is bf.Dataset
    assert bf.BigBlock is bf.Column and bf.BigBlockMPI is bf.ColumnMPI
    assert bf.BigFileError is bf.Error is colfile.Error
    assert bf.BigFileClosedError is bf.FileClosedError
    assert bf.BigBlockClosedError is bf.ColumnClosedError
    # as in bigfile, the closed errors are not Errors
    assert not issubclass(bf.FileClosedError, bf.Error)
    assert not issubclass(bf.ColumnClosedError, bf.Error)
    assert issubclass(bf.ColumnMPI, bf.Column)
    assert bf.set_buffer_size(1024 * 1024) is None
    for name in bf.__all__:
        assert hasattr(bf, name), name


def test_module_documents_differences() -> None:
    doc = bf.__doc__ or ""
    for topic in ("Differences from bigfile", "Names", "Big-endian complex",
                  "Empty attributes round-trip", "FileMPI"):
        assert topic in doc


# ---------------------------------------------------------------------------
# File


def test_file_create_list_open(fpath: str) -> None:
    with pytest.raises(bf.Error):
        bf.File(fpath)  # does not exist, create=False
    with pytest.raises(FileNotFoundError):
        bf.File(fpath)
    f = bf.File(fpath, create=True)
    assert f.basename == fpath and f.comm is None
    assert f.blocks == [] and list(f) == [] and f.keys() == []
    assert not os.path.exists(os.path.join(fpath, "attr-v2"))
    f.create(".")  # the File's attributes: not a block
    assert f.blocks == []
    f.create("b", "i4", 3).close()
    f.create("a/x", ("f8", 2), 4, Nfile=2).close()
    f.create("a/hdr").close()  # header-only
    assert f.blocks == ["a/hdr", "a/x", "b"]
    assert "b" in f and "a/x" in f and "zz" not in f
    assert sorted(f) == f.blocks
    col = f["a/x"]
    assert isinstance(col, bf.Column) and col.size == 4 and col.Nfile == 2
    sub = f["a/"]
    assert isinstance(sub, bf.File) and sorted(sub.blocks) == ["hdr", "x"]
    assert sub.basename == os.path.join(fpath, "a/")
    assert f.subfile("/a").blocks == ["hdr", "x"]
    with pytest.raises(KeyError):
        f.open("nope")
    with pytest.raises(bf.Error):
        f.open("nope")
    f.close()
    f.close()


def test_file_blocks_cached_like_bigfile(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    g = bf.File(fpath)
    assert g.blocks == []
    f.create("new", "i8", 1).close()
    assert g.blocks == []  # cached, as in bigfile
    assert g.list_blocks() == ["new"]  # always lists
    g.create("other", "i8", 1).close()  # create refreshes
    assert g.blocks == ["new", "other"]


def test_file_closed(fpath: str) -> None:
    with bf.File(fpath, create=True) as f:
        f.create("x", "f4", 2).close()
        blocks = f.blocks
    assert f.closed and f.blocks == blocks == ["x"]
    for call in (lambda: f.open("x"), lambda: f["x"], lambda: f.list_blocks(),
                 lambda: f.create("y", "f4", 1)):
        with pytest.raises(bf.FileClosedError):
            call()
    # never listed, then closed: empty, as bigfile's test_closed expects
    g = bf.File(fpath)
    g.close()
    assert g.blocks == []


def test_names_normalised_and_checked(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    f.create("Header", dtype=None).close()
    assert f.open("./Header").size == 0
    assert f.open("/Header").size == 0
    f.create("g//x", "i4", 1).close()
    assert "g/x" in f.list_blocks()
    # spellings used by bigfile clients (mpytools, nbodykit)
    with f["/"] as root:
        assert isinstance(root, bf.File) and "Header" in root
    f["/."].attrs["a"] = 1
    assert f["."].attrs["a"].tolist() == [1]
    f["g/"]["/."].attrs["b"] = 2
    assert f["g/."].attrs["b"].tolist() == [2]
    for bad in (" ", "\t", "\n", "a b", "", "../x", "a/../b"):
        with pytest.raises(bf.Error):
            f.create(bad, "f4", 1)
    with pytest.raises(bf.Error):
        f.create("x", "U3", 1)  # colfile stores kinds i u f c b S only
    with pytest.raises(bf.Error):
        f.create("x", "O", 1)
    with pytest.raises(ValueError):
        f.create("x", "f8", 5, Nfile=0)


def test_pickle_file_and_column(fpath: str) -> None:
    x = bf.BigFile(fpath, create=True)
    col = x.create("abc", "f8", 4)
    col.write(0, np.arange(4.0))
    col1 = pickle.loads(pickle.dumps(col))
    assert type(col1) is bf.Column and col1.comm is None
    assert col1.size == 4 and col1.dtype == np.dtype("f8")
    assert_array_equal(col1[:], np.arange(4.0))
    col.close()
    col2 = pickle.loads(pickle.dumps(col))
    assert col2.size == 4 and col2.dtype == col.dtype and col2.Nfile == 1
    assert_array_equal(col2[:], np.arange(4.0))  # reopens on use
    x1 = pickle.loads(pickle.dumps(x))
    assert type(x1) is bf.BigFile and x1.basename == x.basename
    assert x1.blocks == ["abc"]
    x.close()
    x2 = pickle.loads(pickle.dumps(x))
    assert type(x2) is bf.BigFile and x2.closed and x2.blocks == x.blocks
    unattached = pickle.loads(pickle.dumps(bf.Column()))
    with pytest.raises(bf.ColumnClosedError):
        unattached.size


# ---------------------------------------------------------------------------
# Column


def test_column_description(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    with f.create("v", ("f4", 3), 10, Nfile=3) as b:
        assert b.dtype == np.dtype(("f4", (3,))) and b.dtype.shape == (3,)
        assert b.size == 10 and b.Nfile == 3
        assert "size=10" in repr(b)
    s = f.create("s", "f8", 5)
    assert s.dtype == np.dtype("f8") and s.dtype.shape == ()
    h = f.create("h", dtype=None, size=128)
    assert h.size == 0 and h.Nfile == 0 and h.dtype.shape == (0,)
    assert h[:].size == 0
    with pytest.raises(bf.Error):
        h.write(0, np.ones(1))
    with pytest.raises(bf.ColumnClosedError):
        bf.Column().size


def test_column_read_write(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    c = f.create("a", "f8", 10, Nfile=3)
    c.write(0, np.arange(10))  # int -> f8
    assert_array_equal(c.read(2, 3), [2.0, 3.0, 4.0])
    assert_array_equal(c.read(8, 5), [8.0, 9.0])  # clipped
    assert_array_equal(c.read(3, -1), np.arange(3.0, 10.0))  # to the end
    assert c.read(10, 5).size == 0
    with pytest.raises(bf.Error):
        c.read(11, 1)
    with pytest.raises(bf.Error):
        c.read(-1, 2)
    out = np.zeros(4, "i4")
    assert c.read(2, 4, out) is out and out.tolist() == [2, 3, 4, 5]
    with pytest.raises(ValueError):
        c.read(2, 4, np.zeros(5))
    with pytest.raises(bf.Error):
        c.write(8, np.ones(3))  # past the end
    with pytest.raises(bf.Error):
        c.write(-1, np.ones(1))
    with pytest.raises(bf.Error):
        c.write(0, np.array("aaaa"))  # unicode into numbers
    c.write(0, np.array(True))  # a scalar is one row
    c.write(1, [5, 6])  # any array-like
    assert_array_equal(c[:3], [1.0, 5.0, 6.0])
    big = np.arange(3, dtype=">f8")
    before = big.copy()
    c.write(0, big)
    assert_array_equal(big, before)  # untouched
    assert big.dtype == np.dtype(">f8")
    assert_array_equal(c[:3], [0.0, 1.0, 2.0])


def test_vector_writes(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    v = f.create("v", ("i4", 3), 4)
    v.write(0, np.arange(12))  # flat: whole rows
    assert_array_equal(v[:], np.arange(12).reshape(4, 3))
    v.write(1, np.ones((2, 3)))
    assert_array_equal(v[1:3], np.ones((2, 3)))
    v[3] = [7, 8, 9]
    assert_array_equal(v[3], [7, 8, 9])
    assert v[3].shape == (3,)
    with pytest.raises(ValueError):
        v.write(0, np.arange(4))  # not whole rows


def test_indexing(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    c = f.create("a", "i8", 6)
    c[...] = np.arange(6)
    assert_array_equal(c[...], np.arange(6))
    assert c[2] == 2 and c[np.int64(3)] == 3 and c[-1] == 5
    assert_array_equal(c[1:3], [1, 2])
    assert c[4:2].size == 0
    with pytest.raises(ValueError):
        c[::2]
    with pytest.raises(ValueError):
        c[::2] = np.ones(3)
    with pytest.raises(TypeError):
        c[[1, 2]]
    with pytest.raises(TypeError):
        c[1.5]
    with pytest.raises(IndexError):
        c[6]
    c[0] = 10
    c[-1] = 50
    c[1:3] = np.array([11, 12])
    assert_array_equal(c[:], [10, 11, 12, 3, 4, 50])


def test_half_floats_pass_through(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    with f.create("h", "f2", 4) as b:
        data = np.array([3.0, 5.0, 0.5, -1.0], "f2")
        b.write(0, data)
        assert_array_equal(b[:], data)
        assert b[:].dtype == np.dtype("f2")
        with pytest.raises(bf.Error):
            b.write(0, np.array([30.0, 20.0]))
        with pytest.raises(bf.Error):
            b.read(0, 2, np.zeros(2, "f4"))
    with f.create("g", "f4", 2) as b:
        with pytest.raises(bf.Error):
            b.write(0, np.ones(2, "f2"))


def test_string_and_bool_columns(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    with f.create("s", "S4", 3) as b:
        b.write(0, np.array([b"ab", b"cdef", b""]))
        assert b[:].tolist() == [b"ab", b"cdef", b""]
        b.write(0, np.array(["xy"]))  # unicode is encoded for S columns
        assert b[0] == b"xy"
    with f.create("q", "?", 3) as b:
        b.write(0, np.array([True, False, True]))
        assert b[:].tolist() == [True, False, True]


def test_big_endian_complex_roundtrip(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    values = np.array([1 + 2j, -3.5 + 0.25j])
    with f.create("c", ">c16", 2) as b:
        b.write(0, values)
    with f.create("n", "<c8", 2) as b:
        b.write(0, values.astype(">c8"))
    assert_array_equal(f["c"][:], values)  # real and imaginary kept in place
    assert_array_equal(f["n"][:], values.astype("c8"))


def test_append(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    data = np.arange(30, dtype="f4").reshape(10, 3)
    with f.create("v", ("f4", 3), 10, Nfile=3) as b:
        b.write(0, data)
        b.append(data, Nfile=2)
        with f.open("v") as other:
            assert other.size == 20  # committed at once
        assert b.size == 20
    with f.open("v") as b:
        assert b.Nfile == 5
        assert_array_equal(b[:10], data)
        assert_array_equal(b[10:], data)
    with f.create("e", "i4", 0) as b:
        b.append([1, 2, 3])
        assert_array_equal(b[:], [1, 2, 3])


def test_close_then_use_reopens_like_bigfile(fpath: str, orig: Any, tmp_path: Path) -> None:
    """bigfile 0.1.52 keeps using a closed column: close commits the header,
    later writes resume the checksums and are committed by the next close or
    on garbage collection.  The header sums follow the same sequence."""

    def run(lib: Any, where: str) -> list[str]:
        f = lib.File(where, create=True)
        c = f.create("a", "u1", 4)
        c.write(0, np.array([1, 1, 1, 1], "u1"))
        c.close()
        seen = [open(os.path.join(where, "a", "header")).read()]
        c.write(0, np.array([2, 2, 2, 2], "u1"))
        c.attrs["z"] = 5
        c.close()
        seen.append(open(os.path.join(where, "a", "header")).read())
        c.write(0, np.array([3, 3, 3, 3], "u1"))
        del c
        gc.collect()
        seen.append(open(os.path.join(where, "a", "header")).read())
        seen.append(open(os.path.join(where, "a", "attr-v2")).read())
        assert f["a"][:].tolist() == [3, 3, 3, 3]
        return seen

    mine = run(bf, fpath)
    theirs = run(orig, str(tmp_path / "orig"))
    assert mine == theirs
    assert mine[2].splitlines()[-1] == "000000: 4 : 24 : 24"


def test_context_manager_and_flush(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    with f.create("x", "u1", 3) as b:
        b.write(0, np.array([1, 2, 3], "u1"))
        b.flush()
        assert open(os.path.join(fpath, "x", "header")).read().endswith(
            "000000: 3 : 6 : 6\n")
    assert b.size == 3 and b.Nfile == 1 and "closed" in repr(b)


# ---------------------------------------------------------------------------
# attributes


def test_attr_value_semantics(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    with f.create("blk", dtype=None) as b:
        a = b.attrs
        a["int"] = 128
        a["float"] = [128.0, 3, 4]
        a["string"] = "abcdefg"
        a["complex"] = 128 + 128j
        a["bool"] = True
        a["bytes"] = b"xy"
        a["strs"] = ["a", "bb", "ccc"]
        a["nested"] = [["a", "bb"], ["1", "22"]]
        a["ustr"] = np.array("unicode")
        a["be"] = np.array([1, 2], ">i8")
        a["empty"] = ""
        a["emptyarr"] = np.array([], "f8")
        a["long"] = "x" * 70000
    b = f.open("blk")
    a = b.attrs
    assert isinstance(a["int"], np.ndarray) and a["int"].tolist() == [128]
    assert a["int"].dtype == np.dtype("i8")
    assert a["float"].tolist() == [128.0, 3.0, 4.0]
    assert a["string"] == "abcdefg" and isinstance(a["string"], str)
    assert a["complex"].tolist() == [128 + 128j]
    assert a["bool"].tolist() == [True] and a["bool"].dtype == np.dtype("?")
    assert a["bytes"] == ["xy"]
    assert a["strs"] == ["a", "bb", "ccc"]
    assert a["nested"] == ["a", "bb", "1", "22"]
    assert a["ustr"] == ["unicode"]
    assert a["be"].dtype == np.dtype(">i8") and a["be"].tolist() == [1, 2]
    assert a["empty"] == ""  # bigfile returned '\x00'
    assert a["emptyarr"].dtype == np.dtype("f8") and a["emptyarr"].size == 0
    assert a["long"] == "x" * 70000
    assert a.keys() == sorted(a.keys()) and "int" in a and "nope" not in a
    assert list(a) == a.keys()
    assert dict(a.items())["string"] == "abcdefg"
    with pytest.raises(KeyError):
        a["nope"]
    del a["int"]
    assert "int" not in a and "int" not in f.open("blk").attrs
    with pytest.raises(KeyError):
        del a["int"]


def test_attr_errors(fpath: str) -> None:
    f = bf.File(fpath, create=True)
    b = f.create("blk", dtype=None)
    with pytest.raises(ValueError):
        b.attrs["o"] = np.array([object()])
    with pytest.raises(ValueError):
        b.attrs["o"] = object()
    with pytest.raises(ValueError):
        b.attrs["o"] = None
    for name in ("v 3", "v\t3", "v\n3"):
        with pytest.raises(bf.Error):
            b.attrs[name] = ["a", "bb"]
    assert b.attrs.keys() == []


def test_file_attrs_via_dot(fpath: str) -> None:
    x = bf.File(fpath, create=True)
    with x["."] as bb:
        bb.attrs["value"] = 1234
        assert bb.attrs["value"] == 1234
    assert not os.path.exists(os.path.join(fpath, "header"))
    assert os.path.exists(os.path.join(fpath, "attr-v2"))
    big = np.ones(1024 * 128, "f8")
    with x["."] as bb:
        bb.attrs["big"] = big
    assert_array_equal(x["."].attrs["big"], big)


# ---------------------------------------------------------------------------
# Dataset


@pytest.fixture
def dataset_file(fpath: str) -> Any:
    x = bf.File(fpath, create=True)
    rng = np.random.default_rng(5)
    for name, dt in [("f8", "f8"), ("f4", "f4"), ("i4", "i4"), ("b", "?"),
                     ("v", ("f4", (2,))), ("c", "c16")]:
        d = np.dtype(dt)
        with x.create(name, d, 50, Nfile=2) as b:
            b.write(0, (rng.random((50,) + d.shape) * 100).astype(d.base))
    return x


def test_dataset_reads(dataset_file: Any) -> None:
    x = dataset_file
    ds = bf.Dataset(x)
    assert set(ds.dtype.names) == set(x.blocks) and ds.size == 50 and ds.shape == (50,)
    assert ds.dtype["b"] == np.dtype(("?", (1,))) and ds.dtype["v"].shape == (2,)
    whole = ds[:]
    assert isinstance(whole, np.ndarray) and whole.dtype == ds.dtype
    for name in x.blocks:
        assert_array_equal(x[name][:], whole[name].reshape(x[name][:].shape))
    assert isinstance(ds["f8"], bf.Column) and len(ds["f8"].dtype) == 0
    assert isinstance(ds[("f8",)], bf.Column)
    assert_array_equal(ds["f8", :10], whole["f8"][:10, 0])
    assert_array_equal(ds[:10, "f8"], whole["f8"][:10, 0])
    assert_array_equal(ds[("f8",), :10], whole["f8"][:10, 0])
    assert len(ds[["f8"], :10].dtype) == 1
    sub = ds[["f8", "f4"],]
    assert isinstance(sub, bf.Dataset) and sub.dtype.names == ("f8", "f4")
    assert ds[["f8", "f4"], :10].dtype.names == ("f8", "f4")
    assert ds[3] == whole[3] and ds[-1] == whole[-1]
    assert_array_equal(ds[...], whole)
    with pytest.raises(ValueError):
        ds[::2]
    out = np.zeros(5, ds.dtype)
    assert ds.read(10, 5, out) is out and out["i4"].tolist() == whole["i4"][10:15].tolist()
    with pytest.raises(KeyError):
        ds[["f8", "nope"]]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        old = bf.Dataset(x, blocks=["f8"])
    assert old.dtype.names == ("f8",) and w and w[0].category is DeprecationWarning
    big = bf.BigData(x, ["i4"])
    assert type(big) is bf.BigData and big.dtype.names == ("i4",)


def test_dataset_writes(dataset_file: Any) -> None:
    x = dataset_file
    ds = bf.Dataset(x, ["f8", "v", "i4"])
    d1, d2 = ds[:10], ds[10:20]
    ds[:10] = d2
    assert_array_equal(ds[:10], d2)
    ds[10:20] = d1
    assert_array_equal(ds[10:20], d1)
    ds[0] = d1[0]
    assert ds[0] == d1[0]
    with pytest.raises(ValueError):
        ds[:3] = d1
    ds.append(d1)
    assert ds.size == 60 and x["f8"].size == 60
    assert_array_equal(ds[-10:], d1)


def test_dataset_inconsistent_sizes(fpath: str) -> None:
    x = bf.File(fpath, create=True)
    x.create("a", "f4", 3).close()
    x.create("b", "f4", 4).close()
    with pytest.raises(bf.Error):
        bf.Dataset(x, ["a", "b"])


# ---------------------------------------------------------------------------
# create_from_array


def test_create_from_array(fpath: str) -> None:
    x = bf.File(fpath, create=True)
    data = np.arange(5000, dtype="f8").reshape(2500, 2)
    with x.create_from_array("v", data, memorylimit=1024) as b:
        assert b.dtype == np.dtype(("f8", (2,))) and b.Nfile == 1
        assert_array_equal(b[:], data)
    b = x.create_from_array("s", np.arange(10, dtype="i2"), Nfile=3)
    assert b.Nfile == 3 and b[:].tolist() == list(range(10))
    e = x.create_from_array("e", np.zeros(0, "f4"))
    assert e.size == 0 and e.Nfile == 0


def test_create_from_dask_array(fpath: str) -> None:
    da = pytest.importorskip("dask.array")
    x = bf.File(fpath, create=True)
    arr = da.arange(1000, chunks=100).astype("f4")
    b = x.create_from_array("d", arr, memorylimit=1024 * 8)
    assert_array_equal(b[:], np.arange(1000, dtype="f4"))


# ---------------------------------------------------------------------------
# threads


def test_threads_do_not_crash(fpath: str) -> None:
    x = bf.File(fpath, create=True)
    b = x.create("Threading", Nfile=1, dtype="i8", size=128)
    start = threading.Event()
    errors: list[BaseException] = []
    old = gc.get_threshold()

    def work(i: int) -> None:
        try:
            start.wait()
            x["."].attrs["v3"] = [1, 2, 3]
            for _ in range(60 * i):
                try:
                    with pytest.raises(bf.Error):
                        b.attrs["v 3"] = ["a", "bb", "ccc"]
                    b.write(0, np.ones(128))
                    b.attrs["ok"] = i
                except bf.ColumnClosedError:
                    pass
            b.close()
            x["Threading"].attrs["v3"] = [1, 2, 3]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    gc.set_threshold(1, 1, 1)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        start.set()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*old)
    assert errors == []
    assert_array_equal(x["Threading"][:], np.ones(128))
    assert x["Threading"].attrs["v3"].tolist() == [1, 2, 3]


# ---------------------------------------------------------------------------
# interoperability with the original bigfile 0.1.52

DTYPES = ["i4", "u4", "u8", "i1", "u2", "f4", "f8", "c8", "c16", "?", "S5", "f2",
          ("f4", (2,)), ("c16", (2,)), ("i8", (3,)), ">f8", ">i4"]


def _data(dt: Any, n: int, seed: int = 0) -> np.ndarray:
    d = np.dtype(dt)
    rng = np.random.default_rng(seed)
    raw = rng.random((n,) + d.shape) * 1000
    if d.base.kind == "S":
        return np.array([f"s{i}"[: d.base.itemsize].encode() for i in range(n)], d.base)
    if d.base.kind == "c":
        return (raw + 1j * raw[::-1]).astype(d.base)
    if d.base.kind == "b":
        return raw > 500
    return raw.astype(d.base)


ATTRS = {"int": 7, "float": [1.5, 2.5], "string": "Mpc/h", "bool": False,
         "complex": 1 - 2j, "strs": ["a", "bcd"], "bytes": b"zz", "u1": np.uint8(3),
         "f4arr": np.arange(3, dtype="f4"), "i8be": np.array([1, 2], ">i8"),
         "empty": ""}


def _same_ops(lib: Any, where: str) -> None:
    """One sequence of operations, run by either library."""
    f = lib.File(where, create=True)
    for i, dt in enumerate(DTYPES):
        name = f"col{i}"
        d = np.dtype(dt)
        with f.create(name, dtype=d, size=37, Nfile=3) as b:
            data = _data(dt, 37, i)
            b.write(0, data[:20])
            b.write(20, data[20:])
            for k, v in ATTRS.items():
                b.attrs[k] = v
    with f.create("grp/Header", dtype=None) as b:
        b.attrs["BoxSize"] = 1000.0
    with f.create(".", dtype=None) as b:
        b.attrs["Version"] = "1.0"
    with f.create("app", "f8", 5, Nfile=1) as b:
        b.write(0, np.arange(5.0))
        b.append(np.arange(7.0), Nfile=2)
    f.close()


def _tree(where: str) -> dict[str, bytes]:
    out = {}
    for root, dirs, files in os.walk(where):
        # colfile's extension files (CRC32C, statistics) and hidden
        # directories (.colfile-catalog/: the catalog and the generation)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for fn in files:
            if fn.startswith("colfile-") or fn.startswith("."):
                continue
            p = os.path.join(root, fn)
            out[os.path.relpath(p, where)] = open(p, "rb").read()
    return out


def test_same_bytes_as_the_original(tmp_path: Path, orig: Any, lib: Any) -> None:
    """The same operations through either library give identical headers,
    attribute files and blobs."""
    _same_ops(orig, str(tmp_path / "orig"))
    _same_ops(bf, str(tmp_path / "compat"))
    a, b = _tree(str(tmp_path / "orig")), _tree(str(tmp_path / "compat"))
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], name


def test_compat_writes_original_reads(tmp_path: Path, orig: Any, lib: Any) -> None:
    where = str(tmp_path / "f")
    _same_ops(bf, where)
    with bf.File(where) as mine:
        extra = mine.create("be_c16", ">c16", 4)
        extra.write(0, np.array([1 + 2j, 3 - 4j, 5j, -6.0]))
        extra.close()
    f = orig.File(where)
    assert sorted(f.blocks) == sorted(bf.File(where).blocks)
    for i, dt in enumerate(DTYPES):
        b = f[f"col{i}"]
        d = np.dtype(dt)
        assert b.size == 37 and b.Nfile == 3
        assert b.dtype.base.str[1:] == d.base.str[1:] and b.dtype.shape == d.shape
        assert_equal(b[:], _data(dt, 37, i))
        assert b.attrs["int"].tolist() == [7] and b.attrs["string"] == "Mpc/h"
        assert b.attrs["strs"] == ["a", "bcd"] and b.attrs["bytes"] == ["zz"]
        assert b.attrs["float"].tolist() == [1.5, 2.5]
        assert b.attrs["complex"].tolist() == [1 - 2j]
        assert b.attrs["i8be"].dtype == np.dtype(">i8")
    assert f["grp/Header"].attrs["BoxSize"].tolist() == [1000.0]
    assert f["."].attrs["Version"] == "1.0"
    assert_array_equal(f["app"][:], np.concatenate([np.arange(5.0), np.arange(7.0)]))
    assert f["app"].Nfile == 3
    # big-endian complex: the original reads the stored values (raw dtype)
    raw = f["be_c16"][:]
    assert raw.dtype.str == ">c16" and raw.tolist() == [1 + 2j, 3 - 4j, 5j, -6.0]
    ds = orig.Dataset(f, ["col0", "col6"])
    assert_equal(ds[:]["col6"].reshape(-1), _data("f8", 37, 6))  # (37, 1) there


def test_original_writes_compat_reads(tmp_path: Path, orig: Any, lib: Any) -> None:
    where = str(tmp_path / "f")
    _same_ops(orig, where)
    f = bf.File(where)
    for i, dt in enumerate(DTYPES):
        b = f[f"col{i}"]
        d = np.dtype(dt)
        assert b.size == 37 and b.Nfile == 3 and b.dtype.shape == d.shape
        assert b.dtype.base.str[1:] == d.base.str[1:]
        assert_equal(b[:], _data(dt, 37, i))
        assert b.attrs["int"].tolist() == [7] and b.attrs["bool"].tolist() == [False]
        assert b.attrs["strs"] == ["a", "bcd"] and b.attrs["bytes"] == ["zz"]
        assert b.attrs["u1"].dtype == np.dtype("u1") and b.attrs["u1"].tolist() == [3]
        assert b.attrs["f4arr"].tolist() == [0.0, 1.0, 2.0]
        assert b.attrs["empty"] == ""
    assert f["grp/"]["Header"].attrs["BoxSize"].tolist() == [1000.0]
    assert f["."].attrs["Version"] == "1.0"
    assert f["app"].Nfile == 3 and f["app"].size == 12
    ds = bf.Dataset(f, [f"col{i}" for i in range(4)])
    assert_equal(ds[:]["col1"][:, 0], _data("u4", 37, 1))  # (37, 1) as in bigfile
    # and colfile itself finds the original's checksums right
    with colfile.File(where) as cf:
        for i in range(len(DTYPES)):
            col = cf[f"col{i}"]
            for j in range(col.nfile):
                assert "SUM_MISMATCH" not in col.verify_blob(j)


# ---------------------------------------------------------------------------
# FileMPI on one rank (no MPI needed) and the metadata writer


def test_filempi_single_rank(fpath: str) -> None:
    comm = SelfComm()
    x = bf.BigFileMPI(comm, fpath, create=True)
    assert x.comm is comm and x.blocks == []
    with x.create("a", ("f8", 2), 10, Nfile=2) as b:
        assert isinstance(b, bf.ColumnMPI) and b.comm is comm
        b.write(0, np.ones((10, 2)))
        b.attrs["k"] = 1
    assert x.blocks == ["a"]
    with x["a"] as b:
        assert_array_equal(b[:], np.ones((10, 2)))
        assert b.attrs["k"].tolist() == [1]
        b.append(np.zeros((3, 2)), Nfile=1)
        assert b.size == 13
    y = x.create_from_array("c", np.arange(100, dtype="i4"), memorylimit=64)
    assert_array_equal(y[:], np.arange(100))
    y.close()
    ds = bf.Dataset(x, ["c"])
    assert ds.size == 100
    sub = x.subfile("")
    assert isinstance(sub, bf.FileMPI) and sorted(sub.blocks) == ["a", "c"]
    with pytest.raises(bf.Error):
        x.create(" ", "f4", 1)
    with colfile.File(fpath) as cf:
        assert all(cf["a"].verify_blob(i) == {"OK"} for i in range(cf["a"].nfile))


# ---------------------------------------------------------------------------
# FileMPI under mpiexec

MPI_SCRIPT = r'''
import os, sys
import numpy as np
from mpi4py import MPI
import colfile
import colfile.compat.bigfile as bf

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
root = sys.argv[1]
N = 1000
data = np.arange(N, dtype="f8") * 1.5 - 7
mine = np.array_split(np.arange(N), size)[rank]
lo, hi = int(mine[0]), int(mine[-1]) + 1

# inconsistent file name -> Error everywhere
try:
    bf.FileMPI(comm, os.path.join(root, "bad%d" % rank), create=True)
except bf.Error:
    pass
else:
    raise AssertionError("inconsistent filename accepted")

x = bf.FileMPI(comm, os.path.join(root, "mpi"), create=True)
with x.create("x", "f8", N, Nfile=3) as b:       # one write per rank
    b.write(lo, data[lo:hi])
    b.attrs["who"] = rank                          # rank 0's value is stored
    assert b.attrs["who"].tolist() == [rank]       # each rank sees its own
with x.open("x") as b:                             # rewrite: sums accumulate
    b.write(lo, data[lo:hi] + 1)
    b.flush()
    b.write(lo, data[lo:hi] + 2)
assert x.blocks == ["x"]

# inconsistent block name -> Error everywhere
try:
    x.create("b%d" % rank, "f4", 3)
except bf.Error:
    pass
else:
    raise AssertionError("inconsistent blockname accepted")
# failure on rank 0 is raised on every rank, with its type
try:
    x.create("a b", "f4", 3)
except bf.Error as exc:
    assert type(exc).__name__ == "InvalidNameError", exc
else:
    raise AssertionError("bad name accepted")

# collective append: rank r adds r+1 rows
with x.create("app", "i8", N, Nfile=2) as b:
    b.write(lo, np.arange(lo, hi))
    b.append(np.full(rank + 1, 100 + rank), Nfile=2)
    assert b.size == N + size * (size + 1) // 2

# create_from_array with scattered pieces, and a Dataset
v = (np.arange(3 * 777) % 251).astype("u1").reshape(777, 3)
part = np.array_split(v, size)[rank]
with x.create_from_array("v", part, Nfile=4, memorylimit=1024) as b:
    pass
ds = bf.Dataset(x, ["v"])
assert ds.size == 777 and (ds[:]["v"] == v).all()
with x["v"] as b:
    assert (b[:] == v).all()
with x.create(".", dtype=None) as b:
    b.attrs["Size"] = size
comm.barrier()

if rank == 0:
    import bigfile
    ser = bf.File(os.path.join(root, "ser"), create=True)
    with ser.create("x", "f8", N, Nfile=3) as b:
        b.write(0, data)
    with ser.open("x") as b:
        b.write(0, data + 1)
        b.write(0, data + 2)
    with ser.create("app", "i8", N, Nfile=2) as b:
        b.write(0, np.arange(N))
        b.append(np.concatenate([np.full(r + 1, 100 + r) for r in range(size)]), Nfile=2)
    with ser.create("v", ("u1", 3), 777, Nfile=4) as b:
        b.write(0, v)
    for name in ("x", "app", "v"):
        mine_h = open(os.path.join(root, "mpi", name, "header")).read()
        ref_h = open(os.path.join(root, "ser", name, "header")).read()
        assert mine_h == ref_h, (name, mine_h, ref_h)
        # CRCs: those known must be right; blobs several ranks wrote are '-'
        mine_x = open(os.path.join(root, "mpi", name, "colfile-v1")).read().splitlines()
        ref_x = open(os.path.join(root, "ser", name, "colfile-v1")).read().splitlines()
        assert len(mine_x) == len(ref_x)
        for a, b2 in zip(mine_x, ref_x):
            assert a == b2 or (a.endswith("crc32c=-") and a.split(" : crc")[0] == b2.split(" : crc")[0]), (a, b2)
    with colfile.File(os.path.join(root, "mpi")) as cf:
        for name in ("app", "v"):
            col = cf[name]
            for i in range(col.nfile):
                st = col.verify_blob(i)
                assert st <= {"OK", "CRC_UNKNOWN"}, (name, i, st)
        x_col = cf["x"]
        for i in range(x_col.nfile):
            assert "CRC_MISMATCH" not in x_col.verify_blob(i)
    o = bigfile.File(os.path.join(root, "mpi"))
    assert (o["x"][:] == data + 2).all()
    assert o["x"].attrs["who"].tolist() == [0]
    assert o["."].attrs["Size"].tolist() == [size]
    app = o["app"][:]
    assert (app[:N] == np.arange(N)).all()
    assert app[N:].tolist() == [100 + r for r in range(size) for _ in range(r + 1)]
    assert o["app"].Nfile == 4
    assert (o["v"][:] == v).all()
print("OK rank %d" % rank)
'''


def _mpiexec() -> Path | None:
    exe = Path(sys.executable).parent / "mpiexec"
    if exe.exists():
        return exe
    found = shutil.which("mpiexec")
    return Path(found) if found else None


@pytest.mark.parametrize("nranks", [2, 3])
def test_filempi_under_mpiexec(tmp_path: Path, nranks: int, lib: Any, orig: Any) -> None:
    pytest.importorskip("mpi4py")
    exe = _mpiexec()
    if exe is None:
        pytest.skip("no mpiexec next to the Python executable or on PATH")
    script = tmp_path / "mpi_script.py"
    script.write_text(MPI_SCRIPT)
    out = tmp_path / "out"
    out.mkdir()
    here = str(Path(colfile.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in env.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    proc = subprocess.run([str(exe), "-n", str(nranks), sys.executable, str(script), str(out)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    for r in range(nranks):
        assert f"OK rank {r}" in proc.stdout


def test_module_doctests(lib: Any) -> None:
    import doctest

    result = doctest.testmod(bf, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
