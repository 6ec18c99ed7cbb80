"""New arrays placed for the copy that fills them.

A read into a new array is one copy out of the page cache, made by the
kernel (``rep movsb`` on x86-64), and its speed depends on where the
destination starts relative to the bytes in the file: on the AMD EPYC
benchmark machine a 64 MiB ``pread`` ran at 13.0 GB/s when the array's
address and the file offset agreed modulo 32 bytes and at 6.4 GB/s when
they were 16 bytes apart (bench/placement.py), which is what ``np.empty``
gives for a read from the start of a blob (``malloc`` puts large blocks 16
bytes past a page boundary).  So a large array a read allocates is carved out of a slightly
larger buffer, at the file offset's remainder modulo 64 (docs/performance.md,
"Where a new array starts").  The array is a view of that buffer (its
``base``); everything else about it is what ``np.empty`` would give.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core.memory import address_of

#: The remainder that is matched: a cache line, which covers every
#: alignment the copy instructions care about.
PLACE_BYTES = 64

#: Smaller arrays come from ``np.empty``: their copies take some tens of
#: microseconds at most, and placing costs a few (about 2 us of Python warm,
#: more in a fresh process), so what it saves there would be lost in noise.
PLACE_MIN_BYTES = 256 << 10


def empty_at(shape: tuple[int, ...], dtype: np.dtype[Any], offset: int) -> np.ndarray:
    """``np.empty(shape, dtype)`` whose first byte lies at ``offset`` modulo
    :data:`PLACE_BYTES` (for arrays of at least :data:`PLACE_MIN_BYTES`).

    ``offset`` is where the bytes that fill the array start in their file.
    An offset that is not a multiple of ``dtype.alignment`` (a read that
    converts to a wider type) gives a plain ``np.empty``: the array stays
    aligned for its dtype either way.
    """
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    if nbytes < PLACE_MIN_BYTES or offset % dtype.alignment:
        return np.empty(shape, dtype)
    raw = np.empty(nbytes + PLACE_BYTES, np.uint8)
    k = (offset - address_of(raw)) % PLACE_BYTES
    return raw[k:k + nbytes].view(dtype).reshape(shape)
