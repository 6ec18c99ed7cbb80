"""Memory priming, shared by the benchmarks (docs/performance.md, "Memory
priming").

On a virtual machine whose host takes back the memory the guest frees
(free page reporting), the first write to such a page faults into the host.
Touching and freeing memory just before a timed part hands that part
recently used memory, so that runs differ by what the software does, not by
where the guest's free pages were.  ``bench/primed_iosim.c`` does the same
for the C colfile-iosim.
"""

from __future__ import annotations

import mmap

import numpy as np


def prime_memory(nbytes: int) -> None:
    """Touch ``nbytes`` of fresh anonymous memory a page at a time, then
    free it: the free pages the next allocations and page-cache pages get
    are then backed by the host."""
    if nbytes <= 0:
        return
    m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
    try:
        # In huge pages: the memory the guest hands back is whole 2 MiB
        # blocks, which 4 KiB faults do not take.
        if hasattr(mmap, "MADV_HUGEPAGE"):
            m.madvise(mmap.MADV_HUGEPAGE)
        view = np.frombuffer(m, dtype=np.uint8)
        view[::mmap.PAGESIZE] = 1
        del view
    finally:
        m.close()
