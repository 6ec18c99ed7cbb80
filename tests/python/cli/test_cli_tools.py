"""colfile cp, sample, join (colfile.tools) and rm -r of groups: values,
dtypes, attributes and blob layouts compared exactly with numpy and with
reads by colfile and bigfile 0.1.52."""

from __future__ import annotations

import os

import numpy as np
import pytest

# bigfile 0.1.52 reads string attributes through numpy's deprecated 'a' alias
pytestmark = pytest.mark.filterwarnings("ignore:Data type alias 'a':DeprecationWarning")


def _bytes(a):
    return np.ascontiguousarray(a).tobytes()


def _raw_attrs(attrs):
    return {k: attrs.raw(k) for k in attrs}


def _groups(names):
    out = set()
    for n in names:
        parts = n.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            out.add("/".join(parts[:i]) + "/")
    return sorted(out)


def _even(size, nfile):
    return [(i + 1) * size // nfile - i * size // nfile for i in range(nfile)]


def _assert_copy(src, dst, names=None, dtype=None, blob_rows=None):
    """dst holds src's columns (names) with the same attributes, the rows
    converted to dtype; blob_rows(src column) is the expected layout."""
    import colfile

    with colfile.File(src) as a, colfile.File(dst) as b:
        names = list(a.columns) if names is None else names
        assert b.columns == sorted(names, key=lambda s: s.encode())
        assert _raw_attrs(b.attrs) == _raw_attrs(a.attrs)
        for g in _groups(names):
            ga = a.get(g)
            assert _raw_attrs(b[g].attrs) == (_raw_attrs(ga.attrs) if ga is not None else {})
        for n in names:
            x, y = a[n], b[n]
            assert y.kind == x.kind
            assert _raw_attrs(y.attrs) == _raw_attrs(x.attrs)
            if x.kind != "data":
                continue
            want = x[:] if dtype is None else x[:].astype(dtype)
            got = y[:]
            assert got.dtype == want.dtype and got.shape == want.shape
            assert _bytes(got) == _bytes(want), n
            expect = list(x.blob_rows) if blob_rows is None else blob_rows(x)
            assert list(y.blob_rows) == expect, n
    return names


@pytest.fixture
def rand(tmp_path, lib):
    """Random scalar and vector columns of several dtypes, uneven blobs."""
    import colfile

    rng = np.random.default_rng(2024)
    path = str(tmp_path / "rand")
    with colfile.File(path, "w") as f:
        f.create("p/pos", data=rng.normal(size=(1001, 3)), blob_rows=[300, 0, 701])
        f.create("p/id", data=rng.integers(-2**62, 2**62, 1001), nfile=4)
        f.create("p/m", data=rng.random(1001).astype(">f4"), nfile=3)
        f.create("h/v", data=rng.integers(0, 255, (37, 2)).astype("u1"), nfile=2)
        f.create("h/s", data=np.array([b"a", b"bcd", b"", b"\xff"] * 5))
        f.create("h/empty", "f8", size=0)
        f.create("meta", None).attrs["who"] = "me"
        f.attrs["seed"] = 2024
        f["p/"].attrs["n"] = np.array([1, 2, 3], "i2")
        f["p/pos"].attrs["unit"] = "Mpc/h"
    return path


def test_cp_exact(cli, sample, rand, tmp_path):
    for src in (sample, rand):
        dst = str(tmp_path / ("copy_" + os.path.basename(src)))
        assert cli("cp", src, dst) == (0, "", "")
        _assert_copy(src, dst)
        assert cli("check", dst)[0] == 0
    # nothing left behind next to the destination
    assert sorted(p for p in os.listdir(tmp_path) if p.startswith(".")) == []


def test_cp_nfile_dtype_small_chunks(cli, rand, tmp_path):
    dst = str(tmp_path / "conv")
    status, out, err = cli("cp", rand, dst, "p", "h/v", "--nfile", "5", "--dtype", ">f4",
                           "--chunk-mb", "0.001", "-v")
    assert (status, err) == (0, "")
    assert out == "copied p/id\ncopied p/m\ncopied p/pos\ncopied h/v\n"
    _assert_copy(rand, dst, ["p/id", "p/m", "p/pos", "h/v"], dtype=">f4",
                 blob_rows=lambda c: _even(c.size, 5))
    import colfile

    with colfile.File(dst) as f:
        assert f["p/pos"].shape == (1001, 3) and f["p/pos"].dtype == np.dtype(">f4")


def test_cp_api(rand, tmp_path, lib):
    from colfile import tools

    dst = str(tmp_path / "api")
    assert tools.copy(rand, dst, ["p/m"], nfile=2, chunk_bytes=100) == ["p/m"]
    _assert_copy(rand, dst, ["p/m"], blob_rows=lambda c: _even(c.size, 2))
    with pytest.raises(FileExistsError, match="exists"):
        tools.copy(rand, dst)
    with pytest.raises(tools.ToolError, match="no column 'p/mm'"):
        tools.copy(rand, str(tmp_path / "x"), ["p/mm"])
    with pytest.raises(tools.ToolError, match="bad dtype"):
        tools.copy(rand, str(tmp_path / "x"), dtype="O")
    assert not os.path.exists(tmp_path / "x")


def test_cp_bigfile_fixture_read_by_bigfile(cli, bigfile_set, manifest, tmp_path):
    bigfile = pytest.importorskip("bigfile")
    src = str(bigfile_set / "main")
    dst = str(tmp_path / "main")
    assert cli("cp", src, dst) == (0, "", "")
    names = _assert_copy(src, dst)
    blocks = manifest["bigfiles"]["main"]["blocks"]
    with bigfile.File(src) as a, bigfile.File(dst) as b:
        assert sorted(b.list_blocks()) == sorted(a.list_blocks())
        for n in names:
            if blocks.get(n, {}).get("kind") == "header_only":
                continue
            x, y = a[n], b[n]
            assert y.dtype == x.dtype and y.size == x.size and y.Nfile == x.Nfile, n
            assert _bytes(y[:]) == _bytes(x[:]), n
            assert sorted(y.attrs.keys()) == sorted(x.attrs.keys()), n
            for k in x.attrs.keys():
                assert repr(y.attrs[k]) == repr(x.attrs[k]), (n, k)
        for k in a["."].attrs.keys():
            assert repr(b["."].attrs[k]) == repr(a["."].attrs[k])


def test_cp_repartition_read_by_bigfile(cli, rand, tmp_path):
    bigfile = pytest.importorskip("bigfile")
    dst = str(tmp_path / "re")
    assert cli("cp", rand, dst, "p/pos", "--nfile", "7")[0] == 0
    import colfile

    with colfile.File(rand) as f:
        want = f["p/pos"][:]
    with bigfile.File(dst) as b:
        col = b["p/pos"]
        assert col.Nfile == 7 and col.dtype.base == want.dtype and col.dtype.shape == (3,)
        assert _bytes(col[:]) == _bytes(want)
        assert col.attrs["unit"] == "Mpc/h"


def test_cp_errors(cli, rand, tmp_path):
    dst = str(tmp_path / "d")
    status, _, err = cli("cp", str(tmp_path / "nosuch"), dst)
    assert status == 2 and "nosuch" in err and "no such File" in err
    status, _, err = cli("cp", rand, dst, "p/poss")
    assert status == 2 and "'p/poss'" in err
    status, _, err = cli("cp", rand, dst, "--dtype", "f9")
    assert status == 2 and "not a dtype: 'f9'" in err
    status, _, err = cli("cp", rand, dst, "--nfile", "0")
    assert status == 2
    # bytes to numbers: refused before anything is written, in one line
    status, _, err = cli("cp", rand, dst, "--dtype", "f8")
    assert status == 1 and err.count("\n") == 1
    assert "column 'h/s': cannot convert |S3 to <f8" in err
    status, _, err = cli("cp", rand, dst, "p/pos", "--dtype", "S8")
    assert status == 1 and "cannot convert <f8 to |S8" in err
    assert not os.path.exists(dst)
    # an existing destination is refused and kept; --overwrite replaces it
    assert cli("cp", rand, dst, "p/m")[0] == 0
    status, _, err = cli("cp", rand, dst)
    assert status == 1 and err.count("\n") == 1 and "exists" in err and "--overwrite" in err
    import colfile

    with colfile.File(dst) as f:
        assert f.columns == ["p/m"]
    assert cli("cp", rand, dst, "--overwrite")[0] == 0
    _assert_copy(rand, dst)
    status, _, err = cli("cp", rand, rand, "--overwrite")
    assert status == 1 and "destination is a source" in err
    assert sorted(p for p in os.listdir(tmp_path) if p.startswith(".")) == []


def test_sample_every(cli, rand, tmp_path):
    import colfile

    dst = str(tmp_path / "every")
    assert cli("sample", rand, dst, "--every", "7", "--chunk-mb", "0.001")[0] == 0
    with colfile.File(rand) as a, colfile.File(dst) as b:
        assert b.columns == a.columns
        assert _raw_attrs(b.attrs) == _raw_attrs(a.attrs)
        for n in a.columns:
            if a[n].kind != "data":
                assert b[n].kind == a[n].kind
                continue
            want = a[n][:][::7]
            got = b[n][:]
            assert got.dtype == want.dtype and _bytes(got) == _bytes(want), n
            assert _raw_attrs(b[n].attrs) == _raw_attrs(a[n].attrs)


def test_sample_fraction_reproducible(cli, rand, tmp_path):
    import colfile

    one, two, three = (str(tmp_path / n) for n in ("one", "two", "three"))
    assert cli("sample", rand, one, "p", "--fraction", "0.25", "--seed", "5")[0] == 0
    # another chunking gives the same rows
    assert cli("sample", rand, two, "p", "--fraction", "0.25", "--seed", "5",
               "--chunk-mb", "0.0005")[0] == 0
    assert cli("sample", rand, three, "p", "--fraction", "0.25", "--seed", "6")[0] == 0
    keep = np.random.default_rng(5).random(1001) < 0.25
    with colfile.File(rand) as a, colfile.File(one) as b, colfile.File(two) as c, \
            colfile.File(three) as d:
        for n in ("p/id", "p/m", "p/pos"):
            want = a[n][:][keep]
            assert _bytes(b[n][:]) == _bytes(want) and _bytes(c[n][:]) == _bytes(want)
            assert b[n].dtype == a[n].dtype and b[n].shape == want.shape
        assert _bytes(d["p/id"][:]) != _bytes(b["p/id"][:])


def test_sample_errors(cli, rand, tmp_path):
    dst = str(tmp_path / "s")
    assert cli("sample", rand, dst)[0] == 2
    status, _, err = cli("sample", rand, dst, "--fraction", "0.5")
    assert status == 2 and "--seed" in err
    assert cli("sample", rand, dst, "--fraction", "1.5", "--seed", "1")[0] == 2
    assert cli("sample", rand, dst, "--every", "0")[0] == 2
    assert cli("sample", rand, dst, "--every", "2", "--fraction", "0.5")[0] == 2
    assert cli("sample", rand, dst, "nope", "--every", "2")[0] == 2
    assert cli("sample", str(tmp_path / "none"), dst, "--every", "2")[0] == 2
    assert not os.path.exists(dst)


def test_join(cli, rand, tmp_path):
    import colfile

    second = str(tmp_path / "second")
    assert cli("sample", rand, second, "--every", "3")[0] == 0
    dst = str(tmp_path / "joined")
    assert cli("join", dst, rand, second, rand, "--chunk-mb", "0.001")[0] == 0
    with colfile.File(rand) as a, colfile.File(second) as s, colfile.File(dst) as j:
        assert j.columns == a.columns
        assert _raw_attrs(j.attrs) == _raw_attrs(a.attrs)
        for n in a.columns:
            if a[n].kind != "data":
                assert j[n].kind == a[n].kind
                continue
            # (concatenate gives native byte order)
            want = np.concatenate([a[n][:], s[n][:], a[n][:]]).astype(a[n].dtype)
            assert j[n].dtype == a[n].dtype
            assert _bytes(j[n][:]) == _bytes(want), n
            assert list(j[n].blob_rows) == (list(a[n].blob_rows) + list(s[n].blob_rows)
                                            + list(a[n].blob_rows))
    dst2 = str(tmp_path / "joined2")
    assert cli("join", dst2, rand, second, "-c", "p/pos", "--nfile", "2")[0] == 0
    with colfile.File(dst2) as j:
        assert j.columns == ["p/pos"] and list(j["p/pos"].blob_rows) == _even(1001 + 334, 2)


def test_join_errors(cli, rand, tmp_path, lib):
    import colfile

    other = str(tmp_path / "other")
    with colfile.File(other, "w") as f:
        f.create("p/pos", data=np.zeros((3, 3), "f4"))
    dst = str(tmp_path / "j")
    status, _, err = cli("join", dst, rand, other)
    assert status == 1 and "columns differ" in err
    status, _, err = cli("join", dst, rand, other, "-c", "p/pos")
    assert status == 1 and "'p/pos'" in err and "f4" in err
    status, _, err = cli("join", dst, rand, other, "-c", "p/m")
    assert status == 1 and "no column 'p/m'" in err
    assert cli("join", dst, rand, str(tmp_path / "none"))[0] == 2
    assert cli("join", dst)[0] == 2
    assert not os.path.exists(dst)
    assert sorted(p for p in os.listdir(tmp_path) if p.startswith(".")) == []


def test_rm_recursive_group(cli, rand):
    import colfile

    status, _, err = cli("rm", rand, "p")
    assert status == 2 and "is a group" in err
    assert cli("rm", "-r", rand, "p") == (0, "", "")
    with colfile.File(rand) as f:
        assert f.columns == ["h/empty", "h/s", "h/v", "meta"]
        assert f.get("p/") is None
    assert not os.path.exists(os.path.join(rand, "p"))
    assert cli("check", rand)[0] == 0
