"""colfile check inside another process's commit, where no lock shows that
writer (``locking=False``, or node-local locks seen from another node).

A commit renames the column's new ``header`` into place, then its new
``colfile-v1`` (docs/format.md 8.3, step 2).  A check that opens the column
between the two finds ``colfile-v1`` stale: the CRC32C it records are not
current for the header, and the header stays the same for the rest of the
check.  Blobs whose rows were once rewritten in place have a byte sum that
differs from the header's (bigfile counts every byte written, format.md 6),
which only a CRC32C can excuse.  The check must not call such a blob
damaged: the CRC32C recorded for exactly its header line (rows and byte
sum) vouches for its bytes.  Real damage must still be reported.

The delay shim (tests/concurrency/delayshim.c) holds the writer for seconds
just before it creates colfile-v1's temporary file, after the header's
rename, so that the check runs in that window every time."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile

from childenv import child_env
from shims import shim_library

#: how long the writer is held between its header's rename and colfile-v1's
HOLD_US = 4_000_000

APPENDER = """
import sys, numpy as np, colfile
path, locking = sys.argv[1], sys.argv[2] == "on"
with colfile.File(path, "a", locking=locking) as f:
    f["x"].append(np.arange(500.0) + 0.25, nfile=1)
"""


@pytest.fixture(scope="module")
def delayshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shim_library(tmp_path_factory, "concurrency", "delayshim")


@pytest.fixture(scope="module")
def lockshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shim_library(tmp_path_factory, "locking", "lockshim")


def _check(path: Path) -> tuple[int, dict[str, Any]]:
    from colfile.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            rc = main(["check", "--json", "--no-progress", str(path)])
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc or 0, json.loads(out.getvalue())


def _check_child(path: Path, env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    r = subprocess.run([sys.executable, "-m", "colfile.cli", "check", "--json", "--no-progress",
                        str(path)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    return r.returncode, json.loads(r.stdout)


def _rewritten_file(path: Path) -> np.ndarray:
    """A File whose column ``x`` has rows rewritten in place: blob 0's byte
    sum then differs from the header's, its CRC32C matches."""
    data = np.arange(4000.0)
    with colfile.File(path, "w") as f:
        f.create("x", data=data, nfile=4)
    with colfile.File(path, "r+") as f:
        f["x"][10:30] = -np.arange(20.0)
    data[10:30] = -np.arange(20.0)
    rc, doc = _check(path)
    assert rc == 0 and doc["rewritten_blobs"] == 1, doc
    return data


def _stale(col_dir: Path) -> bool:
    """colfile-v1 is not bound to the header now (format.md 8.1)."""
    return os.stat(col_dir / "colfile-v1").st_mtime_ns != os.stat(col_dir / "header").st_mtime_ns


def _in_window(path: Path, writer: subprocess.Popen[str], ino: int) -> None:
    """Wait until the writer renamed its header (a new inode) and is held
    before colfile-v1's."""
    col_dir = path / "x"
    deadline = time.monotonic() + 120
    while os.stat(col_dir / "header").st_ino == ino:
        assert writer.poll() is None, writer.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the writer never committed"
        time.sleep(0.005)
    assert _stale(col_dir)


@pytest.mark.parametrize("model", ["locking-off", "nodelocal"])
def test_check_inside_an_append_commit(tmp_path: Path, delayshim: Path, lockshim: Path,
                                       model: str) -> None:
    path = tmp_path / "f"
    data = _rewritten_file(path)
    hold = {"LD_PRELOAD": str(delayshim), "CF_DELAY_SCOPE": str(path),
            "CF_DELAY_MATCH": ".colfile-v1.tmp.", "CF_DELAY_MIN_US": str(HOLD_US),
            "CF_DELAY_MAX_US": str(HOLD_US)}
    # node-local locks: every lock granted, every probe finds it free, in
    # the writer and in the check alike
    nodelocal = {"LD_PRELOAD": f"{lockshim} {delayshim}", "LOCKSHIM_MODE": "nodelocal"}
    writer_env = child_env(**{**hold, **(nodelocal if model == "nodelocal" else {})})
    ino = os.stat(path / "x" / "header").st_ino
    writer = subprocess.Popen([sys.executable, "-c", APPENDER, str(path),
                               "on" if model == "nodelocal" else "off"],
                              env=writer_env, stderr=subprocess.PIPE, text=True)
    try:
        _in_window(path, writer, ino)
        if model == "nodelocal":
            rc, doc = _check_child(path, child_env(LD_PRELOAD=str(lockshim), LOCKSHIM_MODE="nodelocal"))
        else:
            rc, doc = _check(path)
        # the check ran inside the window (else it showed nothing)
        assert writer.poll() is None and _stale(path / "x")
    finally:
        _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err[-2000:]
    assert rc == 0 and doc["ok"], doc["problems"]
    assert doc["damaged_columns"] == [] and doc["rewritten_blobs"] == 1, doc
    # the append committed: every row is there, and the check is clean
    with colfile.File(path, "r", verify=True) as f:
        assert np.array_equal(f["x"][:], np.concatenate([data, np.arange(500.0) + 0.25]))
    rc, doc = _check(path)
    assert rc == 0 and doc["rewritten_blobs"] == 1 and doc["crc_unknown"] == 0, doc


def test_stale_record_vouches_only_for_the_same_bytes(tmp_path: Path) -> None:
    """A header written since colfile-v1 (here: touched) makes colfile-v1
    stale; a blob rewritten in place is still vouched for by the CRC32C
    recorded for its header line, but a blob whose bytes changed is damage."""
    path = tmp_path / "f"
    _rewritten_file(path)
    col_dir = path / "x"
    os.utime(col_dir / "header")
    assert _stale(col_dir)
    rc, doc = _check(path)
    assert rc == 0 and doc["ok"] and doc["rewritten_blobs"] == 1, doc
    assert doc["crc_unknown"] == 3, doc   # blobs 1..3: by byte sum only
    # one byte of blob 0 changed: its byte sum and its CRC32C disagree
    blob = col_dir / "000000"
    raw = bytearray(blob.read_bytes())
    raw[100] ^= 0x40
    blob.write_bytes(bytes(raw))
    rc, doc = _check(path)
    assert rc == 1 and doc["damaged_columns"] == ["x"], doc
    (entry,) = [e for e in doc["problems"] if e["blob"] is not None]
    assert entry["blob"] == "000000" and "SUM_MISMATCH" in entry["status"], entry
    assert "CRC_UNKNOWN" in entry["status"], entry   # a stale record cannot accuse
