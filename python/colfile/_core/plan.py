"""The parallel planning functions of the core (``cf_plan_*``): pure
arithmetic, the same for the C MPI layer and colfile.mpi."""

from __future__ import annotations

import numpy as np

from .._ffi import ffi, lib
from ._errors import check, new_error
from .memory import int64_ptr

__all__ = ["share", "nfile", "blobs_by_rank", "turn", "groups", "mode"]


def share(total: int, parts: int, i: int) -> tuple[int, int]:
    """``(first, count)`` of share ``i`` of ``total`` over ``parts``
    (``cf_plan_share``)."""
    first = ffi.new("int64_t *")
    n = lib().cf_plan_share(total, parts, i, first)
    return int(first[0]), int(n)


def nfile(total_bytes: int, nranks: int, blob_bytes: int = 0) -> int:
    """Blobs for ``total_bytes`` written by ``nranks`` (``cf_plan_nfile``)."""
    return int(lib().cf_plan_nfile(total_bytes, nranks, blob_bytes))


def blobs_by_rank(rows: np.ndarray, nfile: int) -> list[int]:
    """Rows per blob, boundaries on rank boundaries
    (``cf_plan_blobs_by_rank``); ``rows``: contiguous int64 per rank."""
    out = np.zeros(max(int(nfile), 0), np.int64)
    err = new_error()
    check(lib().cf_plan_blobs_by_rank(int64_ptr(rows), len(rows), nfile, int64_ptr(out),
                                      err), err)
    return [int(x) for x in out]


def turn(rank: int, nranks: int, concurrency: int) -> tuple[int, int]:
    """``(turn, nturns)`` of gang throttling (``cf_plan_turn``)."""
    nturns = ffi.new("int64_t *")
    t = lib().cf_plan_turn(rank, nranks, concurrency, nturns)
    return int(t), int(nturns[0])


def groups(rank_bytes: np.ndarray, group_bytes: int = 0) -> list[int]:
    """The aggregation leader of each rank (``cf_plan_groups``);
    ``rank_bytes``: contiguous int64."""
    out = np.zeros(len(rank_bytes), np.int64)
    err = new_error()
    check(lib().cf_plan_groups(int64_ptr(rank_bytes), len(rank_bytes), group_bytes,
                               int64_ptr(out), err), err)
    return [int(x) for x in out]


def mode(total_bytes: int, nranks: int, small_bytes: int = 0) -> int:
    """The ``enum cf_io_mode`` automatic mode picks (``cf_plan_mode``)."""
    return int(lib().cf_plan_mode(total_bytes, nranks, small_bytes))
