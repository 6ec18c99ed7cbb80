"""colfile's write against ``numpy.tofile`` with every rank pinned to a core.

    python bench/pinned.py [--mib 384] [--repeats 5] [--ranks 1,2]
        [--phases write,write_fsync] [--unpinned] [--two mpi|halves]
        [--tmpdir DIR] [--json FILE]

What a full node looks like: every core runs a rank, so a helper thread
finds no idle core.  One column of ``Position`` (f8 x 3), ``--mib`` MiB in
all, is written by 1 rank and by 2 ranks (each its share of the rows), every
rank pinned to one core (rank r to core r: ``os.sched_setaffinity`` before
it imports colfile or numpy, which is what ``mpiexec --bind-to core`` does,
without depending on the launcher's options), launched with the
``mpiexec`` next to this Python (``--mpiexec``).  Phases:

* ``write``: into the page cache.  colfile ``File(..., durable=False)``
  (commits not fsynced, like the peers in bench/peers.py), numpy
  ``ndarray.tofile``;
* ``write_fsync``: durable.  colfile's default durable commits, numpy
  ``tofile`` then ``fsync`` of the file and of its directory.

colfile writes the column the way each rank count is run in practice:
``--two mpi`` (the default) opens one File with ``comm=`` and every rank
writes its rows of the one column collectively (``create(data=...)``), the
program an MPI user runs, whose digest placement asks the node
(``MPI_COMM_TYPE_SHARED``); ``--two halves`` has each rank write its rows
into a File of its own, no collective, which tells the collective close's
share apart.  numpy has no collective: each rank writes its own raw file.
Every rank is timed from a barrier before its write to a barrier after the
last rank's; the figure is the slowest rank's time.  Where colfile placed
its digest (``File.digest_placement``: ``inline`` on the writing thread,
``helper`` on a thread of its own) is reported for each run.

``--unpinned`` adds 1 rank that may run on every core (an idle machine):
colfile's ``auto`` placement then takes the helper thread; compare its
ratio with the page-cache write in bench/peers.py's table.

Before each timed write every rank touches and frees 1.25x the bytes it
writes (bench/prime.py, docs/performance.md "Memory priming").  The runs
interleave: each repeat runs colfile then numpy for every configuration
and phase.  Printed: medians (GB/s, decimal) and ratios: colfile/numpy
per configuration (paired per repeat, median), and 2 ranks / 1 rank for
each system.  Every file is read back and compared with what was written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
SYSTEMS = ("colfile", "numpy")
PHASES = ("write", "write_fsync")
ROW_BYTES = 24  # f8 x 3


# -- one rank of one run (a child started by mpiexec) -------------------------

def worker(args: argparse.Namespace) -> None:
    """Pin, make this rank's rows, prime, write under barriers, verify and
    (rank 0) print the run as one JSON line."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if args.pin:
        ncpu = os.cpu_count() or 1
        os.sched_setaffinity(0, {rank % ncpu})
    cpus = sorted(os.sched_getaffinity(0))
    import numpy as np

    sys.path.insert(0, str(BENCH))
    from prime import prime_memory

    rows = args.rows
    lo, hi = rows * rank // size, rows * (rank + 1) // size
    data = np.random.default_rng(args.seed + rank).random((hi - lo, 3))
    out = Path(args.path)
    durable = args.phase == "write_fsync"
    placement = None
    if args.system == "colfile":
        # imports, the library and first-call costs, not timed: the same
        # kind of write once, tiny
        import colfile

        warm = str(out / f"warm{rank}")
        with colfile.File(warm, "w", durable=False) as f:
            f.create("Position", data=data[:16])
        shutil.rmtree(warm)
    prime_memory(int(1.25 * data.nbytes))
    comm.Barrier()
    t0 = MPI.Wtime()
    if args.system == "numpy":
        name = out / f"Position.{rank}.raw"
        data.tofile(name)
        if durable:
            for p, flags in ((name, os.O_RDONLY), (out, os.O_RDONLY | os.O_DIRECTORY)):
                fd = os.open(p, flags)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
    else:
        import colfile

        shared = args.two == "mpi"
        path = str(out / ("f" if shared else f"f{rank}"))
        with colfile.File(path, "w", comm=comm if shared else None, durable=durable) as f:
            placement = f.digest_placement
            f.create("Position", data=data)
    comm.Barrier()
    seconds = MPI.Wtime() - t0
    # verified outside the timed part: every rank its own rows
    if args.system == "numpy":
        back = np.fromfile(out / f"Position.{rank}.raw").reshape(-1, 3)
    else:
        import colfile

        path = str(out / ("f" if args.two == "mpi" else f"f{rank}"))
        with colfile.File(path) as f:
            col = f["Position"]
            back = col[lo:hi] if args.two == "mpi" else col[:]
    ok = bool(np.array_equal(back, data))
    report = comm.gather({"seconds": seconds, "ok": ok, "cpus": cpus,
                          "placement": placement}, root=0)
    if rank == 0:
        print(json.dumps({"seconds": max(r["seconds"] for r in report),
                          "ok": all(r["ok"] for r in report),
                          "cpus": [r["cpus"] for r in report],
                          "placement": sorted({str(r["placement"]) for r in report}),
                          "bytes": rows * ROW_BYTES}), flush=True)


# -- the driver ----------------------------------------------------------------

def run_one(args: argparse.Namespace, system: str, phase: str, ranks: int, pin: bool,
            scratch: Path) -> dict[str, Any]:
    where = scratch / "run"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir()
    cmd = [str(args.mpiexec), "-n", str(ranks), sys.executable, str(Path(__file__).resolve()),
           "--worker", "--system", system, "--phase", phase, "--path", str(where),
           "--rows", str(args.rows), "--seed", str(args.seed), "--two", args.two]
    if pin:
        cmd.append("--pin")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    shutil.rmtree(where, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    line = [x for x in proc.stdout.splitlines() if x.startswith("{")][-1]
    res = json.loads(line)
    if not res["ok"]:
        raise SystemExit(f"{system} {phase} {ranks} rank(s): data read back differs")
    if pin and any(len(c) != 1 for c in res["cpus"]):
        raise SystemExit(f"a rank was not pinned to one core: {res['cpus']}")
    return res


def configs(args: argparse.Namespace) -> list[tuple[str, int, bool]]:
    out = [(f"{n} pinned", n, True) for n in args.ranks]
    if args.unpinned:
        out.append(("1 unpinned", 1, False))
    return out


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def summarize(args: argparse.Namespace, runs: list[dict[str, Any]]) -> str:
    """Markdown: per phase, a row per configuration; then the rank ratios."""
    lines = []
    nbytes = args.rows * ROW_BYTES

    def times(cfg: str, system: str, phase: str) -> list[float]:
        return [r["seconds"] for r in runs
                if r["config"] == cfg and r["system"] == system and r["phase"] == phase]

    def places(cfg: str, phase: str) -> str:
        got = sorted({p for r in runs if r["config"] == cfg and r["phase"] == phase
                      and r["system"] == "colfile" for p in r["placement"]})
        return ", ".join(got)

    for phase in args.phases:
        lines += ["", f"{phase}: {nbytes / 2**20:.0f} MiB of f8x3, {args.repeats} repeats, "
                  "medians (GB/s); colfile/numpy: the median of the per-repeat ratios", "",
                  "| ranks | colfile GB/s | numpy GB/s | colfile/numpy | digest |",
                  "|---|---|---|---|---|"]
        for cfg, _, _ in configs(args):
            c, n = times(cfg, "colfile", phase), times(cfg, "numpy", phase)
            paired = median([b / a for a, b in zip(c, n)])
            lines.append(f"| {cfg} | {nbytes / median(c) / 1e9:.2f} | "
                         f"{nbytes / median(n) / 1e9:.2f} | {paired:.2f}x | {places(cfg, phase)} |")
        if 1 in args.ranks and 2 in args.ranks:
            lines += ["", f"{phase}: 2 pinned ranks / 1 pinned rank (speed, medians)", "",
                      "| system | 2 ranks / 1 rank |", "|---|---|"]
            for s in SYSTEMS:
                gain = median(times("1 pinned", s, phase)) / median(times("2 pinned", s, phase))
                lines.append(f"| {s} | {gain:.2f}x |")
    return "\n".join(lines)


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=384, help="MiB written in all (384)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ranks", default="1,2", help="rank counts, pinned (1,2)")
    ap.add_argument("--phases", default="write,write_fsync")
    ap.add_argument("--unpinned", action="store_true",
                    help="also 1 rank on every core (helper-thread digest)")
    ap.add_argument("--two", choices=("mpi", "halves"), default="mpi",
                    help="colfile's ranks: one File written collectively, or a File each")
    ap.add_argument("--tmpdir", default=None, help="where the files go (a local disk)")
    ap.add_argument("--mpiexec", default=str(Path(sys.executable).parent / "mpiexec"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", default=None, help="write every run here")
    # one rank of a run (internal)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--system", choices=SYSTEMS, help=argparse.SUPPRESS)
    ap.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--pin", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return args
    if args.mib < 1 or args.repeats < 1:
        ap.error("--mib and --repeats must be at least 1")
    try:
        args.ranks = sorted({int(x) for x in args.ranks.split(",") if x})
    except ValueError:
        ap.error(f"--ranks: {args.ranks!r} is not a list of integers")
    if not args.ranks or min(args.ranks) < 1:
        ap.error("--ranks must list rank counts of at least 1")
    args.phases = [p for p in args.phases.split(",") if p]
    bad = [p for p in args.phases if p not in PHASES]
    if bad or not args.phases:
        ap.error(f"--phases: {', '.join(bad) or 'none'}: choose from {', '.join(PHASES)}")
    if not Path(args.mpiexec).exists():
        ap.error(f"--mpiexec: {args.mpiexec} not found (pip install mpich)")
    args.rows = args.mib * 2**20 // ROW_BYTES
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.worker:
        worker(args)
        return 0
    if args.tmpdir:
        os.makedirs(args.tmpdir, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="pinned-", dir=args.tmpdir))
    runs: list[dict[str, Any]] = []
    try:
        for rep in range(args.repeats):
            for cfg, ranks, pin in configs(args):
                for phase in args.phases:
                    for system in SYSTEMS:  # A B, A B, ...
                        res = run_one(args, system, phase, ranks, pin, scratch)
                        res.update(config=cfg, system=system, phase=phase, repeat=rep)
                        runs.append(res)
                        print(f"# {rep} {cfg} {phase} {system}: {res['seconds']:.3f} s "
                              f"{' '.join(res['placement'])}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"colfile {args.two}: " + ("one File, written collectively (comm=)"
                                     if args.two == "mpi" else "a File per rank"))
    print(summarize(args, runs))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": {k: v for k, v in vars(args).items()
                                                        if k != "mpiexec"},
                                               "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
