"""Shared fixtures of the Python tests.

Tests that need libcolfile use the ``lib`` fixture (or a fixture built on
it).  When no library can be found at all (no ``colfile/_lib`` copy, no
``$COLFILE_LIBRARY``, nothing on the system path) they are skipped with that
reason; when ``$COLFILE_LIBRARY`` names a library that fails to load, they
fail, and under CI (``CI`` set) they always fail.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest



@pytest.fixture(scope="session")
def lib() -> Any:
    from colfile import _ffi

    try:
        return _ffi.lib()
    except ImportError as exc:
        # CI installs the package: a missing library there is a failure.
        if os.environ.get("COLFILE_LIBRARY") or os.environ.get("CI"):
            raise
        pytest.skip(f"libcolfile not available: {exc}")


@pytest.fixture
def path(tmp_path: Path, lib: Any) -> str:
    """A path for a new File (does not exist yet)."""
    return str(tmp_path / "f")


@pytest.fixture
def wfile(path: str, lib: Any) -> Iterator[Any]:
    """A File open for writing, closed after the test."""
    import colfile

    f = colfile.File(path, "w")
    yield f
    f.close()


@pytest.fixture
def cli(capsys: Any, lib: Any) -> Callable[..., tuple[int, str, str]]:
    """Run ``colfile.cli.main`` in-process: (status, stdout, stderr)."""
    from colfile.cli import main

    def run(*args: Any) -> tuple[int, str, str]:
        capsys.readouterr()
        status = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return status, out, err

    return run
