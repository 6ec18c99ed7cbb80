"""The query expression language: a tokenizer and a recursive-descent
parser of its own (user text is never given to Python's parser or
evaluated) that builds :class:`~colfile.query.Predicate` objects."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ._arith import FUNCTIONS, BinOp, Const, Expr, Func
from ._expr import ExpressionError, Field, IsIn, Predicate, compare

if TYPE_CHECKING:
    from .column import Column

__all__ = ["parse", "MAX_EXPRESSION", "MAX_DEPTH", "MAX_OPERATORS"]

#: longest expression accepted (characters)
MAX_EXPRESSION = 100_000
#: deepest nesting of parentheses, unary operators and powers
MAX_DEPTH = 64
#: most arithmetic operators and function calls in one expression
MAX_OPERATORS = 200
# the largest integer constant computed while folding (bits)
_MAX_BITS = 4096

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<path>[A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)+)
  | (?P<num>(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?(?![A-Za-z0-9_.]))
  | (?P<name>[A-Za-z0-9_]+)
  | (?P<str>'[^'\\]*'|"[^"\\]*")
  | (?P<op>\*\*|//|<=|>=|==|!=|[-+*/%<>()\[\],&|~])
""", re.VERBOSE)
_NUMBER = re.compile(r"[0-9]+(?:[eE][+-]?[0-9]+)?")
_CMP = ("<", "<=", ">", ">=", "==", "!=")
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_WORDS = {
    "and": "'and' / 'or' are not allowed: use & and | with parentheses, e.g. "
           "(x > 1) & (y < 2)",
    "or": "'and' / 'or' are not allowed: use & and | with parentheses, e.g. "
          "(x > 1) & (y < 2)",
    "not": "'not' is not allowed (use ~)",
    "in": "'in' is not allowed: use isin(x, [1, 2, 3])",
    "is": "'is' is not allowed: use ==",
    "None": "None is not a real number",
    "lambda": "lambda is not allowed",
    "if": "if-else is not allowed",
}
_WORDS.update({w: f"invalid syntax: {w!r} is a Python keyword (quote a column of that "
                  "name)" for w in (
    "import", "from", "def", "class", "return", "else", "for", "while", "with", "as",
    "assert", "del", "global", "nonlocal", "yield", "await", "async", "pass", "raise",
    "try", "except", "finally", "continue", "break", "elif")})
_COMPLEX = re.compile(r"[0-9.]+(?:[eE][+-]?[0-9]+)?[jJ]")
_CHARS = {
    ".": "attribute access (.) is not allowed", ":": "':' is not allowed",
    "=": "'=' is not a comparison (use ==)", ";": "invalid syntax: ';'",
    "^": "'^' is not allowed (use ** for powers)", "!": "'!' is not allowed (use ~)",
    "{": "'{' is not allowed", "@": "'@' is not allowed",
}
_LANGUAGE = ("an expression holds columns, numbers, arithmetic (+ - * / // % **), "
             "functions (abs sqrt exp log log10 floor isin), comparisons, & | ~ and "
             "parentheses")


class _Tok:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind: str, text: str, pos: int) -> None:
        self.kind, self.text, self.pos = kind, text, pos


class _K:
    """A constant while parsing (folded with Python's arithmetic, as numpy
    code would compute it before numpy sees it)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def parse(text: str, resolve: Callable[[str], Column]) -> Predicate:
    """Parse a query expression into a :class:`Predicate`.

    The language (read by a parser of its own, never evaluated):

    * a column: a name (``Mass``), a path written plainly
      (``Group/Position``, ``1/ID``) or quoted (``'odd name'``), with an
      integer component for a vector column (``Position[0]``,
      ``Position[-1]``).  A ``/`` between two name characters with no
      spaces is part of a name when that names a column; otherwise it
      divides (``x/2``).  Write spaces to divide two columns: ``a / b``;
    * numbers: integers of any size, floats (``1e10``), ``inf``, ``nan``
      (unless a column has that name), ``True`` / ``False``;
    * arithmetic with numpy's operators and precedence: ``+ - * / // %
      **`` and unary ``-``; the functions ``abs``, ``sqrt``, ``exp``,
      ``log``, ``log10``, ``floor``;
    * comparisons ``< <= > >= == !=`` of any two expressions, chained ones
      too (``10 <= Mass < 20``); ``isin(x, [1, 2, 3])``;
    * ``&`` (and), ``|`` (or), ``~`` (not) and parentheses.  As in numpy,
      ``&`` and ``|`` bind more tightly than comparisons, so comparisons
      combined with them need parentheses.

    Values follow numpy (dtype promotion, integer division and wrapping,
    NaN), evaluated on the columns as stored; parts made of numbers only
    are computed first, as Python computes them.  Anything else raises
    :class:`ExpressionError`, saying what and where.

    Parameters
    ----------
    text : str
        The expression.
    resolve : callable
        Maps a column name to a :class:`~colfile.Column` (KeyError if none).

    Examples
    --------
    >>> import os, tempfile, numpy as np, colfile
    >>> f = colfile.File(os.path.join(tempfile.mkdtemp(), "f"), "w")
    >>> _ = f.create("Mass", data=np.arange(4.0))
    >>> _ = f.create("1/Position", data=np.zeros((4, 3)))
    >>> parse("10 <= Mass < 20", f.__getitem__)
    <colfile.Predicate (Mass >= 10) & (Mass < 20)>
    >>> parse("1/Position[0]**2 + 1/Position[1]**2 < 10**2", f.__getitem__)
    <colfile.Predicate 1/Position[0] ** 2 + 1/Position[1] ** 2 < 100>
    >>> parse("~isin(Mass % 3, [0, 2]) | (log10(Mass) > 0.5)", f.__getitem__)
    <colfile.Predicate ~isin(Mass % 3, [0, 2]) | (log10(Mass) > 0.5)>
    >>> parse("Mass > 1 & Mass < 3", f.__getitem__)
    Traceback (most recent call last):
    ...
    colfile.query.ExpressionError: 'Mass > 1 & Mass < 3': & and | bind more tightly
    than comparisons: put each comparison in parentheses, e.g. (x > 1) & (y < 2) (at column 8)
    >>> parse("Mass.sum() > 1", f.__getitem__)
    Traceback (most recent call last):
    ...
    colfile.query.ExpressionError: 'Mass.sum() > 1': attribute access (.) is not allowed
    (at column 5)
    >>> f.close()
    """
    if not isinstance(text, str):
        raise TypeError(f"an expression is a str, not {type(text).__name__}")
    if len(text) > MAX_EXPRESSION:
        raise ExpressionError(f"expression of {len(text)} characters is too long "
                              f"(at most {MAX_EXPRESSION})")
    p = _Parser(text, resolve)
    try:
        node = p.top()
    except RecursionError:
        raise ExpressionError(f"{text!r:.200}: nested too deeply") from None
    return node


class _Parser:
    def __init__(self, text: str, resolve: Callable[[str], Column]) -> None:
        self.text = text
        self.resolve = resolve
        self.toks = self.tokenize()
        self.i = 0
        self.depth = 0
        self.operators = 0
        self.seen: dict[str, Any] = {}

    # -- tokens
    def fail(self, pos: int | None, why: str) -> ExpressionError:
        where_ = f" (at column {pos + 1})" if pos is not None else ""
        return ExpressionError(f"{self.text!r:.300}: {why}{where_}")

    def tokenize(self) -> list[_Tok]:
        out = []
        pos = 0
        t = self.text
        while pos < len(t):
            m = _TOKEN.match(t, pos)
            if m is None:  # reported when the parser gets there
                out.append(_Tok("bad", t[pos], pos))
                pos += 1
                continue
            kind = m.lastgroup
            assert kind is not None
            kind = "name" if kind == "path" else kind
            if kind != "space":
                out.append(_Tok(kind, m.group(), pos))
            pos = m.end()
        out.append(_Tok("end", "", len(t)))
        return out

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def at(self, *ops: str) -> bool:
        t = self.tok
        return t.kind == "op" and t.text in ops

    def expect(self, op: str) -> _Tok:
        if not self.at(op):
            raise self.unexpected(f"expected {op!r}")
        return self.take()

    def unexpected(self, why: str = "") -> ExpressionError:
        t = self.tok
        if t.kind == "end":
            return self.fail(t.pos, "invalid syntax: unexpected end of expression"
                             + (f" ({why})" if why else ""))
        if t.kind == "name" and t.text in _WORDS:
            return self.fail(t.pos, _WORDS[t.text])
        if t.kind == "bad":
            if t.text in "'\"":
                return self.fail(t.pos, "invalid syntax: unterminated string")
            return self.fail(t.pos, _CHARS.get(t.text, "invalid syntax: unexpected "
                                                       f"character {t.text!r}"))
        return self.fail(t.pos, f"invalid syntax at {t.text!r}" + (f" ({why})" if why else ""))

    def nest(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(pos, f"nested too deeply (more than {MAX_DEPTH} levels)")

    # -- grammar
    def top(self) -> Predicate:
        if self.tok.kind == "end":
            raise self.fail(0, "invalid syntax: empty expression")
        node = self.comparison()
        if self.tok.kind != "end":
            raise self.unexpected()
        if isinstance(node, Predicate):
            return node
        if isinstance(node, Field):
            raise self.fail(0, "a column alone is not a condition: compare it with a "
                               "number, e.g. flag == 1")
        if isinstance(node, _K):
            raise self.fail(0, "a number alone is not a condition")
        raise self.fail(0, "an arithmetic expression is not a condition: compare it, "
                           "e.g. x % 2 == 0")

    def comparison(self) -> Any:
        first_pos = self.tok.pos
        operands = [self.bitor()]
        ops: list[tuple[str, int]] = []
        while self.tok.kind == "op" and self.tok.text in _CMP:
            t = self.take()
            ops.append((t.text, t.pos))
            operands.append(self.bitor())
        if not ops:
            return operands[0]
        parts = []
        for (op, pos), a, b in zip(ops, operands, operands[1:]):
            for x in (a, b):
                if isinstance(x, Predicate):
                    raise self.fail(pos, "a condition cannot be compared with a value")
            if isinstance(a, _K) and isinstance(b, _K):
                raise self.fail(first_pos, "a comparison needs a column on one side")
            left = a.value if isinstance(a, _K) else a
            right = b.value if isinstance(b, _K) else b
            try:
                parts.append(compare(left, op, right))
            except (TypeError, ValueError) as exc:
                raise self.fail(pos, str(exc)) from None
        return _and(parts)

    def bitor(self) -> Any:
        left = self.bitand()
        while self.at("|"):
            t = self.take()
            right = self.bitand()
            left = self.logic(left, right, t)
        return left

    def bitand(self) -> Any:
        left = self.sum()
        while self.at("&"):
            t = self.take()
            right = self.sum()
            left = self.logic(left, right, t)
        return left

    def logic(self, a: Any, b: Any, t: _Tok) -> Predicate:
        if not (isinstance(a, Predicate) and isinstance(b, Predicate)):
            raise self.fail(t.pos, "& and | bind more tightly than comparisons: put each "
                                   "comparison in parentheses, e.g. (x > 1) & (y < 2)")
        out = (a & b) if t.text == "&" else (a | b)
        return out

    def sum(self) -> Any:
        left = self.term()
        while self.at("+", "-"):
            t = self.take()
            left = self.arith(t, left, self.term())
        return left

    def term(self) -> Any:
        left = self.unary()
        while self.at("*", "/", "//", "%"):
            t = self.take()
            left = self.arith(t, left, self.unary())
        return left

    def unary(self) -> Any:
        if self.at("-", "+", "~"):
            t = self.take()
            self.nest(t.pos)
            x = self.unary()
            self.depth -= 1
            if t.text == "~":
                if not isinstance(x, Predicate):
                    raise self.fail(t.pos, "~ negates a condition: write ~(x > 1)")
                return ~x
            self.numeric(x, t)
            if t.text == "+":
                return x
            if isinstance(x, _K):
                return _K(-x.value)
            return self.build(t, lambda: Func("neg", x))
        if self.tok.kind == "name" and self.tok.text == "not":
            raise self.unexpected()
        return self.power()

    def power(self) -> Any:
        base = self.atom()
        if self.at("**"):
            t = self.take()
            self.nest(t.pos)
            exp = self.unary()
            self.depth -= 1
            return self.arith(t, base, exp)
        return base

    def atom(self) -> Any:
        t = self.tok
        if t.kind == "num":
            self.take()
            return _K(self.number(t))
        if t.kind == "op" and t.text == "(":
            self.take()
            self.nest(t.pos)
            x = self.comparison()
            self.depth -= 1
            self.expect(")")
            return self.subscript_of(x)
        if t.kind == "str":
            self.take()
            return self.column(t.text[1:-1], t, quoted=True)
        if t.kind == "name":
            self.take()
            if t.text in ("True", "False"):
                return _K(t.text == "True")
            if t.text in _WORDS:
                self.i -= 1
                raise self.unexpected()
            if _COMPLEX.fullmatch(t.text):
                raise self.fail(t.pos, f"{t.text} is not a real number")
            if self.at("("):
                return self.call(t)
            return self.column(t.text, t, quoted=False)
        if t.kind == "op" and t.text == "[":
            raise self.fail(t.pos, "lists are only allowed in isin(x, [...])")
        raise self.unexpected()

    def subscript_of(self, x: Any) -> Any:
        if self.at("["):
            raise self.fail(self.tok.pos, "only a column can have a component: name[0]")
        return x

    # -- pieces
    def numeric(self, x: Any, t: _Tok) -> None:
        if isinstance(x, Predicate):
            raise self.fail(t.pos, "a condition cannot be used in arithmetic")

    def build(self, t: _Tok, make: Callable[[], Any]) -> Any:
        self.operators += 1
        if self.operators > MAX_OPERATORS:
            raise self.fail(t.pos, f"too many operators (at most {MAX_OPERATORS})")
        try:
            return make()
        except (TypeError, ValueError, OverflowError, ArithmeticError) as exc:
            raise self.fail(t.pos, f"{t.text}: {exc}") from None

    def arith(self, t: _Tok, a: Any, b: Any) -> Any:
        self.numeric(a, t)
        self.numeric(b, t)
        op = t.text
        if isinstance(a, _K) and isinstance(b, _K):
            return _K(self.fold(t, a.value, b.value))
        left = Const(a.value) if isinstance(a, _K) else a
        right = Const(b.value) if isinstance(b, _K) else b
        return self.build(t, lambda: BinOp(op, left, right))

    def fold(self, t: _Tok, a: Any, b: Any) -> Any:
        op = t.text
        try:
            if op == "**" and isinstance(a, int) and isinstance(b, int) and b > 0 and \
                    abs(a) > 1 and b * a.bit_length() > _MAX_BITS:
                raise self.fail(t.pos, "a constant too large (more than "
                                       f"{_MAX_BITS} bits)")
            v = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                 "/": lambda: a / b, "//": lambda: a // b, "%": lambda: a % b,
                 "**": lambda: a ** b}[op]()
        except ZeroDivisionError:
            raise self.fail(t.pos, "division by zero in a constant") from None
        except OverflowError:
            raise self.fail(t.pos, "a constant overflows") from None
        if isinstance(v, complex):
            raise self.fail(t.pos, f"{v!r} is not a real number")
        if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > _MAX_BITS:
            raise self.fail(t.pos, f"a constant too large (more than {_MAX_BITS} bits)")
        return v

    def number(self, t: _Tok) -> Any:
        s = t.text
        try:
            if re.fullmatch(r"[0-9]+", s):
                if len(s) > _MAX_BITS // 3:
                    raise self.fail(t.pos, f"a constant too large (more than {_MAX_BITS} "
                                           "bits)")
                return int(s)
            return float(s)
        except ValueError as exc:
            raise self.fail(t.pos, f"bad number {s!r}: {exc}") from None

    def call(self, t: _Tok) -> Any:
        name = t.text
        if name != "isin" and name not in FUNCTIONS or name == "neg":
            known = ", ".join(sorted([k for k in FUNCTIONS if k != "neg"] + ["isin"]))
            raise self.fail(t.pos, f"unknown function {name!r} (the functions are "
                                   f"{known})")
        self.expect("(")
        self.nest(t.pos)
        arg = self.comparison()
        if name == "isin":
            self.expect(",")
            values = self.number_list()
            self.depth -= 1
            self.expect(")")
            if isinstance(arg, _K):
                raise self.fail(t.pos, "isin() needs a column")
            if isinstance(arg, Predicate):
                raise self.fail(t.pos, "isin() tests a value, not a condition")
            return self.build(t, lambda: IsIn(arg, values))
        if self.at(","):
            raise self.fail(self.tok.pos, f"{name}() takes one argument")
        self.depth -= 1
        self.expect(")")
        self.numeric(arg, t)
        if isinstance(arg, _K):
            with np.errstate(all="ignore"):
                v = FUNCTIONS[name](arg.value)
            v = v.item() if isinstance(v, np.generic) else v
            if isinstance(v, float) and math.isnan(v) and not (
                    isinstance(arg.value, float) and math.isnan(arg.value)):
                raise self.fail(t.pos, f"{name}({arg.value!r}) is not a real number")
            return _K(v)
        return self.build(t, lambda: Func(name, arg))

    def number_list(self) -> list[Any]:
        start = self.expect("[")
        values: list[Any] = []
        while not self.at("]"):
            x = self.sum()
            if not isinstance(x, _K):
                raise self.fail(start.pos, "isin() takes a list of numbers")
            values.append(x.value)
            if not self.at(","):
                break
            self.take()
        self.expect("]")
        return values

    def component(self) -> int | None:
        if not self.at("["):
            return None
        t = self.take()
        if self.at("]"):
            raise self.fail(t.pos, "a component is an integer: name[0]")
        try:
            x = self.sum()
        except ExpressionError:
            raise self.fail(t.pos, "a component is an integer: name[0]") from None
        if not self.at("]"):
            raise self.fail(t.pos, "a component is an integer: name[0]")
        self.take()
        if not isinstance(x, _K) or type(x.value) is not int:
            raise self.fail(t.pos, "a component is an integer: name[0]")
        return x.value

    def column(self, name: str, t: _Tok, quoted: bool) -> Any:
        """A name (with its component); an unquoted path that names no
        column divides its parts (``x/2``)."""
        if quoted or "/" not in name:
            col = self.lookup(name, t)
            if col is None and not quoted and name in ("inf", "nan"):
                return _K(float(name))  # as numpy spells them, where no column is named so
            if col is None:
                raise self.missing(name, t)
            return self.field(col, name, t, self.component())
        parts = name.split("/")
        operands = []
        i = 0
        while i < len(parts):
            for j in range(len(parts), i, -1):
                candidate = "/".join(parts[i:j])
                col = self.lookup(candidate, t) if not candidate.isdigit() or j > i + 1 \
                    else None
                if col is not None:
                    operands.append((candidate, col))
                    i = j
                    break
            else:
                part = parts[i]
                if _NUMBER.fullmatch(part):
                    operands.append((part, None))
                    i += 1
                else:
                    raise self.missing(name, t)
        comp = self.component()
        out: Any = None
        for k, (text, col) in enumerate(operands):
            last = k == len(operands) - 1
            x = _K(self.number(_Tok("num", text, t.pos))) if col is None else \
                self.field(col, text, t, comp if last else None)
            if col is None and last and comp is not None:
                raise self.fail(t.pos, "only a column can have a component: name[0]")
            out = x if out is None else self.arith(_Tok("op", "/", t.pos), out, x)
        return out

    def missing(self, name: str, t: _Tok) -> ExpressionError:
        msg = getattr(self, "_why", "")
        return self.fail(t.pos, f"no column {name!r}" + (f" ({msg})" if msg else ""))

    def lookup(self, name: str, t: _Tok) -> Any:
        if name in self.seen:  # each name is opened once
            return self.seen[name]
        try:
            col = self.resolve(name)
        except KeyError as exc:
            self._why = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
            return None
        if not hasattr(col, "nmemb"):
            raise self.fail(t.pos, f"{name!r} is a {type(col).__name__.lower()}, not a column")
        self.seen[name] = col
        return col

    def field(self, col: Any, name: str, t: _Tok, comp: int | None) -> Field:
        if comp is None and getattr(col, "kind", "data") == "data" and col.nmemb > 1:
            spell = name if re.fullmatch(r"[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*", name) else \
                repr(name)
            raise self.fail(t.pos, f"{col._what()} has {col.nmemb} components per row: "
                                   f"use one, e.g. {spell}[0]")
        try:
            return Field(col, comp)
        except (IndexError, TypeError) as exc:
            raise self.fail(t.pos, str(exc)) from None


def _and(parts: list[Predicate]) -> Predicate:
    out = parts[0]
    for p in parts[1:]:
        out = out & p
    return out
