"""CRC32C and statistics are used only when provably current
(docs/format.md 8.1, 8.4): queries stay exact whatever colfile-v1 says, and
`colfile check` tells damaged metadata (exit 1) from unknown or stale
metadata and from updates in progress (not damage)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from typing import Any

import numpy as np
import pytest

import colfile
from childenv import child_env
from exttext import reseal

N = 100


def _mass(path: str, nfile: int = 2) -> np.ndarray:
    """A File with column Mass = 0..99 in nfile blobs, chunks of 10 rows."""
    data = np.arange(N, dtype="f8")
    with colfile.File(path, "w") as f:
        f.create("Mass", data=data, nfile=nfile, chunk_rows=10)
    return data


def _count(path: str, expr: str, **kw: Any) -> int:
    with colfile.File(path, "r", **kw) as f, warnings.catch_warnings():
        warnings.simplefilter("ignore", colfile.TornWarning)
        return len(colfile.where(f, expr).rows)


def _ext(path: str) -> str:
    return os.path.join(path, "Mass", "colfile-v1")


def _edit_ext(path: str, old: bytes, new: bytes, *, sealed: bool) -> None:
    """Replace old by new in Mass's colfile-v1 (once); with ``sealed`` the
    checksum line is made right again, as a writer would."""
    with open(_ext(path), "rb") as fh:
        text = fh.read()
    assert text.count(old) == 1, text
    text = text.replace(old, new)
    with open(_ext(path), "wb") as fh:
        fh.write(reseal(text) if sealed else text)
    if sealed:  # and given the header's mtime, as a commit does
        header = os.path.join(path, "Mass", "header")
        os.utime(_ext(path), ns=(os.stat(header).st_atime_ns, os.stat(header).st_mtime_ns))


def _check_repair_check(cli: Any, path: str, damage: list[str], repaired: str) -> None:
    """`colfile check` finds the damage (status 1, every line of
    ``damage``), `repair` repairs it (its report says ``repaired``), and
    `check` then finds it all good."""
    status, out, _ = cli("check", path)
    assert status == 1, out
    for line in damage:
        assert line in out, out
    status, out, _ = cli("repair", path)
    assert status == 0 and repaired in out, out
    status, out, _ = cli("check", path)
    assert status == 0 and "all good" in out, out


def test_bigfile_zeros_make_statistics_unknown(path: str, cli: Any) -> None:
    """bigfile writing zeros keeps every byte sum (and so the rows/rawsum
    key), but rewrites the header: the header's stamp no longer matches,
    even within the clock tick of colfile's commit."""
    bigfile = pytest.importorskip("bigfile")
    data = _mass(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with bigfile.File(path) as bf:
            with bf["Mass"] as b:
                b.write(10, np.zeros(10))  # rows 10-19 were 10..19
    data[10:20] = 0
    with colfile.File(path) as f:
        col = f["Mass"]
        assert col.ext_state == "stale"
        assert col.blob_info(0)["sum"] == col.checksums()[0]["sum"]  # unchanged by zeros
        assert not col.chunk_stats()["valid"].any()
        assert col.blob_info(0)["crc32c"] is None
    assert _count(path, "Mass < 0.5") == int((data < 0.5).sum()) == 11
    status, out, _ = cli("query", path, "Mass < 0.5", "--count")
    assert status == 0 and out.strip() == "11"
    # unknown, and said so; the byte sum (bigfile's running sum, which
    # zeros do not change) no longer matches the data: that alone is damage
    status, out, _ = cli("check", path)
    assert "header changed since colfile recorded them" in out and "colfile index" in out
    assert status == 1 and "1 damaged blob" in out and "rows 0-49: sum mismatch" in out, out
    # colfile index makes them current again, and exact
    status, _, _ = cli("index", path)
    assert status == 0
    with colfile.File(path) as f:
        assert f["Mass"].ext_state == "current"
        assert f["Mass"].chunk_stats()["valid"].all()
        sel = colfile.where(f, "Mass < 0.5")
        np.testing.assert_array_equal(sel.rows, np.flatnonzero(data < 0.5))
        assert sel.report.skipped > 0


def test_changed_byte_in_statistics_is_damage(path: str, cli: Any) -> None:
    """max=99 -> max=59 in the statistics text: the file's checksum fails,
    so nothing it records is used, `check` reports it, `repair` fixes it."""
    data = _mass(path, nfile=1)
    _edit_ext(path, b"max=99 ", b"max=59 ", sealed=False)
    with colfile.File(path, verify=True) as f:
        col = f["Mass"]
        assert col.ext_state == "damaged"
        assert col.blob_info(0)["crc32c"] is None
        assert not col.chunk_stats()["valid"].any()
        assert len(colfile.where(f, "Mass > 60").rows) == int((data > 60).sum()) == 39
        np.testing.assert_array_equal(col[:], data)  # a verifying read has nothing to verify
    status, out, _ = cli("query", path, "Mass > 60", "--count")
    assert status == 0 and out.strip() == "39"
    _check_repair_check(cli, path, ["damaged metadata: colfile-v1 fails its own checksum",
                                    "DAMAGE FOUND: 1 column with damaged metadata in 1 column"],
                        "repaired (damaged metadata")
    with colfile.File(path) as f:
        assert f["Mass"].ext_state == "current"
        assert f["Mass"].chunk_stats()["valid"].all()
        sel = colfile.where(f, "Mass > 60")
        assert len(sel.rows) == 39


def test_inconsistent_statistics_are_damage(path: str, cli: Any) -> None:
    """A minimum above the maximum, in a file whose checksum is right (as a
    faulty writer would leave it): unusable, and `check` says so."""
    data = _mass(path, nfile=2)
    _edit_ext(path, b"min=20 max=29 ", b"min=29 max=20 ", sealed=True)
    with colfile.File(path) as f:
        col = f["Mass"]
        assert col.ext_state == "current"
        # blob 0 (rows 0-49) unknown: one record; blob 1: five chunks
        assert col.chunk_stats()["valid"].tolist() == [False] + [True] * 5
        assert col.verify_blob(0) == {"STATS_DAMAGED"}
        assert col.verify_blob(1) == {"OK"}
    assert _count(path, "(Mass > 20) & (Mass < 30)") == 9
    _check_repair_check(cli, path,
                        ["rows 0-49: stats damaged: the recorded statistics are inconsistent"],
                        "stats damaged")
    with colfile.File(path) as f:
        assert f["Mass"].chunk_stats()["valid"].all()
        np.testing.assert_array_equal(f["Mass"][:], data)


def test_torn_column_statistics_unknown(path: str) -> None:
    """An interrupted in-place update (the writer vanished), read with
    torn='warn': the rows as they are, no statistic used."""
    _mass(path)
    code = f"""
        import os, numpy as np, colfile
        f = colfile.File({path!r}, "r+")
        c = f["Mass"]
        c[10:20] = -1.0
        os._exit(0)
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True, env=child_env(),
                   timeout=120)
    assert os.path.exists(os.path.join(path, "Mass", "colfile-torn"))
    with colfile.File(path, "r", torn="warn") as f, warnings.catch_warnings():
        warnings.simplefilter("ignore", colfile.TornWarning)
        col = f["Mass"]
        assert col.torn and col.ext_state == "torn"
        assert not col.chunk_stats()["valid"].any()
        assert len(col.where("Mass < 0").rows) == 10
    assert _count(path, "Mass < 0", torn="warn") == 10


def test_live_update_statistics_unknown(path: str, cli: Any) -> None:
    """Another process is updating rows in place and holds the column
    open: readers use no statistic, `check` says "update in progress"."""
    _mass(path)
    code = f"""
        import sys, numpy as np, colfile
        f = colfile.File({path!r}, "r+")
        c = f["Mass"]
        c[10:20] = -1.0
        print("written", flush=True)
        sys.stdin.readline()
        f.close()
    """
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=child_env(),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "written"
        with colfile.File(path) as f:
            col = f["Mass"]
            assert not col.torn and col.ext_state == "updating"
            assert not col.chunk_stats()["valid"].any()
            assert len(col.where("Mass < 0").rows) == 10
        status, out, _ = cli("query", path, "Mass < 0", "--count")
        assert status == 0 and out.strip() == "10"
        status, out, _ = cli("check", path)
        assert status == 0, out
        assert "update in progress" in out and "DAMAGE" not in out
        status, out, _ = cli("repair", path)
        assert status == 0 and "update in progress" in out, out
    finally:
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.close()
        assert child.wait(timeout=60) == 0
    with colfile.File(path) as f:
        assert f["Mass"].ext_state == "current"
        sel = f["Mass"].where("Mass < 0")
        assert len(sel.rows) == 10 and sel.report.skipped == 9


def test_in_place_update_then_check_is_clean(path: str, cli: Any) -> None:
    """After a clean r+ update the byte sum counts the rewritten rows twice
    (bigfile's rule) while the CRC32C is right: a note, not damage."""
    data = _mass(path)
    with colfile.File(path, "r+") as f:
        f["Mass"][10:20] = -1.0
    data[10:20] = -1
    with colfile.File(path) as f:
        col = f["Mass"]
        assert col.verify_blob(0) == {"SUM_MISMATCH"}  # the CRC is known and right
        assert col.chunk_stats()["valid"].all()
        assert len(col.where("Mass < 0").rows) == 10
    status, out, _ = cli("check", path)
    assert status == 0, out
    assert "DAMAGE" not in out and "rows rewritten in place" in out
    status, out, _ = cli("check", "--json", path)
    assert status == 0 and '"rewritten_blobs": 1' in out


def test_copies(path: str, tmp_path: Any, cli: Any) -> None:
    """cp -a keeps modification times: the statistics stay current.  A
    plain copy gives both files new times, usually different ones: unknown,
    answers exact, `colfile index` restores."""
    data = _mass(path)
    kept = str(tmp_path / "kept")
    subprocess.run(["cp", "-a", path, kept], check=True)
    with colfile.File(kept) as f:
        assert f["Mass"].ext_state == "current"
    status, out, err = cli("query", kept, "Mass < 5", "--count", "--report")
    assert status == 0 and out.strip() == "5"
    assert "10 in all, 9 skipped" in err, err
    plain = str(tmp_path / "plain")
    shutil.copytree(path, plain, copy_function=shutil.copyfile)
    with colfile.File(plain) as f:
        # the same clock tick for both files would keep them current
        assert f["Mass"].ext_state in ("stale", "current")
        np.testing.assert_array_equal(colfile.where(f, "Mass < 5").rows, np.flatnonzero(data < 5))
    # files copied in different ticks: their times differ
    header = os.path.join(plain, "Mass", "header")
    st = os.stat(os.path.join(plain, "Mass", "colfile-v1"))
    os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns + 4_000_000))
    with colfile.File(plain) as f:
        assert f["Mass"].ext_state == "stale"
        sel = colfile.where(f, "Mass < 5")
        np.testing.assert_array_equal(sel.rows, np.flatnonzero(data < 5))
        assert sel.report.skipped == 0
    assert cli("index", plain)[0] == 0
    with colfile.File(plain) as f:
        assert f["Mass"].ext_state == "current"
        assert colfile.where(f, "Mass < 5").report.skipped == 9


def test_colfile_v1_of_older_writers(path: str, cli: Any) -> None:
    """Without the header stamp (colfile before it was recorded) nothing in
    colfile-v1 is trusted: unknown, not damage."""
    data = _mass(path)
    with open(_ext(path), "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    with open(_ext(path), "wb") as fh:
        fh.write(b"".join(ln for ln in lines if not ln.startswith(b"CRC32C:")))
    with colfile.File(path) as f:
        assert f["Mass"].ext_state == "unbound"
        assert not f["Mass"].chunk_stats()["valid"].any()
        assert len(f["Mass"].where("Mass > 90").rows) == int((data > 90).sum())
    status, out, _ = cli("check", path)
    assert status == 0 and "without a recorded CRC32C" in out, out


def test_header_touched_after_commit(path: str) -> None:
    """Any later write of the header changes its stamp, even one that
    keeps its bytes and happens right after the commit."""
    _mass(path)
    hp = os.path.join(path, "Mass", "header")
    with open(hp, "rb") as fh:
        text = fh.read()
    with open(hp, "wb") as fh:  # as bigfile does: in place
        fh.write(text)
    with colfile.File(path) as f:
        assert f["Mass"].ext_state == "stale"
