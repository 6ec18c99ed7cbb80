"""Serial tools for streams (docs/streams.md): the layout of a stream as
data (:func:`dump`), every task's rows as a plain file (:func:`split`),
and a stream rewritten as an ordinary column that bigfile 0.1.52 reads
(:func:`defrag`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import mpi as _mpi
from . import stream as _stream
from ._core import stream as _s
from .errors import ChecksumError, InvalidArgumentError
from .file import File

__all__ = ["dump", "split", "defrag"]

#: Bytes copied at once by split and defrag.
PIECE_BYTES = 64 << 20


def dump(file: File, name: str) -> dict[str, Any]:
    """The layout of stream ``name``: its row type and layout, each task's
    rows, bytes, chunks and the bytes its chunks leave unused, each
    physical file's tasks and its size (``bytes``) and space on disk
    (``allocated``: holes take none), and the totals.  With every chunk's
    file, offset, bytes and CRC32C under ``"chunks"`` of each task."""
    s = _stream.open(file, name)
    try:
        rowbytes = s.nmemb * s.dtype.itemsize
        tasks = []
        for t in range(s.tasks):
            rows = s.task_size(t)
            chunks = s.task_chunks(t)
            used = rows * rowbytes
            tasks.append({"task": t, "rows": rows, "bytes": used, "file": None if not chunks else chunks[0]["file"],
                          "chunks": chunks, "unused": len(chunks) * s.chunk - used})
        files = []
        for f in range(s.files):
            path = os.path.join(str(file.path), name, f"colfile-stream-data-{f:06X}")
            members = [t for t in tasks if t["file"] == f or (t["file"] is None and _file_of(s, t["task"]) == f)]
            try:
                st = os.stat(path)
                size, allocated = st.st_size, st.st_blocks * 512
            except FileNotFoundError:
                size, allocated = None, 0
            files.append({"file": f, "path": path, "tasks": [members[0]["task"], members[-1]["task"]],
                          "bytes": size, "allocated": allocated,
                          "used": sum(t["bytes"] for t in members)})
        used = sum(t["bytes"] for t in tasks)
        return {"name": name, "dtype": "raw" if s.raw else s.dtype.str, "nmemb": s.nmemb, "tasks": s.tasks,
                "files": s.files, "chunk": s.chunk, "align": s.align, "commit": s.commit, "rows": s.size,
                "bytes": used, "unused": sum(t["unused"] for t in tasks),
                "allocated": sum(f["allocated"] for f in files), "per_task": tasks, "per_file": files}
    finally:
        s.close()


def _file_of(s: _stream.Stream, task: int) -> int:
    return _s.file_of(s.tasks, s.files, task)[0]


def split(file: File, name: str, outdir: str | os.PathLike[str], tasks: list[int] | None = None,
          verify: bool = True) -> list[str]:
    """Write each task's committed rows (all tasks, or ``tasks``) to
    ``outdir/<leaf>.<task, 6 digits>``, raw, in the stream's dtype; the
    paths written.  ``verify`` checks every chunk against its CRC32C."""
    s = _stream.open(file, name, verify=verify)
    out = []
    try:
        leaf = name.rsplit("/", 1)[-1]
        os.makedirs(outdir, exist_ok=True)
        for t in range(s.tasks) if tasks is None else tasks:
            n = s.task_size(t)
            if n < 0:
                raise InvalidArgumentError(f"{name}: no task {t} (of {s.tasks})")
            path = os.path.join(os.fspath(outdir), f"{leaf}.{t:06d}")
            step = max(1, PIECE_BYTES // (s.nmemb * s.dtype.itemsize))
            with open(path, "wb") as fh:
                start = s.task_start(t)
                for at in range(0, n, step):
                    fh.write(s.read(start + at, min(step, n - at)).tobytes())
            out.append(path)
    finally:
        s.close()
    return out


def defrag(file: File, name: str, nfile: int | None = None) -> dict[str, int]:
    """Rewrite stream ``name`` as an ordinary column of the same name
    (rows in the global view's order, ``nfile`` blobs by bigfile's split;
    default as :meth:`File.create`), readable by bigfile 0.1.52.  The
    column's rows are read back and compared with the stream's (whose
    chunks are checked against their CRC32C) before the column's commit,
    which replaces the stream in one atomic step: a crash leaves the
    stream or the column, never neither.

    Under ``comm=`` (a File opened on a communicator) this is collective:
    every rank copies and checks an even share of the rows
    (:func:`colfile.mpi.plan_share`), the column is written with
    collective writes, and a failure on any rank is raised on every rank
    with nothing committed.  The stream is opened with
    ``collective=True``: no rank reads its whole table.

    Returns this process's ``{"rows": rows copied and checked,
    "table_bytes": bytes of the stream's table read}``."""
    comm = file._comm
    # under comm= no rank reads the whole table: each reads its share's tasks
    s = _stream.open(file, name, verify=True, collective=not comm.serial)
    try:
        dt = np.dtype(np.uint8) if s.raw else s.dtype
        coldt = dt if s.nmemb == 1 else np.dtype((dt, s.nmemb))
        step = max(1, PIECE_BYTES // (s.nmemb * dt.itemsize))
        first, count = _mpi.plan_share(s.size, comm.size, comm.rank)
        # the same number of collective writes on every rank: as many as the
        # largest share needs
        pieces = -(-(-(-s.size // comm.size)) // step)
        col = file.create(name, dtype=coldt, size=s.size, nfile=nfile, overwrite=True)
        try:
            for k in range(pieces):
                at, n = first + k * step, max(0, min(step, count - k * step))
                rows = _mpi.agree(comm, lambda: s.read(at, n))
                if comm.serial:
                    col.write(at, rows)
                else:
                    col.write_all(rows, start=at)

            def check() -> None:
                for at in range(first, first + count, step):
                    n = min(step, first + count - at)
                    if s.read(at, n).tobytes() != np.ascontiguousarray(col.read(at, at + n)).tobytes():
                        raise ChecksumError(f"{file.path}/{name}: rows {at}..{at + n - 1} of the new column "
                                            "differ from the stream's; the stream is kept")

            _mpi.agree(comm, check)
        except BaseException:
            if comm.serial:
                col._discard()
                try:
                    col.close()
                except Exception:
                    pass
            else:
                col._abandon()
            raise
        col.close()
        return {"rows": count, "table_bytes": s.table_bytes}
    finally:
        s.close()
