"""Verifying streams (``colfile check``, docs/streams.md): every committed
chunk of every task read back and compared with the CRC32C that the
stream's table records (docs/format.md 8.7)."""

from __future__ import annotations

import fnmatch
import os
from typing import Any, Sequence

from . import stream as _stream
from ._core import stream as _s
from .errors import Error
from .file import File

__all__ = ["select", "check"]

# the error of cf_stream_check_chunk -> the kind of damage, as colfile
# check names a blob's
_KINDS = {"CF_ENOENT": "missing", "CF_ESHORT": "short", "CF_ECHECKSUM": "crc mismatch"}


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
    "message"}]}``.  A table that cannot be read is one problem with task
    and chunk None ("cannot open")."""
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
        for t in range(s.tasks):
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
                    doc["intact"].append(entry)
    finally:
        s.close()
    return doc
