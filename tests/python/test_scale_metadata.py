"""Metadata calls per blob in a collective write (docs/scale.md): the crash
harness's shim, in count mode, lists every file operation of every rank of
a real ``mpiexec -n 2`` and ``-n 4`` job (the C writer over libcolfile_mpi
and the Python writer over ``colfile.mpi``).  Only the writer of a blob
creates, opens and fsyncs it, once each, through the descriptor it wrote
with; no rank touches a blob it does not write, so rank 0 does as many
blob operations as any other writer, whatever the number of blobs."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import blob_ops


def _blob_ops(tmp_path: Path, writer: str, nranks: int, nfile: int) -> blob_ops.Ops:
    """Per rank: (operation class, blob name) -> count, for one collective
    create of column `a` with `nfile` blobs."""
    build, d, env = blob_ops.prepare(tmp_path, f"{writer}{nranks}")
    exe = build / "tests" / "crash" / "crash_writer_mpi"
    if writer == "c" and not exe.exists():
        pytest.skip("crash_writer_mpi is not built")
    plan = d / "plan.txt"
    plan.write_text("# crashplan 1 seed=3 scale=tiny\n"
                    f"0 create a dtype=<f8 nmemb=3 size={1000 * nfile} nfile={nfile} gen=1 piece={1000 * nfile} "
                    "io=throttled\n")
    args = [str(d / "F"), str(plan), str(d / "log"), "--pids", str(d / "pids")]
    cmd = [str(exe)] + args if writer == "c" else [sys.executable, str(blob_ops.CRASH / "writer.py")] + args + ["--mpi"]
    ops = blob_ops.count(build, d, env, nranks, cmd)
    assert "done 0" in (d / "log").read_text()
    return ops


@pytest.mark.parametrize("writer,nranks,nfile", [("c", 2, 2), ("c", 4, 4), ("py", 2, 2), ("py", 4, 4),
                                                  ("c", 2, 6), ("py", 2, 6)])
def test_only_the_writer_of_a_blob_touches_it(tmp_path: Path, writer: str, nranks: int, nfile: int) -> None:
    # each rank writes an even share of the blobs and touches no other
    ops = _blob_ops(tmp_path, writer, nranks, nfile)
    blob_ops.assert_one_writer_each(ops, nranks, [f"{i:06X}" for i in range(nfile)])
