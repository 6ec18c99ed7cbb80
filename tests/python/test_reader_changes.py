"""Readers and `colfile check` facing changes that other processes commit
in place (appends, in-place updates) to the column directory they hold
(docs/reliability.md): rows that no longer match the CRC32C or sums read at
open are ReplacedError ("reopen"), never ChecksumError or damage; an open
racing a commit never takes the CRC32C for unknown.  The writers are real
child processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import colfile

from childenv import child_env


def _child(code: str) -> None:
    script = "import numpy as np, colfile\n" + textwrap.dedent(code)
    subprocess.run([sys.executable, "-c", script], check=True, env=child_env(), timeout=120)


def _update(path: str, start: int, values: str) -> None:
    """Another process rewrites rows in place and commits."""
    _child(f"""
        with colfile.File({path!r}, "a") as f:
            f["x"].write({start}, np.asarray({values}, dtype="<f8"))
    """)


def _old(path: str) -> np.ndarray:
    data = np.arange(10, dtype="<f8") + 0.25
    with colfile.File(path, "w") as f:
        f.create("x", data=data, nfile=2)
    return data


def test_update_committed_since_open_is_no_checksum_error(path: str) -> None:
    old = _old(path)
    with colfile.File(path, "r", verify=True) as f:
        col = f["x"]
        np.testing.assert_array_equal(col[:5], old[:5])  # blob 0
        _update(path, 7, "[70.5, 80.5]")                  # blob 1, committed
        with pytest.raises(colfile.ReplacedError) as exc:
            col[5:]
        msg = str(exc.value)
        assert "changed by another process" in msg and "reopen" in msg and "000001" in msg
        # blob 0 is unchanged and still verifies
        np.testing.assert_array_equal(col[:5], old[:5])
        col.close()
        np.testing.assert_array_equal(f["x"][:], np.r_[old[:7], 70.5, 80.5, old[9:]])


def test_a_damaged_blob_stays_a_checksum_error(path: str) -> None:
    _old(path)
    blob = os.path.join(path, "x", "000001")
    with open(blob, "r+b") as fh:
        fh.seek(3)
        b = fh.read(1)
        fh.seek(3)
        fh.write(bytes([b[0] ^ 0x40]))
    with colfile.File(path, "r", verify=True) as f:
        with pytest.raises(colfile.ChecksumError):
            f["x"][:]
        st = f["x"].verify_blob(1)
    assert "CRC_MISMATCH" in st


def test_verify_blob_after_an_update_since_open(path: str) -> None:
    _old(path)
    with colfile.File(path, "r") as f:
        col = f["x"]
        assert "CRC_UNKNOWN" not in col.verify_blob(1)
        _update(path, 6, "[60.5, 61.5, 62.5]")
        # blob 0 is as it was; blob 1 is another version's now
        assert not col.verify_blob(0) & {"CRC_MISMATCH", "SUM_MISMATCH", "STATS_MISMATCH"}
        with pytest.raises(colfile.ReplacedError):
            col.verify_blob(1)
    with colfile.File(path, "r") as f:
        st = f["x"].verify_blob(1)
        assert not st & {"CRC_MISMATCH", "CRC_UNKNOWN", "STATS_MISMATCH"}


def test_open_between_header_and_colfile_v1_waits_for_the_commit(path: str, tmp_path) -> None:
    """A commit renames the new header into place, then the new colfile-v1.
    An open between the two, while the committing writer holds the lock,
    reads the pair again instead of taking the CRC32C for unknown."""
    _old(path)
    after = str(tmp_path / "after")
    shutil.copytree(path, after)
    with colfile.File(after, "a") as f:
        f["x"].append(np.arange(3, dtype="<f8") + 100.5)
    col_dir, new_dir = os.path.join(path, "x"), os.path.join(after, "x")
    # a process holding the column's writer lock, as the committing writer
    # does (it changes an attribute, which leaves header and colfile-v1 be)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, sys, numpy as np, colfile
        f = colfile.File({path!r}, "a")
        col = f["x"]
        col.attrs["k"] = 2
        col[:]
        print("held", flush=True)
        sys.stdin.readline()
        os._exit(0)
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env(), text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for name in os.listdir(new_dir):
            if name not in os.listdir(col_dir):
                shutil.copy2(os.path.join(new_dir, name), os.path.join(col_dir, name))
        shutil.copy2(os.path.join(new_dir, "header"), os.path.join(col_dir, ".header.new"))
        os.rename(os.path.join(col_dir, ".header.new"), os.path.join(col_dir, "header"))

        def second_rename() -> None:
            time.sleep(0.004)
            shutil.copy2(os.path.join(new_dir, "colfile-v1"), os.path.join(col_dir, ".v1.new"))
            os.rename(os.path.join(col_dir, ".v1.new"), os.path.join(col_dir, "colfile-v1"))

        with colfile.File(path, "r", verify=True) as f:
            t = threading.Thread(target=second_rename)
            t.start()
            try:
                col = f["x"]
            finally:
                t.join()
            assert col.size == 13
            assert col.ext_state == "current"
            np.testing.assert_array_equal(col[10:], np.arange(3) + 100.5)
    finally:
        holder.communicate("\n", timeout=60)


CHURN = """
import sys, numpy as np, colfile
path, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(5)
for k in range(n):
    with colfile.File(path, "a") as f:
        if k % 7 == 6:   # a replacement: a new version swapped in
            f.create("x", data=rng.random(4000), nfile=8)
            continue
        col = f["x"]
        if k % 5 == 4:
            col.append(rng.random(7), nfile=1)
        else:
            s = int(rng.integers(0, col.size - 4))
            col.write(s, rng.random(4))
print("done", flush=True)
"""


def test_check_racing_appends_updates_and_replaces_reports_no_damage(path: str) -> None:
    """`colfile check` while another process commits in-place updates,
    appends and replacements: a column that changed under it is checked
    again (or noted), never called damaged."""
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(4000, dtype="<f8"), nfile=8)
    churn = subprocess.Popen([sys.executable, "-c", CHURN, path, "400"], env=child_env(),
                             stdout=subprocess.PIPE, text=True)
    bad = []
    runs = 0
    try:
        while churn.poll() is None and runs < 60:
            r = subprocess.run([sys.executable, "-m", "colfile.cli", "check", "--json", "--no-progress", path],
                               env=child_env(), capture_output=True, text=True, timeout=120)
            runs += 1
            rep = json.loads(r.stdout)
            if rep["damaged_columns"] or r.returncode != 0:
                bad.append(rep["problems"])
    finally:
        churn.wait(timeout=300)
    assert churn.returncode == 0
    assert runs >= 3
    assert bad == []
