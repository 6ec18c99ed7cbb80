"""Dataset: equal-length columns as one structured array."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import colfile

N = 30
RNG = np.random.default_rng(3)
KEYS: list[Any] = [0, -1, 7, slice(None), slice(3, 20, 4), slice(None, None, -5), [5, 1, 5],
                   RNG.integers(0, N, (2, 3)), RNG.random(N) < 0.4, [], Ellipsis,
                   slice(40, 50)]


@pytest.fixture
def ds_ref(wfile: colfile.File) -> Any:
    ref = np.zeros(N, dtype=[("id", "<i8"), ("pos", ">f4", (3,)), ("flag", "?"), ("tag", "S3")])
    ref["id"] = np.arange(N)
    ref["pos"] = RNG.standard_normal((N, 3))
    ref["flag"] = RNG.random(N) < 0.5
    ref["tag"] = [b"a%d" % i for i in range(N)]
    g = wfile.require_group("cat")
    for name in ref.dtype.names:
        g.create(name, data=ref[name], nfile=3)
    return colfile.Dataset(g, ["id", "pos", "flag", "tag"]), ref


def test_description(ds_ref: Any) -> None:
    ds, ref = ds_ref
    assert ds.dtype == ref.dtype and len(ds) == N and ds.shape == (N,)
    assert ds.columns == ["id", "pos", "flag", "tag"]
    assert isinstance(ds["pos"], colfile.Column) and ds["pos"].nmemb == 3
    sub = ds[["tag", "id"]]
    assert isinstance(sub, colfile.Dataset) and sub.dtype.names == ("tag", "id")
    np.testing.assert_array_equal(np.asarray(sub), ref[["tag", "id"]])
    assert "Dataset" in repr(ds)


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_read(ds_ref: Any, key: Any) -> None:
    ds, ref = ds_ref
    got, want = ds[key], ref[key]
    assert type(got) is type(want)
    assert np.shape(got) == np.shape(want) and got.dtype == want.dtype
    assert got.tobytes() == np.asarray(want).tobytes()


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_write(ds_ref: Any, key: Any) -> None:
    ds, ref = ds_ref
    value = np.zeros(np.shape(ref[key]), ref.dtype)
    value["id"] = RNG.integers(0, 1000, value.shape)
    value["pos"] = 1.5
    value["flag"] = True
    value["tag"] = b"zz"
    ref[key] = value
    ds[key] = value
    np.testing.assert_array_equal(ds[:], ref)


def test_write_from_mapping_and_casts(ds_ref: Any) -> None:
    ds, ref = ds_ref
    ds[2:4] = {"id": [-1.0, -2.0], "pos": 0, "flag": [0, 1], "tag": np.array(["x", "é"])}
    np.testing.assert_array_equal(ds["id"][2:4], [-1, -2])
    assert ds[3]["tag"] == "é".encode()[:3] and ds[3]["flag"]
    with pytest.raises(ValueError):
        ds[0] = {"id": 1}


def test_append(ds_ref: Any) -> None:
    ds, ref = ds_ref
    more = ref[:4].copy()
    ds.append(more, nfile=2)
    assert len(ds) == N + 4 and ds["id"].blob_rows[-2:] == [2, 2]
    np.testing.assert_array_equal(ds[N:], more)
    with pytest.raises(ValueError):
        ds.append({"id": [1], "pos": np.zeros((2, 3)), "flag": [1], "tag": [b""]})


def test_unequal_lengths(wfile: colfile.File) -> None:
    wfile.create("a", "f8", size=3)
    wfile.create("b", "f8", size=4)
    with pytest.raises(ValueError, match="equal lengths"):
        colfile.Dataset(wfile, ["a", "b"])
    with pytest.raises(KeyError):
        colfile.Dataset(wfile, ["a", "nope"])
    with pytest.raises(ValueError):
        colfile.Dataset(wfile, [])
    ds = colfile.Dataset(wfile, "a")
    assert ds.columns == ["a"]


def test_index_errors(ds_ref: Any) -> None:
    ds, _ = ds_ref
    with pytest.raises(IndexError):
        ds[N]
    with pytest.raises(IndexError):
        ds[0, 1]
    with pytest.raises(IndexError):
        ds[[0, N]] = ds[[0, 1]]
