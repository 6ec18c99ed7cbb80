"""``colfile cp`` under ``mpiexec -n 2`` and ``-n 4``: every rank copies
and verifies its share of the rows; the copy equals the source (values,
dtypes, attributes, blob layout) and a serial copy; errors exit alike on
every rank.  Real MPI runs; each launch fails the test if it hangs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mpirun import colfile_cli, launch, mpiexec

TIMEOUT = 120


def _source(path: Path) -> None:
    import colfile

    rng = np.random.default_rng(11)
    with colfile.File(path, "w") as f:
        f.create("p/pos", data=rng.normal(size=(2003, 3)), blob_rows=[1000, 0, 1003])
        f.create("p/id", data=rng.integers(0, 2**40, 2003), nfile=3)
        f.create("p/few", data=np.arange(3, dtype=">i2"))
        f.create("p/none", "f8", size=0)
        f.create("meta", None).attrs["v"] = "2"
        f.attrs["box"] = 250.0
        f["p/"].attrs["n"] = 2003
        f["p/pos"].attrs["unit"] = "Mpc/h"


def _contents(path: Path) -> dict[str, Any]:
    import colfile

    out: dict[str, Any] = {}
    with colfile.File(path) as f:
        out["."] = {k: f.attrs.raw(k) for k in f.attrs}
        out["p/"] = {k: f["p/"].attrs.raw(k) for k in f["p/"].attrs}
        for n in f.columns:
            c = f[n]
            attrs = {k: c.attrs.raw(k) for k in c.attrs}
            if c.kind != "data":
                out[n] = (c.kind, attrs)
                continue
            data = c[:]
            out[n] = (c.kind, attrs, data.dtype.str, data.shape, list(c.blob_rows),
                      np.ascontiguousarray(data).tobytes())
    return out


def _cp(nranks: int, *args: Any) -> Any:
    return launch(nranks, colfile_cli("cp", *args), timeout=TIMEOUT)


@pytest.mark.parametrize("nranks", [2, 4])
def test_cp_parallel_equals_source_and_serial(nranks: int, tmp_path: Path, lib: Any) -> None:
    mpiexec()
    import colfile
    from colfile import tools

    src = tmp_path / "src"
    _source(src)
    proc = _cp(nranks, src, tmp_path / "same", "-v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("copied p/pos\n") == 1 and proc.stderr == ""
    assert _contents(tmp_path / "same") == _contents(src)
    proc = _cp(nranks, src, tmp_path / "par", "p", "--nfile", "5", "--dtype", ">f4",
               "--chunk-mb", "0.002")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tools.copy(str(src), str(tmp_path / "ser"), ["p/few", "p/id", "p/none", "p/pos"],
                       nfile=5, dtype=">f4")
    par = _contents(tmp_path / "par")
    assert par == _contents(tmp_path / "ser")
    with colfile.File(src) as f:
        want = f["p/pos"][:].astype(">f4")
    assert par["p/pos"][2:5] == (">f4", (2003, 3), [(i + 1) * 2003 // 5 - i * 2003 // 5 for i in range(5)])
    assert par["p/pos"][5] == want.tobytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("nranks", [2, 4])
def test_cp_parallel_errors_on_every_rank(nranks: int, tmp_path: Path, lib: Any) -> None:
    mpiexec()
    src = tmp_path / "src"
    _source(src)
    (tmp_path / "dst").mkdir()
    proc = _cp(nranks, src, tmp_path / "dst")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # one message from every rank (the ranks share stderr: their lines may
    # interleave, so the messages are counted, not the lines)
    assert proc.stderr.count("exists (pass overwrite=True, or --overwrite") == nranks, proc.stderr
    proc = _cp(nranks, tmp_path / "nosuch", tmp_path / "d2")
    assert proc.returncode == 2 and "no such File" in proc.stderr
    assert not (tmp_path / "d2").exists()
