"""The communicator of a File under MPI: mpi4py's calls colfile makes, the
agreement step that starts every collective operation (and what ranks in
different collectives, or a rank that never comes, raise), and the serial
stand-in.  Public in :mod:`colfile.mpi`.
"""

from __future__ import annotations

import math
import os
import time
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import CollectiveError, InvalidArgumentError

__all__ = ["Comm", "SELF", "as_comm", "file_comm", "resolve_timeout", "DEFAULT_TIMEOUT",
           "OPERATIONS"]


class _SelfComm:
    """One process, no MPI."""

    rank, size = 0, 1

    def barrier(self) -> None:
        pass

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj

    def gather(self, obj: Any, root: int = 0) -> list[Any]:
        return [obj]

    def allgather(self, obj: Any) -> list[Any]:
        return [obj]


#: Seconds a rank waits, at the start of a collective operation, for every
#: rank to call it (File(mpi_timeout=), else COLFILE_MPI_TIMEOUT, else this).
DEFAULT_TIMEOUT = 300.0

#: The collective operations, by the names their errors give (the agreement
#: step sends a number: zlib.crc32 of the name).
OPERATIONS = (
    "File(...)", "File.close()", "File.flush()", "File.cleanup()",
    "create()", "del file[name]", "require_group()", "create_group()",
    "attrs[name] = value", "del attrs[name]",
    "Column.write_all()", "Column.read_all()", "Column.append()",
    "Column.flush()", "Column.close()",
    "listing (collective_metadata=True)", "file[name] (collective_metadata=True)",
    "group lookup (collective_metadata=True)", "column_attrs() (collective_metadata=True)",
    "attrs[name] (collective_metadata=True)",
)


def _op_id(op: str) -> int:
    return zlib.crc32(op.encode("utf-8")) & 0x7FFFFFFF


_OP_NAMES = {_op_id(op): op for op in OPERATIONS}


def resolve_timeout(timeout: Any = None) -> float:
    """The agreement deadline in seconds: ``timeout`` if given, else the
    environment's ``COLFILE_MPI_TIMEOUT``, else :data:`DEFAULT_TIMEOUT`;
    0, a negative number or ``inf`` waits forever."""
    if timeout is None:
        env = os.environ.get("COLFILE_MPI_TIMEOUT", "").strip()
        if not env:
            return DEFAULT_TIMEOUT
        try:
            timeout = float(env)
        except ValueError:
            raise InvalidArgumentError(f"COLFILE_MPI_TIMEOUT={env!r}: not a number of "
                                       "seconds") from None
        what = "COLFILE_MPI_TIMEOUT"
    else:
        what = "mpi_timeout"
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a number of seconds, not {type(timeout).__name__}")
    t = float(timeout)
    if t != t:
        raise InvalidArgumentError(f"{what} is NaN: give a number of seconds")
    return math.inf if t <= 0 else t


def _ranks(rs: list[int]) -> str:
    """``"rank 2"``, ``"ranks 0, 1, 3"``."""
    return (f"rank {rs[0]}" if len(rs) == 1 else
            "ranks " + ", ".join(str(r) for r in rs))


class Comm:
    """The few collective operations colfile needs, over a communicator.

    ``comm`` is an mpi4py communicator or any object with its lower-case
    methods (``rank``, ``size``, ``barrier``, ``bcast``, ``gather``,
    ``allgather``).  ``serial`` marks the stand-in used without ``comm=``:
    there, :func:`agree` raises errors unchanged (no ``rank N:`` prefix).
    ``timeout`` is the deadline of :meth:`enter` (seconds, ``inf``: none);
    ``owned`` communicators (a File's duplicate of ``user``, the caller's)
    are freed by :meth:`free`.
    """

    def __init__(self, comm: Any, serial: bool = False, *, timeout: float = DEFAULT_TIMEOUT,
                 owned: bool = False, user: Any = None) -> None:
        self.comm = comm
        #: the communicator the caller gave (``comm`` may be its duplicate)
        self.user = comm if user is None else user
        self.rank = int(comm.rank)
        self.size = int(comm.size)
        self.serial = serial
        self.timeout = timeout
        self.owned = owned
        #: why this communicator is out of step (an agreement failed), or None
        self.broken: str | None = None
        # the agreement a deadline gave up on: still progressed (see _drain)
        self._dangling: Any = None

    def __repr__(self) -> str:
        kind = "serial" if self.serial else type(self.comm).__name__
        return f"<colfile.mpi.Comm {kind} rank {self.rank} of {self.size}>"

    def enter(self, op: str, where: str = "") -> None:
        """The agreement step every collective operation starts with: every
        rank sends the id of the operation it is in (a non-blocking
        allgather) and waits for all of them, at most ``timeout`` seconds.

        Raises :class:`~colfile.CollectiveError` naming ``op`` when the
        ranks are in different operations (on every rank: all of them see
        the same ids) or when the deadline passes (on the ranks that wait;
        the communicator is then out of step and every later collective on
        it fails at once).  Independent of the payload of the operation:
        nothing else is sent before every rank is known to be in ``op``.
        """
        if self.size == 1:
            return
        at = f"{where}: " if where else ""
        if self.broken is not None:
            self._drain()
            raise CollectiveError(f"{at}{op} is collective, but this File's communicator is "
                                  f"out of step since an earlier failure ({self.broken}): "
                                  "nothing more is committed; closing the File releases its "
                                  "handles on this rank")
        me = _op_id(op)
        iall = getattr(self.comm, "Iallgather", None)
        if iall is None:  # not mpi4py: a blocking exchange, no deadline
            ids = [int(x) for x in self.comm.allgather(me)]
        else:
            send = np.array([me], np.int64)
            recv = np.zeros(self.size, np.int64)
            req = iall(send, recv)
            if not req.Test():
                start = time.monotonic()
                delay = 1e-5
                while not req.Test():
                    waited = time.monotonic() - start
                    if waited > self.timeout:
                        self._dangling = req
                        self.broken = (f"{op} waited {self.timeout:g} s for the other ranks "
                                       "to call it")
                        raise CollectiveError(
                            f"{at}{op} is collective, but not every rank of the communicator "
                            f"called a collective operation of this File within "
                            f"{self.timeout:g} s (rank {self.rank} waited): every rank must "
                            "make the same collective calls in the same order (the wait is "
                            "File(mpi_timeout=) or COLFILE_MPI_TIMEOUT)")
                    time.sleep(delay)
                    delay = min(delay * 2, 0.01)
            ids = [int(x) for x in recv]
        if any(i != me for i in ids):
            by: dict[int, list[int]] = {}
            for r, i in enumerate(ids):
                by.setdefault(i, []).append(r)
            what = "; ".join(f"{_ranks(rs)} {_OP_NAMES.get(i, f'operation #{i}')}"
                             for i, rs in by.items())
            self.broken = f"ranks called different collective operations: {what}"
            raise CollectiveError(f"{at}{op} is collective, but the ranks called different "
                                  f"collective operations: {what}; every rank must make the "
                                  "same collective calls in the same order")

    def _drain(self) -> None:
        """Progress the agreement this rank gave up on, at most ``timeout``
        seconds more, once: MPI completes a collective only while every
        rank in it makes progress, so the ranks that call an operation
        later learn of the mismatch only if this rank still takes part."""
        req, self._dangling = self._dangling, None
        if req is None:
            return
        start = time.monotonic()
        while not req.Test() and time.monotonic() - start <= self.timeout:
            time.sleep(0.001)

    def barrier(self) -> None:
        if self.size > 1:
            self.comm.barrier()

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj if self.size == 1 else self.comm.bcast(obj, root=root)

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        return [obj] if self.size == 1 else self.comm.gather(obj, root=root)

    def allgather(self, obj: Any) -> list[Any]:
        return [obj] if self.size == 1 else list(self.comm.allgather(obj))

    @property
    def can_aggregate(self) -> bool:
        """True if the communicator can split and gather buffers (mpi4py)."""
        return hasattr(self.comm, "Split") and hasattr(self.comm, "Gatherv")

    @property
    def can_send(self) -> bool:
        """True if the communicator sends buffers point-to-point (mpi4py)."""
        return hasattr(self.comm, "Send") and hasattr(self.comm, "Recv")

    def split(self, color: int, key: int) -> Comm:
        return Comm(self.comm.Split(color, key), timeout=self.timeout)

    def free(self) -> None:
        free = getattr(self.comm, "Free", None)
        if free is not None:
            free()

    def gatherv(self, send: np.ndarray, counts: Sequence[int], root: int = 0) -> np.ndarray | None:
        """Gather byte buffers (``counts[r]`` bytes from rank r) into one
        buffer on ``root``, in rank order."""
        if self.size == 1:
            return send
        recv: Any = None
        out = None
        if self.rank == root:
            out = np.empty(int(sum(counts)), np.uint8)
            displs = np.concatenate([[0], np.cumsum(counts[:-1])]).astype(np.int64)
            recv = [out, (list(map(int, counts)), list(map(int, displs)))]
        self.comm.Gatherv(send, recv, root=root)
        return out


def file_comm(comm: Any, timeout: Any, where: str) -> Comm:
    """The communicator of a File opened with ``comm=``: after the
    agreement step of ``File(...)`` on ``comm``, a duplicate of it (mpi4py)
    that carries colfile's own messages, so that they never meet the
    caller's on ``comm``.  Freed by :meth:`Comm.free` when the File closes."""
    base = as_comm(comm)
    if base.serial:
        return base
    t = resolve_timeout(timeout)
    c = Comm(base.comm, timeout=t)
    c.enter("File(...)", where)
    dup = getattr(base.comm, "Dup", None)
    if dup is None or c.size == 1:
        return c
    return Comm(dup(), timeout=t, owned=True, user=base.comm)


#: The stand-in communicator of serial use (no ``comm=``).
SELF = Comm(_SelfComm(), serial=True)


def as_comm(comm: Any) -> Comm:
    """Wrap ``comm`` (``None`` gives :data:`SELF`)."""
    if comm is None:
        return SELF
    if isinstance(comm, Comm):
        return comm
    for attr in ("rank", "size", "barrier", "bcast", "gather", "allgather"):
        if not hasattr(comm, attr):
            raise TypeError(f"comm= must be an mpi4py communicator (or offer its "
                            f"rank, size, barrier, bcast, gather, allgather); "
                            f"{type(comm).__name__} has no {attr!r}")
    return Comm(comm)
