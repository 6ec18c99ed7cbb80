"""How the commands print the values of a column, one string per value
(what ``colfile cat`` and ``colfile query`` show)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._common import safe_bytes

__all__ = ["formatter"]


def _floats(arr: np.ndarray) -> list[str]:
    if arr.dtype.itemsize == 8:
        out = [repr(x) for x in arr.tolist()]
    else:  # numpy prints the shortest form that round-trips in its own width
        out = [str(x) for x in arr]
    return [s if s not in ("-nan",) else "nan" for s in out]


def _complexes(arr: np.ndarray) -> list[str]:
    re = _floats(np.ascontiguousarray(arr.real))
    im = _floats(np.ascontiguousarray(arr.imag))
    return [a + (b if b.startswith("-") else "+" + b) + "j" for a, b in zip(re, im)]


def _bools(arr: np.ndarray) -> list[str]:
    return ["true" if x else "false" for x in arr.tolist()]


def _ints(arr: np.ndarray) -> list[str]:
    return [str(x) for x in arr.tolist()]


def _bytes(arr: np.ndarray) -> list[str]:
    return [safe_bytes(x) for x in arr.tolist()]


def formatter(dtype: np.dtype[Any]) -> Callable[[np.ndarray], list[str]]:
    kind = dtype.kind
    if kind == "f":
        return _floats
    if kind == "c":
        return _complexes
    if kind == "b":
        return _bools
    if kind in "iu":
        return _ints
    if kind == "S":
        return _bytes
    return lambda arr: [str(x) for x in arr]  # pragma: no cover
