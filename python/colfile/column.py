"""Columns: numpy-style reads and writes of one column of a File.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> path = os.path.join(tempfile.mkdtemp(), "demo")
>>> with colfile.File(path, "w") as f:
...     pos = f.create("Position", ("f8", 3), size=4, nfile=2)
...     pos[:] = np.arange(12.0).reshape(4, 3)
...     pos.shape, pos.blob_rows
((4, 3), [2, 2])
>>> with colfile.File(path) as f:
...     f["Position"][::-2, 0]
array([9., 3.])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from . import _dask, _opener
from ._column_base import ColumnBase
from ._column_handle import fold
from ._constants import CF_OPEN_TORN_OK, CF_OPEN_VERIFY
from ._core.integrity import CHUNK_STATS_DTYPE
from ._expr import Field
from .errors import ClosedError
from .query import where as _where

if TYPE_CHECKING:
    import dask.array

__all__ = ["Column", "CHUNK_STATS_DTYPE", "fold"]


class Column(ColumnBase):
    """One column of a :class:`~colfile.File`: ``size`` rows of ``nmemb``
    elements of ``dtype``, spread over ``nfile`` blob files.

    Get one with ``file[name]`` or :meth:`File.create <colfile.Group.create>`;
    do not call the constructor.  Indexing reads (``col[10:20]``,
    ``col[[3, 1, 2]]``, ``col[mask]``, ``col[:, 0]``) and assignment writes,
    with numpy's semantics on the first axis (rows) and, for vector columns,
    the second (the elements of a row).

    Assigning to part of each row of a vector column (``col[:, 1] = v``)
    reads the rows, assigns and writes them back whole (one handle does
    such updates one at a time, so threads may fill different components
    of the same rows); the components of rows never written are zeros
    then.  Reading rows never written: see :meth:`File.create
    <colfile.Group.create>` and :class:`~colfile.IncompleteError`.

    A column handle stays open until :meth:`close`, the end of a ``with``
    block, the closing of its File, or garbage collection; closing commits
    the header (checksums).  A handle may be shared between threads: the
    calls on one handle are serialised, while distinct handles run in
    parallel (the GIL is released inside libcolfile).

    A read-only column pickles: unpickling opens its File again, read-only,
    by its absolute path, and the column in it (see :class:`~colfile.File`);
    a column open for writing refuses to be pickled (``TypeError``).

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> x = f.create("x", data=np.arange(10, dtype="i4"))
    >>> x.dtype, x.shape, len(x)
    (dtype('int32'), (10,), 10)
    >>> x[[7, 2, 2]]
    array([7, 2, 2], dtype=int32)
    >>> x[x[:] % 3 == 0] = -1
    >>> x.read(0, 4, dtype="f8")
    array([-1.,  1.,  2., -1.])
    >>> f.close()
    """

    # ------------------------------------------------------------------
    # pickling

    def __reduce__(self) -> Any:
        # see File.__reduce__: read-only handles only
        if self._h is None:
            raise ClosedError(f"{self._path}: column {self._name!r} is closed: cannot pickle it")
        if self._writable:
            raise TypeError(f"{self._path}: a column open for writing cannot be pickled: "
                            "close it, then pickle a read-only one (File(path, 'r')[name])")
        if self._file_path is None:
            raise TypeError(f"{self._path}: a column not opened through a File cannot be "
                            "pickled")
        flags = self._file_flags
        return (_reopen_column, (self._file_path, self._name, bool(flags & CF_OPEN_TORN_OK),
                                 bool(flags & CF_OPEN_VERIFY)))


    # ------------------------------------------------------------------
    # queries

    def field(self, j: int | None = None) -> Any:
        """A lazy reference to the values of this column (component ``j``
        of a vector column), to build query predicates from: see
        :mod:`colfile.query`.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> pos = f.create("pos", data=np.arange(12.0).reshape(4, 3))
        >>> (pos.field(0) > 2) & (pos.field(2) < 11)
        <colfile.Predicate (pos[0] > 2) & (pos[2] < 11)>
        >>> f.close()
        """
        return Field(self, j)

    def where(self, predicate: Any) -> Any:
        """The rows where ``predicate`` holds, skipping chunks whose
        statistics decide it: a :class:`~colfile.query.Selection`.

        ``predicate`` is a :class:`~colfile.query.Predicate` or an expression
        string naming this column (by its name or its last path component)
        and, if the column belongs to a File, any column of the File.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> m = f.create("Mass", data=np.array([5.0, 1.0, 7.0, 3.0]))
        >>> m.where("Mass > 2").rows
        array([0, 2, 3])
        >>> m.where(m.field() <= 3).read("Mass")
        array([1., 3.])
        >>> f.close()
        """
        return _where(self, predicate)

    # ------------------------------------------------------------------
    # dask

    def to_dask(self, chunks: Any = "auto") -> dask.array.Array:
        """A lazy dask array of the column.

        Each chunk is read by a task that opens the File afresh, read-only,
        by its absolute path: the graph pickles and runs in threads, in
        other processes and on ``dask.distributed`` workers, whatever their
        working directory.  The tasks read what is committed: flush a
        column being written (or close it) before computing.

        Parameters
        ----------
        chunks : int, str, tuple or dict, default ``"auto"``
            As for :func:`dask.array.from_array`: rows per chunk (an int
            applies to every axis, as in dask), ``-1`` for a whole axis,
            explicit sizes per axis, or a dict of axes.  ``"auto"`` gives
            chunks of about 8 MiB (``colfile._dask.CHUNK_BYTES``) and a byte
            size such as ``"64MiB"`` chunks of that size; both end chunks on
            blob boundaries where they can (small blobs merged, large ones
            cut into equal pieces) and keep each row of a vector column
            whole.  ``"blobs"``: one chunk per non-empty blob.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> c = f.create("c", data=np.arange(10.0), nfile=3)
        >>> c.flush()
        >>> c.to_dask().chunks, c.to_dask(chunks="blobs").chunks, c.to_dask(chunks=4).chunks
        (((10,),), ((3, 3, 4),), ((4, 4, 2),))
        >>> float(c.to_dask(chunks=4).sum().compute())
        45.0
        >>> f.close()
        """
        return _dask.column(self, chunks)



    def _query_resolver(self) -> Callable[[str], ColumnBase]:
        """How a query on this column finds the names it uses: this column
        by its name or its last path component, others in its group, then
        in its File."""
        parent, _, base = self._name.rpartition("/")
        f = self.file

        def by_column(name: str) -> ColumnBase:
            if name in (self._name, base):
                return self
            if f is not None and not f.closed:
                if parent:
                    try:
                        return f[f"{parent}/{name}"]  # type: ignore[no-any-return]
                    except KeyError:
                        pass
                return f[name]  # type: ignore[no-any-return]
            raise KeyError(f"only {self._name!r} can be named in a query on this column")
        return by_column


def _reopen_column(file_path: str, name: str, torn_ok: bool, verify: bool) -> Column:
    """Unpickle a Column: open its File again (read-only, serial) and the
    column in it; the column keeps that File alive."""
    f = _opener.open_file(file_path, torn="warn" if torn_ok else "raise", verify=verify)
    col: Column = f[name]
    col._owner = f
    return col
