"""Run under mpiexec by test_stream_reopen_mpi.py: a stream written by one
process for as many tasks as there are ranks (uneven, empty and growing
tasks, small chunks: a table of many statistics lines) is reopened under
comm= and appended to; the stream's files must be those of one process
that reopens and appends the same rows, and each rank must have read only
its share of the table (its range, the rest of its last task's lines; rank
0 also the head and checksum lines), never the whole.  A stream of another
task count is refused naming it; a damaged table fails every rank alike.

    mpiexec -n N python stream_reopen_slices.py DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI
from stream_rows import rows

import colfile
import colfile.stream as cs
from colfile.errors import FormatError, InvalidArgumentError


def sizes(task: int, step: int) -> int:
    return 0 if task % 4 == 1 else (1500 * (task % 4) + 1200 + 31 * task) * (step + 1)


def write_serial(path: str, name: str, tasks: int, files: int) -> None:
    with colfile.File(path, "a") as f:
        w = cs.create(f, name, "<f8", nmemb=3, tasks=tasks, files=files, chunk=512, align=512)
        for t in range(tasks):
            w.task(t).append(rows(t, 0, sizes(t, 0)))
        w.close()
        w = cs.reopen(f, name)
        for t in range(tasks):
            w.task(t).append(rows(t, sizes(t, 0), sizes(t, 1)))
        w.close()


def longest_task_lines(table: bytes) -> int:
    starts = [i for i in range(1, len(table)) if table[i - 1] == 10 and (48 <= table[i] <= 57 or table[i] == 67)]
    return max(b - a for a, b in zip(starts, starts[1:]))


def main() -> None:
    d = Path(sys.argv[1])
    world = MPI.COMM_WORLD
    rank, size = world.rank, world.size
    path = str(d / "f")
    files = size
    if rank == 0:
        write_serial(path, "par", size, files)
        write_serial(path, "ser", size, files)
        write_serial(path, "other", 3 if size == 4 else 4, 2)
        write_serial(path, "damaged", size, files)
        t = d / "f" / "damaged" / "colfile-stream-v1"
        b = bytearray(t.read_bytes())
        b[-47] = ord("f") if b[-47] != ord("f") else ord("e")  # a CRC digit of the last task's lines
        t.write_bytes(bytes(b))
    world.Barrier()
    table = (d / "f" / "par" / "colfile-stream-v1").read_bytes()
    whole, longest = len(table), longest_task_lines(table)
    with colfile.File(path, "a", comm=world) as f:
        w = cs.reopen(f, "par")
        read = w.table_bytes
        bound = whole // files + 2 + longest + longest // 4 + 4096 + (2 * 256 + 2 * 18 if rank == 0 else 0)
        assert 0 < read <= bound, f"rank {rank} read {read} bytes of a {whole}-byte table (bound {bound})"
        if size == 4:
            assert read < whole * 3 // 4, f"rank {rank} read {read} bytes of a {whole}-byte table"
        total = world.allreduce(read)
        assert w.task().rows == sizes(rank, 1)
        w.append(rows(rank, sizes(rank, 1), sizes(rank, 2)))
        w.flush()
        w.append(rows(rank, sizes(rank, 2), sizes(rank, 3)))
        w.close()
        tasks = 3 if size == 4 else 4
        try:
            cs.reopen(f, "other")
            raise AssertionError("a stream of another task count was reopened")
        except InvalidArgumentError as exc:
            want = f"{path}/other: a stream of {tasks} tasks, reopened by {size} ranks"
            assert want in str(exc), str(exc)
        try:
            cs.reopen(f, "damaged")
            raise AssertionError("a damaged table was reopened")
        except FormatError as exc:
            assert "colfile-stream-v1" in str(exc) and str(exc).startswith("rank "), str(exc)
    if rank == 0:
        with colfile.File(path, "a") as f:
            for k in (2, 3):
                w = cs.reopen(f, "ser")
                for t in range(size):
                    w.task(t).append(rows(t, sizes(t, k - 1), sizes(t, k)))
                w.close()
            s = cs.open(f, "par", verify=True)
            for t in range(size):
                assert np.array_equal(s.task(t), rows(t, 0, sizes(t, 3)), equal_nan=True), f"task {t}'s rows"
        names = ["colfile-stream-v1"] + [f"colfile-stream-data-{i:06X}" for i in range(files)]
        for n in names:
            a = (d / "f" / "par" / n).read_bytes()
            b = (d / "f" / "ser" / n).read_bytes()
            assert a == b, f"{n} differs"
        print(f"ok: files equal; a {whole}-byte table, ranks read {total} bytes in all")


if __name__ == "__main__":
    main()
