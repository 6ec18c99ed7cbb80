"""Metadata calls per blob in a collective append (docs/scale.md): as for a
collective create (test_scale_metadata.py), only the writer of a new blob
creates, opens and fsyncs it; the rank that grows the column (rank 0)
makes none of the blobs the other ranks write.  The crash harness's shim,
in count mode, lists every file operation of every rank of a real
``mpiexec -n 2`` and ``-n 4`` job of the Python writer over
``colfile.mpi`` (whose append grows the column through the C core's
``cf_column_grow``, as ``cf_mpi_column_grow`` does)."""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from childenv import child_env
from shims import crash_build

REPO = Path(__file__).resolve().parents[2]
CRASH = REPO / "tests" / "crash"
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def _append_ops(tmp_path: Path, nranks: int, nfile: int) -> dict[int, Counter[tuple[str, str]]]:
    """Per rank: (operation class, blob name) -> count, for the collective
    append of `nfile` blobs to column `a` (created before, with one blob,
    in a job of its own: only the append is counted)."""
    build = crash_build()
    if not MPIEXEC.exists():
        if os.environ.get("CI"):
            pytest.fail(f"no mpiexec next to {sys.executable}")
        pytest.skip("no mpiexec")
    sys.path.insert(0, str(CRASH))
    try:
        import run_crash
    finally:
        sys.path.remove(str(CRASH))
    d = tmp_path / f"py{nranks}"
    (d / "F").mkdir(parents=True)
    (d / "rep").mkdir()
    (d / "pids").mkdir()
    env = child_env()
    if env.get("COLFILE_LIBRARY"):
        env["COLFILE_LIBRARY"] = str(Path(env["COLFILE_LIBRARY"]).resolve())
    env.pop("LD_PRELOAD", None)
    writer = [sys.executable, str(CRASH / "writer.py")]
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
    full = [str(MPIEXEC), "-n", str(nranks), "-genv", "LD_PRELOAD", str(build / "tests/crash/faultshim.so"),
            "-genv", "CF_FAULT_SCOPE", str(d / "F"), "-genv", "CF_FAULT_MODE", "count",
            "-genv", "CF_FAULT_REPORT", str(d / "rep" / "r.%p")] + writer + [
                str(d / "F"), str(plan), str(d / "log"), "--pids", str(d / "pids"), "--mpi"]
    r = subprocess.run(full, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "done 1" in (d / "log").read_text()
    out: dict[int, Counter[tuple[str, str]]] = {}
    for rank, rep in run_crash.parse_reports(d / "rep").items():
        c: Counter[tuple[str, str]] = Counter()
        for _, cls, path in rep["io"]:
            leaf = path.split(" -> ")[0].rsplit("/", 1)[-1]
            if len(leaf) == 6 and all(ch in "0123456789ABCDEF" for ch in leaf):
                c[(cls, leaf)] += 1
        out[rank] = c
    return out


@pytest.mark.parametrize("nranks,nfile", [(2, 2), (4, 4)])
def test_only_the_writer_of_an_appended_blob_touches_it(tmp_path: Path, nranks: int, nfile: int) -> None:
    ops = _append_ops(tmp_path, nranks, nfile)
    assert sorted(ops) == list(range(nranks)), ops
    new = [f"{i:06X}" for i in range(1, nfile + 1)]
    owners: dict[str, int] = {}
    for rank, c in ops.items():
        for (cls, blob), n in c.items():
            # blob 0, committed before, is nobody's business in an append
            assert blob in new, f"rank {rank} touched {blob}, which the append does not write: {dict(c)}"
            owners.setdefault(blob, rank)
            assert owners[blob] == rank, f"blob {blob}: touched by ranks {owners[blob]} and {rank}: {ops}"
    assert sorted(owners) == new, ops
    for rank, c in ops.items():
        blobs = sorted({b for _, b in c})
        assert len(blobs) == nfile // nranks, f"rank {rank} touched {blobs}: {dict(c)}"
        for blob in blobs:
            opens = c[("create", blob)] + c[("open", blob)]
            assert opens == 1, f"rank {rank} opened {blob} {opens} times: {dict(c)}"
            assert c[("fsync", blob)] == 1, dict(c)
            assert c[("write", blob)] >= 1, dict(c)
