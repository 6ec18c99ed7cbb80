"""C error records to colfile exceptions: the one place that reads a
``cf_error``.

Every call that can fail gets a fresh record from :func:`new_error`; when it
returns a negative code, :func:`raise_error` raises the exception of
:mod:`colfile.errors` that fits the code and what was asked for, with the
C message (which names the path and the problem).
"""

from __future__ import annotations

from typing import Any, NoReturn

from .._ffi import ERROR_P, ffi
from ..errors import CODE_NAMES, error_class

__all__ = ["ERROR_P", "new_error", "raise_error", "check"]


def new_error() -> Any:
    """A fresh, zeroed ``cf_error *`` record."""
    return ffi.new(ERROR_P)


def raise_error(rc: int, err: Any, context: str = "file") -> NoReturn:
    """Raise the exception for a failing return code ``rc`` and its
    ``cf_error *`` record ``err`` (``None``: no record).  ``context``
    ('file', 'column', 'attr', 'create') decides the class of the codes
    whose meaning depends on what was looked up (see
    :func:`colfile.errors.error_class`)."""
    code = int(err.code) if err is not None and err.code else int(rc)
    message = ""
    if err is not None:
        message = ffi.string(err.message).decode("utf-8", "replace")
    if not message:
        message = f"libcolfile failed with {CODE_NAMES.get(code, code)}"
    raise error_class(code, context)(message, code)


def check(rc: int, err: Any, context: str = "file") -> int:
    """Return ``rc`` if it is not negative, else raise (see
    :func:`raise_error`)."""
    if rc < 0:
        raise_error(rc, err, context)
    return int(rc)
