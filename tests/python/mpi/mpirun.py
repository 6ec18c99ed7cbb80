"""Launching MPI programs from the serial pytest session (shared by the
modules of tests/python/mpi).

The MPI tests need ``mpiexec`` next to the Python executable (pip's
``mpich`` puts it there) and mpi4py.  Without them the tests are skipped on
a developer machine and FAIL under CI (``CI`` set): there, a missing MPI is
a broken setup, not a reason to test less."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

import pytest

#: Seconds one mpiexec launch may take before the test fails (a hang).
TIMEOUT = 240


def unavailable(reason: str) -> Any:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: the MPI tests must run)")
    pytest.skip(reason)


def mpiexec() -> Path:
    """The mpiexec next to sys.executable, with mpi4py importable."""
    exe = Path(sys.executable).parent / "mpiexec"
    if not exe.exists():
        unavailable(f"no mpiexec next to {sys.executable} (pip install mpich)")
    if importlib.util.find_spec("mpi4py") is None:
        unavailable("mpi4py is not installed")
    return exe


def c_iosim() -> Path:
    """The C colfile-iosim of the build in COLFILE_C_BUILD."""
    build = os.environ.get("COLFILE_C_BUILD")
    exe = Path(build) / "colfile-iosim" if build else None
    if exe is None or not exe.is_file():
        unavailable("no C build with colfile-iosim (COLFILE_C_BUILD)")
    assert exe is not None
    return exe


def c_mpi_program(name: str) -> Path:
    """The C MPI test program ``name`` (``tests/mpi/<name>``) of the build
    in COLFILE_C_BUILD."""
    build = os.environ.get("COLFILE_C_BUILD")
    if not build:
        unavailable(f"COLFILE_C_BUILD is not set: no C build to take {name} from")
    exe = Path(build) / "tests" / "mpi" / name
    if not exe.is_file():
        unavailable(f"{exe} does not exist (build the C MPI layer)")
    return exe


def run_ok(proc: subprocess.CompletedProcess[str]) -> None:
    """A finished run exited 0; else the test fails with the end of what it
    printed."""
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]


def run_serial(args: Sequence[Any], timeout: float = 120) -> None:
    """``python args...`` in a child process, without an MPI launch; it
    must exit 0 within ``timeout`` seconds."""
    run_ok(subprocess.run([sys.executable, *map(str, args)], env=child_env(), capture_output=True,
                          text=True, timeout=timeout))


def assert_same_files(got: dict[str, bytes], want: dict[str, bytes]) -> None:
    """``got`` (a :func:`tree`) holds the files of ``want``, byte for byte;
    the first file that differs is named."""
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name


def colfile_cli(*args: Any) -> list[str]:
    """The command line of ``python -m colfile args...``."""
    return [sys.executable, "-m", "colfile", *map(str, args)]


def convert_split_and_serial(src: Path, out: Path, nranks: int) -> tuple[Path, Path]:
    """``colfile convert`` of src into out/par (3 blobs a column) under
    ``mpiexec -n nranks`` and into out/ser on one rank; both must succeed."""
    par, ser = out / "par", out / "ser"
    proc = launch(nranks, colfile_cli("convert", "--nfile", "3", src, par))
    assert proc.returncode == 0, proc.stderr
    proc = launch(1, colfile_cli("convert", src, ser))
    assert proc.returncode == 0, proc.stderr
    return par, ser


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment (COLFILE_LIBRARY and all), with the
    directory this colfile was imported from first on PYTHONPATH, and
    without the variables of an enclosing MPI launch."""
    import colfile

    here = str(Path(colfile.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "OMPI_", "HYDRA_", "MPI_LOCALRANKID"))}
    env["PYTHONPATH"] = os.pathsep.join(
        [here] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    env.update(extra)
    return env


def launch(nranks: int, args: Sequence[str], cwd: Path | str | None = None,
           env: dict[str, str] | None = None,
           timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """``mpiexec -n nranks args...``; a run that outlives ``timeout`` (a
    hang) fails the test with what it printed so far."""
    cmd = [str(mpiexec()), "-n", str(nranks), *map(str, args)]
    try:
        return subprocess.run(cmd, cwd=cwd, env=env or child_env(), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        pytest.fail(f"{' '.join(cmd)} did not finish in {timeout} s (a hang?)\n"
                    f"{out[-5000:]}\n{err[-5000:]}")


def tree(root: Path | str) -> dict[str, bytes]:
    """{relative path: bytes} of every file below ``root``, but the File
    catalog (docs/format.md 8.5): a cache whose stamps hold inode numbers."""
    root = Path(root)
    return {str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and ".colfile-catalog" not in p.relative_to(root).parts}
