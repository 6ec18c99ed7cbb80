"""What colfile writes, the original bigfile 0.1.52 reads (and the reverse).

Skipped when the ``bigfile`` package is not installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import colfile

bigfile = pytest.importorskip("bigfile")
pytestmark = pytest.mark.filterwarnings("ignore:Data type alias:DeprecationWarning")

DTYPES = ["|i1", "|u1", "|b1", "|S4"] + [o + k for k in
                                        ("i2", "i4", "i8", "u2", "u4", "u8", "f2", "f4", "f8",
                                         "c8", "c16") for o in "<>"]


def values(dtype: str, n: int) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "S":
        return np.array([b"ab", b"", b"wxyz", b"q"] * n)[:n].astype(dt)
    if dt.kind == "b":
        return (np.arange(n) % 3 == 0)
    base = np.arange(n) * 3 - (n if dt.kind in "ifc" else 0)
    if dt.kind == "c":
        return (base + 0.5j * base[::-1]).astype(dt)
    return base.astype(dt)


def test_bigfile_reads_colfile(path: str) -> None:
    with colfile.File(path, "w") as f:
        for dt in DTYPES:
            f.create(f"d/{dt[1:]}{'be' if dt[0] == '>' else ''}", dt,
                     data=values(dt, 11), nfile=3)
        f.create("vec", data=np.arange(12.0).reshape(4, 3), blob_rows=[1, 0, 3])
        f.create("meta", None).attrs["Version"] = 2
        grown = f.create("grown", "i4", size=2)
        grown[:] = [1, 2]
        grown.append([3, 4, 5], nfile=2)
        f.attrs.update({"s": "text", "e": "", "l": ["a", "bc"], "i": 3, "x": 1.5,
                        "b": True, "c": 1 + 2j, "arr": np.array([1, 2], ">i2"),
                        "empty": np.array([], "f8")})
        f.require_group("g").attrs["k"] = 1
    b = bigfile.File(path)
    listed = b.list_blocks()
    assert sorted(listed) == sorted(colfile.File(path).columns)
    for dt in DTYPES:
        name = f"d/{dt[1:]}{'be' if dt[0] == '>' else ''}"
        with b.open(name) as blk:
            got = blk[:]
            assert got.dtype == np.dtype(dt), name
            np.testing.assert_array_equal(got, values(dt, 11))
            assert blk.Nfile == 3 and blk.size == 11
    with b.open("vec") as blk:
        np.testing.assert_array_equal(blk[:], np.arange(12.0).reshape(4, 3))
    with b.open("grown") as blk:
        np.testing.assert_array_equal(blk[:], [1, 2, 3, 4, 5])
        assert blk.Nfile == 3
    with b.open("meta") as blk:
        assert blk.attrs["Version"] == [2]
    with b.open(".") as blk:
        a = blk.attrs
        assert a["s"] == "text" and a["l"] == ["a", "bc"] and a["i"] == [3]
        assert a["x"] == [1.5] and a["c"] == [1 + 2j] and list(a["b"]) == [True]
        arr = a["arr"]  # read once: bigfile swaps its cached copy on every access
        assert arr.dtype == np.dtype(">i2") and arr.tolist() == [1, 2]
        assert a["e"] == "\x00"
    with b.open("g/.") as blk:
        assert blk.attrs["k"] == [1]


def test_colfile_reads_bigfile(tmp_path: Any, lib: Any) -> None:
    p = str(tmp_path / "bf")
    b = bigfile.File(p, create=True)
    data = np.arange(20, dtype=">f8").reshape(10, 2)
    with b.create("x", dtype=(">f8", 2), size=10, Nfile=3) as blk:
        blk.write(0, data.copy())  # bigfile byte-swaps its argument in place
        blk.attrs["u"] = "unit"
        blk.attrs["v"] = np.array([1, 2, 3], "<u2")
    with colfile.File(p, "r+") as f:
        col = f["x"]
        assert col.dtype.str == ">f8" and col.shape == (10, 2) and col.blob_rows == [3, 3, 4]
        np.testing.assert_array_equal(col[::-1], data[::-1])
        assert col.attrs["u"] == "unit" and col.attrs["v"].tolist() == [1, 2, 3]
        assert all(col.verify_blob(i) <= {"OK", "CRC_UNKNOWN"} for i in range(3))
        col[0] = [100, 200]  # colfile keeps the bigfile checksums going
    with b.open("x") as blk:
        np.testing.assert_array_equal(blk[0], [100, 200])
