"""Arithmetic on fields: the numeric expressions a query compares
(``Position[0]**2 + Position[1]**2``, ``ID % 2``, ``log10(Mass)``), their
values (numpy's, evaluated on the rows read) and their bounds per chunk by
interval arithmetic on the chunk statistics.

Soundness of the bounds is what lets a query skip a chunk, so every step
errs outward: bounds are float64, widened by an ulp (more after functions
that need not be correctly rounded) and rounded outward to the dtype numpy
computes in; integer results whose bounds leave their dtype (numpy would
wrap) and any step that can make a NaN from non-NaN values, divide by an
interval holding 0 or meet an unknown statistic give no bounds: those
chunks are read.  Values are never taken from the bounds: a chunk is read
and evaluated with numpy, or decided whole from bounds that hold for every
value numpy can compute there.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ._expr import Field, Predicate

__all__ = ["Expr", "Const", "BinOp", "Func", "Bounds", "field_bounds", "as_operand",
           "FUNCTIONS", "BINOPS", "NONE", "SOME", "ALL", "STATE_NAMES", "OPS", "HOOKS"]

#: the three states of a condition in a cell of a query's grid
NONE, SOME, ALL = 0, 1, 2
STATE_NAMES = {NONE: "NONE", SOME: "SOME", ALL: "ALL"}

#: the comparisons, by their spelling
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}

#: how comparisons and isin() build predicates, and the predicate type:
#: ``compare``, ``isin`` and ``Predicate``, registered by colfile._expr,
#: which builds on this module
HOOKS: dict[str, Any] = {}

#: the arithmetic operators, by their spelling, as numpy applies them
BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
    "//": np.floor_divide, "%": np.remainder, "**": np.power,
}
#: the functions of one argument, by name
FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "abs": np.absolute, "sqrt": np.sqrt, "exp": np.exp, "log": np.log,
    "log10": np.log10, "floor": np.floor, "neg": np.negative,
}
_UFUNC_NAMES = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/",
                np.floor_divide: "//", np.remainder: "%", np.power: "**"}
_UFUNC_FUNCS = {v: k for k, v in FUNCTIONS.items()}
_PREC = {"+": 10, "-": 10, "*": 11, "/": 11, "//": 11, "%": 11, "**": 13}
# ulps of error allowed to numpy's functions that need not be correctly
# rounded (libm or SIMD exp, log, log10, pow); +-*/ and sqrt are exact to
# half an ulp
_LOOSE_ULPS = 4


def _real(value: Any) -> bool:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))


def as_operand(value: Any) -> Expr:
    """An expression, or a real number as a :class:`Const`."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if _real(value):
        return Const(value)
    if isinstance(value, HOOKS["Predicate"]):
        raise TypeError("a condition cannot be used in arithmetic")
    raise TypeError(f"a column can be combined with a real number, not with "
                    f"{type(value).__name__} ({value!r:.60})")


class Expr:
    """A numeric expression of fields and numbers: a :class:`Field`
    (``col.field(j)``), or arithmetic on fields (``x**2 + y**2``,
    ``abs(v)``, ``np.log10(m)``, ``ID % 2``) with numpy's semantics for
    the values (dtype promotion, integer division, wrapping on overflow,
    NaN).  Comparing an expression with a number or another expression
    gives a :class:`Predicate`; :meth:`isin` tests membership.

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> p = f.create("p", data=np.arange(12.0).reshape(4, 3))
    >>> x, y = p.field(0), p.field(1)
    >>> r2 = x**2 + y**2
    >>> r2, r2 < 50
    (<colfile.Expr p[0] ** 2 + p[1] ** 2 dtype=float64>, <colfile.Predicate p[0] ** 2 + p[1] ** 2 < 50>)
    >>> colfile.where(f, np.sqrt(r2) < 8).rows
    array([0, 1])
    >>> f.close()
    """

    _prec = 14
    __hash__ = None  # type: ignore[assignment]  # == builds a predicate

    # numpy ufuncs on expressions build expressions (np.sqrt(x), 2 * x)
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__" or kwargs:
            return NotImplemented
        if ufunc in _UFUNC_NAMES and len(inputs) == 2:
            return BinOp(_UFUNC_NAMES[ufunc], as_operand(inputs[0]), as_operand(inputs[1]))
        if ufunc in _UFUNC_FUNCS and len(inputs) == 1:
            return Func(_UFUNC_FUNCS[ufunc], as_operand(inputs[0]))
        cmp = {np.less: "<", np.less_equal: "<=", np.greater: ">", np.greater_equal: ">=",
               np.equal: "==", np.not_equal: "!="}.get(ufunc)
        if cmp is not None and len(inputs) == 2:
            return HOOKS["compare"](inputs[0], cmp, inputs[1])
        return NotImplemented

    # -- what subclasses say
    def _text(self) -> str:
        raise NotImplementedError

    @property
    def fields(self) -> list[Field]:
        """The fields the expression uses, in order of appearance."""
        raise NotImplementedError

    def _probe(self) -> Any:
        """The expression on no rows: numpy's result dtype (and numpy's
        errors for operands it refuses)."""
        raise NotImplementedError

    def _value(self, blocks: dict[int, np.ndarray]) -> Any:
        """numpy's values from the rows read, by ``id(column)``."""
        raise NotImplementedError

    def _bounds(self, base: Callable[[Field], Bounds]) -> Bounds:
        """Bounds per cell from the fields' bounds ``base(field)``."""
        raise NotImplementedError

    def _spec(self) -> tuple[Any, ...]:
        raise NotImplementedError

    # -- shared
    @property
    def dtype(self) -> np.dtype[Any]:
        """The dtype numpy gives the values."""
        return np.asarray(self._probe()).dtype

    def _wrap(self, prec: int) -> str:
        t = self._text()
        return f"({t})" if self._prec < prec else t

    def __repr__(self) -> str:
        return f"<colfile.Expr {self._text()} dtype={self.dtype}>"

    def __str__(self) -> str:
        return self._text()

    def __bool__(self) -> bool:
        raise TypeError(f"a colfile expression ({self._text()}) has no truth value: "
                        "compare it with a number")

    def __add__(self, o: Any) -> Expr:
        return BinOp("+", self, as_operand(o))

    def __radd__(self, o: Any) -> Expr:
        return BinOp("+", as_operand(o), self)

    def __sub__(self, o: Any) -> Expr:
        return BinOp("-", self, as_operand(o))

    def __rsub__(self, o: Any) -> Expr:
        return BinOp("-", as_operand(o), self)

    def __mul__(self, o: Any) -> Expr:
        return BinOp("*", self, as_operand(o))

    def __rmul__(self, o: Any) -> Expr:
        return BinOp("*", as_operand(o), self)

    def __truediv__(self, o: Any) -> Expr:
        return BinOp("/", self, as_operand(o))

    def __rtruediv__(self, o: Any) -> Expr:
        return BinOp("/", as_operand(o), self)

    def __floordiv__(self, o: Any) -> Expr:
        return BinOp("//", self, as_operand(o))

    def __rfloordiv__(self, o: Any) -> Expr:
        return BinOp("//", as_operand(o), self)

    def __mod__(self, o: Any) -> Expr:
        return BinOp("%", self, as_operand(o))

    def __rmod__(self, o: Any) -> Expr:
        return BinOp("%", as_operand(o), self)

    def __pow__(self, o: Any) -> Expr:
        return BinOp("**", self, as_operand(o))

    def __rpow__(self, o: Any) -> Expr:
        return BinOp("**", as_operand(o), self)

    def __neg__(self) -> Expr:
        return Func("neg", self)

    def __pos__(self) -> Expr:
        return self

    def __abs__(self) -> Expr:
        return Func("abs", self)

    def _cmp(self, op: str, value: Any) -> Predicate:
        return HOOKS["compare"](self, op, value)  # type: ignore[no-any-return]

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

    def isin(self, values: Any) -> Predicate:
        """True where the value equals one of ``values`` (numpy's ``==``;
        NaN is in no list)."""
        return HOOKS["isin"](self, values)  # type: ignore[no-any-return]


class Const(Expr):
    """A number in an expression (a Python or numpy scalar, kept as given
    so that numpy promotes it as it would)."""

    def __init__(self, value: Any) -> None:
        if not _real(value):
            raise TypeError(f"{value!r:.60} is not a real number")
        self.value = value
        neg = (value < 0) if not isinstance(value, float) or not math.isnan(value) else False
        self._prec = 12 if neg else 14

    def _text(self) -> str:
        v = self.value
        return repr(v.item() if isinstance(v, np.generic) else v)

    @property
    def fields(self) -> list[Field]:
        return []

    def _probe(self) -> Any:
        return self.value

    def _value(self, blocks: dict[int, np.ndarray]) -> Any:
        return self.value

    def _bounds(self, base: Callable[[Field], Bounds]) -> Bounds:
        raise AssertionError("constants are bounded where they are used")

    def _spec(self) -> tuple[Any, ...]:
        return ("const", self.value)


class BinOp(Expr):
    """``left OP right`` with numpy's operator."""

    def __init__(self, op: str, left: Expr, right: Expr) -> None:
        if op not in BINOPS:
            raise ValueError(f"unknown operator {op!r}")
        self.op, self.left, self.right = op, left, right
        self._prec = _PREC[op]
        if not self.fields:
            raise TypeError("an expression needs a column")
        r = right.value if isinstance(right, Const) else None
        if op == "**" and r is not None and not isinstance(r, (bool, np.bool_)) and \
                isinstance(r, (int, np.integer)) and r < 0 and \
                np.asarray(left._probe()).dtype.kind in "iub":
            raise ValueError(f"{self._text()}: integers to negative integer powers are not "
                             "allowed (numpy)")
        with np.errstate(all="ignore"):
            self._dt = np.asarray(BINOPS[op](left._probe(), right._probe())).dtype

    def _text(self) -> str:
        p = self._prec
        if self.op == "**":  # right-associative, below unary on its right
            return f"{self.left._wrap(p + 1)} ** {self.right._wrap(12)}"
        return f"{self.left._wrap(p)} {self.op} {self.right._wrap(p + 1)}"

    @property
    def fields(self) -> list[Field]:
        return self.left.fields + self.right.fields

    def _probe(self) -> Any:
        return np.empty((0,), self._dt)

    def _value(self, blocks: dict[int, np.ndarray]) -> Any:
        with np.errstate(all="ignore"):
            return BINOPS[self.op](self.left._value(blocks), self.right._value(blocks))

    def _spec(self) -> tuple[Any, ...]:
        return ("bin", self.op, self.left._spec(), self.right._spec())

    def _bounds(self, base: Callable[[Field], Bounds]) -> Bounds:
        a_const = isinstance(self.left, Const)
        b_const = isinstance(self.right, Const)
        if self.op == "**" and b_const:
            return _power(self.left._bounds(base), self.right.value, self._dt)  # type: ignore[attr-defined]
        if a_const:
            b = self.right._bounds(base)
            a = Bounds.const(self.left.value, len(b.lo))  # type: ignore[attr-defined]
        else:
            a = self.left._bounds(base)
            b = Bounds.const(self.right.value, len(a.lo)) if b_const else \
                self.right._bounds(base)  # type: ignore[attr-defined]
        return _binary(self.op, a, b, self._dt)


class Func(Expr):
    """``name(arg)``: abs, sqrt, exp, log, log10, floor, or neg (``-x``)."""

    def __init__(self, name: str, arg: Expr) -> None:
        if name not in FUNCTIONS:
            raise ValueError(f"unknown function {name!r}")
        self.name, self.arg = name, arg
        self._prec = 12 if name == "neg" else 14
        if not arg.fields:
            raise TypeError("an expression needs a column")
        with np.errstate(all="ignore"):
            self._dt = np.asarray(FUNCTIONS[name](arg._probe())).dtype

    def _text(self) -> str:
        if self.name == "neg":
            return "-" + self.arg._wrap(12)
        return f"{self.name}({self.arg._text()})"

    @property
    def fields(self) -> list[Field]:
        return self.arg.fields

    def _probe(self) -> Any:
        return np.empty((0,), self._dt)

    def _value(self, blocks: dict[int, np.ndarray]) -> Any:
        with np.errstate(all="ignore"):
            return FUNCTIONS[self.name](self.arg._value(blocks))

    def _spec(self) -> tuple[Any, ...]:
        return ("fn", self.name, self.arg._spec())

    def _bounds(self, base: Callable[[Field], Bounds]) -> Bounds:
        return _unary(self.name, self.arg._bounds(base), self._dt)


def from_spec(spec: tuple[Any, ...], field: Callable[[str, str, int | None], Field]) -> Expr:
    """Rebuild an expression from :meth:`Expr._spec`."""
    kind = spec[0]
    if kind == "field":
        return field(spec[1], spec[2], spec[3])
    if kind == "const":
        return Const(spec[1])
    if kind == "bin":
        return BinOp(spec[1], from_spec(spec[2], field), from_spec(spec[3], field))
    if kind == "fn":
        return Func(spec[1], from_spec(spec[2], field))
    raise ValueError(f"bad expression spec {spec!r:.80}")


# ---------------------------------------------------------------------------
# bounds


class Bounds:
    """Per cell: every value the expression takes there is NaN or lies in
    ``[lo, hi]`` (float64), where ``ok``; ``nan``: NaN values may occur;
    ``empty``: every value is NaN (``lo``, ``hi`` meaningless)."""

    __slots__ = ("lo", "hi", "ok", "nan", "empty")

    def __init__(self, lo: np.ndarray, hi: np.ndarray, ok: np.ndarray, nan: np.ndarray,
                 empty: np.ndarray) -> None:
        bad = ~ok | empty | np.isnan(lo) | np.isnan(hi)
        self.ok = ok & ~(np.isnan(lo) | np.isnan(hi)) | (ok & empty)
        self.lo = np.where(bad, 0.0, lo)
        self.hi = np.where(bad, 0.0, hi)
        self.nan = nan | empty
        self.empty = empty & ok

    @staticmethod
    def const(value: Any, n: int) -> Bounds:
        lo, hi = _scalar_bounds(value)
        nan = math.isnan(lo)
        return Bounds(np.full(n, lo), np.full(n, hi), np.ones(n, bool),
                      np.full(n, nan), np.full(n, nan))


def _scalar_bounds(value: Any) -> tuple[float, float]:
    """float64 bounds of a number (a huge Python int is rounded outward)."""
    if isinstance(value, (bool, np.bool_)):
        return float(value), float(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v, v
    v = int(value)
    try:
        f = float(v)
    except OverflowError:
        f = math.inf if v > 0 else -math.inf
    lo = f if f <= v else float(np.nextafter(f, -np.inf))
    hi = f if f >= v else float(np.nextafter(f, np.inf))
    return lo, hi


def field_bounds(stats: np.ndarray, rows: np.ndarray, dtype: np.dtype[Any]) -> Bounds:
    """Bounds of a field's values per chunk record: min and max where the
    statistics are valid, ordered, consistent and count every row."""
    count = stats["count"].astype(np.int64)
    nan = stats["nan_count"].astype(np.int64)
    ok = stats["valid"].astype(bool) & stats["ordered"].astype(bool)
    ok &= (nan >= 0) & (nan <= count) & (count >= 0) & (count == rows)
    if dtype.kind != "f":
        ok &= nan == 0
    empty = ok & (count - nan == 0)
    lo = stats["min"].astype(np.float64)
    hi = stats["max"].astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok &= empty | (lo <= hi)
    return Bounds(lo, hi, ok, nan > 0, empty)


def _down(x: np.ndarray, k: int = 1) -> np.ndarray:
    for _ in range(k):
        x = np.nextafter(x, -np.inf)
    return x


def _up(x: np.ndarray, k: int = 1) -> np.ndarray:
    for _ in range(k):
        x = np.nextafter(x, np.inf)
    return x


def _narrow(lo: np.ndarray, hi: np.ndarray, dtype: np.dtype[Any], ulps: int = 0
            ) -> tuple[np.ndarray, np.ndarray]:
    """float64 bounds rounded outward to values of a float dtype (then
    ``ulps`` more of that dtype)."""
    dt = np.dtype(dtype.newbyteorder("=")) if dtype.kind == "f" else np.dtype(np.float64)
    if dt.itemsize >= 8 and not ulps:
        return lo, hi
    with np.errstate(all="ignore"):
        lo_t = lo.astype(dt)
        hi_t = hi.astype(dt)
        ninf = dt.type(-np.inf)
        pinf = dt.type(np.inf)
        lo_t = np.where(lo_t.astype(np.float64) > lo, np.nextafter(lo_t, ninf), lo_t)
        hi_t = np.where(hi_t.astype(np.float64) < hi, np.nextafter(hi_t, pinf), hi_t)
        for _ in range(ulps):
            lo_t = np.nextafter(lo_t, ninf)
            hi_t = np.nextafter(hi_t, pinf)
    return lo_t.astype(np.float64), hi_t.astype(np.float64)


def _finish(lo: np.ndarray, hi: np.ndarray, ok: np.ndarray, nan: np.ndarray,
            empty: np.ndarray, dt: np.dtype[Any], ulps: int = 0) -> Bounds:
    """Round a result's bounds outward to its dtype; integer bounds that
    leave the dtype (numpy wraps) are no bounds."""
    if dt.kind == "f":
        lo, hi = _narrow(lo, hi, dt, ulps)
    elif dt.kind in "iu":
        bits = dt.itemsize * 8
        if dt.kind == "i":
            lim_lo, lim_hi = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1)
        else:
            lim_lo, lim_hi = 0.0, 2.0 ** bits
        with np.errstate(invalid="ignore"):
            ok = ok & (lo >= lim_lo) & (hi < lim_hi)
            lo, hi = np.ceil(lo), np.floor(hi)  # the values are integers
        nan = np.zeros_like(nan) | empty
    else:  # bool arithmetic (logical or/and): not bounded here
        ok = np.zeros_like(ok)
    return Bounds(lo, hi, ok, nan, empty)


def _operands(a: Bounds, b: Bounds, dt: np.dtype[Any]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Operand bounds as numpy converts the operands (to a float result
    dtype, rounded to nearest: outward here)."""
    if dt.kind == "f":
        a_lo, a_hi = _narrow(a.lo, a.hi, dt)
        b_lo, b_hi = _narrow(b.lo, b.hi, dt)
        return a_lo, a_hi, b_lo, b_hi
    return a.lo, a.hi, b.lo, b.hi


def _binary(op: str, a: Bounds, b: Bounds, dt: np.dtype[Any]) -> Bounds:
    ok = a.ok & b.ok
    nan = a.nan | b.nan
    empty = a.empty | b.empty
    a_lo, a_hi, b_lo, b_hi = _operands(a, b, dt)
    floating = dt.kind == "f"
    infinite = np.isinf(a_lo) | np.isinf(a_hi) | np.isinf(b_lo) | np.isinf(b_hi)
    nonzero = (b_lo > 0) | (b_hi < 0)
    with np.errstate(all="ignore"):
        if op == "+":
            lo, hi = _down(a_lo + b_lo), _up(a_hi + b_hi)
        elif op == "-":
            lo, hi = _down(a_lo - b_hi), _up(a_hi - b_lo)
        elif op in ("*", "/"):
            f = np.multiply if op == "*" else np.true_divide
            if op == "/":
                ok = ok & nonzero
            c = np.stack([f(a_lo, b_lo), f(a_lo, b_hi), f(a_hi, b_lo), f(a_hi, b_hi)])
            ok = ok & ~np.isnan(c).any(axis=0)
            lo, hi = _down(np.nanmin(np.where(np.isnan(c), 0, c), axis=0)), \
                _up(np.nanmax(np.where(np.isnan(c), 0, c), axis=0))
        elif op == "//":
            ok = ok & nonzero
            if floating:  # numpy's float floor_divide is floor(a/b) up to rounding
                ok = ok & ~infinite
            c = np.stack([a_lo / b_lo, a_lo / b_hi, a_hi / b_lo, a_hi / b_hi])
            c = np.where(np.isnan(c), 0, c)
            lo, hi = np.floor(_down(c.min(axis=0))), np.floor(_up(c.max(axis=0)))
            if floating:
                lo, hi = lo - 1, hi + 1
            else:  # integers below 2**53: floor division is exact at the corners
                small = ok & (np.maximum.reduce([np.abs(a_lo), np.abs(a_hi), np.abs(b_lo),
                                                 np.abs(b_hi)]) < 2.0 ** 53)
                ia = [np.where(small, np.ceil(a_lo), 0).astype(np.int64),
                      np.where(small, np.floor(a_hi), 0).astype(np.int64)]
                ib = [np.where(small, np.ceil(b_lo), 1).astype(np.int64),
                      np.where(small, np.floor(b_hi), 1).astype(np.int64)]
                ib = [np.where(x == 0, 1, x) for x in ib]  # no 0 where nonzero
                ci = np.stack([x // y for x in ia for y in ib]).astype(np.float64)
                lo = np.where(small, ci.min(axis=0), lo)
                hi = np.where(small, ci.max(axis=0), hi)
        elif op == "%":
            ok = ok & nonzero
            if floating:
                ok = ok & ~infinite
            pos = b_lo > 0
            one = 0.0 if floating else 1.0
            lo = np.where(pos, 0.0, b_lo + one)
            hi = np.where(pos, b_hi - one, 0.0)
            # a non-negative dividend below the divisor is itself
            same = pos & (a_lo >= 0) & (a_hi < b_lo)
            lo = np.where(same, a_lo, lo)
            hi = np.where(same, a_hi, hi)
        else:  # ** with a column exponent: no bounds
            lo, hi = np.zeros_like(a_lo), np.zeros_like(a_lo)
            ok = np.zeros_like(ok)
    if floating:
        nan = nan | infinite  # inf - inf, 0 * inf ...
    return _finish(lo, hi, ok, nan, empty, dt)


def _power(a: Bounds, p: Any, dt: np.dtype[Any]) -> Bounds:
    """Bounds of ``x ** p`` for a constant ``p``."""
    n = len(a.lo)
    if isinstance(p, (bool, np.bool_)):
        p = int(p)
    pf = float(p) if not isinstance(p, (int, np.integer)) or abs(int(p)) < 2 ** 53 else math.nan
    if pf == 0:  # x ** 0 is 1, NaN included
        one = np.ones(n)
        return Bounds(one, one.copy(), a.ok.copy(), np.zeros(n, bool), np.zeros(n, bool))
    ok = a.ok.copy()
    nan = a.nan.copy()
    empty = a.empty.copy()
    if dt.kind == "f":
        a_lo, a_hi = _narrow(a.lo, a.hi, dt)
        with np.errstate(over="ignore"):
            pf = float(dt.newbyteorder("=").type(pf))  # numpy converts the exponent
    else:
        a_lo, a_hi = a.lo, a.hi
    if not math.isfinite(pf):
        return Bounds(a_lo, a_hi, np.zeros(n, bool), nan, empty)
    with np.errstate(all="ignore"):
        if pf.is_integer():
            k = int(pf)
            if k < 0:  # 0 ** -k is inf: only intervals without 0
                ok &= (a_lo > 0) | (a_hi < 0)
            if k % 2 == 0 and k > 0:
                m = np.maximum(np.abs(a_lo), np.abs(a_hi))
                low = np.where((a_lo <= 0) & (a_hi >= 0), 0.0,
                               np.minimum(np.abs(a_lo), np.abs(a_hi)))
                lo, hi = np.power(low, pf), np.power(m, pf)
            else:
                c0, c1 = np.power(a_lo, pf), np.power(a_hi, pf)
                lo, hi = np.minimum(c0, c1), np.maximum(c0, c1)
        else:  # defined for x >= 0; NaN below (but (-inf) ** p is inf)
            ok &= a_lo > -np.inf
            empty = empty | (ok & (a_hi < 0))
            nan = nan | (a_lo < 0)
            base = np.maximum(a_lo, 0.0)
            c0, c1 = np.power(base, pf), np.power(np.maximum(a_hi, 0.0), pf)
            lo, hi = np.minimum(c0, c1), np.maximum(c0, c1)
    ok &= ~(np.isnan(lo) | np.isnan(hi))
    lo, hi = _down(lo, _LOOSE_ULPS), _up(hi, _LOOSE_ULPS)
    if dt.kind == "f":
        nan = nan | np.isinf(a_lo) | np.isinf(a_hi)
    return _finish(lo, hi, ok, nan, empty, dt, _LOOSE_ULPS if dt.kind == "f" else 0)


def _unary(name: str, a: Bounds, dt: np.dtype[Any]) -> Bounds:
    ok = a.ok.copy()
    nan = a.nan.copy()
    empty = a.empty.copy()
    if dt.kind == "f":
        a_lo, a_hi = _narrow(a.lo, a.hi, dt)
    else:
        a_lo, a_hi = a.lo, a.hi
    ulps = 0
    with np.errstate(all="ignore"):
        if name == "neg":
            lo, hi = -a_hi, -a_lo
        elif name == "abs":
            lo = np.where(a_lo >= 0, a_lo, np.where(a_hi <= 0, -a_hi, 0.0))
            hi = np.maximum(np.abs(a_lo), np.abs(a_hi))
        elif name == "floor":
            lo, hi = np.floor(a_lo), np.floor(a_hi)
        elif name == "exp":
            lo, hi = _down(np.exp(a_lo), _LOOSE_ULPS), _up(np.exp(a_hi), _LOOSE_ULPS)
            ulps = _LOOSE_ULPS
        else:  # sqrt, log, log10: NaN below 0
            f = {"sqrt": np.sqrt, "log": np.log, "log10": np.log10}[name]
            k = 1 if name == "sqrt" else _LOOSE_ULPS
            empty = empty | (ok & (a_hi < 0))
            nan = nan | (a_lo < 0)
            lo = _down(f(np.maximum(a_lo, 0.0)), k)
            hi = _up(f(np.maximum(a_hi, 0.0)), k)
            ulps = 0 if name == "sqrt" else _LOOSE_ULPS
    return _finish(lo, hi, ok, nan, empty, dt, ulps)


# ---------------------------------------------------------------------------
# comparisons decided from bounds


def in_dtype(b: Bounds, dtype: np.dtype[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Bounds as values of ``dtype`` that still bound the values (compared
    by numpy as the values are)."""
    dt = dtype.newbyteorder("=")
    if dt.kind == "f":
        lo, hi = _narrow(b.lo, b.hi, dt)
        with np.errstate(over="ignore"):
            return lo.astype(dt), hi.astype(dt)
    lo_f, hi_f = np.floor(b.lo), np.ceil(b.hi)
    if dt.kind == "b":
        return np.clip(lo_f, 0, 1).astype(bool), np.clip(hi_f, 0, 1).astype(bool)
    return clamp_to_int(lo_f, hi_f, dt)


def clamp_to_int(lo_f: np.ndarray, hi_f: np.ndarray, dtype: np.dtype[Any]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Whole-number float bounds as values of the integer ``dtype``: those
    beyond its range become its smallest or largest value."""
    info = np.iinfo(dtype)
    out = []
    for v in (lo_f, hi_f):
        d = np.empty(len(v), dtype)
        under = v <= float(info.min)
        over = v >= float(info.max)
        mid = ~under & ~over
        d[under] = info.min
        d[over] = info.max
        d[mid] = v[mid].astype(dtype)
        out.append(d)
    return out[0], out[1]


def quiet_compare(values: Any, op: str, other: Any) -> np.ndarray:
    """numpy's ``values OP other`` without warnings; bool arrays compare as
    the integers 0 and 1."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "b":
        values = values.view(np.uint8)
    if isinstance(other, np.ndarray) and other.dtype.kind == "b":
        other = other.view(np.uint8)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(OPS[op](values, other), dtype=bool)


def interval_verdicts(op: str, l_lo: Any, l_hi: Any, r_lo: Any, r_hi: Any,
                      nan: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(all, none) per cell: whether ``x OP y`` holds for every or for no x
    in [l_lo, l_hi] and y in [r_lo, r_hi], where `nan` marks cells with a
    NaN (NaN != y holds, every other NaN OP y does not)."""
    if op in ("<", "<="):
        all_ = quiet_compare(l_hi, op, r_lo)
        none = ~quiet_compare(l_lo, op, r_hi)
    elif op in (">", ">="):
        all_ = quiet_compare(l_lo, op, r_hi)
        none = ~quiet_compare(l_hi, op, r_lo)
    else:
        eq_all = quiet_compare(l_lo, "==", r_hi) & quiet_compare(l_hi, "==", r_lo)
        eq_none = quiet_compare(l_hi, "<", r_lo) | quiet_compare(l_lo, ">", r_hi)
        all_, none = (eq_all, eq_none) if op == "==" else (eq_none, eq_all)
    if op == "!=":
        none = none & ~nan
    else:
        all_ = all_ & ~nan
    return all_, none


def decide_bounds(op: str, left: Bounds, ldt: np.dtype[Any], right: Bounds | None,
                  rdt: np.dtype[Any] | None, value: Any = None) -> np.ndarray:
    """NONE (0), SOME (1) or ALL (2) per cell for ``left OP right`` (or
    ``left OP value`` for a constant), from their bounds."""
    n = len(left.lo)
    ok = left.ok.copy()
    nan = left.nan.copy()
    empty = left.empty.copy()
    l_lo, l_hi = in_dtype(left, ldt)
    if right is None:
        if isinstance(value, (float, np.floating)) and math.isnan(value):
            return np.full(n, ALL if op == "!=" else NONE, np.int8)
        r_lo = r_hi = value
    else:
        ok &= right.ok
        nan |= right.nan
        empty |= right.empty
        assert rdt is not None
        r_lo, r_hi = in_dtype(right, rdt)
    all_, none = interval_verdicts(op, l_lo, l_hi, r_lo, r_hi, nan)
    out = np.full(n, SOME, np.int8)
    out[ok & none] = NONE
    out[ok & all_ & ~none] = ALL
    out[ok & empty] = ALL if op == "!=" else NONE
    return out


def isin_bounds(left: Bounds, ldt: np.dtype[Any], values: Sequence[Any]) -> np.ndarray:
    """NONE/SOME/ALL per cell for ``isin(left, values)``: NONE where no
    value lies within the bounds, ALL where the bounds are one listed value
    and no NaN occurs."""
    n = len(left.lo)
    l_lo, l_hi = in_dtype(left, ldt)
    reals = [v for v in values if not (isinstance(v, (float, np.floating)) and math.isnan(v))]
    some = np.zeros(n, bool)
    all_ = np.zeros(n, bool)
    if len(reals) > 64:  # many values: their range only
        reals = [min(reals), max(reals)]
        some = quiet_compare(l_lo, "<=", reals[1]) & quiet_compare(l_hi, ">=", reals[0])
    else:
        for v in reals:
            inside = quiet_compare(l_lo, "<=", v) & quiet_compare(l_hi, ">=", v)
            some |= inside
            all_ |= quiet_compare(l_lo, "==", v) & quiet_compare(l_hi, "==", v)
    all_ &= ~left.nan
    out = np.full(n, SOME, np.int8)
    ok = left.ok
    out[ok & ~some] = NONE
    out[ok & all_] = ALL
    out[ok & left.empty] = NONE
    return out

