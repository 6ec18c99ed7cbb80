"""The collective API used serially (no comm=): the same classes and calls
work with this process as the only rank.  (Under MPI: tests/python/mpi.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import colfile
import colfile.mpi as cmpi


def test_write_all_read_all_rank_slice(wfile: Any) -> None:
    c = wfile.create("c", ("f4", 2), size=6, nfile=2)
    assert c.comm is None and wfile.comm is None
    for mode in ("auto", "throttled", "aggregated"):
        c.write_all(np.arange(12).reshape(6, 2), mode=mode, concurrency=1)
        assert np.array_equal(c[:], np.arange(12).reshape(6, 2))
    c.write_all(np.full((2, 2), 9, "i8"), start=4)
    assert c[4:].tolist() == [[9, 9], [9, 9]]
    assert c.rank_slice() == slice(0, 6)
    assert c.read_all().shape == (6, 2)
    assert c.read_all(4).tolist() == [[9, 9], [9, 9]]
    assert c.read_all(count=1, dtype="i2").tolist() == [[0, 1]]
    assert c.read_all(2, 1, concurrency=1).tolist() == [[4, 5]]


def test_write_all_errors_are_the_originals(wfile: Any) -> None:
    c = wfile.create("c", "i4", size=3)
    with pytest.raises(colfile.RangeError, match="outside") as info:
        c.write_all([1, 2], start=2)
    assert not hasattr(info.value, "rank")  # serial: no rank prefix
    with pytest.raises(ValueError, match="invalid mode"):
        c.write_all([1], mode="fast")
    with pytest.raises(ValueError, match="concurrency"):
        c.write_all([1], concurrency=0)
    with pytest.raises(colfile.DTypeError):
        c.write_all(np.array([b"x"]), mode="aggregated")


def test_create_defaults_and_options(wfile: Any) -> None:
    assert wfile.create("a", data=np.arange(5)).nfile == 1  # nfile None: one blob
    assert wfile.create("b", "f8", size=10).nfile == 1
    assert wfile.create("c", data=np.arange(5), align_blobs_to_ranks=True).blob_rows == [5]
    with pytest.raises(colfile.InvalidArgumentError):  # more blobs than ranks
        wfile.create("d", data=np.arange(5), nfile=2, align_blobs_to_ranks=True)
    with pytest.raises(ValueError, match="invalid mode"):
        wfile.create("e", data=np.arange(5), mode="fast")


def test_append_and_attrs_serial(wfile: Any) -> None:
    c = wfile.create("c", "i4", size=0)
    c.append([1, 2], nfile=1)
    c.attrs["x"] = 1
    del c.attrs["x"]
    assert c[:].tolist() == [1, 2] and "x" not in c.attrs


def test_agree_serial_and_as_comm() -> None:
    assert cmpi.as_comm(None) is cmpi.SELF and cmpi.SELF.serial
    assert cmpi.agree(cmpi.SELF, lambda: 3, root=0) == 3
    with pytest.raises(KeyError):
        cmpi.agree(cmpi.SELF, lambda: {}["x"])
    with pytest.raises(TypeError, match="communicator"):
        cmpi.as_comm(object())
