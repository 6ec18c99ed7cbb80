"""``colfile ls``: the columns of a File as a tree."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

import colfile

from ._common import (CliError, UsageError, add_file_and_columns, blob_id, blob_path, catalog_note,
                      column_nbytes, command_parser, dump_json, fmt_bytes, fmt_rows, fmt_shape,
                      fmt_value, group_names, jsonable, open_file, safe_text, select_columns, short,
                      table)

HELP = "list columns and groups (dtype, shape, nfile, bytes)"

DESCRIPTION = """\
List the columns of a File as a tree of groups, each column with its dtype,
shape (rows, or rows and elements per row), number of blob files and data
size in bytes.  Columns are found as bigfile finds them: every directory
holding a 'header' is a column and is not looked into; names starting with
'.' are skipped.  COLUMN arguments restrict the listing to those columns or
groups (a group stands for everything below it), or to the columns and
groups matching a pattern: * ? and [...] as in Python's fnmatch, where *
also matches '/' (quote patterns for the shell: '1/P*')."""

EPILOG = """\
examples:
  colfile ls snapshot
  colfile ls -l snapshot 1/Position        attributes and per-blob checksums
  colfile ls --depth 1 snapshot            top level only, groups summarised
  colfile ls snapshot '1/P*' '*/Mass'      columns matching patterns
  colfile ls --json snapshot | jq '.columns[].name'

With -l each column is followed by its attributes (name, dtype[nmemb],
value, shortened) and one line per blob: the rows it holds, the bigfile
byte sum and its fold as recorded in the header, and the CRC32C recorded
by colfile ('-' when unknown, e.g. for Files written by bigfile).
When the File's columns were changed by a writer that does not keep its
catalog current (bigfile, cp -r, changes by hand), a 'note:' line says so
(with -l on stdout, else on stderr; JSON: 'catalog_stale'): run
'colfile index FILE' to rebuild the catalog.
JSON output always lists every selected column; --json -l adds 'attrs' and
'blobs'.  Non-finite floats appear as "nan"/"inf"/"-inf", complex values
as [real, imag]."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "ls", HELP, DESCRIPTION, EPILOG)
    add_file_and_columns(p, "list")
    p.add_argument("-l", "--long", action="store_true",
                   help="also show attributes and per-blob checksums")
    p.add_argument("-R", "--recursive", dest="depth", action="store_const", const=None,
                   help="list every level of groups (the default)")
    p.add_argument("-d", "--depth", dest="depth", type=int, metavar="N", default=None,
                   help="show groups down to N levels; deeper columns are "
                        "summarised in their group's line")
    p.add_argument("-H", "--human-readable", action="store_true",
                   help="sizes as 1.5 MiB instead of bytes")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(_extra_positionals="columns")
    return p


# ---------------------------------------------------------------------------
# gathering


def attrs_info(am: Any) -> list[dict[str, Any]]:
    """name, dtype token, nmemb and decoded value of every attribute."""
    out = []
    for name in am:
        tok, nmemb, _raw = am.raw(name)
        out.append({"name": name, "dtype": tok, "nmemb": nmemb, "value": am[name]})
    return out


def blobs_info(col: Any) -> list[dict[str, Any]]:
    out = []
    first = 0
    for i in range(col.nfile):
        info = col.blob_info(i)
        crc = info["crc32c"]
        out.append({
            "blob": blob_id(i),
            "path": blob_path(col, i),
            "first_row": first,
            "rows": info["rows"],
            "sum": info["sum"],
            "fold": info["fold"],
            "crc32c": None if crc is None else f"{crc:08x}",
        })
        first += info["rows"]
    return out


def describe(f: Any, name: str, long: bool) -> dict[str, Any]:
    try:
        col = f[name]
        d: dict[str, Any] = {
            "name": name,
            "kind": col.kind,
            "dtype": col.dtype.str,
            "nmemb": col.nmemb,
            "shape": list(col.shape),
            "size": col.size,
            "nfile": col.nfile,
            "nbytes": column_nbytes(col),
            "blob_rows": col.blob_rows,
        }
        if long:
            d["attrs"] = attrs_info(col.attrs)
            d["blobs"] = blobs_info(col)
        return d
    except colfile.Error as exc:
        return {"name": name, "error": str(exc)}


def group_attrs(f: Any, group: str) -> list[dict[str, Any]]:
    try:
        am = f.attrs if group == "." else f[group + "/"].attrs
        return attrs_info(am)
    except colfile.Error as exc:
        return [{"name": "(error)", "dtype": "", "nmemb": 0, "value": str(exc), "error": True}]


# ---------------------------------------------------------------------------
# text output


def _size(n: int, human: bool) -> str:
    return fmt_bytes(n) if human else str(n)


def _attr_lines(attrs: list[dict[str, Any]], indent: str) -> list[str]:
    rows = []
    for a in attrs:
        if a.get("error"):
            rows.append(["attr", "!", f"cannot read attributes: {a['value']}"])
            continue
        dt = a["dtype"] if a["nmemb"] == 1 else f"{a['dtype']}[{a['nmemb']}]"
        rows.append(["attr", short(safe_text(a["name"]), 32), dt,
                     short(fmt_value(a["value"]), 60)])
    return [indent + line for line in table(rows)]


def _blob_lines(blobs: list[dict[str, Any]], indent: str) -> list[str]:
    rows = []
    for b in blobs:
        rows.append(["blob", b["blob"], f"{fmt_rows(b['first_row'], b['rows'])} ({b['rows']})",
                     f"sum {b['sum']}", f"fold {b['fold']}",
                     f"crc32c {b['crc32c'] or '-'}"])
    return [indent + line for line in table(rows)]


def render(f: Any, cols: list[dict[str, Any]], args: Any, out: Any) -> None:
    human = args.human_readable
    depth = args.depth
    # With --depth, the columns below level `depth` are replaced by one
    # summary entry for their group (all of a group's columns are adjacent in
    # the sorted listing).
    entries: list[tuple[str, Any]] = []
    sums: dict[str, list[int]] = {}
    for c in cols:
        groups = c["name"].split("/")[:-1]
        if depth is not None and len(groups) >= depth:
            g = "/".join(groups[:depth])
            if g not in sums:
                sums[g] = [0, 0]
                entries.append(("sum", g))
            sums[g][0] += 1
            sums[g][1] += c.get("nbytes", 0)
        else:
            entries.append(("col", c))

    # Main rows: (cells, detail lines printed after the row)
    rows: list[tuple[list[str], list[str]]] = []
    if args.long:
        fa = group_attrs(f, ".")
        if fa:
            rows.append(([". (File attributes)"], _attr_lines(fa, "    ")))
    current: list[str] = []
    for what, ent in entries:
        name = ent["name"] if what == "col" else ent
        parts = name.split("/")
        groups = parts[:-1]
        k = 0
        while k < min(len(current), len(groups)) and current[k] == groups[k]:
            k += 1
        for j in range(k, len(groups)):
            details: list[str] = []
            if args.long:
                details = _attr_lines(group_attrs(f, "/".join(groups[: j + 1])),
                                      "  " * j + "    ")
            rows.append((["  " * j + groups[j] + "/"], details))
        current = groups
        indent = "  " * len(groups)
        if what == "sum":
            n, nbytes = sums[ent]
            details = []
            if args.long:
                details = _attr_lines(group_attrs(f, ent), indent + "    ")
            rows.append(([indent + parts[-1] + "/", "",
                          f"{n} column{'s' if n != 1 else ''}", "", _size(nbytes, human)],
                         details))
            current = parts
            continue
        c = ent
        leaf = indent + parts[-1]
        if "error" in c:
            rows.append(([leaf, "!", "", "", c["error"]], []))
            continue
        if c["kind"] == "data":
            shape = fmt_shape(c["shape"])
            dtype = c["dtype"]
        else:
            shape = c["kind"]
            dtype = "-"
        details = []
        if args.long:
            details = _attr_lines(c["attrs"], indent + "    ")
            details += _blob_lines(c["blobs"], indent + "    ")
        rows.append(([leaf, dtype, shape, str(c["nfile"]), _size(c["nbytes"], human)],
                     details))

    header = ["NAME", "DTYPE", "SHAPE", "NFILE", "BYTES"]
    main_cells = [header] + [r[0] for r in rows]
    widths = [0] * 5
    for cells in main_cells:
        if len(cells) == 5:
            for i, cell in enumerate(cells):
                widths[i] = max(widths[i], len(cell))

    def fmt(cells: list[str]) -> str:
        if len(cells) != 5:
            return "  ".join(cells)
        if cells[1] == "!":  # an error row: name then the message
            return f"{cells[0].ljust(widths[0])}  cannot open: {cells[4]}"
        return "  ".join([cells[0].ljust(widths[0]), cells[1].ljust(widths[1]),
                          cells[2].ljust(widths[2]), cells[3].rjust(widths[3]),
                          cells[4].rjust(widths[4])]).rstrip()

    print(fmt(header), file=out)
    for cells, details in rows:
        print(fmt(cells), file=out)
        for line in details:
            print(line, file=out)
    total = sum(c.get("nbytes", 0) for c in cols)
    n = len(cols)
    summary = f"{n} column{'s' if n != 1 else ''}, {total} bytes"
    if total >= 1024:
        summary += f" ({fmt_bytes(total)})"
    bad = sum(1 for c in cols if "error" in c)
    if bad:
        summary += f", {bad} could not be opened"
    print(summary, file=out)
    note = catalog_note(f)
    if note:
        # with -l on stdout, with the listing; else on stderr
        print("note: " + note, file=out if args.long else sys.stderr)


# ---------------------------------------------------------------------------


def run(args: Any) -> int:
    if args.depth is not None and args.depth < 1:
        raise UsageError(f"--depth must be 1 or more, not {args.depth}")
    out = sys.stdout
    with open_file(args.path) as f, warnings.catch_warnings():
        warnings.simplefilter("ignore", colfile.CatalogWarning)  # said below
        names = sorted(select_columns(f, args.columns),
                       key=lambda s: s.encode("utf-8", "surrogateescape"))
        cols = [describe(f, n, args.long) for n in names]
        if args.json:
            doc: dict[str, Any] = {"path": f.path}
            if args.long:
                doc["attrs"] = {a["name"]: {"dtype": a["dtype"], "nmemb": a["nmemb"],
                                            "value": a["value"]}
                                for a in group_attrs(f, ".") if not a.get("error")}
                doc["groups"] = [
                    {"name": g,
                     "attrs": {a["name"]: {"dtype": a["dtype"], "nmemb": a["nmemb"],
                                           "value": a["value"]}
                               for a in group_attrs(f, g) if not a.get("error")}}
                    for g in group_names(c["name"] for c in cols)]
            for c in cols:
                if "attrs" in c:
                    c["attrs"] = {a["name"]: {"dtype": a["dtype"], "nmemb": a["nmemb"],
                                              "value": a["value"]} for a in c["attrs"]}
            doc["columns"] = cols
            doc["total_bytes"] = sum(c.get("nbytes", 0) for c in cols)
            if f.catalog_stale:
                doc["catalog_stale"] = catalog_note(f)
            dump_json(jsonable(doc), out)
        else:
            render(f, cols, args, out)
    if any("error" in c for c in cols):
        raise CliError(f"{sum(1 for c in cols if 'error' in c)} column(s) could not be opened")
    return 0
