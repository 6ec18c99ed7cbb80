"""What the fine level of the chunk index costs a write: the same writes
through two builds of libcolfile, one without the fine level (``--base``,
e.g. a build of the commit before it) and one with it (``--new``).

    python3 bench/fine_cost.py --base BUILD_A --new BUILD_B [--mib 64]
        [--rounds 9] [--columns f8x3,f4,i8] [--dir /dev/shm] [--callgrind]

Builds ``bench/stats_cost.c`` against each build's ``libcolfile.so`` and
runs the two binaries interleaved (A B, then B A, ...), each round one
process per build writing every column of ``--columns`` twice (a warm-up
and one timed write, ``stats_cost --repeats 1 --stats on``), and reports
per column the medians of wall and CPU time over the rounds and the
ratios new / base.  With ``--callgrind`` it also counts the instructions
of one such process per build under ``valgrind --tool=callgrind`` (exact
and repeatable on a busy machine) and reports the difference per byte
written.  Both builds must be of the same configuration (compiler,
RelWithDebInfo).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LINE = re.compile(r"^(\S+)\s+on\s+([\d.]+)s\s+([\d.]+)s\s+[\d.]+\s+([\d.]+)s\s+([\d.]+)s")


def build(builddir: Path, out: Path) -> Path:
    lib = builddir / "libcolfile.so"
    if not lib.is_file():
        sys.exit(f"{lib} does not exist: build the library first (cmake --build {builddir} --target colfile)")
    exe = out / f"stats_cost_{abs(hash(str(builddir.resolve())))}"
    subprocess.run(["cc", "-O2", "-std=c11", "-D_GNU_SOURCE", f"-I{ROOT / 'include'}", str(HERE / "stats_cost.c"),
                    f"-L{builddir}", "-lcolfile", f"-Wl,-rpath,{builddir.resolve()}", "-lpthread", "-lm",
                    "-o", str(exe)], check=True)
    return exe


def run_once(exe: Path, args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    out = subprocess.run([str(exe), "--repeats", "1", "--stats", "on", "--mib", str(args.mib), "--columns",
                          args.columns, "--dir", args.dir, "--no-sync"], check=True, capture_output=True,
                         text=True).stdout
    got = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            got[m.group(1)] = (float(m.group(2)), float(m.group(4)))
    return got


def instructions(exe: Path, args: argparse.Namespace, work: Path) -> int:
    outf = work / f"cg.{exe.name}"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={outf}", str(exe), "--repeats", "1",
                    "--stats", "on", "--mib", str(args.mib), "--columns", args.columns, "--dir", args.dir,
                    "--no-sync"], check=True, capture_output=True)
    for line in outf.read_text().splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {outf}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="build directory without the fine level")
    p.add_argument("--new", required=True, help="build directory with it")
    p.add_argument("--mib", type=int, default=64, help="MiB per column (64)")
    p.add_argument("--rounds", type=int, default=9, help="interleaved rounds (9)")
    p.add_argument("--columns", default="f8x3,f4,i8")
    p.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir(),
                   help="where the columns are written (/dev/shm: no disk in the timing)")
    p.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fine-cost-") as tmp:
        work = Path(tmp)
        exe = {"base": build(Path(args.base), work), "new": build(Path(args.new), work)}
        res: dict[str, dict[str, list[tuple[float, float]]]] = {"base": {}, "new": {}}
        for r in range(args.rounds):
            for k in (["base", "new"] if r % 2 == 0 else ["new", "base"]):
                for col, tc in run_once(exe[k], args).items():
                    res[k].setdefault(col, []).append(tc)
        print(f"fine_cost: {args.mib} MiB per column, {args.rounds} interleaved rounds, written to {args.dir}")
        print(f"{'column':6s} {'base wall':>10s} {'new wall':>10s} {'ratio':>6s} {'base cpu':>10s} "
              f"{'new cpu':>10s} {'ratio':>6s}")
        for col in res["base"]:
            bw = statistics.median(t for t, _ in res["base"][col])
            nw = statistics.median(t for t, _ in res["new"][col])
            bc = statistics.median(c for _, c in res["base"][col])
            nc = statistics.median(c for _, c in res["new"][col])
            print(f"{col:6s} {bw:9.4f}s {nw:9.4f}s {nw / bw:6.3f} {bc:9.4f}s {nc:9.4f}s {nc / bc:6.3f}")
        if args.callgrind:
            ia, ib = instructions(exe["base"], args, work), instructions(exe["new"], args, work)
            ncols = len(args.columns.split(","))
            written = 2 * ncols * args.mib * (1 << 20)
            print(f"instructions (callgrind, data generation included): base {ia}, new {ib}, "
                  f"ratio {ib / ia:.4f}; difference {(ib - ia) / written:.4f} per byte written")
        for f in glob.glob(os.path.join(args.dir, "stats-cost-*")):
            subprocess.run(["rm", "-rf", f], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
