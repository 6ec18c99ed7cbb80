"""``colfile.compat.bigfile`` against the real bigfile 0.1.52: the shapes
and values of Dataset and Column reads agree, on random dtypes, vector
lengths, blob layouts and row ranges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

import colfile.compat.bigfile as bf

orig = pytest.importorskip("bigfile")

#: column dtypes both libraries store (big-endian complex left out: bigfile
#: exchanges its parts on conversion, a documented difference)
BASES = ["<i4", "<i8", ">i4", "<u8", "<f4", "<f8", ">f8", "?", "<c16", "S3", "i1", "<u2"]


def _same(a: Any, b: Any) -> None:
    """Equal values, dtype and shape (structured arrays field by field)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if a.dtype.names:
        for n in a.dtype.names:
            _same(a[n], b[n])
    else:
        assert a.tobytes() == b.tobytes()


def _write(lib: Any, path: str, cols: list[tuple[str, str, int, int]], size: int) -> None:
    f = lib.File(path, create=True)
    for i, (name, base, nmemb, nfile) in enumerate(cols):
        dt = np.dtype((base, (nmemb,))) if nmemb > 1 else np.dtype(base)
        data = (np.arange(size * nmemb) * (i + 3) % 251).astype(np.dtype(base)) \
            if np.dtype(base).kind != "S" else \
            np.array([str(k).encode() for k in range(size * nmemb)], base)
        with f.create(name, dt, size, Nfile=nfile) as b:
            if size:
                b.write(0, data.reshape((size, nmemb) if nmemb > 1 else (size,)))


def test_dataset_field_of_scalar_column_is_n_by_1(tmp_path: Path, lib: Any) -> None:
    """Regression: ``Dataset[:4]['ID']`` is (4, 1) in bigfile 0.1.52 for
    every scalar column (numpy 2), so ``r['ID'][:, 0]`` works."""
    cols = [("ID", "<i8", 1, 2), ("Mass", "<f8", 1, 1), ("Flag", "?", 1, 1),
            ("Pos", "<f4", 3, 2)]
    _write(orig, str(tmp_path / "o"), cols, 10)
    _write(bf, str(tmp_path / "c"), cols, 10)
    names = [c[0] for c in cols]
    want = orig.Dataset(orig.File(str(tmp_path / "o")), names)
    got = bf.Dataset(bf.File(str(tmp_path / "c")), names)
    assert got.dtype == want.dtype
    r = got[:4]
    assert r["ID"].shape == (4, 1) and r["Pos"].shape == (4, 3)
    assert_array_equal(r["ID"][:, 0], np.arange(4) * 3 % 251)
    _same(r, want[:4])
    _same(got[3], want[3])
    _same(got.read(2, 5), want.read(2, 5))
    # reading into the caller's buffer, and writing back what was read
    out = np.zeros(3, got.dtype)
    assert got.read(1, 3, out) is out
    _same(out, want.read(1, 3))
    got[0:3] = out
    _same(got[0:3], want.read(1, 3))
    got.append(want[:2])
    assert got.size == 12
    _same(got[10:12], want[:2])


column_spec = st.tuples(st.sampled_from(BASES), st.sampled_from([1, 1, 2, 3]),
                        st.integers(0, 4))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=st.lists(column_spec, min_size=1, max_size=4), size=st.integers(0, 9),
       data=st.data())
def test_random_reads_match_bigfile(tmp_path_factory: Any, lib: Any, specs: Any, size: int,
                                    data: Any) -> None:
    root = tmp_path_factory.mktemp("shapes")
    cols = [(f"c{i}", base, nmemb, max(nfile, 1) if size else nfile)
            for i, (base, nmemb, nfile) in enumerate(specs)]
    _write(orig, str(root / "o"), cols, size)
    _write(bf, str(root / "c"), cols, size)
    fo, fc = orig.File(str(root / "o")), bf.File(str(root / "c"))
    names = [c[0] for c in cols]
    dso, dsc = orig.Dataset(fo, names), bf.Dataset(fc, names)
    assert dsc.dtype == dso.dtype and dsc.size == dso.size == size
    for _ in range(4):
        a = data.draw(st.integers(0, size), label="start")
        b = data.draw(st.integers(a, size), label="stop")
        _same(dsc[a:b], dso[a:b])
        _same(dsc.read(a, b - a), dso.read(a, b - a))
        name = data.draw(st.sampled_from(names), label="column")
        _same(dsc[a:b][name], dso[a:b][name])
        _same(dsc[name, a:b], dso[name, a:b])
        some = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True),
                         label="columns")
        _same(dsc[some, a:b], dso[some, a:b])
        _same(dsc[a:b, some], dso[a:b, some])
        _same(dsc[...], dso[...])
        co, cc = fo[name], fc[name]
        assert cc.dtype == co.dtype and cc.size == co.size
        _same(cc[a:b], co[a:b])
        _same(cc.read(a, b - a), co.read(a, b - a))
        _same(cc.read(a, -1), co.read(a, -1))
        if size:
            i = data.draw(st.integers(0, size - 1), label="row")
            _same(dsc[i], dso[i])
            _same(cc[i], co[i])
