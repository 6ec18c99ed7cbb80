"""Shared pieces of the ``colfile`` command line tool.

Error reporting (:class:`CliError`, :class:`UsageError`), opening Files and
selecting columns, value formatting (text and JSON) and the progress bar.
Standard library and numpy only.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import shutil
import sys
import time
from typing import Any, Iterable, Sequence, TextIO

import numpy as np

import colfile
import colfile.tools

__all__ = [
    "CliError",
    "UsageError",
    "NotFoundError",
    "NOT_FOUND",
    "open_file",
    "select_columns",
    "group_names",
    "blob_path",
    "blob_id",
    "fmt_shape",
    "fmt_bytes",
    "fmt_rows",
    "fmt_value",
    "fmt_scalar",
    "short",
    "safe_text",
    "safe_bytes",
    "jsonable",
    "dump_json",
    "table",
    "Progress",
    "add_tool_output",
    "command_parser",
    "add_src_dst_columns",
    "tool_columns",
    "run_tool",
]


# ---------------------------------------------------------------------------
# errors


class CliError(Exception):
    """A failure reported as ``colfile: error: <message>``.

    ``status`` is the exit status (1 unless told otherwise).
    """

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class UsageError(CliError):
    """Bad command line: exit status 2."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message, 2)
        self.hint = hint


#: the exit status of every subcommand when a File, column, group or
#: attribute named on the command line does not exist (as for usage errors,
#: and as `check` must keep 1 for "damage found")
NOT_FOUND = 2


class NotFoundError(CliError):
    """A File, column, group or attribute named on the command line does not
    exist (or is not what the command needs: a group where a column is
    wanted): exit status :data:`NOT_FOUND`."""

    def __init__(self, message: str) -> None:
        super().__init__(message, NOT_FOUND)


# ---------------------------------------------------------------------------
# Files and columns


def command_parser(sub: Any, name: str, help: str, description: str, epilog: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``name`` under ``sub``, its description
    and epilog printed as written."""
    return sub.add_parser(name, help=help, description=description, epilog=epilog,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def add_file_and_columns(p: Any, verb: str) -> None:
    """The arguments of a command that works on a File's columns: PATH and
    any number of COLUMNs (default: all); ``verb`` says what it does to
    them ('check')."""
    p.add_argument("path", metavar="PATH", help="the File (a directory)")
    p.add_argument("columns", metavar="COLUMN", nargs="*",
                   help=f"columns, groups or patterns ('1/P*') to {verb} (default: all)")


def add_src_dst_columns(p: Any, verb: str) -> None:
    """The arguments of a command that writes a new File from an old one:
    SRC, DST and any number of COLUMNs (default: all); ``verb`` says what
    it does to them ('copy')."""
    p.add_argument("src", metavar="SRC", help=f"the File to {verb}")
    p.add_argument("dst", metavar="DST", help="the new File")
    p.add_argument("columns", metavar="COLUMN", nargs="*",
                   help=f"columns, groups or patterns to {verb} (default: all)")
    p.set_defaults(_extra_positionals="columns")


def add_progress_and_mpi(p: Any) -> None:
    """--progress / --no-progress (the bar on stderr) and --mpi, of the
    commands that go through every blob of a File."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_const", const=True,
                   default=None, help="draw the progress bar even if stderr is not a terminal")
    g.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                   help="never draw the progress bar")
    p.add_argument("--mpi", action="store_true",
                   help="use MPI (mpi4py) even without a launcher's environment")


def open_file(path: str, mode: str = "r", **options: Any) -> Any:
    """Open the File at ``path`` (``options``: colfile.File's keywords); a
    clear error if there is none."""
    try:
        return colfile.File(path, mode, **options)
    except colfile.NoSuchFileError as exc:
        raise NotFoundError(_one_line(exc)) from None
    except colfile.ReadOnlyError as exc:
        raise CliError(f"{exc} (cannot modify a read-only File)") from None
    except PermissionError as exc:
        raise CliError(f"{path}: permission denied: {exc}") from None


def _one_line(exc: BaseException) -> str:
    return " ".join((str(exc).strip() or type(exc).__name__).split("\n"))


def is_glob(name: str) -> bool:
    """True if ``name`` holds a wildcard of :mod:`fnmatch` (``* ? [``)."""
    return any(ch in name for ch in "*?[")


def _is_group(f: Any, name: str) -> bool:
    """True if ``name`` is a group of ``f`` (asked through the API, so that
    ``..``, absolute names and symbolic links are refused as everywhere)."""
    try:
        return f.get(name + "/") is not None
    except colfile.InvalidNameError as exc:
        raise CliError(f"{f.path}: bad group name {name!r}: {exc}") from None


def catalog_note(f: Any) -> str | None:
    """The line ``ls -l`` and ``check`` print when a listing of ``f`` found
    its catalog stale (:attr:`colfile.File.catalog_stale`), else None."""
    if not f.catalog_stale:
        return None
    return (f"{f.path}: the catalog (.colfile-catalog/) is stale: a writer that does not "
            "record the File's generation (bigfile, a copy, an older colfile) changed its "
            "columns. This listing was read from the directories; on Lustre, GPFS, BeeGFS "
            f"or NFS a later one may miss the change: run `colfile index {f.path}`")


def select_columns(f: Any, names: Sequence[str], listing: list[str] | None = None,
                   ) -> list[str]:
    """Resolve command line names to column names.

    A name is a column (listed, or hidden below a header-only block but
    openable by name), or a group (``grp`` or ``grp/``), standing for every
    listed column below it; ``.`` stands for the whole File.  A name that is
    not a column and holds ``*``, ``?`` or ``[`` is a pattern
    (:func:`fnmatch.fnmatchcase`: ``*`` also matches ``/``) standing for the
    listed columns it matches and the groups it matches (everything below
    them).  No names: every listed column.  Order is kept, duplicates
    dropped.  :class:`NotFoundError` for a name that is none of these, or a
    pattern that matches nothing.
    """
    if listing is None:
        listing = f.columns
    if not names:
        if not listing and os.path.isfile(os.path.join(f.path, "header")):
            parent, base = os.path.split(os.path.normpath(f.path))
            raise NotFoundError(f"{f.path} is a column, not a File; name the File and "
                                f"the column: {parent or '.'} {base}")
        return list(listing)
    listed = set(listing)
    out: list[str] = []
    seen: set[str] = set()

    def add(n: str) -> None:
        if n not in seen:
            seen.add(n)
            out.append(n)

    for raw in names:
        name = raw.rstrip("/") if raw not in ("/", ".") else "."
        if name in (".", ""):
            for n in listing:
                add(n)
            continue
        if name in listed and not raw.endswith("/"):
            add(name)
            continue
        if is_glob(name):
            hits = [n for n in listing if fnmatch.fnmatchcase(n, name)
                    or any(fnmatch.fnmatchcase(g, name) for g in group_names([n]))]
            if not hits:
                raise NotFoundError(f"{f.path}: no column or group matches {raw!r}")
            for n in hits:
                add(n)
            continue
        below = [n for n in listing if n.startswith(name + "/")]
        if below:
            for n in below:
                add(n)
            continue
        if not raw.endswith("/"):
            try:
                f[name]
            except colfile.InvalidNameError as exc:
                raise CliError(f"{f.path}: bad column name {raw!r}: {exc}") from None
            except KeyError:
                pass
            else:
                add(name)
                continue
        if _is_group(f, name):
            continue  # an existing group without columns: nothing to add
        raise NotFoundError(f"{f.path}: no column or group {raw!r}")
    return out


def group_names(columns: Iterable[str]) -> list[str]:
    """The group (directory) names above the given column names, sorted."""
    groups: set[str] = set()
    for c in columns:
        parts = c.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            groups.add("/".join(parts[:i]))
    return sorted(groups, key=lambda s: s.encode("utf-8", "surrogateescape"))


def blob_id(i: int) -> str:
    """The file name of blob ``i``: ``%06X``."""
    return f"{i:06X}"


def blob_path(col: Any, i: int) -> str:
    return os.path.join(col.path, blob_id(i))


def row_bytes(col: Any) -> int:
    return int(col.nmemb) * int(col.itemsize)


def column_nbytes(col: Any) -> int:
    """Data bytes the column's rows need (what the blobs should hold)."""
    if col.kind != "data":
        return 0
    return int(col.size) * row_bytes(col)


# ---------------------------------------------------------------------------
# formatting


def fmt_shape(shape: Sequence[int]) -> str:
    """``(1000,)`` or ``(1000, 3)``."""
    return str(tuple(int(s) for s in shape))


def fmt_bytes(n: float) -> str:
    """Human size with binary prefixes: ``512 B``, ``1.5 KiB``, ``3.0 GiB``."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def fmt_rows(first: int, count: int) -> str:
    """``row 5``, ``rows 9-17``, ``no rows``."""
    if count <= 0:
        return "no rows"
    if count == 1:
        return f"row {first}"
    return f"rows {first}-{first + count - 1}"


def _fmt_float(x: Any) -> str:
    if isinstance(x, float):  # also np.float64, a float subclass
        s = repr(float(x))
    else:
        s = str(x)  # numpy scalars print their shortest round-trip form
    if s in ("nan", "-nan"):
        return "nan"
    return s


def _fmt_complex(x: Any) -> str:
    re, im = x.real, x.imag
    a, b = _fmt_float(re), _fmt_float(im)
    if not b.startswith("-"):
        b = "+" + b
    return f"{a}{b}j"


def safe_text(s: str) -> str:
    """``s`` with backslashes, control and non-printable characters escaped
    (and undecodable bytes, carried as surrogates, shown as ``\\xNN``)."""
    if s.isprintable() and "\\" not in s:
        return s
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif 0xDC80 <= o <= 0xDCFF:  # surrogateescape'd byte
            out.append(f"\\x{o - 0xDC00:02x}")
        elif ch.isprintable():
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x100:
            out.append(f"\\x{o:02x}")
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    return "".join(out)


def safe_bytes(b: bytes) -> str:
    """A fixed-width byte string for display: NUL padding stripped, UTF-8
    shown as text, everything unprintable escaped."""
    return safe_text(bytes(b).rstrip(b"\0").decode("utf-8", "surrogateescape"))


def fmt_scalar(x: Any) -> str:
    """One value as text: ints exact, floats shortest round-trip (``nan``,
    ``inf``), complex ``1.5-2j``, bools ``true``/``false``, strings quoted."""
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        return _fmt_float(x)
    if isinstance(x, (complex, np.complexfloating)):
        return _fmt_complex(x)
    if isinstance(x, str):
        return json.dumps(x, ensure_ascii=False)
    if isinstance(x, (bytes, np.bytes_)):
        return "b" + json.dumps(safe_bytes(x), ensure_ascii=False)
    if isinstance(x, np.void):  # an attribute kind kept as opaque bytes
        return opaque_hex(x)
    return str(x)


def opaque_hex(x: np.void) -> str:
    """Opaque bytes (an attribute of a kind colfile does not interpret) as
    ``0x`` and their hex digits in the stored order."""
    return "0x" + bytes(x.tobytes()).hex()


def fmt_value(v: Any) -> str:
    """An attribute value in JSON-ish text (what ``attrs --set`` accepts):
    ``3``, ``0.5``, ``"text"``, ``[1, 2, 3]``, ``["a", "b"]``."""
    if isinstance(v, np.ndarray):
        return "[" + ", ".join(fmt_scalar(x) for x in v.reshape(-1)) + "]"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return fmt_scalar(v)


def short(s: str, width: int = 60) -> str:
    """``s`` cut to ``width`` characters, ending in ``...`` if cut."""
    if len(s) <= width:
        return s
    return s[: max(width - 3, 1)] + "..."


def _json_float(x: float) -> Any:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def jsonable(v: Any) -> Any:
    """A JSON-encodable form of a value read through colfile.

    numpy arrays become lists, non-finite floats the strings ``"nan"``,
    ``"inf"``, ``"-inf"`` (standard JSON has no such numbers), complex values
    ``[real, imag]``, bytes a string with escapes, opaque attribute bytes
    (``np.void``) ``"0x"`` and hex digits.
    """
    if isinstance(v, np.ndarray):
        return [jsonable(x) for x in v.reshape(-1)]
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return _json_float(float(v))
    if isinstance(v, (complex, np.complexfloating)):
        return [_json_float(float(v.real)), _json_float(float(v.imag))]
    if isinstance(v, (bytes, np.bytes_)):
        return safe_bytes(v)
    if isinstance(v, np.void):
        return opaque_hex(v)
    return v


def dump_json(obj: Any, out: TextIO) -> None:
    json.dump(obj, out, indent=2, ensure_ascii=False, allow_nan=False)
    out.write("\n")


def column_headers(names: Sequence[str], cols: Sequence[Any]) -> tuple[list[str], list[bool]]:
    """The output columns of ``cols`` printed side by side: a name per
    column, ``NAME[j]`` per element of a vector column; and for each
    whether it is right-aligned (all but byte strings)."""
    headers: list[str] = []
    right: list[bool] = []
    for name, col in zip(names, cols):
        if col.nmemb <= 1 and col.ndim == 1:
            headers.append(name)
            right.append(col.dtype.kind != "S")
        else:
            for j in range(col.nmemb):
                headers.append(f"{name}[{j}]")
                right.append(col.dtype.kind != "S")
    return headers, right


def column_info(name: str, col: Any) -> dict[str, Any]:
    """How ``--json`` output describes a column whose rows it prints."""
    return {"name": name, "dtype": col.dtype.str, "nmemb": int(col.nmemb),
            "shape": [int(s) for s in col.shape]}


def json_row_values(arr: np.ndarray) -> list[Any]:
    """The rows of ``arr`` as JSON values (a list per row of a vector
    column), as :func:`jsonable` makes them."""
    return [jsonable(v) for v in arr.tolist()]


class JsonRows:
    """Writes ``head`` (a dict) as a JSON object with one more member,
    ``"rows"``: a list of objects given piece by piece, one per line, so
    that no more than a piece is held in memory."""

    def __init__(self, head: dict[str, Any], out: TextIO) -> None:
        text = json.dumps(jsonable(head), indent=2, ensure_ascii=False, allow_nan=False)
        self.out = out
        self.first = True
        out.write(text[:-2] + ',\n  "rows": [')  # text ends with "\n}"

    def add(self, names: Sequence[str], columns: Sequence[list[Any]]) -> None:
        """Rows given as one list of values per column, ``names[i]`` the
        key of ``columns[i]``."""
        for values in zip(*columns):
            self.out.write(("\n    " if self.first else ",\n    ")
                           + json.dumps(dict(zip(names, values)), ensure_ascii=False,
                                        allow_nan=False))
            self.first = False

    def close(self) -> None:
        self.out.write("]\n}\n" if self.first else "\n  ]\n}\n")


def table(rows: Sequence[Sequence[str]], right: Sequence[bool] = (), sep: str = "  ",
          cap: int = 40) -> list[str]:
    """Align rows of cells; ``right[i]`` right-aligns column ``i``.  The last
    cell of a row is not padded; cells longer than ``cap`` do not widen
    their column (they overflow their row only)."""
    if not rows:
        return []
    ncol = max(len(r) for r in rows)
    widths = [0] * ncol
    for r in rows:
        for i, c in enumerate(r):
            if len(c) <= cap:
                widths[i] = max(widths[i], len(c))
    lines = []
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            last = i == len(r) - 1
            if i < len(right) and right[i]:
                cells.append(c.rjust(widths[i]))
            elif last:
                cells.append(c)
            else:
                cells.append(c.ljust(widths[i]))
        lines.append(sep.join(cells).rstrip())
    return lines


# ---------------------------------------------------------------------------
# progress


class Progress:
    """A one-line progress bar on ``stream`` (stderr), redrawn at most
    ``rate`` times a second with ``\\r``.  Disabled: every call is a no-op.

    >>> import io
    >>> buf = io.StringIO()
    >>> p = Progress(2048, enabled=True, stream=buf, verb="checked")
    >>> p.advance(1024); p.advance(1024); p.close()
    >>> "100%" in buf.getvalue() and "2.0 KiB / 2.0 KiB" in buf.getvalue()
    True
    """

    def __init__(self, total: int, *, enabled: bool, stream: TextIO | None = None,
                 verb: str = "", rate: float = 10.0) -> None:
        self.total = max(int(total), 0)
        self.done = 0
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.verb = verb
        self.interval = 1.0 / rate
        self.start = time.monotonic()
        self._last = float("-inf")
        self._width = 0
        self._label = ""
        self._closed = False

    def advance(self, nbytes: int, label: str | None = None) -> None:
        """Count ``nbytes`` more as done (one call per blob)."""
        self.done += int(nbytes)
        if label is not None:
            self._label = label
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= self.interval or self.done >= self.total:
            self._last = now
            self._draw(now)

    def _line(self, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        frac = 1.0 if self.total == 0 else min(self.done / self.total, 1.0)
        bar_w = 20
        fill = int(frac * bar_w)
        bar = "#" * fill + "." * (bar_w - fill)
        rate = self.done / elapsed
        verb = f"{self.verb} " if self.verb else ""
        line = (f"{verb}[{bar}] {frac * 100:3.0f}%  {fmt_bytes(self.done)} / "
                f"{fmt_bytes(self.total)}  {fmt_bytes(rate)}/s")
        if self._label:
            line += f"  {self._label}"
        cols = shutil.get_terminal_size((80, 24)).columns
        return short(line, max(cols - 1, 20))

    def _draw(self, now: float) -> None:
        line = self._line(now)
        pad = " " * max(self._width - len(line), 0)
        self._width = len(line)
        try:
            self.stream.write("\r" + line + pad)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False

    def clear(self) -> None:
        """Blank the bar (before other output on the same terminal); the next
        :meth:`advance` draws it again."""
        if not self.enabled or not self._width or self._closed:
            return
        try:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False
        self._width = 0
        self._last = float("-inf")

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self._closed:
            return
        self._closed = True
        if not self.enabled:
            return
        self._label = ""
        self._draw(time.monotonic())
        try:
            self.stream.write("\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass
        self._width = 0


def want_progress(flag: bool | None, stream: TextIO | None = None) -> bool:
    """``--progress`` forces it on, ``--no-progress`` off; otherwise only when
    the stream (stderr) is a terminal."""
    if flag is not None:
        return flag
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# ---------------------------------------------------------------------------
# the File-writing tools (cp, sample, join)


def positive_int(text: str) -> int:
    """argparse type of an option that counts something (--nfile, --every):
    a whole number >= 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"not a whole number >= 1: {text!r}")
    return n


def add_tool_output(p: Any) -> None:
    """Options shared by the commands that write a new File."""
    p.add_argument("--overwrite", action="store_true",
                   help="replace DST if it exists (only once the new File is verified)")
    p.add_argument("--chunk-mb", type=float, default=32.0, metavar="MB",
                   help="bound on the rows held in memory at once (default 32 MiB)")


def tool_columns(src: str, names: Sequence[str]) -> list[str] | None:
    """The columns of the File ``src`` that ``names`` stand for (as
    :func:`select_columns` resolves them); None for all."""
    if not names:
        with open_file(src) as f:
            return None
    with open_file(src) as f:
        return select_columns(f, names)


def run_tool(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a :mod:`colfile.tools` function, its errors as CLI errors: a
    missing source exits 2, an existing destination and every other failure 1."""
    from_tools = colfile.tools.ToolError
    try:
        return fn(*args, **kwargs)
    except FileNotFoundError as exc:
        raise NotFoundError(_one_line(exc)) from None
    except FileExistsError as exc:
        raise CliError(_one_line(exc)) from None
    except from_tools as exc:
        raise CliError(_one_line(exc)) from None
