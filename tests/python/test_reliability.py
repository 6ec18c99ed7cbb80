"""The commit promise (docs/reliability.md), shown on real files: a writer
that dies leaves every column absent, at its previous version or at its new
one; interrupted in-place updates are marked torn; checksums are verified
on read; concurrent writers are refused; leftovers are cleaned up.

Writers die for real here (os._exit in a child process, after the data
calls, before the commit).  tests/crash/ kills them at every I/O call."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile


def _run_child(code: str, env_extra: dict[str, str] | None = None) -> None:
    """Run ``code`` in a fresh interpreter that ends with os._exit(0): no
    close, no flush, no finalizers: the writer vanishes."""
    env = dict(os.environ)
    env.update(env_extra or {})
    script = "import os, numpy as np, colfile\n" + textwrap.dedent(code) + "\nos._exit(0)\n"
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=120)


def _snapshot(path: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _, files in os.walk(path):
        for name in files:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = fh.read()
    return out


def test_new_column_is_invisible_until_committed(path: str) -> None:
    with colfile.File(path, "w") as f:
        c = f.create("x", "i8", size=10)
        c[:] = np.arange(10)
        # this File shows its own uncommitted column; another reader does not
        assert "x" in f and f.keys() == ["x"]
        with colfile.File(path, "r") as g:
            assert "x" not in g and g.keys() == []
        c.flush()
        with colfile.File(path, "r") as g:
            np.testing.assert_array_equal(g["x"][:], np.arange(10))
    # no staging or lock file left (the catalog, docs/format.md 8.5, is a cache)
    assert sorted(os.listdir(path)) == [".colfile-catalog", "x"]


def test_killed_creator_leaves_no_column(path: str) -> None:
    colfile.File(path, "w").close()
    _run_child(f"""
        f = colfile.File({path!r}, "a")
        c = f.create("x", "f8", size=1000, nfile=3, overwrite=True)
        c[:] = np.arange(1000.0)
    """)
    with colfile.File(path, "r") as f:
        assert f.keys() == []  # absent, never zeros
    # bigfile sees nothing either (hidden staging directory)
    bigfile = pytest.importorskip("bigfile")
    assert bigfile.File(path).blocks == []


def test_killed_replacement_keeps_the_previous_version(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(100, dtype="i4"))
        f["x"].attrs["v"] = 1
    before = _snapshot(path)
    _run_child(f"""
        f = colfile.File({path!r}, "a")
        c = f.create("x", "i4", size=50, overwrite=True)
        c[:] = -np.ones(50, "i4")
        c.attrs["v"] = 2
    """)
    with colfile.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][:], np.arange(100, dtype="i4"))
        assert f["x"].attrs["v"] == 1
    after = _snapshot(path)
    assert ({k: v for k, v in after.items() if not k.startswith(".")}
            == {k: v for k, v in before.items() if not k.startswith(".")})
    with colfile.File(path, "r+") as f:
        removed = f.cleanup()
    assert any(".colfile-stage.x." in line for line in removed), removed
    # the catalog is a cache (format.md 8.5): its index and shards aside
    cat = os.path.join(".colfile-catalog", "colfile-catalog-")
    assert {k: v for k, v in _snapshot(path).items() if not k.startswith(cat)} == \
        {k: v for k, v in before.items() if not k.startswith(cat)}


def test_killed_append_keeps_the_previous_rows(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(10, dtype="i8"))
    _run_child(f"""
        f = colfile.File({path!r}, "a")
        c = f["x"]  # held: dropping it would close (commit) it
        c.append(np.arange(10, 30, dtype="i8"))
    """)
    with colfile.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][:], np.arange(10))


def test_killed_in_place_update_marks_the_column_torn(path: str, cli: Any) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(100, dtype="f8"), nfile=2)
        f.create("y", data=np.arange(5, dtype="i2"))
    _run_child(f"""
        f = colfile.File({path!r}, "r+")
        c = f["x"]
        c[10:20] = -1.0
    """)
    with colfile.File(path, "r") as f:
        np.testing.assert_array_equal(f["y"][:], np.arange(5))  # untouched columns read
        with pytest.raises(colfile.TornError, match="colfile-torn"):
            f["x"]
    with colfile.File(path, "r", torn="warn") as f:
        with pytest.warns(colfile.TornWarning) as warned:
            col = f["x"]
        assert warned[0].filename == __file__  # points at the caller's line
        assert col.torn
        values = col[:]
    with colfile.File(path, "r", torn="warn") as f:  # a group's column: the same
        with pytest.warns(colfile.TornWarning) as warned:
            assert "x" in f
        assert warned[0].filename == __file__
    status, out, _ = cli("check", path)
    assert status == 1 and "torn" in out and "1 torn column" in out
    status, out, _ = cli("repair", path)
    assert status == 0 and "repaired (torn" in out and "mix old and new" in out
    status, out, _ = cli("check", path)
    assert status == 0, out
    with colfile.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][:], values)
        assert not f["x"].torn


def test_live_update_is_not_a_crash(path: str) -> None:
    """While its writer lives, the marker means 'being written': readers
    see the rows as they are (as with bigfile), not a TornError."""
    with colfile.File(path, "w") as f:
        f.create("x", data=np.zeros(8, "i4"))
    with colfile.File(path, "r+") as f:
        x = f["x"]  # held open: the update is in progress until it closes
        x[0:4] = 7
        assert os.path.exists(os.path.join(path, "x", "colfile-torn"))
        with colfile.File(path, "r") as g:
            np.testing.assert_array_equal(g["x"][:], [7, 7, 7, 7, 0, 0, 0, 0])
    assert not os.path.exists(os.path.join(path, "x", "colfile-torn"))
    with colfile.File(path, "r") as g:
        np.testing.assert_array_equal(g["x"][:], [7, 7, 7, 7, 0, 0, 0, 0])


def test_second_writer_is_refused(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=np.zeros(8, "i4"))
    with colfile.File(path, "r+") as f:
        x = f["x"]
        x[0:1] = 1
        # another process (a child) cannot write it meanwhile
        code = textwrap.dedent(f"""
            import colfile, sys
            with colfile.File({path!r}, "r+") as g:
                try:
                    g["x"][1:2] = 2
                except colfile.BusyError as exc:
                    print("busy:", exc)
                    sys.exit(3)
        """)
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == 3, res.stderr
        assert "another writer" in res.stdout
        assert f"{os.path.join(path, 'x')}: " in res.stdout
        assert f"lock in {os.path.join(path, '.colfile-lock')} is held" in res.stdout
        # nor can a second handle of this process
        with colfile.File(path, "r+") as g:
            y = g["x"]
            with pytest.raises(colfile.BusyError):
                y[2:3] = 5
    with colfile.File(path, "r+") as f:  # released at close
        f["x"][1:2] = 2
    with colfile.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][:3], [1, 2, 0])


def test_durable_false_still_commits_atomically(path: str) -> None:
    with colfile.File(path, "w", durable=False) as f:
        f.create("x", data=np.arange(5))
    _run_child(f"""
        f = colfile.File({path!r}, "a", durable=False)
        c = f.create("x", "i8", size=3, overwrite=True)
        c[:] = 9
    """)
    with colfile.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][:], np.arange(5))


def test_every_single_bit_flip_is_detected(path: str, cli: Any) -> None:
    data = np.random.default_rng(5).integers(0, 2**31, size=24, dtype="i4")  # 96 bytes
    with colfile.File(path, "w") as f:
        f.create("x", data=data, nfile=2)
    blob = os.path.join(path, "x", "000001")
    original = Path(blob).read_bytes()
    for bit in range(len(original) * 8):
        damaged = bytearray(original)
        damaged[bit // 8] ^= 1 << (bit % 8)
        Path(blob).write_bytes(bytes(damaged))
        with colfile.File(path, "r", verify=True) as f:
            assert "CRC_MISMATCH" in f["x"].verify_blob(1), bit
            with pytest.raises(colfile.ChecksumError, match=r"x/000001.*rows 12\.\.23"):
                f["x"][:]
            f["x"][:12]  # blob 0 is intact and reads
        if bit % 97 == 0:  # the command line too, on a sample of bits
            status, out, _ = cli("check", path)
            assert status == 1 and "000001" in out and "crc mismatch" in out
    Path(blob).write_bytes(original)
    with colfile.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][:], data)


def test_verify_is_switched_on_by_request(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(16, dtype="u1"))
    blob = os.path.join(path, "x", "000000")
    raw = bytearray(Path(blob).read_bytes())
    raw[3] ^= 0x10
    Path(blob).write_bytes(bytes(raw))
    with colfile.File(path, "r") as f:  # off by default
        assert f["x"][3] == 3 ^ 0x10
    with colfile.File(path, "r", verify=True) as f:
        with pytest.raises(colfile.ChecksumError):
            f["x"][:]
        assert f["x"][3] == 3 ^ 0x10  # partial reads are not checked


def test_repair_fixes_long_and_stray_blobs(path: str, cli: Any) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(10, dtype="i8"), nfile=2)
    with open(os.path.join(path, "x", "000001"), "ab") as fh:
        fh.write(b"\0" * 24)  # an interrupted append's bytes
    Path(path, "x", "000002").write_bytes(b"\1" * 8)
    status, out, _ = cli("check", path)
    assert status == 1 and "long" in out
    status, out, _ = cli("repair", "--dry-run", path)
    assert status == 0 and "would repair" in out
    status, out, _ = cli("repair", path)
    assert status == 0 and "truncated" in out and "stray" in out, out
    assert sorted(os.listdir(os.path.join(path, "x"))) == [
        "000000", "000001", "attr-v2", "colfile-v1", "header"]
    assert cli("check", path)[0] == 0


def test_repair_reports_lost_rows(path: str, cli: Any) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(10, dtype="i8"), nfile=2)
    os.truncate(os.path.join(path, "x", "000001"), 8)
    status, out, _ = cli("repair", path)
    assert status == 1 and "cannot repair" in out and "short" in out
