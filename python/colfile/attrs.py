"""Attributes of columns, groups and Files, as a mutable mapping.

``attrs[name] = value`` stores only values that read back as written
(:func:`exact_value`): ``bytes`` and numpy byte strings (``S``), alone or
in lists, arrays and nested lists of more than one dimension, the string
``'\x00'`` and list elements ending in NUL raise :class:`ValueError`
(``attr-v2`` would give them back as a list of ``str``, flattened, or
without their NULs).  Store raw bytes as a ``uint8`` array, text as
``str``; :meth:`AttributeManager.set_raw` stores any token, and
:mod:`colfile.compat.bigfile` stores everything bigfile stored.

How Python values are stored (bigfile 0.1.52 compatible; ``bytes`` and
byte-string rows are what ``encode_value`` and the compat layer give):

============================= =============== ================ ==============
value                         dtype           nmemb            bytes
============================= =============== ================ ==============
``str``                       ``<a1``         UTF-8 length     UTF-8; ``''``
                                                               is one NUL byte
``bytes``                     ``<S<len>``     1                the bytes;
                                                               ``b''`` is one
                                                               NUL (``<S1``)
list/tuple of ``str``/bytes   ``<S<maxlen>``  list length      UTF-8, NUL
                                                               padded
``bool``/``int``/``float``/   ``<b1``/``<i8``  1
``complex``                   /``<f8``/``<c16``
list/tuple of numbers         numpy's choice  length
numpy array (0-d, 1-d)        its dtype       its size         raw, byte
or scalar                                                      order kept
numpy unicode array (1-d)     ``<S<maxlen>``  its size         UTF-8
0-d numpy unicode array       as its ``str``
============================= =============== ================ ==============

(``<`` is this machine's byte order; a Python ``int`` outside int64 is stored
as ``<u8`` if it fits.)  Object arrays and other objects raise
:class:`ValueError`.  An empty array is stored with ``nmemb`` 0 and keeps
its dtype.

How stored attributes read back:

* kind ``a`` -> ``str`` (UTF-8).  A value that is exactly one NUL byte reads
  back as ``''`` (bigfile returned ``'\\x00'``);
* kind ``S`` -> a ``list`` of ``str``, one per element, trailing NULs
  stripped (so ``b'ab'`` written by bigfile reads back as ``['ab']``, as in
  bigfile, and a string another tool wrote as ``S1`` characters reads back
  as a list of one-character ``str``: :meth:`AttributeManager.text` gives
  it as one ``str``).  Elements that are
  not UTF-8 come back as ``bytes`` instead of raising;
* numeric kinds -> a numpy array of the stored dtype, **except** that a
  single element (``nmemb == 1``) reads back as a numpy scalar
  (``np.float64(3.0)``), which compares and computes like the Python value
  and, as every numpy scalar, is in the machine's byte order
  (:meth:`AttributeManager.raw` gives the stored order).  A 1-d array of
  one element therefore reads back as that element, shape ``()``, not
  ``(1,)`` (``attr-v2`` cannot tell them apart; ``np.atleast_1d`` restores
  it);
* any other kind (other tools may write ``<U4``, ``<M8``, ``<O8``, ``<V4``,
  or a numeric kind with a width numpy lacks, such as ``<i3``) -> its bytes,
  kept opaque: ``nmemb`` elements of numpy dtype ``V<width>``, the width
  being the token's number of bytes (``<U4`` is 4 bytes, not numpy's
  16-byte ``U4``), again a scalar (``np.void``) for one element.
  :meth:`AttributeManager.raw` gives the stored token.  Such attributes
  cannot be assigned, and rewriting the others keeps their bytes.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
>>> f.attrs["BoxSize"] = 1000.0
>>> f.attrs["Redshift"] = np.array([0.0, 0.5], dtype=">f4")
>>> f.attrs["units"] = "Mpc/h"
>>> f.attrs["fields"] = ["x", "vel"]
>>> sorted(f.attrs)
['BoxSize', 'Redshift', 'fields', 'units']
>>> f.attrs["BoxSize"] * 2, f.attrs["Redshift"], f.attrs["units"], f.attrs["fields"]
(np.float64(2000.0), array([0. , 0.5], dtype='>f4'), 'Mpc/h', ['x', 'vel'])
>>> f.attrs.raw("units")
('<a1', 5, b'Mpc/h')
>>> del f.attrs["units"]; "units" in f.attrs
False
>>> f.close()
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import AttributeNotFoundError, InvalidNameError

if TYPE_CHECKING:
    from .column import Column

__all__ = ["AttributeManager", "encode_value", "decode_value", "exact_value"]

_NATIVE = "<" if sys.byteorder == "little" else ">"
_F8 = struct.Struct("=d")  # a native IEEE double, as numpy's native f8


def _strings(items: list[bytes]) -> tuple[str, int, bytes]:
    width = max((len(b) for b in items), default=0) or 1
    return f"|S{width}", len(items), b"".join(b.ljust(width, b"\0") for b in items)


def _text(b: bytes) -> str | bytes:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def _array(arr: np.ndarray, what: Any) -> tuple[str, int, bytes]:
    kind = arr.dtype.kind
    if kind == "U":
        arr = np.char.encode(arr, "utf-8")
        kind = "S"
    if kind == "S":
        if arr.dtype.itemsize == 0:
            arr = arr.astype("S1")
        flat = np.ascontiguousarray(arr).reshape(-1)
        return f"|S{arr.dtype.itemsize}", flat.size, flat.tobytes()
    if kind not in "iufcb" or arr.dtype.names is not None:
        raise ValueError(f"cannot store {what!r} (dtype {arr.dtype}) as an attribute: "
                         "only numbers, booleans and strings are supported")
    flat = np.ascontiguousarray(arr).reshape(-1)
    return arr.dtype.str, flat.size, flat.tobytes()


def encode_value(value: Any) -> tuple[str, int, bytes]:
    """Turn a Python value into ``(dtype token, nmemb, raw bytes)``.

    Examples
    --------
    >>> encode_value("")
    ('|a1', 1, b'\\x00')
    >>> encode_value(["a", "bcd"])
    ('|S3', 2, b'a\\x00\\x00bcd')
    >>> encode_value(True)
    ('|b1', 1, b'\\x01')
    """
    if isinstance(value, str):
        b = value.encode("utf-8")
        return "|a1", (len(b) or 1), (b or b"\0")
    if isinstance(value, bytes):
        b = value or b"\0"
        return f"|S{len(b)}", 1, b
    if isinstance(value, (np.ndarray, np.generic)):
        return _array(np.asarray(value), value)
    if isinstance(value, bool):
        return "|b1", 1, b"\1" if value else b"\0"
    if isinstance(value, int):
        # i8 if it fits, else u8: the bytes numpy would give, made directly
        if -(1 << 63) <= value < (1 << 63):
            return _NATIVE + "i8", 1, value.to_bytes(8, sys.byteorder, signed=True)
        if 0 <= value < (1 << 64):
            return _NATIVE + "u8", 1, value.to_bytes(8, sys.byteorder)
        raise ValueError(f"integer attribute {value} does not fit in 64 bits")
    if isinstance(value, float):
        return _NATIVE + "f8", 1, _F8.pack(value)
    if isinstance(value, complex):
        return _array(np.array(value, dtype=_NATIVE + "c16"), value)
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (str, bytes)) for v in value):
            return _strings([v.encode("utf-8") if isinstance(v, str) else v for v in value])
        if any(isinstance(v, (str, bytes)) for v in value):
            raise ValueError(f"cannot store a list mixing strings and other values: {value!r}")
        try:
            arr = np.asarray(value)
        except ValueError as exc:
            raise ValueError(f"cannot store {value!r} as an attribute: {exc}") from None
        if arr.dtype.kind == "O":
            raise ValueError(f"cannot store {value!r} as an attribute: not a flat "
                             "list of numbers")
        return _array(arr, value)
    raise ValueError(f"cannot store a {type(value).__name__} as an attribute: "
                     "use numbers, booleans, strings, bytes, lists or numpy arrays")


def _lossy(what: str, why: str, instead: str) -> ValueError:
    return ValueError(f"cannot store {what} as an attribute: {why}, so it would not "
                      f"read back as written; {instead}")


def exact_value(value: Any) -> Any:
    """``value`` if it reads back as written (see the module
    documentation), a 0-d numpy text array as its ``str``; else
    :class:`ValueError` saying why not and what to store instead.

    Refused: ``bytes`` and numpy byte strings (``S``), alone or in lists
    (``attr-v2`` holds them as byte strings, which read back as a list of
    ``str``, as in bigfile); arrays and nested lists of more than one
    dimension (stored flat); the string ``'\x00'`` (stored as bigfile
    stores ``''``) and list elements ending in NUL (the padding is
    stripped).

    Examples
    --------
    >>> exact_value([1.5, 2.0]), exact_value(np.array("abc"))
    ([1.5, 2.0], 'abc')
    >>> exact_value(np.eye(2))
    Traceback (most recent call last):
    ...
    ValueError: cannot store an array of shape (2, 2) as an attribute: attributes are flat (one dimension), so it would not read back as written; store a.ravel() (and the shape in another attribute)
    """
    instead_bytes = ("store text as a str or a list of str, raw bytes as a numpy uint8 "
                     "array (np.frombuffer(b, 'u1'))")
    if isinstance(value, (bytes, np.bytes_)):
        raise _lossy(f"bytes {bytes(value)[:40]!r}", "a byte string reads back as a list "
                     "of str", instead_bytes)
    if isinstance(value, str):
        if value == "\0":
            raise _lossy("the string '\\x00'", "one NUL is how an empty str is stored",
                         "store '' or another string")
        return value
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (bytes, np.bytes_)) for v in value):
            raise _lossy("a list holding bytes", "byte strings read back as str",
                         instead_bytes)
        if any(isinstance(v, str) and v.endswith("\0") for v in value):
            raise _lossy("a list of str with an element ending in NUL",
                         "elements are NUL padded and the padding is stripped",
                         "strip the NULs first")
        if value and not any(isinstance(v, str) for v in value):
            try:
                arr = np.asarray(value)
            except ValueError:
                return value  # ragged: encode_value says why it cannot be stored
            if arr.ndim > 1:
                raise _lossy(f"a nested list of shape {arr.shape}",
                             "attributes are flat (one dimension)",
                             "store a flat list (and the shape in another attribute)")
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.kind == "S":
            raise _lossy(f"a numpy byte string array (dtype {arr.dtype})",
                         "byte strings read back as a list of str",
                         "store text as arr.astype(str), raw bytes as a numpy uint8 array")
        if arr.ndim > 1:
            raise _lossy(f"an array of shape {arr.shape}", "attributes are flat (one dimension)",
                         "store a.ravel() (and the shape in another attribute)")
        if arr.dtype.kind == "U" and arr.ndim == 0:
            return str(arr)
        if arr.dtype.kind == "U" and any(s.endswith("\0") for s in arr.tolist()):
            raise _lossy("a str array with an element ending in NUL",
                         "elements are NUL padded and the padding is stripped",
                         "strip the NULs first")
    return value


#: numpy dtypes of attribute tokens met so far (a few kinds at most)
_DTYPES: dict[str, np.dtype[Any]] = {}


def numeric_dtype(token: str) -> np.dtype[Any] | None:
    """The numpy dtype of a numeric attribute token (kinds ``i u f c b``
    with a width numpy has for that kind), else None: text kinds ``a S``
    and everything kept as opaque bytes.

    Examples
    --------
    >>> numeric_dtype("<f8"), numeric_dtype("<i3"), numeric_dtype("<U4")
    (dtype('float64'), None, None)
    """
    if len(token) < 3 or token[1] not in "iufcb" or not token[2:].isdigit():
        return None
    try:
        dt = np.dtype(token)
    except TypeError:
        return None
    want = "b" if token[1] == "b" else token[1]
    if dt.kind != want or dt.itemsize != int(token[2:]):
        return None
    return dt


def _element_dtype(token: str) -> np.dtype[Any] | None:
    """numeric_dtype, else ``V<width>`` (opaque bytes of the token's width),
    else None (no width: not a token the core gives)."""
    dt = _DTYPES.get(token)
    if dt is None:
        dt = numeric_dtype(token)
        if dt is None:
            if not token[2:].isdigit() or int(token[2:]) < 1:
                return None
            dt = np.dtype(f"V{int(token[2:])}")
        if len(_DTYPES) < 256:
            _DTYPES[token] = dt
    return dt


def decode_value(token: str, nmemb: int, data: bytes) -> Any:
    """Turn stored ``(dtype token, nmemb, raw bytes)`` into a Python value.

    Examples
    --------
    >>> decode_value("<a1", 1, b"\\x00")
    ''
    >>> decode_value("<S3", 2, b"a\\x00\\x00bcd")
    ['a', 'bcd']
    >>> decode_value("<i8", 1, bytes(8))
    np.int64(0)
    >>> decode_value("<U4", 1, b"A\\0\\0\\0")  # another tool's kind: opaque bytes
    np.void(b'\\x41\\x00\\x00\\x00')
    """
    kind = token[1:2]
    if kind == "a":
        if data == b"\0":
            return ""
        return _text(data)
    if kind == "S":
        width = int(token[2:]) if token[2:].isdigit() else 1
        return [_text(data[i * width:(i + 1) * width].rstrip(b"\0")) for i in range(nmemb)]
    dt = _element_dtype(token)
    if dt is None or len(data) != nmemb * dt.itemsize:
        return data
    if nmemb == 1:
        return np.frombuffer(data, dtype=dt, count=1)[0]  # a scalar: a copy
    return np.frombuffer(data, dtype=dt, count=nmemb).copy()


class AttributeManager(MutableMapping[str, Any]):
    """The attributes of a column, group or File: ``obj.attrs``.

    A :class:`collections.abc.MutableMapping` from names to values (see the
    module documentation for how values are stored and read back).  Every
    assignment or deletion is written to disk before it returns, except on
    a new column not committed yet: its attributes are written by its first
    commit (flush or close), with the rest of it.  Names may
    hold anything but space, tab, newline, carriage return and NUL
    (:class:`~colfile.InvalidNameError` otherwise).

    A column opened read-only reads its attribute files when its attributes
    are first used, not when it is opened: a damaged attribute file raises
    its error (naming the file) here, while the column's rows stay readable.
    """

    def __init__(self, opener: Callable[[bool], Column | None], what: str, *,
                 writer: Callable[[bool], Column | None] | None = None) -> None:
        # opener(create) returns the handle holding the attributes, or None
        # if there is none and create is False; writer(create), the same for
        # changing them (under MPI: opener reads independently, writer is
        # collective).
        self._opener = opener
        self._writer = opener if writer is None else writer
        self._what = what

    def _col(self, create: bool = False) -> Column | None:
        return self._opener(create)

    def _key(self, name: Any) -> str:
        if not isinstance(name, str):
            raise TypeError(f"attribute names are str, not {type(name).__name__}")
        return name

    def raw(self, name: str) -> tuple[str, int, bytes]:
        """The stored form of attribute ``name``: ``(dtype token, nmemb,
        raw bytes in the stored byte order)``."""
        col = self._col()
        if col is None:
            raise AttributeNotFoundError(f"{self._what}: no attribute {name!r}")
        return col._attr_get(self._key(name))

    def text(self, name: str) -> str:
        """Attribute ``name`` as one string, as the C library's
        ``cf_column_attr_get_string`` gives it: kind ``a`` (a ``str``),
        ``S1`` of any count (the characters of one string, as C programs
        and the legacy ``attr`` file store text; ``self[name]`` gives them
        as a list of one-character ``str``, as bigfile does) or one element
        of ``S<width>``; trailing NULs dropped, UTF-8 decoded (undecodable
        bytes as surrogate escapes).  :class:`TypeError` for numbers and for
        several strings of more than one byte (a list: use ``self[name]``).

        Examples
        --------
        >>> import os, tempfile, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> f.attrs.set_raw("unit", "|S1", 5, b"Mpc/h")  # as a C program may
        >>> f.attrs["unit"], f.attrs.text("unit")
        (['M', 'p', 'c', '/', 'h'], 'Mpc/h')
        >>> f.close()
        """
        tok, nmemb, data = self.raw(name)
        kind, width = tok[1:2], tok[2:]
        if not (kind == "a" or (kind == "S" and (width == "1" or nmemb == 1))):
            raise TypeError(f"{self._what}: attribute {name!r} ({tok} x {nmemb}) is not one "
                            "string" + (": it is a list of strings, read it with "
                                        f"attrs[{name!r}]" if kind == "S" else ""))
        return data.rstrip(b"\0").decode("utf-8", "surrogateescape")

    def set_raw(self, name: str, dtype: str, nmemb: int, data: bytes) -> None:
        """Store ``nmemb`` elements of ``dtype`` (a token such as ``"<f8"`` or
        ``"<a1"``) given as raw bytes, bypassing the value mapping."""
        col = self._writer(True)
        assert col is not None
        col._attr_set(self._key(name), dtype, nmemb, data if type(data) is bytes else bytes(data))

    def __getitem__(self, name: str) -> Any:
        return decode_value(*self.raw(name))

    def __setitem__(self, name: str, value: Any) -> None:
        # only what reads back as written (exact_value); set_raw stores anything
        try:
            tok, nmemb, data = encode_value(exact_value(value))  # data: bytes
        except ValueError as exc:
            raise ValueError(f"{self._what}: attribute {name!r}: {exc}") from None
        col = self._writer(True)
        assert col is not None
        col._attr_set(self._key(name), tok, nmemb, data)

    def __delitem__(self, name: str) -> None:
        col = self._writer(False)
        if col is None:
            raise AttributeNotFoundError(f"{self._what}: no attribute {name!r}")
        col._attr_delete(self._key(name))

    def _names(self) -> list[str]:
        col = self._col()
        return [] if col is None else col._attr_names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        col = self._col()
        if col is None:
            return False
        try:
            col._attr_get(name)
        except (KeyError, InvalidNameError):  # a NUL: no attribute has that name
            return False
        return True

    def __repr__(self) -> str:
        return f"<colfile.AttributeManager of {self._what} ({len(self)} attributes)>"
