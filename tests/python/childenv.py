"""The environment of the tests' child Python processes."""

from __future__ import annotations

import os
from pathlib import Path


def child_env(**extra: str) -> dict[str, str]:
    """``os.environ`` plus ``extra``, with the directory that holds the
    colfile under test (a source tree, or an installed package) first on
    ``PYTHONPATH``: a child then imports the same colfile as the test."""
    import colfile

    env = dict(os.environ)
    pkg_parent = str(Path(colfile.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(
        [pkg_parent, *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)])
    env.update(extra)
    return env
