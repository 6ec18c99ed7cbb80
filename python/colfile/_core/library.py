"""The loaded libcolfile: its version and where it was found."""

from __future__ import annotations

from .._ffi import lib, library_path, string

__all__ = ["version", "library_path"]


def version() -> str:
    """The version of the libcolfile actually loaded (``cf_version()``)."""
    return string(lib().cf_version())
