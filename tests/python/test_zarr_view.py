"""The read-only zarr v3 view of a File (colfile.zarr_view, colfile.to_zarr):
zarr and xr.open_zarr read exactly colfile's data and attributes (vector
columns, groups, uneven blobs, byte strings, big-endian dtypes), nothing is
copied or written, and writes through the view are refused."""

from __future__ import annotations

import os

import numpy as np
import pytest

import colfile

zarr = pytest.importorskip("zarr")
from colfile.zarr_view import ColfileStore  # noqa: E402


def _same(a: np.ndarray, b: np.ndarray) -> None:
    """Same shape, same values bit for bit (NaNs too), the same dtype up to
    byte order (zarr hands out native order)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    assert a.dtype.newbyteorder("=") == b.dtype.newbyteorder("=")
    assert np.ascontiguousarray(a.astype(b.dtype)).tobytes() == np.ascontiguousarray(b).tobytes()


def _snapshot(path: str) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _, files in os.walk(path):
        for name in files:
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture()
def sample(tmp_path):
    p = str(tmp_path / "cat")
    rng = np.random.default_rng(7)
    with colfile.File(p, "w") as f:
        f.attrs["BoxSize"] = 1000.0
        f.attrs["Seeds"] = np.array([1, 2, 3], dtype="i4")
        f.attrs["Code"] = "colfile"
        pos = rng.random((23, 3)).astype(">f4")
        pos[5, 1] = np.nan
        c = f.create("1/Position", (">f4", 3), size=23, nfile=4)
        c[:] = pos
        c.attrs["Unit"] = "Mpc/h"
        c.attrs["Scale"] = np.array([0.5, 2.0])
        f.create("1/ID", ">i8", data=np.arange(23, dtype=">i8") * 7 - 50, nfile=3)
        f.create("1/Mass", "<f8", data=rng.random(23), nfile=1)
        f.create("2/Name", "S6", data=np.array([b"ab", b"abcdef", b"", b"x\x00y"]), nfile=2)
        f.create("2/Flag", "b1", data=np.array([True, False, True, True]))
        f.create("2/Z", "<c16", data=np.array([1 + 2j, -0.0, np.inf, 3j]))
        f.create("Empty", "u2", size=0)
        f.require_group("2").attrs["Redshift"] = 0.5
        f.require_group("3/4").attrs["Nested"] = 1
    return p


def test_arrays_read_exactly_what_colfile_reads(sample):
    g = colfile.to_zarr(sample)
    assert isinstance(g, zarr.Group)
    with colfile.File(sample) as f:
        for name in f.columns:
            col = f[name]
            arr = g[name]
            assert isinstance(arr, zarr.Array)
            _same(arr[:], col[:])
            # a slice across chunk (and blob) boundaries, and one row
            _same(arr[3:17], col[3:17])
            if col.size:
                last = col.size - 1
                _same(arr[last:], col[last:])
                assert np.array_equal(arr[last], col[last], equal_nan=col.dtype.kind == "f")
        assert sorted(g.group_keys()) == ["1", "2", "3"]
        assert sorted(g["1"].array_keys()) == ["ID", "Mass", "Position"]
        assert g["1/Position"].shape == (23, 3)
        assert g["2/Name"].dtype == np.dtype("S6")
        assert g["Empty"].shape == (0,)


def test_attributes(sample):
    g = colfile.to_zarr(sample)
    assert dict(g.attrs) == {"BoxSize": 1000.0, "Seeds": [1, 2, 3], "Code": "colfile"}
    assert dict(g["1/Position"].attrs) == {"Unit": "Mpc/h", "Scale": [0.5, 2.0]}
    assert dict(g["2"].attrs) == {"Redshift": 0.5}
    assert dict(g["3/4"].attrs) == {"Nested": 1}


def test_uneven_blobs_give_a_regular_grid_assembled_across_blobs(sample):
    with colfile.File(sample) as f:
        blobs = [r for r in f["1/Position"].blob_rows if r]
    assert len(set(blobs)) > 1 or blobs[-1] > blobs[0]  # bigfile's split of 23 into 4
    g = colfile.to_zarr(sample)
    arr = g["1/Position"]
    assert arr.chunks == (max(blobs), 3)
    # a tiny cap: chunks of 2 rows, each from one or two blobs
    small = colfile.to_zarr(sample, chunk_bytes=2 * 12)
    assert small["1/Position"].chunks == (2, 3)
    with colfile.File(sample) as f:
        _same(small["1/Position"][:], f["1/Position"][:])
        _same(small["1/ID"][:], f["1/ID"][:])


def test_even_blobs_are_the_chunks(tmp_path):
    p = str(tmp_path / "even")
    with colfile.File(p, "w") as f:
        c = f.create("x", "<i4", data=np.arange(4, dtype="<i4"))
        c.append(np.arange(4, 8, dtype="<i4"))
        c.append(np.arange(8, 10, dtype="<i4"))
    with colfile.File(p) as f:
        assert [r for r in f["x"].blob_rows if r] == [4, 4, 2]
    g = colfile.to_zarr(p)
    assert g["x"].chunks == (4,)
    _same(g["x"][:], np.arange(10, dtype="<i4"))


def test_big_endian_metadata_says_big(sample):
    store = ColfileStore(sample)
    import json
    import asyncio
    from zarr.core.buffer import default_buffer_prototype
    meta = json.loads(asyncio.run(store.get("1/ID/zarr.json", default_buffer_prototype()))
                      .to_bytes())
    assert meta["codecs"] == [{"name": "bytes", "configuration": {"endian": "big"}}]
    assert meta["data_type"] == "int64"
    assert meta["dimension_names"] == ["row"]
    # the chunk is the big-endian bytes of the rows, as in the blobs
    chunk = asyncio.run(store.get("1/ID/c/0", default_buffer_prototype())).to_bytes()
    rows = meta["chunk_grid"]["configuration"]["chunk_shape"][0]
    assert chunk[:8 * 3] == (np.arange(3) * 7 - 50).astype(">i8").tobytes()
    assert len(chunk) == 8 * rows
    store.close()


def test_nothing_is_written(sample):
    before = _snapshot(sample)
    g = colfile.to_zarr(sample)
    for name in ("1/Position", "1/ID", "2/Name"):
        g[name][:]
    assert _snapshot(sample) == before


def test_writes_are_refused(sample):
    g = colfile.to_zarr(sample)
    with pytest.raises(colfile.ReadOnlyError, match="zarr view of a colfile File is read-only"):
        g["1/ID"][0] = 5
    with pytest.raises(colfile.ReadOnlyError, match=r"cat/new/zarr.json"):
        g.create_array("new", shape=(3,), dtype="f8")
    with pytest.raises(colfile.ReadOnlyError):
        g.attrs["x"] = 1
    store = ColfileStore(sample)
    with pytest.raises(ValueError, match="read-only"):  # zarr's own check
        zarr.open_group(store, mode="a")
    with pytest.raises(colfile.ReadOnlyError):
        store.with_read_only(False)
    with colfile.File(sample) as f:
        assert f["1/ID"][0] == -50
        assert "new" not in f


def test_header_only_block_is_a_group_of_attributes(tmp_path):
    p = str(tmp_path / "hdr")
    with colfile.File(p, "w") as f:
        with f.create("Header", None) as h:
            h.attrs["Time"] = 0.5
        f.create("1/ID", "<i8", data=np.arange(4))
    g = colfile.to_zarr(p)
    assert isinstance(g["Header"], zarr.Group)
    assert dict(g["Header"].attrs) == {"Time": 0.5}


def test_xarray_open_zarr_gives_colfiles_values(sample):
    xr = pytest.importorskip("xarray")
    g = colfile.to_zarr(sample)
    ds = xr.open_zarr(g.store, group="1")
    with colfile.File(sample) as f:
        assert set(ds.data_vars) == {"ID", "Mass", "Position"}
        assert ds["Position"].dims == ("row", "Position_component")
        for name in ds.data_vars:
            _same(ds[name].values, f["1/" + name][:])
        assert ds["Position"].attrs == {"Unit": "Mpc/h", "Scale": [0.5, 2.0]}
    ds2 = xr.open_zarr(g.store, group="2")
    assert ds2.attrs == {"Redshift": 0.5}
    with colfile.File(sample) as f:
        _same(ds2["Flag"].values, f["2/Flag"][:])
        _same(ds2["Z"].values, f["2/Z"][:])
        _same(ds2["Name"].values, f["2/Name"][:])
    # and the same as the colfile xarray engine reads
    same = colfile.to_xarray(sample, group="1")
    for name in same.data_vars:
        _same(ds[name].values, same[name].values)


def test_columns_of_several_lengths_get_own_row_dims(tmp_path):
    xr = pytest.importorskip("xarray")
    p = str(tmp_path / "lens")
    with colfile.File(p, "w") as f:
        f.create("a", "<f4", data=np.arange(3, dtype="<f4"))
        f.create("b", "<f4", data=np.arange(5, dtype="<f4"))
    ds = xr.open_zarr(colfile.to_zarr(p).store)
    assert ds["a"].dims == ("row_3",) and ds["b"].dims == ("row_5",)


def test_store_from_a_group_and_bad_source(sample):
    with colfile.File(sample) as f:
        g = colfile.to_zarr(f["1/"])
        assert sorted(g.array_keys()) == ["ID", "Mass", "Position"]
        _same(g["ID"][:], f["1/ID"][:])
    with pytest.raises(TypeError, match="ColfileStore views a path"):
        ColfileStore(3.5)
    with pytest.raises(colfile.NoSuchFileError):
        colfile.to_zarr(os.path.join(sample, "nope"))
