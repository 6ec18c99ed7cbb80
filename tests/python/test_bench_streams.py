"""Smoke test of bench/streams.py: a --quick run of every method in one
process, its table, JSON and read-back checks; arguments it refuses.  It
asserts nothing about speed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchscript import refusal, run_script, table_rows
from childenv import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "streams.py"


def test_streams_quick(tmp_path: Path) -> None:
    out = tmp_path / "streams.json"
    text = run_script([sys.executable, str(SCRIPT), "--quick", "--tmpdir", str(tmp_path), "--json", str(out)],
                      env=child_env(), timeout=600)
    assert "every trial verified" in text
    rows = table_rows(text)
    methods = [r.split("|")[1].strip() for r in rows[1:]]
    assert methods == ["stream", "stream-raw", "files", "files-tofile", "grow"]
    assert [r.split("|")[5].strip() for r in rows if r.startswith("| files |")] == ["1.00"]
    assert "stream with statistics takes" in text
    for m in ("stream", "stream-raw"):  # where a stream's time goes
        assert f"phases of {m} (median s, slowest rank): open+create " in text
    data = json.loads(out.read_text())
    assert data["ranks"] == 1 and set(data["trials"]) == set(methods)
    assert set(data["phases"]) == {"stream", "stream-raw"}
    assert all(len(p) == 3 and all(x > 0 for x in p) for t in data["phases"].values() for p in t)
    assert all(len(t) == 2 and all(x["seconds"] > 0 for x in t) for t in data["trials"].values())
    # the same bytes for every method but grow (fewer records)
    sizes = {m: {x["bytes"] for x in t} for m, t in data["trials"].items()}
    assert len({next(iter(v)) for m, v in sizes.items() if m != "grow"}) == 1
    assert not list(tmp_path.glob("cf-bench-streams-*"))  # cleaned up


def test_streams_durable_subset(tmp_path: Path) -> None:
    text = run_script([sys.executable, str(SCRIPT), "--quick", "--durable", "--methods", "files,stream",
                       "--repeats", "3", "--tmpdir", str(tmp_path)], env=child_env(), timeout=600)
    assert "durable" in text and "3 interleaved trials" in text
    assert [r.split("|")[1].strip() for r in table_rows(text)[1:]] == ["files", "stream"]


def test_streams_refuses(tmp_path: Path) -> None:
    assert "unknown" in refusal([sys.executable, str(SCRIPT), "--methods", "stream,nfs"])
    assert "--min-bytes" in refusal([sys.executable, str(SCRIPT), "--min-bytes", "9000", "--max-bytes", "4096"])
