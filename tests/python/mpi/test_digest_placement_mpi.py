"""Under MPI the digest placement counts the ranks sharing a node
(MPI_COMM_TYPE_SHARED; cf__mpi_set_node in C, colfile.mpi's _on_node in
Python, both through cf_file_set_node): two ranks on two CPUs leave no core for a helper
thread, where one process on the same CPUs has one.  Both iosims report
it alike, and the placement changes no byte of the File."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from mpirun import c_iosim, child_env, launch, mpiexec, tree

PY = [sys.executable, "-m", "colfile.cli", "iosim"]


def on_cpus_0_1(cmd: list[str]) -> list[str]:
    taskset = shutil.which("taskset")
    if taskset is None or not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs taskset and CPUs 0 and 1")
    return [taskset, "-c", "0,1", *cmd]


def report(nranks: int, cmd: list[str], *args: str, tmp: Path) -> dict[str, Any]:
    proc = launch(nranks, on_cpus_0_1([*cmd, "--rows", "400000", "--dtype", "f8", "--json", *args]),
                  env=child_env(TMPDIR=str(tmp)))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    return dict(json.loads(lines[0]))


@pytest.mark.parametrize("layer", ["Python", "C"])
def test_ranks_per_node_reach_the_choice(layer: str, tmp_path: Path, lib: Any) -> None:
    mpiexec()
    cmd = PY if layer == "Python" else [str(c_iosim())]
    # launched alone on two CPUs: a core for the helper
    assert report(1, cmd, tmp=tmp_path)["digest_used"] == "helper"
    # two ranks on the same two CPUs: the node is full
    two = report(2, cmd, tmp=tmp_path)
    assert two["ranks"] == 2 and two["digest"] == "auto" and two["digest_used"] == "inline"
    assert report(2, cmd, "--digest", "helper", tmp=tmp_path)["digest_used"] == "helper"


def test_placements_write_the_same_bytes(tmp_path: Path, lib: Any) -> None:
    """Each rank writes 9.6 MB (above the helper's 8 MiB threshold)."""
    mpiexec()
    files = {}
    for layer, cmd in (("Python", PY), ("C", [str(c_iosim())])):
        for digest in ("inline", "helper"):
            path = tmp_path / f"{layer}-{digest}"
            got = report(2, cmd, "--digest", digest, "--keep", "--nfile", "2", str(path), tmp=tmp_path)
            assert got["digest_used"] == digest and got["verified"] is True
            files[layer, digest] = tree(path)
    first = files["C", "inline"]
    assert "iosim/000001" in first
    for key, other in files.items():
        assert other == first, key
