"""numpy dtypes <-> the dtype tokens of libcolfile ("<f8", ">i4", "<S7").

Only the spelling is translated here; which dtypes and conversions are
allowed is decided by the C core (``cf_dtype_normalize``,
``cf_column_read``/``write``), so the two layers cannot disagree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core.dtype import rejects as _rejects
from .errors import CF_EDTYPE, DTypeError

__all__ = ["split_vector", "token", "from_token", "as_array", "column_dtype"]


def split_vector(spec: Any) -> tuple[np.dtype[Any], int]:
    """Split a dtype spec into (element dtype, nmemb).

    ``'f8'`` gives ``(dtype('float64'), 1)``; ``('f8', 3)`` and
    ``np.dtype(('f8', (3,)))`` give ``(dtype('float64'), 3)``.

    Examples
    --------
    >>> split_vector(('<i4', 3))
    (dtype('int32'), 3)
    >>> split_vector('S5')
    (dtype('S5'), 1)
    """
    try:
        dt = np.dtype(spec)
    except TypeError as exc:
        raise DTypeError(f"not a dtype: {spec!r} ({exc})") from None
    if dt.subdtype is None:
        return dt, 1
    base, shape = dt.subdtype
    if base.subdtype is not None or len(shape) != 1:
        raise DTypeError(
            f"dtype {spec!r}: only one vector dimension is supported "
            f"(rows of nmemb elements), got shape {shape}"
        )
    return base, int(shape[0])


def token(dt: np.dtype[Any]) -> bytes:
    """The C spelling of a numpy dtype (``dtype.str``; the core normalises
    ``|`` and validates the kind).

    Examples
    --------
    >>> token(np.dtype('>f8'))
    b'>f8'
    >>> token(np.dtype(bool))
    b'|b1'
    """
    if dt.names is not None or dt.subdtype is not None:
        raise DTypeError(f"dtype {dt} is structured or a sub-array; colfile "
                         "stores plain elements of kinds i u f c b S")
    return dt.str.encode("ascii")


def _core_rejects(text: str) -> str | None:
    """The core's message if it rejects dtype ``text`` (``cf_dtype_normalize``),
    else None."""
    return _rejects(text)


def column_dtype(spec: Any, where: str) -> tuple[str, int]:
    """(token, nmemb) of the dtype of a new column ``where`` (its path).

    Errors name the column.  A spelling numpy takes but colfile cannot
    store, or one neither takes, gets the core's message for the text as
    given -- the message libcolfile and libcolfile-mpi give in C, hint
    included (``did you mean 'f8'?``).

    Examples
    --------
    >>> column_dtype(("f8", 3), "f/x"), column_dtype("float32", "f/x")
    (('<f8', 3), ('<f4', 1))
    >>> column_dtype("f3", "f/x")
    Traceback (most recent call last):
    ...
    colfile.errors.DTypeError: f/x: unreasonable dtype 'f3': kind 'f' has no width 3 (allowed: 2, 4 or 8)
    """
    text = spec if isinstance(spec, str) else (
        spec[0] if isinstance(spec, tuple) and spec and isinstance(spec[0], str) else None)
    try:
        base, nmemb = split_vector(spec)
        tok = token(base).decode("ascii")
        why = _core_rejects(tok)
    except DTypeError as exc:
        why = str(exc)
    if why is None:
        return tok, nmemb
    given = _core_rejects(text) if text is not None else None
    raise DTypeError(f"{where}: {given or why}", CF_EDTYPE)


def from_token(tok: str) -> np.dtype[Any]:
    """The numpy dtype of a C dtype token.

    Examples
    --------
    >>> from_token('<b1'), from_token('<S7'), from_token('>c16')
    (dtype('bool'), dtype('S7'), dtype('>c16'))
    """
    return np.dtype(tok)


def as_array(value: Any, target: np.dtype[Any]) -> np.ndarray:
    """``value`` as an array whose dtype the C core can convert from.

    Numeric and byte-string arrays are returned as they are (no copy, the
    caller's byte order and strides kept); Python numbers (and lists of
    them) of another dtype are converted by numpy, whose range checks then
    apply; unicode is encoded as UTF-8 for byte-string targets; object
    input is converted to ``target`` by numpy.
    """
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind in "iufcb" and target.kind in "iufcb" and arr.dtype != target \
            and not isinstance(value, (np.ndarray, np.generic)):
        # Python numbers (and lists of them) convert as numpy converts them
        # on assignment: an int out of the column's range is an
        # OverflowError, a complex into a real column a TypeError (arrays
        # convert unsafely, in the core)
        try:
            return np.asarray(value, dtype=target)
        except TypeError as exc:
            raise DTypeError(f"cannot store {type(value).__name__} values of kind "
                             f"{arr.dtype} in a {target} column: {exc}") from None
    if kind in "iufcbS":
        return arr
    if kind == "U":
        if target.kind == "S":
            return np.char.encode(arr, "utf-8")
        raise DTypeError(f"cannot store {arr.dtype} values in a {target} column")
    if kind == "O":
        try:
            return np.asarray(value, dtype=target)
        except (TypeError, ValueError) as exc:
            raise DTypeError(
                f"cannot convert object values to {target}: {exc}") from None
    raise DTypeError(f"colfile cannot store {arr.dtype} values "
                     "(kinds i u f c b S only)")
