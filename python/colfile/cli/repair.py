"""``colfile repair``: make a File consistent again after interrupted
writers: remove their leftovers, recompute checksums and statistics, clear
torn marks, and say what cannot be fixed."""

from __future__ import annotations

import argparse
import os
import re
import warnings
from typing import Any

import colfile
from colfile import chunkindex

from ._common import add_file_and_columns, command_parser, open_file, select_columns

HELP = "fix what interrupted writers left: leftovers, stale sums, torn marks"

DESCRIPTION = """\
Repair the File at PATH, or the COLUMNs and groups named:

  leftovers       staging directories of creates that never committed,
                  old versions moved aside by a commit (restored when their
                  replacement never arrived), what an interrupted removal
                  moved to a hidden .colfile-trash.* name, temporary
                  metadata files and lock files of writers that are gone:
                  removed
  headerless      blob files (and other colfile/bigfile files) in a
                  directory whose header is gone, as older removals left
                  when killed: removed; other files there stay
  torn columns    an in-place update was interrupted: byte sums, CRC32C and
                  statistics are recomputed from the rows as they are, and
                  the mark is cleared.  The rows may still mix old and new
                  values: no check can tell them apart, so rewrite them if
                  that matters
  stale metadata  byte sums, CRC32C or statistics that disagree with the data
                  (e.g. after a crash during an update by another tool), or
                  that are damaged (colfile-v1 failing its own checksum,
                  inconsistent statistics, a chunk index colfile-index-v1
                  failing its checks): recomputed
  long blobs      bytes past a blob's rows (an interrupted append): cut off
  stray blobs     blob files numbered beyond NFILE: removed

A blob that is missing or shorter than its rows cannot be repaired (its
rows are lost); it is reported and the exit status is 1.  Anything a live
writer still holds is left alone.  Locks may be node-local (Lustre
localflock, BeeGFS, NFS nolock), so a staging directory is removed only
when its owner record proves its writer gone (this host, process ended);
one written from another host is reported as left (exit status 1) until
--force, which removes it: use it only when no job writes the File.
Where no lock can show a live writer at all (--no-locking, or a mount
whose locks are node-local), columns are not changed and old versions,
trash and temporaries not removed without --force either: they are
reported as left."""

EPILOG = """\
exit status:
  0  nothing to repair, or everything found was repaired
  1  something could not be repaired (lost rows, a column in use, a
     staging directory whose writer cannot be proved gone)
  2  usage error, no such File or column, or the repair itself failed

examples:
  colfile repair snapshot
  colfile repair --dry-run snapshot            only say what would be done
  colfile repair snapshot 1/Position
  colfile repair --force snapshot              also another host's staging"""

_FIXABLE = {"LONG", "SUM_MISMATCH", "CRC_MISMATCH", "STATS_MISMATCH", "STATS_DAMAGED"}
_LOST = {"MISSING", "SHORT"}
_BLOB_NAME = re.compile(r"^[0-9A-F]{6,16}$")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "repair", HELP, DESCRIPTION, EPILOG)
    add_file_and_columns(p, "repair")
    p.add_argument("-n", "--dry-run", action="store_true",
                   help="change nothing; say what would be done")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    p.add_argument("--force", action="store_true",
                   help="also remove staging directories whose writer cannot be proved gone "
                        "(written from another host), and repair columns where no lock can show a "
                        "writer (--no-locking, node-local locks); only when no writer of the File "
                        "runs anywhere")
    p.add_argument("--no-locking", action="store_true",
                   help="take and probe no locks (file systems without locks, such as Lustre "
                        "mounted noflock); only what owner records prove gone is removed and no "
                        "column is changed, unless --force")
    p.set_defaults(_extra_positionals="columns", _fail_status=2)
    return p


def _stray_blobs(col: Any) -> list[str]:
    try:
        names = os.listdir(col.path)
    except OSError:
        return []
    return sorted(n for n in names if _BLOB_NAME.match(n) and int(n, 16) >= col.nfile)


def run(args: Any) -> int:
    def say(line: str) -> None:
        if not args.quiet:
            print(line, flush=True)

    status = 0
    mode = "r" if args.dry_run else "r+"
    locking = False if args.no_locking else True
    with open_file(args.path, mode, torn="warn", verify=False, locking=locking) as f, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", colfile.TornWarning)
        # Where no lock can show a live writer (locking off, or locks that
        # reach this node only), changing a column could undo the work of
        # a writer elsewhere: only --force does.
        unproved = ("with locking off no lock shows whether a writer is at work on it" if args.no_locking
                    else "its locks are node-local, so a writer on another node does not show"
                    if f.lock_scope == "node" else "")
        for line in f.cleanup(dry_run=args.dry_run, force=args.force):
            say(line)
            if line.endswith(": left") or ": left (" in line:
                status = 1  # a writer that could not be proved gone
        names = select_columns(f, args.columns)
        for name in names:
            try:
                col = f[name]
            except colfile.Error as exc:
                say(f"{name}: cannot open, cannot repair: {exc}")
                status = 1
                continue
            if col.nmemb == 0 or col.dtype is None:
                continue
            state = col.ext_state
            if state == "updating":
                say(f"{col.path}: update in progress (another process holds it): left alone")
                continue
            found: set[str] = set()
            lost = []
            for i in range(col.nfile):
                st = col.verify_blob(i)
                found |= st & _FIXABLE
                if st & _LOST:
                    lost.append(f"blob {i:06X} is {'missing' if 'MISSING' in st else 'short'}")
            stray = _stray_blobs(col)
            torn = col.torn
            if lost:
                say(f"{col.path}: cannot repair: {', '.join(lost)}; those rows are lost "
                    "(rewrite the column or remove it)")
                status = 1
                continue
            why = sorted(s.lower().replace("_", " ") for s in found)
            if state == "damaged" or chunkindex.problem(col):
                why.insert(0, "damaged metadata")
            if torn:
                why.insert(0, "torn")
            if stray:
                why.append(f"{len(stray)} stray blob{'s' if len(stray) != 1 else ''}")
            if not why:
                continue
            if args.dry_run:
                say(f"{col.path}: would repair: {', '.join(why)}")
                continue
            if unproved and not args.force:
                say(f"{col.path}: needs repair ({', '.join(why)}), but {unproved}: left "
                    "(repair --force once no job writes the File)")
                status = 1
                continue
            try:
                fixed = col.repair()
            except colfile.Error as exc:
                say(f"{col.path}: cannot repair: {exc}")
                status = 1
                continue
            say(f"{col.path}: repaired ({', '.join(why)}): "
                f"{', '.join(sorted(fixed)) or 'metadata rewritten'}"
                + ("; the rows may mix old and new values of the interrupted update"
                   if torn else ""))
    return status
