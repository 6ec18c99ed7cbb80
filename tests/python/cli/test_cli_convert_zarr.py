"""colfile convert from a zarr group (colfile.convert_zarr): groups, arrays,
vector and structured arrays, attributes copied exactly; unsupported input
refused before anything is written."""

from __future__ import annotations

import os

import numpy as np
import pytest

import colfile

zarr = pytest.importorskip("zarr")


def make_zarr(path, n=101, seed=5):
    rng = np.random.default_rng(seed)
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    root.attrs.update({"BoxSize": 1000.0, "Title": "a zarr group", "Names": ["a", "βγ"],
                       "Shape": [4, 5, 6], "Flag": True})
    data = {}
    for dt in ("<f8", ">f4", "<i8", ">i2", "u1", "c16", "?", "S5"):
        if dt == "?":
            arr = rng.integers(0, 2, n).astype(bool)
        elif dt == "S5":
            arr = np.array([b"s%d" % i for i in rng.integers(0, 1000, n)], "S5")
        elif np.dtype(dt).kind == "c":
            arr = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dt)
        else:
            arr = (rng.normal(size=n) * 100).astype(dt)
        name = "scalars/x" + np.dtype(dt).str.replace("<", "le").replace(">", "be").replace("|", "")
        z = root.create_array(name, shape=(n,), dtype=dt, chunks=(17,))
        z[:] = arr
        data[name] = arr
    pos = root.create_array("halos/Position", shape=(n, 3), dtype="<f4", chunks=(10, 3))
    pos[:] = rng.random((n, 3)).astype("<f4")
    pos.attrs["Unit"] = "Mpc/h"
    pos.attrs["Scale"] = [0.5, 2]
    data["halos/Position"] = pos[:]
    root["halos"].attrs["Redshift"] = 0.25
    root.create_group("empty/deeper")
    return data


def test_convert_zarr_cli(cli, tmp_path):
    src, dst = tmp_path / "in.zarr", tmp_path / "out"
    data = make_zarr(src)
    status, out, err = cli("convert", str(src), str(dst), "--nfile", "3", "--chunk-rows", "8")
    assert (status, out, err) == (0, "", "")
    with colfile.File(str(dst)) as f:
        for name, arr in data.items():
            col = f[name]
            got = col[:]
            # zarr 3 keeps the byte order in the bytes codec, little by default
            assert got.dtype.newbyteorder("=") == arr.dtype.newbyteorder("="), name
            assert got.shape == arr.shape, name
            assert got.tobytes() == np.asarray(arr).astype(got.dtype).tobytes(), name
            assert col.nfile == 3 and col.chunk_rows == 8
        assert f.attrs["Title"] == "a zarr group" and f.attrs["Names"] == ["a", "βγ"]
        assert f.attrs["BoxSize"] == 1000.0 and f.attrs["Shape"].tolist() == [4, 5, 6]
        assert bool(f.attrs["Flag"]) is True
        assert f["halos/Position"].attrs["Unit"] == "Mpc/h"
        assert f["halos/Position"].attrs["Scale"].tolist() == [0.5, 2.0]
        assert f["halos/"].attrs["Redshift"] == 0.25
        assert "empty/deeper/" in f
    assert sorted(os.listdir(tmp_path)) == ["in.zarr", "out"]
    from colfile import convert

    assert convert.source_kind(src) == "zarr"


def test_big_endian_bytes_codec_gives_a_big_endian_column(tmp_path):
    from zarr.codecs import BytesCodec

    from colfile.convert_zarr import from_zarr

    src = tmp_path / "be.zarr"
    root = zarr.open_group(str(src), mode="w", zarr_format=3)
    z = root.create_array("x", shape=(5,), dtype="f8", chunks=(2,),
                          serializer=BytesCodec(endian="big"), compressors=None)
    z[:] = np.array([1.5, -2.0, np.nan, 0.0, 1e300])
    from_zarr(src, tmp_path / "out")
    with colfile.File(str(tmp_path / "out")) as f:
        assert f["x"].dtype == np.dtype(">f8")
        assert f["x"][:].tobytes() == np.array([1.5, -2.0, np.nan, 0.0, 1e300], ">f8").tobytes()
    # the chunk files hold exactly the column's blob bytes
    assert (src / "x" / "c" / "0").read_bytes() == np.array([1.5, -2.0], ">f8").tobytes()


def test_zarr_v2_structured_array(tmp_path):
    from colfile.convert_zarr import from_zarr

    src = tmp_path / "v2.zarr"
    root = zarr.open_group(str(src), mode="w", zarr_format=2)
    # (zarr 3.1 cannot make a structured array with a sub-array field)
    dt = np.dtype([("id", "<i8"), ("mass", ">f4"), ("tag", "S3")])
    rows = np.zeros(9, dt)
    rows["id"] = np.arange(9) * 3
    rows["mass"] = np.arange(9) / 4
    rows["tag"] = [b"t%d" % i for i in range(9)]
    z = root.create_array("halos", shape=(9,), dtype=dt, chunks=(4,))
    z[:] = rows
    assert from_zarr(src, tmp_path / "out") == ["halos/id", "halos/mass", "halos/tag"]
    with colfile.File(str(tmp_path / "out")) as f:
        for name in dt.names:
            got = f["halos/" + name][:]
            assert got.dtype == dt[name] and got.tobytes() == rows[name].tobytes(), name
        assert list(f["halos/"].attrs["hdf5:compound"]) == ["id", "mass", "tag"]


@pytest.mark.parametrize("build,words", [
    ("3d", "3 dimensions"),
    ("dict_attr", "JSON dict attribute"),
    ("vlen", "strings are not supported"),
])
def test_unsupported_zarr_refused(cli, tmp_path, build, words):
    src = tmp_path / "bad.zarr"
    root = zarr.open_group(str(src), mode="w", zarr_format=3)
    root.create_array("ok", shape=(4,), dtype="<i4")[:] = np.arange(4)
    if build == "3d":
        root.create_array("cube", shape=(2, 2, 2), dtype="<f8")
    elif build == "dict_attr":
        root.attrs["meta"] = {"a": 1}
    else:
        root.create_array("names", shape=(2,), dtype=str)
    status, out, err = cli("convert", str(src), str(tmp_path / "out"))
    assert status == 1 and out == ""
    assert err.startswith("colfile: error: ") and err.count("\n") == 1, err
    assert words in err and str(src) in err
    assert sorted(os.listdir(tmp_path)) == ["bad.zarr"]


def test_view_of_a_file_converts_back_to_the_same_file(tmp_path):
    """A File seen through colfile.to_zarr, saved by zarr as a zarr group
    and converted back, holds the same columns and attributes."""
    from colfile.convert_zarr import from_zarr

    p = str(tmp_path / "cf")
    with colfile.File(p, "w") as f:
        f.create("1/ID", ">i8", data=np.arange(13) - 4, nfile=3)
        f.create("1/Position", ("<f8", 2), data=np.arange(26.0).reshape(13, 2), nfile=2)
        f.attrs["Time"] = 0.75
    view = colfile.to_zarr(p)
    out = zarr.open_group(str(tmp_path / "copy.zarr"), mode="w", zarr_format=3)
    out.attrs.update(dict(view.attrs))
    for name in ("1/ID", "1/Position"):
        a = view[name]
        out.create_array(name, shape=a.shape, dtype=a.dtype, chunks=a.chunks)[:] = a[:]
    from_zarr(tmp_path / "copy.zarr", tmp_path / "back")
    with colfile.File(p) as f, colfile.File(str(tmp_path / "back")) as g:
        assert g.attrs["Time"] == 0.75
        for name in ("1/ID", "1/Position"):
            assert np.array_equal(f[name][:], g[name][:])
