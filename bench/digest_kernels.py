"""Per-byte cost of the write's digest kernels (byte sum, CRC32C, statistics,
all of them as the inline write runs them, and pwrite(2) beside them) for
one or more colfile trees, side by side: bench/digest_kernels.c built
against each tree's static library and sources.

    python bench/digest_kernels.py TREE[=BUILD] [TREE[=BUILD] ...]
        [--repeats 3] [--columns f8x3,f8nx3,i8x1] [--callgrind] [--quick]
        [--write MIB] [--tmpdir DIR]

BUILD defaults to TREE/build/release (it must hold libcolfile.a).  The
trees' programs run interleaved (A B A B ...), each pinned to the last CPU
it may use; for every column and kernel the best time stamp counter ticks
per byte over all repeats is kept (in cache, a 256 KiB write piece), which
other processes on the machine move little.  ``--callgrind`` also counts
instructions per byte of each kernel (its wrapper's inclusive count under
valgrind, over the C program's ``--quick`` run).  ``--quick`` times that
short run too (a smoke test: its figures mean little).  valgrind runs no AVX-512 code: where
the library takes AVX-512 (the carry-less folding CRC32C), the counts are of
the AVX2 path it falls back to there.

``--write MIB`` measures whole writes instead: MIB MiB of f8x3 into the page
cache by ``write(2)`` after reserving the blocks (what ``numpy.tofile``
does) and by ``cf_column_write`` with the digest inline (a pinned rank's
write without Python or MPI), interleaved, memory primed before each; per
tree the median CPU time in time stamp counter ticks per byte and the median
of the per-repeat ratios tofile/colfile (bench/pinned.py's colfile/numpy).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "digest_kernels.c"


def build(tree: Path, builddir: Path, out: Path) -> Path:
    lib = builddir / "libcolfile.a"
    if not lib.is_file():
        sys.exit(f"{lib} does not exist: build the library first (cmake --build {builddir})")
    dirs = sorted(p for p in (tree / "src").iterdir() if p.is_dir() and p.name != "mpi")
    cmd = [os.environ.get("CC", "cc"), "-O2", "-g", "-std=gnu11", "-D_GNU_SOURCE", f"-I{tree / 'include'}",
           *(f"-I{d}" for d in dirs), str(SRC), str(lib), "-lpthread", "-lm", "-o", str(out)]
    print("+", " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True)
    return out


def parse(text: str) -> dict[tuple[str, str], float]:
    """(column, kernel) -> hot ticks per byte."""
    got = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 6 and re.fullmatch(r"[a-z0-9]+x\d", f[0]):
            got[(f[0], f[1])] = float(f[2])
    return got


def callgrind(exe: Path, column: str, tmpdir: str) -> dict[str, float]:
    """kernel -> instructions per byte (inclusive count of bk_<kernel>)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe), "--quick",
                        "--only", column, tmpdir], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(out)], check=True,
                             capture_output=True, text=True).stdout
    nbytes = 4 * (256 << 10) + (8 << 20)  # --quick: 4 pieces in cache, one walk of 8 MiB
    ir = {}
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+)\s.*:bk_(\w+?)(?:\.constprop\.\d+)?\s", line)
        if m:
            ir[m.group(2)] = int(m.group(1).replace(",", "")) / nbytes
    return ir


def write_table(exes: list[Path], names: list[str], args: argparse.Namespace, cpu: int) -> str:
    """--write: a row per tree, runs interleaved (A B A B)."""
    got: list[list[tuple[float, float, float]]] = [[] for _ in exes]
    for _ in range(args.repeats):
        for i, exe in enumerate(exes):
            out = subprocess.run(["taskset", "-c", str(cpu), str(exe), "--write", str(args.write), "--repeats", "5",
                                  args.tmpdir], check=True, capture_output=True, text=True).stdout
            f = [x for x in out.splitlines() if x.startswith("write tofile ")][-1].split()
            got[i].append((float(f[2]), float(f[4]), float(f[6])))
    lines = [f"write {args.write} MiB of f8x3 into the page cache, CPU time per byte (ticks, medians of "
             f"{args.repeats} runs of 5)", "",
             "| tree | tofile tick/B | colfile tick/B | colfile/tofile (speed) |", "|---|---|---|---|"]
    for name, runs in zip(names, got):
        med = [statistics.median(r[k] for r in runs) for k in range(3)]
        lines.append(f"| {name} | {med[0]:.4f} | {med[1]:.4f} | {med[2]:.3f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--columns", default="f8x3,f8nx3,i8x1")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write", type=int, default=0, metavar="MIB",
                    help="whole page-cache writes of MIB MiB against write(2) instead of the kernels")
    ap.add_argument("--tmpdir", default=tempfile.gettempdir())
    args = ap.parse_args(argv)
    cpu = max(os.sched_getaffinity(0))
    exes = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, spec in enumerate(args.trees):
            tree, _, bdir = spec.partition("=")
            t = Path(tree).resolve()
            exes.append(build(t, Path(bdir).resolve() if bdir else t / "build" / "release",
                              Path(tmp) / f"digest_kernels_{i}"))
        if args.write > 0:
            print(write_table(exes, [Path(t.partition("=")[0]).name or t for t in args.trees], args, cpu))
            return 0
        cols = args.columns.split(",")
        best: list[dict[tuple[str, str], float]] = [{} for _ in exes]
        for _ in range(args.repeats):
            for i, exe in enumerate(exes):  # interleaved: A B A B
                for col in cols:
                    quick = ["--quick"] if args.quick else []
                    out = subprocess.run(["taskset", "-c", str(cpu), str(exe), *quick, "--only", col, args.tmpdir],
                                         check=True, capture_output=True, text=True).stdout
                    for key, v in parse(out).items():
                        best[i][key] = min(v, best[i].get(key, v))
        ir = [{col: callgrind(exe, col, args.tmpdir) for col in cols} if args.callgrind else {} for exe in exes]
    names = [Path(s.partition("=")[0]).name or s for s in args.trees]
    head = "| column | kernel | " + " | ".join(f"{n} tick/B" for n in names)
    if len(exes) > 1:
        head += " | ratio (last/first)"
    if args.callgrind:
        head += " | " + " | ".join(f"{n} instr/B" for n in names)
    print(head + " |")
    print("|" + "---|" * (head.count("|")))
    for key in sorted(best[0], key=lambda k: (cols.index(k[0]), k[1])):
        vals = [b.get(key, float("nan")) for b in best]
        row = f"| {key[0]} | {key[1]} | " + " | ".join(f"{v:.4f}" for v in vals)
        if len(exes) > 1:
            row += f" | {vals[-1] / vals[0]:.2f}"
        if args.callgrind:
            row += " | " + " | ".join(f"{r.get(key[0], {}).get(key[1], float('nan')):.3f}" for r in ir)
        print(row + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
