"""Metadata calls per blob in a collective write (docs/scale.md): the crash
harness's shim, in count mode, lists every file operation of every rank of
a real ``mpiexec -n 2`` and ``-n 4`` job (the C writer over libcolfile_mpi
and the Python writer over ``colfile.mpi``).  Only the writer of a blob
creates, opens and fsyncs it, once each, through the descriptor it wrote
with; no rank touches a blob it does not write, so rank 0 does as many
blob operations as any other writer, whatever the number of blobs."""
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


def _blob_ops(tmp_path: Path, writer: str, nranks: int, nfile: int) -> dict[int, Counter[tuple[str, str]]]:
    """Per rank: (operation class, blob name) -> count, for one collective
    create of column `a` with `nfile` blobs."""
    build = crash_build()
    if not MPIEXEC.exists():
        if os.environ.get("CI"):
            pytest.fail(f"no mpiexec next to {sys.executable}")
        pytest.skip("no mpiexec")
    exe = build / "tests" / "crash" / "crash_writer_mpi"
    if writer == "c" and not exe.exists():
        pytest.skip("crash_writer_mpi is not built")
    sys.path.insert(0, str(CRASH))
    try:
        import run_crash
    finally:
        sys.path.remove(str(CRASH))
    d = tmp_path / f"{writer}{nranks}"
    (d / "F").mkdir(parents=True)
    (d / "rep").mkdir()
    (d / "pids").mkdir()
    plan = d / "plan.txt"
    plan.write_text("# crashplan 1 seed=3 scale=tiny\n"
                    f"0 create a dtype=<f8 nmemb=3 size={1000 * nfile} nfile={nfile} gen=1 piece={1000 * nfile} "
                    "io=throttled\n")
    args = [str(d / "F"), str(plan), str(d / "log"), "--pids", str(d / "pids")]
    cmd = [str(exe)] + args if writer == "c" else [sys.executable, str(CRASH / "writer.py")] + args + ["--mpi"]
    env = child_env()
    if env.get("COLFILE_LIBRARY"):
        env["COLFILE_LIBRARY"] = str(Path(env["COLFILE_LIBRARY"]).resolve())
    env.pop("LD_PRELOAD", None)
    full = [str(MPIEXEC), "-n", str(nranks), "-genv", "LD_PRELOAD", str(build / "tests/crash/faultshim.so"),
            "-genv", "CF_FAULT_SCOPE", str(d / "F"), "-genv", "CF_FAULT_MODE", "count",
            "-genv", "CF_FAULT_REPORT", str(d / "rep" / "r.%p")] + cmd
    r = subprocess.run(full, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "done 0" in (d / "log").read_text()
    out: dict[int, Counter[tuple[str, str]]] = {}
    for rank, rep in run_crash.parse_reports(d / "rep").items():
        c: Counter[tuple[str, str]] = Counter()
        for _, cls, path in rep["io"]:
            leaf = path.split(" -> ")[0].rsplit("/", 1)[-1]
            if len(leaf) == 6 and all(ch in "0123456789ABCDEF" for ch in leaf):
                c[(cls, leaf)] += 1
        out[rank] = c
    return out


@pytest.mark.parametrize("writer,nranks,nfile", [("c", 2, 2), ("c", 4, 4), ("py", 2, 2), ("py", 4, 4),
                                                  ("c", 2, 6), ("py", 2, 6)])
def test_only_the_writer_of_a_blob_touches_it(tmp_path: Path, writer: str, nranks: int, nfile: int) -> None:
    ops = _blob_ops(tmp_path, writer, nranks, nfile)
    assert sorted(ops) == list(range(nranks)), ops
    owners: dict[str, int] = {}
    for rank, c in ops.items():
        for (cls, blob), n in c.items():
            owners.setdefault(blob, rank)
            assert owners[blob] == rank, f"blob {blob}: touched by ranks {owners[blob]} and {rank}: {ops}"
    assert sorted(owners) == [f"{i:06X}" for i in range(nfile)], ops
    for rank, c in ops.items():
        blobs = sorted({b for _, b in c})
        # each rank writes an even share of the blobs and touches no other
        assert len(blobs) == nfile // nranks, f"rank {rank} touched {blobs}: {dict(c)}"
        for blob in blobs:
            # made and opened once (O_CREAT), written, fsynced once through
            # that descriptor: no open by path to fsync at the close
            opens = c[("create", blob)] + c[("open", blob)]
            assert opens == 1, f"rank {rank} opened {blob} {opens} times: {dict(c)}"
            assert c[("fsync", blob)] == 1, dict(c)
            assert c[("write", blob)] >= 1, dict(c)
