"""The colfile demo: a parallel write, read and query of an N-body snapshot on local disk.

Every MPI rank holds its share of the particles of a simulation snapshot
(Position f8x3, Velocity f4x3, ID i8, Mass f4, plus the attributes BoxSize,
Time and Omega0).  The ranks write them collectively into one File, read
them back (each rank its share), verify every value, run a small query
(the particles of a thin slab, and their IDs), check every blob's
checksums, and print throughput next to plain numpy ``tofile``/``fromfile``
of the same bytes (one raw file per rank and column) measured in the same
run.

    mpiexec -n 2 python examples/demo.py     # what ``./run demo`` does
    python examples/demo.py --rows 100000    # one process, no MPI needed
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

import colfile
from colfile.mpi import plan_share

COLUMNS = {"Position": ("f8", 3), "Velocity": ("f4", 3), "ID": ("i8", 1), "Mass": ("f4", 1)}


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
    p.add_argument("--dir", default=str(Path(__file__).resolve().parents[1] / "build" / "demo"),
                   help="output directory (default build/demo; the snapshot is kept for inspection)")
    args = p.parse_args(argv)

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

    _, t_np_w = timed(numpy_write)
    _, t_cf_w = timed(colfile_write)
    back_np, t_np_r = timed(numpy_read)
    back, t_cf_r = timed(colfile_read)
    bad = sum(not (np.array_equal(back[k], a) and np.array_equal(back_np[k], a)) for k, a in mine.items())

    # The query: the particles of a thin slab with small IDs.  The per-chunk
    # statistics written with the data let the query skip every chunk whose
    # x range misses the slab (the File is sorted along x); the answer is
    # exact.  Then a histogram of y over the same particles, each rank
    # taking a share of the chunks.
    expr = f"(Position[0] > 500) & (Position[0] < 510) & (ID < {args.rows * 4})"
    with colfile.File(snap, "r", comm=comm) as f:
        sel, t_q = timed(lambda: colfile.where(f["1/"], expr))
        ids, t_ids = timed(lambda: sel.read("ID"))
        x_all = np.concatenate([a[:, 0] for a in [mine["Position"]]])
        want = first + np.flatnonzero((x_all > 500) & (x_all < 510) & (mine["ID"] < args.rows * 4))
        got_mine = sel.rows[(sel.rows >= first) & (sel.rows < first + len(x_all))]
        bad += not np.array_equal(got_mine, want)
        bad += not np.array_equal(ids[np.searchsorted(sel.rows, want)], mine["ID"][want - first])
        found = sel.count
        pos = f["1/Position"]
        (hist, _), t_h = timed(lambda: colfile.histogram(pos.field(1), bins=10, range=(0, box),
                                                         where=(pos.field(0) > 500) & (pos.field(0) < 510)))
        # Every blob: size, bigfile byte sum and CRC32C (each rank its share of blobs).
        cols = {name: f[name] for name in f.columns}  # opening is collective
        blobs = [(name, i) for name, c in cols.items() for i in range(c.nfile)]
        damaged = [(n, i, s) for n, i in blobs[rank::size] if (s := cols[n].verify_blob(i)) != {"OK"}]
        attrs = dict(f.attrs)
    if comm:
        bad = comm.allreduce(bad)
        damaged = sum(comm.allgather(damaged), [])

    if rank == 0:
        def line(what, tc, tn, how):
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
    return 0 if not bad and not damaged else 1


if __name__ == "__main__":
    sys.exit(main())
