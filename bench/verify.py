"""The end of a benchmark that checks its results against numpy: a check
that fails stops the run with exit status 1, and the scratch directory
goes (or stays, when asked, and is named)."""

from __future__ import annotations

import os
import shutil
import sys


class Failed(Exception):
    """A result differs from numpy's."""


def failed(exc: Failed) -> int:
    """Say which check failed; the run's exit status."""
    print(f"VERIFICATION FAILED: {exc}", file=sys.stderr)
    return 1


def finish(workdir: str | os.PathLike[str], keep: bool) -> None:
    """Remove the run's scratch directory, or keep it and say where."""
    if keep:
        print(f"kept {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
