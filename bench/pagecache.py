"""Cold reads measured by the kernel: files dropped from the page cache,
and the bytes this process has had read from disk (``/proc/self/io``).
Used by the benchmarks and by the tests that count what a read fetches."""

from __future__ import annotations

import os
from typing import overload


def drop_cache(root: str) -> None:
    """Every file under ``root`` out of the page cache."""
    for dirpath, _, names in os.walk(root):
        for nm in names:
            try:
                fd = os.open(os.path.join(dirpath, nm), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


@overload
def read_bytes(missing: int) -> int: ...
@overload
def read_bytes(missing: None = None) -> int | None: ...


def read_bytes(missing: int | None = None) -> int | None:
    """Bytes this process has had read from storage so far; ``missing``
    where the kernel does not say (no ``/proc/self/io``)."""
    try:
        with open("/proc/self/io") as fh:
            for line in fh:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return missing
