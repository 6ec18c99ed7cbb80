"""The core's dtype rules and its converter (``cf_dtype_*``).

Dtypes cross into C as their ASCII tokens (``b"<f8"``, ``b"|S7"``).
"""

from __future__ import annotations

import numpy as np

from .._ffi import ffi, lib
from ._errors import check, new_error
from .memory import NULL

__all__ = ["rejects", "itemsize", "convert", "check_convertible"]


def rejects(text: str) -> str | None:
    """The core's message if it rejects dtype ``text``
    (``cf_dtype_normalize``), else None."""
    err = new_error()
    out = ffi.new("char[16]")
    if lib().cf_dtype_normalize(text.encode("utf-8", "surrogateescape"), out, err) == 0:
        return None
    return str(ffi.string(err.message).decode("utf-8", "replace"))


def itemsize(tok: bytes) -> int:
    """Bytes of one element of dtype token ``tok`` (``cf_dtype_itemsize``);
    raises for a token the core does not know."""
    out = ffi.new("int64_t *")
    err = new_error()
    check(lib().cf_dtype_itemsize(tok, out, err), err)
    return int(out[0])


def convert(dst: np.ndarray, dst_offset: int, dst_stride: int, to: bytes,
            src: np.ndarray, src_offset: int, src_stride: int, frm: bytes,
            count: int) -> None:
    """Convert ``count`` elements of dtype ``frm`` from ``src`` (byte
    ``src_offset`` on, every ``src_stride`` bytes) to dtype ``to`` into
    ``dst`` (byte ``dst_offset`` on, every ``dst_stride`` bytes)
    (``cf_dtype_convert``)."""
    err = new_error()
    d = ffi.cast("char *", dst.ctypes.data) + dst_offset
    s = ffi.cast("char *", src.ctypes.data) + src_offset
    check(lib().cf_dtype_convert(d, dst_stride, to, s, src_stride, frm, count, err), err)


def check_convertible(to: bytes, frm: bytes) -> None:
    """Raise the core's error if values of dtype ``frm`` cannot be
    converted to ``to`` (a conversion of no elements)."""
    err = new_error()
    check(lib().cf_dtype_convert(NULL, 0, to, NULL, 0, frm, 0, err), err)
