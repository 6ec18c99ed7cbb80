"""Column: dtypes, casting, contiguous reads and writes, append, blobs, dask."""

from __future__ import annotations

import os
import pickle
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile

ONE_BYTE = ["|i1", "|u1", "|b1"]
MULTI = ["i2", "i4", "i8", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]
NUMERIC = ONE_BYTE + [o + k for k in MULTI for o in "<>"]
ALL = NUMERIC + ["|S5"]


def sample(dtype: Any, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random values that fit ``dtype`` exactly."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        vals = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        vals = rng.integers(info.min, info.max, n, dtype=np.int64 if dt.kind == "i"
                            else np.uint64, endpoint=True)
    elif dt.kind == "f":
        vals = rng.standard_normal(n) * 1000
    elif dt.kind == "c":
        vals = rng.standard_normal(n) * 100 + 1j * rng.standard_normal(n)
    else:
        vals = np.array([bytes(rng.integers(97, 123, rng.integers(0, dt.itemsize + 1)))
                         for _ in range(n)])
    return vals.astype(dt).reshape(shape)


def blob_bytes(col: colfile.Column) -> bytes:
    """The stored bytes: the blobs concatenated, each cut to its rows."""
    out = b""
    row = col.itemsize * col.nmemb
    for i, rows in enumerate(col.blob_rows):
        with open(os.path.join(col.path, f"{i:06X}"), "rb") as fh:
            out += fh.read()[: rows * row]
    return out


# ----------------------------------------------------------------------
# round trips


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("nmemb", [1, 3])
def test_round_trip_every_dtype(path: str, dtype: str, nmemb: int) -> None:
    shape = (23,) if nmemb == 1 else (23, nmemb)
    data = sample(dtype, shape)
    with colfile.File(path, "w") as f:
        spec = dtype if nmemb == 1 else (dtype, nmemb)
        col = f.create("x", spec, size=23, nfile=4)
        col[:] = data
        col.flush()
        assert blob_bytes(col) == data.tobytes()  # bytes as stored: numpy layout
    with colfile.File(path) as f:
        col = f["x"]
        assert col.dtype == np.dtype(dtype)
        assert col.dtype.str == np.dtype(dtype).str  # byte order kept
        assert col.nmemb == nmemb and col.shape == shape and len(col) == 23
        assert col.blob_rows == [5, 6, 6, 6]
        back = col[:]
        assert back.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(back, data)
        np.testing.assert_array_equal(col.read(), data)
        np.testing.assert_array_equal(np.asarray(col), data)


def test_create_from_data_infers_dtype_and_nmemb(wfile: colfile.File) -> None:
    data = np.arange(12, dtype=">i2").reshape(4, 3)
    col = wfile.create("v", data=data, nfile=2)
    assert col.dtype.str == ">i2" and col.nmemb == 3 and col.blob_rows == [2, 2]
    np.testing.assert_array_equal(col[:], data)
    col = wfile.create("c", "f4", data=[1, 2, 3])  # dtype given: C converts
    np.testing.assert_array_equal(col[:], np.array([1, 2, 3], "f4"))
    col = wfile.create("s", data=np.array(["a", "é"]))  # unicode -> UTF-8 bytes
    assert col.dtype == np.dtype("S2") and col[1] == "é".encode()
    with pytest.raises(ValueError):
        wfile.create("bad", data=np.zeros((2, 2, 2)))
    with pytest.raises(ValueError):
        wfile.create("bad", "f8", size=3, data=[1.0])
    with pytest.raises(TypeError):
        wfile.create("nodtype")


def test_complex_big_endian_layout(wfile: colfile.File) -> None:
    """>c16 holds numpy's layout (real then imaginary, each big-endian), also
    when written from native complex (bigfile swapped the parts there)."""
    data = np.array([1 + 2j, -3.5 + 0.25j])
    for dt in (">c16", ">c8"):
        col = wfile.create(dt[1:], dt, size=2)
        col[:] = data
        col.flush()
        assert blob_bytes(col) == data.astype(dt).tobytes()
        np.testing.assert_array_equal(col[:], data)
        np.testing.assert_array_equal(col.read(dtype="<c16"), data)
    col = wfile.create("le", "<c16", data=data.astype(">c16"))
    col.flush()
    assert blob_bytes(col) == data.tobytes()


# ----------------------------------------------------------------------
# casting


def cast_values(src: np.dtype[Any], dst: np.dtype[Any]) -> np.ndarray:
    """Values of dtype src whose conversion to dst numpy defines portably."""
    if src.kind == "b":
        return np.array([False, True, True, False], dtype=src)
    if src.kind in "iu":
        info = np.iinfo(src)
        vals = [0, 1, 2, 7, 100, 127, info.max, info.min]
        if src.kind == "i":
            vals += [-1, -2, -128]
        if dst.kind == "f" and dst.itemsize == 2:
            vals = [v for v in vals if abs(v) < 60000]
        return np.array(vals, dtype=np.uint64 if src.kind == "u" else np.int64).astype(src)
    vals = [0.0, 1.0, 1.5, 2.75, 100.25, 126.9]
    if dst.kind == "i" or dst.kind in "fcb":
        vals += [-1.5, -100.7, -0.0]
    if dst.kind in "fcb":
        vals += [np.inf, -np.inf, np.nan, 3e4, 1e-3]
        if src.itemsize >= 4 * (2 if src.kind == "c" else 1):
            vals += [1e38, 1e-40]
    arr = np.array(vals)
    if src.kind == "c":
        real = arr
        arr = real.astype(complex)
        arr.imag = real[::-1]
        if dst.kind == "b":
            arr = np.append(arr, [0 + 1j, 0j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return arr.astype(src)


def expected(values: np.ndarray, dst: np.dtype[Any]) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return values.astype(dst, casting="unsafe")


@pytest.fixture(scope="module")
def cast_file(tmp_path_factory: pytest.TempPathFactory, lib: Any) -> Any:
    f = colfile.File(str(tmp_path_factory.mktemp("cast") / "f"), "w")
    yield f
    f.close()


@pytest.mark.parametrize("dst", NUMERIC)
def test_cast_on_write_and_read(cast_file: colfile.File, dst: str) -> None:
    dt = np.dtype(dst)
    failures = []
    for src in NUMERIC:
        st = np.dtype(src)
        vals = cast_values(st, dt)
        want = expected(vals, dt)
        # write: src data into a dst column
        col = cast_file.create(f"w/{dst[1:]}{dst[0]}", dst, size=len(vals), overwrite=True)
        col[:] = vals
        got = col[:]
        if not (got.dtype == dt and np.array_equal(got, want, equal_nan=dt.kind in "fc")):
            failures.append(f"write {src}->{dst}: {vals} gave {got}, numpy {want}")
        # read: a src column read into dst
        col = cast_file.create(f"r/{src[1:]}{src[0]}", src, data=vals, overwrite=True)
        got = col.read(dtype=dst)
        out = np.zeros(len(vals), dt)
        col.read(out=out)
        for g in (got, out):
            if not (g.dtype == dt and np.array_equal(g, want, equal_nan=dt.kind in "fc")):
                failures.append(f"read {src}->{dst}: {vals} gave {g}, numpy {want}")
    assert not failures, "\n".join(failures)


def test_bytes_cast_between_widths(wfile: colfile.File) -> None:
    col = wfile.create("s", "S3", size=3)
    col[:] = np.array([b"abcdef", b"x", b""])  # S6 into S3 truncates like numpy
    np.testing.assert_array_equal(col[:], np.array([b"abc", b"x", b""], "S3"))
    np.testing.assert_array_equal(col.read(dtype="S5"), np.array([b"abc", b"x", b""], "S5"))
    with pytest.raises(colfile.DTypeError):
        col[:] = np.arange(3)
    num = wfile.create("n", "f8", size=3)
    with pytest.raises(colfile.DTypeError) as exc:
        num.read(dtype="S8")
    assert isinstance(exc.value, TypeError)


# ----------------------------------------------------------------------
# caller's arrays are never modified, any strides


def test_write_leaves_caller_array_untouched(wfile: colfile.File) -> None:
    col = wfile.create("x", "<f4", size=6)
    for src in (np.arange(6, dtype=">f8"), np.arange(6, dtype="<i8"),
                np.arange(12, dtype=">i4")[::2], np.arange(6, dtype="<c16")[::-1]):
        keep = src.copy()
        raw = src.tobytes()
        col[:] = src
        np.testing.assert_array_equal(col[:], src.real.astype("f4"))
        assert src.dtype == keep.dtype and src.tobytes() == raw
    ro = np.arange(6.0)
    ro.flags.writeable = False
    col[:] = ro
    col.write(0, ro[::-1])
    np.testing.assert_array_equal(col[:], ro[::-1])


def test_write_strided_vector_and_broadcast(wfile: colfile.File) -> None:
    col = wfile.create("v", ("i4", 3), size=4)
    big = np.arange(40, dtype=">i8").reshape(4, 10)
    col[:] = big[:, 1:7:2]  # non-contiguous rows and elements
    np.testing.assert_array_equal(col[:], big[:, 1:7:2])
    col[:] = np.asfortranarray(big[:, :3])
    np.testing.assert_array_equal(col[:], big[:, :3])
    col[:] = [7, 8, 9]  # one row broadcast to all
    np.testing.assert_array_equal(col[:], np.tile([7, 8, 9], (4, 1)))
    col[:] = 5
    assert (col[:] == 5).all()
    with pytest.raises(ValueError):
        col[:] = np.zeros((4, 2))


def test_read_into_strided_and_typed_out(wfile: colfile.File) -> None:
    data = np.arange(30, dtype="<f8").reshape(10, 3)
    col = wfile.create("v", data=data)
    out = np.zeros((20, 6), ">f4")[::2, ::2]  # both strides non-trivial
    assert col.read(out=out) is out
    np.testing.assert_array_equal(out, data)
    out = np.zeros((10, 3), "i2", order="F")
    col.read(out=out)
    np.testing.assert_array_equal(out, data)
    out = np.zeros((10, 3))[::-1, ::-1]  # negative strides
    col.read(out=out)
    np.testing.assert_array_equal(out, data)
    out = np.zeros((4, 3), "c8")
    col.read(2, out=out)  # stop from len(out)
    np.testing.assert_array_equal(out, data[2:6])
    np.testing.assert_array_equal(col.read(-3), data[-3:])
    np.testing.assert_array_equal(col.read(1, -7, dtype="u1"), data[1:3].astype("u1"))
    assert col.read(5, 5).shape == (0, 3)
    with pytest.raises(ValueError):
        col.read(out=np.zeros((10, 2)))
    ro = np.zeros((10, 3))
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        col.read(out=ro)
    with pytest.raises(ValueError):
        col.read(out=np.zeros((10, 3)), dtype="f4")
    with pytest.raises(IndexError):
        col.read(0, 11)
    with pytest.raises(colfile.RangeError):
        col.read(8, out=np.zeros((5, 3)))
    scalar = wfile.create("s", data=np.arange(5))
    out = np.zeros((5, 1), "f8")
    scalar.read(out=out)
    np.testing.assert_array_equal(out[:, 0], np.arange(5))


def test_iteration(wfile: colfile.File) -> None:
    data = np.arange(12, dtype="i2").reshape(4, 3)
    col = wfile.create("v", data=data)
    rows = list(col)
    assert len(rows) == 4
    np.testing.assert_array_equal(np.array(rows), data)
    assert list(wfile.create("e", "f8", size=0)) == []


def test_write_method(wfile: colfile.File) -> None:
    col = wfile.create("x", "i8", size=10)
    col.write(0, np.zeros(10, "i8"))
    col.write(3, [1, 2, 3])
    col.write(-2, np.array([8, 9], ">i2"))
    np.testing.assert_array_equal(col[:], [0, 0, 0, 1, 2, 3, 0, 0, 8, 9])
    with pytest.raises(colfile.RangeError):
        col.write(9, [1, 2])
    with pytest.raises(ValueError):
        col.write(0, 5)


# ----------------------------------------------------------------------
# append, header-only blocks, blobs


def test_append(path: str) -> None:
    with colfile.File(path, "w") as f:
        col = f.create("x", "i4", size=3, nfile=1)
        col[:] = [1, 2, 3]
        col.append(np.array([4.0, 5.0]))  # cast on append
        col.append(np.arange(6, 12, dtype=">i8"), nfile=3)
        col.append([], nfile=1)
        empty = f.create("e", ("f8", 2), size=0, nfile=0)
        empty.append(np.ones((3, 2)), nfile=2)
    with colfile.File(path) as f:
        assert f["x"].blob_rows == [3, 2, 2, 2, 2, 0]
        np.testing.assert_array_equal(f["x"][:], np.arange(1, 12))
        assert f["e"].blob_rows == [1, 2] and f["e"].shape == (3, 2)
        np.testing.assert_array_equal(f["e"][:], np.ones((3, 2)))
        with pytest.raises(colfile.ReadOnlyError):
            f["x"].append([1])


def test_header_only_block(path: str) -> None:
    with colfile.File(path, "w") as f:
        meta = f.create("meta", None)
        meta.attrs["Version"] = 3
        assert meta.kind == "header-only" and meta.nmemb == 0 and meta.size == 0
    with colfile.File(path) as f:
        meta = f["meta"]
        assert meta.kind == "header-only"
        assert meta.dtype == np.dtype("<i8") and meta.nfile == 0
        assert meta.shape == (0, 0) and meta.blob_rows == []
        assert meta.attrs["Version"] == 3
        assert meta[:].shape == (0, 0)
        assert "meta" in f.columns
    text = Path(path, "meta", "header").read_text()
    assert text == "DTYPE: <i8\nNMEMB: 0\nNFILE: 0\n"


def test_blob_info_and_verify(path: str) -> None:
    data = np.arange(100, dtype="<u2")
    with colfile.File(path, "w") as f:
        col = f.create("x", data=data, nfile=3)
        col.flush()
        infos = col.checksums()
        assert [i["rows"] for i in infos] == [33, 33, 34]
        raw = data.tobytes()
        offsets = [0, 66, 132, 200]
        for i, info in enumerate(infos):
            s = sum(raw[offsets[i]:offsets[i + 1]])
            assert info["sum"] == s
            r = (s & 0xFFFF) + (s >> 16)
            assert info["fold"] == (r & 0xFFFF) + (r >> 16)
            assert info["crc32c"] is None or 0 <= info["crc32c"] < 2**32
            assert col.verify_blob(i) == {"OK"}
        with pytest.raises(IndexError):
            col.blob_info(3)
        header = Path(path, "x", "header").read_text().splitlines()
        assert header[3] == f"000000: 33 : {infos[0]['sum']} : {infos[0]['fold']}"
    with open(Path(path, "x", "000001"), "r+b") as fh:
        fh.truncate(10)
    os.remove(Path(path, "x", "000002"))
    with colfile.File(path) as f:
        col = f["x"]
        assert "SHORT" in col.verify_blob(1)
        assert "MISSING" in col.verify_blob(2)
        np.testing.assert_array_equal(col[:5], data[:5])  # intact part reads
        with pytest.raises(colfile.FormatError) as exc:
            col[40:50]
        assert "000001" in str(exc.value)
        with pytest.raises(FileNotFoundError) as exc2:
            col[-1]
        assert "000002" in str(exc2.value)


# ----------------------------------------------------------------------
# life cycle, threads, dask


def test_close_and_context_manager(path: str) -> None:
    with colfile.File(path, "w") as f:
        with f.create("x", data=np.arange(3.0)) as col:
            assert not col.closed
        assert col.closed
        with pytest.raises(colfile.ClosedError) as exc:
            col[:]
        assert isinstance(exc.value, ValueError) and "x" in str(exc.value)
        col.close()  # twice is fine
        again = f["x"]
        assert again is not col and not again.closed
        assert "closed" in repr(col) and "shape=(3,)" in repr(again)
    assert again.closed  # closing the File closes its columns


def test_file_handle_dropped_column_survives(path: str) -> None:
    col = colfile.File(path, "w").create("x", data=np.arange(4))
    col[1] = 10  # the File object is gone; the column handle is still valid
    col.close()
    with colfile.File(path) as f:
        np.testing.assert_array_equal(f["x"][:], [0, 10, 2, 3])


def test_threads_read_distinct_columns(wfile: colfile.File) -> None:
    cols = [wfile.create(f"c{i}", data=np.arange(20000, dtype="f8") * i, nfile=4)
            for i in range(4)]
    results: dict[int, bool] = {}

    def work(i: int) -> None:
        ok = True
        for _ in range(20):
            ok &= bool((cols[i][::3] == np.arange(20000)[::3] * i).all())
        results[i] = ok

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {0: True, 1: True, 2: True, 3: True}


def test_one_column_shared_by_threads(wfile: colfile.File) -> None:
    col = wfile.create("x", "i8", size=4000, nfile=2)

    def work(i: int) -> None:
        col[i * 1000:(i + 1) * 1000] = np.arange(1000) + i * 1000

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(col[:], np.arange(4000))


def test_to_dask(path: str) -> None:
    dask = pytest.importorskip("dask")

    with colfile.File(path, "w") as f:
        x = f.create("x", "f8", size=10, blob_rows=[3, 0, 7, 0])
        x[:] = np.arange(10.0)
        v = f.create("g/v", ("i4", 2), size=5, nfile=2)
        v[:] = np.arange(10).reshape(5, 2)
        e = f.create("e", "f4", size=0, nfile=0)
        f.flush()
        dx, dv, de = (c.to_dask(chunks="blobs") for c in (x, v, e))
    assert dx.chunks == ((3, 7),) and dx.dtype == np.dtype("f8")
    assert dv.chunks == ((2, 3), (2,))
    np.testing.assert_array_equal(dx.compute(), np.arange(10.0))
    np.testing.assert_array_equal(dv[:, 1].compute(), np.arange(1, 10, 2))
    assert de.shape == (0,) and de.compute().shape == (0,)
    again = pickle.loads(pickle.dumps(dx))
    with dask.config.set(scheduler="threads"):
        assert float(again.sum().compute()) == 45.0
