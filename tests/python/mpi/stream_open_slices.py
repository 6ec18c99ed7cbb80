"""Run under mpiexec by test_stream_open_mpi.py: a stream written by one
process (more tasks than ranks; uneven, empty and growing tasks; small
chunks, so a table of many statistics lines) is opened for reading with
collective=True on a File opened with comm=.  Every rank's reads of the
global view (its share, slices across task boundaries, single tasks,
statistics) must give what a reader of the whole table gives, and each
rank must have read only its part of the table: the head and checksum
lines, its slice if it is a reader, and the lines of the tasks it read.
A damaged table fails every rank alike.

    mpiexec -n N python stream_open_slices.py DIR
"""

from __future__ import annotations

import shutil
import sys
import traceback
from pathlib import Path

import numpy as np
from mpi4py import MPI
import stream_rows

import colfile
import colfile.mpi as cm
import colfile.stream as cs
import colfile.stream_tools as st
from colfile.errors import FormatError


def rows(task: int, start: int, stop: int) -> np.ndarray:
    return stream_rows.rows(task, start, stop, wave=np.sin, nan_every=97, nan_at=5, nan_col=2)


def size_of(task: int, step: int) -> int:
    return 0 if task % 3 == 1 else (700 * (task % 5) + 90 + 13 * task) * (step + 1)


def task_lines(table: bytes) -> list[int]:
    """Where each task's lines start, and where the last one's end."""
    at, pos = [], 0
    for line in table.splitlines(keepends=True):
        if line[:1].isdigit():
            at.append(pos)
        pos += len(line)
    return at + [len(table) - 17]


def main(d: Path) -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    tasks, files = 2 * size + 1, 2
    path = str(d / "f")
    if rank == 0:
        with colfile.File(path, "a") as f:
            for step in (0, 1):  # a growing stream: two commits
                w = cs.create(f, "s", "<f8", nmemb=3, tasks=tasks, files=files, chunk=512,
                              align=512) if step == 0 else cs.reopen(f, "s")
                for t in range(tasks):
                    w.task(t).append(rows(t, size_of(t, step - 1) if step else 0, size_of(t, step)))
                w.close()
            cs.create(f, "empty", "<i4", tasks=tasks, files=files).close()
        shutil.copytree(d / "f" / "s", d / "f" / "d")  # the same stream, to defragment
    comm.barrier()
    table = (d / "f" / "s" / "colfile-stream-v1").read_bytes()
    at = task_lines(table)
    lines = np.diff(at)
    with colfile.File(path, "r", comm=comm) as f:
        whole = cs.open(f, "s")
        s = cs.open(f, "s", collective=True)
        assert s.size == whole.size and s.tasks == tasks and s.commit == 2
        assert [s.task_size(t) for t in range(tasks)] == [size_of(t, 1) for t in range(tasks)]
        assert [s.task_start(t) for t in range(tasks)] == [whole.task_start(t) for t in range(tasks)]
        # after the open: the head and checksum lines, and a reader's slice
        body = at[-1] - at[0]
        r = cs._slice_readers(size, files, body)
        reader = any(j * size // r == rank for j in range(r))
        bound = 4096 + 18 + (body // r + 2 + 2 * int(lines.max()) + 4096 if reader else 0)
        opened = s.table_bytes
        assert 0 < opened <= bound, (rank, opened, bound, len(table))
        if not reader:
            assert opened <= 4096 + 18 < len(table) // 2, (opened, len(table))
        # this rank's share of the global view: only its tasks' lines more
        first, count = cm.plan_share(s.size, size, rank)
        got = s.read(first, count)
        assert got.tobytes() == whole.read(first, count).tobytes(), f"rank {rank}'s share"
        ts = [t for t in range(tasks) if s.task_size(t) and s.task_start(t) < first + count
              and s.task_start(t) + s.task_size(t) > first]
        assert s.table_bytes - opened <= int(sum(lines[t] for t in ts)), (s.table_bytes, opened, ts)
        assert s.table_bytes < len(table) or size == 1 or reader
        # slices across task boundaries, tasks, statistics: as the whole table gives them
        rng = np.random.default_rng(rank)
        for _ in range(20):
            a, b = sorted(int(x) for x in rng.integers(0, s.size + 1, 2))
            assert s[a:b].tobytes() == whole[a:b].tobytes(), (a, b)
        for t in range(tasks):
            starts = s.task_start(t)
            assert s[starts - 1:starts + 2].tobytes() == whole[starts - 1:starts + 2].tobytes() if starts else True
            assert s.task(t).tobytes() == rows(t, 0, size_of(t, 1)).tobytes(), f"task {t}"
        assert s.chunk_stats().tobytes() == whole.chunk_stats().tobytes()
        assert s.task_chunks(tasks - 1) == whole.task_chunks(tasks - 1)
        assert s.table_bytes <= len(table) + bound
        e = cs.open(f, "empty", collective=True)
        assert e.size == 0 and e[:].size == 0 and e.task(tasks - 1).size == 0
        for x in (s, whole, e):
            x.close()
    comm.barrier()
    # defrag under comm=: each rank reads its share's tasks' lines, not the table
    with colfile.File(path, "a", comm=comm) as f:
        done = st.defrag(f, "d", 3)
        first, count = cm.plan_share(int(sum(size_of(t, 1) for t in range(tasks))), size, rank)
        assert done["rows"] == count
        assert done["table_bytes"] <= bound + len(table), (done, bound)
        if not reader:
            assert done["table_bytes"] < len(table), (done, len(table))
        col = f["d"]
        assert np.ascontiguousarray(col[:]).tobytes() == b"".join(
            rows(t, 0, size_of(t, 1)).tobytes() for t in range(tasks))
        col.close()
    comm.barrier()
    # a damaged table: one CRC digit changed (still lines as written), then a task line broken
    tpath = d / "f" / "s" / "colfile-stream-v1"
    for k, damage in enumerate((b"CRC", b"line")):
        if rank == 0:
            t = bytearray(table)
            if damage == b"CRC":
                m = next(t for t in range(tasks // 2, tasks) if size_of(t, 1))
                p = table.index(b" ", table.index(b" ", at[m]) + 1) + 1  # task m's first chunk CRC
                t[p] = ord("0") if t[p] != ord("0") else ord("1")
            else:
                t[at[tasks - 1]] = ord("x")
            tpath.write_bytes(bytes(t))
        comm.barrier()
        with colfile.File(path, "r", comm=comm) as f:
            try:
                cs.open(f, "s", collective=True)
            except FormatError as exc:
                assert "colfile-stream-v1" in str(exc) and str(exc).startswith("rank "), str(exc)
                assert ("checksum line does not match" if damage == b"CRC" else "task") in str(exc), str(exc)
            else:
                raise AssertionError(f"rank {rank}: a damaged table ({damage!r}) was read")
        comm.barrier()
    if rank == 0:
        print("ok: global view read in slices")


if __name__ == "__main__":
    try:
        main(Path(sys.argv[1]))
    except BaseException:  # one rank's failure must not leave the others waiting
        traceback.print_exc()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
