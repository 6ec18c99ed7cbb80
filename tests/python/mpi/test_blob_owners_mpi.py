"""Blob-owner writes of colfile.mpi (``write_all(mode='blob_owners')``):
each blob file is held open by exactly one process after the write -- its
one writer -- where throttled writes of the same rows share blobs between
neighbouring ranks; the rows read back.  (The bytes, against a serial write
and the C layer's, are compared in test_cross_language.py.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mpirun import c_iosim, child_env, launch, mpiexec, run_ok, tree

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


def test_iosims_write_by_blob_owners(tmp_path: Path, lib: Any) -> None:
    """Both iosims (``colfile iosim``, ``colfile-iosim``) take --mode
    blob_owners, report it as the mode used and write the same bytes."""
    mpiexec()
    args = ["--rows", "777", "--dtype", "f8", "--nmemb", "3", "--nfile", "3", "--mode",
            "blob_owners", "--keep", "--json"]
    cmds = {"Python": [sys.executable, "-m", "colfile.cli", "iosim"], "C": [str(c_iosim())]}
    files = {}
    for layer, cmd in cmds.items():
        proc = launch(4, [*cmd, *args, str(tmp_path / layer)], env=child_env(TMPDIR=str(tmp_path)))
        assert proc.returncode == 0, (layer, proc.stdout, proc.stderr)
        report = json.loads(proc.stdout.splitlines()[0])
        assert report["mode"] == report["mode_used"] == "blob_owners", (layer, report)
        assert report["verified"] is True and report["mismatched_bytes"] == 0
        files[layer] = tree(tmp_path / layer)
    assert files["C"] == files["Python"] and "iosim/000002" in files["C"]
