"""What guards a column's data: byte sums and CRC32C per blob,
verification, repair, the extension file's state and the per-chunk
statistics (``cf_column_blob_*``, ``verify_blob``, ``repair``,
``ext_state``, ``chunk_*``, ``index_blob``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._ffi import ffi, lib
from ._errors import check, new_error

__all__ = ["CHUNK_STATS_DTYPE", "fold", "blob_sums", "verify_blob", "ext_state", "repair", "chunk_rows",
           "chunk_stats_reader", "index_blob"]

#: The record of :meth:`Column.chunk_stats <colfile.Column.chunk_stats>`:
#: the fields of ``cf_chunk_stats``.
CHUNK_STATS_DTYPE = np.dtype([
    ("blob", "i8"), ("first_row", "i8"), ("rows", "i8"), ("valid", "?"), ("ordered", "?"),
    ("count", "i8"), ("nan_count", "i8"), ("min", "f8"), ("max", "f8"), ("sum", "f8")])


def fold(rawsum: int) -> int:
    """The SysV fold of a bigfile running byte sum (``cf_checksum_fold``)."""
    return int(lib().cf_checksum_fold(rawsum))


def blob_sums(h: Any, i: int) -> tuple[int, int | None]:
    """``(running byte sum, CRC32C or None if none is current)`` of blob
    ``i``."""
    L = lib()
    crc = ffi.new("uint32_t *")
    s = int(L.cf_column_blob_sum(h, i))
    known = L.cf_column_blob_crc32c(h, i, crc)
    return s, (int(crc[0]) if known else None)


def verify_blob(h: Any, i: int) -> int:
    """Read blob ``i`` and compare it with the metadata: the
    ``enum cf_blob_status`` bits."""
    status = ffi.new("unsigned *")
    err = new_error()
    check(lib().cf_column_verify_blob(h, i, status, err), err)
    return int(status[0])


def ext_state(h: Any) -> int:
    """The ``enum cf_ext_state`` of the column."""
    state = ffi.new("int *")
    err = new_error()
    check(lib().cf_column_ext_state(h, state, err), err)
    return int(state[0])


def repair(h: Any) -> int:
    """Make the column consistent with its blobs and commit: the
    ``enum cf_repair_bits`` of what was fixed."""
    fixed = ffi.new("unsigned *")
    err = new_error()
    check(lib().cf_column_repair(h, fixed, err), err)
    return int(fixed[0])


def chunk_rows(h: Any) -> int:
    """Rows per statistics chunk (0 for columns without data)."""
    return int(lib().cf_column_chunk_rows(h))


def chunk_stats_reader(h: Any) -> Any:
    """A function ``get(k, j)`` giving the ``cf_chunk_stats`` fields of
    chunk ``k``, component ``j``, as the tuple ``(blob, first_row, rows,
    valid, ordered, count, nan_count, min, max, sum)``."""
    L = lib()
    st = ffi.new("cf_chunk_stats *")
    err = new_error()

    def get(k: int, j: int) -> tuple[Any, ...]:
        check(L.cf_column_chunk_stats(h, k, j, st, err), err)
        return (st.blob, st.first_row, st.rows, st.valid, st.ordered,
                st.count, st.nan_count, st.min, st.max, st.sum)

    return get


def index_blob(h: Any, i: int) -> None:
    """Recompute the CRC32C and statistics of blob ``i`` from its data."""
    err = new_error()
    check(lib().cf_column_index_blob(h, i, err), err)
