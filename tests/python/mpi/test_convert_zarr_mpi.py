"""colfile convert from a zarr group under mpiexec: the copy split over the
ranks gives what the serial copy gives; errors reach every rank."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mpirun import colfile_cli, convert_split_and_serial, launch

zarr = pytest.importorskip("zarr")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_cli_convert_zarr import make_zarr  # noqa: E402


@pytest.mark.parametrize("nranks", [2, 4])
def test_parallel_zarr_tocolfile_cli(tmp_path, nranks):
    import colfile

    src = tmp_path / "in.zarr"
    data = make_zarr(src, n=1003, seed=nranks)
    par, ser = convert_split_and_serial(src, tmp_path, nranks)
    with colfile.File(str(par)) as p, colfile.File(str(ser)) as s:
        assert p.columns == s.columns == sorted(data)
        for name, arr in data.items():
            assert (p[name].dtype, p[name].shape) == (s[name].dtype, s[name].shape), name
            assert p[name][:].tobytes() == s[name][:].tobytes(), name
            assert p[name][:].tobytes() == np.asarray(arr).astype(p[name].dtype).tobytes()
            assert p[name].nfile == 3
    assert sorted(x.name for x in tmp_path.iterdir()) == ["in.zarr", "par", "ser"]


def test_parallel_zarr_errors_on_every_rank(tmp_path):
    src = tmp_path / "bad.zarr"
    root = zarr.open_group(str(src), mode="w", zarr_format=3)
    root.create_array("cube", shape=(2, 2, 2), dtype="<f8")
    proc = launch(2, colfile_cli("convert", src, tmp_path / "out"))
    assert proc.returncode == 1
    assert proc.stderr.count("3 dimensions") == 2
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bad.zarr"]
