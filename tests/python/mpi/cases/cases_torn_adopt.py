"""A column of a File reopened with comm= that the other ranks start to
rewrite in place (f[name], each rank alone) before rank 0 opens it.

Their in-place writes mark the column torn; rank 0, the rank that commits,
then opens it over that marker.  The result must not depend on that order:
the merged commit equals the serial writer's byte for byte, byte sums
included (they count every byte ever written: docs/format.md section 6), as
when rank 0 opens the column first (cases_io's independent writes).  The
order is made certain here by a barrier between the other ranks' writes and
rank 0's open; without it, it is a race that rank 0 loses under load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import tree

import colfile


def agreed(comm: Any, failure: str | None) -> None:
    """Raise on every rank the first rank's failure."""
    failures = [f for f in comm.allgather(failure) if f]
    assert not failures, failures[0]


def build(path: Path, total: int, ids: np.ndarray, comm: Any = None) -> None:
    """The column the cases rewrite: two blobs, written once and closed."""
    with colfile.File(path, "w", comm=comm) as f:
        c = f.create("i", "i8", size=total, nfile=2)
        if comm is None:
            c[:] = ids
        else:
            c[comm.rank::comm.size] = ids[comm.rank::comm.size]


@pytest.mark.parametrize("root_writes", [True, False], ids=["root-writes", "root-idle"])
def test_root_opens_after_the_others_rewrote(comm: Any, shared: Path, root_writes: bool) -> None:
    if comm.size < 2:
        pytest.skip("needs a rank besides rank 0")
    total = 6 * comm.size + 5
    ids = np.arange(total) * 11
    new = ids + 1
    # ranks that rewrite rows: all, or all but rank 0
    writers = list(range(comm.size)) if root_writes else list(range(1, comm.size))
    build(shared / "par", total, ids, comm)
    mine = np.arange(total)[writers.index(comm.rank)::len(writers)] if comm.rank in writers else None
    failure: str | None = None
    took_torn = False
    with colfile.File(shared / "par", "r+", comm=comm) as f:
        if comm.rank != 0:
            e = f["i"]
            assert mine is not None
            e[mine] = new[mine]  # in place over committed rows: marks the column torn
            assert (shared / "par" / "i" / "colfile-torn").exists()
        comm.barrier()  # every other rank has rewritten its rows
        if comm.rank == 0:
            e = f["i"]  # opened over the marker the other ranks made
            took_torn = e.torn
            if mine is not None:
                e[mine] = new[mine]
    if comm.rank == 0:
        build(shared / "ser", total, ids)
        with colfile.File(shared / "ser", "r+") as f:
            c = f["i"]
            for r in range(len(writers)):
                rows = np.arange(total)[r::len(writers)]
                c[rows] = new[rows]
        with colfile.File(shared / "par") as f, colfile.File(shared / "ser") as g:
            par, ser = f["i"], g["i"]
            if not np.array_equal(par[:], new):
                failure = f"read {par[:]!r}, wrote {new!r}"
            elif par.torn or (shared / "par" / "i" / "colfile-torn").exists():
                failure = "the commit left the column marked torn"
            elif par.ext_state != "current":
                failure = f"colfile-v1 is {par.ext_state}, not current"
            elif [x["sum"] for x in par.checksums()] != [x["sum"] for x in ser.checksums()]:
                # the byte sums count the bytes of the first write too
                failure = (f"byte sums {[x['sum'] for x in par.checksums()]}, the serial "
                           f"writer's {[x['sum'] for x in ser.checksums()]}")
            elif any(not par.verify_blob(b) <= {"OK", "SUM_MISMATCH"} for b in range(par.nfile)):
                failure = f"blobs {[par.verify_blob(b) for b in range(par.nfile)]}"
            elif tree(shared / "par") != tree(shared / "ser"):
                failure = "the File differs from the serial writer's"
            elif took_torn:
                failure = "rank 0 took its ranks' update under way for an interrupted one"
    agreed(comm, comm.bcast(failure, root=0))
