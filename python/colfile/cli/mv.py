"""``colfile mv``: rename a column within a File."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import colfile

from ._common import CliError, NotFoundError, command_parser, open_file

HELP = "rename a column within a File (atomically)"

DESCRIPTION = """\
Rename the column SRC of the File to DST, in one rename of its directory:
readers see the column under one name or the other, never half of it, and
a crash leaves it whole under one of the two.  DST may lie in another
group; groups on its way are made.

Refused, with nothing renamed: a DST that exists (a column, a group or any
file), a SRC that is a group or holds columns below it, names that leave
the File or are not valid column names (../x, /x, spaces), and a column
being written: the writer locks of both names are taken first, so a
process writing SRC, or creating DST, makes the command fail
("another writer ... is changing this column")."""

EPILOG = """\
examples:
  colfile mv snapshot 1/Vel 1/Velocity
  colfile mv snapshot Mass 1/Mass             into the group 1
  colfile mv -v snapshot old new              say what was renamed"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "mv", HELP, DESCRIPTION, EPILOG)
    p.add_argument("path", metavar="PATH", help="the File (a directory)")
    p.add_argument("src", metavar="SRC", help="the column to rename")
    p.add_argument("dst", metavar="DST", help="its new name")
    p.add_argument("-v", "--verbose", action="store_true", help="print the renaming")
    return p


def run(args: Any) -> int:
    with open_file(args.path, "r+") as f:
        try:
            f.move(args.src, args.dst)
        except colfile.InvalidNameError as exc:
            raise CliError(str(exc)) from None
        except colfile.ColumnNotFoundError as exc:
            raise NotFoundError(f"{exc} (nothing renamed)") from None
        if args.verbose:
            print(f"renamed {args.src} -> {args.dst}", file=sys.stdout)
    return 0
