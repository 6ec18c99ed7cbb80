"""Columns as pandas DataFrames and dask DataFrames.

A DataFrame column holds one value per row, so a vector column
(``nmemb > 1``) is split into one DataFrame column per component, named
``<name>_0``, ``<name>_1``, ... (``Position_0``, ``Position_1``,
``Position_2``).  Needs pandas (``pip install colfile[pandas]``);
the dask DataFrame needs dask.dataframe (``pip install colfile[dask]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["component_names", "frame", "dataset_frame", "selection_frame", "dask_frame"]


def component_names(name: str, nmemb: int) -> list[str]:
    """The DataFrame columns of a colfile column: ``[name]`` for a scalar
    column, ``[name_0, ..., name_{nmemb-1}]`` for a vector column."""
    if nmemb <= 1:
        return [name]
    return [f"{name}_{j}" for j in range(nmemb)]


def _split(arr: np.ndarray) -> dict[str, np.ndarray]:
    """The fields of a structured array, vector fields split by component."""
    out: dict[str, np.ndarray] = {}
    assert arr.dtype.names is not None
    for name in arr.dtype.names:
        field = arr[name]
        width = field.shape[1] if field.ndim > 1 else 1
        for j, label in enumerate(component_names(name, width)):
            if label in out:
                raise ValueError(f"two DataFrame columns would be named {label!r} (a column "
                                 "and a component of a vector column): read them apart")
            out[label] = field if width == 1 else field[:, j]
    return out


def frame(arr: np.ndarray, index: Any = None) -> pd.DataFrame:
    """A structured array (one row per record) as a DataFrame, vector
    fields split into components."""
    import pandas as pd  # optional: needed only here

    return pd.DataFrame(_split(arr), index=index, copy=False)


def dataset_frame(ds: Any, key: Any = slice(None)) -> pd.DataFrame:
    """``Dataset.to_pandas()``: the rows ``key`` of a Dataset; the index is
    the row numbers."""
    import pandas as pd

    arr = ds[key]
    rows = np.arange(ds.size, dtype=np.int64)[key]
    if np.ndim(rows) == 0:
        arr, rows = arr.reshape(1), np.reshape(rows, 1)
    return frame(arr, index=pd.Index(rows, name="row"))


def selection_frame(sel: Any, names: Any) -> pd.DataFrame:
    """``Selection.to_pandas(names)``: the selected rows of the columns
    ``names``; the index is the row numbers."""
    import pandas as pd

    if not isinstance(names, (list, tuple)):
        names = [names]
    arr = sel.read(list(names))
    return frame(arr, index=pd.Index(sel.rows, name="row"))


class _Part:
    """The rows of one partition; tokenized by what identifies the columns
    and their versions (the names of the Dataset's dask arrays)."""

    def __init__(self, ds: Any, key: str, bounds: tuple[int, int]) -> None:
        self.ds, self.key, self.bounds = ds, key, bounds

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        return (self.key, self.bounds)


def _rows_frame(part: _Part) -> pd.DataFrame:
    return dataset_frame(part.ds, slice(*part.bounds))


def dask_frame(ds: Any, chunks: Any = "auto") -> Any:
    """``Dataset.to_dask_dataframe()``: a lazy dask DataFrame with one
    partition per chunk of :meth:`Dataset.to_dask <colfile.Dataset.to_dask>`
    (ending on blob boundaries where they can), indexed by row number (known
    divisions).  Each partition reads its rows when computed."""
    import dask
    import dask.dataframe as dd
    from dask.base import tokenize

    arrays = ds.to_dask(chunks)
    sizes = next(iter(arrays.values())).chunks[0]
    stops = np.cumsum(sizes).tolist()
    bounds = list(zip([0] + stops[:-1], stops))
    if not bounds:
        bounds = [(0, 0)]
    meta = dataset_frame(ds, slice(0, 0))
    divisions = [b[0] for b in bounds] + [max(bounds[-1][1] - 1, 0)]
    key = tokenize([a.name for a in arrays.values()])
    # byte strings stay bytes, as to_pandas() gives them (dask would decode)
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(_rows_frame, [_Part(ds, key, b) for b in bounds], meta=meta,
                           divisions=divisions, enforce_metadata=False,
                           label="colfile-dataset")
