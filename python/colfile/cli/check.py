"""``colfile check``: verify every blob of every column."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

import colfile
from colfile import chunkindex
from colfile import mpi as cmpi
from colfile import stream_check

from ._common import (CliError, Progress, add_file_and_columns, add_progress_and_mpi, blob_id,
                      blob_path, catalog_note, command_parser, dump_json, fmt_bytes, fmt_rows,
                      open_file, row_bytes, select_columns, want_progress)
from ._launch import communicator

HELP = "verify every blob against its header sums and CRC32C, and every stream chunk"

DESCRIPTION = """\
Read every blob (data file) of every column, or of the COLUMNs and groups
named, and compare it with the metadata: its size with the rows the header
gives it, the sum of its bytes with the bigfile checksum in the header, and
its CRC32C with the one colfile recorded (when one is known).  Each damaged
blob is reported with its file path, the rows it holds and what is wrong:

  missing         the file does not exist although the header gives it rows
  short           fewer bytes than its rows need (the incomplete rows are named)
  long            more bytes than its rows need (readers ignore the surplus)
  sum mismatch    the byte sum differs from the header's
  crc mismatch    the CRC32C differs from the one recorded by colfile
  stats mismatch  the recorded statistics (min, max, ...) disagree with the data
  stats damaged   the recorded statistics are inconsistent in themselves (a
                  minimum above the maximum, ...): unusable
  torn            an in-place update of the column was interrupted: its rows
                  may mix old and new values (colfile-torn; see colfile repair)
  damaged metadata  colfile-v1, where colfile records CRC32C and statistics,
                  fails its own checksum: all of them are unknown; or the
                  chunk index colfile-index-v1 of a large column fails its
                  checks: queries plan from the text statistics
  cannot open     the column's metadata (header, attributes) is unreadable

Streams (docs/streams.md) are checked too, all of them or those named (a
stream's name, or a group or pattern they are below): every committed chunk
of every task is read and compared with the CRC32C its table records.  A
damaged chunk is reported with its physical file, task, chunk, offset and
the task's rows it holds (part of) as missing, short or crc mismatch, or
as stats mismatch when the statistics recorded for it disagree with the
rows (checked for tasks whose chunks are intact); a table that cannot be
read as cannot open.

colfile repair recomputes what the data still holds (sums, CRC32C,
statistics).  These are listed as notes, not damage:

  - leftovers of interrupted writers (staging directories, temporary and
    lock files; see colfile repair);
  - a column that another process is updating in place ("update in
    progress"): its blobs are not checked, as they are being changed;
  - a column that another process replaced, removed, appended to or
    updated while it was being checked: it is opened and checked again,
    and after four tries left with a note ("changed during the check");
  - a column whose CRC32C and statistics are unknown because its header
    changed since colfile recorded them (written by another tool, or copied
    without keeping modification times; colfile index recomputes them);
  - a blob whose byte sum differs from the header's while its CRC32C is
    known and matches: bigfile's byte sum counts every byte ever written,
    so rows rewritten in place count twice (docs/format.md 6).  The CRC32C
    may be one that colfile-v1 records for the same rows and byte sum
    while it is not current, as when the check falls inside another
    process's commit, between its header and its colfile-v1 (format.md
    8.1, "Checking").

A blob without a known CRC32C (written by bigfile, or changed by it since)
is checked by its byte sum only; this is reported in the summary and is not
damage.  Its sum mismatch is reported as damage, although rows that bigfile
itself overwrote give one too (its sum counts every byte ever written)."""

EPILOG = """\
Under MPI (mpiexec -n N colfile check ..., or --mpi) the blobs are shared
out over the ranks, rank 0 checks the streams and prints the report.

exit status:
  0  every blob checked is intact
  1  damage found
  2  usage error, or the check itself failed (no such File or column, ...)

examples:
  colfile check snapshot
  colfile check snapshot 1/Position 2         some columns and groups
  colfile check -q snapshot || echo damaged
  colfile check --json snapshot > report.json

A progress bar (bytes checked / total and rate) is drawn on stderr when it
is a terminal; --progress forces it, --no-progress suppresses it."""

# (status flag, short name, counts as damage)
_ORDER = ("MISSING", "SHORT", "LONG", "SUM_MISMATCH", "CRC_MISMATCH", "STATS_MISMATCH",
          "STATS_DAMAGED", "CRC_UNKNOWN")
_DAMAGE = {"MISSING", "SHORT", "LONG", "SUM_MISMATCH", "CRC_MISMATCH", "STATS_MISMATCH",
           "STATS_DAMAGED", "ERROR"}


def _damage(status: set[str]) -> set[str]:
    """The flags of a blob's status that are damage.  A sum mismatch is not
    when the blob's CRC32C is known and matches: the data is what colfile
    committed, and bigfile's running sum counts rewritten bytes again."""
    found = status & _DAMAGE
    if "SUM_MISMATCH" in found and not status & {"CRC_UNKNOWN", "CRC_MISMATCH"}:
        found.discard("SUM_MISMATCH")
    return found


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "check", HELP, DESCRIPTION, EPILOG)
    add_file_and_columns(p, "check")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print nothing; the exit status tells the result")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also list every intact blob")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    add_progress_and_mpi(p)
    p.set_defaults(_extra_positionals="columns", _fail_status=2)
    return p


def _byte_sum(path: str, nbytes: int) -> int | None:
    """The bigfile running sum (mod 2**32) of the first ``nbytes`` bytes."""
    total = 0
    try:
        with open(path, "rb") as fh:
            left = nbytes
            while left > 0:
                chunk = fh.read(min(left, 1 << 24))
                if not chunk:
                    break
                total += int(np.frombuffer(chunk, dtype=np.uint8).sum(dtype=np.uint64))
                left -= len(chunk)
    except OSError:
        return None
    return total & 0xFFFFFFFF


def _file_size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _problems(col: Any, i: int, status: set[str], info: dict[str, Any], first: int,
              path: str) -> list[dict[str, str]]:
    """Describe each damage flag of blob ``i`` as {kind, message}."""
    rows = info["rows"]
    rb = row_bytes(col)
    need = rows * rb
    out = []
    size = _file_size(path) if status & {"SHORT", "LONG"} else None
    for flag in _ORDER:
        if flag not in status or flag == "CRC_UNKNOWN":
            continue
        if flag == "MISSING":
            msg = f"missing: the file does not exist, the header gives it {rows} rows"
        elif flag == "SHORT":
            if size is None:
                msg = f"short: fewer than the {need} bytes its rows need"
            else:
                whole = size // rb if rb else rows
                msg = f"short: {size} of {need} bytes, " + (
                    f"{fmt_rows(first + whole, rows - whole)} incomplete")
        elif flag == "LONG":
            extra = "" if size is None else f"{size} bytes, "
            msg = f"long: {extra}its rows need {need}" + (
                "" if size is None else f" ({size - need} extra bytes, ignored by readers)")
        elif flag == "SUM_MISMATCH":
            actual = _byte_sum(path, need)
            msg = f"sum mismatch: header says {info['sum']}"
            if actual is not None:
                msg += f", the data bytes sum to {actual}"
        elif flag == "STATS_MISMATCH":
            msg = ("stats mismatch: the recorded statistics (docs/format.md 8.4) disagree with "
                   "the data")
        elif flag == "STATS_DAMAGED":
            msg = ("stats damaged: the recorded statistics are inconsistent (e.g. a minimum "
                   "above the maximum) and unusable; colfile repair recomputes them")
        else:  # CRC_MISMATCH
            crc = info.get("crc32c")
            msg = "crc mismatch: the data does not match the recorded CRC32C"
            if crc is not None:
                msg += f" {crc:08x}"
        out.append({"kind": flag.lower().replace("_", " "), "message": msg})
    return out


def _check_blob(name: str, col: Any, i: int, first: int) -> tuple[dict[str, Any], int]:
    """Verify blob ``i`` of ``col``: its report entry and its byte count.
    ``colfile.ReplacedError`` passes: the column changed since it was
    opened (another process replaced, removed, appended to or updated it),
    which says nothing about damage."""
    path = blob_path(col, i)
    try:
        info = col.blob_info(i)
        status = col.verify_blob(i)
        probs = _problems(col, i, status, info, first, path)
    except colfile.ReplacedError:
        raise
    except (colfile.Error, OSError) as exc:
        info = {"rows": col.blob_rows[i] if i < col.nfile else 0}
        status = {"ERROR"}
        probs = [{"kind": "cannot verify", "message": str(exc)}]
    rows = info["rows"]
    entry = {"column": name, "blob": blob_id(i), "path": path, "first_row": first, "rows": rows,
             "status": sorted(status), "problems": probs}
    return entry, rows * row_bytes(col)


# Times a column that another process changes while it is being checked is
# opened and checked again before the check gives up on it (with a note).
_CHANGED_TRIES = 4


def _stamp(path: str, name: str) -> tuple[Any, bool]:
    """What tells a column's version from outside: its header file (inode,
    modification time, size) and whether it is marked torn.  Taken before
    the column is opened and again before damage is reported: a change
    means another process committed or began an in-place update during the
    check, which a writer lock would have shown where locks exclude across
    nodes, but not where they are node-local or off."""
    d = os.path.join(path, name)
    try:
        st = os.stat(os.path.join(d, "header"))
        head: Any = (st.st_ino, st.st_mtime_ns, st.st_size)
    except OSError:
        head = None
    return head, os.path.exists(os.path.join(d, "colfile-torn"))


def _moved(f: Any, before: dict[str, Any], names: Any) -> dict[str, str]:
    """The columns among ``names`` whose stamp changed since ``before``,
    with why."""
    out = {}
    for name in names:
        if name in before and _stamp(f.path, name) != before[name]:
            out[name] = "its header or torn mark changed while it was checked"
    return out


def _changed_note(where: str, why: str) -> str:
    return (f"{where}: changed during the check: {why}; not checked (another process "
            "replaced, removed, appended to or updated it meanwhile: check it again)")


def _recheck(f: Any, name: str, results: list[Any], notes: list[str], why: str) -> str | None:
    """Open column ``name`` again and check every blob of it, adding the
    entries to ``results``: None when done (or when the column is gone or
    being updated, which ``notes`` then say), else why it kept changing."""
    where = f"{os.path.join(f.path, name)}: column {name!r}"
    for _ in range(_CHANGED_TRIES):
        try:
            f[name].close()   # the File keeps the handle it opened: a new one
        except colfile.Error:
            pass
        try:
            col = f[name]
        except colfile.ColumnNotFoundError:
            notes.append(f"{where}: removed by another process during the check")
            return None
        except colfile.ReplacedError as exc:
            why = str(exc)
            continue
        if col.nmemb and col.dtype is not None and col.ext_state == "updating":
            notes.append(f"{where}: update in progress: another process is updating its rows "
                         "in place; its blobs were not checked")
            return None
        mine = []
        try:
            first = 0
            for i in range(col.nfile):
                mine.append(_check_blob(name, col, i, first))
                first += col.blob_rows[i]
        except colfile.ReplacedError as exc:
            why = str(exc)
            continue
        results.extend(mine)
        return None
    return why


def run(args: Any) -> int:
    rank = cmpi.as_comm(communicator(args.mpi)).rank
    try:
        return _run(args)
    except (CliError, colfile.Error, OSError):
        if rank != 0:
            return 2  # every rank met the same (agreed) error; rank 0 reports it
        raise


def _run(args: Any) -> int:
    t0 = time.monotonic()
    out = sys.stdout
    comm = communicator(args.mpi)
    c = cmpi.as_comm(comm)
    quiet = args.quiet or c.rank != 0
    verbose = args.verbose and not quiet and not args.json
    report: list[dict[str, Any]] = []   # damaged blobs and columns
    intact: list[dict[str, Any]] = []   # with --verbose/--json
    nblobs = nbytes = crc_unknown = rewritten = 0
    bad_columns: set[str] = set()

    def say(line: str) -> None:
        if not quiet and not args.json:
            progress.clear()  # keep the bar off the report lines
            print(line, file=out)
            out.flush()

    # torn='warn': a torn column is reported, not refused.
    import warnings

    f = open_file(args.path, comm=comm, torn="warn", verify=False)
    with f, warnings.catch_warnings():
        warnings.simplefilter("ignore", colfile.TornWarning)
        warnings.simplefilter("ignore", colfile.CatalogWarning)  # a note below
        stream_names, column_args = stream_check.select(f, args.columns)
        names = select_columns(f, column_args) if column_args or not args.columns else []
        cols: list[tuple[str, Any]] = []
        notes: list[str] = []
        stale = catalog_note(f)
        if stale:
            notes.append(stale)
        before: dict[str, Any] = {}
        for name in names:
            where = f"{os.path.join(f.path, name)}: column {name!r}"
            before[name] = _stamp(f.path, name)
            try:
                cols.append((name, f[name]))
            except colfile.ColumnNotFoundError:
                notes.append(f"{where}: removed by another process during the check")
            except colfile.ReplacedError as exc:
                notes.append(_changed_note(where, str(exc)))
            except (colfile.Error, OSError) as exc:
                entry = {"column": name, "blob": None,
                         "path": os.path.join(f.path, name, "header"),
                         "first_row": None, "rows": None,
                         "problems": [{"kind": "cannot open", "message": str(exc)}]}
                report.append(entry)
                bad_columns.add(name)
        # Whether the CRC32C and statistics recorded apply (rank 0's view:
        # it read the files; the other ranks' handles are its copies).
        states = {name: (col.ext_state if col.nmemb and col.dtype is not None else "absent")
                  for name, col in cols}
        # the chunk index of large columns, read whole (docs/format.md 8.6)
        index_bad = {name: (chunkindex.problem(col) if col.nmemb and col.dtype is not None else None)
                     for name, col in cols} if c.rank == 0 else {}
        if comm is not None and c.size > 1:
            states = comm.bcast(states, root=0)
            index_bad = comm.bcast(index_bad, root=0)
        for name, col in cols:
            state = states[name]
            where = f"{os.path.join(f.path, name)}: column {name!r}"
            if state == "updating":
                notes.append(f"{where}: update in progress: another process is updating its rows "
                             "in place; its blobs were not checked")
            elif state == "stale":
                notes.append(f"{where}: CRC32C and statistics unknown: the header changed since "
                             "colfile recorded them (written by another tool, or copied without "
                             "keeping modification times); colfile index recomputes them")
            elif state == "damaged":
                report.append({"column": name, "blob": None,
                               "path": os.path.join(f.path, name, "colfile-v1"),
                               "first_row": None, "rows": None,
                               "problems": [{"kind": "damaged metadata", "message":
                                             "damaged metadata: colfile-v1 fails its own checksum "
                                             "or does not parse, so the CRC32C and statistics it "
                                             "records are unknown (colfile repair recomputes "
                                             "them)"}]})
                bad_columns.add(name)
            if index_bad.get(name):
                report.append({"column": name, "blob": None,
                               "path": os.path.join(f.path, name, "colfile-index-v1"),
                               "first_row": None, "rows": None,
                               "problems": [{"kind": "damaged metadata", "message":
                                             f"damaged metadata: {index_bad[name]}; queries plan "
                                             "from the text statistics (colfile index or colfile "
                                             "repair rebuilds it)"}]})
                bad_columns.add(name)
            if col.torn:
                report.append({"column": name, "blob": None,
                               "path": os.path.join(f.path, name, "colfile-torn"),
                               "first_row": None, "rows": None,
                               "problems": [{"kind": "torn", "message":
                                             "torn: an in-place update was interrupted; rows may "
                                             "mix old and new values (colfile repair)"}]})
                bad_columns.add(name)
        leftovers = f.cleanup(dry_run=True)
        # what the metadata showed may be another process's change under
        # way: reported as changed, not as damage, and not checked further
        early = _moved(f, before, {e["column"] for e in report})
        for name, why in early.items():
            report[:] = [e for e in report if e["column"] != name]
            bad_columns.discard(name)
            notes.append(_changed_note(f"{os.path.join(f.path, name)}: column {name!r}", why))
        # Every blob, numbered in name order; rank r checks its share.
        work = []
        for name, col in cols:
            if states[name] == "updating" or name in early:
                continue  # being changed: nothing to compare yet
            first = 0
            for i in range(col.nfile):
                work.append((name, col, i, first))
                first += col.blob_rows[i]
        mine = work[c.rank::c.size]
        total = sum(col.blob_rows[i] * row_bytes(col) for _, col, i, _ in mine)
        enabled = want_progress(args.progress) if (not quiet or args.progress) else False
        progress = Progress(total, enabled=enabled and c.rank == 0, verb="checking")
        for entry in report:
            prob = entry["problems"][0]
            lead = "cannot open: " if prob["kind"] == "cannot open" else ""
            say(f"{entry['path']}: column {entry['column']!r}: {lead}{prob['message']}")
        for line in notes:
            say("note: " + line)
        results = []
        changed: dict[str, str] = {}   # column -> why it was not checked
        try:
            for name, col, i, first in mine:
                if name in changed:
                    continue
                try:
                    entry, need = _check_blob(name, col, i, first)
                except colfile.ReplacedError as exc:
                    changed[name] = str(exc)
                    continue
                results.append((entry, need))
                progress.advance(need, label=name)
            if c.size == 1:
                # each column that changed meanwhile: opened and checked anew
                for name in list(changed):
                    results = [r for r in results if r[0]["column"] != name]
                    said = len(notes)
                    why = _recheck(f, name, results, notes, changed.pop(name))
                    if why is not None:
                        changed[name] = why
                    for line in notes[said:]:
                        say("note: " + line)
        finally:
            progress.close()
        if comm is not None and c.size > 1:
            gathered = comm.gather((results, changed), root=0)
            if c.rank != 0:
                ok_here = comm.bcast(None, root=0)
                return 0 if ok_here else 1
            changed = {}
            for _, part in gathered:
                for n, why in part.items():
                    changed.setdefault(n, why)
            results = [r for part, _ in gathered for r in part if r[0]["column"] not in changed]
            order = {(n, i): k for k, (n, _, i, _) in enumerate(work)}
            results.sort(key=lambda r: order[(r[0]["column"], int(r[0]["blob"], 16))])
        # damage found in a column another process changed meanwhile is
        # that change seen half done: reported as changed
        damaged = {r[0]["column"] for r in results if _damage(set(r[0]["status"]))}
        for name, why in _moved(f, before, damaged).items():
            changed.setdefault(name, why)
        results = [r for r in results if r[0]["column"] not in changed]
        for name, why in sorted(changed.items()):
            line = _changed_note(f"{os.path.join(f.path, name)}: column {name!r}", why)
            notes.append(line)
            say("note: " + line)
        for entry, need in results:
            status = set(entry["status"])
            nblobs += 1
            nbytes += need
            if "CRC_UNKNOWN" in status:
                crc_unknown += 1
            where = f"{entry['path']}: column {entry['column']!r} " \
                    f"{fmt_rows(entry['first_row'], entry['rows'])}"
            damage = _damage(status)
            if "SUM_MISMATCH" in status and not damage:
                rewritten += 1
                entry["problems"] = [p for p in entry["problems"] if p["kind"] != "sum mismatch"]
                entry["notes"] = ["the byte sum differs from the header's, the CRC32C matches: "
                                  "rows rewritten in place (bigfile's sum counts them again)"]
            if damage:
                entry["problems"] = [p for p in entry["problems"]
                                     if p["kind"].upper().replace(" ", "_") in damage
                                     or p["kind"] == "cannot verify"]
                report.append(entry)
                bad_columns.add(entry["column"])
                say(f"{where}: " + "; ".join(p["message"] for p in entry["problems"]))
            else:
                if args.json and args.verbose:
                    intact.append(entry)
                if verbose:
                    how = ("crc32c ok" if "CRC_UNKNOWN" not in status
                           else "byte sum ok, no crc32c recorded")
                    if "SUM_MISMATCH" in status:
                        how = "crc32c ok; byte sum counts rows rewritten in place"
                    say(f"{where}: ok ({how})")
        # streams, on rank 0: every committed chunk against its CRC32C
        streams = [stream_check.check(f, n) for n in stream_names] if c.rank == 0 else []
        stream_report = [e for d in streams for e in d["problems"]]
        for e in stream_report:
            at = "" if e["task"] is None else (
                f" task {e['task']} chunk {e['chunk']} (its rows {e['task_rows'][0]}.."
                f"{e['task_rows'][1] - 1}, {e['bytes']} bytes at {e['offset']})")
            say(f"{e['path']}: stream {e['stream']!r}{at}: "
                + "; ".join(p["message"] for p in e["problems"]))
        if verbose:
            for d in streams:
                for e in d["intact"]:
                    say(f"{e['path']}: stream {e['stream']!r} task {e['task']} chunk {e['chunk']}: "
                        "ok (crc32c ok)")
        for line in leftovers:
            say("note: " + line.replace(": would remove", ": left by an interrupted writer "
                                        "(colfile repair removes it)")
                .replace(": would restore it", ": colfile repair restores it"))
        elapsed = time.monotonic() - t0
        ncols = len(names)
        ndamaged = sum(1 for e in report if e["blob"] is not None)
        column_kinds = [e["problems"][0]["kind"] for e in report if e["blob"] is None]
        nbroken = column_kinds.count("cannot open")
        ntorn = column_kinds.count("torn")
        nmeta = column_kinds.count("damaged metadata")
        ok = not report and not stream_report
        if comm is not None and c.size > 1:
            comm.bcast(ok, root=0)
        if args.json and not quiet:
            doc: dict[str, Any] = {
                "path": f.path,
                "ok": ok,
                "columns_checked": ncols,
                "blobs_checked": nblobs,
                "bytes_checked": nbytes,
                "damaged_blobs": ndamaged,
                "unreadable_columns": nbroken,
                "torn_columns": ntorn,
                "damaged_metadata_columns": nmeta,
                "notes": notes,
                "rewritten_blobs": rewritten,
                "damaged_columns": sorted(bad_columns),
                "crc_unknown": crc_unknown,
                "leftovers": leftovers,
                "ranks": c.size,
                "seconds": round(elapsed, 6),
                "problems": report,
                "streams_checked": len(streams),
                "stream_chunks_checked": sum(d["chunks"] for d in streams),
                "stream_bytes_checked": sum(d["bytes"] for d in streams),
                "damaged_stream_chunks": sum(1 for e in stream_report if e["task"] is not None),
                "damaged_streams": sorted({e["stream"] for e in stream_report}),
                "stream_problems": stream_report,
            }
            if args.verbose:
                doc["intact"] = intact
                doc["stream_intact"] = [e for d in streams for e in d["intact"]]
            dump_json(doc, out)
        elif not quiet:
            size = f"{nbytes} bytes" + (f" ({fmt_bytes(nbytes)})" if nbytes >= 1024 else "")
            line = (f"checked {ncols} column{'s' if ncols != 1 else ''}, "
                    f"{nblobs} blob{'s' if nblobs != 1 else ''}, {size} "
                    f"in {elapsed:.2f} s" + (f" on {c.size} ranks" if c.size > 1 else "") + ": ")
            if streams:
                nchunks = sum(d["chunks"] for d in streams)
                line = line[:-2] + (f" and {len(streams)} stream{'s' if len(streams) != 1 else ''}, "
                                    f"{nchunks} chunk{'s' if nchunks != 1 else ''}: ")
            if ok:
                line += "all good"
            else:
                parts = []
                if ndamaged:
                    parts.append(f"{ndamaged} damaged blob{'s' if ndamaged != 1 else ''}")
                if ntorn:
                    parts.append(f"{ntorn} torn column{'s' if ntorn != 1 else ''}")
                if nbroken:
                    parts.append(f"{nbroken} unreadable column{'s' if nbroken != 1 else ''}")
                if nmeta:
                    parts.append(f"{nmeta} column{'s' if nmeta != 1 else ''} with damaged metadata")
                nc = len(bad_columns)
                line += "DAMAGE FOUND: " + ", ".join(parts) + (
                    f" in {nc} column{'s' if nc != 1 else ''}" if nc else "")
                nchunk = sum(1 for e in stream_report if e["task"] is not None)
                nopen = len(stream_report) - nchunk
                ns = len({e["stream"] for e in stream_report})
                if stream_report:
                    line += ("; " if nc else "") + ", ".join(
                        ([f"{nchunk} damaged chunk{'s' if nchunk != 1 else ''}"] if nchunk else [])
                        + ([f"{nopen} unreadable stream table{'s' if nopen != 1 else ''}"] if nopen else [])
                    ) + f" in {ns} stream{'s' if ns != 1 else ''}"
            if crc_unknown:
                line += (f"; {crc_unknown} blob{'s' if crc_unknown != 1 else ''} without a "
                         "recorded CRC32C checked by byte sum only")
            if rewritten:
                line += (f"; {rewritten} blob{'s' if rewritten != 1 else ''} with rows rewritten "
                         "in place (byte sum differs, CRC32C ok)")
            if notes:
                line += f"; {len(notes)} note{'s' if len(notes) != 1 else ''} above"
            if leftovers:
                line += f"; {len(leftovers)} leftover{'s' if len(leftovers) != 1 else ''} of " \
                        "interrupted writers"
            say(line)
    return 0 if ok else 1
