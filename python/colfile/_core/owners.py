"""A collective close by chunk owners (``colfile_binding.h``, "Closing by
chunk owners"): the steps colfile.mpi runs, as libcolfile-mpi does, so
that the committing rank receives per-blob summaries and one summary per
page of the chunk index, never every chunk's statistics.  ``h`` is a
column handle; cuts, holds and validity flags travel as bytes and int64
arrays between ranks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._ffi import ffi, lib
from ._errors import check, new_error
from .memory import int64_ptr, take_bytes

__all__ = ["peek", "first_row", "cuts", "split", "begin", "wanted", "holds", "plan", "index_write",
           "index_finish"]


def peek(h: Any) -> bytes:
    """The handle's pending write state, the handle left as it is
    (``cf_column_pending_peek``)."""
    err = new_error()
    L = lib()
    return take_bytes(lambda buf, n: check(L.cf_column_pending_peek(h, buf, n, err), err))


def first_row(h: Any) -> int:
    """The first row the handle's uncommitted writes touch, -1: none."""
    return int(lib().cf_column_pending_first_row(h))


def cuts(first: Sequence[int], total: int) -> np.ndarray:
    """The owners' cuts (nranks + 1 int64) from each rank's first row."""
    f = np.ascontiguousarray(first, dtype=np.int64)
    out = np.zeros(len(f) + 1, np.int64)
    lib().cf_plan_owner_cuts(int64_ptr(f), len(f), total, int64_ptr(out))
    return out


def split(h: Any, state: bytes, cut: np.ndarray) -> tuple[bytes, list[bytes]]:
    """``(summary, parts)``: ``parts[r]`` the bytes for owner ``r``."""
    nranks = len(cut) - 1
    lens = np.zeros(nranks, np.int64)
    summary = ffi.new("void **")
    slen = ffi.new("size_t *")
    parts = ffi.new("void **")
    err = new_error()
    L = lib()
    try:
        check(L.cf_column_pending_split(h, state, len(state), int64_ptr(cut), nranks, summary, slen, parts,
                                        int64_ptr(lens), err), err)
        s = bytes(ffi.buffer(summary[0], slen[0])) if slen[0] else b""
        total = int(lens.sum())
        whole = bytes(ffi.buffer(parts[0], total)) if total else b""
    finally:
        for p in (summary[0], parts[0]):
            if p != ffi.NULL:
                L.cf_free(p)
    at = np.concatenate([[0], np.cumsum(lens)])
    return s, [whole[int(at[r]):int(at[r + 1])] for r in range(nranks)]


def begin(h: Any, summary: bytes) -> None:
    """Forget what the handle holds of the blobs its own state wrote (its
    parts bring it back, in rank order with the others')."""
    err = new_error()
    check(lib().cf_column_owner_begin(h, summary, len(summary), err), err)


def wanted(h: Any) -> bool:
    """Whether the column is large enough to close by chunk owners."""
    return bool(lib().cf_column_owners_wanted(h))


def holds(h: Any, cut: np.ndarray, rank: int, nfile: int) -> np.ndarray:
    """Per blob (uint8): 0 where ``rank`` owns chunks whose statistics the
    handle does not hold."""
    out = np.zeros(max(nfile, 1), np.uint8)
    lib().cf_column_owner_holds(h, int64_ptr(cut), len(cut) - 1, rank, ffi.from_buffer(out))
    return out[:nfile]


def plan(h: Any, least: np.ndarray, nfile: int) -> tuple[bool, bytes, str]:
    """The committing handle's plan: ``(owners write the index, flags per
    blob (bit 0: statistics known, bit 1: records copied from the
    committed index), the file the owners write)``."""
    least = np.ascontiguousarray(least, dtype=np.uint8)
    valid = np.zeros(max(nfile, 1), np.uint8)
    owners = ffi.new("int *")
    d = ffi.new("const char **")
    err = new_error()
    check(lib().cf_column_owner_plan(h, ffi.from_buffer(np.concatenate([least, [0]]).astype(np.uint8)),
                                     ffi.from_buffer(valid), owners, d, err), err)
    return bool(owners[0]), valid[:nfile].tobytes(), ffi.string(d[0]).decode("utf-8", "surrogateescape")


def index_write(h: Any, file: str, valid: bytes, cut: np.ndarray, rank: int) -> bytes:
    """An owner writes its chunks' index records into ``file``; their
    pages' summaries."""
    err = new_error()
    L = lib()
    v = valid + b"\0"
    return take_bytes(lambda buf, n: check(L.cf_column_owner_index_write(
        h, file.encode("utf-8", "surrogateescape"), v, int64_ptr(cut), len(cut) - 1, rank, buf, n, err), err))


def index_finish(h: Any, pieces: bytes) -> None:
    """The committing handle takes every owner's page summaries, in rank
    order."""
    err = new_error()
    check(lib().cf_column_owner_index_finish(h, pieces, len(pieces), err), err)
