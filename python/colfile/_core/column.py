"""``cf_column`` handles: opening, creating, describing, reading and
writing rows, committing and releasing.

A column handle is an opaque object to the rest of colfile.  The caller
serialises the calls on one handle (the C contract forbids using one handle
from two threads at once); every function here that can fail raises the
colfile exception of the C error.  Row buffers are numpy arrays passed with
their strides; a dtype token of ``None`` means "the column's own dtype".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._ffi import ERROR_P, encode_name, ffi, lib
from ._errors import check, new_error, raise_error
from .._constants import CF_CREATE_REPLACE, CF_ENOENT
from .memory import NULL, int64_ptr, ptr, take_bytes

__all__ = [
    "encode_name", "open_read", "open", "open_block", "probe", "create", "describe",
    "set_chunk_rows", "release", "close", "forget", "discard", "flush", "read", "read_slice",
    "read_rows", "read_step",
    "write", "write_rows", "refuse_write", "size", "nfile", "blob_rows", "blob_rows_held",
    "row_offset", "torn", "path", "grow", "pending_export", "pending_merge",
    "export_meta", "open_meta",
]

#: what opening a column allocates, parsed once
_COLUMN_PP = ffi.typeof("cf_column **")
_DESC_P = ffi.typeof("cf_column_desc *")
_tostr = ffi.string


# -- opening and creating -------------------------------------------------

def open_read(fh: Any, name: str) -> tuple[Any, bool, tuple[str, str, str, int, bool, int]] | None:
    """``cf_column_open`` of ``name`` on File handle ``fh`` without an error
    record, with :func:`torn` and :func:`describe`, in one step: ``(handle,
    torn, description)``, or ``None`` if the open fails (:func:`open` then
    says why).  A small read opens its File and columns each time: each
    Python call saved here is saved per column read."""
    raw = name.encode("utf-8", "surrogateescape")
    out = ffi.new(_COLUMN_PP)
    L = lib()
    if 0 in raw or L.cf_column_open(out, fh, raw, NULL) < 0:
        return None
    h = out[0]
    d = ffi.new(_DESC_P)
    L.cf_column_describe(h, d)  # describe()'s tuple, without a call more
    return h, bool(L.cf_column_torn(h)), (
        name, _tostr(d.path).decode("utf-8", "surrogateescape"), _tostr(d.dtype).decode("ascii"),
        d.kind, bool(d.writable), d.nmemb)


def open(fh: Any, name: str | bytes, context: str = "column") -> Any:  # noqa: A001
    """``cf_column_open`` of ``name`` (bytes: already encoded, see
    :func:`encode_name`) on File handle ``fh``: the handle or the error
    raised (a missing column: :class:`~colfile.ColumnNotFoundError` with
    ``context='column'``)."""
    out = ffi.new(_COLUMN_PP)
    err = ffi.new(ERROR_P)
    raw = name if type(name) is bytes else encode_name(name)
    check(lib().cf_column_open(out, fh, raw, err), err, context)
    return out[0]


def open_block(fh: Any, name: str, create: bool) -> Any:
    """Open the attribute block ``name`` (``"."``, ``"grp/."``); if it does
    not exist: ``None``, or (``create``) a new one."""
    out = ffi.new(_COLUMN_PP)
    err = ffi.new(ERROR_P)
    L = lib()
    raw = encode_name(name)
    rc = L.cf_column_open(out, fh, raw, err)
    if rc >= 0:
        return out[0]
    if err.code != CF_ENOENT:
        raise_error(rc, err, "column")
    if not create:
        return None
    check(L.cf_column_create(out, fh, raw, NULL, 0, 0, 0, err), err)
    return out[0]


def probe(fh: Any, name: str, raise_codes: tuple[int, ...] = ()) -> int:
    """Whether ``name`` opens on ``fh``: 0 if it does (the handle is
    released at once), else the negative code; codes in ``raise_codes``
    are raised instead."""
    out = ffi.new(_COLUMN_PP)
    err = new_error()
    L = lib()
    rc = L.cf_column_open(out, fh, encode_name(name), err)
    if rc >= 0:
        L.cf_column_close(out[0], NULL)
        return 0
    code = int(err.code) or int(rc)
    if code in raise_codes:
        raise_error(rc, err)
    return code


def create(fh: Any, name: str, tok: str | None, nmemb: int, blob_rows: np.ndarray,
           replace: bool, chunk_rows: int | None = None) -> Any:
    """``cf_column_create_ex``: a new column (staged until its first
    commit) of dtype token ``tok`` (``None``: a header-only block) with
    ``blob_rows`` (contiguous int64) rows per blob, replacing one there if
    ``replace``; ``chunk_rows`` set before anything is written."""
    out = ffi.new(_COLUMN_PP)
    err = new_error()
    ctok = NULL if tok is None else tok.encode("ascii")
    flags = CF_CREATE_REPLACE if replace else 0
    L = lib()
    check(L.cf_column_create_ex(out, fh, encode_name(name), ctok, nmemb, len(blob_rows),
                                int64_ptr(blob_rows), flags, err), err, "create")
    if chunk_rows is not None:
        rc = L.cf_column_set_chunk_rows(out[0], chunk_rows, err)
        if rc < 0:
            L.cf_column_close(out[0], NULL)
            raise_error(rc, err)
    return out[0]


def create_plain(fh: Any, name: str | bytes, tok: str | None, nmemb: int, size: int,
                 nfile: int) -> Any:
    """``cf_column_create``: ``size`` rows split evenly over ``nfile``
    blobs (``tok`` ``None``: a header-only block), committed at once."""
    out = ffi.new(_COLUMN_PP)
    err = new_error()
    ctok = NULL if tok is None else tok.encode("ascii")
    L = lib()
    raw = name if type(name) is bytes else encode_name(name)
    rc = L.cf_column_create(out, fh, raw, ctok, nmemb, size, nfile, err)
    if rc >= 0:
        rc = L.cf_column_flush(out[0], err)
        if rc < 0:
            L.cf_column_close(out[0], NULL)
    check(rc, err, "column")
    return out[0]


def describe(h: Any, name: str | None = None) -> tuple[str, str, str, int, bool, int]:
    """``(name, path, dtype token, kind, writable, nmemb)`` in one call
    (``cf_column_describe``; each separate call costs about 1.5 us).  A
    ``name`` the caller opened the column by is the one the core keeps:
    returned as it is, not decoded again."""
    d = ffi.new(_DESC_P)
    lib().cf_column_describe(h, d)
    return (name if name is not None else _tostr(d.name).decode("utf-8", "surrogateescape"),
            _tostr(d.path).decode("utf-8", "surrogateescape"),
            _tostr(d.dtype).decode("ascii"), d.kind, bool(d.writable), d.nmemb)


def set_chunk_rows(h: Any, rows: int) -> None:
    """Rows per statistics chunk of a column nothing was written to yet."""
    err = new_error()
    check(lib().cf_column_set_chunk_rows(h, rows, err), err)


# -- releasing -------------------------------------------------------------

def release(h: Any) -> None:
    """Close a handle whose errors cannot be reported (a read-only one, a
    finalizer's, one given up)."""
    lib().cf_column_close(h, NULL)


def close(h: Any) -> None:
    """Commit and close (``cf_column_close``); the handle is released even
    when the commit fails, and the failure raised."""
    err = ffi.new(ERROR_P)
    check(lib().cf_column_close(h, err), err)


def forget(h: Any) -> None:
    """Release a handle inherited through fork without committing
    (``cf_column_forget``)."""
    lib().cf_column_forget(h)


def discard(h: Any) -> None:
    """Give up uncommitted changes: closing commits nothing."""
    lib().cf_column_discard(h)


def flush(h: Any) -> None:
    """Commit the pending metadata (``cf_column_flush``)."""
    err = new_error()
    check(lib().cf_column_flush(h, err), err)


# -- rows -------------------------------------------------------------------

def read(h: Any, start: int, count: int, out: np.ndarray, tok: bytes | None,
         rs: int, es: int) -> None:
    """Read rows ``start:start+count`` into ``out`` (row stride ``rs``,
    element stride ``es``; ``tok`` ``None``: no conversion)."""
    err = ffi.new(ERROR_P)
    rc = lib().cf_column_read(h, start, count, ptr(out), NULL if tok is None else tok,
                              rs, es, err)
    if rc < 0:
        raise_error(rc, err, "file")


def read_slice(h: Any, key: slice, row_shape: tuple[int, ...], dtype: np.dtype[Any],
               rowbytes: int, place_min: int,
               place: Callable[[tuple[int, ...], np.dtype[Any], int], np.ndarray]) -> np.ndarray:
    """The rows of ``key`` (a slice without a step) in a new array, in one
    step: the size, the slice, the array (``place(shape, dtype, offset)``
    for one of ``place_min`` bytes or more, ``offset`` where its first row
    starts in its blob file) and the read.  A small read's cost is mostly
    the Python calls around the copy: each one saved here counts."""
    L = lib()
    start, stop, _ = key.indices(L.cf_column_size(h))
    n = stop - start if stop > start else 0
    if n * rowbytes < place_min:
        out = np.empty((n,) + row_shape, dtype)
    else:
        out = place((n,) + row_shape, dtype, L.cf_column_row_offset(h, start))
    if n:  # a new array: C-contiguous, passed as its buffer
        err = ffi.new(ERROR_P)
        rc = L.cf_column_read(h, start, n, ffi.from_buffer(out), NULL, out.strides[0],
                              out.itemsize, err)
        if rc < 0:
            raise_error(rc, err, "file")
    return out


def read_rows(h: Any, rows: np.ndarray, out: np.ndarray, tok: bytes, rs: int,
              es: int) -> None:
    """Read the rows numbered in ``rows`` (contiguous int64, sorted)."""
    err = new_error()
    check(lib().cf_column_read_rows(h, int64_ptr(rows), len(rows), ptr(out), tok, rs, es,
                                    err), err)


def read_step(h: Any, start: int, step: int, count: int, out: np.ndarray, tok: bytes,
              rs: int, es: int) -> None:
    """Read ``count`` rows from ``start`` every ``step`` rows."""
    err = new_error()
    check(lib().cf_column_read_step(h, start, step, count, ptr(out), tok, rs, es, err), err)


def write(h: Any, start: int, count: int, data: np.ndarray, tok: bytes | None, rs: int,
          es: int) -> None:
    """Write ``count`` rows of ``data`` from row ``start`` (see :func:`read`)."""
    err = ffi.new(ERROR_P)
    rc = lib().cf_column_write(h, start, count, ptr(data), NULL if tok is None else tok,
                               rs, es, err)
    if rc < 0:
        raise_error(rc, err, "file")


def write_rows(h: Any, rows: np.ndarray, data: np.ndarray, tok: bytes, rs: int,
               es: int) -> None:
    """Write the rows numbered in ``rows`` (contiguous int64, sorted)."""
    err = new_error()
    check(lib().cf_column_write_rows(h, int64_ptr(rows), len(rows), ptr(data), tok, rs, es,
                                     err), err)


def refuse_write(h: Any) -> None:
    """A write of no rows: raises the core's error for a handle that cannot
    write (the message the core gives any write)."""
    err = new_error()
    check(lib().cf_column_write(h, 0, 0, NULL, NULL, 0, 0, err), err)


def grow(h: Any, rows: int, nfile: int) -> None:
    """Append ``nfile`` blobs holding ``rows`` rows (``cf_column_grow``)."""
    err = new_error()
    check(lib().cf_column_grow(h, rows, nfile, err), err)


# -- shape ------------------------------------------------------------------

def size(h: Any) -> int:
    return int(lib().cf_column_size(h))


def nfile(h: Any) -> int:
    return int(lib().cf_column_nfile(h))


def blob_rows(h: Any, i: int) -> int:
    """Rows of blob ``i`` (negative if there is no blob ``i``)."""
    return int(lib().cf_column_blob_rows(h, i))


def all_blob_rows(h: Any) -> list[int]:
    L = lib()
    return [int(L.cf_column_blob_rows(h, i)) for i in range(L.cf_column_nfile(h))]


def blob_rows_held(h: Any, i: int) -> int:
    """Rows of blob ``i`` its file holds bytes for."""
    out = ffi.new("int64_t *")
    err = new_error()
    check(lib().cf_column_blob_rows_held(h, i, out, err), err)
    return int(out[0])


def row_offset(h: Any, row: int) -> int:
    """Where row ``row`` starts in its blob file (bytes)."""
    return int(lib().cf_column_row_offset(h, row))


def torn(h: Any) -> bool:
    return bool(lib().cf_column_torn(h))


def path(h: Any) -> str:
    return str(_tostr(lib().cf_column_path(h)).decode("utf-8", "surrogateescape"))


# -- several writers, one commit --------------------------------------------

def pending_export(h: Any) -> bytes:
    """The handle's uncommitted write state, leaving it clean
    (``cf_column_pending_export``)."""
    err = new_error()
    L = lib()
    return take_bytes(lambda buf, n: check(L.cf_column_pending_export(h, buf, n, err), err))


def pending_merge(h: Any, state: bytes) -> None:
    """Add another handle's exported state (``cf_column_pending_merge``)."""
    err = new_error()
    check(lib().cf_column_pending_merge(h, state, len(state), err), err)


def adopt_update(h: Any) -> None:
    """Take the torn marker ``h`` was opened over for an update by writers
    whose states will be merged into ``h`` (``cf_column_adopt_update``)."""
    err = new_error()
    check(lib().cf_column_adopt_update(h, err), err)


def export_meta(h: Any) -> bytes:
    """A snapshot of the column's metadata (``cf_column_export_meta``)."""
    err = new_error()
    L = lib()
    return take_bytes(lambda buf, n: check(L.cf_column_export_meta(h, buf, n, err), err))


def open_meta(fh: Any, meta: bytes) -> Any:
    """A handle built from a snapshot on File handle ``fh``
    (``cf_column_open_meta``)."""
    out = ffi.new(_COLUMN_PP)
    err = new_error()
    check(lib().cf_column_open_meta(out, fh, meta, len(meta), err), err)
    return out[0]


# -- any column call by its C name -------------------------------------------

def by_name(fname: str) -> Any:
    """A function ``f(h, *args)`` calling the column function ``fname``
    (``"cf_column_index_blob"``) with ``args`` and an error record,
    raising on failure: for the calls tests and benchmarks make that
    colfile itself has no use for."""
    fn = getattr(lib(), fname)

    def call(h: Any, *args: Any) -> int:
        err = new_error()
        return check(fn(h, *args, err), err)

    return call
