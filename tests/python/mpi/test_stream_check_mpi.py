"""``colfile check`` on streams under ``mpiexec -n 2`` and ``-n 4``: rank
0 checks the streams while the ranks share the columns' blobs; the exit
status and the report name a damaged chunk as one process does.  Each
launch fails the test if it hangs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mpirun import launch, mpiexec

TIMEOUT = 120


def _make(path: Path) -> None:
    import colfile
    import colfile.stream as cs

    with colfile.File(path, "w") as f:
        f.create("c", data=np.arange(1000.0), nfile=4)
        with cs.create(f, "s", "<f8", tasks=3, files=2, chunk=512, align=512) as w:
            for t in range(3):
                w.task(t).append(np.arange(100.0 * t))


def _check(nranks: int, path: Path) -> Any:
    return launch(nranks, [sys.executable, "-m", "colfile.cli", "check", "--json", str(path)],
                  timeout=TIMEOUT)


@pytest.mark.parametrize("nranks", [2, 4])
def test_check_streams_under_mpi(nranks: int, tmp_path: Path, lib: Any) -> None:
    mpiexec()
    path = tmp_path / "f"
    _make(path)
    proc = _check(nranks, path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ranks"] == nranks and doc["streams_checked"] == 1 and doc["stream_chunks_checked"] == 6
    # task 2's chunk 1: file 1 holds tasks 1 and 2, block 1 local task 1
    data = path / "s/colfile-stream-data-000001"
    with open(data, "r+b") as fh:
        fh.seek(3 * 512 + 7)
        b = fh.read(1)
        fh.seek(3 * 512 + 7)
        fh.write(bytes([b[0] ^ 1]))
    proc = _check(nranks, path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    (e,) = doc["stream_problems"]
    assert (e["task"], e["chunk"], e["problems"][0]["kind"]) == (2, 1, "crc mismatch")
    assert doc["problems"] == [] and doc["blobs_checked"] == 4
