"""The Python package builds outside the source tree: two wheel builds of one
checkout at once both succeed, and a read-only checkout builds, writing
nothing into the tree (pyproject.toml sets no in-tree build directory)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _sources() -> list[str]:
    """The checkout's files (tracked by git when it is a git checkout)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p and (ROOT / p).is_file()]
    except (OSError, subprocess.CalledProcessError):
        skip = {"build", ".venv", ".git"}
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


def _snapshot(tree: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(tree)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in tree.rglob("*")}


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Path]:
    """A read-only copy of the source tree (every file and directory without
    write permission)."""
    src = tmp_path / "src"
    for rel in _sources():
        dst = src / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dst)
    for p in [src, *src.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    yield src
    for p in [src, *src.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_concurrent_wheel_builds_of_a_read_only_checkout(checkout: Path,
                                                         tmp_path: Path) -> None:
    try:
        import scikit_build_core  # noqa: F401  (the build backend, a test extra)
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("scikit-build-core is not installed (pip install colfile[test])")
    if shutil.which("cmake") is None and not os.environ.get("CI"):
        pytest.skip("no cmake")
    before = _snapshot(checkout)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKBUILD_")}
    env["TMPDIR"] = str(tmp_path)  # the temporary build directories land here
    # Debug and no MPI layer: the quickest build of the same package
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
           "-q", "-C", "cmake.build-type=Debug", "-C", "cmake.define.COLFILE_MPI=OFF",
           str(checkout)]
    procs = [subprocess.Popen(cmd + ["-w", str(tmp_path / f"out{i}")], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for i in range(2)]
    outs = [p.communicate(timeout=600)[0].decode(errors="replace") for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-4000:]
    # nothing written into the checkout (root ignores the permissions)
    assert _snapshot(checkout) == before
    for i in range(2):
        wheels = list((tmp_path / f"out{i}").glob("colfile-*.whl"))
        assert len(wheels) == 1, wheels
        names = zipfile.ZipFile(wheels[0]).namelist()
        assert "colfile/__init__.py" in names and "colfile/column.py" in names
        assert any(n.startswith("colfile/_lib/libcolfile") for n in names), names
    # the wheel's own library works
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheels[0]).extractall(unpacked)
    run_env = {k: v for k, v in env.items() if k not in ("COLFILE_LIBRARY", "PYTHONPATH")}
    run_env["PYTHONPATH"] = str(unpacked)
    code = ("import colfile, numpy as np, sys; from colfile import _ffi\n"
            "f = colfile.File(sys.argv[1], 'w'); f.create('x', data=np.arange(5)); f.close()\n"
            "print(colfile.File(sys.argv[1])['x'][:].sum(), _ffi._lib_path)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "f")], env=run_env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    total, lib = done.stdout.split()
    assert total == "10" and lib.startswith(str(unpacked)), done.stdout
