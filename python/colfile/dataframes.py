"""DataFrames of a whole File: a lazy dask DataFrame per group.

Each DataFrame is what :meth:`Dataset.to_dask_dataframe
<colfile.Dataset.to_dask_dataframe>` gives for the columns directly in one
directory (vector columns split into ``<name>_0``, ``<name>_1``, ...).
Needs dask.dataframe (``pip install colfile[dask]``).
"""

from __future__ import annotations

from typing import Any

from .dataset import Dataset

__all__ = ["dask_frames"]


def dask_frames(source: Any, chunks: Any = "auto") -> dict[str, Any]:
    """A lazy dask DataFrame per group of a File (or below a Group): the
    columns directly in each directory, as :meth:`Dataset.to_dask_dataframe
    <colfile.Dataset.to_dask_dataframe>` gives them.

    Keys are the group names (``""`` for ``source``'s own columns,
    ``"1"``, ``"1/sub"``).  A group whose columns differ in length gives a
    DataFrame per length, keyed ``"<group>[<length>]"``.  Blocks without
    data (header-only, attributes-only) are left out, and so are groups
    without columns of their own.
    """
    by_group: dict[str, dict[int, list[str]]] = {}
    for name in source.columns:
        group, _, leaf = name.rpartition("/")
        col = source[name]
        if col.kind != "data":
            continue
        by_group.setdefault(group, {}).setdefault(col.size, []).append(leaf)
    out: dict[str, Any] = {}
    for group, lengths in sorted(by_group.items()):
        where = source[group + "/"] if group else source
        for size, names in sorted(lengths.items()):
            key = group if len(lengths) == 1 else f"{group}[{size}]"
            out[key] = Dataset(where, names).to_dask_dataframe(chunks)
    return out
