"""bench/streams.py --ab: two source trees' builds in alternating jobs (here
the tree under test twice, as two trees of symbolic links), its table of
both builds and B over A, wall-clock and CPU.  It asserts nothing about
speed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import colfile
from benchscript import refusal, run_script, table_rows
from childenv import child_env
from colfile._ffi import lib, library_path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "streams.py"


def tree(at: Path) -> Path:
    """A source tree as --ab wants one: python/ and build/release/libcolfile.so."""
    lib()  # loaded: its path known
    (at / "build" / "release").mkdir(parents=True)
    (at / "python").symlink_to(Path(colfile.__file__).resolve().parents[1])
    (at / "build" / "release" / "libcolfile.so").symlink_to(Path(library_path()).resolve())
    return at


def test_streams_ab(tmp_path: Path) -> None:
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    out = tmp_path / "ab.json"
    text = run_script([sys.executable, str(SCRIPT), "--ab", f"{a},{b}", "--ranks", "1", "--quick", "--repeats", "3",
                       "--methods", "stream,files", "--tmpdir", str(tmp_path), "--json", str(out)],
                      env=child_env(), timeout=600)
    assert "3 jobs per build alternating" in text and f"A: {a}" in text and f"B: {b}" in text
    rows = table_rows(text)
    assert [r.split("|")[1].strip() for r in rows[1:]] == ["stream", "files"]
    files = [c.strip() for c in rows[-1].split("|")[1:-1]]
    assert files[3:5] == ["1.00", "1.00"] and files[6:8] == ["1.00", "1.00"]  # files over files, wall and CPU
    for name in "AB":
        assert f"phases of stream, {name} (median s, slowest rank): open+create " in text
    data = json.loads(out.read_text())
    assert [len(j) for j in data["jobs"]] == [3, 3]
    assert all(t["cpu"] > 0 and t["seconds"] > 0 for js in data["jobs"] for j in js for m in j["trials"].values()
               for t in m)
    assert not list(tmp_path.glob("cf-bench-streams-*"))  # cleaned up


def test_streams_ab_refuses(tmp_path: Path) -> None:
    assert "--ab takes two" in refusal([sys.executable, str(SCRIPT), "--ab", str(tmp_path)])
