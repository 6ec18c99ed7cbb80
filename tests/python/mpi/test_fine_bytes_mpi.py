"""A write's chunk index does not depend on how its rows were split.

Columns with enough chunks for a write's ``colfile-index-v1`` and sub-chunks
for its fine level (docs/format.md 8.6: ``Position`` f8 x 3 with 1024 rows a
chunk, two sub-chunks of 512 rows each), written by the Python
(``write_pattern.py``) and the C (``cf_write_pattern``) MPI layers with 2 and
4 ranks, throttled, aggregated and by blob owners, rank boundaries inside
chunks and sub-chunks: every tree is the serial write's, byte for byte, the
index included.  The fine level is built by ``colfile index`` (the data read
back), never by a write.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mpirun import assert_same_files, c_mpi_program, launch, mpiexec, run_ok, run_serial, tree

WRITER = Path(__file__).parent / "write_pattern.py"
ARGS = ["--total", "1050001", "--nfile", "3", "--layout", "uneven", "--chunk-rows", "1024"]


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    path = tmp_path_factory.mktemp("fine") / "ref"
    run_serial([WRITER, path, "--mode", "auto", *ARGS, "--serial"], timeout=300)
    return path, tree(path)


@pytest.mark.parametrize("lang", ["python", "c"])
@pytest.mark.parametrize("nranks,mode", [(n, m) for n in (2, 4) for m in ("throttled", "aggregated", "blob_owners")])
def test_mpi_writes_the_serial_index(lang: str, nranks: int, mode: str, tmp_path: Path,
                                     serial: tuple[Path, dict[str, bytes]]) -> None:
    mpiexec()
    _, want = serial
    assert "Position/colfile-index-v1" in want
    out = tmp_path / lang
    exe = [sys.executable, str(WRITER)] if lang == "python" else [str(c_mpi_program("cf_write_pattern"))]
    run_ok(launch(nranks, [*exe, str(out), "--mode", mode, *ARGS], timeout=300))
    assert_same_files(tree(out), want)


def test_fine_level_from_colfile_index(serial: tuple[Path, dict[str, bytes]], tmp_path: Path, lib: Any) -> None:
    """The serial write has none; ``colfile index`` adds it (two records a chunk)."""
    import colfile
    from colfile import chunkindex
    from colfile.cli import main as cli

    path = tmp_path / "copy"
    shutil.copytree(serial[0], path)   # copy2: modification times kept, statistics current
    with colfile.File(path) as f:
        assert chunkindex.info(f["Position"])["state"] == "current"
        assert chunkindex.count(f["Position"], chunkindex.FINE_LEVEL) == 0
    assert cli(["index", "-q", str(path)]) == 0
    with colfile.File(path) as f:
        p = f["Position"]
        assert chunkindex.count(p, chunkindex.FINE_LEVEL) == 2 * chunkindex.count(p, 0)


def test_mpi_index_writes_no_fine_level(tmp_path: Path, lib: Any) -> None:
    """``colfile index`` under MPI merges the ranks' blobs into one commit:
    the pending state moved between processes carries no fine level, so
    there is none, and the bytes are the same for 1, 2 and 4 ranks."""
    import numpy as np

    import colfile
    from colfile import chunkindex

    mpiexec()
    src = tmp_path / "src"
    with colfile.File(src, "w") as f:   # 8 chunks of 65536 rows: 1024 sub-chunks of 512
        f.create("P", data=np.arange(3 << 19, dtype="f8").reshape(-1, 3), nfile=4)
    trees = []
    for n in (1, 2, 4):
        path = tmp_path / f"n{n}"
        shutil.copytree(src, path)
        run_ok(launch(n, [sys.executable, "-m", "colfile.cli", "index", "-q", "--force", "--mpi", str(path)]))
        with colfile.File(path) as f:
            assert chunkindex.count(f["P"], chunkindex.FINE_LEVEL) == 0
        trees.append(tree(path))
    assert trees[1] == trees[0] and trees[2] == trees[0]
