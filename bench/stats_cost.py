"""What computing statistics costs a write, in instructions and in time.

    python3 bench/stats_cost.py --build build/stats [--callgrind] [--wall] [--digest]
        [--mib 16] [--wall-mib 64] [--repeats 31] [--columns f8x3,f4x3,i8,f4]
        [--markdown FILE]

Builds ``bench/stats_cost.c`` against ``BUILD/libcolfile.a`` (into BUILD)
and runs it:

``--callgrind`` (default): for each column type, three runs under
``valgrind --tool=callgrind`` -- generate the data and write nothing, write
with statistics off, write with statistics on (a warm-up write and one
more, ``--mib`` MiB each) -- and reports instructions per byte written
(both threads; the kernel's side of ``pwrite`` is not counted): the writes
with statistics off (byte sum, CRC32C, the rest of the write path), with
them on, and the difference, which is what statistics cost.  Instruction
counts are exact and repeatable: they do not depend on the load of the
machine, unlike times.

``--wall``: the timed runs of ``stats_cost`` (``--repeats`` writes of
``--wall-mib`` MiB per column type, statistics on and off alternating),
median and best of each and the ratios of the medians.

``--digest``: ``bench/digest_cost.c`` (built against the sources in
``src/``, it uses internals): the helper thread's work per 2 MiB hand-over
from memory not in the cache, best of hundreds, statistics on and off --
to set against the time the writer needs to copy 2 MiB into the file.

``--markdown FILE`` writes the tables as Markdown to FILE.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def build(builddir: Path) -> Path:
    lib = builddir / "libcolfile.a"
    if not lib.is_file():
        sys.exit(f"{lib} does not exist: build the library first (cmake --build {builddir})")
    exe = builddir / "stats_cost"
    src = HERE / "stats_cost.c"
    if not exe.exists() or exe.stat().st_mtime < max(src.stat().st_mtime, lib.stat().st_mtime):
        cmd = [os.environ.get("CC", "cc"), "-O2", "-std=c11", "-D_GNU_SOURCE", f"-I{ROOT / 'include'}",
               str(src), str(lib), "-lpthread", "-lm", "-o", str(exe)]
        print("+", " ".join(shlex.quote(c) for c in cmd), flush=True)
        subprocess.run(cmd, check=True)
    return exe


def build_digest(builddir: Path) -> Path:
    lib = builddir / "libcolfile.a"
    exe = builddir / "digest_cost"
    src = HERE / "digest_cost.c"
    # The internal headers live in the layer folders of src/ (src/LAYERS).
    src_dirs = sorted(p for p in (ROOT / "src").iterdir() if p.is_dir() and p.name != "mpi")
    with_digest = "cf__digest(" in (ROOT / "src" / "column" / "digest.h").read_text()
    cmd = [os.environ.get("CC", "cc"), "-O2", "-std=gnu11", "-D_GNU_SOURCE",
           *(["-DCF_DIGEST"] if with_digest else []), f"-I{ROOT / 'include'}",
           *(f"-I{d}" for d in src_dirs),
           str(src), str(lib), "-lpthread", "-lm", "-o", str(exe)]
    print("+", " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True)
    return exe


def run_digest(exe: Path) -> list[str]:
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    print(out, flush=True)
    rows = ["| column | way | µs per 2 MiB, statistics off | on | statistics alone |",
            "|---|---|---|---|---|"]
    for line in out.splitlines()[2:]:
        col, way, off, on = line.split()
        rows.append(f"| {col} | {way} | {float(off):.0f} | {float(on):.0f} | "
                    f"{float(on) - float(off):+.0f} |")
    return rows


def callgrind_total(exe: Path, args: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe), *args]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError("no total in the callgrind output")


def run_callgrind(exe: Path, columns: list[str], mib: int) -> list[str]:
    rows = ["| column | bytes written | instructions/byte, statistics off | on | statistics alone |",
            "|---|---|---|---|---|"]
    for col in columns:
        base = ["--columns", col, "--mib", str(mib), "--repeats", "1", "--no-sync"]
        ir = {mode: callgrind_total(exe, [*base, "--stats", mode]) for mode in ("none", "off", "on")}
        nbytes = 2 * mib << 20  # the warm-up write and one timed write
        off = (ir["off"] - ir["none"]) / nbytes
        on = (ir["on"] - ir["none"]) / nbytes
        print(f"  {col}: {off:.3f} / {on:.3f} instructions per byte (off / on); statistics "
              f"{on - off:.3f}", flush=True)
        rows.append(f"| {col} | {2 * mib} MiB | {off:.3f} | {on:.3f} | {on - off:.3f} |")
    return rows


def run_wall(exe: Path, columns: list[str], mib: int, repeats: int, extra: list[str]) -> list[str]:
    cmd = [str(exe), "--columns", ",".join(columns), "--mib", str(mib), "--repeats", str(repeats), *extra]
    print("+", " ".join(shlex.quote(c) for c in cmd), flush=True)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    print(out, flush=True)
    med: dict[tuple[str, str], tuple[float, float, float]] = {}
    for line in out.splitlines():
        m = re.match(r"(\S+)\s+(on|off)\s+([\d.]+)s\s+([\d.]+)s\s+[\d.]+\s+([\d.]+)s", line)
        if m:
            med[(m[1], m[2])] = (float(m[3]), float(m[4]), float(m[5]))
    rows = ["| column | wall median on / off | wall best on / off | ratio of medians | ratio of bests "
            "| CPU median on / off (both threads) |", "|---|---|---|---|---|---|"]
    for col in columns:
        on, off = med[(col, "on")], med[(col, "off")]
        rows.append(f"| {col} | {on[0] * 1e3:.1f} / {off[0] * 1e3:.1f} ms | {on[1] * 1e3:.1f} / "
                    f"{off[1] * 1e3:.1f} ms | {on[0] / off[0]:.3f} | {on[1] / off[1]:.3f} | "
                    f"{on[2] * 1e3:.1f} / {off[2] * 1e3:.1f} ms |")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", required=True, type=Path, help="build directory holding libcolfile.a")
    p.add_argument("--callgrind", action="store_true", help="instruction counts (default)")
    p.add_argument("--wall", action="store_true", help="wall-clock runs")
    p.add_argument("--digest", action="store_true", help="the helper's time per hand-over")
    p.add_argument("--mib", type=int, default=16, help="MiB per column under callgrind (16)")
    p.add_argument("--wall-mib", type=int, default=64, help="MiB per column timed (64)")
    p.add_argument("--repeats", type=int, default=31, help="timed writes per column and setting (31)")
    p.add_argument("--columns", default="f8x3,f4x3,i8,f4")
    p.add_argument("--dir", help="where the timed runs write (default $TMPDIR)")
    p.add_argument("--markdown", type=Path, help="write the tables here")
    args = p.parse_args(argv)
    if not (args.callgrind or args.wall or args.digest):
        args.callgrind = True
    exe = build(args.build.resolve())
    columns = args.columns.split(",")
    out: list[str] = []
    if args.callgrind:
        out += run_callgrind(exe, columns, args.mib) + [""]
    if args.digest:
        out += run_digest(build_digest(args.build.resolve())) + [""]
    if args.wall:
        out += run_wall(exe, columns, args.wall_mib, args.repeats,
                        ["--dir", args.dir] if args.dir else []) + [""]
    text = "\n".join(out)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
