"""The thin binding layer: libcolfile loaded with cffi in ABI mode.

Nothing is compiled: ``tools/gen_ffi.py`` reads ``include/colfile.h`` and
``include/colfile_errors.h`` and writes their declarations (``_cdef.CDEF``),
cffi's precompiled type tables of them (``_ffi_abi.py``, "out-of-line ABI
mode", so that importing colfile does not parse C) and their constants
(``_constants.py``); a test fails when these are stale.  :func:`lib`
``dlopen``\\ s the shared library on first use.

Where the library is looked for, in order:

1. ``colfile/_lib/libcolfile.so*`` inside this package (where the wheel build
   installs it);
2. the path in the environment variable ``COLFILE_LIBRARY``;
3. the system's library search path (``ctypes.util.find_library``).

Threads and the GIL
-------------------
cffi releases the GIL around every call into a library opened with
``ffi.dlopen``, so long reads and writes of distinct handles run in parallel
from Python threads.  The binding itself holds no global lock: each
:class:`~colfile.Column` (and :class:`~colfile.File`) serialises the calls
on its *own* C handle with a per-handle :class:`threading.Lock`, because the
C contract forbids using one handle from two threads at once.  Arrays passed
to C are referenced by the calling frame for the duration of the call, so the
memory stays valid while the GIL is released.
"""

from __future__ import annotations

import glob
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ._constants import CF_OPEN_NOMMAP
from ._ffi_abi import ffi
from .errors import InvalidNameError

__all__ = ["environment_open_flags", "ffi", "lib", "library_path", "take_strings"]

_lock = threading.Lock()
_lib: Any = None
_lib_path: str | None = None


def _candidates() -> Iterator[str]:
    """Where libcolfile may be, in order; the system search last and only
    when asked for (``find_library`` runs ``ldconfig``, even ``gcc``: tens
    of milliseconds that an installed wheel, carrying its library, never
    needs)."""
    here = os.path.dirname(os.path.abspath(__file__))
    yield from sorted(glob.glob(os.path.join(here, "_lib", "libcolfile.so*")))
    yield from sorted(glob.glob(os.path.join(here, "_lib", "libcolfile*.dylib")))
    env = os.environ.get("COLFILE_LIBRARY")
    if env:
        yield env
    import ctypes.util

    system = ctypes.util.find_library("colfile")
    if system:
        yield system


def lib() -> Any:
    """Return the loaded libcolfile (loading it on first call).

    Raises
    ------
    ImportError
        If no library can be found or loaded; the message lists where it
        looked.
    """
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            try:
                handle = ffi.dlopen(path)
            except OSError as exc:
                tried.append(f"{path}: {exc}")
                continue
            _lib_path = path
            _lib = handle
            return _lib
        where = "; ".join(tried) if tried else "nothing found"
        raise ImportError(
            "colfile: cannot load libcolfile (looked in colfile/_lib/, "
            f"$COLFILE_LIBRARY and the system search path: {where})"
        )


def environment_open_flags() -> int:
    """The cf_file_open flags the environment asks for, to be added to
    every open: ``CF_OPEN_NOMMAP`` when ``COLFILE_NO_MMAP`` is set to
    anything but ``""`` or ``"0"`` (reads then never copy out of a memory
    map).  The library reads no environment variable; this keeps that
    switch for Python programs."""
    # os.environ.get of an unset name raises and catches a KeyError inside
    # (about 3 us, on every open of every small read); where os.environ
    # keeps its encoded copy in a dict (POSIX), an unset name is seen there
    if _ENVIRON_DATA is not None and _NOMMAP_KEY not in _ENVIRON_DATA:
        return 0
    value = os.environ.get("COLFILE_NO_MMAP", "")
    return CF_OPEN_NOMMAP if value not in ("", "0") else 0


#: os.environ's own dict of encoded names and values (updated by every
#: change made through os.environ), or None where it is not one
_ENVIRON_DATA: dict[bytes, bytes] | None = getattr(os.environ, "_data", None) \
    if os.name == "posix" and isinstance(getattr(os.environ, "_data", None), dict) else None
_NOMMAP_KEY = os.fsencode("COLFILE_NO_MMAP")


def library_path() -> str:
    """The path of the shared library in use (loading it if needed)."""
    lib()
    assert _lib_path is not None
    return _lib_path


#: ``cf_error *``, parsed once: what every call that can fail allocates
#: (``ffi.new(ERROR_P)``; see :func:`new_error`)
ERROR_P = ffi.typeof("cf_error *")


def new_error() -> Any:
    """A fresh, zeroed ``cf_error *`` record."""
    return ffi.new(ERROR_P)


def string(ptr: Any) -> str:
    """Decode a C string owned by the library (``NULL`` gives ``''``)."""
    if ptr == ffi.NULL:
        return ""
    return str(ffi.string(ptr).decode("utf-8", "surrogateescape"))


def take_strings(array: Any, count: int) -> list[str]:
    """Decode a ``char **`` list the library returned (``cf_file_list``,
    ``cf_file_cleanup``, ``cf_column_attr_names``) and free it
    (``cf_names_free``)."""
    try:
        return [string(array[i]) for i in range(count)]
    finally:
        lib().cf_names_free(array, count)


_FS_ENCODING = sys.getfilesystemencoding()


def encode(text: str | bytes | os.PathLike[str]) -> bytes:
    """Encode a path for C (file system encoding).  A NUL byte would cut
    the C string short, so it is refused here."""
    # os.fsencode's own steps, for the common str (opening a File is part
    # of every small read)
    raw = (text.encode(_FS_ENCODING, "surrogateescape") if type(text) is str
           else text if isinstance(text, bytes) else os.fsencode(text))
    # `0 in raw` is one memchr; `b"\0" in raw` first fails to read its
    # operand as an int, formatting and dropping a TypeError each time
    if 0 in raw:
        raise InvalidNameError(f"invalid path {raw!r}: contains a NUL byte")
    return raw


def encode_name(name: str) -> bytes:
    """Encode a column, group or attribute name for C (UTF-8).  A NUL byte
    would cut the C string short and name something else, so it is refused
    before C sees it; C checks every other rule."""
    raw = name.encode("utf-8", "surrogateescape")
    if 0 in raw:  # one memchr (see encode)
        at = raw.index(b"\0")
        raise InvalidNameError(f"invalid name {name!r}: contains a NUL byte at byte {at}")
    return raw
