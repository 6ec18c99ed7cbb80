"""Opening a name while another process removes or replaces what is there.

An open holds the directory at the name, then reads its ``header``.  When
that directory was taken away in between, the open looks again at the name:
if a new version is there it opens that one; if nothing is there any more
(a removed column, a removed group) the name is simply absent, reported as
"no column" (``KeyError``), never as a column replaced over and over.

The delay shim (tests/concurrency/delayshim.c) holds the opening process
just before it opens the name's ``header`` (its scope is that one path) and
notes when the hold begins; the test then changes the File, so that the
change lands inside that window every time."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import colfile

from childenv import child_env
from shims import shim_library

#: how long the opener is held before it opens `header`
HOLD_US = 3_000_000

OPENER = """
import sys, numpy as np, colfile
from colfile._core import column as _c
path, mode, name = sys.argv[1], sys.argv[2], sys.argv[3]
with colfile.File(path, mode) as f:
    # the library's own answer (File.__getitem__ opens again to report a
    # failure, which would hide it)
    try:
        _c.close(_c.open(f._h, name))
    except KeyError as exc:
        print("absent", exc)
    else:
        col = f[name]
        print("opened", col.kind, float(np.asarray(col[:]).sum()) if col.kind == "data" else "")
"""


@pytest.fixture(scope="module")
def delayshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shim_library(tmp_path_factory, "concurrency", "delayshim")


def _open_while(path: Path, delayshim: Path, mode: str, name: str, change) -> tuple[str, int]:
    """Open `name` in a child held before it reads ``<name>/header``; run
    `change` once it is held there; return the child's output and how many
    times it was held."""
    note = path.parent / "held"
    env = child_env(LD_PRELOAD=str(delayshim), CF_DELAY_SCOPE=str(path / name / "header"),
                    CF_DELAY_NOTE=str(note), CF_DELAY_MIN_US=str(HOLD_US), CF_DELAY_MAX_US=str(HOLD_US))
    child = subprocess.Popen([sys.executable, "-c", OPENER, str(path), mode, name], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not note.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the child never reached the header"
            time.sleep(0.002)
        change()
        # the change landed while the child was still held
        assert child.poll() is None
    finally:
        out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err[-3000:]
    held = note.read_text().splitlines()
    assert set(held) == {"header"}, held
    return out.strip(), len(held)


def _written(tmp_path: Path, name: str) -> Path:
    """A File holding column `name` (ten f8 rows), without its catalog."""
    path = tmp_path / "f"
    with colfile.File(path, "w") as f:
        f.create(name, data=np.arange(10.0))
    # a read-only open served by the catalog never looks at the directory
    shutil.rmtree(path / ".colfile-catalog", ignore_errors=True)
    return path


def _remover(path: Path, key: str):
    """What another process does while the child is held: del f[key]."""
    def remove() -> None:
        with colfile.File(path, "a") as f:
            del f[key]
    return remove


@pytest.mark.parametrize("mode", ["r", "r+"])
def test_group_removed_while_opened_is_absent(tmp_path: Path, delayshim: Path, mode: str) -> None:
    path = _written(tmp_path, "g/x")
    out, held = _open_while(path, delayshim, mode, "g", _remover(path, "g/"))
    assert held == 1 and out.startswith("absent") and "no column 'g'" in out, out


@pytest.mark.parametrize("mode", ["r", "r+"])
def test_column_removed_while_opened_is_absent(tmp_path: Path, delayshim: Path, mode: str) -> None:
    path = _written(tmp_path, "x")
    out, held = _open_while(path, delayshim, mode, "x", _remover(path, "x"))
    assert held == 1 and out.startswith("absent") and "no column 'x'" in out, out
    with colfile.File(path, "r") as f:
        assert "x" not in f


@pytest.mark.parametrize("mode", ["r", "r+"])
def test_column_replaced_while_opened_opens_the_new_version(tmp_path: Path, delayshim: Path,
                                                            mode: str) -> None:
    path = _written(tmp_path, "x")

    def replace() -> None:
        with colfile.File(path, "a") as f:
            del f["x"]
            f.create("x", data=np.full(4, 2.5))

    out, held = _open_while(path, delayshim, mode, "x", replace)
    # held at the old version's header, then at the new one's (and at the
    # child's later opens of it)
    assert held >= 2 and out == "opened data 10.0", (held, out)
