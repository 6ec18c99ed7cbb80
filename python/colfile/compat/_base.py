"""What the bigfile compatibility layer is built from: its exceptions,
block names and dtypes, column handles opened on a File's directory, and
attribute sets.  Public through :mod:`colfile.compat.bigfile`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import mpi as _mpi
from .._constants import CF_OPEN_NOCHECK, CF_OPEN_NOLOCK, CF_OPEN_WRITE
from .._core import column as _c
from .._core import file as _cf
from ..attrs import encode_value, numeric_dtype
from ..column import Column as _CoreColumn
from ..errors import DTypeError, Error, InvalidNameError

if TYPE_CHECKING:
    from ._column import Column

__all__ = ["FileClosedError", "ColumnClosedError", "AttrSet"]

# the public home of what follows is colfile.compat.bigfile
_HOME = "colfile.compat.bigfile"


class FileClosedError(Exception):
    """A closed :class:`File` was used (not an :class:`Error`, as in bigfile)."""

    def __init__(self, file: Any = None) -> None:
        if isinstance(file, str) or file is None:
            msg = file or "File is closed"
        else:
            msg = f"File {getattr(file, 'basename', file)!r} is closed"
        super().__init__(msg)


class ColumnClosedError(Exception):
    """A closed :class:`Column` was used (not an :class:`Error`, as in bigfile)."""

    def __init__(self, column: Any = None) -> None:
        if isinstance(column, str) or column is None:
            msg = column or "Column is closed"
        else:
            msg = f"Column {getattr(column, '_name', None)!r} is closed"
        super().__init__(msg)


def _name(name: Any) -> str:
    """Normalise a block name: drop a leading ``/``, doubled ``/`` and ``.``
    components, keeping ``"."`` and a final ``"/."`` (attribute blocks).
    Anything else (spaces, ``..``, empty names) is left for libcolfile to
    refuse."""
    if isinstance(name, bytes):
        name = name.decode("utf-8", "surrogateescape")
    if not isinstance(name, str):
        raise TypeError(f"block names are str, not {type(name).__name__}")
    attrs_only = name == "." or name.endswith("/.")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if attrs_only:
        parts.append(".")
    return "/".join(parts)


def _split_dtype(dtype: Any) -> tuple[np.dtype[Any], int]:
    """(element dtype, nmemb) of a column dtype spec; sub-array shapes give
    nmemb as their product."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise DTypeError(f"not a dtype: {dtype!r} ({exc})") from None
    if dt.subdtype is None:
        return dt, 1
    base, shape = dt.subdtype
    return base, int(np.prod(shape, dtype=np.int64))


def _is_half(dt: np.dtype[Any]) -> bool:
    return dt.kind == "f" and dt.itemsize == 2


def _check_passthrough(src: np.dtype[Any], dst: np.dtype[Any], path: str) -> None:
    """bigfile treats f2 as a pass-through type: no conversion to or from it."""
    if _is_half(src) != _is_half(dst):
        raise DTypeError(f"{path}: no conversion between {src} and {dst} "
                         "(half floats are pass-through, as in bigfile)")



def _core_column(handle: Any) -> _CoreColumn:
    """Wrap a fresh ``cf_column *`` (closing it if wrapping fails)."""
    try:
        return _CoreColumn(handle, None)
    except BaseException:
        _c.release(handle)
        raise


def _open_core(basename: str, name: str) -> _CoreColumn:
    """Open column ``name`` of the File at ``basename`` on a File handle of
    its own (released at once; the column handle does not need it)."""
    fh = _cf.open(basename, CF_OPEN_WRITE | CF_OPEN_NOLOCK)
    try:
        return _core_column(_c.open(fh, _c.encode_name(_name(name))))
    finally:
        _cf.close(fh)


def _open_replica(basename: str, name: str) -> _CoreColumn:
    """A replica of column ``name`` (a handle that writes blobs but never
    metadata files): what a :class:`ColumnMPI` on a rank other than 0 uses
    when it reopens a block on its own after a close."""
    core = _open_core(basename, name)
    try:
        meta = _c.export_meta(core._handle())
    finally:
        core.close()
    return _core_column(_replica_handle(basename, meta))


def _replica_handle(basename: str, meta: bytes) -> Any:
    """A ``cf_column *`` built from a metadata snapshot, on a File handle
    opened with ``CF_OPEN_NOCHECK`` (touching nothing) just for that."""
    fh = _cf.open(basename, CF_OPEN_WRITE | CF_OPEN_NOCHECK | CF_OPEN_NOLOCK)
    try:
        return _c.open_meta(fh, meta)
    finally:
        _cf.close(fh)


def _same(comm: Any, fn: Callable[[], Any], what: str) -> Any:
    """``fn()`` on every rank (errors raised on all), checked to give the
    same value everywhere (:class:`Error` on every rank if not)."""
    return _mpi._check_same(_mpi.agree(comm, fn, collect=True), what)


# ---------------------------------------------------------------------------
# attributes


def _encode_attr(value: Any) -> tuple[str, int, bytes]:
    """bigfile's mapping of a Python value to (dtype token, nmemb, bytes):
    the same as colfile's (:func:`colfile.attrs.encode_value`)."""
    return encode_value(value)


def _decode_attr(token: str, nmemb: int, data: bytes) -> Any:
    """bigfile's reading of a stored attribute: text -> str, byte strings ->
    list of str, numbers -> numpy array (also for one element)."""
    kind = token[1:2]
    if kind == "a":
        return "" if data == b"\0" else data.decode("utf-8", "replace")
    if kind == "S":
        width = int(token[2:]) if token[2:].isdigit() else 1
        return [data[i * width:(i + 1) * width].rstrip(b"\0").decode("utf-8", "replace")
                for i in range(nmemb)]
    dt = numeric_dtype(token)
    if dt is None:  # another tool's kind (<U4, <M8, <O8, ...): opaque bytes
        w = int(token[2:]) if token[2:].isdigit() else 0
        if w < 1 or len(data) != nmemb * w:
            return data
        dt = np.dtype(f"V{w}")
    return np.frombuffer(data, dtype=dt, count=nmemb).copy()


def _check_attr_name(name: str) -> None:
    if not name or any(ch in name for ch in " \t\n\r\0"):
        raise InvalidNameError(f"attribute name {name!r} must be non-empty and hold "
                               "no space, tab, newline or CR")


class AttrSet:
    """The attributes of a block: ``column.attrs``.

    ``attrs[name]``, ``attrs[name] = value``, ``del attrs[name]``, ``in``,
    iteration and :meth:`keys` (a sorted list), with bigfile's value
    semantics (see the module documentation).  Every change is written to
    disk before it returns (for a :class:`ColumnMPI`, by rank 0).
    """

    def __init__(self, column: Column) -> None:
        self.bb = column

    @staticmethod
    def _key(name: Any) -> str:
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        if not isinstance(name, str):
            raise TypeError(f"attribute names are str, not {type(name).__name__}")
        return name

    def __getitem__(self, name: str) -> Any:
        return _decode_attr(*self.bb._attr_raw(self._key(name)))

    def __setitem__(self, name: str, value: Any) -> None:
        key = self._key(name)
        self.bb._attr_store(key, *_encode_attr(value))

    def __delitem__(self, name: str) -> None:
        self.bb._attr_delete(self._key(name))

    def __contains__(self, name: object) -> bool:
        try:
            self.bb._attr_raw(self._key(name))
        except (KeyError, TypeError, UnicodeDecodeError):
            return False
        return True

    def keys(self) -> list[str]:
        """The attribute names, sorted."""
        return self.bb._attr_names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def items(self) -> list[tuple[str, Any]]:
        """``(name, value)`` pairs."""
        return [(k, self[k]) for k in self.keys()]

    def values(self) -> list[Any]:
        """The values, in name order."""
        return [self[k] for k in self.keys()]

    def get(self, name: str, default: Any = None) -> Any:
        """``attrs[name]``, or ``default`` if absent."""
        try:
            return self[name]
        except KeyError:
            return default

    def __repr__(self) -> str:
        try:
            body = ",".join(f"{k}={self[k]!r}" for k in self.keys())
        except (ColumnClosedError, Error):
            body = "closed"
        return f"<AttrSet ({body})>"


for _cls in (FileClosedError, ColumnClosedError, AttrSet):
    _cls.__module__ = _HOME
del _cls
