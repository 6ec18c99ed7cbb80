"""Fields and predicates: the lazy conditions a query evaluates (the
string language that spells them is in :mod:`colfile._parse`, the
arithmetic and its bounds in :mod:`colfile._arith`).

A :class:`Field` is the values of one column (one component of a vector
column); comparing it, or arithmetic on fields, with a number or another
expression gives a :class:`Predicate` (a :class:`Compare` leaf, or
:class:`IsIn`); predicates combine with ``&``, ``|`` and ``~``.  A
predicate decides each cell of a query's grid from per-chunk statistics
with three-valued logic (NONE: no row can match, SOME, ALL: every row
matches); :mod:`colfile.query` evaluates them.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._arith import ALL, HOOKS, NONE, OPS, SOME, STATE_NAMES, Bounds, Const, Expr, \
    as_operand, decide_bounds, field_bounds, isin_bounds, quiet_compare
from ._arith import from_spec as expr_from_spec
from ._column_base import ColumnBase

if TYPE_CHECKING:
    from .column import Column

__all__ = ["ExpressionError", "Expr", "Field", "Predicate", "Compare", "IsIn", "And", "Or",
           "Not", "compare", "from_spec", "NONE", "SOME", "ALL", "STATE_NAMES", "OPS"]

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


class ExpressionError(ValueError):
    """A query expression string is malformed or uses something the
    expression language does not allow."""


# a public name of colfile.query (where tracebacks and pickles find it)
ExpressionError.__module__ = "colfile.query"


# ---------------------------------------------------------------------------
# fields and predicates


def _constant(value: Any) -> Any:
    """Check a comparison constant: a real number (Python or numpy)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return value
    if isinstance(value, Predicate):
        raise TypeError("a condition cannot be compared: combine conditions with & | ~")
    raise TypeError(f"a column can be compared with a real number, not with "
                    f"{type(value).__name__} ({value!r:.60})")


class Field(Expr):
    """A lazy reference to the values of one column, or of component ``j``
    of a vector column.  Get one from :meth:`Column.field
    <colfile.Column.field>` or :meth:`Dataset.field <colfile.Dataset.field>`.

    Comparing a field with a number or another expression (``<``, ``<=``,
    ``>``, ``>=``, ``==``, ``!=``) gives a :class:`Predicate`; arithmetic on
    fields gives an :class:`~colfile.query.Expr` (``x**2 + y**2``,
    ``np.log10(m)``, ``ID % 2``).  Nothing is read until the predicate is
    evaluated.  The comparison has numpy's semantics on the values as
    stored (``col[:] < 3``): bool columns compare as the integers 0 and 1,
    NaN compares False except with ``!=``.

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> x = f.create("x", data=np.arange(5)).field()
    >>> x > 2, x.between(1, 3), 1 < x
    (<colfile.Predicate x > 2>, <colfile.Predicate (x >= 1) & (x < 3)>, <colfile.Predicate x > 1>)
    >>> f.close()
    """

    def __init__(self, column: Column, j: int | None = None) -> None:
        if not isinstance(column, ColumnBase):
            raise TypeError(f"a Field refers to a colfile.Column, not {type(column).__name__}")
        if column.kind != "data":
            raise TypeError(f"{column._what()} is a {column.kind} block: it holds no values")
        if column.dtype.kind not in "iufb":
            raise TypeError(f"{column._what()} has dtype {column.dtype}: only integer, "
                            "float and bool columns can be compared or histogrammed")
        nmemb = column.nmemb
        if nmemb == 1:
            if j is not None:
                raise IndexError(f"{column._what()} is a scalar column: give no component "
                                 f"(got j={j!r})")
            comp = None
        else:
            if j is None:
                raise IndexError(f"{column._what()} has {nmemb} components per row: say "
                                 f"which, e.g. field({column.name!r}, 0) or {column.name}[0]")
            comp = operator.index(j)
            if not -nmemb <= comp < nmemb:
                raise IndexError(f"component {j} is out of range for {column._what()} "
                                 f"with {nmemb} components")
            comp %= nmemb
        self._column = column
        self._component = comp

    @property
    def column(self) -> Column:
        """The :class:`~colfile.Column`."""
        return self._column

    @property
    def component(self) -> int | None:
        """The vector component (``None`` for a scalar column)."""
        return self._component

    @property
    def name(self) -> str:
        """``"Mass"``, or ``"Position[0]"`` for a component."""
        n = self._column.name
        return n if self._component is None else f"{n}[{self._component}]"

    @property
    def dtype(self) -> np.dtype[Any]:
        """The dtype of the values as stored."""
        return self._column.dtype

    def __repr__(self) -> str:
        return f"<colfile.Field {self.name} dtype={self.dtype}>"

    def __bool__(self) -> bool:
        raise TypeError(f"a colfile Field ({self.name}) has no truth value: compare it "
                        "with a number")

    def _key(self) -> tuple[int, int]:
        return id(self._column), -1 if self._component is None else self._component

    def _values(self, block: np.ndarray) -> np.ndarray:
        """This field's values from rows read from its column."""
        return block if self._component is None else block[:, self._component]

    # -- as an expression (see colfile._arith.Expr)
    @property
    def fields(self) -> list[Field]:
        """``[self]``."""
        return [self]

    def _text(self) -> str:
        n = self.name if self._component is None else self._column.name
        if not _PLAIN.match(n) or _NUMBER.match(n):
            n = repr(n)
        return n if self._component is None else f"{n}[{self._component}]"

    def _probe(self) -> Any:
        return np.empty((0,), self._column.dtype)

    def _value(self, blocks: dict[int, np.ndarray]) -> Any:
        return self._values(blocks[id(self._column)])

    def _bounds(self, base: Callable[[Field], Bounds]) -> Bounds:
        return base(self)

    def _spec(self) -> tuple[Any, ...]:
        col = self._column
        if col._file_path is None:
            raise ValueError(f"{col._what()} was not opened through a File: it cannot be "
                             "reopened by path")
        return ("field", col._file_path, col.name, self._component)


# a name the expression language reads without quotes (path segments joined
# by /), unless it reads as a number
_PLAIN = re.compile(r"[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*\Z")
_NUMBER = re.compile(r"[0-9]+\Z")


class Predicate:
    """A condition on rows: comparisons of :class:`Field` objects with
    numbers, combined with ``&`` (and), ``|`` (or) and ``~`` (not).

    A predicate has no truth value (``bool(p)``, ``and``, ``or``, ``not``
    and chained comparisons like ``1 < x < 2`` raise :class:`TypeError`):
    write ``(x > 1) & (x < 2)`` or ``x.between(1, 2)``.

    Evaluate one with :meth:`Column.where <colfile.Column.where>`,
    :meth:`Dataset.where <colfile.Dataset.where>` or :func:`where`.

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> x = f.create("x", data=np.arange(5)).field()
    >>> p = ~((x < 1) | (x >= 3))
    >>> p
    <colfile.Predicate ~((x < 1) | (x >= 3))>
    >>> colfile.where(f, p).rows
    array([1, 2])
    >>> bool(p)
    Traceback (most recent call last):
    ...
    TypeError: a colfile Predicate has no truth value: combine predicates with & | ~
    (not and, or, not), and write 1 < x < 2 as (x > 1) & (x < 2) or x.between(...)
    >>> f.close()
    """

    __array_ufunc__ = None
    _prec = 0

    def __and__(self, other: Any) -> Predicate:
        return And(self, _as_predicate(other, "&"))

    def __rand__(self, other: Any) -> Predicate:
        return And(_as_predicate(other, "&"), self)

    def __or__(self, other: Any) -> Predicate:
        return Or(self, _as_predicate(other, "|"))

    def __ror__(self, other: Any) -> Predicate:
        return Or(_as_predicate(other, "|"), self)

    def __invert__(self) -> Predicate:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError("a colfile Predicate has no truth value: combine predicates with "
                        "& | ~ (not and, or, not), and write 1 < x < 2 as "
                        "(x > 1) & (x < 2) or x.between(...)")

    def __repr__(self) -> str:
        return f"<colfile.Predicate {self._text()}>"

    def __str__(self) -> str:
        return self._text()

    def _text(self) -> str:
        raise NotImplementedError

    def _wrap(self, prec: int) -> str:
        t = self._text()
        return f"({t})" if self._prec < prec else t

    @property
    def fields(self) -> list[Field]:
        """The fields the predicate compares, in order of appearance."""
        return [f for leaf in self._leaves() for f in leaf.fields]

    def _leaves(self) -> list[Predicate]:
        raise NotImplementedError

    def _states(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        """Three-valued combination of per-leaf states (NONE/SOME/ALL)."""
        raise NotImplementedError

    def _eval(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        """Boolean combination of per-leaf row masks."""
        raise NotImplementedError

    def _spec(self) -> tuple[Any, ...]:
        """A picklable description (fields by File path and column name)."""
        raise NotImplementedError


def _as_predicate(other: Any, op: str) -> Predicate:
    if isinstance(other, Predicate):
        return other
    raise TypeError(f"{op} combines colfile predicates, not {type(other).__name__}; "
                    "put comparisons in parentheses: (x > 1) & (y < 2)")


def compare(a: Any, op: str, b: Any) -> Predicate:
    """``a OP b`` for expressions and numbers (at least one expression)."""
    if isinstance(a, Predicate) or isinstance(b, Predicate):
        raise TypeError("a condition cannot be compared: combine conditions with & | ~")
    if not isinstance(a, Expr) or isinstance(a, Const):
        if not isinstance(b, Expr) or isinstance(b, Const):
            raise TypeError("a comparison needs a column on one side")
        a, b, op = b, a, _FLIP[op]
    if isinstance(b, Const):
        b = b.value
    if not isinstance(b, Expr):
        b = _constant(b)
    return Compare(a, op, b)


class _Leaf(Predicate):
    """A predicate decided on its own (a comparison, isin): its states and
    row masks are the ones computed for it, by ``id``."""

    def _leaves(self) -> list[Predicate]:
        return [self]

    def _states(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        return leaf[id(self)]

    def _eval(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        return leaf[id(self)]

    @staticmethod
    def _base(records: Callable[[Field], tuple[np.ndarray, np.ndarray]]) -> Callable[[Field], Bounds]:
        """The bounds per cell of a field from its chunk records
        (``records(field)``: statistics and row counts per cell)."""
        def base(fl: Field) -> Bounds:
            return field_bounds(*records(fl), fl.dtype)
        return base


class Compare(_Leaf):
    """``left OP right`` (a leaf of a predicate): ``left`` an expression,
    ``right`` an expression or a number."""

    _prec = 0  # as in Python: below & | ~, so parenthesised inside them

    def __init__(self, left: Expr, op: str, right: Any) -> None:
        if op not in OPS:
            raise ValueError(f"unknown comparison {op!r}")
        self.left = left
        self.op = op
        self.right = right

    @property
    def field(self) -> Field | None:
        """The field compared with a number, or None for other comparisons."""
        return self.left if isinstance(self.left, Field) and not isinstance(self.right, Expr) \
            else None

    @property
    def value(self) -> Any:
        """The number compared with (None if the right side is an expression)."""
        return None if isinstance(self.right, Expr) else self.right

    @property
    def fields(self) -> list[Field]:
        return self.left.fields + (self.right.fields if isinstance(self.right, Expr) else [])

    def _text(self) -> str:
        r = self.right
        text = r._text() if isinstance(r, Expr) else \
            repr(r.item()) if isinstance(r, np.generic) else repr(r)
        return f"{self.left._text()} {self.op} {text}"

    def _decide(self, records: Callable[[Field], tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """NONE/SOME/ALL per cell from the chunk records of the fields
        (``records(field)``: statistics and row counts per cell)."""
        base = self._base(records)
        left = self.left._bounds(base)
        if isinstance(self.right, Expr):
            return decide_bounds(self.op, left, self.left.dtype, self.right._bounds(base),
                                 self.right.dtype)
        return decide_bounds(self.op, left, self.left.dtype, None, None, self.right)

    def _evaluate(self, blocks: dict[int, np.ndarray]) -> np.ndarray:
        """Exact, from the rows read (by ``id(column)``)."""
        r = self.right._value(blocks) if isinstance(self.right, Expr) else self.right
        return quiet_compare(self.left._value(blocks), self.op, r)

    def _spec(self) -> tuple[Any, ...]:
        r = self.right._spec() if isinstance(self.right, Expr) else ("const", self.right)
        return ("cmp", self.left._spec(), self.op, r)


class IsIn(_Leaf):
    """``isin(expr, [values])``: the value equals one of the numbers."""

    _prec = 5

    def __init__(self, expr: Any, values: Any) -> None:
        expr = as_operand(expr)
        if isinstance(expr, Const):
            raise TypeError("isin() needs a column")
        if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
            raise TypeError(f"isin() takes a list of numbers, not {type(values).__name__}")
        self.expr = expr
        self.values = tuple(_constant(v) for v in np.asarray(values, object).ravel().tolist()) \
            if isinstance(values, np.ndarray) else tuple(_constant(v) for v in values)

    @property
    def fields(self) -> list[Field]:
        return self.expr.fields

    def _text(self) -> str:
        vals = ", ".join(repr(v.item() if isinstance(v, np.generic) else v)
                         for v in self.values)
        return f"isin({self.expr._text()}, [{vals}])"

    def _decide(self, records: Callable[[Field], tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        return isin_bounds(self.expr._bounds(self._base(records)), self.expr.dtype, self.values)

    def _evaluate(self, blocks: dict[int, np.ndarray]) -> np.ndarray:
        v = np.asarray(self.expr._value(blocks))
        ints = v.dtype.kind == "i" or (v.dtype.kind == "u" and v.dtype.itemsize < 8)
        if len(self.values) > 16 and ints and all(
                isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_))
                and -2**63 <= int(c) < 2**63 for c in self.values):
            # integers against integers: exact, as == is, by sorting once
            return np.isin(v.astype(np.int64), np.asarray([int(c) for c in self.values],
                                                          np.int64))
        out = np.zeros(v.shape, bool)
        for c in self.values:
            out |= quiet_compare(v, "==", c)
        return out

    def _spec(self) -> tuple[Any, ...]:
        return ("isin", self.expr._spec(), self.values)


class And(Predicate):
    """All of the parts hold."""

    _prec = 2
    _sym = "&"

    def __init__(self, *parts: Predicate) -> None:
        flat: list[Predicate] = []
        for p in parts:
            flat.extend(p.parts if type(p) is type(self) else [p])  # type: ignore[attr-defined]
        self.parts = flat

    def _text(self) -> str:
        return f" {self._sym} ".join(p._wrap(self._prec + 1) for p in self.parts)

    def _leaves(self) -> list[Predicate]:
        return [leaf for p in self.parts for leaf in p._leaves()]

    def _states(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        out = self.parts[0]._states(leaf)
        for p in self.parts[1:]:
            out = np.minimum(out, p._states(leaf))
        return out

    def _eval(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        out = self.parts[0]._eval(leaf)
        for p in self.parts[1:]:
            out = out & p._eval(leaf)
        return out

    def _spec(self) -> tuple[Any, ...]:
        return ("and", [p._spec() for p in self.parts])


class Or(And):
    """At least one of the parts holds."""

    _prec = 1
    _sym = "|"

    def _states(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        out = self.parts[0]._states(leaf)
        for p in self.parts[1:]:
            out = np.maximum(out, p._states(leaf))
        return out

    def _eval(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        out = self.parts[0]._eval(leaf)
        for p in self.parts[1:]:
            out = out | p._eval(leaf)
        return out

    def _spec(self) -> tuple[Any, ...]:
        return ("or", [p._spec() for p in self.parts])


class Not(Predicate):
    """The part does not hold."""

    _prec = 4

    def __init__(self, part: Predicate) -> None:
        self.part = part

    def _text(self) -> str:
        return "~" + self.part._wrap(self._prec)

    def _leaves(self) -> list[Predicate]:
        return self.part._leaves()

    def _states(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        return (ALL - self.part._states(leaf)).astype(np.int8)

    def _eval(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        return ~self.part._eval(leaf)

    def _spec(self) -> tuple[Any, ...]:
        return ("not", self.part._spec())


def from_spec(spec: tuple[Any, ...], column: Callable[[str, str], Column]) -> Predicate:
    """Rebuild a predicate from :meth:`Predicate._spec`, opening columns
    with ``column(file_path, name)``."""
    def field(path: str, name: str, comp: int | None) -> Field:
        return Field(column(path, name), comp)

    kind = spec[0]
    if kind == "cmp":
        _, left, op, right = spec
        r = right[1] if right[0] == "const" else expr_from_spec(right, field)
        return Compare(expr_from_spec(left, field), op, r)
    if kind == "isin":
        return IsIn(expr_from_spec(spec[1], field), list(spec[2]))
    if kind == "and":
        return And(*[from_spec(s, column) for s in spec[1]])
    if kind == "or":
        return Or(*[from_spec(s, column) for s in spec[1]])
    if kind == "not":
        return Not(from_spec(spec[1], column))
    raise ValueError(f"bad predicate spec {spec!r:.80}")


HOOKS.update(compare=compare, isin=IsIn, Predicate=Predicate)
