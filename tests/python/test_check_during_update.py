"""colfile check while another process changes a column without a lock
that shows it (``locking=False``, as on file systems whose locks are
node-local or absent): in-place updates, appends and replacements.  The
check may see a change half done, and must say the column changed during
the check (or is torn, when the mark was there at open), never that it is
damaged.  The delay shim widens the windows between the check's file
operations so that the writer's commits fall inside them.  (The
concurrency harness under ``--fs nodelocal``, tests/python/test_fs_models.py,
runs the same promise with more workers and operations.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import colfile

from childenv import child_env
from shims import shim_library

WRITER = """
import os, sys, numpy as np, colfile
path, stop = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
k = 0
while not os.path.exists(stop):
    with colfile.File(path, "r+", locking=False) as f:
        what = k % 3
        if what == 0:  # in place
            a = int(rng.integers(0, f["x"].size - 5000))
            f["x"][a:a + 5000] = rng.random(5000)
        elif what == 1:  # more rows in a new blob
            f["x"].append(rng.random(int(rng.integers(1, 3000))))
        else:  # a new column under the name
            f.create("x", data=rng.random(int(rng.integers(20000, 40000))), nfile=4,
                     overwrite=True)
    k += 1
"""


@pytest.fixture(scope="module")
def delayshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shim_library(tmp_path_factory, "concurrency", "delayshim")


def test_check_reports_no_damage_during_unlocked_updates(tmp_path: Path, delayshim: Path) -> None:
    path = tmp_path / "f"
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(40000.0), nfile=4)
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(stop)],
                              env=child_env(), stderr=subprocess.PIPE, text=True)
    kinds: list[str] = []
    notes = 0
    try:
        env = child_env(LD_PRELOAD=str(delayshim), CF_DELAY_SCOPE=str(path),
                        CF_DELAY_MAX_US="20000")
        for _ in range(12):
            r = subprocess.run([sys.executable, "-m", "colfile", "check", "--json", str(path)],
                               env=env, capture_output=True, text=True, timeout=120)
            assert r.returncode in (0, 1), r.stderr[-2000:]
            doc = json.loads(r.stdout)
            kinds += [p["kind"] for e in doc["problems"] for p in e["problems"]]
            # a check inside a commit, between its header's rename and its
            # colfile-v1's, finds the CRC32C not current ("header changed")
            notes += sum("changed during the check" in n or "the header changed since" in n
                         for n in doc.get("notes", []))
    finally:
        stop.touch()
        _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err[-2000:]
    assert set(kinds) <= {"torn"}, kinds
    # the updates did overlap the checks (else the test showed nothing)
    assert notes + kinds.count("torn") > 0
