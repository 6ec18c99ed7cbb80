"""The C shims the tests load with LD_PRELOAD (tests/locking/lockshim.c,
tests/concurrency/delayshim.c): the build's, else compiled here."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]


def shim_library(factory: pytest.TempPathFactory, subdir: str, name: str,
                 libs: Sequence[str] = ("-ldl",), builds: Sequence[Path] = ()) -> Path:
    """``tests/SUBDIR/NAME.so`` of the build in COLFILE_C_BUILD, build/release
    or ``builds``; else ``tests/SUBDIR/NAME.c`` compiled into a temporary
    directory of ``factory``.  Without a build or a C compiler the test is
    skipped (and fails under CI, which must run the shim)."""
    for cand in (os.environ.get("COLFILE_C_BUILD"), REPO / "build" / "release", *builds):
        if cand and (Path(cand) / "tests" / subdir / f"{name}.so").exists():
            return (Path(cand) / "tests" / subdir / f"{name}.so").resolve()
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        if os.environ.get("CI"):
            pytest.fail(f"no build of tests/{subdir} and no C compiler (CI must run the shim)")
        pytest.skip(f"no build of tests/{subdir} and no C compiler")
    out = factory.mktemp("shim") / f"{name}.so"
    subprocess.run([cc, "-std=c11", "-O2", "-shared", "-fPIC", "-o", str(out),
                    str(REPO / "tests" / subdir / f"{name}.c"), *libs],
                   check=True, capture_output=True)
    return out


def crash_build() -> Path:
    """The C build whose tests/crash/faultshim.so the crash-shim tests load
    (COLFILE_C_BUILD, build/release or build/crash): the shim counts and
    fails file-system calls by name, so it is not compiled here.  Without
    one the test is skipped (and fails under CI, which must run it)."""
    for cand in (os.environ.get("COLFILE_C_BUILD"), REPO / "build" / "release", REPO / "build" / "crash"):
        if cand and (Path(cand) / "tests" / "crash" / "faultshim.so").exists():
            return Path(cand).resolve()
    if os.environ.get("CI"):
        pytest.fail("no build with tests/crash/faultshim.so (CI must run this)")
    pytest.skip("no build with tests/crash/faultshim.so")
