"""Row selection: numpy indexing over the first axis of a column.

This is the one place that turns an index (``col[key]``) into C calls; both
:class:`~colfile.Column` and :class:`~colfile.Dataset` use it.  An index is
split by :func:`parse` into

* a :class:`Rows` selection on the first axis (an integer, a slice with any
  step, or explicit rows from an integer array, a list or a boolean mask);
* the *rest* of the key, applied by numpy to the rows once they are read
  (the vector component of an ``nmemb > 1`` column, e.g. ``col[:, 0]``).

A boolean mask of a vector column's full shape (``col[mask]``, one flag per
element) reads the rows it touches and lets numpy pick the elements; a
write through it rewrites those rows.  Where numpy's verdict on an index
depends on more than the rows (the order of its checks, index arrays that
broadcast to nothing) it is asked on an array of the column's shape whose
elements share one byte range (:func:`_probe`): in error paths, and before
a write through an element mask.

:func:`read` and :func:`write` execute a selection against any object with
the primitives of :class:`RowIO`:

* contiguous slices go to C in one call, straight into / out of the caller's
  buffer (negative steps use a reversed view, not a copy); the plainest
  read of all, ``col[a:b]`` (no step, nothing else), takes a shorter way
  with the same result (:meth:`Column.__getitem__`), because it is the
  read whose fixed cost matters most;
* slices with a step ``k > 1`` are read by one ``cf_column_read_step`` call
  (the core gathers the rows, no list of them is built); writes go out as
  explicit rows (the C API has no stepped write);
* integer arrays go to ``cf_column_read_rows`` as they are: the core reads
  sorted lists in windows of nearby rows, and gathers a list out of order
  as listed from the page cache, or sorts it (O(n log n)) when the column
  is not all cached; writes are sorted (stable argsort: the last value
  wins, as in numpy), de-duplicated and sent as runs of consecutive rows.
"""

from __future__ import annotations

import contextlib
import operator
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from ._dtypes import as_array
from .errors import RangeError

__all__ = ["Rows", "RowIO", "parse", "read", "write", "getitem", "setitem"]

#: Rows listed per cf_column_write_rows call for stepped slices.
ROWS_PER_CALL = 1 << 20


class RowIO(Protocol):
    """What :func:`read` and :func:`write` need from a column."""

    def _new_rows(self, count: int, first: int) -> np.ndarray:
        """A new array for ``count`` rows read from row ``first`` on."""
        ...

    def _read_contig(self, start: int, count: int, out: np.ndarray) -> None: ...

    def _read_rows(self, rows: np.ndarray, out: np.ndarray) -> None: ...

    def _read_step(self, start: int, step: int, count: int, out: np.ndarray) -> None: ...

    def _write_contig(self, start: int, count: int, data: np.ndarray) -> None: ...

    def _write_sorted(self, rows: np.ndarray, data: np.ndarray) -> None: ...


class Rows:
    """A selection of rows, in the order of the result.

    Either an arithmetic progression (``start``, ``step``, ``count``: integer
    and slice indices) or explicit ``rows`` (integer arrays, lists, masks).
    ``shape`` is the shape the first axis takes in the result: ``()`` for an
    integer, ``(count,)`` for a slice, the index array's shape otherwise.
    """

    def __init__(self, count: int, shape: tuple[int, ...], start: int = 0,
                 step: int = 1, rows: np.ndarray | None = None) -> None:
        self.count = count
        self.shape = shape
        self.start = start
        self.step = step
        self.rows = rows

    @classmethod
    def from_rows(cls, rows: np.ndarray) -> Rows:
        """A selection of explicit rows (already in range)."""
        rows = np.ascontiguousarray(rows, dtype=np.int64).reshape(-1)
        return cls(len(rows), rows.shape, rows=rows)

    @property
    def scalar(self) -> bool:
        """True for an integer index (the first axis is dropped)."""
        return self.shape == ()

    @cached_property
    def is_sorted(self) -> bool:
        r = self.rows
        return r is None or len(r) < 2 or bool(np.all(r[1:] >= r[:-1]))

    @cached_property
    def order(self) -> np.ndarray | None:
        """Stable sort permutation of explicit rows (None if sorted): what
        writes need (of repeated rows, the last value wins)."""
        if self.rows is None or self.is_sorted:
            return None
        return np.argsort(self.rows, kind="stable")

    @cached_property
    def is_run(self) -> bool:
        """True if the explicit rows are consecutive and ascending."""
        r = self.rows
        if r is None or len(r) == 0:
            return False
        return int(r[-1]) - int(r[0]) == len(r) - 1 and bool(np.all(np.diff(r) == 1))

    def __repr__(self) -> str:
        if self.rows is None:
            return f"Rows(start={self.start}, step={self.step}, count={self.count}, shape={self.shape})"
        return f"Rows(rows={self.rows!r}, shape={self.shape})"


def _is_advanced(k: Any) -> bool:
    return not (isinstance(k, slice) or k is Ellipsis or _is_integer(k))


def _is_integer(k: Any) -> bool:
    if isinstance(k, (bool, np.bool_)):
        return False
    if isinstance(k, (int, np.integer)):
        return True
    return isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu"


def _out_of_bounds(index: int, size: int, what: str) -> RangeError:
    return RangeError(f"index {index} is out of bounds for {what} with size {size}")


def parse(key: Any, size: int, row_ndim: int, what: str) -> tuple[Rows, tuple[Any, ...]]:
    """Split ``key`` into a first-axis :class:`Rows` and the rest.

    Parameters
    ----------
    key
        Anything numpy accepts as an index, except ``np.newaxis``.
    size
        Rows in the column.
    row_ndim
        Dimensions of one row: 0 for scalar rows, 1 for vectors.
    what
        Names the column in error messages.

    Examples
    --------
    >>> rows, rest = parse((slice(None, None, -2), 0), 5, 1, "x")
    >>> rows.start, rows.step, rows.count, rest
    (4, -2, 3, (0,))
    >>> parse([3, -1], 5, 0, "x")[0].rows
    array([3, 4])
    """
    if not isinstance(key, tuple):
        key = (key,)
    ndim = 1 + row_ndim
    for k in key:
        if k is None:
            raise IndexError(f"{what}: np.newaxis (None) is not supported in a "
                             "column index; index the result instead")
        if isinstance(k, (bool, np.bool_)):
            # numpy treats them as a new axis (of length 1 or 0), anywhere
            raise IndexError(f"{what}: boolean scalar indices are not supported "
                             "in a column index; index the result instead")
    ellipses = [i for i, k in enumerate(key) if k is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if ellipses:
        i = ellipses[0]
        fill = ndim - (len(key) - 1)
        if fill < 0:
            raise IndexError(f"too many indices for {what}: it is {ndim}-dimensional, "
                             f"but {len(key) - 1} were indexed")
        key = key[:i] + (slice(None),) * fill + key[i + 1:]
    if len(key) > ndim:
        raise IndexError(f"too many indices for {what}: it is {ndim}-dimensional, "
                         f"but {len(key)} were indexed")
    if not key:
        key = (slice(None),)
    first, rest = key[0], tuple(key[1:])
    return _parse_first(first, size, what, ndim), rest


def _parse_first(first: Any, size: int, what: str, ndim: int = 1) -> Rows:
    if isinstance(first, slice):
        start, stop, step = first.indices(size)
        count = len(range(start, stop, step))
        return Rows(count, (count,), start=start, step=step)
    if isinstance(first, (bool, np.bool_)):
        raise IndexError(f"{what}: boolean scalar indices are not supported")
    if _is_integer(first):
        i = operator.index(first)
        j = i + size if i < 0 else i
        if not 0 <= j < size:
            raise _out_of_bounds(i, size, what)
        return Rows(1, (), start=j, step=1)
    if isinstance(first, (str, bytes)):
        raise IndexError(f"{what}: only integers, slices (':'), ellipsis ('...'), "
                         "integer or boolean arrays are valid indices")
    arr = np.asarray(first)
    if arr.dtype == np.bool_ and arr.ndim == 1 and arr.size == 0:
        arr = arr.astype(np.int64)  # numpy: an empty mask selects nothing, any length
    if arr.dtype == np.bool_:
        if arr.ndim > ndim:
            raise _mask_mismatch(arr.shape, (size,) * ndim, what)
        if arr.ndim != 1 or len(arr) != size:
            raise _mask_mismatch(arr.shape[:1], (size,), what)
        rows = np.flatnonzero(arr).astype(np.int64, copy=False)
        sel = Rows(len(rows), (len(rows),), rows=rows)
        sel.is_sorted = True
        return sel
    if arr.size == 0 and arr.dtype.kind in "fO":
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise IndexError(f"{what}: arrays used as indices must be of integer (or "
                         f"boolean) type, not {arr.dtype}")
    shape = arr.shape
    flat = arr.reshape(-1)
    negative = False
    if flat.size:
        hi = int(flat.max())
        lo = int(flat.min())
        if hi >= size or lo < -size:
            bad = flat[(flat >= size) | (flat < -size)][0] if lo < 0 else flat[flat >= size][0]
            raise _out_of_bounds(int(bad), size, what)
        negative = lo < 0
    rows = flat.astype(np.int64)  # always a private copy
    if negative:
        rows[rows < 0] += size
    return Rows(len(rows), shape, rows=rows)


def _mask_mismatch(mask_shape: tuple[int, ...], shape: tuple[int, ...],
                   what: str) -> IndexError:
    """numpy's error for a boolean index that does not fit ``shape``."""
    if len(mask_shape) > len(shape):
        return IndexError(f"too many indices for {what}: it is {len(shape)}-dimensional, "
                          f"but {len(mask_shape)} were indexed")
    axis = next(i for i, (m, n) in enumerate(zip(mask_shape, shape)) if m != n)
    return IndexError(f"boolean index did not match {what} along axis {axis}; size of "
                      f"axis is {shape[axis]} but size of corresponding boolean axis "
                      f"is {mask_shape[axis]}")


def _element_mask(key: Any, size: int, row_shape: tuple[int, ...],
                  what: str) -> np.ndarray | None:
    """The mask of a key that is one boolean array over rows and components
    (``col[mask]`` with ``mask.shape == col.shape`` for a vector column,
    an ellipsis allowed beside it), else None."""
    if not row_shape:
        return None
    parts = [k for k in (key if isinstance(key, tuple) else (key,)) if k is not Ellipsis]
    if len(parts) != 1 or isinstance(parts[0], (str, bytes)) or \
            not isinstance(parts[0], (np.ndarray, list)):
        return None
    mask = np.asarray(parts[0])
    if mask.dtype != np.bool_ or mask.ndim != 2:
        return None
    if mask.shape != (size,) + row_shape:
        raise _mask_mismatch(mask.shape, (size,) + row_shape, what)
    return mask


def _ascending(sel: Rows, arr: np.ndarray) -> tuple[int, int, np.ndarray]:
    """A progression selection as (first row, positive step, ``arr`` viewed
    in that ascending order): a negative step walks the same rows backwards."""
    if sel.step < 0:
        return sel.start + (sel.count - 1) * sel.step, -sel.step, arr[::-1]
    return sel.start, sel.step, arr


def read(sel: Rows, io: RowIO, out: np.ndarray) -> None:
    """Read the selected rows into ``out`` (first axis ``sel.count``)."""
    n = sel.count
    if n == 0:
        return
    if sel.rows is None:
        start, step, out = _ascending(sel, out)
        if step == 1:
            io._read_contig(start, n, out)
        else:
            io._read_step(start, step, n, out)
        return
    if sel.is_run:
        io._read_contig(int(sel.rows[0]), n, out)
    else:
        io._read_rows(sel.rows, out)


def write(sel: Rows, io: RowIO, data: np.ndarray) -> None:
    """Write ``data`` (first axis ``sel.count``) to the selected rows."""
    n = sel.count
    if n == 0:
        return
    if sel.rows is None:
        start, step, data = _ascending(sel, data)
        if step == 1:
            io._write_contig(start, n, data)
        else:
            for i0 in range(0, n, ROWS_PER_CALL):
                m = min(ROWS_PER_CALL, n - i0)
                rows = start + step * np.arange(i0, i0 + m, dtype=np.int64)
                io._write_sorted(rows, data[i0:i0 + m])
        return
    if sel.is_run:
        io._write_contig(int(sel.rows[0]), n, data)
        return
    order = sel.order
    srt = sel.rows if order is None else sel.rows[order]
    pick: np.ndarray | None = order
    if n > 1:
        last = np.empty(n, dtype=bool)
        np.not_equal(srt[1:], srt[:-1], out=last[:-1])
        last[-1] = True
        if not last.all():  # repeated rows: the last value wins, as in numpy
            pick = (np.arange(n) if order is None else order)[last]
            srt = srt[last]
    vals = data if pick is None else data[pick]
    # One C call writes the strictly increasing rows, in runs.
    io._write_sorted(srt, vals)


def _finish(sel: Rows, rest: tuple[Any, ...], block: np.ndarray,
            row_shape: tuple[int, ...]) -> Any:
    """Apply the first-axis shape and the rest of the key to read rows."""
    if sel.scalar:
        return block[(0,) + rest]
    if not rest:
        if len(sel.shape) == 1:
            return block
        return block.reshape(sel.shape + row_shape)
    if sel.rows is None:  # a slice stays a slice
        return block[(slice(None),) + rest]
    if any(_is_advanced(k) for k in rest):
        local = np.arange(sel.count).reshape(sel.shape)
        return block[(local,) + rest]
    shaped = block.reshape(sel.shape + row_shape)
    return shaped[(slice(None),) * len(sel.shape) + rest]


def _probe(size: int, row_shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """A writable array of the column's shape and dtype whose elements all
    share one byte range (strides 0): numpy's verdict on an index at no
    cost in memory."""
    from numpy.lib.stride_tricks import as_strided

    return as_strided(np.zeros(1, dtype), shape=(size,) + row_shape,
                      strides=(0,) * (1 + len(row_shape)), writeable=True)


def _empty_result(key: Any, size: int, row_shape: tuple[int, ...],
                  dtype: np.dtype[Any]) -> np.ndarray | None:
    """For a read whose row index is out of bounds: the empty array numpy
    gives when the index arrays broadcast to nothing (numpy then checks no
    bounds: ``a[[5], []]``), else None."""
    try:
        out = _probe(size, row_shape, dtype)[key]
    except Exception:  # noqa: BLE001 - the index error is raised by the caller
        return None
    return np.empty(out.shape, dtype) if out.size == 0 else None


def _numpy_error(key: Any, value: Any, size: int, row_shape: tuple[int, ...],
                 dtype: np.dtype[Any], what: str) -> None:
    """Raise what numpy raises for ``a[key] = value`` on an array of the
    column's shape and dtype (its message prefixed with ``what``), if it
    raises one of the builtin classes of index and value errors."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _probe(size, row_shape, dtype)[key] = value
    except (ValueError, TypeError, IndexError, OverflowError) as exc:
        if type(exc) in (ValueError, TypeError, IndexError, OverflowError):
            raise type(exc)(f"{what}: {exc}") from None
        raise


def _respell(key: Any, local: np.ndarray) -> Any:
    """``key`` (an element mask, alone or beside ellipses) with the mask
    replaced by ``local``: numpy treats the spellings differently."""
    if isinstance(key, tuple):
        return tuple(k if k is Ellipsis else local for k in key)
    return local


def _mask_rows(mask: np.ndarray) -> tuple[Rows, np.ndarray]:
    """The rows an element mask touches, and the mask of those rows."""
    rows = np.flatnonzero(mask.any(axis=1))
    sel = Rows.from_rows(rows)
    sel.is_sorted = True
    return sel, mask[rows]


def getitem(io: RowIO, key: Any, size: int, row_shape: tuple[int, ...],
            dtype: np.dtype[Any], what: str) -> Any:
    """``column[key]``: read and return a new array (or a numpy scalar)."""
    mask = _element_mask(key, size, row_shape, what)
    if mask is not None:
        sel, local = _mask_rows(mask)
        block = np.empty((sel.count,) + row_shape, dtype)
        read(sel, io, block)
        return block[local]
    try:
        sel, rest = parse(key, size, len(row_shape), what)
    except RangeError:
        empty = _empty_result(key, size, row_shape, dtype)
        if empty is None:
            raise
        return empty
    if sel.count and sel.rows is None and sel.step == 1:  # one copy: placed for it
        block = io._new_rows(sel.count, sel.start)
    else:
        block = np.empty((sel.count,) + row_shape, dtype)
    read(sel, io, block)
    if sel.scalar and _has_ellipsis(key):
        # numpy: an index with an ellipsis gives an array (0-d at least, of
        # the column's dtype and byte order), never a scalar
        return block[(0,) + rest + (Ellipsis,)]
    return _finish(sel, rest, block, row_shape)


def _whole_rows(rest: tuple[Any, ...], row_shape: tuple[int, ...]) -> bool:
    """True if ``rest`` selects every element of a row in order
    (``col[a:b, :]``, ``col[a:b, 0:nmemb]``): then rows are written whole."""
    if len(rest) != 1 or len(row_shape) != 1 or not isinstance(rest[0], slice):
        return False
    return rest[0].indices(row_shape[0]) == (0, row_shape[0], 1)


def _explicit(sel: Rows) -> np.ndarray:
    """The selected rows as an array, in the order of the selection."""
    if sel.rows is not None:
        return sel.rows
    return sel.start + sel.step * np.arange(sel.count, dtype=np.int64)


def read_for_update(sel: Rows, io: RowIO, block: np.ndarray) -> None:
    """Read the selected rows into ``block`` for a read-modify-write: rows
    that hold no data yet (never written: a plain read raises
    IncompleteError for them) come as zeros, as h5py's default fill value."""
    missing_of = getattr(io, "_rows_missing", None)
    if missing_of is None or sel.count == 0:
        read(sel, io, block)
        return
    rows = _explicit(sel)
    missing = missing_of(rows)
    if missing is None:
        read(sel, io, block)
        return
    block[missing] = 0
    have = ~missing
    if have.any():
        part = Rows.from_rows(rows[have])
        got = np.empty((part.count,) + block.shape[1:], block.dtype)
        read(part, io, got)
        block[have] = got


def _update_lock(io: RowIO) -> Any:
    """The handle's lock for read-modify-writes of part of rows (one at a
    time, so threads writing other components of the same rows do not undo
    each other's), or none for a RowIO without one."""
    lock = getattr(io, "_rmw_lock", None)
    return contextlib.nullcontext() if lock is None else lock


def _has_ellipsis(key: Any) -> bool:
    return key is Ellipsis or (isinstance(key, tuple) and any(k is Ellipsis for k in key))


def setitem(io: RowIO, key: Any, value: Any, size: int, row_shape: tuple[int, ...],
            dtype: np.dtype[Any], what: str) -> None:
    """``column[key] = value``.

    Whole rows are written straight from ``value`` (broadcast, never copied
    or modified; the C core converts its dtype); a key whose second part
    takes every element in order (``col[a:b, :]``) writes whole rows too.
    A key that selects part of each row (``col[:, 1] = v``) reads the rows
    (zeros for rows never written), assigns in numpy and writes them back
    whole (libcolfile writes whole rows only), so bigfile's running byte
    sum counts the rewritten bytes of rows already written twice (as
    bigfile itself does for any rewrite).  Such updates on one handle run
    one at a time (its ``_rmw_lock``), so that threads filling different
    components of the same rows (dask.array.store) do not undo each other.
    """
    mask = _element_mask(key, size, row_shape, what)
    if mask is not None:  # read the rows touched, assign in numpy, write back
        # numpy's verdict on the value first, on the key as given: its
        # checks depend on the spelling (mask, (mask,), (mask, ...))
        _probe(size, row_shape, dtype)[key] = value
        sel, local = _mask_rows(mask)
        block = np.empty((sel.count,) + row_shape, dtype)
        with _update_lock(io):
            read_for_update(sel, io, block)
            block[_respell(key, local)] = value
            write(sel, io, block)
        return
    try:
        sel, rest = parse(key, size, len(row_shape), what)
    except RangeError as out_of_bounds:
        # numpy converts the value and checks its shape before the bounds,
        # and checks no bounds when its index arrays select nothing
        try:
            _numpy_error(key, value, size, row_shape, dtype, what)
        except IndexError:
            raise out_of_bounds from None
        return  # numpy accepted it: nothing is selected
    if rest and _whole_rows(rest, row_shape):
        rest = ()
    if rest:
        if sel.rows is not None:
            uniq, inverse = np.unique(sel.rows, return_inverse=True)
            usel = Rows.from_rows(uniq)
            usel.is_sorted = True
            local: Any = inverse.reshape(sel.shape)
        else:
            usel = sel
            local = 0 if sel.scalar else slice(None)
        block = np.empty((usel.count,) + row_shape, dtype)
        # an ellipsis in the key makes numpy assign to a view, not one element
        tail = (Ellipsis,) if _has_ellipsis(key) else ()
        with _update_lock(io):
            read_for_update(usel, io, block)
            block[(local,) + rest + tail] = value
            write(usel, io, block)
        return
    arr = as_array(value, dtype)
    target = sel.shape + row_shape
    try:
        arr = np.broadcast_to(arr, target)
    except ValueError:
        # numpy's class for this value and key (assigning one element, it
        # refuses sequences with a ValueError or, for lists, a TypeError)
        _numpy_error(key, value, size, row_shape, dtype, what)
        extra = arr.ndim - len(target)
        if extra <= 0 or any(n != 1 for n in arr.shape[:extra]):
            raise ValueError(f"{what}: could not broadcast a value of shape {arr.shape} "
                             f"to the selection's shape {target}") from None
        # numpy drops leading axes of length 1 from the value
        arr = np.broadcast_to(arr.reshape(arr.shape[extra:]), target)
    arr = arr.reshape((sel.count,) + row_shape)
    write(sel, io, arr)
