"""``colfile rm``: remove columns."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import CliError, UsageError, open_file

HELP = "remove columns"

DESCRIPTION = """\
Remove columns from a File: each column's header, attribute files, colfile
extension files and blobs, then its directory if nothing else is left in it
(columns below it and foreign files are kept).  Every name is checked before
anything is removed: unless -f is given, a name that is not a column stops
the command with nothing removed."""

EPILOG = """\
examples:
  colfile rm snapshot 1/Velocity
  colfile rm -f snapshot tmp/a tmp/b        no error for missing columns
  colfile rm -v snapshot 1/Mass             say what was removed"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("rm", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", metavar="PATH", help="the File (a directory)")
    p.add_argument("names", metavar="COLUMN", nargs="*", help="columns to remove")
    p.add_argument("-f", "--force", action="store_true",
                   help="ignore columns that do not exist")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each column removed")
    p.set_defaults(_extra_positionals="names")
    return p


def run(args: Any) -> int:
    import colfile

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
                if args.force:
                    continue
                if f.get(name + "/") is not None:
                    raise CliError(f"{f.path}: {raw!r} is a group, not a column; "
                                   "remove the columns inside it") from None
                raise CliError(f"{f.path}: no column {raw!r} (nothing removed)") from None
            if col.kind == "attrs-only":
                raise CliError(f"{f.path}: {raw!r} names attributes, not a column")
            col.close()
            if name not in todo:
                todo.append(name)
        for name in todo:
            del f[name]
            if args.verbose:
                print(f"removed {name}", file=sys.stdout)
    return 0
