"""colfile convert under mpiexec: the HDF5 -> colfile copy split over the
ranks gives what the serial copy gives; errors reach every rank."""

from __future__ import annotations

import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from mpirun import colfile_cli, convert_split_and_serial, launch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_cli_convert import assert_same_hdf5, make_hdf5  # noqa: E402


@pytest.mark.parametrize("nranks", [2, 4])
def test_parallel_hdf5_tocolfile_cli(tmp_path, nranks):
    import colfile

    src = tmp_path / "in.h5"
    make_hdf5(src, n=1003, seed=nranks)
    par, ser = convert_split_and_serial(src, tmp_path, nranks)
    with colfile.File(str(par)) as p, colfile.File(str(ser)) as s:
        assert p.columns == s.columns
        for name in s.columns:
            assert (p[name].dtype, p[name].shape) == (s[name].dtype, s[name].shape), name
            assert p[name][:].tobytes() == s[name][:].tobytes(), name
            assert dict(p[name].attrs).keys() == dict(s[name].attrs).keys(), name
        assert p["halos/id"].nfile == 3
    # and back to HDF5 under mpiexec too (rank 0 writes it)
    proc = launch(nranks, colfile_cli("convert", tmp_path / "par", tmp_path / "back.h5"))
    assert proc.returncode == 0, proc.stderr
    assert_same_hdf5(src, tmp_path / "back.h5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["back.h5", "in.h5", "par", "ser"]


def test_parallel_errors_on_every_rank(tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as h:
        h["x"] = np.arange(10)
        h.create_dataset("s", data=["a"], dtype=h5py.string_dtype())
    proc = launch(2, colfile_cli("convert", src, tmp_path / "out"))
    assert proc.returncode == 1
    assert proc.stderr.count("variable-length strings") == 2
    assert not (tmp_path / "out").exists()
    with h5py.File(src, "w") as h:
        h["x"] = np.arange(10)
    (tmp_path / "out").mkdir()
    proc = launch(2, colfile_cli("convert", src, tmp_path / "out"))
    assert proc.returncode == 1 and proc.stderr.count("exists") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5", "out"]
