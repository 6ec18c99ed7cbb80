"""Dataset.to_pandas, Selection.to_pandas and Dataset.to_dask_dataframe:
vector columns split into <name>_0, <name>_1, ...; values compared exactly
with colfile reads."""

from __future__ import annotations

import numpy as np
import pytest

import colfile

pd = pytest.importorskip("pandas")


@pytest.fixture()
def f(tmp_path):
    rng = np.random.default_rng(11)
    f = colfile.File(str(tmp_path / "cat"), "w")
    f.create("1/ID", data=np.arange(12, dtype="u8") * 7, blob_rows=[5, 0, 7])
    f.create("1/Position", data=rng.random((12, 3)), blob_rows=[2, 9, 1])
    f.create("1/Mass", data=rng.random(12).astype("f4"), nfile=3)
    f.create("1/Flag", data=rng.random(12) > 0.5)
    f.create("1/Name", data=np.array([b"a%d" % i for i in range(12)], dtype="S3"))
    f.flush()
    yield f
    f.close()


def test_dataset_to_pandas(f):
    ds = colfile.Dataset(f["1/"], ["ID", "Position", "Mass", "Flag", "Name"])
    df = ds.to_pandas()
    assert list(df.columns) == ["ID", "Position_0", "Position_1", "Position_2",
                                "Mass", "Flag", "Name"]
    assert df.index.name == "row"
    np.testing.assert_array_equal(df.index.to_numpy(), np.arange(12))
    pos = f["1/Position"][:]
    for j in range(3):
        col = df[f"Position_{j}"].to_numpy()
        assert col.dtype == np.float64
        np.testing.assert_array_equal(col, pos[:, j])
    for name in ("ID", "Mass", "Flag", "Name"):
        want = f["1/" + name][:]
        got = df[name].to_numpy()
        assert got.dtype == want.dtype or want.dtype.kind == "S"
        np.testing.assert_array_equal(got.astype(want.dtype), want)


def test_dataset_to_pandas_rows(f):
    ds = colfile.Dataset(f["1/"], ["ID", "Position"])
    df = ds.to_pandas(slice(3, 11, 2))
    np.testing.assert_array_equal(df.index.to_numpy(), [3, 5, 7, 9])
    np.testing.assert_array_equal(df["ID"].to_numpy(), f["1/ID"][3:11:2])
    np.testing.assert_array_equal(df["Position_2"].to_numpy(), f["1/Position"][3:11:2, 2])
    one = ds.to_pandas(4)
    assert len(one) == 1 and one.index[0] == 4
    assert one["Position_1"].iloc[0] == f["1/Position"][4, 1]
    # what the user tried: the DataFrame of a slice of rows
    np.testing.assert_array_equal(ds.to_pandas(slice(0, 5))["ID"].to_numpy(), f["1/ID"][:5])


def test_name_clash_refused(tmp_path):
    with colfile.File(str(tmp_path / "c"), "w") as f:
        f.create("v", data=np.zeros((3, 2)))
        f.create("v_1", data=np.ones(3))
        with pytest.raises(ValueError, match="'v_1'"):
            colfile.Dataset(f, ["v", "v_1"]).to_pandas()


def test_selection_to_pandas(f):
    ds = colfile.Dataset(f["1/"], ["ID", "Position", "Mass"])
    sel = ds.where("Position[0] > 0.4")
    df = sel.to_pandas(["ID", "Position"])
    rows = np.flatnonzero(f["1/Position"][:, 0] > 0.4)
    assert 0 < len(rows) < 12
    np.testing.assert_array_equal(df.index.to_numpy(), rows)
    np.testing.assert_array_equal(df["ID"].to_numpy(), f["1/ID"][:][rows])
    np.testing.assert_array_equal(df["Position_1"].to_numpy(), f["1/Position"][:][rows, 1])
    one = sel.to_pandas("Mass")
    np.testing.assert_array_equal(one["Mass"].to_numpy(), f["1/Mass"][:][rows])


def test_dask_dataframe(f):
    pytest.importorskip("dask.dataframe")
    ds = colfile.Dataset(f["1/"], ["ID", "Position", "Mass"])
    ddf = ds.to_dask_dataframe(chunks=4)
    assert ddf.npartitions == 3
    assert list(ddf.columns) == ["ID", "Position_0", "Position_1", "Position_2", "Mass"]
    assert ddf.known_divisions
    got = ddf.compute()
    want = ds.to_pandas()
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # a lazy filter computes on the partitions
    sub = ddf[ddf["Mass"] > 0.5].compute()
    pd.testing.assert_frame_equal(sub, want[want["Mass"] > 0.5], check_exact=True)
    # default chunks: blob boundaries where they can
    pd.testing.assert_frame_equal(ds.to_dask_dataframe().compute(), want, check_exact=True)


def test_dask_dataframe_in_other_processes(f):
    pytest.importorskip("dask.dataframe")
    f.close()  # a writable File does not pickle: the workers read what is committed
    with colfile.File(f.path) as r:
        ds = colfile.Dataset(r["1/"], ["ID", "Position"])
        got = ds.to_dask_dataframe(chunks=5).compute(scheduler="processes", num_workers=2)
        pd.testing.assert_frame_equal(got, ds.to_pandas(), check_exact=True)


def test_dask_frame_per_group(f):
    pytest.importorskip("dask.dataframe")
    from colfile.dataframes import dask_frames

    f.create("0/ID", data=np.arange(3, dtype="i4"))
    f.create("0/Short", data=np.arange(2.0))
    f.create("Top", data=np.arange(4.0))
    f.flush()
    frames = dask_frames(f, chunks=5)
    assert sorted(frames) == ["", "0[2]", "0[3]", "1"]
    np.testing.assert_array_equal(frames[""]["Top"].compute().to_numpy(), np.arange(4.0))
    np.testing.assert_array_equal(frames["0[3]"]["ID"].compute().to_numpy(), np.arange(3))
    want = colfile.Dataset(f["1/"], ["Flag", "ID", "Mass", "Name", "Position"]).to_pandas()
    pd.testing.assert_frame_equal(frames["1"].compute(), want, check_exact=True)
    assert frames["1"].npartitions == 3
    only = dask_frames(f["1/"])
    assert list(only) == [""]
