"""Histograms (colfile.histogram): equal to numpy.histogram / histogram2d on
the selected, NaN-free values of the full arrays; chunk skipping; dask."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import colfile
from colfile import histograms as H


@pytest.fixture
def slib(lib: Any) -> Any:
    try:
        lib.cf_column_chunk_stats
    except AttributeError:
        pytest.skip("this libcolfile has no chunk statistics yet")
    return lib


def ref1d(x: np.ndarray, mask: np.ndarray | None = None, w: np.ndarray | None = None,
          **kw: Any) -> tuple[np.ndarray, np.ndarray]:
    """numpy.histogram of the selected rows, NaNs removed."""
    if mask is not None:
        x = x[mask]
        w = None if w is None else w[mask]
    if x.dtype.kind == "f":
        keep = ~np.isnan(x)
        x = x[keep]
        w = None if w is None else w[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # bool -> uint8
        return np.histogram(x, weights=w, **kw)


def ref2d(x: np.ndarray, y: np.ndarray, mask: np.ndarray | None = None,
          w: np.ndarray | None = None, **kw: Any) -> tuple[np.ndarray, ...]:
    if mask is not None:
        x, y = x[mask], y[mask]
        w = None if w is None else w[mask]
    keep = np.ones(len(x), bool)
    for a in (x, y):
        if a.dtype.kind == "f":
            keep &= ~np.isnan(a)
    x, y = x[keep], y[keep]
    w = None if w is None else w[keep]
    return np.histogram2d(x, y, weights=w, **kw)


def same(got: tuple[Any, ...], want: tuple[Any, ...], exact: bool = True) -> None:
    assert len(got) == len(want)
    h, hw = got[0], want[0]
    assert h.dtype == hw.dtype and h.shape == hw.shape
    if exact:
        np.testing.assert_array_equal(h, hw)
    else:
        np.testing.assert_allclose(h, hw, rtol=1e-12)
    for e, ew in zip(got[1:], want[1:]):
        assert e.dtype == ew.dtype
        np.testing.assert_array_equal(e, ew)


@pytest.fixture
def table(path: str, slib: Any) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    n = 6000
    x = rng.normal(5, 2, n)
    x[rng.random(n) < 0.05] = np.nan
    data = {
        "x": x,
        "f4": rng.normal(0, 1, n).astype("f4"),
        "id": np.arange(n, dtype="i8"),
        "big": (2**53 + rng.integers(-1000, 1000, n)).astype("i8"),
        "u": rng.integers(0, 2**64 - 1, n, dtype=np.uint64),
        "pos": np.sort(rng.uniform(0, 100, (n, 3)), axis=0).astype(">f8"),
        "flag": rng.random(n) < 0.3,
        "w": rng.integers(0, 5, n).astype("f8"),
        "i2": rng.integers(-300, 300, n).astype("i2"),
    }
    kws = {"x": {"chunk_rows": 250, "nfile": 3}, "f4": {"chunk_rows": 512},
           "id": {"chunk_rows": 1000, "nfile": 2}, "big": {"chunk_rows": 300},
           "u": {"chunk_rows": 700}, "pos": {"chunk_rows": 400, "nfile": 2},
           "flag": {"chunk_rows": 2048}, "w": {"chunk_rows": 999},
           "i2": {"chunk_rows": 128, "blob_rows": [1000, 0, 5000]}}
    with colfile.File(path, "w") as f:
        for k, v in data.items():
            f.create(k, data=v, **kws[k])
    return data


MASKS = {
    None: lambda d: None,
    "id < 2500": lambda d: d["id"] < 2500,
    "(pos[0] > 30) & (pos[0] < 60)": lambda d: (d["pos"][:, 0] > 30) & (d["pos"][:, 0] < 60),
    "(x > 5) | (id >= 5900)": lambda d: (d["x"] > 5) | (d["id"] >= 5900),
    "id > 10000": lambda d: d["id"] > 10000,
    "~(flag == 1)": lambda d: ~(d["flag"].view(np.uint8) == 1),
}


@pytest.mark.parametrize("where", list(MASKS))
@pytest.mark.parametrize("name", ["x", "f4", "id", "big", "u", "pos1", "flag", "i2"])
def test_histogram_equals_numpy(path: str, table: dict[str, np.ndarray], where: Any,
                                name: str) -> None:
    mask = MASKS[where](table)
    with colfile.File(path) as f:
        if name.startswith("pos"):
            fld = f["pos"].field(int(name[3]))
            vals = table["pos"][:, int(name[3])]
        else:
            fld = f[name].field()
            vals = table[name]
        for kw in ({"bins": 10}, {"bins": 7, "range": (-1, 4)}, {"bins": 1},
                   {"bins": [-10, 0, 0.5, 3, 1e3, 1e20]}, {"bins": 3, "range": (2, 2)}):
            got = colfile.histogram(fld, where=where, piece_bytes=4096, **kw)
            same(got, ref1d(vals, mask, **kw))
        # weights: integer-valued sums are exact
        got = colfile.histogram(fld, bins=6, where=where, weights=f["w"])
        same(got, ref1d(vals, mask, table["w"], bins=6))


def test_range_from_statistics(path: str, table: dict[str, np.ndarray]) -> None:
    """Without where, range=None comes from the statistics: one pass."""
    with colfile.File(path) as f:
        for name in ("x", "f4", "id", "i2", "flag"):
            got = colfile.histogram(f[name], bins=13, return_report=True)
            same(got[:2], ref1d(table[name], bins=13))
            rep = got[2]
            assert rep.bytes_read == f[name].size * f[name].itemsize, name
        # integers beyond 2**53: min/max are rounded, so a range pass is made
        got = colfile.histogram(f["big"], bins=13, return_report=True)
        same(got[:2], ref1d(table["big"], bins=13))
        assert got[2].bytes_read == 2 * f["big"].size * 8
        # with where: a range pass over the selected rows
        got = colfile.histogram(f["x"], bins=5, where="id < 3000", return_report=True)
        same(got[:2], ref1d(table["x"], table["id"] < 3000, bins=5))


def test_pushdown(path: str, table: dict[str, np.ndarray]) -> None:
    with colfile.File(path) as f:
        h, e, rep = colfile.histogram(f["x"], bins=4, range=(0, 10), where="id < 1000",
                                      return_report=True)
        same((h, e), ref1d(table["x"], table["id"] < 1000, bins=4, range=(0, 10)))
        # id's chunks are 1000 rows: one ALL cell group, the rest NONE
        assert rep.scanned == 0 and rep.all_match == 4 and rep.skipped == rep.chunks - 4
        assert rep.bytes_read == 1000 * 8  # x only; id was never read
        assert rep.selected == int((~np.isnan(table["x"][:1000])).sum())
        assert rep.columns == ("id", "x") and rep.kind == "histogram"
        assert str(rep).startswith("histogram over id, x: ")
        h, e, rep = colfile.histogram(f["x"], bins=4, range=(0, 10), where="id > 99999",
                                      return_report=True)
        assert h.sum() == 0 and rep.bytes_read == 0 and rep.selected == 0


def test_nan_and_inf(path: str, slib: Any) -> None:
    with colfile.File(path, "w") as f:
        f.create("nan", data=np.full(10, np.nan), chunk_rows=3)
        f.create("inf", data=np.array([1.0, np.inf, 2.0, np.nan]), chunk_rows=2)
        f.create("e", "f8", size=0)
    with colfile.File(path) as f:
        # nothing left: numpy's range for no values is [0, 1]
        same(colfile.histogram(f["nan"], bins=2), np.histogram(np.zeros(0), bins=2))
        same(colfile.histogram(f["e"], bins=3), np.histogram(np.zeros(0), bins=3))
        same(colfile.histogram(f["e"], bins=[0, 1]), np.histogram(np.zeros(0), bins=[0, 1]))
        with pytest.raises(ValueError, match="autodetected range of .* is not finite"):
            colfile.histogram(f["inf"])
        same(colfile.histogram(f["inf"], bins=2, range=(0, 3)),
             np.histogram(np.array([1.0, np.inf, 2.0]), bins=2, range=(0, 3)))
        with pytest.raises(ValueError, match="max must be larger"):
            colfile.histogram(f["inf"], range=(3, 0))
        with pytest.raises(ValueError):
            colfile.histogram(f["inf"], range=(0, np.inf))
        with pytest.raises(ValueError, match="must be positive"):
            colfile.histogram(f["inf"], bins=0)
        with pytest.raises(ValueError):
            colfile.histogram(f["inf"], bins=[3, 1, 2])
        with pytest.raises(ValueError, match="named bin rules"):
            colfile.histogram(f["inf"], bins="auto")
        with pytest.raises(TypeError, match="Field"):
            colfile.histogram("inf")
        same(colfile.histogram2d(f["nan"], f["nan"], bins=2),
             np.histogram2d(np.zeros(0), np.zeros(0), bins=2))


@pytest.mark.parametrize("where", [None, "id < 2500", "(x > 5) | (id >= 5900)"])
def test_histogram2d_equals_numpy(path: str, table: dict[str, np.ndarray], where: Any) -> None:
    mask = MASKS[where](table)
    with colfile.File(path) as f:
        pos = f["pos"]
        cases = [
            (pos.field(0), pos.field(1), table["pos"][:, 0], table["pos"][:, 1]),
            (f["x"], pos.field(2), table["x"], table["pos"][:, 2]),
            (f["id"], f["f4"], table["id"], table["f4"]),
            (f["i2"], f["flag"], table["i2"], table["flag"]),
            (f["big"], f["u"], table["big"], table["u"]),
        ]
        for fx, fy, x, y in cases:
            for kw in ({"bins": 4}, {"bins": [3, 5]}, {"bins": [3, [0, 1, 50]]},
                       {"bins": [0, 1, 2, 60, 100]}, {"bins": 2, "range": [[0, 50], None]},
                       {"bins": 3, "range": [(1, 1), (0, 9)]}):
                got = colfile.histogram2d(fx, fy, where=where, piece_bytes=8192, **kw)
                same(got, ref2d(x, y, mask, **kw))
            got = colfile.histogram2d(fx, fy, bins=3, where=where, weights=f["w"])
            same(got, ref2d(x, y, mask, table["w"], bins=3))


def test_float_weights(path: str, table: dict[str, np.ndarray]) -> None:
    with colfile.File(path) as f:
        got = colfile.histogram(f["f4"], bins=8, where="id < 4000", weights=f["x"])
        # NaN weights propagate as in numpy; compare where finite
        want = ref1d(table["f4"], table["id"] < 4000, table["x"], bins=8)
        same(got, want, exact=False)
        got = colfile.histogram(f["x"], bins=8, weights=f["f4"])
        same(got, ref1d(table["x"], None, table["f4"], bins=8), exact=False)
        assert got[0].dtype == np.float32


@pytest.mark.parametrize("where", [None, "(pos[0] > 30) & (pos[0] < 60)"])
def test_dask_histogram(path: str, table: dict[str, np.ndarray], where: Any,
                        monkeypatch: Any) -> None:
    pytest.importorskip("dask")
    import pickle

    import dask

    monkeypatch.setattr(H, "GROUP_BYTES", 40_000)  # many tasks
    with colfile.File(path) as f:
        serial = colfile.histogram(f["x"], bins=9, where=where)
        h, e, rep = colfile.histogram(f["x"], bins=9, where=where, dask=True,
                                      return_report=True)
        assert rep.selected is None and rep.chunks > 0
        assert len(h.dask) > 3
        pickle.loads(pickle.dumps(dict(h.__dask_graph__())))  # the graph pickles
        np.testing.assert_array_equal(e, serial[1])
        np.testing.assert_array_equal(h.compute(scheduler="sync"), serial[0])
        np.testing.assert_array_equal(h.compute(scheduler="threads"), serial[0])
        serial2 = colfile.histogram2d(f["pos"].field(0), f["x"], bins=5, where=where,
                                      weights=f["w"])
        got = colfile.histogram2d(f["pos"].field(0), f["x"], bins=5, where=where,
                                  weights=f["w"], dask=True)
        np.testing.assert_array_equal(dask.compute(got[0])[0], serial2[0])
        for a, b in zip(got[1:], serial2[1:]):
            np.testing.assert_array_equal(a, b)
        # nothing selected: no task at all
        h, _ = colfile.histogram(f["x"], bins=3, range=(0, 1), where="id < 0", dask=True)
        assert h.compute().tolist() == [0, 0, 0]


def test_dask_processes(path: str, table: dict[str, np.ndarray]) -> None:
    pytest.importorskip("dask")
    with colfile.File(path) as f:
        serial = colfile.histogram(f["pos"].field(1), bins=4, where="x > 6")
        h, _ = colfile.histogram(f["pos"].field(1), bins=4, where="x > 6", dask=True)
    # computed after the File was closed, in other processes: opened by path
    np.testing.assert_array_equal(h.compute(scheduler="processes", num_workers=2), serial[0])


def test_same_column_read_once(path: str, table: dict[str, np.ndarray]) -> None:
    with colfile.File(path) as f:
        pos = f["pos"]
        _, _, rep = colfile.histogram(pos.field(0), bins=3, range=(0, 100),
                                      where=pos.field(1) < 50, return_report=True)
        assert rep.columns == ("pos",)
        assert rep.bytes_read <= rep.bytes_total
