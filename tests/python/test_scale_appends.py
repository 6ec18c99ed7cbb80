"""Metadata calls per blob in a collective append (docs/scale.md): as for a
collective create (test_scale_metadata.py), only the writer of a new blob
creates, opens and fsyncs it; the rank that grows the column (rank 0)
makes none of the blobs the other ranks write.  The crash harness's shim,
in count mode, lists every file operation of every rank of a real
``mpiexec -n 2`` and ``-n 4`` job of the Python writer over
``colfile.mpi`` (whose append grows the column through the C core's
``cf_column_grow``, as ``cf_mpi_column_grow`` does)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import blob_ops


def _append_ops(tmp_path: Path, nranks: int, nfile: int) -> blob_ops.Ops:
    """Per rank: (operation class, blob name) -> count, for the collective
    append of `nfile` blobs to column `a` (created before, with one blob,
    in a job of its own: only the append is counted)."""
    build, d, env = blob_ops.prepare(tmp_path, f"py{nranks}")
    writer = [sys.executable, str(blob_ops.CRASH / "writer.py")]
    create = d / "create.txt"
    create.write_text("# crashplan 1 seed=3 scale=tiny\n"
                      "0 create a dtype=<f8 nmemb=3 size=500 nfile=1 gen=1 piece=500 io=throttled\n")
    r = subprocess.run(writer + [str(d / "F"), str(create), str(d / "log0")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    plan = d / "plan.txt"
    plan.write_text("# crashplan 1 seed=3 scale=tiny\n"
                    # 4.8 MB per rank: written in turns by each rank (below 4 MiB a
                    # rank, rank 0 would gather and write every row)
                    f"1 append a rows={200_000 * nfile} nfile={nfile} gen=2 piece={200_000 * nfile}\n")
    args = [str(d / "F"), str(plan), str(d / "log"), "--pids", str(d / "pids"), "--mpi"]
    ops = blob_ops.count(build, d, env, nranks, writer + args)
    assert "done 1" in (d / "log").read_text()
    return ops


@pytest.mark.parametrize("nranks,nfile", [(2, 2), (4, 4)])
def test_only_the_writer_of_an_appended_blob_touches_it(tmp_path: Path, nranks: int, nfile: int) -> None:
    # blob 0, committed before, is nobody's business in an append
    ops = _append_ops(tmp_path, nranks, nfile)
    blob_ops.assert_one_writer_each(ops, nranks, [f"{i:06X}" for i in range(1, nfile + 1)])
