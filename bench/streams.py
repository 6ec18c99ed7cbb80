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
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
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
          args: argparse.Namespace, n: int) -> tuple[float, int, list[float]]:
    """(seconds, bytes of all ranks, the stream's phases) of one trial,
    checked.  The phases (streams only): File open and stream create, the
    appends, commit and File close, each the slowest rank's, as each rank
    timed it alone (no barrier between them)."""
    d = base / f"{method}-{n}"
    if comm.rank == 0:
        d.mkdir()
    comm.Barrier()
    job = jobs["grow" if method == "grow" else "all"]
    comm.Barrier()
    phases: list[float] = []
    t0 = time.perf_counter()
    if method in ("stream", "stream-raw"):
        check = run_stream(d, comm, parallel, job, args.durable, method == "stream-raw", phases)
    elif method in ("files", "files-tofile"):
        check = run_files(d, comm, parallel, job, args.durable, method == "files-tofile")
    else:
        check = run_grow(d, comm, parallel, job, args.durable)
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
    return seconds, total, slowest


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
    return args


def report(results: dict[str, list[tuple[float, int]]], args: argparse.Namespace, nranks: int,
           phases: dict[str, list[list[float]]] | None = None) -> str:
    lines = [f"task-local appends: {nranks} process{'' if nranks == 1 else 'es'}, {args.records} records each "
             f"({args.min_bytes} .. {args.max_bytes} bytes, log-uniform; grow: {args.grow_records}), "
             f"{args.repeats} interleaved trials, {'durable' if args.durable else 'page cache'}",
             "",
             "| method | median MB/s | median s | MB per trial | x files |",
             "|---|---|---|---|---|"]
    rate = {m: statistics.median(b / s / 1e6 for s, b in r) for m, r in results.items()}
    for m, r in results.items():
        ratio = f"{rate[m] / rate[BASELINE]:.2f}" if BASELINE in rate else "-"
        lines.append(f"| {m} | {rate[m]:.1f} | {statistics.median(s for s, _ in r):.4f} | "
                     f"{r[0][1] / 1e6:.1f} | {ratio} |")
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


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    comm, parallel = world()
    base = None
    if comm.rank == 0:
        base = tempfile.mkdtemp(prefix="cf-bench-streams-", dir=args.tmpdir)
    base = Path(comm.bcast(base, root=0))
    jobs = {"all": Job(args, comm.rank, args.records), "grow": Job(args, comm.rank, args.grow_records)}
    results: dict[str, list[tuple[float, int]]] = {m: [] for m in args.method_list}
    phases: dict[str, list[list[float]]] = {m: [] for m in args.method_list if m.startswith("stream")}
    try:
        k = len(args.method_list)
        for n in range(args.repeats):
            order = args.method_list[n % k:] + args.method_list[:n % k]
            for m in order:
                seconds, total, slowest = trial(m, base, comm, parallel, jobs, args, n)
                results[m].append((seconds, total))
                if m in phases:
                    phases[m].append(slowest)
    finally:
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(base, ignore_errors=True)
    if comm.rank == 0:
        print(report(results, args, comm.size, phases))
        if not args.no_verify:
            print("every trial verified")
        if args.json:
            Path(args.json).write_text(json.dumps(
                {"ranks": comm.size, "args": {k: v for k, v in vars(args).items() if k != "method_list"},
                 "trials": {m: [{"seconds": s, "bytes": b} for s, b in r] for m, r in results.items()},
                 "phases": phases},
                indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
