"""How query work is split: over the ranks of a communicator (one plan,
made on rank 0 and broadcast, then contiguous runs of cells of about equal
work per rank) and into groups of cells for dask tasks.  Shared by
:mod:`colfile.query` and :mod:`colfile.histograms`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import mpi as _mpi
from ._expr import NONE, SOME, Field, Predicate
from ._scan import Plan

__all__ = ["comm_of", "plan", "share", "groups", "sub_arrays", "GROUP_BYTES"]

#: Data (bytes of the referenced columns) per dask task of a query or
#: histogram.
GROUP_BYTES = 64 << 20


def comm_of(fields: Sequence[Field]) -> _mpi.Comm:
    """The communicator of the Files of ``fields``: one parallel one, or
    serial (``ValueError`` when they mix communicators)."""
    comms = {id(f.column._comm): f.column._comm for f in fields}
    parallel = [c for c in comms.values() if not c.serial]
    if len(comms) > 1 and parallel:
        raise ValueError("the columns of a parallel query must all belong to Files opened "
                         "on the same communicator")
    return next(iter(comms.values())) if comms else _mpi.SELF


def plan(pred: Predicate | None, fields: list[Field], comm: _mpi.Comm) -> Plan:
    """The plan; under MPI made on rank 0 (which alone reads the statistics)
    and broadcast, so that every rank cuts the rows into the same cells."""
    if comm.serial or comm.size == 1:
        return Plan(pred, fields)
    box: list[Plan] = []

    def on_root() -> dict[str, Any]:
        p = Plan(pred, fields)
        box.append(p)
        return p.arrays()

    arrays = _mpi.agree(comm, on_root, root=0)
    return _mpi.agree(comm, lambda: box[0] if comm.rank == 0 else  # type: ignore[no-any-return]
                      Plan(pred, fields, arrays))


def work(p: Plan, read_all: bool) -> np.ndarray:
    """Rows each cell makes a rank read: SOME cells, and ALL cells too when
    ``read_all`` (histograms read their fields there)."""
    rows = np.diff(p.bounds)
    busy = p.state == SOME if not read_all else p.state != NONE
    # a little for every cell, so that ranks also share the undecided-free ones
    return np.where(busy, rows, 0).astype(np.float64) + 1.0


def share(p: Plan, comm: _mpi.Comm, read_all: bool = True) -> tuple[int, int]:
    """This rank's cells ``k0..k1-1``: contiguous, in rank order, of about
    equal work (the same cut on every rank)."""
    n = p.ncells
    if comm.serial or comm.size == 1 or n == 0:
        return 0, n
    cum = np.cumsum(work(p, read_all))
    total = float(cum[-1])
    cuts = np.searchsorted(cum, total * np.arange(1, comm.size) / comm.size, side="left")
    edges = np.concatenate([[0], np.minimum(cuts + 1, n), [n]])
    edges = np.maximum.accumulate(edges)
    return int(edges[comm.rank]), int(edges[comm.rank + 1])


def groups(p: Plan, group_bytes: int) -> list[tuple[int, int]]:
    """Consecutive cells in groups of about ``group_bytes`` of column data,
    leaving out groups of NONE cells only (one dask task each)."""
    rowbytes = sum(p.rowbytes.values())
    sizes = np.diff(p.bounds) * rowbytes
    out = []
    k = 0
    n = p.ncells
    while k < n:
        acc = 0
        j = k
        while j < n and (j == k or acc + sizes[j] <= group_bytes):
            acc += int(sizes[j])
            j += 1
        if (p.state[k:j] != NONE).any():
            out.append((k, j))
        k = j
    return out


def sub_arrays(p: Plan, k0: int, k1: int) -> dict[str, Any]:
    """The plan's arrays for cells ``k0..k1-1`` (a task rebuilds its plan
    from them)."""
    return {"bounds": p.bounds[k0:k1 + 1], "state": p.state[k0:k1],
            "leaf_state": p.leaf_state[:, k0:k1], "field_stats": None}
