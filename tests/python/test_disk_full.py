"""A full disk during writes to committed columns, on a real full file
system (a small tmpfs mounted for the test; it needs the right to mount,
else those tests are skipped) and, everywhere, with ENOSPC injected by the
fault shim of tests/crash at the write of the marker or of the data:

* an in-place update whose torn-update marker cannot be written fails
  cleanly, naming the marker, and leaves no marker: the rows are unchanged,
  so the column must not read as torn;
* an in-place update whose first data write fails before any committed
  byte changed leaves the column untorn too; once a byte changed, the
  marker stays (the column may mix old and new rows);
* a failed append removes the blobs it added (no header lists them), so
  the disk does not stay full until ``colfile repair``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import colfile
from childenv import child_env
from test_crash import shim  # noqa: F401 - the fixture: faultshim.so

PAGE = os.sysconf("SC_PAGE_SIZE")


@pytest.fixture
def small_fs(tmp_path: Path, lib: Any) -> Iterator[Path]:
    """A 4 MiB tmpfs of its own (tmpfs counts whole pages)."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(root: Path, leave: int = 0) -> Path:
    """Fill the file system with one file, then give back `leave` bytes."""
    filler = root / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        chunk = b"\xff" * PAGE
        while True:
            try:
                os.write(fd, chunk)
            except OSError:
                break
        if leave:
            os.ftruncate(fd, os.lseek(fd, 0, os.SEEK_END) - leave)
    finally:
        os.close(fd)
    return filler


def _sparse_column(path: str) -> np.ndarray:
    """Column a: 4 pages of f8 with the middle two pages never written
    (holes: writing there needs new pages).  Returns its rows."""
    rows = 4 * PAGE // 8
    with colfile.File(path, "w") as f:
        c = f.create("a", "f8", size=rows)
        c[:10] = np.arange(10.0)
        c[rows - 8:] = np.arange(8.0) + 100
    with colfile.File(path, "r") as f:
        return f["a"][:]


def _leftovers(coldir: Path) -> list[str]:
    return sorted(n for n in os.listdir(coldir) if n == "colfile-torn" or n.startswith("."))


def _assert_untorn(path: str, old: np.ndarray) -> None:
    with colfile.File(path, "r") as f:
        c = f["a"]  # no TornError
        assert not c.torn
        np.testing.assert_array_equal(c[:], old)


def test_marker_that_cannot_be_written_is_not_left(small_fs: Path, cli: Any) -> None:
    path = str(small_fs / "F")
    old = _sparse_column(path)
    _fill(small_fs)
    f = colfile.File(path, "r+")
    try:
        c = f["a"]
        with pytest.raises(colfile.StorageError) as exc:
            c[:10] = -1.0
        msg = str(exc.value)
        assert os.path.join(path, "a", "colfile-torn") in msg and "No space left" in msg, msg
        assert _leftovers(small_fs / "F" / "a") == []
    finally:
        with pytest.raises(colfile.StorageError, match="not committed"):
            f.close()
    _assert_untorn(path, old)
    status, out, _ = cli("check", path)
    assert status == 0, out


def test_data_write_failing_first_leaves_the_column_untorn(small_fs: Path) -> None:
    """Room for the marker only: the first write into a hole fails before
    any committed byte changed."""
    path = str(small_fs / "F")
    old = _sparse_column(path)
    _fill(small_fs, leave=PAGE)
    f = colfile.File(path, "r+")
    try:
        c = f["a"]
        with pytest.raises(colfile.StorageError, match="No space left"):
            c[PAGE // 8:2 * PAGE // 8] = -1.0
        assert _leftovers(small_fs / "F" / "a") == []
    finally:
        with pytest.raises(colfile.StorageError, match="not committed"):
            f.close()
    _assert_untorn(path, old)


def test_data_write_failing_after_a_change_stays_torn(small_fs: Path) -> None:
    """The first piece (the end of a page that exists) is written, the next
    one (a hole) fails: committed bytes changed, so the marker stays."""
    path = str(small_fs / "F")
    _sparse_column(path)
    _fill(small_fs, leave=PAGE)
    f = colfile.File(path, "r+")
    try:
        c = f["a"]
        with pytest.raises(colfile.StorageError, match="No space left"):
            c[PAGE // 8 - 4:2 * PAGE // 8] = -1.0
    finally:
        with pytest.raises(colfile.StorageError, match="not committed"):
            f.close()
    assert _leftovers(small_fs / "F" / "a") == ["colfile-torn"]
    with colfile.File(path, "r") as f:
        with pytest.raises(colfile.TornError):
            f["a"]


def test_failed_append_removes_its_new_blobs(small_fs: Path) -> None:
    path = str(small_fs / "F")
    with colfile.File(path, "w") as f:
        f.create("a", data=np.arange(10.0))
    coldir = small_fs / "F" / "a"
    before = sorted(os.listdir(coldir))
    filler = _fill(small_fs, leave=4 * 65536)
    free = os.statvfs(small_fs).f_bavail
    f = colfile.File(path, "r+")
    try:
        c = f["a"]
        with pytest.raises(colfile.StorageError, match="No space left"):
            c.append(np.ones(100_000), nfile=3)
        # given back at once, not only at close
        assert sorted(os.listdir(coldir)) == before
        assert os.statvfs(small_fs).f_bavail == free
    finally:
        with pytest.raises(colfile.StorageError, match="not committed"):
            f.close()
    assert sorted(os.listdir(coldir)) == before
    with colfile.File(path, "r") as f:
        np.testing.assert_array_equal(f["a"][:], np.arange(10.0))
    # once there is room, the same append works
    filler.unlink()
    with colfile.File(path, "r+") as f:
        f["a"].append(np.ones(100_000), nfile=3)
    with colfile.File(path, "r") as f:
        assert f["a"].size == 100_010


# ---------------------------------------------------------------------------
# the same with ENOSPC injected (no mount needed)

def _under_shim(shim: Path, path: str, at: int, code: str) -> str:
    """Run ``code`` (f: the File open r+) in a child whose at-th write
    below the File, and every later one, fails with ENOSPC; its output."""
    script = textwrap.dedent(f"""
        import numpy as np, colfile
        f = colfile.File({path!r}, "r+")
        c = f["a"]
        try:
    {textwrap.indent(textwrap.dedent(code), "        ")}
        except colfile.StorageError as exc:
            print("write:", exc)
        try:
            f.close()
        except colfile.StorageError as exc:
            print("close:", exc)
    """)
    env = child_env(LD_PRELOAD=str(shim), CF_FAULT_SCOPE=path, CF_FAULT_OPS="write",
                    CF_FAULT_AT=str(at), CF_FAULT_ACTION="enospc", CF_FAULT_STICKY="1")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("at, what", [(1, "marker"), (2, "data")])
def test_injected_enospc_leaves_the_column_untorn(path: str, shim: Path, at: int, what: str) -> None:
    """Writes counted below the File: the marker's (1), then the data's (2)."""
    old = _sparse_column(path)
    out = _under_shim(shim, path, at, "c[PAGE // 8:2 * PAGE // 8] = -1.0".replace("PAGE", str(PAGE)))
    assert "write:" in out and "No space left" in out and "close:" in out, out
    if what == "marker":
        assert os.path.join(path, "a", "colfile-torn") + ": cannot create the torn-update marker" in out
    assert _leftovers(Path(path) / "a") == []
    _assert_untorn(path, old)


def test_injected_enospc_append_leaves_no_blobs(path: str, shim: Path) -> None:
    with colfile.File(path, "w") as f:
        f.create("a", data=np.arange(10.0))
    before = sorted(os.listdir(Path(path) / "a"))
    out = _under_shim(shim, path, 1, "c.append(np.ones(1000), nfile=3)")
    assert "write:" in out and "No space left" in out, out
    assert sorted(os.listdir(Path(path) / "a")) == before
    with colfile.File(path, "r") as f:
        np.testing.assert_array_equal(f["a"][:], np.arange(10.0))
