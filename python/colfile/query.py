"""Queries that skip chunks: predicates over columns, evaluated with the
per-chunk statistics first and the data only where those cannot decide.

Every write of libcolfile records, per chunk of rows and vector component,
the count of values, the NaN count, min and max (``cf_column_chunk_stats``).
A query uses them as an index:

* **Fields and predicates.**  ``col.field(j)`` (or ``ds.field(name, j)``)
  is a lazy :class:`Field`; comparing it with a number gives a
  :class:`Predicate`; predicates combine with ``&``, ``|`` and ``~``.  The
  same conditions can be written as a string in a small, safe expression
  language (:func:`parse`): ``"(Position[0] > 100) & (ID < 5000)"``.
* **The grid.**  The rows are cut at every chunk boundary of every column
  the predicate references (columns may have different blob layouts and
  chunk sizes).  In each cell of that grid each comparison is decided from
  the statistics of the chunk covering it: NONE (no row can match), ALL
  (every row matches) or SOME; the predicate combines these with
  three-valued logic (AND is NONE if any part is NONE, ALL if all are ALL;
  OR the dual; NOT swaps NONE and ALL).
* **Evaluation.**  NONE cells are never read; ALL cells are selected
  without being read; SOME cells are read -- only the columns whose
  comparisons are undecided there, adjacent cells coalesced into one read,
  in pieces of at most :data:`PIECE_BYTES` -- and evaluated exactly with
  numpy.

Results are exact: identical to evaluating the same comparisons with numpy on
the full arrays as stored (``col[:] < 3``), NaNs included (NaN compares
False, except with ``!=``), whatever the statistics say.  Statistics that
are unknown or stale (``valid`` 0: written by another tool, the header
rewritten since they were recorded, ``colfile-v1`` damaged, or an in-place
update in progress or interrupted; ``Column.ext_state``) are never used:
those cells are read.  A decision from
the statistics relies only on min and max bounding the chunk's values (they
are rounded outward, so integers beyond 2**53 are bounded too) and on the
monotonicity of numpy's comparison: the bounds, taken in the column's dtype,
are compared with numpy exactly as the data would be.

What a query skipped is in its :class:`Report`.  Histograms over the same
machinery are in :mod:`colfile.histograms`.

Examples
--------
>>> import os, tempfile, numpy as np, colfile
>>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
>>> ids = f.create("ID", data=np.arange(1000), chunk_rows=100)
>>> mass = f.create("Mass", data=np.linspace(0, 1, 1000), chunk_rows=250)
>>> f.flush()
>>> ds = colfile.Dataset(f, ["ID", "Mass"])
>>> sel = ds.where("(ID >= 150) & (ID < 420) & (Mass < 0.2)")
>>> sel.count, sel.rows[:3], int(sel.rows[-1])
(50, array([150, 151, 152]), 199)
>>> sel.report.chunks, sel.report.skipped, sel.report.scanned
(12, 10, 2)
>>> print(sel.report)
query over ID, Mass: 12 chunks, 10 skipped (no match), 0 taken whole (all match),
2 scanned; read 2.0 KiB of 15.6 KiB (12%); 50 of 1000 rows selected
>>> sel.read("Mass")[:2]
array([0.15015015, 0.15115115])
>>> f.close()
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field as dc_field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .column import Column

__all__ = [
    "Field",
    "Predicate",
    "Selection",
    "Report",
    "ExpressionError",
    "parse",
    "where",
    "PIECE_BYTES",
]

#: The most bytes of column data a query (or histogram) holds in memory at
#: once, per piece of a coalesced run of cells (tests lower it).
PIECE_BYTES = 4 << 20
#: Runs of selected rows of at least this many bytes are read by
#: :meth:`Selection.read` as contiguous ranges; shorter ones go through one
#: scattered read (``cf_column_read_rows``).
RUN_BYTES = 64 << 10

NONE, SOME, ALL = 0, 1, 2
_STATE_NAMES = {NONE: "NONE", SOME: "SOME", ALL: "ALL"}

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


class ExpressionError(ValueError):
    """A query expression string is malformed or uses something the
    expression language does not allow."""


# ---------------------------------------------------------------------------
# fields and predicates


def _constant(value: Any) -> Any:
    """Check a comparison constant: a real number (Python or numpy)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return value
    if isinstance(value, (Field, Predicate)):
        raise TypeError("comparing two columns is not supported: compare a column "
                        "with a number")
    raise TypeError(f"a column can be compared with a real number, not with "
                    f"{type(value).__name__} ({value!r:.60})")


class Field:
    """A lazy reference to the values of one column, or of component ``j``
    of a vector column.  Get one from :meth:`Column.field
    <colfile.Column.field>` or :meth:`Dataset.field <colfile.Dataset.field>`.

    Comparing a field with a number (``<``, ``<=``, ``>``, ``>=``, ``==``,
    ``!=``) gives a :class:`Predicate`; nothing is read until the predicate
    is evaluated.  The comparison has numpy's semantics on the values as
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

    __array_ufunc__ = None  # numpy scalars on the left defer to us
    __hash__ = None  # type: ignore[assignment]  # == builds a predicate

    def __init__(self, column: Column, j: int | None = None) -> None:
        from .column import Column

        if not isinstance(column, Column):
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

    def _cmp(self, op: str, value: Any) -> Predicate:
        return Compare(self, op, _constant(value))

    def __lt__(self, value: Any) -> Predicate:
        return self._cmp("<", value)

    def __le__(self, value: Any) -> Predicate:
        return self._cmp("<=", value)

    def __gt__(self, value: Any) -> Predicate:
        return self._cmp(">", value)

    def __ge__(self, value: Any) -> Predicate:
        return self._cmp(">=", value)

    def __eq__(self, value: Any) -> Predicate:  # type: ignore[override]
        return self._cmp("==", value)

    def __ne__(self, value: Any) -> Predicate:  # type: ignore[override]
        return self._cmp("!=", value)

    def between(self, lo: Any, hi: Any) -> Predicate:
        """``lo <= x < hi`` (half open, like :func:`numpy.histogram` bins)."""
        return (self >= lo) & (self < hi)


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
        return [leaf.field for leaf in self._leaves()]

    def _leaves(self) -> list[Compare]:
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


class Compare(Predicate):
    """``field OP value`` (a leaf of a predicate)."""

    _prec = 0  # as in Python: below & | ~, so parenthesised inside them

    def __init__(self, field: Field, op: str, value: Any) -> None:
        if op not in _OPS:
            raise ValueError(f"unknown comparison {op!r}")
        self.field = field
        self.op = op
        self.value = value

    def _text(self) -> str:
        v = self.value
        text = repr(v.item()) if isinstance(v, np.generic) else repr(v)
        return f"{self.field.name} {self.op} {text}"

    def _leaves(self) -> list[Compare]:
        return [self]

    def _states(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        return leaf[id(self)]

    def _eval(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        return leaf[id(self)]

    def _spec(self) -> tuple[Any, ...]:
        col = self.field.column
        if col._file_path is None:
            raise ValueError(f"{col._what()} was not opened through a File: it cannot be "
                             "reopened by path")
        return ("cmp", col._file_path, col.name, self.field.component, self.op, self.value)


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

    def _leaves(self) -> list[Compare]:
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

    def _leaves(self) -> list[Compare]:
        return self.part._leaves()

    def _states(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        return (ALL - self.part._states(leaf)).astype(np.int8)

    def _eval(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
        return ~self.part._eval(leaf)

    def _spec(self) -> tuple[Any, ...]:
        return ("not", self.part._spec())


def _from_spec(spec: tuple[Any, ...], column: Callable[[str, str], Column]) -> Predicate:
    """Rebuild a predicate from :meth:`Predicate._spec`, opening columns
    with ``column(file_path, name)``."""
    kind = spec[0]
    if kind == "cmp":
        _, path, name, comp, op, value = spec
        return Compare(Field(column(path, name), comp), op, value)
    if kind == "and":
        return And(*[_from_spec(s, column) for s in spec[1]])
    if kind == "or":
        return Or(*[_from_spec(s, column) for s in spec[1]])
    if kind == "not":
        return Not(_from_spec(spec[1], column))
    raise ValueError(f"bad predicate spec {spec!r:.80}")


# ---------------------------------------------------------------------------
# the expression language

_AST_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
            ast.NotEq: "!="}
_WHAT = {
    ast.Call: "function calls", ast.Attribute: "attribute access (.)",
    ast.BoolOp: "'and' / 'or'", ast.Lambda: "lambda", ast.IfExp: "if-else",
    ast.Dict: "dicts", ast.Set: "sets", ast.List: "lists", ast.Tuple: "tuples",
    ast.ListComp: "comprehensions", ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions", ast.GeneratorExp: "comprehensions",
    ast.Starred: "'*'", ast.Slice: "slices", ast.JoinedStr: "f-strings",
    ast.NamedExpr: "':='",
}
_MAX_EXPRESSION = 100_000


def parse(text: str, resolve: Callable[[str], Column]) -> Predicate:
    """Parse a query expression into a :class:`Predicate`.

    The language is a small, safe subset of Python's expression syntax,
    parsed with :mod:`ast` (never evaluated):

    * a column: a name (``Mass``), or a quoted name for names that are not
      identifiers (``'1/ID'``), with an optional integer component for a
      vector column (``Position[0]``, ``Position[-1]``);
    * numbers: integers of any size, floats (``1e10``), a leading ``-`` or
      ``+``; ``True`` / ``False``;
    * comparisons of a column with a number, either way round, chained ones
      too (``10 <= Mass < 20``);
    * ``&`` (and), ``|`` (or), ``~`` (not) and parentheses.  As in numpy,
      ``&`` and ``|`` bind more tightly than comparisons, so comparisons
      combined with them need parentheses.

    Nothing else is accepted (calls, attributes, arithmetic, ``and``/``or``
    ...): :class:`ExpressionError` says what and where.

    Parameters
    ----------
    text : str
        The expression.
    resolve : callable
        Maps a column name to a :class:`~colfile.Column`.

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> _ = f.create("Mass", data=np.arange(4.0))
    >>> _ = f.create("1/Position", data=np.zeros((4, 3)))
    >>> parse("10 <= Mass < 20", f.__getitem__)
    <colfile.Predicate (Mass >= 10) & (Mass < 20)>
    >>> parse("~('1/Position'[2] > -1.5) | (Mass != 0)", f.__getitem__)
    <colfile.Predicate ~(1/Position[2] > -1.5) | (Mass != 0)>
    >>> parse("Mass > 1 & Mass < 3", f.__getitem__)
    Traceback (most recent call last):
    ...
    colfile.query.ExpressionError: 'Mass > 1 & Mass < 3': & and | bind more tightly
    than comparisons: put each comparison in parentheses, e.g. (x > 1) & (y < 2)
    >>> parse("Mass.sum() > 1", f.__getitem__)
    Traceback (most recent call last):
    ...
    colfile.query.ExpressionError: 'Mass.sum() > 1': function calls are not allowed; an
    expression holds columns, numbers, comparisons, & | ~ and parentheses (at column 1)
    >>> f.close()
    """
    if not isinstance(text, str):
        raise TypeError(f"an expression is a str, not {type(text).__name__}")
    if len(text) > _MAX_EXPRESSION:
        raise ExpressionError(f"expression of {len(text)} characters is too long")
    src = text.strip()
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as exc:
        where_ = f" at column {exc.offset}" if exc.offset else ""
        raise ExpressionError(f"{text!r}: invalid syntax{where_}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ExpressionError(f"{text!r:.200}: cannot parse: {exc}") from None
    try:
        return _Parser(text, resolve).predicate(tree.body)
    except RecursionError:
        raise ExpressionError(f"{text!r:.200}: nested too deeply") from None


class _Parser:
    def __init__(self, text: str, resolve: Callable[[str], Column]) -> None:
        self.text = text
        self.resolve = resolve

    def fail(self, node: ast.AST | None, why: str) -> ExpressionError:
        at = getattr(node, "col_offset", None)
        where_ = f" (at column {at + 1})" if at is not None else ""
        return ExpressionError(f"{self.text!r}: {why}{where_}")

    def not_allowed(self, node: ast.AST) -> ExpressionError:
        what = _WHAT.get(type(node))
        if what is None:
            if isinstance(node, ast.BinOp):
                what = "arithmetic operators"
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                what = "'not' (use ~)"
            else:
                what = type(node).__name__
        if isinstance(node, ast.BoolOp):
            return self.fail(node, "'and' / 'or' are not allowed: use & and | with "
                                   "parentheses, e.g. (x > 1) & (y < 2)")
        return self.fail(node, f"{what} are not allowed; an expression holds columns, "
                               "numbers, comparisons, & | ~ and parentheses"
                         if what.endswith("s") else
                         f"{what} is not allowed; an expression holds columns, numbers, "
                         "comparisons, & | ~ and parentheses")

    def predicate(self, node: ast.AST) -> Predicate:
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            left, right = self.predicate(node.left), self.predicate(node.right)
            return (left & right) if isinstance(node.op, ast.BitAnd) else (left | right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return ~self.predicate(node.operand)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if self.is_field(node):
            raise self.fail(node, "a column alone is not a condition: compare it with a "
                                  "number, e.g. flag == 1")
        if self.is_number(node):
            raise self.fail(node, "a number alone is not a condition")
        raise self.not_allowed(node)

    def compare(self, node: ast.Compare) -> Predicate:
        operands = [node.left, *node.comparators]
        for x in operands:
            if isinstance(x, ast.BinOp) and isinstance(x.op, (ast.BitAnd, ast.BitOr)):
                raise ExpressionError(
                    f"{self.text!r}: & and | bind more tightly than comparisons: put each "
                    "comparison in parentheses, e.g. (x > 1) & (y < 2)")
        parts: list[Predicate] = []
        for a, opnode, b in zip(operands, node.ops, operands[1:]):
            op = _AST_OPS.get(type(opnode))
            if op is None:
                raise self.fail(a, f"the comparison {type(opnode).__name__} is not allowed "
                                   "(use < <= > >= == !=)")
            fa, fb = self.is_field(a), self.is_field(b)
            if fa and fb:
                quoted = any(isinstance(x, ast.Constant) for x in (a, b))
                raise self.fail(a, "comparing two columns is not supported: compare a "
                                   "column with a number" +
                                (" (a quoted string names a column)" if quoted else ""))
            if fa:
                parts.append(Compare(self.field(a), op, self.number(b)))
            elif fb:
                parts.append(Compare(self.field(b), _FLIP[op], self.number(a)))
            else:
                bad = b if self.is_number(a) else a
                if self.is_number(a) and self.is_number(b):
                    raise self.fail(a, "a comparison needs a column on one side")
                raise self.not_allowed(bad)
        return parts[0] if len(parts) == 1 else And(*parts)

    @staticmethod
    def is_field(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript):
            node = node.value
        return isinstance(node, ast.Name) or (isinstance(node, ast.Constant)
                                              and isinstance(node.value, str))

    def is_number(self, node: ast.AST) -> bool:
        try:
            self.number(node)
        except ExpressionError:
            return False
        return True

    def number(self, node: ast.AST) -> Any:
        sign = 1
        orig = node
        while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            if isinstance(node.op, ast.USub):
                sign = -sign
            node = node.operand
        if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
            v = node.value
            if sign < 0:
                v = -v
            elif type(v) is bool and orig is not node:
                v = +v
            return v
        if isinstance(node, ast.Constant):
            raise self.fail(node, f"{node.value!r} is not a number (a quoted name can only "
                                  "stand for a column)"
                            if isinstance(node.value, str) else
                            f"{node.value!r} is not a real number")
        raise self.not_allowed(node)

    def field(self, node: ast.AST) -> Field:
        comp: int | None = None
        if isinstance(node, ast.Subscript):
            sl: Any = node.slice
            if type(sl).__name__ == "Index":  # Python < 3.9
                sl = sl.value  # pragma: no cover
            v = self.number(sl) if self.is_number(sl) else None
            if type(v) is not int:
                raise self.fail(sl, "a component is an integer: name[0]")
            comp = v
            node = node.value
        name = node.id if isinstance(node, ast.Name) else node.value  # type: ignore[attr-defined]
        try:
            col = self.resolve(name)
        except KeyError as exc:
            msg = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
            raise self.fail(node, f"no column {name!r} ({msg})") from None
        if comp is None and col.kind == "data" and col.nmemb > 1:
            # name the component as this expression would: Position[0]
            spell = name if name.isidentifier() else repr(name)
            raise self.fail(node, f"{col._what()} has {col.nmemb} components per row: "
                                  f"compare one, e.g. {spell}[0]")
        try:
            return Field(col, comp)
        except (IndexError, TypeError) as exc:
            raise self.fail(node, str(exc)) from None


# ---------------------------------------------------------------------------
# chunk statistics -> per-cell decisions

_STATS_FIELDS = ("valid", "ordered", "count", "nan_count", "min", "max")


def _chunk_table(col: Column, comps: Sequence[int]) -> tuple[np.ndarray, np.ndarray,
                                                              dict[int, np.ndarray]]:
    """``first_row``, ``rows`` and, per component, the statistics of every
    chunk of ``col``.  A library without statistics, or a chunk list that
    does not tile the rows, gives one chunk per non-empty blob with no valid
    statistics (everything is read: slower, still exact)."""
    size = col.size
    comps = list(comps) or [0]
    try:
        full = col.chunk_stats()
    except AttributeError:  # a libcolfile without statistics
        full = None
    if full is not None:
        if full.ndim == 1:
            full = full[:, None]
        first = full["first_row"][:, 0] if len(full) else np.zeros(0, np.int64)
        rows = full["rows"][:, 0] if len(full) else np.zeros(0, np.int64)
        tiles = (len(first) > 0 and first[0] == 0 and np.all(rows > 0)
                 and np.all(first[1:] == first[:-1] + rows[:-1])
                 and int(first[-1] + rows[-1]) == size)
        if tiles or (size == 0 and len(first) == 0):
            return (first.astype(np.int64), rows.astype(np.int64),
                    {j: full[:, j] for j in comps})
    blob = np.asarray([r for r in col.blob_rows if r > 0], np.int64)
    if int(blob.sum()) != size:
        blob = np.asarray([size] if size else [], np.int64)
    first = np.concatenate([[0], np.cumsum(blob)[:-1]]).astype(np.int64) if len(blob) else \
        np.zeros(0, np.int64)
    from .column import CHUNK_STATS_DTYPE

    empty = np.zeros(len(blob), CHUNK_STATS_DTYPE)
    return first, blob, {j: empty for j in comps}


def _bounds_in_dtype(lo: np.ndarray, hi: np.ndarray, dtype: np.dtype[Any]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The statistics' min and max (doubles, rounded outward) as values of
    the column's dtype that still bound the data: ``(lo, hi, ok)``; ``ok``
    is False where that is impossible (non-finite integer bounds, float
    bounds that are not values of the dtype)."""
    n = len(lo)
    kind = dtype.kind
    if kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            lo_d = lo.astype(dtype)
            hi_d = hi.astype(dtype)
            ok = (lo_d.astype(np.float64) == lo) & (hi_d.astype(np.float64) == hi)
        return lo_d, hi_d, ok & ~np.isnan(lo) & ~np.isnan(hi)
    ok = np.isfinite(lo) & np.isfinite(hi)
    lo_f = np.floor(np.where(ok, lo, 0.0))
    hi_f = np.ceil(np.where(ok, hi, 0.0))
    if kind == "b":
        lo_d = np.clip(lo_f, 0, 1).astype(bool)
        hi_d = np.clip(hi_f, 0, 1).astype(bool)
        return lo_d, hi_d, ok
    info = np.iinfo(dtype)
    out = []
    for v in (lo_f, hi_f):
        d = np.empty(n, dtype)
        under = v <= float(info.min)
        over = v >= float(info.max)
        mid = ~under & ~over
        d[under] = info.min
        d[over] = info.max
        d[mid] = v[mid].astype(dtype)
        out.append(d)
    return out[0], out[1], ok


def _compare(values: np.ndarray, op: str, value: Any) -> np.ndarray:
    """numpy's ``values OP value``, quietly (a constant beyond the range of
    a narrow float dtype overflows to inf in numpy's cast, as it would on
    the full array).  Bool values compare as the integers 0 and 1 (numpy
    would refuse Python integers beyond int64 there)."""
    if values.dtype.kind == "b":
        values = values.view(np.uint8)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(_OPS[op](values, value), dtype=bool)


def _is_nan(value: Any) -> bool:
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def decide(op: str, value: Any, dtype: Any, stats: np.ndarray,
           rows: np.ndarray | None = None) -> np.ndarray:
    """Decide ``x OP value`` per chunk from statistics: NONE (0), SOME (1)
    or ALL (2) for every record of ``stats``.

    Parameters
    ----------
    op : str
        ``<``, ``<=``, ``>``, ``>=``, ``==`` or ``!=``.
    value
        The constant (as in the predicate).
    dtype
        The column's dtype.
    stats : numpy.ndarray
        Records with the fields ``valid``, ``ordered``, ``count``,
        ``nan_count``, ``min``, ``max`` (as :meth:`Column.chunk_stats
        <colfile.Column.chunk_stats>` gives them).
    rows : numpy.ndarray, optional
        The rows of each chunk: statistics whose count differs are not used.

    Returns
    -------
    numpy.ndarray of int8

    Notes
    -----
    A chunk's values x satisfy ``lo <= x <= hi`` for min and max (rounded
    outward) converted to bounds in the column's dtype.  numpy compares an
    array with a scalar by converting both to a common type with monotone
    casts, so ``x < c`` holds for all x if it holds for ``hi``, and for none
    if it fails for ``lo``; ``==`` is ALL if it holds at both bounds.  The
    decision is made by the same numpy comparison on the bounds as the
    exact evaluation makes on the data, so the two always agree -- integers
    beyond 2**53, constants beyond the dtype's range and narrow floats
    included.  NaN values (never counted in min/max) compare False, except
    with ``!=``.  Invalid statistics, unordered kinds, inconsistent records
    give SOME.

    Examples
    --------
    >>> from colfile.column import CHUNK_STATS_DTYPE
    >>> st = np.zeros(4, CHUNK_STATS_DTYPE)
    >>> st["valid"] = st["ordered"] = True
    >>> st["count"] = 10
    >>> st["nan_count"] = [0, 0, 3, 0]
    >>> st["min"], st["max"] = [0, 5, 5, 1], [4, 9, 9, 2]
    >>> st["valid"][3] = False
    >>> decide("<", 5, "f8", st)   # NONE, NONE... per chunk
    array([2, 0, 0, 1], dtype=int8)
    >>> decide("!=", 1e300, "f8", st)
    array([2, 2, 2, 1], dtype=int8)
    """
    dtype = np.dtype(dtype)
    n = len(stats)
    if op not in _OPS:
        raise ValueError(f"unknown comparison {op!r}")
    if _is_nan(value):  # NaN compares False, and != True, whatever x is
        return np.full(n, ALL if op == "!=" else NONE, np.int8)
    count = stats["count"].astype(np.int64)
    nan = stats["nan_count"].astype(np.int64)
    ok = stats["valid"].astype(bool) & stats["ordered"].astype(bool)
    ok &= (nan >= 0) & (nan <= count) & (count >= 0)
    if rows is not None:
        ok &= count == rows
    if dtype.kind != "f":
        ok &= nan == 0
    nonnan = count - nan
    allnan = ok & (nonnan == 0)
    lo = stats["min"].astype(np.float64)
    hi = stats["max"].astype(np.float64)
    lo_d, hi_d, bounded = _bounds_in_dtype(lo, hi, dtype)
    ranged = ok & ~allnan & bounded
    ranged &= lo_d <= hi_d
    if op in ("<", "<="):
        all_ = _compare(hi_d, op, value)
        none = ~_compare(lo_d, op, value)
    elif op in (">", ">="):
        all_ = _compare(lo_d, op, value)
        none = ~_compare(hi_d, op, value)
    else:
        eq_all = _compare(lo_d, "==", value) & _compare(hi_d, "==", value)
        eq_none = _compare(hi_d, "<", value) | _compare(lo_d, ">", value)
        if op == "==":
            all_, none = eq_all, eq_none
        else:
            all_, none = eq_none, eq_all
    has_nan = nan > 0
    if op == "!=":
        none = none & ~has_nan  # NaN != c is True
    else:
        all_ = all_ & ~has_nan  # NaN OP c is False
    out = np.full(n, SOME, np.int8)
    out[ranged & none] = NONE
    out[ranged & all_ & ~none] = ALL
    out[allnan] = ALL if op == "!=" else NONE
    return out


# ---------------------------------------------------------------------------
# the plan: grid cells and their states


class _Plan:
    """The grid of cells over the rows of the referenced columns, with the
    state of every leaf comparison and of the predicate in every cell."""

    def __init__(self, predicate: Predicate | None, fields: Sequence[Field],
                 arrays: dict[str, np.ndarray] | None = None) -> None:
        self.predicate = predicate
        self.leaves: list[Compare] = predicate._leaves() if predicate is not None else []
        self.fields = list(fields)
        cols: dict[int, Column] = {}
        for f in [leaf.field for leaf in self.leaves] + self.fields:
            cols.setdefault(id(f.column), f.column)
        if not cols:
            raise ValueError("nothing to evaluate: no column referenced")
        self.columns = cols
        sizes = {c.name: c.size for c in cols.values()}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"the columns of a query must have equal lengths: {sizes}")
        self.size = next(iter(sizes.values()))
        self.rowbytes = {k: c.itemsize * max(c.nmemb, 1) for k, c in cols.items()}
        self.tables: dict[tuple[int, int], np.ndarray] = {}
        if arrays is None:
            arrays = self._build()
        self.bounds = arrays["bounds"]
        self.state = arrays["state"]
        self.leaf_state = arrays["leaf_state"]
        self.field_stats = arrays.get("field_stats")

    @property
    def ncells(self) -> int:
        return len(self.bounds) - 1

    def arrays(self) -> dict[str, Any]:
        return {"bounds": self.bounds, "state": self.state, "leaf_state": self.leaf_state,
                "field_stats": self.field_stats}

    def _build(self) -> dict[str, Any]:
        comps: dict[int, set[int]] = {k: set() for k in self.columns}
        for f in [leaf.field for leaf in self.leaves] + self.fields:
            comps[id(f.column)].add(f.component or 0)
        firsts = []
        for k, col in self.columns.items():
            first, rows, stats = _chunk_table(col, sorted(comps[k]))
            firsts.append(first)
            for j, st in stats.items():
                self.tables[(k, j)] = st
            self.tables[(k, -1)] = np.stack([first, rows]) if len(first) else \
                np.zeros((2, 0), np.int64)
        if self.size == 0:
            bounds = np.zeros(1, np.int64)
        else:
            bounds = np.unique(np.concatenate(firsts + [np.asarray([0, self.size])]))
        starts = bounds[:-1]
        nleaves = len(self.leaves)
        leaf_state = np.empty((nleaves, len(starts)), np.int8)
        for i, leaf in enumerate(self.leaves):
            leaf_state[i] = self._cell_stats_decide(leaf, starts)
        if self.predicate is None:
            state = np.full(len(starts), ALL, np.int8)
        else:
            states = {id(leaf): leaf_state[i] for i, leaf in enumerate(self.leaves)}
            state = np.asarray(self.predicate._states(states), np.int8)
        # per histogrammed field: the statistics of the chunks (for range=None)
        field_stats = [self._field_chunks(f) for f in self.fields]
        return {"bounds": bounds.astype(np.int64), "state": state, "leaf_state": leaf_state,
                "field_stats": field_stats}

    def _chunks_of(self, f: Field, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = id(f.column)
        first_rows = self.tables[(k, -1)]
        idx = np.searchsorted(first_rows[0], starts, side="right") - 1
        return idx, first_rows[1]

    def _cell_stats_decide(self, leaf: Compare, starts: np.ndarray) -> np.ndarray:
        f = leaf.field
        st = self.tables[(id(f.column), f.component or 0)]
        per_chunk = decide(leaf.op, leaf.value, f.dtype, st, self.tables[(id(f.column), -1)][1])
        idx, _ = self._chunks_of(f, starts)
        return per_chunk[idx] if len(starts) else per_chunk[:0]

    def _field_chunks(self, f: Field) -> np.ndarray:
        return self.tables[(id(f.column), f.component or 0)]


# ---------------------------------------------------------------------------
# scanning the cells


@dataclass
class Report:
    """What a query or histogram read and skipped.

    Attributes
    ----------
    chunks : int
        Cells of the grid (the chunks of the referenced columns, cut where
        any of them has a chunk boundary).
    skipped : int
        Cells the statistics excluded (NONE): never read.
    all_match : int
        Cells the statistics included whole (ALL): the predicate's columns
        were not read there.
    scanned : int
        Cells read and evaluated (SOME).
    rows : int
        Rows covered by the cells.
    selected : int or None
        Rows that matched (None when not yet known, as for a dask graph).
    bytes_read : int
        Bytes of column data read.
    bytes_total : int
        Bytes of all the columns referenced (predicate, histogrammed
        fields, weights).
    columns : tuple of str
        The columns referenced.
    """

    chunks: int = 0
    skipped: int = 0
    all_match: int = 0
    scanned: int = 0
    rows: int = 0
    selected: int | None = 0
    bytes_read: int = 0
    bytes_total: int = 0
    columns: tuple[str, ...] = dc_field(default_factory=tuple)
    kind: str = "query"

    def merged(self, other: Report) -> Report:
        """Counts of two disjoint parts of one evaluation (MPI ranks)."""
        sel = None if self.selected is None or other.selected is None else \
            self.selected + other.selected
        return Report(self.chunks + other.chunks, self.skipped + other.skipped,
                      self.all_match + other.all_match, self.scanned + other.scanned,
                      self.rows + other.rows, sel, self.bytes_read + other.bytes_read,
                      max(self.bytes_total, other.bytes_total), self.columns, self.kind)

    def __str__(self) -> str:
        pct = f" ({100 * self.bytes_read / self.bytes_total:.0f}%)" if self.bytes_total else ""
        sel = "" if self.selected is None else f"; {self.selected} of {self.rows} rows selected"
        return (f"{self.kind} over {', '.join(self.columns)}: {self.chunks} chunks, "
                f"{self.skipped} skipped (no match), {self.all_match} taken whole (all match), "
                f"{self.scanned} scanned; read {_size(self.bytes_read)} of "
                f"{_size(self.bytes_total)}{pct}{sel}")


def _size(n: int) -> str:
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if x < 1024 or unit == "TiB":
            return f"{int(x)} B" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    return f"{n} B"  # pragma: no cover


def _new_report(plan: _Plan, kind: str) -> Report:
    names = tuple(c.name for c in plan.columns.values())
    total = sum(plan.size * rb for rb in plan.rowbytes.values())
    return Report(bytes_total=total, columns=names, kind=kind)


def _expand(values: np.ndarray, bounds: np.ndarray, k0: int, k1: int, a: int,
            b: int) -> np.ndarray:
    """Per-cell values of cells k0..k1-1, repeated over their rows within
    [a, b)."""
    lo = np.maximum(bounds[k0:k1], a)
    hi = np.minimum(bounds[k0 + 1:k1 + 1], b)
    return np.repeat(values[k0:k1], np.maximum(hi - lo, 0))


def _scan(plan: _Plan, k_lo: int, k_hi: int, want: Sequence[Field], report: Report,
          visit: Callable[[int, int, np.ndarray | None, dict[int, np.ndarray]], None] | None,
          piece_bytes: int | None = None) -> None:
    """Visit the rows of cells ``k_lo..k_hi-1`` that may match.

    For every run of cells that are not NONE, in pieces of at most
    ``piece_bytes`` of column data, ``visit(a, b, mask, blocks)`` gets the
    rows ``[a, b)``, ``mask`` (None: every row matches; else a bool array)
    and ``blocks``: the rows read, by ``id(column)`` -- always the columns of
    ``want``, plus those needed to decide undecided comparisons.  With
    ``visit`` None nothing is read (the report is filled in all the same:
    what is read depends only on the plan).
    """
    pb = PIECE_BYTES if piece_bytes is None else int(piece_bytes)
    state = plan.state
    bounds = plan.bounds
    col_keys = list(plan.columns)
    col_index = {k: i for i, k in enumerate(col_keys)}
    want_bits = 0
    for f in want:
        want_bits |= 1 << col_index[id(f.column)]
    ks = slice(k_lo, k_hi)
    st = state[ks]
    report.chunks += k_hi - k_lo
    report.skipped += int(np.count_nonzero(st == NONE))
    report.all_match += int(np.count_nonzero(st == ALL))
    report.scanned += int(np.count_nonzero(st == SOME))
    report.rows += int(bounds[k_hi] - bounds[k_lo]) if k_hi > k_lo else 0
    if k_hi <= k_lo:
        return
    # which columns each cell needs: those of undecided leaves (SOME cells)
    bits = np.zeros(k_hi - k_lo, dtype=object if len(col_keys) > 62 else np.int64)
    for i, leaf in enumerate(plan.leaves):
        undecided = (plan.leaf_state[i, ks] == SOME) & (st == SOME)
        bit = 1 << col_index[id(leaf.field.column)]
        bits[undecided] = bits[undecided] | bit
    bits = bits | want_bits
    key_state = st.astype(np.int64)
    # runs of consecutive cells with the same (state, columns), NONE excluded
    change = np.ones(k_hi - k_lo, bool)
    if k_hi - k_lo > 1:
        change[1:] = (key_state[1:] != key_state[:-1]) | (bits[1:] != bits[:-1])
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], k_hi - k_lo)
    leaf_ids = [id(leaf) for leaf in plan.leaves]
    leaf_all = plan.leaf_state == ALL
    for r0, r1 in zip(starts.tolist(), ends.tolist()):
        s = int(key_state[r0])
        if s == NONE:
            continue
        k0, k1 = k_lo + r0, k_lo + r1
        need = int(bits[r0])
        read_keys = [k for k in col_keys if need >> col_index[k] & 1]
        rowbytes = sum(plan.rowbytes[k] for k in read_keys)
        a_run, b_run = int(bounds[k0]), int(bounds[k1])
        step = (b_run - a_run) if not read_keys else max(1, pb // max(rowbytes, 1))
        for a in range(a_run, b_run, step):
            b = min(b_run, a + step)
            report.bytes_read += (b - a) * rowbytes
            if visit is None:
                continue
            blocks = {k: plan.columns[k].read(a, b) for k in read_keys}
            if s == ALL:
                visit(a, b, None, blocks)
                continue
            # SOME: exact where the column was read, the cell's state elsewhere
            vals: dict[int, np.ndarray] = {}
            c0 = k0 + int(np.searchsorted(bounds[k0:k1 + 1], a, side="right")) - 1
            c1 = k0 + int(np.searchsorted(bounds[k0:k1 + 1], b, side="left"))
            for i, leaf in enumerate(plan.leaves):
                f = leaf.field
                blk = blocks.get(id(f.column))
                if blk is not None:
                    vals[leaf_ids[i]] = _compare(f._values(blk), leaf.op, leaf.value)
                else:
                    vals[leaf_ids[i]] = _expand(leaf_all[i], bounds, c0, c1, a, b)
            assert plan.predicate is not None
            mask = np.asarray(plan.predicate._eval(vals), bool)
            visit(a, b, mask, blocks)


# ---------------------------------------------------------------------------
# selections


def _runs_of(mask: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray]:
    d = np.diff(np.concatenate([[0], mask.view(np.int8), [0]]))
    return (np.flatnonzero(d == 1) + offset).astype(np.int64), \
        (np.flatnonzero(d == -1) + offset).astype(np.int64)


class Selection:
    """The rows where a predicate holds (sorted, as run-length encoded
    ranges), and what evaluating it read.

    Attributes
    ----------
    size : int
        Rows of the columns queried.
    report : Report
        Chunks skipped, taken whole and scanned; bytes read.
    predicate : Predicate

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> _ = f.create("x", data=np.array([4, 8, 1, 9, 9, 0]))
    >>> _ = f.create("v", data=np.arange(12).reshape(6, 2))
    >>> sel = colfile.where(f, "x > 3")
    >>> sel.count, sel.rows, sel.ranges
    (4, array([0, 1, 3, 4]), [(0, 2), (3, 5)])
    >>> sel.mask()
    array([ True,  True, False,  True,  True, False])
    >>> sel.read("v")
    array([[0, 1],
           [2, 3],
           [6, 7],
           [8, 9]])
    >>> sel.read(["x", "v"])["x"]
    array([4, 8, 9, 9])
    >>> f.close()
    """

    def __init__(self, size: int, starts: np.ndarray, stops: np.ndarray, report: Report,
                 predicate: Predicate, resolve: Callable[[str], Column]) -> None:
        self.size = size
        self._starts = starts
        self._stops = stops
        self.report = report
        self.predicate = predicate
        self._resolve = resolve
        self._rows: np.ndarray | None = None

    @property
    def count(self) -> int:
        """Number of rows selected."""
        return int(np.sum(self._stops - self._starts))

    def __len__(self) -> int:
        return self.count

    @property
    def ranges(self) -> list[tuple[int, int]]:
        """The selected rows as maximal ``(start, stop)`` ranges."""
        return list(zip(self._starts.tolist(), self._stops.tolist()))

    @property
    def rows(self) -> np.ndarray:
        """The selected rows, sorted (int64)."""
        if self._rows is None:
            lengths = self._stops - self._starts
            n = int(lengths.sum())
            if n == 0:
                self._rows = np.zeros(0, np.int64)
            else:
                # each run: start, start+1, ...; built without a Python loop
                step = np.ones(n, np.int64)
                heads = np.cumsum(lengths)[:-1]
                step[0] = self._starts[0]
                if len(heads):
                    step[heads] = self._starts[1:] - self._stops[:-1] + 1
                self._rows = np.cumsum(step)
        return self._rows

    def mask(self) -> np.ndarray:
        """A bool array of :attr:`size` rows, True where selected."""
        d = np.zeros(self.size + 1, np.int8)
        d[self._starts] = 1  # maximal runs: no start is another run's stop
        d[self._stops] -= 1
        return np.cumsum(d[:-1], dtype=np.int8).astype(bool)

    def __repr__(self) -> str:
        return (f"<colfile.Selection {self.count} of {self.size} rows where "
                f"{self.predicate._text()}>")

    def _column(self, name: Any) -> Column:
        from .column import Column

        col = name if isinstance(name, Column) else self._resolve(name)
        if col.size != self.size:
            raise ValueError(f"{col._what()} has {col.size} rows, the selection was made "
                             f"on {self.size}")
        return col

    def read(self, names: Any, dtype: Any = None) -> np.ndarray:
        """Read the selected rows of a column, or of several (a structured
        array, as :class:`~colfile.Dataset` gives).

        Only the selected rows are read: runs of at least
        :data:`RUN_BYTES` as contiguous ranges, the other rows with one
        scattered read (``cf_column_read_rows``).  Any column of the same
        length can be read, not only those of the predicate.

        Parameters
        ----------
        names : str, Column, or a list of them
            Names are resolved where the query was made (the Dataset, or
            the File of the column).
        dtype : dtype spec, optional
            For a single column: the dtype of the result.
        """
        if isinstance(names, (list, tuple)):
            cols = [self._column(n) for n in names]
            labels = [n if isinstance(n, str) else c.name for n, c in zip(names, cols)]
            fields = [(lab, c.dtype) if c.nmemb == 1 else (lab, c.dtype, (c.nmemb,))
                      for lab, c in zip(labels, cols)]
            out = np.empty(self.count, np.dtype(fields))
            for lab, c in zip(labels, cols):
                self._read_into(c, out[lab])
            return out
        col = self._column(names)
        arr = np.empty((self.count,) + col._row_shape, col.dtype if dtype is None else dtype)
        self._read_into(col, arr)
        return arr

    def to_dask(self, names: Any, chunks: Any = "auto") -> Any:
        """The selected rows of a column as a lazy dask array, or of several
        columns as a dict of them (name to array, with the same chunks
        along the rows, as :meth:`Dataset.to_dask
        <colfile.Dataset.to_dask>` gives).

        The selection's rows are known already; each chunk is read by a task
        that opens the File afresh, read-only, by its absolute path, and
        reads only the selected rows of its chunk (as :meth:`read`): it
        reads what is committed (flush a column being written first).

        Parameters
        ----------
        names : str, Column, or a list of them
            As for :meth:`read`.
        chunks : int, str or tuple, default ``"auto"``
            Selected rows per chunk, ``-1`` for one chunk, the sizes of the
            chunks, or ``"auto"``/a byte size such as ``"64MiB"`` (about
            that many bytes per chunk; 8 MiB for ``"auto"``).  The elements
            of a row are never split.

        Examples
        --------
        >>> import os, tempfile, numpy as np, colfile
        >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
        >>> _ = f.create("x", data=np.arange(10))
        >>> f.flush()  # the tasks read what is committed
        >>> sel = colfile.where(f, "x > 4")
        >>> d = sel.to_dask("x", chunks=2)
        >>> d.chunks, d.compute()
        (((2, 2, 1),), array([5, 6, 7, 8, 9]))
        >>> f.close()
        """
        from . import _dask

        return _dask.selection(self, names, chunks)

    def _repr_html_(self) -> str:
        from . import _html

        return _html.selection(self)

    def to_pandas(self, names: Any) -> Any:
        """The selected rows of the columns ``names`` (as for :meth:`read`)
        as a :class:`pandas.DataFrame` indexed by row number, vector
        columns split into ``<name>_0``, ``<name>_1``, ... (needs pandas)."""
        from . import _pandas

        return _pandas.selection_frame(self, names)

    def _read_into(self, col: Column, out: np.ndarray) -> None:
        from . import _indexing

        lengths = self._stops - self._starts
        if not len(lengths):
            return
        rowbytes = col.itemsize * max(col.nmemb, 1)
        long_ = lengths * rowbytes >= RUN_BYTES
        pos = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        for s, e, p in zip(self._starts[long_].tolist(), self._stops[long_].tolist(),
                           pos[long_].tolist()):
            col.read(s, e, out=out[p:p + e - s])
        if long_.all():
            return
        short = ~long_
        sub = Selection(self.size, self._starts[short], self._stops[short], self.report,
                        self.predicate, self._resolve)
        rows = sub.rows
        at = sub.rows - np.repeat(self._starts[short] - pos[short], lengths[short])
        tmp = np.empty((len(rows),) + out.shape[1:], out.dtype)
        sel = _indexing.Rows.from_rows(rows)
        sel.is_sorted = True
        _indexing.read(sel, col, tmp)
        out[at] = tmp


def _merge_runs(starts: list[np.ndarray], stops: list[np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray]:
    if not starts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    s = np.concatenate(starts)
    e = np.concatenate(stops)
    if len(s) > 1:
        joined = s[1:] == e[:-1]
        if joined.any():
            keep_start = np.concatenate([[True], ~joined])
            keep_stop = np.concatenate([~joined, [True]])
            s, e = s[keep_start], e[keep_stop]
    return s, e


def _evaluate(predicate: Predicate, resolve: Callable[[str], Column],
              piece_bytes: int | None = None) -> Selection:
    plan = _Plan(predicate, [])
    report = _new_report(plan, "query")
    starts: list[np.ndarray] = []
    stops: list[np.ndarray] = []

    def visit(a: int, b: int, mask: np.ndarray | None, blocks: dict[int, np.ndarray]) -> None:
        if mask is None:
            starts.append(np.asarray([a], np.int64))
            stops.append(np.asarray([b], np.int64))
        else:
            s, e = _runs_of(mask, a)
            starts.append(s)
            stops.append(e)

    _scan(plan, 0, plan.ncells, [], report, visit, piece_bytes)
    s, e = _merge_runs(starts, stops)
    report.selected = int(np.sum(e - s))
    return Selection(plan.size, s, e, report, predicate, resolve)


# ---------------------------------------------------------------------------
# where


def _resolver(source: Any) -> Callable[[str], Column]:
    """How names in an expression (and in Selection.read) are found."""
    from .column import Column
    from .dataset import Dataset
    from .file import Group

    if isinstance(source, Dataset):
        group = source._source

        def by_dataset(name: str) -> Column:
            if name in source._cols:
                return source._cols[name]
            return group[name]
        return by_dataset
    if isinstance(source, Column):
        col = source
        base = col.name.rsplit("/", 1)[-1]
        f = col.file

        def by_column(name: str) -> Column:
            if name in (col.name, base):
                return col
            if f is not None and not f.closed:
                return f[name]
            raise KeyError(f"only {col.name!r} can be named in a query on this column")
        return by_column
    if isinstance(source, Group):
        return source.__getitem__
    raise TypeError(f"a query runs on a Column, Dataset, File or Group, not "
                    f"{type(source).__name__}")


def as_predicate(expr: Any, resolve: Callable[[str], Column]) -> Predicate:
    """``expr`` as a :class:`Predicate` (strings are parsed with
    :func:`parse`)."""
    if isinstance(expr, Predicate):
        return expr
    if isinstance(expr, str):
        return parse(expr, resolve)
    if isinstance(expr, Field):
        raise TypeError(f"a Field ({expr.name}) is not a condition: compare it with a number")
    raise TypeError(f"a query condition is a Predicate or an expression string, not "
                    f"{type(expr).__name__}")


def where(source: Any, expr: Any, *, piece_bytes: int | None = None) -> Selection:
    """The rows of ``source`` where ``expr`` holds, skipping the chunks
    whose statistics decide it.

    Parameters
    ----------
    source : Column, Dataset, File or Group
        Where names in ``expr`` are looked up (and in
        :meth:`Selection.read`).
    expr : Predicate or str
        The condition (see :func:`parse` for the string form).  All the
        columns it references must have the same length.
    piece_bytes : int, optional
        The most column data held in memory at once (default
        :data:`PIECE_BYTES`).

    Returns
    -------
    Selection

    Notes
    -----
    Under MPI each rank evaluates the whole query by itself, with no
    communication -- but looking up a name in a File opened with ``comm=``
    opens the column collectively, so a string expression (or
    :meth:`Selection.read` by name) must then be used on every rank.  A
    predicate built from columns already open is independent.

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> _ = f.create("a", data=np.array([1.0, np.nan, 3.0, 4.0]))
    >>> colfile.where(f, "a != 3").rows, colfile.where(f, "~(a == 3)").rows
    (array([0, 1, 3]), array([0, 1, 3]))
    >>> f.close()
    """
    resolve = _resolver(source)
    pred = as_predicate(expr, resolve)
    return _evaluate(pred, resolve, piece_bytes)
