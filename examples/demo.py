"""The colfile demo: a parallel write, read and query of an N-body snapshot on local disk.

Every MPI rank holds its share of the particles of a simulation snapshot
(Position f8x3, Velocity f4x3, ID i8, Mass f4, plus the attributes BoxSize,
Time and Omega0).  The ranks write them collectively into one File, read
them back (each rank its share), verify every value, run a small query
(the particles of a thin slab, and their IDs), check every blob's
checksums, and print throughput next to plain numpy ``tofile``/``fromfile``
of the same bytes (one raw file per rank and column) measured the same way
in the same run.  Every figure is the best of several runs, numpy and
colfile taking turns: at least 3, and more (up to ``--repeats``) until the
two fastest runs of every phase agree within 5%, so that other work on the
machine does not decide the figures; the output says how many it took.
Before each timed run every rank touches and frees memory (bench/prime.py,
as the benchmarks do): on a virtual machine whose host takes back the
memory the guest frees, the first write to such memory faults into the
host, which would otherwise decide the figures.

    mpiexec -n 2 python examples/demo.py     # what ``./run demo`` does
    python examples/demo.py --rows 100000    # one process, no MPI needed
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

import colfile
from colfile.mpi import plan_share

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from prime import prime_memory  # noqa: E402  (bench/prime.py: memory priming)

COLUMNS = {"Position": ("f8", 3), "Velocity": ("f4", 3), "ID": ("i8", 1), "Mass": ("f4", 1)}

#: Runs of every timed phase at least, and how close its two fastest runs
#: must be (relative, or absolute in seconds) before the best is taken.
MIN_REPEATS = 3
SETTLE = 0.05
SETTLE_SECONDS = 1e-3


def settled(times: list[float]) -> bool:
    """True when the two fastest of ``times`` agree within SETTLE (or
    SETTLE_SECONDS): a further run would hardly find a faster one."""
    if len(times) < 2:
        return False
    a, b = sorted(times)[:2]
    return b - a <= max(SETTLE * a, SETTLE_SECONDS)


def world():
    """MPI.COMM_WORLD when launched under mpiexec with mpi4py, else None."""
    launched = any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"))
    if not launched:
        return None
    from mpi4py import MPI

    return MPI.COMM_WORLD


def my_particles(total: int, rank: int, size: int, box: float) -> tuple[int, dict[str, np.ndarray]]:
    """This rank's share, generated from the global row numbers so any rank
    count makes the same snapshot.  x grows with the row (a sorted output)."""
    first, n = plan_share(total, size, rank)
    row = np.arange(first, first + n, dtype=np.int64)
    rng = np.random.default_rng(1234 + rank)
    pos = np.empty((n, 3))
    pos[:, 0] = (row + rng.uniform(0, 1, n)) * (box / total)
    pos[:, 1:] = rng.uniform(0, box, size=(n, 2))
    return first, {
        "Position": pos,
        "Velocity": rng.normal(0, 300, size=(n, 3)).astype("f4"),
        "ID": (row * 7919) % (total * 8) + 1,
        "Mass": np.full(n, 1e10, dtype="f4"),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1 << 22, help="particles in all (default 4Mi: ~150 MB)")
    p.add_argument("--repeats", type=int, default=12,
                   help=f"the most runs of each timed phase (default 12; at least "
                        f"{MIN_REPEATS} are made, more until the two fastest agree within "
                        f"{SETTLE:.0%}); the best is shown")
    p.add_argument("--dir", default=str(Path(__file__).resolve().parents[1] / "build" / "demo"),
                   help="output directory (default build/demo; the snapshot is kept for inspection)")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="write every run's time of every phase (seconds, the slowest rank's) and the "
                        "figures printed from them to PATH")
    args = p.parse_args(argv)
    if args.repeats < MIN_REPEATS:
        p.error(f"--repeats must be at least {MIN_REPEATS}")

    comm = world()
    rank, size = (comm.rank, comm.size) if comm else (0, 1)

    def barrier_max(t: float) -> float:
        return comm.allreduce(t, op=__import__("mpi4py").MPI.MAX) if comm else t

    def timed(fn):
        if comm:
            comm.barrier()
        t0 = time.perf_counter()
        result = fn()
        return result, barrier_max(time.perf_counter() - t0)

    def best_of(phases, prime_bytes, check=lambda name, result: 0):
        """Time each phase (the slowest rank's time), the phases taking
        turns and each run after memory priming, MIN_REPEATS times and
        then until every phase has settled() or args.repeats is reached.
        The best time of each phase, its last result, the number of runs,
        whether they settled, and the number of results that ``check``
        (called untimed) found wrong.  Every rank sees the same times, so
        all stop together."""
        times, last, bad = {name: [] for name in phases}, {}, 0
        runs = 0
        while runs < MIN_REPEATS or (runs < args.repeats and not all(map(settled, times.values()))):
            runs += 1
            for name, fn in phases.items():
                prime_memory(prime_bytes)
                last[name], t = timed(fn)
                times[name].append(t)
                bad += check(name, last[name])
        best = {name: min(ts) for name, ts in times.items()}
        all_times.update(times)
        return best, last, runs, all(map(settled, times.values())), bad

    all_times: dict[str, list[float]] = {}

    out = Path(args.dir)
    snap, raw = out / "snapshot", out / "numpy-raw"
    if rank == 0:
        shutil.rmtree(raw, ignore_errors=True)
        raw.mkdir(parents=True)
    if comm:
        comm.barrier()

    box = 1000.0
    first, mine = my_particles(args.rows, rank, size, box)
    nbytes = args.rows * sum(np.dtype(d).itemsize * m for d, m in COLUMNS.values())
    # as bench/peers.py: 1.25x the bytes written, here each rank's share
    prime_bytes = sum(a.nbytes for a in mine.values()) * 5 // 4
    if rank == 0:
        print(f"colfile {colfile.__version__}: {args.rows} particles ({nbytes / 1e6:.0f} MB) "
              f"written and read by {size} rank{'s' if size > 1 else ''} -> {snap}")

    def numpy_write():
        # colfile's commits are durable (fsynced) by default: so is this
        # baseline, for a like-for-like comparison.
        for name, a in mine.items():
            with open(raw / f"{name}.{rank}", "wb") as fh:
                a.tofile(fh)
                fh.flush()
                os.fsync(fh.fileno())

    def numpy_read():
        return {name: np.fromfile(raw / f"{name}.{rank}", dtype=a.dtype).reshape(a.shape)
                for name, a in mine.items()}

    def colfile_write():
        with colfile.File(snap, "w", comm=comm) as f:
            f.attrs["BoxSize"] = box
            f.attrs["Time"] = 0.5
            f.attrs["Omega0"] = 0.3
            for name, a in mine.items():
                # Collective: each rank passes its rows, the column holds all.
                f.create(f"1/{name}", data=a)
            f["1/"].attrs["NumPart"] = args.rows

    def colfile_read():
        with colfile.File(snap, "r", comm=comm) as f:
            return {name: f[f"1/{name}"].read_all() for name in mine}

    # numpy and colfile measured the same way, in the same loop: only then
    # is numpy printed beside colfile
    def wrong_rows(name, back):  # every read is checked
        return sum(not np.array_equal(back[k], a) for k, a in mine.items()) if back else 0

    best, _, runs, steady, bad = best_of({"numpy write": numpy_write, "colfile write": colfile_write,
                            "numpy read": numpy_read, "colfile read": colfile_read},
                           prime_bytes, wrong_rows)
    t_np_w, t_cf_w, t_np_r, t_cf_r = (best[k] for k in ("numpy write", "colfile write",
                                                          "numpy read", "colfile read"))

    # The query: the particles of a thin slab with small IDs.  The per-chunk
    # statistics written with the data let the query skip every chunk whose
    # x range misses the slab (the File is sorted along x); the answer is
    # exact.  Then a histogram of y over the same particles, each rank
    # taking a share of the chunks.
    expr = f"(Position[0] > 500) & (Position[0] < 510) & (ID < {args.rows * 4})"
    with colfile.File(snap, "r", comm=comm) as f:
        pos = f["1/Position"]
        held = {}

        def query():
            held["sel"] = colfile.where(f["1/"], expr)
            return held["sel"]

        best, last, qruns, qsteady, _ = best_of({
            "query": query,
            "ids": lambda: held["sel"].read("ID"),
            "hist": lambda: colfile.histogram(pos.field(1), bins=10, range=(0, box),
                                              where=(pos.field(0) > 500) & (pos.field(0) < 510)),
        }, prime_bytes)
        t_q, t_ids, t_h = best["query"], best["ids"], best["hist"]
        sel, ids, (hist, _) = last["query"], last["ids"], last["hist"]
        x_all = np.concatenate([a[:, 0] for a in [mine["Position"]]])
        want = first + np.flatnonzero((x_all > 500) & (x_all < 510) & (mine["ID"] < args.rows * 4))
        got_mine = sel.rows[(sel.rows >= first) & (sel.rows < first + len(x_all))]
        bad += not np.array_equal(got_mine, want)
        bad += not np.array_equal(ids[np.searchsorted(sel.rows, want)], mine["ID"][want - first])
        found = sel.count
        # Every blob: size, bigfile byte sum and CRC32C (each rank its share of blobs).
        cols = {name: f[name] for name in f.columns}  # opening is collective
        blobs = [(name, i) for name, c in cols.items() for i in range(c.nfile)]
        damaged = [(n, i, s) for n, i in blobs[rank::size] if (s := cols[n].verify_blob(i)) != {"OK"}]
        attrs = dict(f.attrs)
    if comm:
        bad = comm.allreduce(bad)
        damaged = sum(comm.allgather(damaged), [])

    if rank == 0:
        def how_timed(n, ok):
            return (f"best of {n} runs" + (f": the two fastest within {SETTLE:.0%}" if ok else
                                          f", the two fastest of some phase more than {SETTLE:.0%} "
                                          "apart: the machine is busy, figures may vary"))
        print(f"  timing: every figure is the slowest rank's time, the best of several runs "
              f"(numpy and colfile taking turns), each run after every rank touched and freed "
              f"{prime_bytes / 1e6:.0f} MB of memory (memory priming, as in bench/); "
              f"write and read: {how_timed(runs, steady)}; query and hist: "
              f"{how_timed(qruns, qsteady)}")

        printed = {}

        def line(what, tc, tn, how):
            printed[what] = {"colfile GB/s": nbytes / tc / 1e9, "numpy GB/s": nbytes / tn / 1e9,
                             "colfile/numpy": tn / tc}
            return (f"  {what:6s} colfile {nbytes / tc / 1e9:6.2f} GB/s   numpy raw{how} (a file per rank "
                    f"and column) {nbytes / tn / 1e9:6.2f} GB/s   colfile/numpy {tn / tc:.2f}")
        print(line("write", t_cf_w, t_np_w, " + fsync"))
        print(line("read", t_cf_r, t_np_r, ""))
        print(f"  query  {expr}: {found} particles in {t_q * 1e3:.1f} ms, their IDs in {t_ids * 1e3:.1f} ms")
        print(f"         {sel.report}")
        print(f"  hist   y of the slab's particles, 10 bins, {t_h * 1e3:.1f} ms: {hist.tolist()}")
        print(f"  attrs  {', '.join(f'{k}={float(v):g}' for k, v in attrs.items())}")
        print(f"  check  {len(blobs)} blobs: " + ("all intact (size, byte sum, CRC32C)" if not damaged
                                                  else f"DAMAGED {damaged}"))
        print("  verified: every value read back equals what was written" if not bad
              else f"  MISMATCH in {bad} comparisons")
        print(f"  look at it: .venv/bin/colfile ls -l {snap}")
        if args.json:
            printed.update({"query ms": t_q * 1e3, "ids ms": t_ids * 1e3, "hist ms": t_h * 1e3})
            with open(args.json, "w") as fh:
                json.dump({"bytes": nbytes, "ranks": size, "seconds_per_run": all_times,
                           "printed": printed}, fh, indent=1)
    return 0 if not bad and not damaged else 1


if __name__ == "__main__":
    sys.exit(main())
