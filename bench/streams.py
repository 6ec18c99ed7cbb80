"""Task-local appends: N processes each append records of variable size,
into one colfile stream versus one plain file per process.

    mpiexec -n N python bench/streams.py [--records 256] [--min-bytes 4096]
        [--max-bytes 4194304] [--repeats 5] [--methods stream,stream-raw,files,
        files-tofile,grow] [--grow-records 32] [--durable] [--tmpdir DIR]
        [--seed 1] [--json FILE] [--quick]

Runs without mpiexec too (one process).  Each rank appends ``--records``
records whose sizes are drawn log-uniformly between ``--min-bytes`` and
``--max-bytes`` (rounded to 8 bytes; the same sizes for every method, a
different draw per rank), with no communication between appends.  One
trial of a method is the whole job, timed from a barrier to a barrier:
create, every append, the commit (close); the figure is the aggregate
throughput (bytes of all ranks / time).  Methods:

* ``stream``: a ``<f8`` stream (``colfile.stream``, one task per rank, the
  default physical files: one per node, one per rank on a local disk):
  appends keep each chunk's statistics;
* ``stream-raw``: the same bytes as a ``raw`` stream (no statistics): the
  difference to ``stream`` is what the statistics cost an append;
* ``files``: one file per process, one ``os.write`` per record (the
  baseline of every ratio);
* ``files-tofile``: one file per process, ``ndarray.tofile`` per record;
* ``grow``: a colfile column, every record a collective append (every rank
  waits for the others and each append adds blobs): what streams replace;
  run for ``--grow-records`` records only (it makes files per append), its
  throughput compared as the others'.

``--durable``: commits fsync (colfile's default) and each plain file is
fsynced before it is closed; without it colfile Files are opened with
``durable=False`` and nothing is fsynced (page cache: the appends' cost).
The methods run interleaved, in an order rotated every trial (A B C, B C A,
...), ``--repeats`` times; medians and ratios to ``files`` are printed, and
for the streams where the time goes: File open and stream create, the
appends, commit and File close (median over trials of the slowest rank's
time of each, timed on each rank alone).
Every trial's bytes are checked afterwards (not timed): each rank reads its
task back (its file, its rows of the column) and compares.

Two builds compared (A/B), run without mpiexec::

    python bench/streams.py --ab ROOT_A,ROOT_B --ranks N [the options above]

runs the script ``--repeats`` times for each of two source trees (each
with its own ``ROOT/python`` and ``ROOT/build/release/libcolfile.so``;
``--ab-build`` names another build directory), as ``mpiexec -n N`` jobs
of one trial of every method each, alternating A B, B A, ...; it prints
each build's medians and ratios to ``files`` (the median of the per-job
ratios: every job has its own baseline) and B's throughput over A's per
method (the median of the per-pair ratios).  Both reports give, beside
wall-clock throughput, the CPU seconds of all ranks (user and system, of
the timed job alone): on a busy machine these move least, and the ratios
of files' CPU time to a method's say what the method costs the processes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import colfile
import colfile.stream as cs

METHODS = ("stream", "stream-raw", "files", "files-tofile", "grow")
BASELINE = "files"


class Serial:
    """What the benchmark needs of a communicator, for one process."""

    rank, size = 0, 1

    def Barrier(self) -> None:  # noqa: N802 -- mpi4py's spelling
        pass

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj

    def allreduce(self, obj: Any, op: Any = None) -> Any:
        return obj

    def gather(self, obj: Any, root: int = 0) -> list[Any]:
        return [obj]


def world() -> tuple[Any, bool]:
    """mpi4py's COMM_WORLD when launched by mpiexec with more than one rank (or
    with mpi4py importable), else a serial stand-in."""
    try:
        from mpi4py import MPI
    except ImportError:
        return Serial(), False
    return MPI.COMM_WORLD, MPI.COMM_WORLD.size > 1


def record_sizes(args: argparse.Namespace, rank: int, count: int) -> np.ndarray:
    """Record sizes in doubles, log-uniform in [min, max] bytes."""
    rng = np.random.default_rng([args.seed, rank])
    lo, hi = math.log(args.min_bytes), math.log(args.max_bytes)
    return np.maximum(1, (np.exp(rng.uniform(lo, hi, count)) // 8).astype(np.int64))


class Job:
    """One rank's records: views into one random buffer."""

    def __init__(self, args: argparse.Namespace, rank: int, count: int) -> None:
        rng = np.random.default_rng([args.seed, rank, 1])
        self.sizes = record_sizes(args, rank, count)
        span = int(self.sizes.max())
        self.base = rng.normal(rank, 1.0, 2 * span)
        self.offsets = rng.integers(0, span, len(self.sizes))
        self.nbytes = int(self.sizes.sum()) * 8

    def records(self) -> Any:
        for off, n in zip(self.offsets.tolist(), self.sizes.tolist()):
            yield self.base[off:off + n]

    def expected(self) -> np.ndarray:
        return np.concatenate(list(self.records())) if len(self.sizes) else np.zeros(0)


def open_file(path: Path, comm: Any, parallel: bool, durable: bool) -> colfile.File:
    kw: dict[str, Any] = {"durable": durable}
    if parallel:
        kw["comm"] = comm
    return colfile.File(str(path), "w", **kw)


# -- the methods: each returns a check to run untimed ------------------------

def run_stream(d: Path, comm: Any, parallel: bool, job: Job, durable: bool, raw: bool,
               phases: list[float]) -> Callable[[], None]:
    t = [time.perf_counter()]
    f = open_file(d / "f", comm, parallel, durable)
    kw = {} if parallel else {"tasks": 1}
    w = cs.create(f, "s", "raw" if raw else "<f8", **kw)
    t.append(time.perf_counter())
    for rec in job.records():
        w.append(rec.view(np.uint8) if raw else rec)
    t.append(time.perf_counter())
    w.close()
    f.close()
    t.append(time.perf_counter())
    phases[:] = [b - a for a, b in zip(t, t[1:])]

    def check() -> None:
        g = colfile.File(str(d / "f"), "r")
        s = cs.open(g, "s")
        got = s.task(comm.rank if parallel else 0)
        want = job.expected()
        assert np.array_equal(got.view(np.float64) if raw else got, want), "stream: bytes differ"
        s.close()
        g.close()
    return check


def run_files(d: Path, comm: Any, parallel: bool, job: Job, durable: bool, tofile: bool
              ) -> Callable[[], None]:
    path = d / f"task-{comm.rank:06d}"
    if tofile:
        with open(path, "wb") as fh:
            for rec in job.records():
                rec.tofile(fh)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
    else:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            for rec in job.records():
                view = memoryview(rec).cast("B")
                while view:
                    view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)

    def check() -> None:
        assert np.array_equal(np.fromfile(path, np.float64), job.expected()), "files: bytes differ"
    return check


def run_grow(d: Path, comm: Any, parallel: bool, job: Job, durable: bool) -> Callable[[], None]:
    f = open_file(d / "f", comm, parallel, durable)
    col = f.create("c", "<f8", size=0)
    for rec in job.records():
        col.append(rec)
    f.close()
    sizes = job.sizes.tolist()

    def check() -> None:
        # every append put the ranks' records in rank order
        all_sizes = comm.allgather(sizes) if parallel else [sizes]
        g = colfile.File(str(d / "f"), "r")
        c = g["c"]
        at, got = 0, []
        for k in range(len(sizes)):
            for r, ss in enumerate(all_sizes):
                if r == comm.rank:
                    got.append(c[at:at + ss[k]])
                at += ss[k]
        g.close()
        want = job.expected()
        assert np.array_equal(np.concatenate(got) if got else np.zeros(0), want), "grow: bytes differ"
    return check


def trial(method: str, base: Path, comm: Any, parallel: bool, jobs: dict[str, Job],
          args: argparse.Namespace, n: int) -> tuple[float, int, list[float], float]:
    """(seconds, bytes of all ranks, the stream's phases, CPU seconds of
    all ranks) of one trial, checked.  The phases (streams only): File open and stream create, the
    appends, commit and File close, each the slowest rank's, as each rank
    timed it alone (no barrier between them)."""
    d = base / f"{method}-{n}"
    if comm.rank == 0:
        d.mkdir()
    comm.Barrier()
    job = jobs["grow" if method == "grow" else "all"]
    comm.Barrier()
    phases: list[float] = []
    t0, c0 = time.perf_counter(), time.process_time()
    if method in ("stream", "stream-raw"):
        check = run_stream(d, comm, parallel, job, args.durable, method == "stream-raw", phases)
    elif method in ("files", "files-tofile"):
        check = run_files(d, comm, parallel, job, args.durable, method == "files-tofile")
    else:
        check = run_grow(d, comm, parallel, job, args.durable)
    cpu = time.process_time() - c0  # this rank's, user and system: what a busy machine inflates least
    comm.Barrier()
    seconds = time.perf_counter() - t0
    seconds = comm.bcast(seconds, root=0)
    if not args.no_verify:
        check()
    total = comm.allreduce(job.nbytes)
    every = comm.gather(phases, root=0)
    slowest = [max(p[k] for p in every) for k in range(len(phases))] if comm.rank == 0 else []
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(d)
    comm.Barrier()
    return seconds, total, slowest, comm.allreduce(cpu)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=None, help="records per rank (default 256)")
    p.add_argument("--min-bytes", type=int, default=None, help="smallest record (default 4096)")
    p.add_argument("--max-bytes", type=int, default=None, help="largest record (default 4 MiB)")
    p.add_argument("--grow-records", type=int, default=None,
                   help="records per rank for 'grow' (default 32: each append makes files)")
    p.add_argument("--repeats", type=int, default=None, help="trials per method (default 5)")
    p.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {', '.join(METHODS)}")
    p.add_argument("--durable", action="store_true", help="fsync commits and files (default: page cache)")
    p.add_argument("--tmpdir", default=None, help="where the files go (default: the system's)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=None, help="write every trial's figures here")
    p.add_argument("--no-verify", action="store_true", help="skip the untimed read-back checks")
    p.add_argument("--ab", default=None, metavar="ROOT_A,ROOT_B",
                   help="compare two source trees' builds, alternating jobs (run without mpiexec)")
    p.add_argument("--ab-build", default="build/release", help="the build directory in each tree (--ab)")
    p.add_argument("--ranks", type=int, default=1, help="processes of each --ab job (mpiexec -n)")
    p.add_argument("--rotate", type=int, default=0, help=argparse.SUPPRESS)  # an --ab job's first method
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: 24 records of 4 KiB..256 KiB, 2 repeats, grow 6 (unless given)")
    args = p.parse_args(argv)
    defaults = {"records": 24, "min_bytes": 4096, "max_bytes": 256 << 10, "repeats": 2, "grow_records": 6} \
        if args.quick else {"records": 256, "min_bytes": 4096, "max_bytes": 4 << 20, "repeats": 5, "grow_records": 32}
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    methods = [m for m in args.methods.split(",") if m]
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        p.error(f"--methods: unknown {bad or 'none given'}; choose from {', '.join(METHODS)}")
    if not 8 <= args.min_bytes <= args.max_bytes:
        p.error("--min-bytes must be at least 8 and at most --max-bytes")
    if args.records < 1 or args.repeats < 1 or args.grow_records < 1:
        p.error("--records, --repeats and --grow-records must be positive")
    args.method_list = methods
    if args.ab is not None and (len(args.ab.split(",")) != 2 or args.ranks < 1):
        p.error("--ab takes two source trees, ROOT_A,ROOT_B, and --ranks a positive count")
    return args


def report(results: dict[str, list[tuple[float, int]]], args: argparse.Namespace, nranks: int,
           phases: dict[str, list[list[float]]] | None = None, cpus: dict[str, list[float]] | None = None) -> str:
    lines = [f"task-local appends: {nranks} process{'' if nranks == 1 else 'es'}, {args.records} records each "
             f"({args.min_bytes} .. {args.max_bytes} bytes, log-uniform; grow: {args.grow_records}), "
             f"{args.repeats} interleaved trials, {'durable' if args.durable else 'page cache'}",
             "",
             "| method | median MB/s | median s | MB per trial | x files | median CPU s | x files (CPU) |",
             "|---|---|---|---|---|---|---|"]
    rate = {m: statistics.median(b / s / 1e6 for s, b in r) for m, r in results.items()}
    for m, r in results.items():
        ratio = f"{rate[m] / rate[BASELINE]:.2f}" if BASELINE in rate else "-"
        cpu, cratio = "-", "-"
        if cpus and cpus.get(m):
            # CPU seconds of all ranks: their ratio, files over this method, per trial
            cpu = f"{statistics.median(cpus[m]):.4f}"
            if cpus.get(BASELINE):
                cratio = f"{statistics.median(f / c for f, c in zip(cpus[BASELINE], cpus[m])):.2f}"
        lines.append(f"| {m} | {rate[m]:.1f} | {statistics.median(s for s, _ in r):.4f} | "
                     f"{r[0][1] / 1e6:.1f} | {ratio} | {cpu} | {cratio} |")
    if "stream" in rate and "stream-raw" in rate:
        # the per-trial pairs, interleaved: their median ratio
        pairs = [ss / rs for (ss, _), (rs, _) in zip(results["stream"], results["stream-raw"])]
        lines += ["", f"statistics: stream with statistics takes {statistics.median(pairs):.3f}x the time "
                  "of the raw stream (median of per-trial ratios)"]
    for m, ps in (phases or {}).items():
        if ps and all(ps):
            med = [statistics.median(p[k] for p in ps) for k in range(3)]
            lines.append(f"phases of {m} (median s, slowest rank): open+create {med[0]:.4f}, appends {med[1]:.4f}, "
                         f"commit+close {med[2]:.4f}")
    return "\n".join(lines)


def ab_job(args: argparse.Namespace, root: Path, n: int, out: Path) -> dict[str, Any]:
    """One mpiexec job of one trial of every method with the build of
    source tree `root`: its JSON."""
    build = root / args.ab_build
    env = {**os.environ, "PYTHONPATH": str(root / "python"), "COLFILE_LIBRARY": str(build / "libcolfile.so"),
           "COLFILE_C_BUILD": str(build)}
    mpiexec = Path(sys.executable).with_name("mpiexec")
    cmd = [str(mpiexec) if mpiexec.exists() else "mpiexec", "-n", str(args.ranks)] if args.ranks > 1 else []
    cmd += [sys.executable, str(Path(__file__).resolve()), "--records", str(args.records),
            "--min-bytes", str(args.min_bytes), "--max-bytes", str(args.max_bytes),
            "--grow-records", str(args.grow_records), "--repeats", "1", "--rotate", str(n),
            "--methods", ",".join(args.method_list), "--seed", str(args.seed), "--json", str(out)]
    cmd += ["--durable"] * args.durable + ["--no-verify"] * args.no_verify
    cmd += ["--tmpdir", args.tmpdir] if args.tmpdir else []
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{root}: the job failed:\n{proc.stdout}{proc.stderr}")
    return json.loads(out.read_text())


def ab_report(args: argparse.Namespace, roots: list[Path], jobs: list[list[dict[str, Any]]]) -> str:
    """Each build's medians and ratios to files, and B over A per method."""
    def rate(job: dict[str, Any], m: str) -> float:
        t = job["trials"][m][0]
        return t["bytes"] / t["seconds"] / 1e6

    def cpu(job: dict[str, Any], m: str) -> float:
        return job["trials"][m][0]["cpu"]
    lines = [f"A/B, task-local appends: {args.ranks} process{'' if args.ranks == 1 else 'es'}, "
             f"{args.records} records each ({args.min_bytes} .. {args.max_bytes} bytes), "
             f"{len(jobs[0])} jobs per build alternating, {'durable' if args.durable else 'page cache'}",
             f"A: {roots[0]}", f"B: {roots[1]}", "",
             "| method | A median MB/s | B median MB/s | A x files | B x files | B / A | A x files (CPU) | "
             "B x files (CPU) | B / A (CPU) |", "|---|---|---|---|---|---|---|---|---|"]
    for m in args.method_list:
        med = [statistics.median(rate(j, m) for j in js) for js in jobs]
        ratio = ["-", "-"]
        if BASELINE in args.method_list:
            ratio = [f"{statistics.median(rate(j, m) / rate(j, BASELINE) for j in js):.2f}" for js in jobs]
        ba = statistics.median(rate(b, m) / rate(a, m) for a, b in zip(*jobs))
        # CPU seconds of all ranks (what a busy machine inflates least): files over m, A over B
        cratio = ["-", "-"]
        if BASELINE in args.method_list:
            cratio = [f"{statistics.median(cpu(j, BASELINE) / cpu(j, m) for j in js):.2f}" for js in jobs]
        cba = statistics.median(cpu(a, m) / cpu(b, m) for a, b in zip(*jobs))
        lines.append(f"| {m} | {med[0]:.1f} | {med[1]:.1f} | {ratio[0]} | {ratio[1]} | {ba:.3f} | {cratio[0]} | "
                     f"{cratio[1]} | {cba:.3f} |")
    for m in args.method_list:
        if m.startswith("stream"):
            for name, js in zip("AB", jobs):
                med = [statistics.median(j["phases"][m][0][k] for j in js) for k in range(3)]
                lines.append(f"phases of {m}, {name} (median s, slowest rank): open+create {med[0]:.4f}, "
                             f"appends {med[1]:.4f}, commit+close {med[2]:.4f}")
    return "\n".join(lines)


def main_ab(args: argparse.Namespace) -> int:
    roots = [Path(r).resolve() for r in args.ab.split(",")]
    for r in roots:
        if not (r / args.ab_build / "libcolfile.so").exists():
            raise SystemExit(f"{r / args.ab_build}: no libcolfile.so (build it first)")
    jobs: list[list[dict[str, Any]]] = [[], []]
    with tempfile.TemporaryDirectory(prefix="cf-bench-streams-ab-", dir=args.tmpdir) as d:
        for n in range(args.repeats):
            for i in ((0, 1) if n % 2 == 0 else (1, 0)):  # A B, B A, ...
                jobs[i].append(ab_job(args, roots[i], n, Path(d) / f"{n}-{i}.json"))
    print(ab_report(args, roots, jobs))
    if args.json:
        Path(args.json).write_text(json.dumps({"roots": [str(r) for r in roots], "jobs": jobs}, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.ab is not None:
        return main_ab(args)
    comm, parallel = world()
    base = None
    if comm.rank == 0:
        base = tempfile.mkdtemp(prefix="cf-bench-streams-", dir=args.tmpdir)
    base = Path(comm.bcast(base, root=0))
    jobs = {"all": Job(args, comm.rank, args.records), "grow": Job(args, comm.rank, args.grow_records)}
    results: dict[str, list[tuple[float, int]]] = {m: [] for m in args.method_list}
    cpus: dict[str, list[float]] = {m: [] for m in args.method_list}
    phases: dict[str, list[list[float]]] = {m: [] for m in args.method_list if m.startswith("stream")}
    try:
        k = len(args.method_list)
        for n in range(args.repeats):
            r = (n + args.rotate) % k
            order = args.method_list[r:] + args.method_list[:r]
            for m in order:
                seconds, total, slowest, cpu = trial(m, base, comm, parallel, jobs, args, n)
                results[m].append((seconds, total))
                cpus[m].append(cpu)
                if m in phases:
                    phases[m].append(slowest)
    finally:
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(base, ignore_errors=True)
    if comm.rank == 0:
        print(report(results, args, comm.size, phases, cpus))
        if not args.no_verify:
            print("every trial verified")
        if args.json:
            Path(args.json).write_text(json.dumps(
                {"ranks": comm.size, "args": {k: v for k, v in vars(args).items() if k != "method_list"},
                 "trials": {m: [{"seconds": s, "bytes": b, "cpu": c} for (s, b), c in zip(r, cpus[m])]
                            for m, r in results.items()},
                 "phases": phases},
                indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
