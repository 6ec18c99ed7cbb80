"""Blob-owner writes of colfile.mpi (``write_all(mode='blob_owners')``):
each blob file is held open by exactly one process after the write -- its
one writer -- where throttled writes of the same rows share blobs between
neighbouring ranks; the rows read back.  (The bytes, against a serial write
and the C layer's, are compared in test_cross_language.py.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mpirun import launch, mpiexec, run_ok

PROBE = Path(__file__).parent / "blob_owners_probe.py"


@pytest.mark.parametrize("nranks", [2, 4])
def test_one_writer_per_blob(nranks: int, tmp_path: Path) -> None:
    mpiexec()
    proc = launch(nranks, [sys.executable, str(PROBE), str(tmp_path)])
    run_ok(proc)
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    shared = False
    for nfile in (1, 3, 7):
        own, thr = report[f"blob_owners {nfile}"], report[f"throttled {nfile}"]
        assert own["ok"] and thr["ok"]
        # every blob with rows has exactly one process holding it
        assert own["open"] == [1 if n else 0 for n in own["rows"]], (nfile, own)
        shared = shared or max(thr["open"]) > 1
    # the count can see a second writer: throttled ranks share blobs
    assert shared, report
