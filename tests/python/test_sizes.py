"""Sizes and counts given to the API: a number that is not whole is refused
with a TypeError naming the argument (never truncated: ``size=3.5`` is not
3), and one the format or the C API cannot hold gets a colfile error (a
ValueError) naming the argument and the limit (never a raw OverflowError);
nothing is created or changed by a refused call."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import colfile

NOT_WHOLE = [3.5, 3.0, np.float64(3), "3", True, None.__class__]


@pytest.mark.parametrize("value", NOT_WHOLE, ids=repr)
def test_create_size_not_whole(wfile: colfile.File, value: Any) -> None:
    with pytest.raises(TypeError, match="^size must be a whole number"):
        wfile.create("a", "f8", size=value)
    assert "a" not in wfile


@pytest.mark.parametrize("size, match", [
    (2**62, r"size=4611686018427387904 rows of 8 bytes .* 2\*\*63-1 bytes"),
    (2**63, r"size=9223372036854775808 is above the largest 64-bit size, 2\*\*63-1"),
    (2**70, r"size=1180591620717411303424 is above the largest 64-bit size"),
    (-1, "size must be at least 0, not -1"),
])
def test_create_size_too_large(wfile: colfile.File, size: int, match: str) -> None:
    with pytest.raises(colfile.InvalidArgumentError, match=match) as exc:
        wfile.create("a", "f8", size=size)
    assert isinstance(exc.value, ValueError)
    assert "a" not in wfile


def test_whole_numpy_integers_are_sizes(wfile: colfile.File) -> None:
    c = wfile.create("a", "f8", size=np.int32(6), nfile=np.uint8(2), chunk_rows=np.int64(2))
    assert (c.size, c.nfile, c.chunk_rows) == (6, 2, 2)
    c = wfile.create("b", "f8", blob_rows=np.array([1, 2], dtype=np.int16))
    assert c.blob_rows == [1, 2]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"size": 10, "nfile": 2.5}, TypeError, "^nfile must be a whole number"),
    ({"size": 10, "nfile": 2**24 + 1}, colfile.InvalidArgumentError,
     "nfile=16777217 is above the most blobs a column may have, 16777216"),
    ({"size": 10, "nfile": 2**70}, colfile.InvalidArgumentError, "16777216"),
    ({"size": 10, "chunk_rows": 2.5}, TypeError, "^chunk_rows must be a whole number"),
    ({"size": 10, "chunk_rows": 0}, colfile.InvalidArgumentError, "chunk_rows must be at least 1"),
    ({"size": 10, "chunk_rows": 2**70}, colfile.InvalidArgumentError, "^chunk_rows=.* 2\\*\\*63-1"),
    ({"blob_rows": [1.5, 2]}, TypeError, r"^blob_rows\[0\] must be a whole number"),
    ({"blob_rows": [2, 2**63]}, colfile.InvalidArgumentError, r"^blob_rows\[1\]=9223372036854775808"),
    ({"blob_rows": [2**62, 2**62, 2**62]}, colfile.InvalidArgumentError, "blob_rows sum to"),
    ({"size": 10, "concurrency": 1.5}, TypeError, "^concurrency must be a whole number"),
])
def test_create_other_counts(wfile: colfile.File, kwargs: dict[str, Any], error: type,
                             match: str) -> None:
    with pytest.raises(error, match=match):
        wfile.create("a", "f8", **kwargs)
    assert "a" not in wfile


def test_append_and_rows(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("a", data=np.arange(4.0))
    with colfile.File(path, "r+") as f:
        c = f["a"]
        with pytest.raises(TypeError, match="^nfile must be a whole number"):
            c.append([1.0], nfile=1.5)
        with pytest.raises(colfile.InvalidArgumentError, match="16777216"):
            c.append([1.0], nfile=2**70)
        # past the limit only with the blobs there already: the core says so
        with pytest.raises(colfile.InvalidArgumentError,
                           match="cannot add 16777216 blobs to its 1: a column has at most 16777216"):
            c.append([1.0], nfile=2**24)
        with pytest.raises(TypeError, match="^start must be a whole number"):
            c.write(1.5, [9.0])
        with pytest.raises(TypeError, match="^start must be a whole number"):
            c.read(1.5)
        with pytest.raises(TypeError, match="^stop must be a whole number"):
            c.read(0, 2.5)
        with pytest.raises(TypeError, match="^start must be a whole number"):
            c.write_all([9.0], start=1.5)
        with pytest.raises(TypeError, match="^count must be a whole number"):
            c.read_all(0, count=1.5)
        assert c.size == 4 and c.nfile == 1
    with colfile.File(path, "r") as f:
        np.testing.assert_array_equal(f["a"][:], np.arange(4.0))


def test_compat_bigfile(tmp_path: Any, lib: Any) -> None:
    from colfile.compat import bigfile as bf

    with bf.File(str(tmp_path / "f"), create=True) as f:
        with pytest.raises(TypeError, match="^size must be a whole number"):
            f.create("a", "f8", size=3.5)
        with pytest.raises(colfile.InvalidArgumentError, match="size=1180591620717411303424"):
            f.create("a", "f8", size=2**70)
        with pytest.raises(TypeError, match="^Nfile must be a whole number"):
            f.create("a", "f8", size=3, Nfile=1.5)
        with pytest.raises(colfile.InvalidArgumentError, match="16777216"):
            f.create("a", "f8", size=3, Nfile=2**70)
        assert "a" not in f.blocks


def test_cli_iosim_numbers(cli: Any, tmp_path: Any) -> None:
    status, out, err = cli("iosim", "--rows", str(2**64), str(tmp_path / "x"))
    assert status == 2 and "above the largest 64-bit size" in err
    status, out, err = cli("iosim", "--rows", str(2**62), str(tmp_path / "x"))
    assert status == 2 and "above the largest column, 2**63-1 bytes" in err
    status, out, err = cli("iosim", "--rows", "3.5", str(tmp_path / "x"))
    assert status == 2 and "not a whole number" in err
