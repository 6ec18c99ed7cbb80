"""The two iosims -- ``colfile iosim`` (Python) and ``colfile-iosim`` (C,
libcolfile-mpi) -- are one program in two languages: the same options, the
same usage errors, the same JSON report and the same bytes on disk."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mpirun import c_iosim, child_env, launch, mpiexec, tree

PY = [sys.executable, "-m", "colfile.cli", "iosim"]

#: The report's fields that describe the run (not its timings or path).
SAME = ("ranks", "rows_per_rank", "rows", "dtype", "nmemb", "bytes", "mode", "mode_used",
        "nfile", "concurrency", "digest", "digest_used", "durable", "kept", "mismatched_bytes", "verified")


def both(nranks: int, *args: str, tmp: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    env = child_env(TMPDIR=str(tmp))
    return {"Python": launch(nranks, [*PY, *args], env=env),
            "C": launch(nranks, [str(c_iosim()), *args], env=env)}


@pytest.mark.parametrize("nranks", [2, 4])
def test_same_report_and_same_bytes(nranks: int, tmp_path: Path, lib: Any) -> None:
    mpiexec()
    args = ["--rows", "1000", "--dtype", "f8", "--nmemb", "3", "--nfile", "2", "--keep", "--json"]
    # a File path that JSON must escape
    path = {layer: tmp_path / f'{layer} "sim\\1"' for layer in ("Python", "C")}
    procs = {layer: launch(nranks, [*cmd, *args, str(path[layer])],
                           env=child_env(TMPDIR=str(tmp_path)))
             for layer, cmd in (("Python", PY), ("C", [str(c_iosim())]))}
    reports = {}
    for layer, proc in procs.items():
        assert proc.returncode == 0, (layer, proc.stdout, proc.stderr)
        lines = proc.stdout.splitlines()
        assert len(lines) == 1, (layer, proc.stdout)  # rank 0 reports, once
        reports[layer] = json.loads(lines[0])
        assert reports[layer]["path"] == str(path[layer])
    assert list(reports["C"]) == list(reports["Python"])  # the same keys, in the same order
    assert {k: reports["C"][k] for k in SAME} == {k: reports["Python"][k] for k in SAME}
    assert reports["C"]["nfile"] == 2 and reports["C"]["verified"] is True
    files = {layer: tree(path[layer]) for layer in procs}
    assert "iosim/000000" in files["C"] and "iosim/000001" in files["C"]
    assert sorted(files["C"]) == sorted(files["Python"])
    for name in files["C"]:
        assert files["C"][name] == files["Python"][name], name


def python_options() -> set[str]:
    proc = subprocess.run([*PY, "--help"], env=child_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", proc.stdout))


def c_options() -> set[str]:
    proc = launch(1, [str(c_iosim()), "--help"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: colfile-iosim [options] [PATH]\n")
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", proc.stdout))


def test_same_options(lib: Any) -> None:
    """Both --help texts list the same options (--mpi, the choice of using
    mpi4py, and --plot, a matplotlib picture of the report, are Python's
    own); the benchmarks' memory priming is no option of either (bench/ has
    it)."""
    mpiexec()
    py, c = python_options(), c_options()
    assert py - {"--mpi", "--plot"} == c, (py ^ c)
    assert {"--load", "--rows", "--dtype", "--nmemb", "--mode", "--nfile", "--concurrency",
            "--digest", "--durable", "--json", "--keep", "--help"} == c
    assert not any("prime" in o for o in py | c)


@pytest.mark.parametrize("args", [
    ["--load", "small", "--rows", "3"],
    ["--load", "medium", "--dtype", "f8"],
    ["--nmemb", "0"],
    ["--rows", "-3"],
    ["--rows", str(2**62), "--dtype", "f8"],
    ["--mode", "fast"],
    ["--dtype", "U3"],
    ["--prime", str(1 << 20)],
], ids=lambda a: " ".join(a))
def test_same_usage_errors(args: list[str], tmp_path: Path, lib: Any) -> None:
    """What one refuses as a usage error (exit status 2, a message on
    stderr, nothing written), the other refuses too."""
    mpiexec()
    for layer, proc in both(2, *args, tmp=tmp_path).items():
        assert proc.returncode == 2, (layer, args, proc.stdout, proc.stderr)
        assert proc.stdout == "" and proc.stderr.strip(), (layer, args, proc.stderr)
    assert list(tmp_path.iterdir()) == []
