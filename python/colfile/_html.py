"""HTML representations for Jupyter (``_repr_html_``) and key completion.

A File or Group shows as a collapsible tree (``<details>`` elements, no
script): its attributes, its sub-groups and its columns; a column shows its
dtype, shape, nfile, size in bytes, attributes, a summary of its recorded
per-chunk statistics and the state of its checksums; a Selection shows its
counts, predicate and what evaluating it read.  Only metadata is read
(the statistics and checksums that are recorded), never the data.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from .errors import Error

__all__ = ["column", "group", "selection", "key_completions"]

#: Columns listed per group before the rest is summarised.
MAX_COLUMNS = 200
#: Statistics chunks beyond which a column's summary is not computed.
MAX_CHUNKS = 10_000
#: Characters of an attribute value shown.
MAX_VALUE = 120

_STYLE = ("<style>.colfile-repr{font-family:monospace;font-size:90%}"
          ".colfile-repr details{margin-left:1.2em}"
          ".colfile-repr summary{cursor:pointer}"
          ".colfile-repr table{border-collapse:collapse;margin-left:1.2em}"
          ".colfile-repr td,.colfile-repr th{padding:0 .6em;text-align:left}"
          ".colfile-dim{color:#777}</style>")


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def human_size(n: int) -> str:
    """``n`` bytes with binary prefixes: ``512 B``, ``1.5 KiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _value(v: Any) -> str:
    text = repr(v.tolist() if isinstance(v, (np.ndarray, np.generic)) else v)
    if len(text) > MAX_VALUE:
        text = text[:MAX_VALUE - 1] + "\u2026"
    return _e(text)


def _table(rows: list[tuple[str, str]]) -> str:
    """Rows of (label, already escaped HTML)."""
    if not rows:
        return ""
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _attrs(attrs: Any, what: str) -> str:
    try:
        items = sorted(attrs.items())
    except Error as exc:
        return f"<div class='colfile-dim'>attributes unreadable: {_e(exc)}</div>"
    if not items:
        return ""
    rows = [(k, _value(v)) for k, v in items]
    return (f"<details><summary>attributes ({len(items)})</summary>"
            f"{_table(rows)}</details>")


def _stats(col: Any) -> str:
    """Overall min/max/NaN count per component from the recorded chunk
    statistics; says which part of the rows they cover."""
    crows = col.chunk_rows
    if col.kind != "data" or crows <= 0 or col.size == 0:
        return "none"
    nchunks = sum(-(-r // crows) for r in col.blob_rows if r > 0)
    if nchunks > MAX_CHUNKS:
        return _e(f"{nchunks} chunks (not summarised here; colfile stats)")
    try:
        st = col.chunk_stats()
    except Error as exc:
        return _e(f"unavailable: {exc}")
    if st.ndim == 1:
        st = st[:, None]
    valid = st["valid"][:, 0]
    covered = int(st["rows"][valid, 0].sum())
    if not valid.any():
        return _e(f"unknown for all {col.size} rows")
    parts = []
    for j in range(st.shape[1]):
        s = st[valid, j]
        label = f"[{j}] " if st.shape[1] > 1 else ""
        parts.append(f"{label}min {s['min'].min():.6g}, max {s['max'].max():.6g}, "
                     f"NaN {int(s['nan_count'].sum())}")
    cover = "" if covered == col.size else f" (over {covered} of {col.size} rows)"
    return _e("; ".join(parts) + cover)


def _checksums(col: Any) -> str:
    try:
        state = col.ext_state
        sums = col.checksums()
    except Error as exc:
        return _e(f"unavailable: {exc}")
    known = sum(1 for b in sums if b["crc32c"] is not None)
    return _e(f"{state}, CRC32C recorded for {known} of {len(sums)} blobs")


def _column_body(col: Any) -> str:
    if col.closed:
        return "<div class='colfile-dim'>closed</div>"
    if col.kind != "data":
        return _table([("kind", _e(col.kind))]) + _attrs(col.attrs, col.name)
    nmemb = max(col.nmemb, 1)
    rows = [("dtype", _e(col.dtype.str)), ("shape", _e(col.shape)),
            ("nfile", _e(f"{col.nfile} (rows per blob: {_short(col.blob_rows)})")),
            ("size", _e(human_size(col.size * nmemb * col.itemsize))),
            ("kind", _e(col.kind)),
            ("statistics", _stats(col)), ("checksums", _checksums(col))]
    return _table(rows) + _attrs(col.attrs, col.name)


def _short(values: list[int], n: int = 8) -> str:
    if len(values) <= n:
        return ", ".join(map(str, values))
    return ", ".join(map(str, values[:n])) + f", \u2026 ({len(values)} blobs)"


def _column_summary(name: str, col: Any) -> str:
    if col.closed:
        return f"<b>{_e(name)}</b> <span class='colfile-dim'>(closed)</span>"
    if col.kind != "data":
        return f"<b>{_e(name)}</b> <span class='colfile-dim'>{_e(col.kind)}</span>"
    return (f"<b>{_e(name)}</b> <span class='colfile-dim'>{_e(col.dtype.str)} "
            f"{_e(col.shape)} nfile={col.nfile}</span>")


def column(col: Any) -> str:
    """``Column._repr_html_``."""
    head = f"colfile.Column {_column_summary(col.name, col)}"
    return (f"{_STYLE}<div class='colfile-repr'><details open><summary>{head}</summary>"
            f"{_column_body(col)}</details></div>")


def _tree(g: Any) -> str:
    """The sub-groups and columns directly below group ``g``, nested."""
    names = g.columns
    direct: list[str] = []
    subs: dict[str, int] = {}
    for n in names:
        head, sep, _ = n.partition("/")
        if sep:
            subs[head] = subs.get(head, 0) + 1
        else:
            direct.append(n)
    out = [_attrs(g.attrs, g.name)]
    for sub, count in sorted(subs.items()):
        child = g[sub + "/"]
        out.append(f"<details><summary><b>{_e(sub)}/</b> <span class='colfile-dim'>"
                   f"group, {count} columns</span></summary>{_tree(child)}</details>")
    for n in direct[:MAX_COLUMNS]:
        col = g[n]
        out.append(f"<details><summary>{_column_summary(n, col)}</summary>"
                   f"{_column_body(col)}</details>")
    if len(direct) > MAX_COLUMNS:
        out.append(f"<div class='colfile-dim'>\u2026 {len(direct) - MAX_COLUMNS} more "
                   "columns</div>")
    return "".join(out)


def group(g: Any) -> str:
    """``File._repr_html_`` and ``Group._repr_html_``."""
    f = g.file
    kind = "File" if g is f else "Group"
    if f.closed:
        return (f"{_STYLE}<div class='colfile-repr'>colfile.{kind} "
                f"<b>{_e(g.name or f.path)}</b> (closed file)</div>")
    title = _e(f.path) if g is f else f"{_e(g.name)} in {_e(f.path)}"
    extra = f" mode={_e(f.mode)}" if g is f else ""
    return (f"{_STYLE}<div class='colfile-repr'><details open><summary>colfile.{kind} "
            f"<b>{title}</b><span class='colfile-dim'>{extra} ({len(g)} columns)</span>"
            f"</summary>{_tree(g)}</details></div>")


def selection(sel: Any) -> str:
    """``Selection._repr_html_``."""
    ranges = sel.ranges
    shown = ", ".join(f"{a}:{b}" for a, b in ranges[:8])
    if len(ranges) > 8:
        shown += f", \u2026 ({len(ranges)} ranges)"
    rows = [("predicate", _e(sel.predicate)), ("rows", _e(f"{sel.count} of {sel.size}")),
            ("ranges", _e(shown or "none")), ("report", _e(sel.report))]
    return (f"{_STYLE}<div class='colfile-repr'><details open><summary>colfile.Selection "
            f"<b>{sel.count}</b> of {sel.size} rows</summary>{_table(rows)}</details></div>")


def key_completions(g: Any) -> list[str]:
    """What ``g[...]`` takes: column names and group names (with ``/``)."""
    names = g.columns
    groups = set()
    for n in names:
        parts = n.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            groups.add("/".join(parts[:i]) + "/")
    return sorted(groups) + names
