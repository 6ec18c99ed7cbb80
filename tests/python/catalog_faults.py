"""A writer process killed, or its power lost, at one file operation
(tests/crash/faultshim.c), for the catalog's crash tests (test_catalog_crash,
test_catalog_marks): the operations a writer script makes, counted, and
the script run again to be stopped at one of them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from childenv import child_env
from shims import crash_build

#: operation classes that change something (a kill at an open or a close
#: leaves what the previous change left)
CHANGES = ("create", "write", "fsync", "rename", "unlink", "mkdir", "rmdir")


def run_writer(script: str, root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``script`` run on ``root`` (its argv[1]) under the fault shim."""
    shim = crash_build() / "tests" / "crash" / "faultshim.so"
    return subprocess.run([sys.executable, "-c", script, str(root)],
                          env=child_env(LD_PRELOAD=str(shim), CF_FAULT_SCOPE=str(root), **env),
                          capture_output=True, text=True, timeout=120)


def count_operations(script: str, root: Path, report: Path) -> list[list[str]]:
    """The file operations ``script`` makes on ``root``, as [number, class,
    what], those of its opening (``a``) left out."""
    r = run_writer(script, root, {"CF_FAULT_MODE": "count", "CF_FAULT_REPORT": str(report)})
    assert r.returncode == 0, r.stderr
    return [ln.split(" ", 2) for ln in report.read_text().splitlines()[1:] if not ln.startswith("a")]


def crash_writer(script: str, root: Path, at: int, action: str, journal: Path) -> None:
    """``script`` on ``root`` stopped (``kill`` or ``powerloss``) at operation ``at``."""
    r = run_writer(script, root, {"CF_FAULT_AT": str(at), "CF_FAULT_ACTION": action, "CF_FAULT_JOURNAL": str(journal)})
    assert r.returncode == -9, f"no {action} at {at}: {r.stderr[-2000:]}"
