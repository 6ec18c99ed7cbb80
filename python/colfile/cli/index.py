"""``colfile index``: compute the CRC32C and the per-chunk statistics of
blobs that have none (Files written by bigfile or other tools) or whose
statistics are stale, serially or with many MPI ranks."""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Any

import colfile
from colfile import chunkindex
from colfile import mpi as cmpi

from ._common import (CliError, NotFoundError, Progress, add_file_and_columns, add_progress_and_mpi,
                      blob_id, blob_path, command_parser, fmt_bytes, fmt_rows, row_bytes,
                      select_columns, want_progress)
from ._launch import communicator

#: chunks from which a commit writes the chunk index (CF__INDEX_MIN_CHUNKS)
INDEX_MIN_CHUNKS = 1024
#: ... or sub-chunks of its fine level (CF__INDEX_MIN_SUBCHUNKS)
INDEX_MIN_SUBCHUNKS = 1024

HELP = "compute missing CRC32C and statistics (bigfile output)"

DESCRIPTION = """\
Read every blob of every column (or of the COLUMNs and groups named) whose
CRC32C or per-chunk statistics are unknown or stale, and record both, as if
the blob had just been written by colfile: the CRC32C lets 'colfile check'
verify the content exactly, the statistics (count, NaNs, min, max, sum per
chunk; 'colfile stats') let queries skip data.  Data, headers and the
bigfile byte sums are not changed; colfile's extra files (colfile-v1, CRCs
and statistics, and for large columns the binary chunk index
colfile-index-v1 with per-chunk CRC32C) are rewritten, so bigfile 0.1.52
still reads the File.  A column whose chunk index is damaged or stale, or
that has 1024 chunks or more and no index (an older colfile wrote it), is
indexed whole, which rebuilds the index.

Run serially, it also gives f4 and f8 columns the index's fine level
(docs/format.md 8.6: the minimum and maximum of every sub-chunk of a 4 KiB
page per component, which lets queries skip parts of chunks): writes never
compute it, so that a File's bytes do not depend on how many processes
wrote it.  A column of 1024 sub-chunks or more whose index lacks it is
indexed whole.  Under MPI the ranks' results are merged into one commit,
which carries no fine level: run 'colfile index' serially to add it.
At the end the File's catalog (.colfile-catalog/, docs/format.md 8.5) is
rebuilt, as after every writer: a File written by bigfile lists and opens
faster from then on.

Blobs whose CRC32C and statistics are already current are skipped, unless
--force is given.  Statistics become unknown when a blob is written by
another tool, written by colfile with statistics switched off, or changed
by another tool since (its header line no longer matches).

Run it under MPI to index a large File with many processes:

  mpiexec -n 16 colfile index snapshot            (or: python -m colfile.cli index)

The blobs to do are split evenly over the ranks (cf_plan_share); each rank
reads its blobs, and rank 0 merges everyone's results and commits each
column once.  MPI is used when --mpi is given or when a launcher's
environment variables are set (PMI_RANK, PMI_SIZE, OMPI_COMM_WORLD_SIZE);
mpi4py is imported only then."""

EPILOG = """\
exit status:
  0  every blob that needed it was indexed (or nothing needed it)
  1  some blob could not be indexed (missing or short), or another failure
  2  usage error, or no such File, column or group

examples:
  colfile index snapshot                     every column that needs it
  colfile index snapshot 1/Position 1/Mass   some columns (or groups)
  colfile index --force snapshot 1/ID        recompute even current statistics
  colfile index --dry-run snapshot           list what would be indexed
  mpiexec -n 8 colfile index snapshot        8 ranks, each its share of the blobs

A progress bar (bytes indexed / total and rate; under MPI rank 0's share)
is drawn on stderr when it is a terminal; --progress forces it,
--no-progress suppresses it.  A summary line ends the output."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "index", HELP, DESCRIPTION, EPILOG)
    add_file_and_columns(p, "index")
    p.add_argument("-f", "--force", action="store_true",
                   help="index every blob, even those whose CRC32C and statistics are current")
    p.add_argument("--dry-run", action="store_true",
                   help="only list the blobs that would be indexed")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print only errors (no summary)")
    add_progress_and_mpi(p)
    p.set_defaults(_extra_positionals="columns")
    return p


def _needs_index(col: Any, fine: bool) -> bool:
    """Whether ``col``'s chunk index (docs/format.md 8.6) must be rebuilt:
    it is damaged or stale, missing from a column of 1024 chunks or more,
    or (``fine``: a serial run, the one that builds the fine level) missing
    from a column of 1024 sub-chunks or more or without the fine level the
    column would get (writes never write one).  Indexing every blob
    rebuilds it, chunk CRC32C included."""
    meta = chunkindex.info(col)
    if meta["state"] in ("damaged", "stale"):
        return True
    crows = col.chunk_rows
    chunks = sum(-(-r // crows) for r in col.blob_rows) if crows > 0 else 0
    sub = chunkindex.expected_fine_rows(col.dtype, crows) if crows > 0 and fine else 0
    if meta["state"] == "current":
        # an index without the fine level its column would get (a write's): add it
        return bool(sub) and chunkindex.count(col, chunkindex.FINE_LEVEL) == 0
    return meta["state"] == "absent" and (chunks >= INDEX_MIN_CHUNKS or
                                          (sub > 0 and chunks * -(-crows // sub) >= INDEX_MIN_SUBCHUNKS))


def _needs_work(col: Any, force: bool, fine: bool) -> list[int]:
    """The blobs of ``col`` whose CRC32C or statistics are not current, or
    all of them when its chunk index must be rebuilt (all with ``force``)."""
    if force or _needs_index(col, fine):
        return list(range(col.nfile))
    stats = col.chunk_stats(0)
    stale = set(stats["blob"][~stats["valid"]].tolist())
    return [i for i in range(col.nfile)
            if i in stale or col.blob_info(i)["crc32c"] is None]


def _plan(f: Any, names: list[str], force: bool, fine: bool) -> dict[str, Any]:
    """Which blobs of which columns to index, read through the serial File
    ``f`` (under MPI on rank 0 only, then broadcast); ``fine``: a serial
    run, which adds the fine level where it is missing."""
    columns: list[dict[str, Any]] = []
    skipped = 0       # blobs already current
    other = 0         # header-only and attribute blocks
    for name in names:
        try:
            col = f[name]
        except colfile.ColumnNotFoundError:
            raise NotFoundError(f"{f.path}: no column {name!r}") from None
        except (colfile.Error, OSError) as exc:
            raise CliError(f"{os.path.join(f.path, name)}: cannot open column {name!r}: "
                           f"{exc}") from None
        if col.kind != "data":
            other += 1
            continue
        todo = _needs_work(col, force, fine)
        skipped += col.nfile - len(todo)
        rb = row_bytes(col)
        rows = col.blob_rows
        firsts = [0]
        for r in rows:
            firsts.append(firsts[-1] + r)
        columns.append({"name": name, "nfile": col.nfile,
                        "blobs": [(i, firsts[i], rows[i], rows[i] * rb) for i in todo]})
    return {"columns": columns, "skipped": skipped, "other": other}


def run(args: Any) -> int:
    t0 = time.monotonic()
    comm = communicator(args.mpi)
    c = cmpi.as_comm(comm)
    rank = c.rank
    out = sys.stdout
    quiet = args.quiet or rank != 0
    mode = "r" if args.dry_run else "r+"

    try:
        with warnings.catch_warnings():
            if not args.dry_run:  # a stale catalog is what this rebuilds
                warnings.simplefilter("ignore", colfile.CatalogWarning)
            if comm is None:
                return _run_serial(args, mode, t0)
            return _run_parallel(args, comm, c, mode, t0, quiet)
    except (colfile.Error, OSError, CliError) as exc:
        if isinstance(exc, colfile.NoSuchFileError) and not isinstance(
                exc, colfile.ReplacedError) and not os.path.isdir(args.path):
            exc = NotFoundError(str(exc))  # the File named does not exist
        if rank != 0:
            # every rank met the same (agreed) error; rank 0 reports it
            return exc.status if isinstance(exc, CliError) else 1
        if isinstance(exc, CliError):
            raise exc from None
        if isinstance(exc, PermissionError) or (isinstance(exc, colfile.Error)
                                                and "ermission" in str(exc)):
            raise CliError(f"{exc} (indexing writes colfile-v1 in "
                           "each column directory)") from None
        raise CliError(str(exc)) from None
    finally:
        try:
            out.flush()
        except (OSError, ValueError):
            pass


def _open(path: str, mode: str, comm: Any) -> Any:
    try:
        return colfile.File(path, mode, comm=comm)
    except colfile.ReadOnlyError as exc:
        raise CliError(f"{exc} (cannot modify a read-only File)") from None


def _say_dry_run(plan: dict[str, Any], f: Any) -> None:
    for entry in plan["columns"]:
        for i, first, rows, nbytes in entry["blobs"]:
            print(f"{os.path.join(f.path, *entry['name'].split('/'), blob_id(i))}: column "
                  f"{entry['name']!r} {fmt_rows(first, rows)}: would index "
                  f"{nbytes} bytes")


def _summary(plan: dict[str, Any], done: int, nbytes: int, failures: list[dict[str, Any]],
             elapsed: float, nranks: int, dry_run: bool) -> str:
    ncols = len(plan["columns"])
    todo = sum(len(e["blobs"]) for e in plan["columns"])
    size = f"{nbytes} bytes" + (f" ({fmt_bytes(nbytes)})" if nbytes >= 1024 else "")
    if dry_run:
        line = (f"would index {todo} blob{'s' if todo != 1 else ''}, {size}, in {ncols} "
                f"column{'s' if ncols != 1 else ''}")
    else:
        rate = f", {fmt_bytes(nbytes / elapsed)}/s" if elapsed > 0 and nbytes else ""
        where = f" on {nranks} ranks" if nranks > 1 else ""
        line = (f"indexed {done} blob{'s' if done != 1 else ''}, {size}, in {ncols} "
                f"column{'s' if ncols != 1 else ''} in {elapsed:.2f} s{where}{rate}")
    skipped = plan["skipped"]
    if skipped:
        line += (f"; {skipped} blob{'s' if skipped != 1 else ''} already current, skipped "
                 "(--force redoes them)")
    if plan["other"]:
        n = plan["other"]
        line += f"; {n} block{'s' if n != 1 else ''} without data"
    if failures:
        line += f"; FAILED: {len(failures)} blob{'s' if len(failures) != 1 else ''} " \
                "could not be indexed"
    elif not dry_run and todo == 0:
        line += "; nothing to do"
    return line


def _index_blobs(col: Any, name: str, items: list[tuple[int, int, int, int]],
                 progress: Progress, failures: list[dict[str, Any]],
                 rank: int | None) -> tuple[int, int]:
    """Index ``items`` of ``col``; returns (blobs done, bytes done)."""
    done = nbytes = 0
    for i, first, rows, size in items:
        try:
            col.index_blobs([i])
        except (colfile.Error, OSError) as exc:
            failures.append({"column": name, "blob": i, "path": blob_path(col, i),
                             "first_row": first, "rows": rows,
                             "message": str(exc) if rank is None else f"rank {rank}: {exc}"})
        else:
            done += 1
            nbytes += size
        progress.advance(size, label=name)
    return done, nbytes


def _report_failures(failures: list[dict[str, Any]], progress: Progress) -> None:
    progress.clear()
    for fl in sorted(failures, key=lambda x: (x["column"], x["blob"])):
        print(f"{fl['path']}: column {fl['column']!r} {fmt_rows(fl['first_row'], fl['rows'])}: "
              f"cannot index: {fl['message']}", file=sys.stderr)


def _run_serial(args: Any, mode: str, t0: float) -> int:
    with _open(args.path, mode, None) as f:
        names = select_columns(f, args.columns)
        plan = _plan(f, names, args.force, True)
        if args.dry_run:
            if not args.quiet:
                _say_dry_run(plan, f)
                total = sum(b[3] for e in plan["columns"] for b in e["blobs"])
                print(_summary(plan, 0, total, [], 0.0, 1, True))
            return 0
        total = sum(b[3] for e in plan["columns"] for b in e["blobs"])
        enabled = want_progress(args.progress) if (not args.quiet or args.progress) else False
        progress = Progress(total, enabled=enabled, verb="indexing")
        failures: list[dict[str, Any]] = []
        done = nbytes = 0
        try:
            for entry in plan["columns"]:
                col = f[entry["name"]]
                d, b = _index_blobs(col, entry["name"], entry["blobs"], progress, failures, None)
                done += d
                nbytes += b
                col.close()  # commit this column now (an interruption keeps it)
        finally:
            progress.close()
    if failures:
        _report_failures(failures, progress)
    if not args.quiet:
        print(_summary(plan, done, nbytes, failures, time.monotonic() - t0, 1, False))
    return 1 if failures else 0


def _run_parallel(args: Any, comm: Any, c: Any, mode: str, t0: float, quiet: bool) -> int:
    rank, nranks = c.rank, c.size
    f = _open(args.path, mode, comm)
    failures: list[dict[str, Any]] = []
    done = nbytes = 0
    progress = Progress(0, enabled=False)
    try:
        names = select_columns(f, args.columns)   # collective: same list everywhere

        def plan_on_root() -> dict[str, Any]:
            # rank 0 reads the metadata once, on serial handles of its own
            with colfile.File(args.path, "r") as g:
                return _plan(g, names, args.force, False)

        plan = cmpi.agree(c, plan_on_root, root=0)
        if args.dry_run:
            if rank == 0 and not args.quiet:
                _say_dry_run(plan, f)
                total = sum(b[3] for e in plan["columns"] for b in e["blobs"])
                print(_summary(plan, 0, total, [], 0.0, nranks, True))
            return 0
        # every blob to do, in column order; each rank its even share
        work = [(k, item) for k, e in enumerate(plan["columns"]) for item in e["blobs"]]
        first, count = cmpi.plan_share(len(work), nranks, rank)
        mine = work[first:first + count]
        enabled = want_progress(args.progress) if (not quiet or args.progress) else False
        progress = Progress(sum(item[3] for _, item in mine), enabled=enabled and rank == 0,
                            verb=f"indexing (rank 0 of {nranks})")
        for k, entry in enumerate(plan["columns"]):
            col = f[entry["name"]]                 # collective; rank 0's handle commits
            items = [item for kk, item in mine if kk == k]
            d, b = _index_blobs(col, entry["name"], items, progress, failures, rank)
            done += d
            nbytes += b
            col.close()  # collective: rank 0 merges every rank's results, commits once
        progress.close()
    finally:
        f.close()
    gathered = c.gather((done, nbytes, failures), root=0)
    if rank != 0:
        return 1 if failures else 0
    assert gathered is not None
    done = sum(g[0] for g in gathered)
    nbytes = sum(g[1] for g in gathered)
    failures = [fl for g in gathered for fl in g[2]]
    if failures:
        _report_failures(failures, progress)
    if not args.quiet:
        print(_summary(plan, done, nbytes, failures, time.monotonic() - t0, nranks, False))
    return 1 if failures else 0
