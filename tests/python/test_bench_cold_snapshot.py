"""Smoke test of bench/cold_snapshot.py: a tiny run must check every read
and print one row per reader (two libraries compared side by side); it
asserts nothing about speed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from benchscript import refusal, run_script, table_rows
from childenv import child_env

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "cold_snapshot.py"


def test_cold_snapshot_quick(tmp_path: Path, lib: Any) -> None:
    from colfile import _ffi

    env = child_env()
    # the build under test: the one this process loaded (CI installs the
    # package, with its library inside, and sets no COLFILE_LIBRARY)
    library = env.get("COLFILE_LIBRARY") or _ffi.library_path()
    cmd = [sys.executable, str(SCRIPT), "--rows", "4096", "--repeats", "2",
           "--readers", "colfile,colfile-verify,h5py,numpy,dd",
           "--library", f"a={library}", "--library", f"b={library}",
           "--prime", str(1 << 20), "--tmpdir", str(tmp_path / "work"),
           "--json", str(tmp_path / "rounds.json")]
    (tmp_path / "work").mkdir()
    rows = table_rows(run_script(cmd, env=env))
    assert rows[0].startswith("| reader | median | q1 | q3 | best | median / h5py's |")
    names = [r.split(" | ")[0][2:] for r in rows[1:]]
    assert names == ["colfile@a", "colfile@b", "colfile-verify@a", "colfile-verify@b", "h5py",
                     "numpy", "dd"]
    h5 = rows[1 + names.index("h5py")].split(" | ")
    assert h5[5] == "1.00" and h5[7] == "-"  # its median against itself; no pairing with itself
    assert h5[6] == "-"  # no dd-direct in this run
    # the last column pairs each library's colfile reader with the first's, round by round
    assert rows[0].rstrip().endswith("| per round / @a |")
    last = {n: r.rstrip(" |").split(" | ")[-1] for n, r in zip(names, rows[1:])}
    assert last["colfile@a"] == last["colfile-verify@a"] == last["h5py"] == last["dd"] == "-"
    assert float(last["colfile@b"]) > 0 and float(last["colfile-verify@b"]) > 0
    rounds = json.loads((tmp_path / "rounds.json").read_text())
    assert sorted(rounds["gbps_per_round"]) == sorted(names)
    assert all(len(v) == 2 and min(v) > 0 for v in rounds["gbps_per_round"].values())
    assert os.listdir(tmp_path / "work") == []  # its snapshot is removed
    # every reader reads a copy of its own: none comes back from a cache
    # (the host's, on a virtual machine) warmed by another reader
    files = rounds["files"]
    assert sorted(files) == sorted(names) and len(set(files.values())) == len(names), files


def test_cold_snapshot_shared_files(tmp_path: Path, lib: Any) -> None:
    """--shared-files: the readers of one system read the same copy."""
    cmd = [sys.executable, str(SCRIPT), "--rows", "4096", "--repeats", "1",
           "--readers", "colfile,colfile-verify,h5py,dd", "--shared-files",
           "--prime", str(1 << 20), "--tmpdir", str(tmp_path), "--json", str(tmp_path / "rounds.json")]
    run_script(cmd, env=child_env())
    files = json.loads((tmp_path / "rounds.json").read_text())["files"]
    assert files["colfile"] == files["colfile-verify"] and files["h5py"] == files["dd"], files
    assert files["colfile"] != files["h5py"]


def test_cold_snapshot_refuses_unknown_readers_and_libraries(tmp_path: Path) -> None:
    stderr = refusal([sys.executable, str(SCRIPT), "--readers", "colfile,hdf9",
                      "--tmpdir", str(tmp_path)])
    assert "unknown readers ['hdf9']" in stderr
    stderr = refusal([sys.executable, str(SCRIPT), "--library", str(tmp_path / "nope.so"),
                      "--tmpdir", str(tmp_path)])
    assert "NAME=PATH of an existing libcolfile" in stderr
