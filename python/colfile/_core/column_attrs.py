"""A column's attributes (``cf_column_attr_*``): raw values as a dtype
token, a count and their bytes."""

from __future__ import annotations

import threading
from typing import Any

from .._ffi import ERROR_P, encode_name, ffi, lib
from ._errors import check, new_error, raise_error
from .memory import NULL, take_string_list

__all__ = ["get", "set", "delete", "names"]

_BUFS = threading.local()
#: the out-parameters of cf_column_attr_get, parsed once
_OUT = (ffi.typeof("const char **"), ffi.typeof("int64_t *"), ffi.typeof("const void **"),
        ERROR_P)


def get(h: Any, name: str) -> tuple[str, int, bytes]:
    """``(dtype token, nmemb, raw bytes)`` of attribute ``name``
    (:class:`~colfile.AttributeNotFoundError` if there is none)."""
    # the out-parameters: this thread's, allocated once (they are read
    # before the call returns to Python code that could use them again)
    bufs = getattr(_BUFS, "v", None)
    if bufs is None:
        bufs = _BUFS.v = tuple(ffi.new(t) for t in _OUT)
    tok, nmemb, data, err = bufs
    rc = lib().cf_column_attr_get(h, encode_name(name), tok, nmemb, data, err)
    if rc < 0:
        raise_error(rc, err, "attr")
    t = ffi.string(tok[0]).decode("ascii", "surrogateescape")
    n = nmemb[0]
    width = int(t[2:]) if t[2:].isdigit() else 0
    nbytes = n * width
    raw = ffi.buffer(data[0], nbytes)[:] if nbytes else b""
    return t, n, raw


def set(h: Any, name: str, tok: str, nmemb: int, data: bytes) -> None:  # noqa: A001
    """Set attribute ``name`` to ``nmemb`` values of dtype token ``tok``."""
    err = ffi.new(ERROR_P)
    buf = ffi.from_buffer(data) if data else NULL
    check(lib().cf_column_attr_set(h, encode_name(name), tok.encode("ascii"), nmemb, buf,
                                   err), err, "attr")


def delete(h: Any, name: str) -> None:
    """Delete attribute ``name``."""
    err = new_error()
    check(lib().cf_column_attr_delete(h, encode_name(name), err), err, "attr")


def names(h: Any) -> list[str]:
    """The names of the column's attributes."""
    err = new_error()
    L = lib()
    return take_string_list(lambda out, count: check(
        L.cf_column_attr_names(h, out, count, err), err))
