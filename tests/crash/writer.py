"""The Python writer of the crash harness: replays a plan through colfile's
Python API, serially or under MPI (``--mpi``: ``comm=MPI.COMM_WORLD``, data
written with ``write_all``/collective ``append``).

    python writer.py FILE PLAN LOG [--start K] [--on-error close|abort]
                     [--nodurable] [--pids DIR] [--mpi]

The log has the lines of crash_writer.c (``ready``, ``begin``, ``done``,
``fail``, ``cleanup``, ``end``), written by rank 0 with one ``write`` each
and fsynced.  Exit status: 0 all done, 3 a colfile error (logged as
``fail``), 4 an exception that is not a ``colfile.Error`` (``pyfail``), 2
bad usage.

With ``--on-error close`` (the default) a failing operation behaves like
code in ``with`` blocks: the column and the File are closed as the
exception propagates.  ``--on-error abort`` exits at once without closing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import crashplan  # noqa: E402


class Log:
    def __init__(self, path: str | None) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666) if path else -1

    def __call__(self, text: str) -> None:
        if self.fd < 0:
            return
        line = text.replace("\n", " ") + "\n"
        os.write(self.fd, line.encode("utf-8", "replace"))
        os.fsync(self.fd)


def numpy_dtype(token: str) -> np.dtype[Any]:
    if token[1] == "b":
        return np.dtype(np.bool_)
    return np.dtype(token)


def rows_array(token: str, nmemb: int, key: int, row0: int, n: int) -> np.ndarray:
    dt = numpy_dtype(token)
    raw = crashplan.element_bytes(token, key, row0 * nmemb, n * nmemb)
    arr = np.frombuffer(raw, dtype=dt) if raw else np.zeros(0, dtype=dt)
    return arr.reshape(n, nmemb) if nmemb > 1 else arr


def attr_python_value(kind: str, gen: int) -> Any:
    if kind == "f8":
        return np.float64(gen + 0.5)
    if kind == "i8x3":
        return np.array([gen, -gen, 7 * gen], dtype="<i8")
    token, nmemb, raw = crashplan.attr_value(kind, gen)
    return raw.decode()


class Writer:
    def __init__(self, f: Any, comm: Any, seed: int, path: str = "", kwargs: dict[str, Any] | None = None) -> None:
        self.f = f
        self.path = path
        self.kwargs = kwargs or {}
        self.comm = comm
        self.seed = seed
        self.rank = comm.rank if comm is not None else 0
        self.nranks = comm.size if comm is not None else 1

    def share(self, n: int) -> tuple[int, int]:
        first = self.rank * n // self.nranks
        return first, (self.rank + 1) * n // self.nranks - first

    def write_rows(self, col: Any, gen: int, row0: int, n: int, piece: int, io: str = "auto") -> None:
        key = crashplan.gen_key(self.seed, gen)
        token = col._token
        nmemb = max(col.nmemb, 1)
        if self.comm is not None:
            first, mine = self.share(n)
            col.write_all(rows_array(token, nmemb, key, row0 + first, mine), start=row0 + first, mode=io)
            return
        for r in range(0, n, piece):
            k = min(piece, n - r)
            col.write(row0 + r, rows_array(token, nmemb, key, row0 + r, k))

    def run(self, op: crashplan.Op) -> None:
        f = self.f
        if op.kind in ("create", "replace"):
            token, nmemb = str(op["dtype"]), op.int("nmemb")
            dt = numpy_dtype(token)
            spec: Any = (dt, nmemb) if nmemb > 1 else dt
            with f.create(op.target, spec, size=op.int("size"), nfile=op.int("nfile"),
                          overwrite=True) as col:
                self.write_rows(col, op.int("gen"), 0, op.int("size"), op.int("piece"), str(op.args.get("io", "auto")))
        elif op.kind == "append":
            with f[op.target] as col:
                key = crashplan.gen_key(self.seed, op.int("gen"))
                old = col.size
                rows = op.int("rows")
                nmemb = max(col.nmemb, 1)
                if self.comm is not None:
                    first, mine = self.share(rows)
                    col.append(rows_array(col._token, nmemb, key, old + first, mine), nfile=op.int("nfile"))
                else:
                    col.append(rows_array(col._token, nmemb, key, old, rows), nfile=op.int("nfile"))
        elif op.kind == "update":
            with f[op.target] as col:
                self.write_rows(col, op.int("gen"), op.int("start"), op.int("count"), op.int("piece"),
                                str(op.args.get("io", "auto")))
        elif op.kind == "attr":
            value = attr_python_value(str(op["type"]), op.int("gen"))
            name = str(op["name"])
            if op.target == ".":
                f.attrs[name] = value
                f.flush()
            elif op.target.endswith("/."):
                f[op.target[:-1]].attrs[name] = value
                f.flush()
            else:
                with f[op.target] as col:
                    col.attrs[name] = value
        elif op.kind == "rm":
            del f[op.target]
        elif op.kind == "truncate":
            # mode "w" empties the File; the writer goes on with the new handle
            import colfile
            f.close()
            self.f = colfile.File(self.path, "w", comm=self.comm, **self.kwargs)
        elif op.kind == "repair":
            import colfile
            from colfile.cli import main as cli_main
            # without locks, or with node-local ones, repair changes nothing
            # unproved unless forced: this writer is the File's only one
            off = ["--no-locking", "--force"] if self.kwargs.get("locking") is False else \
                ["--force"] if colfile.locking.lock_scope(self.path)[0] == "node" else []
            rc = cli_main(["repair", "-q"] + off + [self.path])
            if rc != 0:
                raise colfile.StorageError(f"{self.path}: colfile repair exited with status {rc}", -1)
        else:
            raise ValueError(f"unknown operation {op.kind}")


def wait_for_log(comm: Any) -> None:
    """Only rank 0 logs, and mpiexec tears a job down at its first exit,
    which could kill rank 0 before its ``fail`` line is written: before
    exiting where it failed (``--on-error abort``), every rank waits, 5 s at
    most, until all have come that far (rank 0 after logging)."""
    if comm is None or comm.size < 2:
        return
    req = comm.Ibarrier()
    deadline = time.monotonic() + 5
    while not req.Test() and time.monotonic() < deadline:
        time.sleep(0.001)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("plan")
    p.add_argument("log")
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--on-error", choices=["close", "abort"], default="close")
    p.add_argument("--nodurable", action="store_true")
    p.add_argument("--no-locking", action="store_true", help="locking=False (a file system without locks)")
    p.add_argument("--pids")
    p.add_argument("--mpi", action="store_true")
    a = p.parse_args()

    comm = None
    if a.mpi:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    rank = comm.rank if comm is not None else 0
    if a.pids:
        Path(a.pids, str(rank)).write_text(f"{os.getpid()}\n")
    if os.environ.get("COLFILE_LIBRARY"):
        # colfile._ffi asks ctypes.util.find_library even when
        # $COLFILE_LIBRARY names the library, which runs ldconfig and gcc
        # (about a second per writer start); the answer would not be used.
        import ctypes.util
        ctypes.util.find_library = lambda name: None
    import colfile

    seed, ops = crashplan.read_plan(a.plan)
    log = Log(a.log if rank == 0 else None)
    kwargs: dict[str, Any] = {}
    if a.nodurable:
        kwargs["durable"] = False
    if a.no_locking:
        kwargs["locking"] = False
    try:
        f = colfile.File(a.file, "a", comm=comm, **kwargs)
    except colfile.Error as exc:
        log(f"fail -1 {exc.code_name} {exc}")
        return 3
    log(f"ready {os.getpid()}")
    w = Writer(f, comm, seed, a.file, kwargs)
    for op in ops:
        if op.idx < a.start:
            continue
        log(f"begin {op.idx} {op.kind} {op.target}")
        if comm is not None:
            comm.barrier()
        try:
            if a.on_error == "abort":
                try:
                    w.run(op)
                except colfile.Error as exc:
                    log(f"fail {op.idx} {exc.code_name} {exc}")
                    wait_for_log(comm)
                    os._exit(3)
            else:
                w.run(op)
        except colfile.Error as exc:
            log(f"fail {op.idx} {exc.code_name} {exc}")
            msg = ""
            rc = 0
            try:
                w.f.close()
            except colfile.Error as exc2:
                rc, msg = exc2.code, str(exc2)
            log(f"cleanup {rc} {msg}")
            return 3
        except BaseException as exc:  # not a clean colfile error
            log(f"pyfail {op.idx} {type(exc).__name__} {exc}")
            traceback.print_exc()
            return 4
        log(f"done {op.idx}")
    try:
        w.f.close()
    except colfile.Error as exc:
        log(f"fail -1 {exc.code_name} {exc}")
        return 3
    log("end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
