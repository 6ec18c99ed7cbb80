"""Datasets: several columns of equal length read as one structured array.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
>>> _ = f.create("id", data=np.arange(4, dtype="i8"))
>>> _ = f.create("pos", data=np.arange(12.0).reshape(4, 3))
>>> ds = colfile.Dataset(f, ["id", "pos"])
>>> len(ds), ds.dtype
(4, dtype([('id', '<i8'), ('pos', '<f8', (3,))]))
>>> ds[2]
np.void((2, [6.0, 7.0, 8.0]), dtype=[('id', '<i8'), ('pos', '<f8', (3,))])
>>> ds[[3, 0]]["id"]
array([3, 0])
>>> f.close()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dask, _indexing, _pandas
from ._dtypes import as_array
from .column import Column
from .file import Group
from .query import where as _where

__all__ = ["Dataset"]


class Dataset:
    """Columns of equal length, read and written as a numpy structured array.

    Parameters
    ----------
    source : File or Group
        Where the columns live.
    columns : sequence of str
        Column names (relative to ``source``); they become the field names.
        Vector columns give sub-array fields (``('pos', '<f8', (3,))``).

    Notes
    -----
    Indexing takes the same first-axis indices as :class:`~colfile.Column`
    (integers give a structured scalar); a field name gives the
    :class:`~colfile.Column`, a list of names a narrower Dataset.  Assigning
    a structured array (or anything indexable by field name) writes each
    column.

    Raises
    ------
    ValueError
        If the columns differ in length.
    """

    def __init__(self, source: Group, columns: Sequence[str]) -> None:
        if isinstance(columns, str):
            columns = [columns]
        names = list(columns)
        if not names:
            raise ValueError("a Dataset needs at least one column")
        if len(set(names)) != len(names):
            raise ValueError(f"repeated column names in {names}")
        self._source = source
        self._names = names
        self._cols: dict[str, Column] = {n: source[n] for n in names}
        sizes = {n: c.size for n, c in self._cols.items()}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"columns of a Dataset must have equal lengths: {sizes}")
        fields = []
        for n, c in self._cols.items():
            fields.append((n, c.dtype) if c.nmemb == 1 else (n, c.dtype, (c.nmemb,)))
        self._dtype = np.dtype(fields)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The structured dtype of one row."""
        return self._dtype

    @property
    def columns(self) -> list[str]:
        """The column (field) names."""
        return list(self._names)

    @property
    def size(self) -> int:
        """Rows (the length of every column)."""
        return self._cols[self._names[0]].size

    @property
    def shape(self) -> tuple[int]:
        """``(size,)``."""
        return (self.size,)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"<colfile.Dataset {self._names} size={self.size}>"

    def _what(self) -> str:
        return f"dataset {self._names}"

    def _ipython_key_completions_(self) -> list[str]:
        return list(self._names)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self._cols[key]
        if isinstance(key, list) and key and all(isinstance(k, str) for k in key):
            return Dataset(self._source, key)
        sel, _ = _indexing.parse(key, self.size, 0, self._what())
        out = np.empty(sel.count, self._dtype)
        for n, c in self._cols.items():
            _indexing.read(sel, c, out[n])
        if sel.scalar:
            # with an ellipsis numpy gives a 0-d array, else a scalar
            return out.reshape(()) if _indexing._has_ellipsis(key) else out[0]
        return out.reshape(sel.shape)

    def __setitem__(self, key: Any, value: Any) -> None:
        sel, _ = _indexing.parse(key, self.size, 0, self._what())
        parts = self._fields_of(value)
        for n, c in self._cols.items():
            arr = np.broadcast_to(as_array(parts[n], c.dtype), sel.shape + c._row_shape)
            arr = arr.reshape((sel.count,) + c._row_shape)
            _indexing.write(sel, c, arr)

    def _fields_of(self, value: Any) -> dict[str, Any]:
        try:
            return {n: value[n] for n in self._names}
        except (KeyError, ValueError, IndexError, TypeError) as exc:
            raise ValueError(f"value for {self._what()} must have the fields "
                             f"{self._names}: {exc}") from None

    def append(self, data: Any, nfile: int = 1) -> None:
        """Append rows to every column (``data`` has the fields)."""
        parts = self._fields_of(data)
        lengths = {n: len(np.asarray(parts[n])) for n in self._names}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"appended fields differ in length: {lengths}")
        for n, c in self._cols.items():
            c.append(parts[n], nfile=nfile)

    def field(self, name: str, j: int | None = None) -> Any:
        """A lazy :class:`~colfile.query.Field`: column ``name`` (component
        ``j`` of a vector column), to build query predicates from."""
        if name not in self._cols:
            raise KeyError(f"{self._what()} has no column {name!r}")
        return self._cols[name].field(j)

    def _query_resolver(self) -> Any:
        """How a query on this dataset finds the names it uses: its fields,
        then the other columns of its source."""
        group = self._source

        def by_dataset(name: str) -> Column:
            if name in self._cols:
                return self._cols[name]
            return group[name]  # type: ignore[no-any-return]
        return by_dataset

    def where(self, predicate: Any) -> Any:
        """The rows where ``predicate`` holds: a
        :class:`~colfile.query.Selection`.

        ``predicate`` is a :class:`~colfile.query.Predicate` or an
        expression string (:func:`colfile.query.parse`) naming the Dataset's
        columns (or others of its File or Group).  Chunks whose statistics
        decide the predicate are skipped.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> _ = f.create("1/ID", data=np.arange(6))
        >>> _ = f.create("1/Position", data=np.arange(18.0).reshape(6, 3))
        >>> ds = colfile.Dataset(f["1/"], ["ID", "Position"])
        >>> sel = ds.where("(Position[0] > 4) & (ID < 5)")
        >>> sel.rows
        array([2, 3, 4])
        >>> ds.where(ds.field("Position", 2) < 6).read(["ID", "Position"])["ID"]
        array([0, 1])
        >>> f.close()
        """
        return _where(self, predicate)

    def to_dask(self, chunks: Any = "auto") -> dict[str, Any]:
        """Lazy dask arrays of the columns: a dict from column (field) name
        to a dask array with the column's shape, all with the same chunks
        along the rows, so that they combine chunk by chunk (and give
        ``xarray.Dataset({n: (("row", ...), a) for n, a in d.items()})`` or,
        for scalar columns, ``dask.dataframe.from_dask_array(da.stack(...))``).
        A dict rather than one structured dask array: vector columns keep
        their shape and each computes alone.

        Each chunk opens the File afresh, read-only, by its absolute path,
        and reads what is committed (see :meth:`Column.to_dask
        <colfile.Column.to_dask>`).

        Parameters
        ----------
        chunks : int, str or tuple, default ``"auto"``
            Rows per chunk, ``-1`` for one chunk, the sizes of the chunks, or
            ``"auto"``/a byte size such as ``"64MiB"``: about that many bytes
            of the widest column per chunk (8 MiB for ``"auto"``), chunks
            ending where all the columns have a blob boundary when they can.
            The elements of a row are never split.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> _ = f.create("id", data=np.arange(5))
        >>> _ = f.create("pos", data=np.arange(15.0).reshape(5, 3))
        >>> f.flush()  # the tasks read what is committed
        >>> d = colfile.Dataset(f, ["id", "pos"]).to_dask(chunks=2)
        >>> d["pos"].chunks, int(d["id"].sum().compute())
        (((2, 2, 1), (3,)), 10)
        >>> f.close()
        """
        return _dask.dataset(self, chunks)

    def to_pandas(self, key: Any = slice(None)) -> Any:
        """The rows ``key`` (default all) as a :class:`pandas.DataFrame`
        indexed by row number; a vector column becomes one DataFrame
        column per component, ``pos_0``, ``pos_1``, ... (see
        :mod:`colfile._pandas`; needs pandas)."""
        return _pandas.dataset_frame(self, key)

    def to_dask_dataframe(self, chunks: Any = "auto") -> Any:
        """A lazy dask DataFrame of the columns, one partition per chunk of
        :meth:`to_dask` (``chunks`` as there), vector columns split as in
        :meth:`to_pandas` (needs dask.dataframe)."""
        return _pandas.dask_frame(self, chunks)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr: np.ndarray = self[:]
        return arr if dtype is None else arr.astype(dtype)
