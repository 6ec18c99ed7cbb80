"""Whole-number arguments (sizes, row and blob counts, chunk rows) checked
where they enter the package, before they reach the C core as 64-bit
integers: a float such as ``3.5`` is refused instead of truncated, and a
number the format or the C API cannot hold gets an error that names the
argument and the limit instead of a raw ``OverflowError``.
"""

from __future__ import annotations

import operator
from typing import Any

from .errors import InvalidArgumentError

#: the largest signed 64-bit integer: every size, row count and byte count
INT64_MAX = (1 << 63) - 1
#: the most blobs a column may have (docs/format.md 3.3: ids are 6 hex digits)
NFILE_MAX = 1 << 24


def whole(value: Any, name: str, *, low: int = 0, high: int = INT64_MAX,
          limit: str = "the largest 64-bit size, 2**63-1") -> int:
    """``value`` as an int in ``low..high``.

    TypeError names the argument for anything that is not a whole number
    (floats, even ``3.0``, strings, bools); InvalidArgumentError (a
    ValueError) names it and the bound for numbers outside the range,
    ``limit`` saying what the upper bound is.

    Examples
    --------
    >>> whole(3, "size"), whole(__import__("numpy").int32(4), "nfile")
    (3, 4)
    >>> whole(3.5, "size")
    Traceback (most recent call last):
    TypeError: size must be a whole number (int), not float 3.5
    >>> whole(2**64, "size")
    Traceback (most recent call last):
    colfile.errors.InvalidArgumentError: size=18446744073709551616 is above the largest 64-bit size, 2**63-1
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a whole number (int), not bool {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be a whole number (int), not "
                        f"{type(value).__name__} {value!r}") from None
    if n < low:
        raise InvalidArgumentError(f"{name} must be at least {low}, not {n}")
    if n > high:
        raise InvalidArgumentError(f"{name}={n} is above {limit}")
    return n


def column_bytes(rows: int, rowbytes: int, name: str = "size") -> None:
    """Refuse ``rows`` rows of ``rowbytes`` bytes when their byte count does
    not fit a signed 64-bit integer (the C API's and the format's limit)."""
    if rowbytes > 0 and rows > INT64_MAX // rowbytes:
        raise InvalidArgumentError(
            f"{name}={rows} rows of {rowbytes} bytes is {rows * rowbytes} bytes: above the "
            f"largest column, 2**63-1 bytes (its byte count is a signed 64-bit integer); "
            f"at most {INT64_MAX // rowbytes} rows of this dtype")
