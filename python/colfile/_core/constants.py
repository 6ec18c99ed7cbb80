"""The flags, codes and states of libcolfile's headers, named once.

The values are read from the C declarations cffi holds (the enums of
``include/colfile.h`` and ``include/colfile_errors.h``), so no number is
spelled here: this is the one place in Python that knows them.  Reading
them loads no library.
"""

from __future__ import annotations

from .._ffi_abi import ffi


def _enum(name: str) -> dict[str, int]:
    """``{member: value}`` of the C enum ``name``."""
    return dict(ffi.typeof(f"enum {name}").relements)


def _const(name: str) -> int:
    return int(ffi.integer_const(name))


#: ``enum cf_error_code``: ``{"CF_EIO": -1, ...}`` (CF_OK included)
ERROR_CODES: dict[str, int] = _enum("cf_error_code")

#: ``enum cf_open_flags``
OPEN_READ = _const("CF_OPEN_READ")
OPEN_WRITE = _const("CF_OPEN_WRITE")
OPEN_CREATE = _const("CF_OPEN_CREATE")
OPEN_EXCL = _const("CF_OPEN_EXCL")
OPEN_TRUNCATE = _const("CF_OPEN_TRUNCATE")
OPEN_NOCHECK = _const("CF_OPEN_NOCHECK")
OPEN_NODURABLE = _const("CF_OPEN_NODURABLE")
OPEN_TORN_OK = _const("CF_OPEN_TORN_OK")
OPEN_VERIFY = _const("CF_OPEN_VERIFY")
OPEN_NOLOCK = _const("CF_OPEN_NOLOCK")
OPEN_NOLOCKING = _const("CF_OPEN_NOLOCKING")

#: ``enum cf_cleanup_flags``
CLEANUP_DRY_RUN = _const("CF_CLEANUP_DRY_RUN")
CLEANUP_FORCE = _const("CF_CLEANUP_FORCE")

#: ``enum cf_create_flags``
CREATE_REPLACE = _const("CF_CREATE_REPLACE")

#: ``enum cf_column_kind``
KIND_DATA = _const("CF_KIND_DATA")
#: the kinds by value, as colfile names them
KIND_NAMES: dict[int, str] = {
    KIND_DATA: "data",
    _const("CF_KIND_HEADER_ONLY"): "header-only",
    _const("CF_KIND_ATTRS_ONLY"): "attrs-only",
}


def _bits(enum: str, prefix: str, skip: str = "") -> tuple[tuple[int, str], ...]:
    """``((bit, NAME), ...)`` of a bit-set enum, by value, names without
    ``prefix``."""
    return tuple(sorted((v, k[len(prefix):]) for k, v in _enum(enum).items()
                        if v and k != skip))


#: ``enum cf_blob_status`` (what Column.verify_blob reports): ``(bit, "MISSING")``...
BLOB_STATUS = _bits("cf_blob_status", "CF_BLOB_")
#: ``enum cf_repair_bits`` (what Column.repair reports): ``(bit, "sums")``...
REPAIR_BITS = tuple((v, k.lower()) for v, k in _bits("cf_repair_bits", "CF_REPAIR_"))
#: ``enum cf_ext_state``, by value: ``("current", "absent", ...)``
EXT_STATES = tuple(k[len("CF_EXT_"):].lower()
                   for k, v in sorted(_enum("cf_ext_state").items(), key=lambda kv: kv[1]))
#: ``enum cf_io_mode``: ``{"auto": 0, "throttled": 1, "aggregated": 2}``
IO_MODES: dict[str, int] = {k[len("CF_IO_"):].lower(): v
                            for k, v in sorted(_enum("cf_io_mode").items(),
                                               key=lambda kv: kv[1])}

#: the defaults of the parallel planning (``#define CF_PLAN_*``)
PLAN_BLOB_BYTES = _const("CF_PLAN_BLOB_BYTES")
PLAN_GROUP_BYTES = _const("CF_PLAN_GROUP_BYTES")
PLAN_SMALL_BYTES = _const("CF_PLAN_SMALL_BYTES")
PLAN_CONCURRENCY = _const("CF_PLAN_CONCURRENCY")
