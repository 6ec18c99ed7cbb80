"""colfile convert and colfile.convert: HDF5 <-> colfile File."""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest


def _attrs_equal(a, b, where):
    assert sorted(a.keys()) == sorted(b.keys()), where
    for k in a.keys():
        x, y = a[k], b[k]
        if isinstance(x, str) or isinstance(y, str):
            assert (type(x), x) == (type(y), y), (where, k)
        else:
            x, y = np.asarray(x), np.asarray(y)
            assert (x.dtype, x.shape) == (y.dtype, y.shape), (where, k)
            if x.dtype.kind == "O":
                assert list(x) == list(y), (where, k)
            else:
                assert x.tobytes() == y.tobytes(), (where, k)


def assert_same_hdf5(p, q):
    """Exactly the same objects, dtypes, shapes, values and attributes."""
    with h5py.File(p, "r") as a, h5py.File(q, "r") as b:
        names_a, names_b = [], []
        a.visit(names_a.append)
        b.visit(names_b.append)
        assert sorted(names_a) == sorted(names_b)
        _attrs_equal(a.attrs, b.attrs, "/")
        for name in names_a:
            x, y = a[name], b[name]
            assert type(x) is type(y), name
            _attrs_equal(x.attrs, y.attrs, name)
            if isinstance(x, h5py.Dataset):
                assert (x.dtype, x.shape) == (y.dtype, y.shape), name
                assert x[()].tobytes() == y[()].tobytes(), name


COMPOUND = np.dtype([("id", "<i8"), ("pos", ">f4", (3,)), ("tag", "S4"), ("ok", "?")])


def make_hdf5(path, n=257, seed=3):
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as h:
        h.attrs["BoxSize"] = 1000.0
        h.attrs["Title"] = "a test file"
        h.attrs["Names"] = ["alpha", "beta", "γάμμα"]
        h.attrs["Shape"] = np.array([4, 5, 6], dtype="i4")
        for dt in ("<f8", ">f4", "f2", "<i8", ">i2", "u1", "<u4", "c16", ">c8", "?", "S6"):
            if dt == "?":
                data = rng.integers(0, 2, n).astype(bool)
            elif dt == "S6":
                data = np.array([b"r%d" % i for i in rng.integers(0, 10**5, n)], "S6")
            elif np.dtype(dt).kind == "c":
                data = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dt)
            elif np.dtype(dt).kind == "f":
                data = rng.normal(size=n).astype(dt)
                data[:3] = [np.nan, -0.0, np.inf]
            else:
                data = rng.integers(0, 100, n).astype(dt)
            name = "scalars/" + dt.replace("<", "le").replace(">", "be").replace("?", "b")
            h.create_dataset(name, data=data).attrs["unit"] = "u-" + dt
        g = h.create_group("a/b/c")
        g.attrs["depth"] = np.int64(3)
        h["a"].attrs["level"] = np.array([1.5, 2.5])
        h.create_dataset("a/b/c/Position", data=rng.normal(size=(n, 3)))
        h.create_dataset("a/b/Mass1", data=rng.normal(size=(n, 1)).astype("f4"))
        h.create_group("emptygroup")
        h.create_dataset("empty/vec", shape=(0, 3), dtype=">i4")
        h.create_dataset("empty/scalar", shape=(0,), dtype="f8")
        h.create_dataset("empty/compound", shape=(0,), dtype=COMPOUND)
        rows = np.zeros(n, COMPOUND)
        rows["id"] = np.arange(n) * 7
        rows["pos"] = rng.normal(size=(n, 3))
        rows["tag"] = [b"t%d" % (i % 97) for i in range(n)]
        rows["ok"] = np.arange(n) % 3 == 0
        ds = h.create_dataset("halos", data=rows)
        ds.attrs["Count"] = np.int64(n)


def test_roundtrip_cli(cli, tmp_path):
    src, mid, back = tmp_path / "in.h5", tmp_path / "mid", tmp_path / "back.h5"
    make_hdf5(src)
    status, out, err = cli("convert", str(src), str(mid), "--nfile", "3", "--chunk-rows", "16")
    assert (status, out, err) == (0, "", "")
    import colfile

    with colfile.File(str(mid)) as f:
        assert f["halos/pos"].shape == (257, 3) and f["halos/pos"].dtype == np.dtype(">f4")
        assert list(f["halos/"].attrs["hdf5:compound"]) == ["id", "pos", "tag", "ok"]
        assert f["halos/id"][:].tolist() == list(range(0, 7 * 257, 7))
        assert f["a/b/c/Position"].shape == (257, 3)
        assert f["scalars/bef4"].dtype == np.dtype(">f4")
        assert f["scalars/bef4"].nfile == 3 and f["halos/pos"].nfile == 3
        assert f["scalars/bef4"].chunk_rows == 16 and f["halos/id"].chunk_rows == 16
        assert f["a/b/c/"].attrs["depth"] == 3
        assert f.attrs["Names"] == ["alpha", "beta", "γάμμα"]
        assert "emptygroup/" in f and f["emptygroup/"].columns == []
    status, out, err = cli("convert", str(mid), str(back))
    assert (status, err) == (0, "")
    assert_same_hdf5(src, back)
    assert sorted(os.listdir(tmp_path)) == ["back.h5", "in.h5", "mid"]


def test_roundtrip_small_batches(tmp_path):
    """Batches of a few rows give the same copy as one batch."""
    from colfile import convert

    src = tmp_path / "in.h5"
    make_hdf5(src, n=1000, seed=9)
    names = convert.from_hdf5(src, tmp_path / "mid", batch_bytes=100)
    assert "halos/pos" in names and "scalars/lef8" in names
    assert "halos" in convert.to_hdf5(tmp_path / "mid", tmp_path / "back.h5", batch_bytes=64)
    assert_same_hdf5(src, tmp_path / "back.h5")
    assert convert.source_kind(src) == "hdf5"
    assert convert.source_kind(tmp_path / "mid") == "colfile"


def test_signature_not_name(cli, tmp_path):
    """The direction follows the HDF5 signature, whatever the file is called."""
    src = tmp_path / "data.bin"
    with h5py.File(src, "w", userblock_size=1024) as h:
        h["x"] = np.arange(5)
    assert cli("convert", str(src), str(tmp_path / "out"))[0] == 0
    import colfile

    with colfile.File(str(tmp_path / "out")) as f:
        assert f["x"][:].tolist() == [0, 1, 2, 3, 4]


def test_bigfile_fixture_to_hdf5(cli, tmp_path, bigfile_set):
    import colfile

    src = bigfile_set / "main"
    out = tmp_path / "main.h5"
    status, _, err = cli("convert", str(src), str(out))
    assert (status, err) == (0, "")
    with colfile.File(str(src)) as f, h5py.File(out, "r") as h:
        for name in f.columns:
            col = f[name]
            if col.kind != "data":
                assert isinstance(h[name], h5py.Group)
            else:
                ds = h[name]
                assert (ds.dtype, ds.shape) == (col.dtype, col.shape), name
                assert ds[()].tobytes() == col[:].tobytes(), name
            for k in col.attrs:
                v = col.attrs[k]
                got = h[name].attrs[k]
                if isinstance(v, list):
                    assert list(got) == v, (name, k)
                elif isinstance(v, str):
                    assert got == v, (name, k)
                else:
                    assert np.asarray(got).tobytes() == np.asarray(v).tobytes(), (name, k)
        assert h["1"].attrs["GroupLabel"] == f["1/"].attrs["GroupLabel"]
        assert h.attrs.keys() == f.attrs.keys()
    # and back again: the same data
    assert cli("convert", str(out), str(tmp_path / "again"))[0] == 0
    with colfile.File(str(src)) as f, colfile.File(str(tmp_path / "again")) as g:
        for name in f.columns:
            if f[name].kind == "data":
                assert g[name][:].tobytes() == f[name][:].tobytes(), name
                assert g[name].dtype == f[name].dtype, name


def _bad(tmp_path, build):
    src = tmp_path / "bad.h5"
    with h5py.File(src, "w") as h:
        h["ok"] = np.arange(3)
        build(h)
    return src


@pytest.mark.parametrize("build, words", [
    (lambda h: h.create_dataset("s", data=["a", "bc"], dtype=h5py.string_dtype()),
     "variable-length strings"),
    (lambda h: h.create_dataset("r", data=[h["ok"].ref], dtype=h5py.ref_dtype),
     "references"),
    (lambda h: h.create_dataset("cube", data=np.zeros((2, 2, 2))), "3 dimensions"),
    (lambda h: h.create_dataset("scalar", data=1.0), "0 dimensions"),
    (lambda h: h.create_dataset("bad name", data=np.arange(2)), "cannot store"),
    (lambda h: h["ok"].attrs.__setitem__("bad key", 1), "bad key"),
    (lambda h: h["ok"].attrs.__setitem__("hdf5:compound", "x"), "reserved"),
    (lambda h: h.attrs.__setitem__("m", np.zeros((2, 2))), "2 dimensions"),
    (lambda h: h.__setitem__("alias", h5py.SoftLink("/ok")), "SoftLink"),
    (lambda h: h.__setitem__("ext", h5py.ExternalLink("other.h5", "/x")), "ExternalLink"),
])
def test_unsupported_input(cli, tmp_path, build, words):
    src = _bad(tmp_path, build)
    status, out, err = cli("convert", str(src), str(tmp_path / "out"))
    assert status == 1 and out == ""
    assert err.startswith("colfile: error: ") and err.count("\n") == 1
    assert words in err and str(src) in err
    assert sorted(os.listdir(tmp_path)) == ["bad.h5"]  # nothing left behind


def test_existing_destination(cli, tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as h:
        h["x"] = np.arange(4)
    dst = tmp_path / "out.h5"
    dst.write_bytes(b"keep me")
    status, _, err = cli("convert", str(src), str(tmp_path / "cf"))
    assert status == 0
    status, _, err = cli("convert", str(tmp_path / "cf"), str(dst))
    assert status == 1 and "exists" in err and "--overwrite" in err and str(dst) in err
    assert dst.read_bytes() == b"keep me"
    status, _, err = cli("convert", str(src), str(tmp_path / "cf"))
    assert status == 1 and "exists" in err
    assert cli("convert", "--overwrite", str(tmp_path / "cf"), str(dst))[0] == 0
    with h5py.File(dst, "r") as h:
        assert h["x"][()].tolist() == [0, 1, 2, 3]
    with h5py.File(src, "w") as h:
        h["y"] = np.arange(2)
    assert cli("convert", "--overwrite", str(src), str(tmp_path / "cf"))[0] == 0
    import colfile

    with colfile.File(str(tmp_path / "cf")) as f:
        assert f.columns == ["y"]
    assert sorted(os.listdir(tmp_path)) == ["cf", "in.h5", "out.h5"]


def test_bad_source(cli, tmp_path):
    status, out, err = cli("convert", str(tmp_path / "nope"), str(tmp_path / "out"))
    assert status == 2 and "nope" in err and "no such File or HDF5 file" in err
    (tmp_path / "text").write_text("not hdf5")
    status, out, err = cli("convert", str(tmp_path / "text"), str(tmp_path / "out"))
    assert status == 1 and "neither an HDF5 file" in err
    status, out, err = cli("convert", str(tmp_path), str(tmp_path))
    assert status == 1 and "is the source" in err
    assert sorted(os.listdir(tmp_path)) == ["text"]


def test_options_for_colfile_destination_only(cli, tmp_path):
    import colfile

    with colfile.File(str(tmp_path / "cf"), "w") as f:
        f.create("x", data=np.arange(3))
    status, _, err = cli("convert", "--nfile", "2", str(tmp_path / "cf"), str(tmp_path / "o.h5"))
    assert status == 1 and "--nfile" in err
    status, _, err = cli("convert", "--nfile", "0", str(tmp_path / "cf"), str(tmp_path / "o.h5"))
    assert status == 2 and "at least 1" in err
