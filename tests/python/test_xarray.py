"""The xarray backend (colfile.xarray_backend): xr.open_dataset(path,
engine="colfile"), open_datatree, chunks on blob boundaries, laziness,
writing a Dataset into a group; values compared exactly with colfile reads."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import sys

import numpy as np
import pytest

import colfile

xr = pytest.importorskip("xarray")
from colfile import xarray_backend  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module", autouse=True)
def engine_registered(tmp_path_factory):
    """The entry point pyproject.toml declares, made visible to
    importlib.metadata when colfile runs from the source tree (an installed
    colfile has it in its own metadata)."""
    with open(os.path.join(ROOT, "pyproject.toml")) as fh:
        text = fh.read()
    section = re.search(r'^\[project\.entry-points\."xarray\.backends"\]\n((?:[^\[\n].*\n)*)',
                        text, re.M)
    assert section, "pyproject.toml declares no xarray.backends entry point"
    eps = dict(re.findall(r'^(\w+) = "([^"]+)"', section.group(1), re.M))
    assert eps == {"colfile": "colfile.xarray_backend:ColfileBackendEntrypoint"}
    have = {e.name: e.value for e in importlib.metadata.entry_points(group="xarray.backends")}
    added = None
    if have.get("colfile") != eps["colfile"]:
        added = str(tmp_path_factory.mktemp("eps"))
        info = os.path.join(added, "colfile_source_tree-0.dist-info")
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w") as fh:
            fh.write("Metadata-Version: 2.1\nName: colfile-source-tree\nVersion: 0\n")
        with open(os.path.join(info, "entry_points.txt"), "w") as fh:
            fh.write("[xarray.backends]\n")
            fh.writelines(f"{k} = {v}\n" for k, v in eps.items())
        sys.path.append(added)
        importlib.invalidate_caches()
    from xarray.backends import plugins

    plugins.list_engines.cache_clear()
    yield
    if added is not None:
        sys.path.remove(added)
        importlib.invalidate_caches()
        plugins.list_engines.cache_clear()


@pytest.fixture()
def path(tmp_path):
    p = str(tmp_path / "snap")
    rng = np.random.default_rng(7)
    with colfile.File(p, "w") as f:
        f.attrs["BoxSize"] = 250.0
        f.attrs["Name"] = "test run"
        g = f.require_group("1")
        g.attrs["Kind"] = "dark matter"
        # uneven blobs, different for each column
        g.create("Position", data=rng.random((10, 3)), blob_rows=[4, 0, 5, 1])
        g.create("Mass", data=rng.random(10).astype("f4"), blob_rows=[3, 7])
        g.create("ID", data=np.arange(10, dtype="u8") * 3)
        g["Mass"].attrs["Unit"] = "1e10 Msun/h"
        g["Position"].attrs["Scale"] = np.array([1.0, 2.0, 3.0])
        f.create("0/ID", data=np.arange(4, dtype="i4"))
        f.create("0/Vel", data=rng.random((7, 2)).astype("f4"))
        f.create("1/sub/Flag", data=np.array([True, False]))
    return p


def test_open_dataset_values_dims_attrs(path):
    with xr.open_dataset(path, engine="colfile", group="1/") as ds, colfile.File(path) as f:
        assert set(ds.data_vars) == {"Position", "Mass", "ID"}
        assert ds["Position"].dims == ("row", "Position_component")
        assert ds["Mass"].dims == ("row",) and ds.sizes["row"] == 10
        for name in ("Position", "Mass", "ID"):
            want = f["1/" + name][:]
            got = ds[name].values
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        assert ds.attrs == {"Kind": "dark matter"}
        assert ds["Mass"].attrs == {"Unit": "1e10 Msun/h"}
        np.testing.assert_array_equal(ds["Position"].attrs["Scale"], [1.0, 2.0, 3.0])
        assert ds["Position"].encoding["blob_rows"] == (4, 0, 5, 1)


def test_group_spellings_and_root(path):
    with colfile.File(path) as f:
        want = f["1/ID"][:]
    for g in ("1", "/1", "1/", "/1/"):
        with xr.open_dataset(path, engine="colfile", group=g) as ds:
            np.testing.assert_array_equal(ds["ID"].values, want)
    with xr.open_dataset(path, engine="colfile") as ds:
        # the File's own attributes; no column lies directly in it
        assert ds.attrs["BoxSize"] == 250.0 and ds.attrs["Name"] == "test run"
        assert len(ds.data_vars) == 0


def test_lengths_differ_give_one_dim_each(path):
    with xr.open_dataset(path, engine="colfile", group="0") as ds, colfile.File(path) as f:
        assert ds["ID"].dims == ("row_4",)
        assert ds["Vel"].dims == ("row_7", "Vel_component")
        np.testing.assert_array_equal(ds["Vel"].values, f["0/Vel"][:])


def test_lazy_indexing_reads_only_what_is_asked(path):
    with colfile.File(path) as f:
        pos = f["1/Position"][:]
    ds = xr.open_dataset(path, engine="colfile", group="1/")
    try:
        var = ds["Position"].variable
        assert not isinstance(var._data, np.ndarray)
        assert not var._in_memory
        # outer indexing: rows by an unsorted array, a component by int
        got = ds["Position"].isel(row=[7, 2, 9], Position_component=1).values
        np.testing.assert_array_equal(got, pos[[7, 2, 9], 1])
        np.testing.assert_array_equal(ds["Position"][3].values, pos[3])
        np.testing.assert_array_equal(ds["Position"][8:1:-3, ::2].values, pos[8:1:-3, ::2])
        np.testing.assert_array_equal(ds["Position"].isel(row=[]).values, pos[[]])
        assert not ds["Position"].variable._in_memory
    finally:
        ds.close()


def test_nothing_read_before_values(path):
    """Rows rewritten on disk after opening, before .values, are what
    .values gives: the backend read nothing when the Dataset was opened."""
    ds = xr.open_dataset(path, engine="colfile", group="1/")
    try:
        with colfile.File(path, "r+") as f:
            f["1/Mass"][:] = np.arange(10, dtype="f4")
        np.testing.assert_array_equal(ds["Mass"].values, np.arange(10, dtype="f4"))
    finally:
        ds.close()


def test_reads_scale_with_rows_asked(tmp_path):
    """Bytes read by this process (/proc/self/io rchar): opening reads
    metadata only, one row reads far less than the column."""
    if not os.path.exists("/proc/self/io"):
        pytest.skip("no /proc/self/io")

    def rchar():
        with open("/proc/self/io") as fh:
            return int(next(line for line in fh if line.startswith("rchar")).split()[1])

    p = str(tmp_path / "big")
    data = np.arange(2_000_000, dtype="f8")
    with colfile.File(p, "w") as f:
        f.create("x", data=data, nfile=4)
    r0 = rchar()
    ds = xr.open_dataset(p, engine="colfile")
    try:
        r1 = rchar()
        assert float(ds["x"][1234567]) == 1234567.0
        r2 = rchar()
        np.testing.assert_array_equal(ds["x"].values, data)
        r3 = rchar()
    finally:
        ds.close()
    assert r1 - r0 < 1_000_000
    assert r2 - r1 < 1_000_000
    assert r3 - r2 >= data.nbytes


def test_chunks_follow_blobs(path):
    pytest.importorskip("dask")
    with colfile.File(path) as f:
        pos, mass = f["1/Position"][:], f["1/Mass"][:]
    with xr.open_dataset(path, engine="colfile", group="1/", chunks={}) as ds:
        assert ds["Position"].chunks == ((4, 5, 1), (3,))
        assert ds["Mass"].chunks == ((3, 7),)
        np.testing.assert_array_equal(ds["Position"].values, pos)
        np.testing.assert_array_equal(ds["Mass"].compute().values, mass)
    with pytest.warns(UserWarning, match="separate the stored chunks"):
        ds = xr.open_dataset(path, engine="colfile", group="1/", chunks={"row": 5})
    with ds:
        assert ds["Mass"].chunks == ((5, 5),)
        np.testing.assert_array_equal(ds["Mass"].values, mass)


def test_to_xarray(path):
    with colfile.File(path) as f:
        ds = colfile.to_xarray(f, "1/")
        np.testing.assert_array_equal(ds["ID"].values, f["1/ID"][:])
        ds2 = colfile.to_xarray(f["1/"])
        np.testing.assert_array_equal(ds2["Position"].values, f["1/Position"][:])
        assert not f.closed
    ds3 = colfile.to_xarray(path, group="0/")
    with colfile.File(path) as f:
        np.testing.assert_array_equal(ds3["Vel"].values, f["0/Vel"][:])
    ds3.close()


def test_datatree(path):
    with xr.open_datatree(path, engine="colfile") as tree, colfile.File(path) as f:
        assert tree.attrs["BoxSize"] == 250.0
        assert set(tree.children) == {"0", "1"}
        assert tree["1"].attrs == {"Kind": "dark matter"}
        np.testing.assert_array_equal(tree["1/Position"].values, f["1/Position"][:])
        np.testing.assert_array_equal(tree["1/sub/Flag"].values, f["1/sub/Flag"][:])
        np.testing.assert_array_equal(tree["0/Vel"].values, f["0/Vel"][:])
        assert tree["1/sub/Flag"].dims == ("1.sub.row",)
        assert tree["1/Position"].dims == ("1.row", "1.Position_component")
        assert tree["0/Vel"].dims == ("0.row_7", "0.Vel_component")


def test_missing_group_and_bad_input(path, tmp_path):
    with pytest.raises(colfile.ColumnNotFoundError, match="no such group"):
        xr.open_dataset(path, engine="colfile", group="nope/")
    with pytest.raises(colfile.NoSuchFileError):
        xr.open_dataset(str(tmp_path / "absent"), engine="colfile")
    with pytest.raises(TypeError, match="colfile engine opens a path"):
        xr.open_dataset(42, engine="colfile")
    with pytest.raises(ValueError, match="unrecognized engine"):
        xr.open_dataset(path, engine="colfile-nonexistent")


def test_guess_can_open(path, tmp_path):
    ep = xarray_backend.ColfileBackendEntrypoint()
    assert ep.guess_can_open(path)
    assert ep.guess_can_open(os.path.join(path, "1"))
    assert not ep.guess_can_open(str(tmp_path))
    assert not ep.guess_can_open(str(tmp_path / "nothing"))


def test_write_dataset_roundtrip(tmp_path):
    rng = np.random.default_rng(3)
    src = xr.Dataset(
        {"pos": (("row", "xyz"), rng.random((6, 3))),
         "mass": ("row", rng.random(6).astype("f4"), {"Unit": "Msun"})},
        attrs={"Redshift": 0.5})
    p = str(tmp_path / "w")
    with colfile.File(p, "w") as f:
        xarray_backend.write_dataset(src, f, "parts", nfile=2)
        with pytest.raises(ValueError, match="group exists"):
            xarray_backend.write_dataset(src, f, "parts")
    with colfile.File(p) as f:
        np.testing.assert_array_equal(f["parts/pos"][:], src["pos"].values)
        np.testing.assert_array_equal(f["parts/mass"][:], src["mass"].values)
        assert f["parts/mass"].nfile == 2
        assert f["parts/mass"].attrs["Unit"] == "Msun"
        assert f["parts/"].attrs["Redshift"] == 0.5
    with xr.open_dataset(p, engine="colfile", group="parts") as back:
        np.testing.assert_array_equal(back["pos"].values, src["pos"].values)
        assert back.attrs == {"Redshift": 0.5}
    bad = xr.Dataset({"cube": (("a", "b", "c"), np.zeros((2, 2, 2)))})
    with colfile.File(p, "a") as f, pytest.raises(ValueError, match="3 dimensions"):
        xarray_backend.write_dataset(bad, f, "cube")


def test_chunks_compute_in_other_processes(path):
    """The dask graph pickles: chunks read in worker processes."""
    pytest.importorskip("dask")
    with colfile.File(path) as f:
        pos = f["1/Position"][:]
    with xr.open_dataset(path, engine="colfile", group="1/", chunks={}) as ds:
        got = ds["Position"].compute(scheduler="processes", num_workers=2)
        np.testing.assert_array_equal(got.values, pos)


def test_test_environment_installs_the_libraries():
    """./run test installs the test extra: xarray, pandas and dask.dataframe
    are really there when these tests run in CI (not skipped)."""
    with open(os.path.join(ROOT, "pyproject.toml")) as fh:
        text = fh.read()
    test = re.search(r"^test = \[(.*)\]$", text, re.M).group(1)
    for req in ('"xarray>=', '"pandas>=', '"dask[dataframe]>='):
        assert req in test
    assert re.search(r'^xarray = \["xarray>=', text, re.M)
    assert re.search(r'^dask = \["dask\[array,dataframe\]>=', text, re.M)


def test_file_written_by_bigfile(tmp_path):
    """A File bigfile 0.1.52 wrote (no colfile metadata), with a Header
    block of attributes, as bigfile writers keep them."""
    bigfile = pytest.importorskip("bigfile")
    p = str(tmp_path / "bf")
    pos = np.arange(30.0).reshape(10, 3) / 7
    ids = np.arange(10, dtype="i8") * 5
    with bigfile.File(p, create=True) as f:
        with f.create("1/Position", ("f8", 3), 10, Nfile=3) as b:
            b.write(0, pos)
            b.attrs["Unit"] = "kpc"
        f.create_from_array("1/ID", ids, Nfile=2)
        with f.create("Header") as h:
            h.attrs["Time"] = 0.5
    with xr.open_dataset(p, engine="colfile", group="1", chunks={}) as ds:
        np.testing.assert_array_equal(ds["Position"].values, pos)
        np.testing.assert_array_equal(ds["ID"].values, ids)
        assert ds["Position"].chunks == ((3, 3, 4), (3,))
        assert ds["Position"].attrs == {"Unit": "kpc"}
    with xr.open_dataset(p, engine="colfile", group="Header") as hd:
        assert len(hd.data_vars) == 0 and hd.attrs == {"Time": 0.5}
    with xr.open_datatree(p, engine="colfile") as tree:
        assert set(tree.children) == {"1", "Header"}
        assert tree["Header"].attrs == {"Time": 0.5}
        np.testing.assert_array_equal(tree["1/ID"].values, ids)


def test_engine_guessed_and_drop_variables(path):
    with colfile.File(path) as f:
        mass = f["1/Mass"][:]
    with xr.open_dataset(path, group="1/", drop_variables=["Position"]) as ds:
        assert set(ds.data_vars) == {"Mass", "ID"}
        np.testing.assert_array_equal(ds["Mass"].values, mass)


def test_auto_chunks_join_whole_blobs(tmp_path):
    dask = pytest.importorskip("dask")
    p = str(tmp_path / "many")
    data = np.arange(100_000, dtype="f8")
    blobs = [7000] * 10 + [30_000]
    with colfile.File(p, "w") as f:
        f.create("y", data=data, blob_rows=blobs)
    with dask.config.set({"array.chunk-size": "200KiB"}):
        with xr.open_dataset(p, engine="colfile", chunks="auto") as ds:
            chunks = ds["y"].chunks[0]
            np.testing.assert_array_equal(ds["y"].values, data)
    assert len(chunks) > 1
    edges = set(np.cumsum(blobs).tolist())
    assert set(np.cumsum(chunks).tolist()) <= edges
