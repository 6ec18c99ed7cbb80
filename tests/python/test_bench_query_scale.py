"""Smoke test of bench/query.py --scale (bench/query_scale.py): a tiny run,
warm and cold, must verify every way against numpy and print its table; it
asserts nothing about speed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from benchscript import refusal, run_script, table_rows
from childenv import child_env

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPT = BENCH / "query.py"


def test_query_scale_quick(tmp_path: Path) -> None:
    md = tmp_path / "out.md"
    md.write_text("# Queries\n\ntext kept\n")
    cmd = [sys.executable, str(SCRIPT), "--scale", "--rows", "20000", "--repeats", "1",
           "--chunk-rows", "1000", "--fractions", "0.01,0.2", "--dir", str(tmp_path),
           "--markdown", str(md)]
    out = run_script(cmd, env=child_env())
    assert out.count("verified: every way's rows and Mass equal numpy's") == 4
    rows = table_rows(out)
    assert rows[0].startswith("| sphere | cache | rows selected | colfile | colfile without hints | "
                              "colfile, chunk records only | full read + numpy |")
    body = [r.split(" | ")[:2] for r in rows[1:]]
    assert body == [["| 1%", "warm"], ["| 1%", "cold"], ["| 20%", "warm"], ["| 20%", "cold"]]
    text = md.read_text()
    assert text.startswith("# Queries\n\ntext kept\n")
    assert "<!-- query-scale:begin -->" in text and "--fractions 0.01,0.2" in text
    assert [p for p in os.listdir(tmp_path) if p.startswith("colfile-bench")] == []


def test_morton_order_clusters() -> None:
    """Rows in Morton order: a chunk of consecutive rows covers a small box
    (what lets the statistics skip chunks outside a sphere)."""
    sys.path.insert(0, str(BENCH))
    try:
        import query_scale
    finally:
        sys.path.remove(str(BENCH))
    data = query_scale.make_data(1 << 15, 3)
    pos = data["Position"].reshape(32, 1024, 3)  # 32 chunks of 1024 rows
    extent = pos.max(axis=1) - pos.min(axis=1)
    assert np.median(np.prod(extent, axis=1)) < 0.1 * query_scale.BOX**3
    assert sorted(data["ID"].tolist()) == list(range(1 << 15))


def test_query_scale_refuses_bad_fractions(tmp_path: Path) -> None:
    err = refusal([sys.executable, str(SCRIPT), "--scale", "--fractions", "0.6",
                   "--dir", str(tmp_path)])
    assert "--fractions a comma-separated list of numbers in (0, 0.5)" in err
