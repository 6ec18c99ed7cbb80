"""Creating a File that another process creates at the same moment.

Many ranks or jobs often open one new File for writing at once.  An open
with ``CF_OPEN_CREATE`` looks at the path (open, stat, lstat) before it
makes the directory; when another process makes it between those looks,
the path is a directory after all and the open goes on as on an existing
File, never "exists and is not a directory".

The delay shim (tests/concurrency/delayshim.c) holds the opener at its
``lstat`` of the path (the last look; stat and open found nothing) and notes
when the hold begins; the test makes the File then, so that it appears
inside that window every time."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import colfile

from childenv import child_env
from shims import shim_library

#: how long the opener is held at its lstat
HOLD_US = 2_000_000

OPENER = """
import sys, numpy as np, colfile
from colfile._core import file as _f
from colfile._constants import CF_OPEN_WRITE, CF_OPEN_CREATE
# the core's own open (colfile.File looks at the path itself first)
_f.close(_f.open(sys.argv[1], CF_OPEN_WRITE | CF_OPEN_CREATE))
with colfile.File(sys.argv[1], "a") as f:
    f.create("mine", data=np.arange(4))
print("opened")
"""


@pytest.fixture(scope="module")
def delayshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shim_library(tmp_path_factory, "concurrency", "delayshim")


def _create_while(path: Path, delayshim: Path, make) -> subprocess.CompletedProcess[str]:
    note = path.parent / "held"
    env = child_env(LD_PRELOAD=str(delayshim), CF_DELAY_SCOPE=str(path), CF_DELAY_CALLS="lstat",
                    CF_DELAY_MATCH=path.name, CF_DELAY_NOTE=str(note),
                    CF_DELAY_MIN_US=str(HOLD_US), CF_DELAY_MAX_US=str(HOLD_US))
    child = subprocess.Popen([sys.executable, "-c", OPENER, str(path)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not note.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the child never reached its lstat"
            time.sleep(0.002)
        make()
        assert child.poll() is None  # made while the child was held
    finally:
        out, err = child.communicate(timeout=120)
    held = note.read_text().splitlines()
    assert held[0] == str(path), held
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def test_file_made_by_another_process_during_create_is_opened(tmp_path: Path,
                                                              delayshim: Path) -> None:
    path = tmp_path / "snap"

    def make() -> None:
        with colfile.File(path, "w") as f:
            f.create("theirs", data=np.arange(3.0))

    done = _create_while(path, delayshim, make)
    assert done.returncode == 0 and done.stdout.strip() == "opened", done.stderr[-3000:]
    with colfile.File(path, "r") as f:
        assert sorted(f.keys()) == ["mine", "theirs"]
        assert f["theirs"][:].tolist() == [0.0, 1.0, 2.0]


def test_plain_file_made_during_create_is_refused(tmp_path: Path, delayshim: Path) -> None:
    # the other process made a regular file there: not a File, and left alone
    path = tmp_path / "snap"
    done = _create_while(path, delayshim, lambda: path.write_bytes(b"not a File"))
    assert done.returncode != 0
    assert f"{path}: exists and is not a directory" in done.stderr, done.stderr[-3000:]
    assert path.read_bytes() == b"not a File"
