"""Row selection: numpy indexing over the first axis of a column.

This is the one place that turns an index (``col[key]``) into C calls; both
:class:`~colfile.Column` and :class:`~colfile.Dataset` use it.  An index is
split by :func:`parse` into

* a :class:`Rows` selection on the first axis (an integer, a slice with any
  step, or explicit rows from an integer array, a list or a boolean mask);
* the *rest* of the key, applied by numpy to the rows once they are read
  (the vector component of an ``nmemb > 1`` column, e.g. ``col[:, 0]``).

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
    return _parse_first(first, size, what), rest


def _parse_first(first: Any, size: int, what: str) -> Rows:
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
    if arr.dtype == np.bool_:
        if arr.ndim != 1 or len(arr) != size:
            raise IndexError(
                f"boolean index did not match {what} along axis 0; size of axis is "
                f"{size} but size of corresponding boolean axis is "
                f"{arr.shape[0] if arr.ndim else 0}")
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


def getitem(io: RowIO, key: Any, size: int, row_shape: tuple[int, ...],
            dtype: np.dtype[Any], what: str) -> Any:
    """``column[key]``: read and return a new array (or a numpy scalar)."""
    sel, rest = parse(key, size, len(row_shape), what)
    if sel.count and sel.rows is None and sel.step == 1:  # one copy: placed for it
        block = io._new_rows(sel.count, sel.start)
    else:
        block = np.empty((sel.count,) + row_shape, dtype)
    read(sel, io, block)
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
    from ._dtypes import as_array

    sel, rest = parse(key, size, len(row_shape), what)
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
        lock = getattr(io, "_rmw_lock", None)
        if lock is None:
            lock = contextlib.nullcontext()
        with lock:
            read_for_update(usel, io, block)
            block[(local,) + rest] = value
            write(usel, io, block)
        return
    arr = as_array(value, dtype)
    target = sel.shape + row_shape
    # numpy drops leading length-1 axes of a value with more axes than the
    # selection (a[0:2] = np.ones((1, 2, 3)) for a of shape (n, 3))
    while arr.ndim > len(target) and arr.shape[0] == 1:
        arr = arr[0]
    try:
        arr = np.broadcast_to(arr, target)
    except ValueError:
        raise ValueError(f"{what}: could not broadcast a value of shape {arr.shape} "
                         f"to the selection's shape {target}") from None
    arr = arr.reshape((sel.count,) + row_shape)
    write(sel, io, arr)
