"""``colfile stream``: look inside task-local streams (``dump``) and take
them apart (``split``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import colfile
import colfile.stream as cs
import colfile.stream_tools as st

from ._common import CliError, NotFoundError, UsageError, dump_json, fmt_bytes, open_file, table

HELP = "show a stream's layout (dump) or write its tasks to plain files (split)"

DESCRIPTION = """\
A stream is a column that many tasks (MPI ranks) append to with no
communication, into a few physical files, in chunks aligned to the file
system's block size (docs/streams.md).  'colfile ls' does not list them.

  colfile stream ls PATH                  the streams of a File
  colfile stream dump PATH NAME           its layout: tasks, files, chunks,
                                          bytes used, unused and allocated
  colfile stream split PATH NAME OUTDIR   each task's rows as a plain file
                                          OUTDIR/<leaf>.<task> (--task N...)

'colfile defrag PATH NAME' rewrites a stream as an ordinary column."""

EPILOG = """\
examples:
  colfile stream ls run
  colfile stream dump run particles
  colfile stream dump run particles --chunks --json
  colfile stream split run particles parts --task 0 --task 7"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("stream", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", metavar="ACTION", choices=("ls", "dump", "split"), help="ls, dump or split")
    p.add_argument("path", metavar="PATH", help="the File (a directory)")
    p.add_argument("name", metavar="NAME", nargs="?", help="the stream (dump, split)")
    p.add_argument("outdir", metavar="OUTDIR", nargs="?", help="split: where the files go")
    p.add_argument("--task", type=int, action="append", help="split: only this task (repeatable)")
    p.add_argument("--chunks", action="store_true", help="dump: every chunk of every task")
    p.add_argument("--json", action="store_true", help="dump: as JSON")
    return p


def _open(f: Any, name: str) -> None:
    if name not in cs.list_streams(f):
        raise NotFoundError(f"{f.path}: no stream {name!r}")


def run(args: Any) -> int:
    with open_file(args.path, "r") as f:
        if args.action == "ls":
            for name in cs.list_streams(f):
                print(name)
            return 0
        if not args.name:
            raise UsageError(f"stream {args.action} needs a stream NAME", hint="try 'colfile stream --help'")
        _open(f, args.name)
        if args.action == "split":
            if not args.outdir:
                raise UsageError("stream split needs an OUTDIR", hint="try 'colfile stream --help'")
            try:
                for path in st.split(f, args.name, args.outdir, args.task):
                    print(path)
            except colfile.InvalidArgumentError as exc:
                raise CliError(str(exc)) from None
            return 0
        d = st.dump(f, args.name)
        if not args.chunks:
            for t in d["per_task"]:
                t.pop("chunks")
        if args.json:
            dump_json(d, sys.stdout)
            return 0
        print(f"{d['name']}: {d['dtype']} x{d['nmemb']}, {d['rows']} rows, {d['tasks']} tasks in {d['files']} "
              f"files, chunks of {fmt_bytes(d['chunk'])} (aligned to {fmt_bytes(d['align'])}), "
              f"commit {d['commit']}")
        print(f"bytes: {d['bytes']} used, {d['unused']} unused in chunks, {d['allocated']} allocated on disk")
        rows = [["file", "tasks", "bytes", "allocated", "used"]]
        for x in d["per_file"]:
            rows.append([f"{x['file']:06X}", f"{x['tasks'][0]}..{x['tasks'][1]}",
                         "missing" if x["bytes"] is None else str(x["bytes"]), str(x["allocated"]), str(x["used"])])
        print("\n".join(table(rows, right=[False, False, True, True, True])))
        rows = [["task", "rows", "bytes", "chunks", "unused"]]
        for t in d["per_task"]:
            rows.append([str(t["task"]), str(t["rows"]), str(t["bytes"]),
                         str(-(-t["bytes"] // d["chunk"])), str(t["unused"])])
        print("\n".join(table(rows, right=[True] * 5)))
        if args.chunks:
            rows = [["task", "chunk", "file", "offset", "bytes", "crc32c"]]
            for t in d["per_task"]:
                for k, c in enumerate(t["chunks"]):
                    rows.append([str(t["task"]), str(k), f"{c['file']:06X}", str(c["offset"]), str(c["bytes"]),
                                 f"{c['crc32c']:08x}"])
            print("\n".join(table(rows, right=[True, True, False, True, True, False])))
    return 0
