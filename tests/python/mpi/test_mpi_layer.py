"""colfile's MPI layer (colfile.mpi, File(..., comm=)) under real MPI.

The cases in ``cases/`` (``cases_*.py``) run on every rank of ``mpiexec -n
N`` for N = 1, 2 and 4, through ``cases/run_rank.py``, which writes a JUnit
report per rank; every rank must pass every case.  ``colfile iosim`` is run
the same way.  Nothing is mocked: these are real MPI runs (MPICH from pip,
oversubscribed if need be).  Without mpiexec or mpi4py the tests skip, and
under CI they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from junitreport import junit
from mpirun import c_iosim, child_env, launch, mpiexec, unavailable

CASES = Path(__file__).parent / "cases"


@pytest.fixture(scope="module")
def case_ids(lib: Any) -> list[str]:
    """The cases, as collected without MPI (so a case module that fails to
    import on the ranks, or a case that silently vanishes, is noticed)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(CASES), "--confcutdir", str(CASES), "-o", "python_files=cases_*.py",
         "-o", "testpaths=", str(CASES)],
        cwd=CASES, env=child_env(), capture_output=True, text=True, timeout=120)
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert proc.returncode == 0 and ids, proc.stdout[-3000:] + proc.stderr[-3000:]
    return ids


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_cases_on_every_rank(nranks: int, tmp_path: Path, case_ids: list[str]) -> None:
    mpiexec()
    out = tmp_path / "reports"
    out.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    # a collective some rank never makes fails within a minute, not 300 s
    proc = launch(nranks, [sys.executable, CASES / "run_rank.py", out], cwd=CASES,
                  env=child_env(COLFILE_MPI_TMP=str(work),
                                COLFILE_MPI_TIMEOUT=os.environ.get("COLFILE_MPI_TIMEOUT", "60")))
    logs = "\n".join(f"--- rank {r} ---\n" + (out / f"out-{r}.txt").read_text()[-6000:]
                     for r in range(nranks) if (out / f"out-{r}.txt").exists())
    results = []
    for rank in range(nranks):
        report = out / f"report-{rank}.xml"
        assert report.exists(), f"rank {rank} wrote no report\n{proc.stdout[-3000:]}" \
                                f"{proc.stderr[-3000:]}\n{logs}"
        res = junit(report, qualified=True)
        assert res["failed"] == [], f"rank {rank} failed {res['failed']}\n{logs}"
        results.append(res)
    # the same cases ran on every rank, all that were collected
    for res in results:
        assert res == results[0]
    ran = len(results[0]["passed"]) + len(results[0]["skipped"])
    assert ran == len(case_ids), (results[0], case_ids)
    # a case may skip only where one rank cannot show it
    if nranks > 1:
        assert results[0]["skipped"] == []
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:] + logs


# ---------------------------------------------------------------------------
# colfile iosim


def iosim(nranks: int | None, *args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "colfile.cli", "iosim", *args]
    env = child_env(TMPDIR=str(tmp))
    if nranks is None:  # no MPI at all
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    return launch(nranks, cmd, env=env)


def check_write_cpu(report: dict[str, Any]) -> None:
    """The write phase's CPU figures: present, not negative, and
    write_cpu_per_wall = write_cpu_seconds / write_seconds (each printed to
    6 decimals)."""
    cpu, per, wall = (report["write_cpu_seconds"], report["write_cpu_per_wall"],
                      report["write_seconds"])
    assert isinstance(cpu, float) and isinstance(per, float), report
    assert cpu >= 0 and per >= 0, report
    if wall > 0:
        assert per * wall == pytest.approx(cpu, rel=1e-3, abs=1e-5), report
    else:
        assert per == 0, report


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_iosim_small(nranks: int, tmp_path: Path, lib: Any) -> None:
    mpiexec()
    proc = iosim(nranks, "--load", "small", "--json", tmp=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout  # rank 0 reports, once
    report = json.loads(lines[0])
    assert report["ranks"] == nranks and report["rows_per_rank"] == 4096
    assert report["rows"] == 4096 * nranks and report["bytes"] == 4 * 4096 * nranks
    assert report["dtype"] == "<i4" and report["nmemb"] == 1
    assert report["verified"] is True and report["mismatched_bytes"] == 0
    assert report["mode"] == "auto"
    assert report["mode_used"] == ("throttled" if nranks == 1 else "aggregated")
    assert report["nfile"] == 1 and report["concurrency"] == 64
    for phase in ("create", "write", "read"):
        assert report[f"{phase}_seconds"] >= 0
    assert 0 <= report["write_data_seconds"] <= report["write_seconds"]
    assert report["write_GBps"] >= 0 and report["read_GBps"] >= 0
    check_write_cpu(report)
    assert report["durable"] is False  # page-cache figures unless --durable
    assert report["kept"] is False and not os.path.exists(report["path"])
    assert list(tmp_path.glob("colfile-iosim-*")) == []  # the temporary File is gone


def test_iosim_options_and_text_report(tmp_path: Path, lib: Any) -> None:
    mpiexec()
    path = tmp_path / "sim"
    proc = iosim(2, "--rows", "1000", "--dtype", "f8", "--nmemb", "3", "--mode",
                 "throttled", "--nfile", "2", "--concurrency", "1", "--keep", str(path),
                 tmp=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    assert text.startswith("colfile iosim: 2 ranks x 1000 rows of <f8 x 3 = 48000 bytes\n")
    assert "mode throttled (throttled), nfile 2, concurrency 1" in text and "(kept)" in text
    for phase in ("create", "write", "read"):
        assert f"  {phase} " in text
    assert " cores busy writing (user+system, all ranks and threads)\n" in text
    assert "verify ok" in text
    import colfile

    with colfile.File(path) as f:
        col = f["iosim"]
        assert col.shape == (2000, 3) and col.nfile == 2
        assert all(col.verify_blob(i) == {"OK"} for i in range(2))


def test_iosim_durable_and_same_report_as_c(tmp_path: Path, lib: Any) -> None:
    """--durable is reported; the C colfile-iosim (if built) prints a JSON
    report with the same fields."""
    mpiexec()
    proc = iosim(2, "--rows", "100", "--durable", "--json", tmp=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.splitlines()[0])
    assert report["durable"] is True and report["verified"] is True
    exe = c_iosim()
    cproc = launch(2, [str(exe), "--rows", "100", "--durable", "--json"],
                   env=child_env(TMPDIR=str(tmp_path)))
    assert cproc.returncode == 0, cproc.stdout + cproc.stderr
    creport = json.loads(cproc.stdout.splitlines()[0])
    assert sorted(creport) == sorted(report)
    for r in (report, creport):
        assert "write_cpu_seconds" in r and "write_cpu_per_wall" in r
        check_write_cpu(r)
    for key in ("ranks", "rows", "bytes", "dtype", "nmemb", "mode", "mode_used", "nfile",
                "durable", "verified"):
        assert creport[key] == report[key], key


@pytest.mark.parametrize("layer", ["Python", "C"])
def test_iosim_write_cpu(layer: str, tmp_path: Path, lib: Any) -> None:
    """Writing 8 MiB costs CPU time, which both programs report; one rank
    cannot keep more cores busy than the machine has (a CPU time counted
    from the process's start, or in the wrong unit, would)."""
    mpiexec()
    args = ["--rows", str(2 << 20), "--json"]
    if layer == "C":
        proc = launch(1, [str(c_iosim()), *args], env=child_env(TMPDIR=str(tmp_path)))
    else:
        proc = iosim(1, *args, tmp=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.splitlines()[0])
    check_write_cpu(report)
    assert report["write_cpu_seconds"] > 0, report
    assert report["write_cpu_per_wall"] <= (os.cpu_count() or 1) * 1.05 + 0.05, report


def test_iosim_without_mpi(tmp_path: Path, lib: Any) -> None:
    """Outside a launcher, iosim runs serially and never imports mpi4py."""
    code = ("import sys, colfile.cli\n"
            "rc = colfile.cli.main(['iosim', '--rows', '100', '--json'])\n"
            "print('MPI4PY', 'mpi4py' in sys.modules)\n"
            "sys.exit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=child_env(TMPDIR=str(tmp_path)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.splitlines()[0])
    assert report["ranks"] == 1 and report["verified"] and report["mode_used"] == "throttled"
    assert proc.stdout.splitlines()[1] == "MPI4PY False"


def test_iosim_usage_errors(tmp_path: Path, lib: Any) -> None:
    for args in (["--load", "huge"], ["--rows", "-3"], ["--load", "small", "--rows", "3"],
                 ["--dtype", "U3"], ["--nmemb", "0"], ["--mode", "fast"]):
        proc = iosim(None, *args, tmp=tmp_path)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("colfile: error: "), (args, proc.stderr)


def test_want_mpi() -> None:
    from colfile.cli.iosim import want_mpi

    assert not want_mpi(False, {})
    assert want_mpi(True, {})
    for var in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        assert want_mpi(False, {var: "1"})


def test_serial_use_never_imports_mpi4py(tmp_path: Path, lib: Any) -> None:
    code = ("import sys, numpy as np, colfile, colfile.mpi\n"
            f"f = colfile.File({str(tmp_path / 'f')!r}, 'w')\n"
            "c = f.create('x', data=np.arange(10))\n"
            "c.write_all(np.arange(10)); assert c.read_all().tolist() == list(range(10))\n"
            "f.close()\n"
            "print('mpi4py' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "False", proc.stdout + proc.stderr


# ---------------------------------------------------------------------------
# metadata load

LISTING = r'''
import sys
from mpi4py import MPI
import colfile

comm = MPI.COMM_WORLD
with colfile.File(sys.argv[1], "r", comm=comm, collective_metadata=True) as f:
    attrs = dict(f.attrs)
    for name in f.columns:
        col = f[name]
        dict(col.attrs)
        col.read_all()
        col[0]
'''


def test_metadata_load_does_not_grow_with_ranks(tmp_path: Path, lib: Any) -> None:
    """Under strace, with collective_metadata=True: opening a File, listing
    it and opening every column (attributes, and rows read) makes as many
    calls on metadata files and directory listings with 4 ranks as with 2,
    all from one process -- only rank 0 reads them.  (With 2 ranks or more, rank 0 also exports each
    column's metadata to the others, which reads the checksum and
    statistics files a single process opening from the catalog leaves
    unread: hence 2, not 1.)"""
    import re
    import shutil

    mpiexec()
    strace = shutil.which("strace")
    if strace is None:
        unavailable("strace not found")
    if subprocess.run([strace, "-f", "-o", os.devnull, "true"],
                      capture_output=True).returncode != 0:
        unavailable("strace cannot trace here")
    snap = tmp_path / "snap"
    writer = Path(__file__).parent / "write_pattern.py"
    proc = launch(2, [sys.executable, writer, snap, "--total", "5000", "--nfile", "2",
                      "--mode", "auto"])
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / "listing.py"
    script.write_text(LISTING)
    s = re.escape(str(snap))
    # by path, or below a column directory held open (strace -y shows its path)
    meta = re.compile(rf'(openat|stat|newfstatat|statx)\((.*"{s}(/[^"]*)?/|\d+<{s}/[^>]*>, ")'
                      rf'(header|attr[^/"]*|colfile-[^/"]*)"')
    dirs = re.compile(rf"getdents64\(\d+<{s}")
    blobs = re.compile(rf'openat\((.*"{s}/[^"]*/|\d+<{s}/[^>]*>, ")[0-9A-F]{{6}}"')
    counts = {}
    pids = {}
    for n in (2, 4):
        out = tmp_path / f"strace-{n}.txt"
        cmd = [strace, "-f", "-y", "-e", "trace=openat,stat,newfstatat,statx,getdents64",
               "-o", str(out), str(mpiexec()), "-n", str(n), sys.executable, str(script),
               str(snap)]
        run = subprocess.run(cmd, env=child_env(), capture_output=True, text=True,
                             timeout=240)
        assert run.returncode == 0, run.stdout + run.stderr
        lines = out.read_text().splitlines()
        counts[n] = (sum(bool(meta.search(x)) for x in lines),
                     sum(bool(dirs.search(x)) for x in lines),
                     sum(bool(blobs.search(x)) for x in lines))
        pids[n] = {x.split()[0] for x in lines if meta.search(x) or dirs.search(x)}
    assert counts[2][0] > 0, "no metadata file opened: is strace following the ranks?"
    assert counts[2][:2] == counts[4][:2], counts
    assert len(pids[2]) == len(pids[4]) == 1, pids
    assert counts[4][2] > counts[2][2]  # blobs: each rank opens those it reads


def test_launched_size() -> None:
    from colfile.cli.iosim import launched_size

    assert launched_size({}) == 0
    assert launched_size({"PMI_SIZE": "4"}) == 4
    assert launched_size({"OMPI_COMM_WORLD_SIZE": "2"}) == 2
    assert launched_size({"PMI_SIZE": "x", "OMPI_COMM_WORLD_SIZE": "3"}) == 3
