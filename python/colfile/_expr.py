"""Fields and predicates: the lazy conditions a query evaluates, and the
small, safe expression language that spells them as strings.

A :class:`Field` is the values of one column (one component of a vector
column); comparing it with a number gives a :class:`Predicate`; predicates
combine with ``&``, ``|`` and ``~``.  A predicate decides each cell of a
query's grid from per-chunk statistics with three-valued logic (NONE: no
row can match, SOME, ALL: every row matches); :mod:`colfile.query`
evaluates them.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ._column_base import ColumnBase

if TYPE_CHECKING:
    from .column import Column

__all__ = ["ExpressionError", "Field", "Predicate", "Compare", "And", "Or", "Not", "parse",
           "from_spec", "NONE", "SOME", "ALL", "STATE_NAMES", "OPS"]

#: the three states of a condition in a cell of a query's grid
NONE, SOME, ALL = 0, 1, 2
STATE_NAMES = {NONE: "NONE", SOME: "SOME", ALL: "ALL"}

#: the comparisons, by their spelling
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}
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
        if op not in OPS:
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


def from_spec(spec: tuple[Any, ...], column: Callable[[str, str], Column]) -> Predicate:
    """Rebuild a predicate from :meth:`Predicate._spec`, opening columns
    with ``column(file_path, name)``."""
    kind = spec[0]
    if kind == "cmp":
        _, path, name, comp, op, value = spec
        return Compare(Field(column(path, name), comp), op, value)
    if kind == "and":
        return And(*[from_spec(s, column) for s in spec[1]])
    if kind == "or":
        return Or(*[from_spec(s, column) for s in spec[1]])
    if kind == "not":
        return Not(from_spec(spec[1], column))
    raise ValueError(f"bad predicate spec {spec!r:.80}")


# ---------------------------------------------------------------------------
# the expression language

_ASTOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
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
            op = _ASTOPS.get(type(opnode))
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


