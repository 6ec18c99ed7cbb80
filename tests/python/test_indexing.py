"""Indexing parity with numpy, for reads and writes, on real columns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import colfile
from colfile import _indexing

N = 50
RNG = np.random.default_rng(7)


def first_axis_keys() -> list[Any]:
    keys: list[Any] = [0, 5, 49, -1, -50, np.int64(3), np.uint8(7), np.array(4),
                       slice(None), slice(5, 5), slice(60, 70), slice(-100, 100),
                       # contiguous slices (the fast path of _indexing.getitem)
                       slice(-5, None), slice(None, -3), slice(10, 3), slice(49, 50),
                       slice(-60, 7), slice(np.int64(2), np.uint8(9)), slice(0, 0),
                       Ellipsis, (), [], np.array([], dtype=np.int64),
                       [3], [49, 0], [-1, -2, 0], np.arange(N)[::-1],
                       RNG.integers(-N, N, 30), RNG.integers(0, N, 200),
                       RNG.integers(0, N, (4, 5)), np.sort(RNG.integers(0, N, 25)),
                       np.arange(10, 20), np.array([7, 7, 7, 8, 9, 9]),
                       np.array([1, 2], dtype=np.uint64),
                       RNG.random(N) < 0.3, np.zeros(N, bool), np.ones(N, bool),
                       list(RNG.random(N) < 0.5)]
    for step in range(1, 8):
        for s in (step, -step):
            keys += [slice(None, None, s), slice(3, 41, s), slice(-5, 2, s),
                     slice(40, None, s), slice(None, 7, s), slice(-1, -N - 5, s)]
    return keys


KEYS = first_axis_keys()
VECTOR_KEYS: list[Any] = [(slice(None), 0), (slice(10, 20), slice(1, 3)), (3, 2), (-1, slice(None)),
                          (Ellipsis, 0), (Ellipsis, 1), (slice(None, None, -3), -1),
                          ([4, 1, 4], 2), ([4, 1, 4], [0, 1, 2]), (np.arange(6).reshape(2, 3), 1),
                          (np.arange(N) % 25 == 3, [0, 2]), (RNG.random(N) < 0.5, 1), (5, [2, 0]), (slice(2, 9, 2), [[0], [1]]),
                          (0, Ellipsis), (np.array([3, 1]), slice(None, None, -1))]


def label(k: Any) -> str:
    text = repr(k).replace("\n", "")
    return text if len(text) < 40 else text[:37] + "..."


@pytest.fixture(scope="module")
def columns(tmp_path_factory: pytest.TempPathFactory, lib: Any) -> Any:
    f = colfile.File(str(tmp_path_factory.mktemp("idx") / "f"), "w")
    scalar = np.arange(N, dtype="<f8") * 1.5
    vector = np.arange(N * 3, dtype=">i4").reshape(N, 3)
    s = f.create("s", "<f8", size=N, blob_rows=[7, 0, 20, 0, 23])
    s[:] = scalar
    v = f.create("v", (">i4", 3), size=N, nfile=4)
    v[:] = vector
    yield f, (s, scalar), (v, vector)
    f.close()


def check_same(got: Any, want: Any) -> None:
    assert type(got) is type(want) or (np.isscalar(got) and np.isscalar(want))
    got_arr, want_arr = np.asarray(got), np.asarray(want)
    assert got_arr.shape == want_arr.shape
    assert got_arr.dtype == want_arr.dtype
    np.testing.assert_array_equal(got_arr, want_arr)


def compare(col: colfile.Column, ref: np.ndarray, key: Any) -> None:
    try:
        want = ref[key]
    except IndexError:  # numpy refuses: so must we, with the same class
        with pytest.raises(IndexError):
            col[key]
        return
    check_same(col[key], want)


@pytest.mark.parametrize("key", KEYS, ids=label)
def test_read_scalar_column(columns: Any, key: Any) -> None:
    _, (col, ref), _ = columns
    compare(col, ref, key)


@pytest.mark.parametrize("key", KEYS + VECTOR_KEYS, ids=label)
def test_read_vector_column(columns: Any, key: Any) -> None:
    _, _, (col, ref) = columns
    compare(col, ref, key)


@pytest.mark.parametrize("key", [50, -51, 10**12, [0, 50], [-51], np.array([3, 99]),
                                 np.array([2**63 + 5], dtype=np.uint64)], ids=label)
def test_out_of_range(columns: Any, key: Any) -> None:
    _, (col, ref), _ = columns
    with pytest.raises(IndexError) as exc:
        col[key]
    assert isinstance(exc.value, colfile.RangeError)
    assert "out of bounds" in str(exc.value) and col.path in str(exc.value)
    with pytest.raises(IndexError):
        col[key] = 0


@pytest.mark.parametrize("key", [np.ones(N - 1, bool), np.ones((N, 1), bool), 1.5, "a",
                                 np.array([1.0, 2.0]), None, (None, 1), (0, 0), (..., ...),
                                 True, [[True, False]]], ids=label)
def test_bad_index(columns: Any, key: Any) -> None:
    _, (col, ref), _ = columns
    with pytest.raises(IndexError):
        col[key]


def test_bad_vector_index(columns: Any) -> None:
    _, _, (col, ref) = columns
    with pytest.raises(IndexError):
        col[0, 3]
    with pytest.raises(IndexError):
        col[0, 0, 0]
    with pytest.raises(ValueError):
        col[::0]


@pytest.mark.parametrize("key", KEYS, ids=label)
def test_write_scalar_column(columns: Any, key: Any) -> None:
    f, _, _ = columns
    ref = np.arange(N, dtype="<i8")
    col = f.create("w", "<i8", data=ref, blob_rows=[10, 0, 15, 25], overwrite=True)
    value = RNG.integers(-1000, 1000, np.shape(ref[key]))
    ref[key] = value
    col[key] = value.astype(">i4")  # cast by C, caller dtype kept
    np.testing.assert_array_equal(col[:], ref)
    ref[key] = 77  # scalar broadcast
    col[key] = 77
    np.testing.assert_array_equal(col[:], ref)


@pytest.mark.parametrize("key", KEYS + VECTOR_KEYS, ids=label)
def test_write_vector_column(columns: Any, key: Any) -> None:
    f, _, _ = columns
    ref = np.arange(N * 3, dtype="<f4").reshape(N, 3)
    col = f.create("wv", ("<f4", 3), data=ref, nfile=3, overwrite=True)
    value = RNG.integers(-1000, 1000, np.shape(ref[key])).astype("f8")
    keep = value.copy()
    ref[key] = value
    col[key] = value
    np.testing.assert_array_equal(col[:], ref)
    np.testing.assert_array_equal(value, keep)


def test_repeated_fancy_write_last_wins(columns: Any) -> None:
    f, _, _ = columns
    col = f.create("rep", "i8", data=np.zeros(10, "i8"))
    col[[3, 1, 3, 3, 1]] = [10, 20, 30, 40, 50]
    assert col[3] == 40 and col[1] == 50
    vec = f.create("repv", ("i8", 2), data=np.zeros((5, 2), "i8"))
    vec[[1, 1], [0, 1]] = [5, 6]  # both elements of row 1 set, as in numpy
    np.testing.assert_array_equal(vec[1], [5, 6])


def test_large_step_uses_bounded_reads(columns: Any) -> None:
    f, _, _ = columns
    data = np.arange(20000, dtype="f8")
    col = f.create("big", data=data, nfile=3)
    for step in (1, 2, 7, 511, 512, 513, 4999, -3, -600):
        np.testing.assert_array_equal(col[::step], data[::step])
        np.testing.assert_array_equal(col[17:19000:step], data[17:19000:step])


# ----------------------------------------------------------------------
# the parser on its own


def test_parse_forms() -> None:
    rows, rest = _indexing.parse(-1, 10, 0, "c")
    assert (rows.start, rows.count, rows.shape, rest) == (9, 1, (), ())
    rows, rest = _indexing.parse((Ellipsis, 2), 10, 1, "c")
    assert (rows.start, rows.step, rows.count, rest) == (0, 1, 10, (2,))
    rows, _ = _indexing.parse(np.array([[1, -1]]), 10, 0, "c")
    assert rows.shape == (1, 2) and rows.rows.tolist() == [1, 9]
    assert rows.order is None and rows.is_sorted
    rows, _ = _indexing.parse([5, 2, 5], 10, 0, "c")
    assert rows.order.tolist() == [1, 0, 2]
    rows, _ = _indexing.parse(np.arange(3, 8), 10, 0, "c")
    assert rows.is_run
    rows, _ = _indexing.parse(np.arange(10) % 2 == 0, 10, 0, "c")
    assert rows.rows.tolist() == [0, 2, 4, 6, 8]


def test_parse_does_not_alias_the_index() -> None:
    idx = np.array([-1, 2])
    rows, _ = _indexing.parse(idx, 10, 0, "c")
    rows.rows[0] = 0
    assert idx.tolist() == [-1, 2]


def test_parse_messages() -> None:
    with pytest.raises(IndexError, match="too many indices"):
        _indexing.parse((1, 2), 10, 0, "column 'x'")
    with pytest.raises(IndexError, match="out of bounds for column 'x' with size 10"):
        _indexing.parse(10, 10, 0, "column 'x'")
    with pytest.raises(IndexError, match="boolean index did not match"):
        _indexing.parse(np.ones(3, bool), 10, 0, "column 'x'")
    with pytest.raises(IndexError, match="newaxis"):
        _indexing.parse(None, 10, 0, "column 'x'")
