"""Planning a selective query against the chunk count: with the binary chunk
index (colfile-index-v1, docs/format.md 8.6) and from the text statistics.

    python3 bench/index_planning.py [--chunks 1e3,1e4,1e5,1e6] [--text-max 6e4]
        [--repeats 5] [--dir DIR]

For each chunk count N it writes one sorted ``<i4`` column of N rows with
one row per chunk (a synthetic column whose index has N chunk records; 4
bytes of data per chunk, so the index, not the data, is what grows), then
opens the File afresh and times ``colfile.where(f, "(x >= c) & (x < c +
300)")`` (a query matching 100 chunks somewhere in the middle), best of
``--repeats`` fresh opens, and reports the index bytes the planner read
(columns below 1024 chunks have no index: their line shows the text
statistics alone).
Up to ``--text-max`` chunks it also times the same query with the index
file moved away, which plans from the statistics text of ``colfile-v1``
(parsed whole; above 2^16 chunk records the text holds no chunk lines, the
index alone has them).  Sub-linear planning shows as a time and a byte count that
grow far slower than N; the text column grows with N.

10^7 chunks take about 1.5 GB of memory while the column is written; run
that size only on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

import colfile  # noqa: E402
from colfile import chunkindex  # noqa: E402


def plan_once(path: str) -> tuple[float, int, int]:
    with colfile.File(path, "r") as f:
        col = f["x"]
        n = col.size
        c = (n // 2) * 3
        t = time.perf_counter()
        sel = colfile.where(f, f"(x >= {c}) & (x < {c + 300})")
        dt = time.perf_counter() - t
        assert sel.count == 100, sel.count
        return dt, chunkindex.bytes_read(col), sel.report.chunks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", default="1e3,1e4,1e5,1e6")
    ap.add_argument("--text-max", type=float, default=6e4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.chunks.split(",")]
    base = tempfile.mkdtemp(prefix="index-planning-", dir=args.dir)
    print("| chunks | index bytes | planning, index (ms) | index bytes read | cells | "
          "planning, text statistics (ms) |")
    print("|---:|---:|---:|---:|---:|---:|")
    try:
        for n in sizes:
            path = os.path.join(base, f"n{n}")
            with colfile.File(path, "w") as f:
                f.create("x", data=np.arange(n, dtype="<i4") * 3, chunk_rows=1)
            ipath = Path(path) / "x" / "colfile-index-v1"
            best = min(plan_once(path) for _ in range(args.repeats))
            text = "-"
            if not ipath.exists():  # below 1024 chunks: the text alone
                print(f"| {n} | - | - | - | {best[2]} | {best[0] * 1e3:.2f} |", flush=True)
                shutil.rmtree(path)
                continue
            if n <= args.text_max:
                moved = ipath.with_name("moved-index")
                ipath.rename(moved)
                text = f"{min(plan_once(path)[0] for _ in range(args.repeats)) * 1e3:.2f}"
                moved.rename(ipath)
            print(f"| {n} | {ipath.stat().st_size} | {best[0] * 1e3:.2f} | {best[1]} | {best[2]} | {text} |",
                  flush=True)
            shutil.rmtree(path)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
