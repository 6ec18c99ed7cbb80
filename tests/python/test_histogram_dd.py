"""Histograms with density= and weights=, and histogramdd: compared with
numpy.histogram, numpy.histogram2d and numpy.histogramdd on the selected,
NaN-free values of random Files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colfile

# the many small Files of the property tests go to memory where it exists
# (their fsyncs cost the shared disk nothing there)
FAST = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def snapshot(path: Path, seed: int, n: int, nan: bool, chunk: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    data = {
        "pos": np.sort(rng.uniform(0, 100, (n, 3)), axis=0),
        "m": rng.exponential(2.0, n),
        "id": np.arange(n, dtype="i8"),
        "w": rng.integers(0, 5, n).astype("f8"),
        "k": rng.integers(-3, 9, n).astype("i4"),
    }
    if nan:
        data["m"][rng.random(n) < 0.1] = np.nan
    with colfile.File(path, "w") as f:
        for name, arr in data.items():
            f.create(name, data=arr, chunk_rows=chunk)
    return data


settings_ = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])
bins_1d = st.one_of(st.integers(1, 12),
                    st.lists(st.floats(-1, 101, allow_nan=False), min_size=2, max_size=6)
                    .map(sorted))


def close(got: np.ndarray, want: np.ndarray, exact: bool) -> None:
    if exact:
        np.testing.assert_array_equal(got, want)
    else:  # sums of weights: numpy's up to the order of summation
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@settings_
@given(seed=st.integers(0, 999), n=st.integers(0, 600), nan=st.booleans(),
       chunk=st.integers(1, 100), bins=bins_1d, rng_given=st.booleans(),
       density=st.booleans(), weighted=st.booleans(), cut=st.integers(-1, 600))
def test_histogram_1d(lib: Any, seed: int, n: int, nan: bool, chunk: int, bins: Any,
                      rng_given: bool, density: bool, weighted: bool, cut: int) -> None:
    with tempfile.TemporaryDirectory(dir=FAST) as d:
        data = snapshot(Path(d) / "f", seed, n, nan, chunk)
        keep = data["id"] < cut
        x = data["m"][keep]
        w = data["w"][keep]
        good = ~np.isnan(x)
        x, w = x[good], w[good]
        rng = (0.0, 10.0) if rng_given else None
        want_args = dict(bins=bins, range=rng, density=density, weights=w if weighted else None)
        with colfile.File(Path(d) / "f") as f:
            kw = dict(bins=bins, range=rng, density=density, where=f"id < {cut}",
                      weights=f["w"] if weighted else None, piece_bytes=256)
            try:
                with np.errstate(all="ignore"):
                    want = np.histogram(x, **want_args)
            except ValueError as exc:
                with pytest.raises(ValueError):
                    colfile.histogram(f["m"], **kw)
                return
            with np.errstate(all="ignore"):
                got = colfile.histogram(f["m"], **kw)
            close(got[0], want[0], exact=not density)
            np.testing.assert_array_equal(got[1], want[1])
            assert got[0].dtype == want[0].dtype


@settings_
@given(seed=st.integers(0, 999), n=st.integers(1, 500), chunk=st.integers(1, 90),
       bins=st.one_of(st.integers(1, 6), st.tuples(st.integers(1, 5), st.integers(1, 5)),
                      st.tuples(st.integers(1, 4), st.just([0.0, 20.0, 50.0, 100.0]))),
       density=st.booleans(), weighted=st.booleans(), cut=st.integers(0, 500),
       ranged=st.booleans())
def test_histogram2d(lib: Any, seed: int, n: int, chunk: int, bins: Any, density: bool,
                     weighted: bool, cut: int, ranged: bool) -> None:
    with tempfile.TemporaryDirectory(dir=FAST) as d:
        data = snapshot(Path(d) / "f", seed, n, False, chunk)
        keep = data["k"] * 7 % 5 < 3  # arithmetic in where=
        keep &= data["id"] >= cut
        px, py = data["pos"][keep, 0], data["k"][keep]
        w = data["w"][keep] if weighted else None
        rng = [(0, 100), None] if ranged else None
        with colfile.File(Path(d) / "f") as f:
            kw = dict(bins=bins, range=rng, density=density, piece_bytes=300,
                      where=f"(k * 7 % 5 < 3) & (id >= {cut})",
                      weights=f["w"] if weighted else None)
            with np.errstate(all="ignore"):
                want = np.histogram2d(px, py, bins=list(bins) if isinstance(bins, tuple)
                                      else bins, range=rng, density=density, weights=w)
                got = colfile.histogram2d(f["pos"].field(0), f["k"], **kw)
            close(got[0], want[0], exact=not density)
            np.testing.assert_array_equal(got[1], want[1])
            np.testing.assert_array_equal(got[2], want[2])


@settings_
@given(seed=st.integers(0, 999), n=st.integers(1, 400), chunk=st.integers(1, 90),
       dims=st.integers(1, 4), bins=st.integers(1, 5), density=st.booleans(),
       weighted=st.booleans(), cut=st.floats(0, 100))
def test_histogramdd(lib: Any, seed: int, n: int, chunk: int, dims: int, bins: int,
                     density: bool, weighted: bool, cut: float) -> None:
    with tempfile.TemporaryDirectory(dir=FAST) as d:
        data = snapshot(Path(d) / "f", seed, n, False, chunk)
        names = [("pos", 0), ("pos", 2), ("k", None), ("m", None)][:dims]
        keep = data["pos"][:, 1] ** 2 < cut ** 2
        cols = [data[c][keep] if j is None else data[c][keep, j] for c, j in names]
        w = data["w"][keep] if weighted else None
        with colfile.File(Path(d) / "f") as f:
            fields = [f[c].field(j) for c, j in names]
            with np.errstate(all="ignore"):
                want = np.histogramdd(np.stack(cols, axis=1) if cols[0].size else
                                      np.zeros((0, dims)), bins=bins, density=density,
                                      weights=w)
                got = colfile.histogramdd(fields, bins=bins, density=density,
                                          where=f"pos[1] ** 2 < {cut!r} ** 2",
                                          weights=f["w"] if weighted else None,
                                          piece_bytes=200)
            close(got[0], want[0], exact=not density)
            for a, b in zip(got[1], want[1]):
                np.testing.assert_array_equal(a, b)


def test_histogramdd_forms(path: str) -> None:
    rng = np.random.default_rng(3)
    pos = rng.uniform(0, 1, (500, 3))
    with colfile.File(path, "w") as f:
        p = f.create("pos", data=pos, chunk_rows=64)
        f.flush()
        # a vector column is its components; bins per dimension, edges, ranges
        H, edges = colfile.histogramdd(p, bins=[2, [0, 0.3, 1], 4],
                                       range=[(0, 1), None, (0.2, 0.9)])
        want = np.histogramdd(pos, bins=[2, [0, 0.3, 1], 4], range=[(0, 1), None, (0.2, 0.9)])
        np.testing.assert_array_equal(H, want[0])
        hd, _ = colfile.histogramdd(p, bins=3, dask=True, density=True)
        np.testing.assert_allclose(hd.compute(), np.histogramdd(pos, 3, density=True)[0],
                                   rtol=1e-12)
        h1, e1 = colfile.histogram(p.field(0), bins=5, density=True, dask=True)
        np.testing.assert_allclose(h1.compute(), np.histogram(pos[:, 0], 5, density=True)[0],
                                   rtol=1e-12)
        with pytest.raises(ValueError, match="dimension of bins"):
            colfile.histogramdd(p, bins=[2, 2])
        with pytest.raises(ValueError, match="one \\(min, max\\)"):
            colfile.histogramdd(p, range=[(0, 1)])
        with pytest.raises(ValueError, match="monotonically"):
            colfile.histogramdd(p, bins=[2, [1, 0], 2])
        with pytest.raises(ValueError, match="at least one"):
            colfile.histogramdd([])
