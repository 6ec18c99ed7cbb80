"""``colfile iosim``: time creating, writing and reading one column with N
ranks (the Python twin of the C ``colfile-iosim``: the same options, report
and bytes written)."""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

import colfile
from colfile import mpi as cmpi
from colfile import plots

from . import _plot
from ._common import CliError, UsageError, command_parser
from ._launch import launched_size, want_mpi

#: the largest 64-bit size, 2**63-1
INT64_MAX = int(np.iinfo(np.int64).max)

HELP = "measure parallel create/write/read throughput (under mpiexec)"

#: The column written (replaced if it exists, removed afterwards unless --keep).
COLUMN = "iosim"

#: Rows of int32 per rank of each --load.
LOADS = {"small": 4 << 10, "medium": 4 << 20, "large": 64 << 20}

#: Environment variables by which MPI launchers announce a parallel run.

DESCRIPTION = """\
Create, write and read one column collectively and report the time and
throughput of each phase -- the slowest rank's, from a barrier to the last
rank's end -- then check that the data read back is the data written.
The write phase is the collective write and the commit of the header
(closing the column); the report also gives the write alone ('data') and
the CPU time (user + system, all threads) the ranks spent in the write
phase, summed over ranks, and that CPU time per second of the phase: the
cores the write kept busy on average ('cpu', JSON write_cpu_seconds and
write_cpu_per_wall).

Run it under MPI to measure parallel I/O:

  mpiexec -n 64 colfile iosim --load medium          (or: python -m colfile.cli iosim)

Every rank holds the same number of rows.  Phases: 'create' opens the File
and creates the column, 'write' writes every rank's rows with one collective
write and commits the header, 'read' opens the column again and reads every
rank's rows back.  Throughput is in decimal GB/s (1e9 bytes per second).
Commits skip fsync (durable=False: the figures are the page cache's) unless
--durable is given.

MPI is used when --mpi is given or when a launcher's environment variables
are set (PMI_RANK, PMI_SIZE: MPICH, Intel MPI; OMPI_COMM_WORLD_SIZE: Open
MPI); mpi4py is imported only then.  Otherwise -- or when a launcher started
one process and mpi4py is not installed -- one process runs serially.
The C program colfile-iosim (libcolfile-mpi) takes the same options (but
--mpi), prints the same report and writes the same bytes."""

EPILOG = """\
exit status:
  0  done, the data read back matched
  1  an I/O error, or data read back differed
  2  usage error

examples:
  colfile iosim                                   one process, 4Ki rows
  mpiexec -n 4 colfile iosim --load medium --json
  mpiexec -n 4 colfile iosim --plot iosim.png       and draw GB/s per phase
  mpiexec -n 8 colfile iosim --rows 100000 --dtype f8 --nmemb 3 --mode aggregated
  mpiexec -n 8 colfile iosim --load large --nfile 2 --concurrency 4 /scratch/me/sim"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "iosim", HELP, DESCRIPTION, EPILOG)
    p.add_argument("path", metavar="PATH", nargs="?",
                   help=f"the File to use (created if needed; its column {COLUMN!r} is "
                        "replaced); default: a new directory under $TMPDIR, removed "
                        "afterwards")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--load", choices=sorted(LOADS, key=LOADS.__getitem__),
                      help="rows of int32 per rank: small 4Ki, medium 4Mi, large 64Mi "
                           "(default small; not with --rows, --dtype or --nmemb)")
    size.add_argument("--rows", type=_count, metavar="N", help="rows per rank")
    p.add_argument("--dtype", metavar="D", help="the column's dtype (default i4)")
    p.add_argument("--nmemb", type=_count, metavar="M", help="elements per row (default 1)")
    p.add_argument("--mode", choices=("throttled", "aggregated", "blob_owners", "auto"),
                   default="auto",
                   help="how ranks write (default auto)")
    p.add_argument("--nfile", type=_count, default=0, metavar="K",
                   help="blobs (default 0: automatic)")
    p.add_argument("--concurrency", type=_count, default=0, metavar="C",
                   help="ranks doing I/O at once (default 64)")
    p.add_argument("--digest", choices=("auto", "inline", "helper"), default="auto",
                   help="where a write computes its sums, CRC32C and statistics: on "
                        "the writing thread, on a helper thread, or (auto, the default) "
                        "on a helper only when the ranks of the node leave a core free "
                        "for it (JSON digest_used)")
    p.add_argument("--durable", action="store_true",
                   help="fsync every commit (default: the page cache only, durable=False)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", metavar="OUT.png", default=None,
                   help="also draw the bandwidth of each phase (rank 0; needs matplotlib: "
                        "pip install colfile[plot])")
    p.add_argument("--keep", action="store_true", help="keep the data afterwards")
    p.add_argument("--mpi", action="store_true",
                   help="use MPI (mpi4py) even without a launcher's environment")
    return p


def _count(text: str) -> int:
    try:
        n = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {n}")
    if n > INT64_MAX:
        raise argparse.ArgumentTypeError(f"{n} is above the largest 64-bit size, 2**63-1")
    return n


#: Bytes of the pattern computed at once (bounds the uint64 temporaries).
PATTERN_PIECE = 1 << 22


def pattern(offset: int, n: int) -> np.ndarray:
    """The bytes at ``offset .. offset+n`` of the column: a cheap function of
    the byte's offset (the C colfile-iosim writes the same bytes).  Built in
    pieces, so the memory used is the result plus a few MiB."""
    out = np.empty(n, dtype=np.uint8)
    for start in range(0, n, PATTERN_PIECE):
        stop = min(n, start + PATTERN_PIECE)
        off = np.arange(offset + start, offset + stop, dtype=np.uint64)
        out[start:stop] = (off * np.uint64(131)) ^ (off >> np.uint64(8)) ^ (off >> np.uint64(19))
    return out


def cpu_seconds() -> float:
    """CPU seconds (user + system) this process has used so far, all its
    threads included (a rank's write may digest on a helper thread)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return float(ru.ru_utime + ru.ru_stime)


class _Timer:
    def __init__(self, comm: Any) -> None:
        self.comm = comm

    def start(self) -> float:
        self.comm.barrier()
        return time.perf_counter()

    def slowest(self, t0: float) -> float:
        return float(max(self.comm.allgather(time.perf_counter() - t0)))

    def slowest2_cpu(self, t0: float, t1: float, cpu0: float) -> tuple[float, float, float]:
        """The slowest rank's ``t1 - t0`` and time since ``t0``, and the CPU
        time since ``cpu0`` (:func:`cpu_seconds`) summed over ranks (one
        collective for the three)."""
        t2, cpu = time.perf_counter(), cpu_seconds() - cpu0
        spans = self.comm.allgather((t1 - t0, t2 - t0, cpu))
        return (float(max(s[0] for s in spans)), float(max(s[1] for s in spans)),
                float(sum(s[2] for s in spans)))


def run(args: Any, before_write: Callable[[], None] | None = None) -> int:
    """Run the command; ``before_write``, if given, is called on every rank
    just before the timed write (the benchmarks prime memory there:
    bench/primed_iosim.py)."""
    if args.plot is not None:
        _plot.check_target(args.plot)
    comm: Any = None
    if want_mpi(args.mpi):
        try:
            from mpi4py import MPI
        except ImportError as exc:
            # one process under a launcher may go on alone; more may not
            if args.mpi or launched_size() > 1:
                raise CliError(f"running under MPI needs mpi4py, which cannot be "
                               f"imported: {exc}") from None
        else:
            comm = MPI.COMM_WORLD
    c = cmpi.as_comm(comm)
    rank, nranks = c.rank, c.size

    rows = LOADS[args.load or "small"] if args.rows is None else args.rows
    if args.load and (args.dtype or args.nmemb):
        raise UsageError("--load means int32 rows; give --rows with --dtype/--nmemb",
                         hint="try 'colfile iosim --help'")
    nmemb = 1 if args.nmemb is None else args.nmemb
    if nmemb < 1:
        raise UsageError("--nmemb must be at least 1")
    try:
        base = np.dtype(args.dtype or "i4")
        if base.kind not in "iufcbS" or base.names is not None or base.itemsize == 0:
            raise TypeError(f"colfile stores plain elements of kinds i u f c b S, not {base}")
    except TypeError as exc:
        raise UsageError(f"bad --dtype {args.dtype!r}: {exc}") from None
    rowbytes = nmemb * base.itemsize
    local_bytes = rows * rowbytes
    total_bytes = local_bytes * nranks
    if total_bytes > INT64_MAX:
        raise UsageError(f"--rows {rows} x {nranks} rank(s) of {rowbytes} bytes is {total_bytes} "
                         "bytes: above the largest column, 2**63-1 bytes")
    first = rank * rows

    temporary = args.path is None
    path = args.path
    if temporary:
        made = None
        if rank == 0:
            made = tempfile.mkdtemp(prefix="colfile-iosim-")
        path = c.bcast(made, root=0)
    timer = _Timer(c)
    quiet = rank != 0  # every rank meets the same (agreed) error; rank 0 reports
    try:
        data = pattern(first * rowbytes, local_bytes)
        rowsview = data.view(base).reshape((rows, nmemb) if nmemb > 1 else (rows,))

        t0 = timer.start()
        f = colfile.File(path, "a", comm=comm, durable=args.durable, digest=args.digest)
        try:
            col = f.create(COLUMN, (base, nmemb) if nmemb > 1 else base,
                           size=rows * nranks, nfile=args.nfile or None)
            t_create = timer.slowest(t0)
            nfile = col.nfile
            # each rank's placement (its own CPUs may differ): "mixed" if they do
            places = set(c.allgather(f.digest_placement))
            digest_used = places.pop() if len(places) == 1 else "mixed"

            if before_write is not None:
                before_write()
            t0 = timer.start()
            cpu0 = cpu_seconds()
            col.write_all(rowsview, first, mode=args.mode,
                          concurrency=args.concurrency or None)
            t1 = time.perf_counter()
            col.close()
            t_data, t_write, cpu_write = timer.slowest2_cpu(t0, t1, cpu0)

            t0 = timer.start()
            col = f[COLUMN]
            back = col.read_all(first, rows)
            col.close()
            t_read = timer.slowest(t0)
            bad = int(np.count_nonzero(back.view(np.uint8).reshape(-1) != data))
            bad_total = int(sum(c.allgather(bad)))
            if not args.keep:
                del f[COLUMN]
        finally:
            f.close()
    except colfile.Error as exc:
        _cleanup(c, path, temporary and not args.keep)
        if quiet:
            return 1
        raise CliError(str(exc)) from None
    if temporary and not args.keep:
        _cleanup(c, path, True)

    if args.mode == "auto":
        used = cmpi.plan_mode(total_bytes, nranks) if nranks > 1 else "throttled"
    else:
        used = args.mode if nranks > 1 else "throttled"
    conc = args.concurrency or cmpi.PLAN_CONCURRENCY
    gb = (lambda s: total_bytes / s / 1e9 if s > 0 else 0.0)
    cpu_per_wall = cpu_write / t_write if t_write > 0 else 0.0
    if rank == 0:
        report = {"ranks": nranks, "rows_per_rank": rows, "rows": rows * nranks,
                  "dtype": base.str, "nmemb": nmemb, "bytes": total_bytes,
                  "mode": args.mode, "mode_used": used, "nfile": nfile,
                  "concurrency": conc, "digest": args.digest, "digest_used": digest_used,
                  "durable": bool(args.durable), "path": path,
                  "kept": bool(args.keep),
                  "create_seconds": round(t_create, 6),
                  "write_seconds": round(t_write, 6), "write_data_seconds": round(t_data, 6),
                  "write_GBps": round(gb(t_write), 6),
                  "write_cpu_seconds": round(cpu_write, 6),
                  "write_cpu_per_wall": round(cpu_per_wall, 6),
                  "read_seconds": round(t_read, 6), "read_GBps": round(gb(t_read), 6),
                  "mismatched_bytes": bad_total, "verified": bad_total == 0}
        if args.plot is not None:
            _plot.draw(args.plot, lambda: plots.iosim_figure(report))
        if args.json:
            print(json.dumps(report))
        else:
            print(f"colfile iosim: {nranks} ranks x {rows} rows of {base.str} x {nmemb} "
                  f"= {total_bytes} bytes")
            print(f"  mode {args.mode} ({used}), nfile {nfile}, concurrency {conc}, "
                  f"digest {args.digest} ({digest_used}), "
                  f"{'durable' if args.durable else 'page cache'}, "
                  f"File {path}{' (kept)' if args.keep else ''}")
            print(f"  create {t_create:10.4f} s")
            print(f"  write  {t_write:10.4f} s {gb(t_write):10.3f} GB/s "
                  f"(data {t_data:.4f} s, then the commit)")
            print(f"  cpu    {cpu_write:10.4f} s {cpu_per_wall:10.2f} cores busy writing "
                  "(user+system, all ranks and threads)")
            print(f"  read   {t_read:10.4f} s {gb(t_read):10.3f} GB/s")
            print(f"  verify {'FAILED' if bad_total else 'ok'}")
            if bad_total:
                print(f"  {bad_total} bytes read back differ from those written")
        sys.stdout.flush()
    return 1 if bad_total else 0


def _cleanup(c: Any, path: str, remove_dir: bool) -> None:
    """Rank 0 removes the temporary directory (after every rank is done)."""
    c.barrier()
    if remove_dir and c.rank == 0:
        shutil.rmtree(path, ignore_errors=True)
