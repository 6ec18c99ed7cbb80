"""Tables of the names libcolfile's headers give to kinds, states and bits,
as colfile reports them (``Column.kind``, ``verify_blob``, ``repair``,
``ext_state``, ``write_all(mode=)``).

The values are the generated constants of :mod:`colfile._constants` (made
from the C headers by ``tools/gen_ffi.py``), where Python code takes every
flag and code by its C name; nothing here spells a number.
"""

from __future__ import annotations

from .. import _constants

__all__ = ["KIND_NAMES", "BLOB_STATUS", "REPAIR_BITS", "EXT_STATES", "IO_MODES"]


def _members(prefix: str) -> list[tuple[int, str]]:
    """``(value, NAME without prefix)`` of the constants named ``prefix*``,
    by value."""
    return sorted((getattr(_constants, n), n[len(prefix):]) for n in _constants.__all__
                  if n.startswith(prefix))


#: ``enum cf_column_kind`` by value, as colfile names the kinds
KIND_NAMES: dict[int, str] = {v: k.lower().replace("_", "-") for v, k in _members("CF_KIND_")}
#: ``enum cf_blob_status`` (what Column.verify_blob reports): ``(bit, "MISSING")``...
BLOB_STATUS = tuple((v, k) for v, k in _members("CF_BLOB_") if v)
#: ``enum cf_repair_bits`` (what Column.repair reports): ``(bit, "sums")``...
REPAIR_BITS = tuple((v, k.lower()) for v, k in _members("CF_REPAIR_"))
#: ``enum cf_ext_state``, by value: ``("current", "absent", ...)``
EXT_STATES = tuple(k.lower() for _, k in _members("CF_EXT_"))
#: ``enum cf_io_mode``: ``{"auto": 0, "throttled": 1, "aggregated": 2}``
IO_MODES: dict[str, int] = {k.lower(): v for v, k in _members("CF_IO_")}
