"""colfile index: CRC32C and statistics for Files written by other tools
(the original bigfile 0.1.52) or with stale statistics; serially and under
``mpiexec -n 2`` and ``-n 4``.

The MPI tests launch ``mpiexec`` (next to the Python executable, from pip's
``mpich``) in a subprocess.  Without it (or mpi4py) they skip on a developer
machine and FAIL under CI (``CI`` set)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mpi"))
from mpirun import child_env, launch, mpiexec  # noqa: E402

COLUMNS = {
    # name: (array, Nfile)
    "1/Position": (np.random.default_rng(1).uniform(0, 100, (1000, 3)), 3),
    "1/ID": (np.random.default_rng(2).permutation(1000).astype("i8"), 4),
    "1/Mass": (np.random.default_rng(3).lognormal(size=1000).astype("f4"), 1),
    "1/Flag": (np.random.default_rng(4).random(1000) > 0.5, 2),
    "2/Vel": (np.random.default_rng(5).normal(size=(300, 2)).astype(">f4"), 2),
    "2/Z": (np.arange(5) * (1 - 2j), 1),
    "empty": (np.zeros(0, "f8"), 1),
}


def _bigfile() -> Any:
    import bigfile  # the original 0.1.52, installed where the tests run

    assert bigfile.__version__ == "0.1.52"
    return bigfile


def _bigfile_snapshot(path: Path) -> str:
    """A File written by the original bigfile: no CRC32C, no statistics."""
    bigfile = _bigfile()
    with bigfile.File(str(path), create=True) as f:
        for name, (arr, nfile) in COLUMNS.items():
            f.create_from_array(name, arr, Nfile=nfile)
        f.create("meta", dtype=None)
        with f["meta"] as b:
            b.attrs["Version"] = 3
    return str(path)


def _files(root: str) -> dict[str, bytes]:
    out = {}
    for p in sorted(Path(root).rglob("*")):
        if p.is_file():
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


def _assert_indexed(path: str) -> None:
    """Every blob has a current CRC32C, every chunk valid statistics, and
    they are numpy's."""
    import colfile

    with colfile.File(path) as f:
        for name, (arr, nfile) in COLUMNS.items():
            col = f[name]
            assert col.nfile == nfile
            for i in range(nfile):
                assert col.blob_info(i)["crc32c"] is not None, (name, i)
                assert col.verify_blob(i) == {"OK"}, (name, i)
            stats = col.chunk_stats()
            stats = stats.reshape(len(stats), -1) if len(stats) else stats
            assert stats["valid"].all(), name
            if arr.dtype.kind == "c" or not len(arr):
                continue
            flat = arr.reshape(len(arr), -1)
            for k in range(len(stats)):
                r0, n = int(stats[k, 0]["first_row"]), int(stats[k, 0]["rows"])
                for j in range(stats.shape[1]):
                    s = stats[k, j]
                    part = flat[r0:r0 + n, j]
                    assert s["count"] == n
                    assert s["min"] == float(part.min()) and s["max"] == float(part.max())


def _index(cli: Any, *args: Any) -> tuple[int, str, str]:
    return cli("index", "--no-progress", *args)


# ---------------------------------------------------------------------------
# serial


def test_bigfile_output_gets_crc_and_statistics(cli, tmp_path, lib):
    path = _bigfile_snapshot(tmp_path / "snap")
    before = _files(path)
    status, out, _ = cli("check", path)
    assert status == 0 and "14 blobs without a recorded CRC32C" in out
    status, out, _ = cli("stats", path, "1/Mass")
    assert "UNKNOWN" in out

    status, out, err = _index(cli, path)
    assert (status, err) == (0, "")
    (line,) = out.splitlines()
    assert re.match(r"indexed 14 blobs, 39480 bytes \(38\.6 KiB\), in 7 columns in [\d.]+ s"
                    r".*; 1 block without data$", line), line
    _assert_indexed(path)

    # data, headers and attributes untouched; only colfile's own files added
    after = _files(path)
    for rel, data in before.items():
        assert after[rel] == data, rel
    added = sorted(set(after) - set(before))
    # and the File's catalog (docs/format.md 8.5), rebuilt by every writer
    catalog = [a for a in added if a.startswith(".colfile-catalog/colfile-catalog-")]
    assert ".colfile-catalog/colfile-catalog-index" in catalog  # and its shards, if any
    added = [a for a in added if a not in catalog]
    assert sorted(added) == sorted(f"{c}/colfile-v1" for c in COLUMNS)

    # check now verifies by CRC32C: no blob left without one
    status, out, _ = cli("check", "-v", path)
    assert status == 0 and "without a recorded CRC32C" not in out
    assert out.count("(crc32c ok)") == 14 and "no crc32c recorded" not in out
    status, out, _ = cli("stats", path, "1/Mass")
    assert "UNKNOWN" not in out and "statistics known for 1 of 1 blob" in out

    # the original bigfile still reads it, the same data
    bigfile = _bigfile()
    with bigfile.File(path) as f:
        for name, (arr, _) in COLUMNS.items():
            with f[name] as b:
                np.testing.assert_array_equal(b[:], arr)


def test_second_run_has_nothing_to_do_and_force_redoes(cli, tmp_path, lib):
    path = _bigfile_snapshot(tmp_path / "snap")
    assert _index(cli, path)[0] == 0
    files = _files(path)
    status, out, _ = _index(cli, path)
    assert status == 0
    assert "indexed 0 blobs, 0 bytes" in out
    assert "14 blobs already current, skipped (--force redoes them)" in out
    assert out.rstrip().endswith("nothing to do")
    assert _files(path) == files
    status, out, _ = _index(cli, "--force", path, "1/ID")
    assert status == 0 and out.startswith("indexed 4 blobs, 8000 bytes")
    _assert_indexed(path)


def test_columns_and_groups(cli, tmp_path, lib):
    import colfile

    path = _bigfile_snapshot(tmp_path / "snap")
    status, out, _ = _index(cli, path, "2", "1/Mass")
    assert status == 0 and out.startswith("indexed 4 blobs, 6480 bytes (6.3 KiB), in 3 columns")
    with colfile.File(path) as f:
        assert f["1/Mass"].chunk_stats()["valid"].all()
        assert f["2/Vel"].chunk_stats(0)["valid"].all()
        assert not f["1/ID"].chunk_stats()["valid"].any()
        assert f["1/ID"].blob_info(0)["crc32c"] is None


def test_dry_run_changes_nothing(cli, tmp_path, lib):
    path = _bigfile_snapshot(tmp_path / "snap")
    files = _files(path)
    status, out, _ = _index(cli, "--dry-run", path, "1/ID")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == f"{path}/1/ID/000000: column '1/ID' rows 0-249: would index 2000 bytes"
    assert len(lines) == 5
    assert lines[-1] == "would index 4 blobs, 8000 bytes (7.8 KiB), in 1 column"
    assert _files(path) == files


def test_only_stale_blobs(cli, tmp_path, lib):
    import colfile

    bigfile = _bigfile()
    path = str(tmp_path / "f")
    x = np.arange(100.0)
    with colfile.File(path, "w") as f:
        f.create("x", data=x, nfile=2, chunk_rows=16)
        f.create("y", data=x, nfile=2, chunk_rows=16)  # untouched: current
    with bigfile.File(path) as f:
        with f["x"] as b:
            b.write(60, np.full(5, -1.0))   # column x stale now: its header changed
    x[60:65] = -1
    status, out, _ = _index(cli, "--dry-run", path)
    lines = out.splitlines()
    assert lines[0].endswith("000000: column 'x' rows 0-49: would index 400 bytes")
    assert lines[1].endswith("000001: column 'x' rows 50-99: would index 400 bytes")
    status, out, _ = _index(cli, path)
    assert status == 0
    assert out.startswith("indexed 2 blobs, 800 bytes, in 2 columns")
    assert "2 blobs already current, skipped" in out
    with colfile.File(path) as f:
        s = f["x"].chunk_stats()
        assert s["valid"].all()
        assert s["min"][4] == -1.0 and s["min"].tolist() == [
            x[i:min(i + 16, 50 if i < 50 else 100)].min() for i in
            [0, 16, 32, 48, 50, 66, 82, 98]]
        # its CRC32C is known now (the byte sum keeps bigfile's rule: it
        # counts the overwritten bytes too, so verify_blob reports that)
        assert f["x"].blob_info(1)["crc32c"] is not None
        assert f["x"].verify_blob(1) == {"SUM_MISMATCH"}


def test_statistics_switched_off_then_indexed(cli, tmp_path, lib):
    import colfile

    path = str(tmp_path / "f")
    with colfile.File(path, "w") as f:
        c = f.create("x", "i4", size=50, nfile=2)
        lib.cf_column_set_statistics(c._handle(), 0)
        c[:] = np.arange(50, dtype="i4")
    status, out, _ = _index(cli, path)
    assert status == 0 and out.startswith("indexed 2 blobs, 200 bytes, in 1 column")
    with colfile.File(path) as f:
        s = f["x"].chunk_stats()
        assert s["valid"].all() and s["sum"].sum() == sum(range(50))


def test_damaged_blob_is_reported_others_indexed(cli, tmp_path, lib):
    import colfile

    path = _bigfile_snapshot(tmp_path / "snap")
    blob = os.path.join(path, "1", "ID", "000002")
    os.truncate(blob, 100)
    status, out, err = _index(cli, path)
    assert status == 1
    (line,) = err.splitlines()
    assert line.startswith(f"{blob}: column '1/ID' rows 500-749: cannot index: ")
    assert out.startswith("indexed 13 blobs")
    assert out.rstrip().endswith("FAILED: 1 blob could not be indexed")
    with colfile.File(path) as f:
        col = f["1/ID"]
        assert [col.blob_info(i)["crc32c"] is not None for i in range(4)] == \
            [True, True, False, True]
        assert f["1/Mass"].chunk_stats()["valid"].all()


def test_progress_bar(cli, tmp_path, lib):
    path = _bigfile_snapshot(tmp_path / "snap")
    status, out, err = cli("index", "--progress", path)
    assert status == 0
    assert "indexing [" in err and "100%" in err and "38.6 KiB / 38.6 KiB" in err


def test_errors(cli, tmp_path, sample):
    status, out, err = _index(cli, str(tmp_path / "nothing"))
    assert status == 2 and out == "" and len(err.splitlines()) == 1
    status, out, err = _index(cli, sample, "nope")
    assert status == 2 and "no column or group 'nope'" in err
    status, out, err = cli("index", sample, "--progress", "--no-progress")
    assert status == 2


def test_quiet(cli, tmp_path, lib):
    path = _bigfile_snapshot(tmp_path / "snap")
    status, out, err = _index(cli, "-q", path)
    assert (status, out, err) == (0, "", "")
    _assert_indexed(path)


# ---------------------------------------------------------------------------
# MPI


def _run_index(nranks: int | None, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "colfile.cli", "index", "--no-progress", *args, path]
    if nranks is None:
        return subprocess.run(cmd, env=child_env(), capture_output=True, text=True,
                              timeout=120)
    return launch(nranks, cmd)


@pytest.mark.parametrize("nranks", [2, 4])
def test_under_mpiexec(nranks, tmp_path, lib):
    mpiexec()   # fails under CI when missing, skips elsewhere
    serial = _bigfile_snapshot(tmp_path / "serial")
    proc = _run_index(None, serial)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    path = _bigfile_snapshot(tmp_path / "par")
    before = _files(path)
    proc = launch(nranks, [sys.executable, "-m", "colfile.cli", "index", path])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout   # rank 0 reports, once
    assert re.match(rf"indexed 14 blobs, 39480 bytes \(38\.6 KiB\), in 7 columns in [\d.]+ s "
                    rf"on {nranks} ranks", lines[0]), lines[0]
    assert proc.stderr == ""
    _assert_indexed(path)
    after = _files(path)
    for rel, data in before.items():
        assert after[rel] == data, rel
    # each blob was indexed whole by one rank: the same bytes as serially
    # (but for the catalog, docs/format.md 8.5, whose stamps hold inode numbers)
    cat = ".colfile-catalog/colfile-catalog-"
    assert cat + "index" in after and {k: v for k, v in after.items() if not k.startswith(cat)} == \
        {k: v for k, v in _files(serial).items() if not k.startswith(cat)}

    # colfile check now shows every CRC32C known; a second parallel run skips all
    proc = subprocess.run([sys.executable, "-m", "colfile.cli", "check", "-v", path],
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.count("(crc32c ok)") == 14, proc.stdout
    assert "without a recorded CRC32C" not in proc.stdout
    proc = launch(nranks, [sys.executable, "-m", "colfile.cli", "index", path])
    assert proc.returncode == 0 and "14 blobs already current" in proc.stdout
    assert _files(path) == after


def test_under_mpiexec_failure_on_one_rank(tmp_path, lib):
    """A damaged blob on any rank: every rank finishes, rank 0 reports it,
    the others' blobs are committed, exit status 1."""
    import colfile

    mpiexec()
    path = _bigfile_snapshot(tmp_path / "par")
    blob = os.path.join(path, "1", "Position", "000002")   # the 10th of 14 blobs: rank 1 of 2
    os.truncate(blob, 10)
    proc = launch(2, [sys.executable, "-m", "colfile.cli", "index", "--no-progress", path])
    assert proc.returncode != 0
    err = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(err) == 1 and err[0].startswith(
        f"{blob}: column '1/Position' rows 666-999: cannot index: rank 1: "), proc.stderr
    assert "indexed 13 blobs" in proc.stdout and "FAILED: 1 blob" in proc.stdout
    with colfile.File(path) as f:
        col = f["1/Position"]
        assert [col.blob_info(i)["crc32c"] is not None for i in range(3)] == [True, True, False]
        assert f["2/Vel"].chunk_stats(0)["valid"].all()


def test_mpi_flag_without_launcher(tmp_path, lib):
    """--mpi with one process and no launcher: MPI with one rank."""
    mpiexec()
    path = _bigfile_snapshot(tmp_path / "snap")
    proc = _run_index(None, path, "--mpi")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("indexed 14 blobs") and " on " not in proc.stdout
    _assert_indexed(path)


@pytest.mark.parametrize("nranks", [2])
def test_check_under_mpiexec_finds_damage_on_any_rank(nranks, tmp_path, lib):
    """colfile check shares the blobs over the ranks; rank 0 reports every
    damaged blob, in order, once, and the exit status says so."""
    mpiexec()
    path = _bigfile_snapshot(tmp_path / "par")
    serial = subprocess.run([sys.executable, "-m", "colfile.cli", "check", path],
                            env=child_env(), capture_output=True, text=True, timeout=120)
    assert serial.returncode == 0, serial.stdout
    with open(os.path.join(path, "1", "Position", "000002"), "r+b") as fh:
        byte = fh.read(1)
        fh.seek(0)
        fh.write(bytes([byte[0] ^ 0x40]))
    proc = launch(nranks, [sys.executable, "-m", "colfile.cli", "check", "--no-progress", path])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and "1/Position/000002" in lines[0] and "sum mismatch" in lines[0], lines
    assert f"on {nranks} ranks: DAMAGE FOUND: 1 damaged blob" in lines[1]
