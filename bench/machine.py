"""The machine a benchmark ran on, as the result tables name it."""

from __future__ import annotations

import os
import platform


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def memory_total() -> str:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 2**20:.0f} GiB RAM"
    except OSError:
        pass
    return "unknown RAM"


def describe() -> str:
    """CPU, cores, memory, operating system and Python, in one phrase."""
    return (f"{cpu_model()}, {os.cpu_count()} cores, {memory_total()}, "
            f"{platform.platform()}, Python {platform.python_version()}")
