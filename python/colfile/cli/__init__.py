"""The ``colfile`` command line tool.

::

    colfile ls PATH [COLUMN...]        list columns (-l: attributes, checksums)
    colfile cat PATH -c A,B            print rows as aligned text or CSV
    colfile attrs PATH [OBJECT]        show, get, set or delete attributes
    colfile check PATH [COLUMN...]     verify every blob (sizes, sums, CRC32C)
    colfile repair PATH [COLUMN...]    fix what interrupted writers left
    colfile stats PATH COLUMN          per-chunk statistics (count, nan, min, max, sum)
    colfile index PATH [COLUMN...]     compute CRC32C and statistics (mpiexec)
    colfile query PATH 'EXPR'          rows where a condition holds, skipping chunks
    colfile rm PATH COLUMN...          remove columns (-r: groups too)
    colfile mv PATH SRC DST            rename a column (atomically)
    colfile cp SRC DST [COLUMN...]     copy to a new File (--nfile, --dtype)
    colfile sample SRC DST [COLUMN...] every k-th or a random fraction of rows
    colfile join DST SRC...            concatenate Files along rows
    colfile convert SRC DST            HDF5 file <-> colfile File, zarr group -> File
    colfile iosim [PATH]               time parallel create/write/read (mpiexec)
    colfile stream ACTION PATH [NAME]  streams: ls, dump (layout), split (per task)
    colfile defrag PATH NAME           rewrite a stream as an ordinary column

Every subcommand is a module of this package with ``add_parser(sub)`` and
``run(args) -> int``.  Errors are one line ``colfile: error: <message>`` on
stderr; exit status 2 for usage errors and for a File, column, group or
attribute named on the command line that does not exist (in every
subcommand), 1 for other failures (``check``: 1 means damage found, 2 any
other error).  ``COLFILE_DEBUG=1`` adds the traceback.  ``python -m colfile``
runs the tool too.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import traceback
from typing import Any, NoReturn, Sequence

import colfile

from . import (attrs, cat, check, convert, cp, defrag, index, iosim, join, ls, mv, query,
               repair, rm, sample, stats, stream)
from ._common import CliError, UsageError

__all__ = ["main", "build_parser"]

PROG = "colfile"

EPILOG = """\
examples:
  colfile ls snapshot                     tree of all columns
  colfile ls -l snapshot 1/Position       with attributes and blob checksums
  colfile ls snapshot '1/P*'              columns matching a pattern
  colfile cat snapshot -c 1/ID,1/Position --count 10
  colfile cat snapshot -c 1/Mass --csv --header > mass.csv
  colfile attrs snapshot                  attributes of the File
  colfile attrs snapshot 1/. --set BoxSize=1000.0
  colfile check snapshot && echo intact
  colfile stats snapshot 1/Mass           min, max, sum... per chunk and blob
  colfile index snapshot                  CRC32C and statistics for bigfile output
  colfile query snapshot -g 1 '(Mass > 1e12) & (ID < 5000)' -c ID,Mass
  colfile rm snapshot 1/Velocity
  colfile rm -r snapshot 2                the group 2 with everything in it
  colfile mv snapshot 1/Vel 1/Velocity    rename a column
  colfile cp snapshot copy --nfile 8 --dtype f4
  colfile sample snapshot tenth --fraction 0.1 --seed 1
  colfile join all part0 part1
  colfile convert snapshot.h5 snapshot    HDF5 -> colfile (and back)
  mpiexec -n 4 colfile iosim --load medium   parallel I/O throughput
  colfile stream dump run particles       a stream's tasks, files and chunks
  colfile defrag run particles            the stream as a column bigfile reads

Run 'colfile COMMAND --help' for the options of a command; 'python -m
colfile' is the same tool.  COLUMN arguments of ls, check, index and
repair may be fnmatch patterns ('1/P*', quoted for the shell).
Exit status, the same for every command: 0 success; 1 failure (check:
damage found); 2 usage error, or a File, column, group or attribute named
on the command line that does not exist.
Set COLFILE_DEBUG=1 to see tracebacks.  A File is a directory in the
bigfile 0.1.52 format; see docs/format.md.
"""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`UsageError` instead of printing
    the usage and exiting, so errors come out as one line."""

    def error(self, message: str) -> NoReturn:
        hint = f"try '{self.prog} --help'"
        # argparse (before 3.12) also lists optional positionals (COLUMN...)
        # among the missing ones: name only the required ones
        req = "the following arguments are required: "
        if message.startswith(req):
            optional = {a.metavar or a.dest for a in self._actions
                        if not a.option_strings and a.nargs in ("*", "?")}
            names = [n for n in message[len(req):].split(", ") if n not in optional]
            message = req + ", ".join(names) if names else message
        # a mistyped command or option: name the closest one
        m = re.match(r"argument (?:COMMAND|[^:]*): invalid choice: '([^']*)' \(choose from (.*)\)$",
                     message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            close = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
            if close:
                hint = f"did you mean '{close[0]}'? {hint}"
        raise UsageError(message, hint=hint)


def _version_text() -> str:
    try:
        libv = colfile.library_version()
        lib = f"libcolfile {libv}"
    except Exception as exc:  # the library may be missing: still answer
        lib = f"libcolfile not loaded: {exc}"
    return f"{PROG} {colfile.__version__} ({lib})"


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default,
                         nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any,
                 option_string: str | None = None) -> None:
        print(_version_text())
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Inspect and maintain colfile/bigfile Files: directories "
                    "of columns split over blob files.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction,
                        help="print the versions of colfile and libcolfile and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                                parser_class=_Parser)
    for mod in (ls, cat, attrs, check, repair, stats, index, query, rm, mv, cp, sample, join,
                convert, iosim, stream, defrag):
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run)
    return parser


def _report(message: str, hint: str | None = None) -> None:
    line = f"{PROG}: error: {message}"
    if hint:
        line += f" ({hint})"
    try:
        print(line, file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _tolerant_output() -> None:
    """Never fail on a character the terminal's encoding lacks."""
    for stream in (sys.stdout, sys.stderr):
        enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if enc and enc != "utf8" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (AttributeError, ValueError, OSError):
                pass


def _debug() -> bool:
    return os.environ.get("COLFILE_DEBUG", "") not in ("", "0")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split("\n"))


def _close_option(parser: argparse.ArgumentParser, command: str | None,
                  extra: Sequence[str]) -> str | None:
    """The option of ``command`` closest to the first unknown ``--option``."""
    unknown = next((a.split("=")[0] for a in extra if a.startswith("--")), None)
    if unknown is None:
        return None
    target = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            target = action.choices[command]
    options = [o for a in target._actions for o in a.option_strings if o.startswith("--")]
    close = difflib.get_close_matches(unknown, options, n=1, cutoff=0.6)
    return close[0] if close else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the tool with ``argv`` (default ``sys.argv[1:]``); return the exit
    status instead of exiting."""
    if argv is None:
        argv = sys.argv[1:]
    _tolerant_output()
    argv = list(argv)
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # argparse cannot give positionals that follow an option to an
        # nargs="*" positional already matched empty (`ls PATH -l COL`); the
        # commands with such a list name it in _extra_positionals.
        dest = getattr(args, "_extra_positionals", None)
        current = getattr(args, dest, None) if dest else None
        plain = not any(a.startswith("-") and a != "-" for a in extra)
        if extra and dest and plain and isinstance(current, list):
            setattr(args, dest, current + extra)
        elif extra and dest and plain and len(extra) == 1 and current is None:
            setattr(args, dest, extra[0])  # an optional single positional (attrs OBJECT)
        elif extra:
            cmd = f"{PROG} {args.command}" if getattr(args, "command", None) else PROG
            hint = f"try '{cmd} --help'"
            close = _close_option(parser, getattr(args, "command", None), extra)
            if close:
                hint = f"did you mean '{close}'? {hint}"
            raise UsageError(f"unrecognized arguments: {' '.join(extra)}", hint=hint)
    except UsageError as exc:
        _report(str(exc), exc.hint)
        return 2
    except SystemExit as exc:  # --help, --version
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    if not getattr(args, "command", None):
        _report("no command given", "try 'colfile --help'")
        return 2
    # What an unexpected failure means for the exit status: check keeps 1 for
    # "damage found" and reports everything else as 2.
    fail_status = getattr(args, "_fail_status", 1)
    try:
        return int(args._run(args))
    except UsageError as exc:
        if _debug():
            traceback.print_exc()
        _report(str(exc), exc.hint)
        return 2
    except CliError as exc:
        if _debug():
            traceback.print_exc()
        _report(str(exc))
        return max(exc.status, fail_status) if exc.status == 1 else exc.status
    except BrokenPipeError:
        # `colfile cat ... | head`: the reader went away; stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except KeyboardInterrupt:
        _report("interrupted")
        return 130
    except Exception as exc:
        if _debug():
            traceback.print_exc()
        if isinstance(exc, (colfile.Error, OSError, ImportError)):
            _report(_one_line(exc))
            return fail_status
        # A bug in colfile: still one line, but say how to get the details.
        _report(f"{type(exc).__name__}: {_one_line(exc)}",
                None if _debug() else "set COLFILE_DEBUG=1 for a traceback")
        return fail_status
