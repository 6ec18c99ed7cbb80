"""colfile.mpi's close of a large column by chunk owners, the steps
libcolfile-mpi takes (``src/mpi/mpi_owners.c``), so that both write the
same bytes: rank 0 gathers per-blob summaries; the statistics and chunk
CRC32C of each chunk go to its owner (the rank whose rows it starts in),
which writes its records of the chunk index and sends rank 0 one summary
per page of 256 records above them: into the staging directory for a new
column; for an append to or an update of a committed column into a
temporary beside its index, the records of the blobs not written copied
from that index, and rank 0's commit renames it into place.  Rank 0 thus
receives bytes that follow the blobs, the ranks and the pages, never the
chunks.  Columns whose statistics the text holds (or that the commit
reads back: a blob written in part) end as the gathering close: rank 0
takes the other owners' parts.

The calls need mpi4py's ``alltoall`` and ``reduce`` besides the calls of
:mod:`colfile.mpi`; a communicator without them closes the gathering
way."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core import column as _c
from ._core import owners as _o
from .errors import StorageError

#: bytes rank 0 received in closes by owners and in the gathers of
#: appends so far (for the tests)
root_bytes = 0
#: closes whose owners wrote the chunk index so far (for the tests)
index_closes = 0
#: set by the tests: every column closes the gathering way
gather_all = False


def usable(comm: Any) -> bool:
    """Whether ``comm`` has the calls a close by owners makes."""
    raw = getattr(comm, "comm", comm)
    return not gather_all and comm.size > 1 and hasattr(raw, "alltoall") and hasattr(raw, "reduce")


def close(comm: Any, col: Any, agree: Any) -> None:
    """The steps before rank 0's commit (``agree``: colfile.mpi's, raising
    on every rank what any rank met).  Rank 0's own failures after the
    last collective step are raised on rank 0 alone, for the caller's
    last agreement."""
    global root_bytes, index_closes
    raw = getattr(comm, "comm", comm)
    rank, size = comm.rank, comm.size
    nfile = int(col._call(_c.nfile))
    total = int(col._call(_c.size))
    first = col._call(_o.first_row)
    # rank 0's state stays in its handle; the others hand theirs over
    state = agree(comm, lambda: col._call(_o.peek) if rank == 0 else col._pending_export())
    firsts = comm.allgather(first)
    cut = _o.cuts(firsts, total)
    summary, parts = agree(comm, lambda: col._call(_o.split, state, cut))
    del state
    # 1. the summaries to rank 0, in rank order
    sums = comm.gather(summary if rank else b"", root=0)
    # 2. the parts to their owners, each rank's own included, all merged in
    # rank order (as the gathering close merges whole states)
    got = raw.alltoall(parts)

    def merge() -> None:
        global root_bytes
        if rank == 0:
            root_bytes += sum(len(s) for s in sums) + sum(len(p) for p in got[1:])
            for s in sums[1:]:
                if s:
                    col._pending_merge(s)
        col._call(_o.begin, summary)
        for p in got:
            if p:
                col._pending_merge(p)
        return None

    agree(comm, merge)
    # 3. whose statistics the owners hold whole, and rank 0's plan
    least = raw.reduce(col._call(_o.holds, cut, rank, nfile), op=np.minimum, root=0)
    if rank == 0:
        root_bytes += nfile
    owners, valid, where = agree(comm, lambda: col._call(_o.plan, least, nfile), root=0)
    if owners:
        index_closes += 1
        # 4a. each owner writes its records; rank 0 joins the pages above
        pieces = agree(comm, lambda: col._call(_o.index_write, where, valid, cut, rank))
        every = comm.gather(pieces, root=0)
        if rank == 0:
            root_bytes += sum(len(p) for p in every)
            col._call(_o.index_finish, b"".join(every))
    else:
        # 4b. rank 0 takes every other owner's parts, each rank's (its own
        # first) in rank order, each part on its own
        every = comm.gather([p for p in parts[1:] if p], root=0)
        if rank == 0:
            root_bytes += sum(len(p) for mine in every[1:] for p in mine)
            for mine in every:
                for p in mine:
                    col._pending_merge(p)


def merge_pending(comm: Any, col: Any, agree: Any) -> None:
    """Every rank's uncommitted write state moves to rank 0's handle
    (``cf_column_pending_export``/``merge``, as at a collective close),
    nothing committed: an append's step before rank 0 grows the column
    (an empty state is a few bytes, so that rank 0 receives O(ranks)
    here).  On failure rank 0 gives up every uncommitted change of the
    column (a rank's rows may be lost) and every rank raises."""
    global root_bytes
    failure: BaseException | None = None
    state: bytes | None = b""
    if comm.rank != 0:
        try:
            state = col._pending_export()
        except Exception as exc:
            failure, state = exc, None
    states = comm.gather(state, root=0)
    if comm.rank == 0 and states is not None:
        root_bytes += sum(len(st) for st in states[1:] if st)
        try:
            if any(st is None for st in states[1:]):
                failure = StorageError("a rank failed to hand over its writes (see its error)")
            for st in states[1:]:
                if st and failure is None:
                    col._pending_merge(st)
        except Exception as exc:
            failure = exc
    try:
        agree(comm, failure=failure)
    except BaseException:
        if comm.rank == 0:
            col._discard()
        raise
