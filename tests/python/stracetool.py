"""strace for the tests that count system calls or bytes read rather than
time them: the tool, or the test skipped where it is missing or cannot
trace (failed in CI, where it must be there)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def strace_or_skip(needed_to: str) -> str:
    """The path of a working strace; else the calling test is skipped (or,
    with CI set, failed: "strace is needed to ``needed_to``")."""
    strace = shutil.which("strace")
    if strace is None or subprocess.run([strace, "-f", "-o", os.devnull, "true"],
                                        capture_output=True).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"strace is needed to {needed_to}")
        pytest.skip("strace not found or cannot trace here")
    return strace
