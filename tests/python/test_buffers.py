"""New arrays that reads allocate start where their first byte lies in its
blob, modulo 64 bytes (colfile/_buffers.py), and are otherwise what
np.empty gives: right shape and dtype, C-contiguous, aligned, writable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile
from colfile._buffers import PLACE_BYTES, PLACE_MIN_BYTES, empty_at


def address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def plain(a: np.ndarray, shape: tuple[int, ...], dtype: Any) -> None:
    assert a.shape == shape and a.dtype == np.dtype(dtype)
    assert a.flags.c_contiguous and a.flags.aligned and a.flags.writeable


@pytest.mark.parametrize("dtype", ["u1", "<i2", "<f4", ">f8", "<c16", "S3"])
@pytest.mark.parametrize("offset", [0, 16, 48, 4096 + 24, 199313328])
def test_empty_at_places_large_arrays(dtype: str, offset: int) -> None:
    dt = np.dtype(dtype)
    offset -= offset % dt.alignment
    rows = PLACE_MIN_BYTES // dt.itemsize + 5
    a = empty_at((rows,), dt, offset)
    plain(a, (rows,), dt)
    assert (address(a) - offset) % PLACE_BYTES == 0
    a[:] = np.arange(rows).astype(dt)  # all of it is usable memory
    assert a[-1] == np.array(rows - 1).astype(dt)


def test_empty_at_leaves_small_and_misaligned_requests_to_numpy() -> None:
    a = empty_at((10, 3), np.dtype("<f8"), 16)
    plain(a, (10, 3), "<f8")
    assert a.base is None
    big = PLACE_MIN_BYTES // 8 + 1
    b = empty_at((big,), np.dtype("<f8"), 4)  # not a multiple of 8: stays aligned
    plain(b, (big,), "<f8")
    assert b.base is None


@pytest.fixture
def column(tmp_path: Path, lib: Any) -> Any:
    rows = [20_001, 0, 30_000, 50_003]  # f8 x 3: blob 0 is 480 KB
    n = sum(rows)
    data = np.arange(3 * n, dtype="<f8").reshape(n, 3)
    with colfile.File(tmp_path / "f", "w") as f:
        f.create("x", ("<f8", 3), size=n, blob_rows=rows)[:] = data
    f = colfile.File(tmp_path / "f")
    yield f["x"], data, rows
    f.close()


def blob_offset(rows: list[int], row: int) -> int:
    for r in rows:
        if row < r:
            return row * 24
        row -= r
    raise AssertionError("row out of range")


@pytest.mark.parametrize("a,b", [(0, 100_004), (7, 20_001), (20_001, 100_004),
                                 (21_111, 60_000), (99_000, 100_004)])
def test_reads_return_placed_arrays(column: Any, a: int, b: int) -> None:
    x, data, rows = column
    for got in (x[a:b], x.read(a, b), x[a:b:1], x[a:b, :]):
        np.testing.assert_array_equal(got, data[a:b])
        plain(got, (b - a, 3), "<f8")
        if (b - a) * 24 >= PLACE_MIN_BYTES:
            assert (address(got) - blob_offset(rows, a)) % PLACE_BYTES == 0
    part = x[a:b, 1]  # a component: a view of the placed rows
    np.testing.assert_array_equal(part, data[a:b, 1])


def test_converting_reads_stay_aligned(column: Any) -> None:
    x, data, _ = column
    got = x.read(1, 100_000, dtype="<f4")
    plain(got, (99_999, 3), "<f4")
    np.testing.assert_array_equal(got, data[1:100_000].astype("<f4"))
    stepped = x[1:100_000:2]
    np.testing.assert_array_equal(stepped, data[1:100_000:2])
    plain(stepped, (50_000, 3), "<f8")
