"""Verifying streams (``colfile check``, docs/streams.md): every committed
chunk of every task read back and compared with the CRC32C that the
stream's table records (docs/format.md 8.7)."""

from __future__ import annotations

import fnmatch
import math
import os
from typing import Any, Sequence

import numpy as np

from . import stream as _stream
from ._core import stream as _s
from .errors import Error
from .file import File

__all__ = ["select", "check"]

# the error of cf_stream_check_chunk -> the kind of damage, as colfile
# check names a blob's
_KINDS = {"CF_ENOENT": "missing", "CF_ESHORT": "short", "CF_ECHECKSUM": "crc mismatch"}


def _outward(x: Any, up: bool) -> float:
    """An integer as the double no smaller (up) or no greater than it, as
    the statistics round integer ranges."""
    d = float(x)
    if up and d < x:
        d = math.nextafter(d, math.inf)
    elif not up and d > x:
        d = math.nextafter(d, -math.inf)
    return d


def _stats_of(v: np.ndarray) -> tuple[int, int, float, float, float | None]:
    """(count, nan_count, min, max, sum) of one component's values as the
    statistics define them; sum None when it cannot be compared (values
    with infinities)."""
    kind = v.dtype.kind
    if kind == "c":
        return len(v), int((np.isnan(v.real) | np.isnan(v.imag)).sum()), math.nan, math.nan, None
    if kind == "S":
        return len(v), 0, math.nan, math.nan, None
    if kind == "f":
        ok = v[~np.isnan(v)].astype(np.float64)
        if not len(ok):
            return len(v), len(v), math.nan, math.nan, 0.0
        total = math.fsum(ok) if np.isfinite(ok).all() else None
        return len(v), len(v) - len(ok), float(ok.min()), float(ok.max()), total
    ints = [int(x) for x in v.tolist()]
    if not ints:
        return 0, 0, math.nan, math.nan, 0.0
    return len(v), 0, _outward(min(ints), False), _outward(max(ints), True), float(sum(ints))


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _stats_problems(s: Any, t: int) -> dict[int, str]:
    """The chunks of task ``t`` whose recorded statistics disagree with
    its rows, with what disagrees."""
    rows = s.task(t)
    rows = rows.reshape(len(rows), s.nmemb)
    start = s.task_start(t)
    out: dict[int, str] = {}
    for k in range(-(-s.task_size(t) * s.nmemb * s.dtype.itemsize // s.chunk)):
        for j in range(s.nmemb):
            rec = _s.chunk_stats(s._h, t, k, j)
            first, n = rec[1] - start, rec[2]
            count, nan, mn, mx, total = _stats_of(rows[first:first + n, j])
            wrong = [name for name, ok in (("count", rec[5] == count), ("nan", rec[6] == nan),
                                           ("min", _same(rec[7], mn)), ("max", _same(rec[8], mx)),
                                           ("sum", total is None or rec[9] == total)) if not ok]
            if wrong:
                out.setdefault(k, f"component {j}: recorded {', '.join(wrong)} disagree with the data")
    return out


def select(file: File, names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split command line names into the streams they stand for and the
    names left for the columns.  No names: every stream, and no names left
    (every column).  A stream's own name stands for it alone; ``.``, a
    group and a pattern stand for the streams below or matching them too
    and stay for the columns."""
    streams = _stream.list_streams(file)
    if not names:
        return streams, []
    out: list[str] = []
    rest: list[str] = []
    for name in names:
        if name in streams:
            if name not in out:
                out.append(name)
            continue
        rest.append(name)
        group = name.rstrip("/")
        for s in streams:
            if (name == "." or s.startswith(group + "/") or fnmatch.fnmatchcase(s, name)) and s not in out:
                out.append(s)
    return out, rest


def _has_stats(s: Any) -> bool:
    """Whether the stream records statistics (its first chunk says)."""
    for t in range(s.tasks):
        if s.task_size(t):
            return bool(_s.chunk_stats(s._h, t, 0, 0)[3])
    return False


def _problem(path: str, name: str, task: int | None, chunk: int | None, kind: str, message: str,
             **where: Any) -> dict[str, Any]:
    return {"stream": name, "task": task, "chunk": chunk, "path": path, **where,
            "problems": [{"kind": kind, "message": message}]}


def check(file: File, name: str) -> dict[str, Any]:
    """Verify every committed chunk of stream ``name``: ``{"stream",
    "path", "tasks", "chunks", "bytes", "problems", "intact"}``, where
    each problem or intact chunk is ``{"stream", "task", "chunk", "path"
    (its physical file), "offset", "bytes", "task_rows" [first, stop) of
    the task's rows it holds a part of, "problems" [{"kind",
    "message"}]}``.  Where a task's chunks are all intact and the stream
    records statistics, its rows are read and each chunk's statistics
    compared with them ("stats mismatch").  A table that cannot be read is
    one problem with task and chunk None ("cannot open")."""
    where = os.path.join(str(file.path), name)
    doc: dict[str, Any] = {"stream": name, "path": where, "tasks": 0, "chunks": 0, "bytes": 0,
                           "problems": [], "intact": []}
    try:
        s = _stream.open(file, name)
    except Error as exc:
        doc["problems"].append(_problem(os.path.join(where, "colfile-stream-v1"), name, None, None,
                                        "cannot open", str(exc)))
        return doc
    try:
        rowbytes = s.nmemb * s.dtype.itemsize
        doc["tasks"] = s.tasks
        recorded = not s.raw and _has_stats(s)
        for t in range(s.tasks):
            damaged_here = len(doc["problems"])
            entries = []
            for k, c in enumerate(s.task_chunks(t)):
                lo = k * s.chunk
                entry = {"stream": name, "task": t, "chunk": k,
                         "path": os.path.join(where, f"colfile-stream-data-{c['file']:06X}"),
                         "offset": c["offset"], "bytes": c["bytes"],
                         "task_rows": [lo // rowbytes, -(-(lo + c["bytes"]) // rowbytes)], "problems": []}
                doc["chunks"] += 1
                doc["bytes"] += c["bytes"]
                try:
                    _s.check_chunk(s._h, t, k)
                except Error as exc:
                    kind = _KINDS.get(exc.code_name, "cannot verify")
                    entry["problems"].append({"kind": kind, "message": f"{kind}: {exc}"})
                    doc["problems"].append(entry)
                else:
                    entries.append(entry)
            # the statistics, where the bytes are intact: the rows of the
            # task read once
            wrong = _stats_problems(s, t) if recorded and entries and len(doc["problems"]) == damaged_here \
                else {}
            for entry in entries:
                if entry["chunk"] in wrong:
                    entry["problems"].append({"kind": "stats mismatch", "message":
                                              f"stats mismatch: {wrong[entry['chunk']]} (docs/format.md 8.7)"})
                    doc["problems"].append(entry)
                else:
                    doc["intact"].append(entry)
    finally:
        s.close()
    return doc
