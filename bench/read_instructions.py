"""Instructions per small read, counted by valgrind (callgrind), for one or
more colfile trees: a fixed per-read cost found without timing anything.

    python bench/read_instructions.py TREE [TREE ...] [--rows 8388608]
        [--reads 50] [--tmpdir DIR]

A TREE is a colfile checkout with a build (``TREE/python`` and
``TREE/build/release/libcolfile.so``), or ``PYTHONDIR,LIBRARY``: the
directory holding the ``colfile`` package and the library it is to load.  For each, a snapshot like
bench/peers.py's (``Position`` f8x3, ``Velocity`` f4x3, ``ID`` i8, ``Mass``
f4, ``--rows`` rows) is written by that tree; then the program that peers'
"rows" phase times -- open the File, read 1% of the rows of every column
from the middle, close -- runs under callgrind once after a warm-up and
then ``--reads`` more times.  Two processes, one with no extra reads and
one with ``--reads``, are counted whole; the difference divided by
``--reads`` is the cost of one read, in user-space instructions (the
kernel's copy of the bytes is not counted: it is the same for every tree).
``PYTHONHASHSEED=0`` and ``OPENBLAS_NUM_THREADS=1`` keep the counts
reproducible to a few instructions.  Printed per tree: instructions per
read, and Python function calls per read (``sys.setprofile``), where the
binding's share shows.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAM = r'''
import os, shutil, sys
import numpy as np
import colfile
mode, path, rows, reads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
COLUMNS = [("Position", "f8", 3), ("Velocity", "f4", 3), ("ID", "i8", 1), ("Mass", "f4", 1)]
def make(n):
    rng = np.random.default_rng(1)
    return {nm: (rng.random((n, m) if m > 1 else (n,)).astype(dt) if dt[0] == "f"
                 else np.arange(n, dtype=dt)) for nm, dt, m in COLUMNS}
def write(p, d):
    with colfile.File(p, "w") as f:
        for k, v in d.items():
            f.create(k, data=v)
def read(p, sel):
    with colfile.File(p) as f:
        return {nm: f[nm][sel] for nm, _, _ in COLUMNS}
if mode == "write":
    write(path, make(rows))
    sys.exit()
m = rows // 100
sel = slice(rows // 2 - m // 2, rows // 2 - m // 2 + m)
read(path, sel)  # imports, the library, first-call costs
if mode == "calls":
    calls = [0]
    def count(frame, event, arg):
        if event == "call":
            calls[0] += 1
    sys.setprofile(count)
for _ in range(reads):
    got = read(path, sel)
if mode == "calls":
    sys.setprofile(None)
    print("calls", calls[0] / reads)
'''


def where(tree: str) -> tuple[Path, Path]:
    """(directory holding the colfile package, library) of a TREE argument."""
    if "," in tree:
        pydir, library = tree.split(",", 1)
        return Path(pydir), Path(library)
    return Path(tree) / "python", Path(tree) / "build" / "release" / "libcolfile.so"


def env_for(tree: str) -> dict[str, str]:
    pydir, library = where(tree)
    env = dict(os.environ, PYTHONPATH=str(pydir), PYTHONHASHSEED="0",
               OPENBLAS_NUM_THREADS="1", COLFILE_LIBRARY=str(library))
    env.pop("COLFILE_NO_MMAP", None)
    return env


def counted(valgrind: str, tree: str, script: Path, snap: Path, rows: int, reads: int,
            out: Path) -> int:
    """Instructions of one whole process (callgrind's total)."""
    cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
           str(script), "read", str(snap), str(rows), str(reads)]
    proc = subprocess.run(cmd, env=env_for(tree), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}:\n{proc.stderr[-2000:]}")
    m = re.search(r"Collected : (\d+)", proc.stderr)
    if not m:
        raise SystemExit(f"no instruction count in callgrind's output:\n{proc.stderr[-2000:]}")
    return int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", metavar="TREE")
    ap.add_argument("--rows", type=int, default=8388608)
    ap.add_argument("--reads", type=int, default=50)
    ap.add_argument("--tmpdir", default=None)
    args = ap.parse_args(argv)
    if args.rows < 100 or args.reads < 1:
        ap.error("--rows must be at least 100 and --reads at least 1")
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        ap.error("valgrind not found")
    for t in args.trees:
        pydir, library = where(t)
        if not (pydir / "colfile").is_dir() or not library.exists():
            ap.error(f"{t}: no colfile package in {pydir} or no library {library}")
    scratch = Path(tempfile.mkdtemp(prefix="read-instructions-", dir=args.tmpdir))
    try:
        script = scratch / "program.py"
        script.write_text(PROGRAM)
        print(f"| tree | instructions per read ({args.rows // 100} rows of 4 columns) |")
        print("|---|---|")
        for i, tree in enumerate(args.trees):
            snap = scratch / f"snap{i}"
            subprocess.run([sys.executable, str(script), "write", str(snap), str(args.rows),
                            "0"], env=env_for(tree), check=True)
            base = counted(valgrind, tree, script, snap, args.rows, 0, scratch / "cg0")
            more = counted(valgrind, tree, script, snap, args.rows, args.reads, scratch / "cg1")
            print(f"| {tree} | {(more - base) / args.reads:,.0f} |", flush=True)
            calls = subprocess.run([sys.executable, str(script), "calls", str(snap),
                                    str(args.rows), "10"], env=env_for(tree),
                                   capture_output=True, text=True, check=True).stdout
            print(f"| {tree}: Python calls per read | {calls.split()[-1]} |", flush=True)
            shutil.rmtree(snap)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
