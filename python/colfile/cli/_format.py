"""How the commands print the values of a column, one string per value
(what ``colfile cat`` and ``colfile query`` show)."""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from ._common import safe_bytes

__all__ = ["formatter", "piece_cells", "TextRows"]


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


def piece_cells(arrays: Sequence[np.ndarray],
                fmts: Sequence[Callable[[np.ndarray], list[str]]]) -> list[list[str]]:
    """The text cells of a piece of rows, one list per printed column: a
    column of several elements per row prints as that many columns."""
    cells_by_col: list[list[str]] = []
    for arr, fmt in zip(arrays, fmts):
        if arr.ndim == 1:
            cells_by_col.append(fmt(arr))
        else:
            for j in range(arr.shape[1]):
                cells_by_col.append(fmt(np.ascontiguousarray(arr[:, j])))
    return cells_by_col


class TextRows:
    """Rows printed piece by piece as CSV or as aligned text, each column as
    wide as its widest cell so far (the first piece's widths line up the
    header); the header line goes first when ``header`` is set."""

    def __init__(self, out: TextIO, headers: list[str], right: list[bool], as_csv: bool,
                 header: bool) -> None:
        self.out, self.headers, self.right = out, headers, right
        self.writer = csv.writer(out, lineterminator="\n") if as_csv else None
        self.widths = [len(h) if header else 0 for h in headers]
        self.header = header

    def _line(self, cells: Sequence[str]) -> str:
        w, right = self.widths, self.right
        return "  ".join(c.rjust(w[i]) if right[i] else c.ljust(w[i])
                         for i, c in enumerate(cells)).rstrip() + "\n"

    def write(self, cells_by_col: list[list[str]]) -> None:
        if self.writer is None:
            for i, cells in enumerate(cells_by_col):
                if cells:
                    self.widths[i] = max(self.widths[i], max(len(c) for c in cells))
        if self.header:
            if self.writer is not None:
                self.writer.writerow(self.headers)
            else:
                self.out.write(self._line(self.headers))
            self.header = False
        if self.writer is not None:
            self.writer.writerows(zip(*cells_by_col))
        else:
            self.out.write("".join(self._line(row) for row in zip(*cells_by_col)))
