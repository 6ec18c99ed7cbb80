"""What the scale tests of collective writes share: a job run under
``mpiexec`` with the crash harness's shim (tests/crash) in count mode, the
blob operations each rank made, and the check that every blob has exactly
one rank that touches it, once each to make, write and fsync it."""
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

#: per rank: (operation class, blob name) -> count
Ops = dict[int, Counter[tuple[str, str]]]


def prepare(tmp_path: Path, tag: str) -> tuple[Path, Path, dict[str, str]]:
    """The build with the shim, a job directory (File ``F``, ``rep`` for the
    shim's reports, ``pids``) and the environment of the job's processes;
    skipped without mpiexec (a failure under CI)."""
    build = crash_build()
    if not MPIEXEC.exists():
        if os.environ.get("CI"):
            pytest.fail(f"no mpiexec next to {sys.executable}")
        pytest.skip("no mpiexec")
    d = tmp_path / tag
    for sub in ("F", "rep", "pids"):
        (d / sub).mkdir(parents=True)
    env = child_env()
    if env.get("COLFILE_LIBRARY"):
        env["COLFILE_LIBRARY"] = str(Path(env["COLFILE_LIBRARY"]).resolve())
    env.pop("LD_PRELOAD", None)
    return build, d, env


def count(build: Path, d: Path, env: dict[str, str], nranks: int, cmd: list[str]) -> Ops:
    """Run `cmd` on `nranks` ranks with every file operation below ``d/F``
    counted; the blob operations of each rank."""
    sys.path.insert(0, str(CRASH))
    try:
        import run_crash
    finally:
        sys.path.remove(str(CRASH))
    full = [str(MPIEXEC), "-n", str(nranks), "-genv", "LD_PRELOAD", str(build / "tests/crash/faultshim.so"),
            "-genv", "CF_FAULT_SCOPE", str(d / "F"), "-genv", "CF_FAULT_MODE", "count",
            "-genv", "CF_FAULT_REPORT", str(d / "rep" / "r.%p")] + cmd
    r = subprocess.run(full, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out: Ops = {}
    for rank, rep in run_crash.parse_reports(d / "rep").items():
        c: Counter[tuple[str, str]] = Counter()
        for _, cls, path in rep["io"]:
            leaf = path.split(" -> ")[0].rsplit("/", 1)[-1]
            if len(leaf) == 6 and all(ch in "0123456789ABCDEF" for ch in leaf):
                c[(cls, leaf)] += 1
        out[rank] = c
    return out


def assert_one_writer_each(ops: Ops, nranks: int, blobs: list[str]) -> None:
    """Every blob in `blobs` (and no other) touched by one rank only, each
    rank an even share of them, each made or opened once, written, and
    fsynced once through that descriptor (no open by path at the close)."""
    assert sorted(ops) == list(range(nranks)), ops
    owners: dict[str, int] = {}
    for rank, c in ops.items():
        for (cls, blob), n in c.items():
            assert blob in blobs, f"rank {rank} touched {blob}, which the job does not write: {dict(c)}"
            owners.setdefault(blob, rank)
            assert owners[blob] == rank, f"blob {blob}: touched by ranks {owners[blob]} and {rank}: {ops}"
    assert sorted(owners) == sorted(blobs), ops
    for rank, c in ops.items():
        touched = sorted({b for _, b in c})
        assert len(touched) == len(blobs) // nranks, f"rank {rank} touched {touched}: {dict(c)}"
        for blob in touched:
            opens = c[("create", blob)] + c[("open", blob)]
            assert opens == 1, f"rank {rank} opened {blob} {opens} times: {dict(c)}"
            assert c[("fsync", blob)] == 1, dict(c)
            assert c[("write", blob)] >= 1, dict(c)
