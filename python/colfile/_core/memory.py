"""Buffers between numpy and C, and memory the library hands out.

Arrays passed to C are referenced by the calling frame for the duration of
the call (cffi releases the GIL meanwhile), so their memory stays valid.
What the library allocates for the caller (``cf_free``, ``cf_names_free``)
is copied into Python objects and freed here, in ``finally`` blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._ffi import ffi, lib, take_strings

__all__ = ["ptr", "int64_ptr", "address_of", "take_bytes", "take_string_list", "NULL"]

#: the C null pointer (what an optional argument takes for "none")
NULL = ffi.NULL


def ptr(arr: np.ndarray) -> Any:
    """The address of element 0 of ``arr`` (whatever its strides).  A
    C-contiguous array is passed as its buffer (which keeps it alive while
    the pointer is), much cheaper than ``arr.ctypes``."""
    if arr.flags.c_contiguous and arr.size:
        return ffi.from_buffer(arr)
    return ffi.cast("void *", arr.ctypes.data)


def int64_ptr(arr: np.ndarray) -> Any:
    """``int64_t *`` to a C-contiguous int64 array."""
    return ffi.cast("int64_t *", arr.ctypes.data)


def address_of(raw: Any) -> int:
    """The address of the first byte of the writable buffer ``raw``."""
    return int(ffi.cast("uintptr_t", ffi.from_buffer(raw)))


def take_bytes(call: Callable[[Any, Any], Any]) -> bytes:
    """Run ``call(buf, size)`` with ``void **buf`` and ``size_t *size``
    out-parameters, copy the ``size`` bytes the library allocated at
    ``*buf`` and free them (``cf_free``), even when copying fails.  The
    library leaves ``*buf`` NULL when the call fails (nothing to free)."""
    buf = ffi.new("void **")
    size = ffi.new("size_t *")
    try:
        call(buf, size)
        return bytes(ffi.buffer(buf[0], size[0])) if size[0] else b""
    finally:
        if buf[0] != ffi.NULL:
            lib().cf_free(buf[0])


def take_string_list(call: Callable[[Any, Any], Any]) -> list[str]:
    """Run ``call(names, count)`` with ``char ***names`` and ``int64_t
    *count`` out-parameters and return the list of strings the library
    allocated, freeing it (``cf_names_free``)."""
    names = ffi.new("char ***")
    count = ffi.new("int64_t *")
    call(names, count)
    return take_strings(names[0], count[0])
