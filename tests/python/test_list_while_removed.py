"""Listing a File while another process removes groups: a group that
vanishes between the parent's listing and the walk into it is gone, not an
error (the concurrency harness found `colfile check` failing with "cannot
list: No such file or directory" beside a concurrent ``rm -r``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import colfile
from colfile.stream import list_streams

# Remakes and removes nested groups as fast as it can, until killed.
CHURN = r"""
import os, shutil, sys
root = sys.argv[1]
while True:
    for i in range(8):
        d = os.path.join(root, "g%d" % i, "a", "b", "c", "d")
        os.makedirs(d, exist_ok=True)
    for i in range(8):
        shutil.rmtree(os.path.join(root, "g%d" % i), ignore_errors=True)
"""


def test_listing_and_streams_skip_groups_removed_during_the_walk(tmp_path: Path) -> None:
    path = tmp_path / "F"
    with colfile.File(str(path), "w") as f:
        f.create("x", data=np.arange(4, dtype="i8"))
    churn = subprocess.Popen([sys.executable, "-c", CHURN, str(path)])
    try:
        failures: list[str] = []
        deadline = time.monotonic() + 3.0
        walks = 0
        while time.monotonic() < deadline:
            with colfile.File(str(path), "r") as f:
                for what in (f.keys, lambda: list_streams(f)):
                    try:
                        names = list(what())
                    except colfile.Error as e:
                        failures.append(str(e))
                        continue
                    walks += 1
                    assert "x" in names or what is not f.keys
        assert not failures, f"{len(failures)} of {walks + len(failures)} walks failed, e.g. {failures[0]}"
        assert walks > 100
    finally:
        churn.kill()
        churn.wait()
    shutil.rmtree(path)
    assert not os.path.exists(path)
