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
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import colfile

from damage import flip_bits

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
    flip_bits(blob, 3, 0x40)
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
            f.create("x", data=rng.random(4000), nfile=8, overwrite=True)
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


def _faultshim() -> str:
    build = os.environ.get("COLFILE_C_BUILD")
    shim = os.path.join(build, "tests", "crash", "faultshim.so") if build else ""
    if not os.path.exists(shim):
        if os.environ.get("CI"):
            pytest.fail("no faultshim.so in $COLFILE_C_BUILD (CI is set: this test must run)")
        pytest.skip("no faultshim.so in $COLFILE_C_BUILD")
    return shim


# torn="warn", as colfile check opens (with "raise" a failed open is tried
# again to report the error, which hides the race)
OPENER = """
import sys, warnings, numpy as np, colfile
warnings.simplefilter("ignore", colfile.TornWarning)
with colfile.File(sys.argv[1], "r", verify=True, torn="warn") as f:
    col = f["x"]
    print(col.torn, col.ext_state, ",".join(map(str, col[:])), flush=True)
"""


def test_open_racing_the_commit_of_an_update_is_not_torn(path: str, tmp_path) -> None:
    """An open that sees colfile-torn while an in-place update is live,
    then probes the writer lock only after that update has committed and
    let go of it, must not take the marker it saw for an interrupted
    update: the open is stopped (faultshim, SIGSTOP) at the lock probe,
    the writer commits meanwhile, then the open goes on."""
    shim = _faultshim()
    old = _old(path)
    new = old.copy()
    new[2:4] = [20.5, 30.5]
    writer = colfile.File(path, "a")
    try:
        col = writer["x"]
        col.write(2, new[2:4])   # colfile-torn made; the lock held
        assert os.path.exists(os.path.join(path, "x", "colfile-torn"))
        # where the open probes the lock: the n-th open below the File
        report = str(tmp_path / "opens")
        env = child_env(LD_PRELOAD=shim, CF_FAULT_SCOPE=path, CF_FAULT_OPS="open",
                        CF_FAULT_MODE="count", CF_FAULT_REPORT=report)
        out = subprocess.run([sys.executable, "-c", OPENER, path], env=env, capture_output=True,
                             text=True, timeout=120, check=True).stdout.split()
        assert out[:2] == ["False", "updating"]
        with open(report) as fh:
            opens = [ln.split() for ln in fh.read().splitlines()[1:]]
        at = next(int(n) for n, _, rel, *_ in opens if os.path.basename(rel).startswith(".colfile-lock"))
        env = child_env(LD_PRELOAD=shim, CF_FAULT_SCOPE=path, CF_FAULT_OPS="open",
                        CF_FAULT_ACTION="stop", CF_FAULT_AT=str(at))
        opener = subprocess.Popen([sys.executable, "-c", OPENER, path], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while True:   # stopped at the probe, the marker seen
                with open(f"/proc/{opener.pid}/stat") as fh:
                    if fh.read().rsplit(")", 1)[1].split()[0] == "T":
                        break
                assert opener.poll() is None and time.monotonic() < deadline
                time.sleep(0.01)
            col.close()      # the update commits: marker removed, lock let go
            writer.close()
            assert not os.path.exists(os.path.join(path, "x", "colfile-torn"))
        finally:
            opener.send_signal(signal.SIGCONT)
            out_text, err_text = opener.communicate(timeout=120)
        assert opener.returncode == 0, err_text
        torn, state, values = out_text.split()
        assert torn == "False"
        assert state == "current"
        np.testing.assert_array_equal(np.array(values.split(","), dtype="<f8"), new)
    finally:
        writer.close()


def _stopped(proc: subprocess.Popen) -> None:
    """Wait until ``proc`` stops itself (faultshim's SIGSTOP)."""
    deadline = time.monotonic() + 60
    while True:
        with open(f"/proc/{proc.pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)


UPDATER = """
import sys, numpy as np, colfile
with colfile.File(sys.argv[1], "a") as f:
    f["x"].write(0, np.asarray([float(sys.argv[2])], dtype="<f8"))
"""


def test_writer_opened_during_a_commit_keeps_the_crc32c_it_did_not_write(path: str, tmp_path) -> None:
    """A writer that opens the column after another's in-place update has
    renamed its header into place but before it removed colfile-torn (an
    update in progress: the CRC32C and statistics unknown to the opener),
    and changes the column after that update committed, records the
    CRC32C and statistics of the blobs it does not write: colfile-v1 after
    its commit vouches for every blob, and `colfile check` finds no damage
    (bigfile's byte sums of updated blobs differ from the data)."""
    shim = _faultshim()
    old = _old(path)
    # where the updater removes colfile-torn: its n-th unlink below the File
    report = str(tmp_path / "unlinks")
    env = child_env(LD_PRELOAD=shim, CF_FAULT_SCOPE=path, CF_FAULT_OPS="unlink",
                    CF_FAULT_MODE="count", CF_FAULT_REPORT=report)
    subprocess.run([sys.executable, "-c", UPDATER, path, "0.5"], env=env, check=True, timeout=120)
    with open(report) as fh:
        unlinks = [ln.split() for ln in fh.read().splitlines()[1:]]
    at = next(int(n) for n, _, rel, *_ in unlinks if rel == "x/colfile-torn")
    env = child_env(LD_PRELOAD=shim, CF_FAULT_SCOPE=path, CF_FAULT_OPS="unlink",
                    CF_FAULT_ACTION="stop", CF_FAULT_AT=str(at))
    updater = subprocess.Popen([sys.executable, "-c", UPDATER, path, "1.5"], env=env,
                               stderr=subprocess.PIPE, text=True)
    try:
        _stopped(updater)   # header and colfile-v1 committed, marker and lock still there
        f = colfile.File(path, "a")
        col = f["x"]
        assert col.ext_state == "updating"
    finally:
        updater.send_signal(signal.SIGCONT)
        _, err_text = updater.communicate(timeout=120)
    try:
        assert updater.returncode == 0, err_text
        col.write(7, np.asarray([70.5], dtype="<f8"))   # blob 1 only
        col.close()
    finally:
        f.close()
    want = old.copy()
    want[0], want[7] = 1.5, 70.5
    with colfile.File(path, "r", verify=True) as f:
        col = f["x"]
        assert col.ext_state == "current"
        for i in range(col.nfile):
            assert col.blob_info(i).get("crc32c") is not None, f"blob {i}: CRC32C unknown"
        np.testing.assert_array_equal(col[:], want)
    out = subprocess.run([sys.executable, "-m", "colfile.cli", "check", "--json", "--no-progress", path],
                         env=child_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    rep = json.loads(out.stdout)
    assert rep["ok"] and rep["crc_unknown"] == 0 and rep["damaged_columns"] == []
