"""``colfile rm``: remove columns."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import colfile

from ._common import CliError, NotFoundError, UsageError, command_parser, open_file

HELP = "remove columns (and, with -r, groups)"

DESCRIPTION = """\
Remove columns from a File: each column's header, attribute files, colfile
extension files and blobs, then its directory if nothing else is left in it
(columns below it and foreign files are kept).  With -r a name may also be
a group, removed with everything below it (refused if it holds files that
are not colfile/bigfile files).

Every name is checked before anything is removed: unless -f is given, a
name that is not a column (or, with -r, a group) stops the command with
nothing removed.

Each removal first takes the writer lock of the column (of every column
below a group): while another process or handle writes one of them, the
command fails ("busy") and removes nothing of that name.  What is removed
then disappears from the File in one rename, to a hidden .colfile-trash.*
name, before it is deleted: a crash at any moment leaves each column whole
or absent, and 'colfile repair' deletes the hidden leftover."""

EPILOG = """\
examples:
  colfile rm snapshot 1/Velocity
  colfile rm -r snapshot 1                  the group 1 and everything in it
  colfile rm -f snapshot tmp/a tmp/b        no error for missing columns
  colfile rm -v snapshot 1/Mass             say what was removed"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "rm", HELP, DESCRIPTION, EPILOG)
    p.add_argument("path", metavar="PATH", help="the File (a directory)")
    p.add_argument("names", metavar="COLUMN", nargs="*", help="columns to remove")
    p.add_argument("-r", "--recursive", action="store_true",
                   help="also remove groups, with everything below them")
    p.add_argument("-f", "--force", action="store_true",
                   help="ignore columns that do not exist")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each column removed")
    p.set_defaults(_extra_positionals="names")
    return p


def run(args: Any) -> int:
    if not args.names:
        raise UsageError("no columns given", hint="try 'colfile rm --help'")
    with open_file(args.path, "r+") as f:
        todo: list[str] = []
        for raw in args.names:
            name = raw.rstrip("/") if raw.endswith("/") else raw
            try:
                col = f[name]
            except colfile.InvalidNameError as exc:
                raise CliError(f"bad column name {raw!r}: {exc}") from None
            except KeyError:
                is_group = f.get(name + "/") is not None
                if is_group and args.recursive:
                    if name + "/" not in todo:
                        todo.append(name + "/")
                    continue
                if args.force:
                    continue
                if is_group:
                    raise NotFoundError(f"{f.path}: {raw!r} is a group, not a column; "
                                   "remove it with everything inside it with -r") from None
                raise NotFoundError(f"{f.path}: no column {raw!r} (nothing removed)") from None
            if col.kind == "attrs-only":
                raise CliError(f"{f.path}: {raw!r} names attributes, not a column")
            col.close()
            key = name + "/" if args.recursive else name
            if key not in todo:
                todo.append(key)
        for key in todo:
            del f[key]
            if args.verbose:
                print(f"removed {key.rstrip('/')}", file=sys.stdout)
    return 0
