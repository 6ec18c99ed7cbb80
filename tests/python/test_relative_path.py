"""A File opened by a relative path keeps working after the process changes
its working directory, as an h5py File does (it holds a descriptor)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import colfile

h5py = pytest.importorskip("h5py")


@pytest.fixture
def in_dir(tmp_path: Path):
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


def test_h5py_keeps_working_after_chdir(in_dir: Path, tmp_path_factory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    with h5py.File("snap.h5", "w") as f:
        f.create_dataset("a", data=np.arange(5))
        f.attrs["BoxSize"] = 1.0
        os.chdir(elsewhere)
        assert list(f.keys()) == ["a"]
        f.create_dataset("b", data=np.arange(3))
        assert float(f.attrs["BoxSize"]) == 1.0


def test_a_file_keeps_working_after_chdir(in_dir: Path, tmp_path_factory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    with colfile.File("snap", "w") as f:
        f.create("a", "i8", data=np.arange(5))
        f.attrs["BoxSize"] = 1.0
        os.chdir(elsewhere)
        # listing, groups, attributes, new columns and reads, as h5py
        assert f.columns == ["a"]
        f.create("g/b", "f4", data=np.arange(3))
        assert float(f.attrs["BoxSize"]) == 1.0
        assert sorted(f["g/"].columns) == ["b"]
        np.testing.assert_array_equal(f["a"][:], np.arange(5))
        assert f.path == "snap"  # as given
    assert not (elsewhere / "snap").exists()
    with colfile.File(in_dir / "snap") as f:
        assert sorted(f.columns) == ["a", "g/b"]
        np.testing.assert_array_equal(f["g/b"][:], np.arange(3, dtype="f4"))


def test_a_read_only_file_after_chdir(in_dir: Path, tmp_path_factory) -> None:
    with colfile.File("snap", "w") as f:
        f.create("a", "i8", data=np.arange(5))
    f = colfile.File("snap")
    os.chdir(tmp_path_factory.mktemp("elsewhere"))
    try:
        np.testing.assert_array_equal(f["a"][1:3], [1, 2])
        assert f.columns == ["a"]
    finally:
        f.close()
