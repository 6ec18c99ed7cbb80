"""Running a bench/ script from its smoke test."""

from __future__ import annotations

import subprocess
from typing import Sequence


def run_script(cmd: Sequence[str], *, env: dict[str, str] | None = None,
               timeout: float = 300) -> str:
    """Run ``cmd``, which must succeed, and return its standard output (on
    failure the tails of both outputs are the assertion's message)."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout


def table_rows(text: str) -> list[str]:
    """The lines of the markdown tables in ``text``."""
    return [line for line in text.splitlines() if line.startswith("| ")]


def refusal(cmd: Sequence[str], timeout: float = 60) -> str:
    """Run ``cmd``, which must refuse its arguments (argparse's exit status
    2), and return its standard error."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stderr
