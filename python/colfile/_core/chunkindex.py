"""The binary chunk index of a large column (``colfile-index-v1``,
docs/format.md 8.6): its state, its records read in verified pages, the
bytes read so far and the per-chunk CRC32C (``cf_column_index_*``,
``cf_column_chunk_crc32c``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._ffi import ffi, lib
from ._errors import check, new_error

__all__ = ["available", "info", "count", "nodes", "bytes_read", "chunk_crc32c", "C_STATS"]

_STATES = {0: "absent", 1: "current", 2: "stale", 3: "damaged"}

#: cf_chunk_stats as C lays it out
C_STATS = np.dtype({"names": ["blob", "first_row", "rows", "valid", "ordered", "count", "nan_count",
                              "min", "max", "sum"],
                    "formats": ["<i8", "<i8", "<i8", "<i4", "<i4", "<i8", "<i8", "<f8", "<f8", "<f8"],
                    "offsets": [0, 8, 16, 24, 28, 32, 40, 48, 56, 64], "itemsize": 72})


def available() -> bool:
    """Whether the loaded library reads chunk indexes."""
    return hasattr(lib(), "cf_column_index_info")


def info(h: Any) -> dict[str, Any]:
    """``cf_column_index_info`` as a dict (state by name, levels, fanout,
    chunks, chunk_rows, problem)."""
    out = ffi.new("cf_index_info *")
    err = new_error()
    check(lib().cf_column_index_info(h, out, err), err)
    return {"state": _STATES.get(int(out.state), "damaged"), "levels": int(out.levels),
            "fanout": int(out.fanout), "chunks": int(out.chunks), "chunk_rows": int(out.chunk_rows),
            "problem": ffi.string(out.problem).decode("utf-8", "replace")}


def count(h: Any, level: int) -> int:
    """Records of ``level`` of a current index, else 0."""
    return int(lib().cf_column_index_count(h, int(level)))


def nodes(h: Any, level: int, first: int, n: int, component: int) -> np.ndarray:
    """Records ``first`` .. ``first + n - 1`` of ``level`` for one
    component, as :data:`C_STATS` records (a copy)."""
    buf = ffi.new("cf_chunk_stats[]", max(int(n), 1))
    err = new_error()
    check(lib().cf_column_index_nodes(h, int(level), int(first), int(n), int(component), buf, err), err)
    return np.frombuffer(ffi.buffer(buf), C_STATS)[: int(n)].copy()


def bytes_read(h: Any) -> int:
    """Bytes of the chunk index handle ``h`` has read so far."""
    return int(lib().cf_column_index_bytes_read(h))


def chunk_crc32c(h: Any, k: int) -> int | None:
    """The CRC32C of chunk ``k``'s bytes, when known, else None."""
    crc = ffi.new("uint32_t *")
    known = lib().cf_column_chunk_crc32c(h, int(k), crc)
    return int(crc[0]) if known else None
