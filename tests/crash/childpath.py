"""The colfile a harness's child processes import: the one this Python
would import (found without importing it), else the checkout's python/,
first on PYTHONPATH.  Shared by tests/crash and tests/concurrency."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def colfile_package_dir() -> Path:
    """The directory that holds the colfile package this Python imports."""
    try:
        spec = importlib.util.find_spec("colfile")
    except (ImportError, ValueError):
        spec = None
    if spec and spec.origin:
        return Path(spec.origin).resolve().parents[1]
    return REPO / "python"


def with_colfile_path(env: dict[str, str]) -> Path:
    """Put :func:`colfile_package_dir` first on ``env``'s PYTHONPATH (in
    place); return it."""
    pkg = colfile_package_dir()
    env["PYTHONPATH"] = os.pathsep.join(
        [str(pkg)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return pkg
