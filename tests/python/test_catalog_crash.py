"""A writer killed, or the power lost, at each file operation of a
writable close that changes columns and updates the sharded catalog
(docs/format.md 8.5; tests/crash/faultshim.c).  After every crash point
the listing through colfile is the directories' (catalog_oracle); the
next writer's close leaves a catalog that is current and, once they are
old, nothing in the catalog directory that no reader uses (what
cf__cat_remove_unused removes)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile
from catalog_oracle import CAT, assert_lists_as_scanned, catalog_current, catalog_leftovers
from childenv import child_env
from shims import crash_build

WRITER = """
import sys, numpy as np, colfile
with colfile.File(sys.argv[1], "a") as f:
    f.create("g1/new", data=np.arange(5))
    del f["g2/c0"]
    f["g3/c1"].attrs["note"] = 2.5
"""

#: operation classes that change something (a kill at an open or a close
#: leaves what the previous change left)
CHANGES = ("create", "write", "fsync", "rename", "unlink", "mkdir", "rmdir")


def _make(root: Path) -> None:
    with colfile.File(root, "w") as f:
        for i in range(4):
            for j in range(3):
                f.create(f"g{i}/c{j}", data=np.arange(5) + 10 * i + j)
                # shards in files of their own: more than an index keeps (48 KiB)
                f[f"g{i}/c{j}"].attrs["pad"] = "x" * 5000
        f.create("top", data=np.arange(3.0))
    with colfile.File(root, "a"):
        pass  # settled: the writer below starts from a current catalog


def _run(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    shim = crash_build() / "tests" / "crash" / "faultshim.so"
    return subprocess.run([sys.executable, "-c", WRITER, str(root)],
                          env=child_env(LD_PRELOAD=str(shim), CF_FAULT_SCOPE=str(root), **env),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def crash_points(tmp_path_factory: pytest.TempPathFactory, lib: Any) -> list[int]:
    """The changing operations of the writer from its first commit on."""
    d = tmp_path_factory.mktemp("count")
    _make(d / "F")
    r = _run(d / "F", {"CF_FAULT_MODE": "count", "CF_FAULT_REPORT": str(d / "report")})
    assert r.returncode == 0, r.stderr
    ops = [ln.split(" ", 2) for ln in (d / "report").read_text().splitlines()[1:] if not ln.startswith("a")]
    points = [int(n) for n, cls, _ in ops if cls in CHANGES]
    assert any("colfile-catalog-index" in what for _, cls, what in ops if cls == "rename"), ops
    return points


def _check_after_crash(root: Path, what: str) -> None:
    try:
        assert_lists_as_scanned(root)
        with colfile.File(root, "a") as f:
            f.create("after", data=np.arange(2))
        assert_lists_as_scanned(root)
        assert catalog_current(root)
        # what the crash left there goes once it is old (a writer updating
        # at the same time may be about to name a young shard)
        for name in catalog_leftovers(root):
            p = root / CAT / name
            os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns - 7200 * 10**9))
        with colfile.File(root, "a"):
            pass
        assert catalog_leftovers(root) == []
        assert_lists_as_scanned(root)
    except AssertionError as exc:
        raise AssertionError(f"{what}: {exc}") from exc


@pytest.mark.parametrize("action", ["kill", "powerloss"])
def test_crash_at_every_operation_of_a_closing_writer(tmp_path: Path, crash_points: list[int],
                                                       action: str) -> None:
    failures = []
    for at in crash_points:
        d = tmp_path / f"at{at}"
        (d / "J").mkdir(parents=True)
        _make(d / "F")
        r = _run(d / "F", {"CF_FAULT_AT": str(at), "CF_FAULT_ACTION": action, "CF_FAULT_JOURNAL": str(d / "J")})
        assert r.returncode == -9, f"no {action} at {at}: {r.stderr[-2000:]}"
        try:
            _check_after_crash(d / "F", f"{action} at {at}")
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)
