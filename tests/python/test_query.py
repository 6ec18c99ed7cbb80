"""Queries that skip chunks (colfile.query): the expression layer, the
string language, the three-valued chunk logic on synthetic statistics, and
exact evaluation on real Files against numpy on the full arrays."""

from __future__ import annotations

import itertools
import math
import operator
import warnings
from typing import Any

import numpy as np
import pytest

import colfile
from colfile import query as q
from colfile.column import CHUNK_STATS_DTYPE

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
       "==": operator.eq, "!=": operator.ne}


def has_stats(lib: Any) -> bool:
    try:
        lib.cf_column_chunk_stats
    except AttributeError:
        return False
    return True


@pytest.fixture
def slib(lib: Any) -> Any:
    """The library, for tests that need per-chunk statistics."""
    if not has_stats(lib):
        pytest.skip("this libcolfile has no chunk statistics yet")
    return lib


# ---------------------------------------------------------------------------
# reference: numpy on the full arrays


def as_numbers(a: np.ndarray) -> np.ndarray:
    """Bool values as the integers 0 and 1 (numpy compares bools with
    Python ints beyond int64 by raising OverflowError)."""
    return a.view(np.uint8) if a.dtype.kind == "b" else a


def numpy_eval(pred: q.Predicate, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Evaluate ``pred`` with plain numpy on full arrays (by column name)."""
    if isinstance(pred, q.Compare):
        f = pred.field
        a = arrays[f.column.name]
        if f.component is not None:
            a = a[:, f.component]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.asarray(OPS[pred.op](as_numbers(a), pred.value), bool)
    if isinstance(pred, q.Or):
        out = numpy_eval(pred.parts[0], arrays)
        for p in pred.parts[1:]:
            out = out | numpy_eval(p, arrays)
        return out
    if isinstance(pred, q.And):
        out = numpy_eval(pred.parts[0], arrays)
        for p in pred.parts[1:]:
            out = out & numpy_eval(p, arrays)
        return out
    if isinstance(pred, q.Not):
        return ~numpy_eval(pred.part, arrays)
    raise TypeError(pred)


def check_selection(sel: q.Selection, expected_mask: np.ndarray) -> None:
    np.testing.assert_array_equal(sel.rows, np.flatnonzero(expected_mask))
    np.testing.assert_array_equal(sel.mask(), expected_mask)
    assert sel.count == int(expected_mask.sum()) == len(sel)
    assert sel.report.selected == sel.count
    r = sel.report
    assert r.skipped + r.all_match + r.scanned == r.chunks


# ---------------------------------------------------------------------------
# fields and predicates


def test_fields_and_predicates(wfile: Any) -> None:
    pos = wfile.create("pos", data=np.arange(12.0).reshape(4, 3))
    m = wfile.create("m", data=np.arange(4, dtype="i4"))
    x = m.field()
    assert x.column is m and x.component is None and x.name == "m" and x.dtype == "i4"
    assert pos.field(-1).component == 2 and pos.field(1).name == "pos[1]"
    assert repr(x < 3) == "<colfile.Predicate m < 3>"
    assert str((x < 3) | ~(pos.field(0) >= 1.5)) == "(m < 3) | ~(pos[0] >= 1.5)"
    assert str(((x < 3) & (x > 0)) & (x != 2)) == "(m < 3) & (m > 0) & (m != 2)"
    assert str(x.between(1, 2)) == "(m >= 1) & (m < 2)"
    assert str(np.float32(2.5) < x) == "m > 2.5"  # numpy scalars on the left defer
    assert str(x == np.int64(3)) == "m == 3"
    assert str(x <= np.array(4)) == "m <= 4"
    assert (x > 1).fields[0] is x
    with pytest.raises(TypeError, match="& | ~"):
        bool(x < 3)
    with pytest.raises(TypeError, match="& | ~"):
        _ = 1 < x < 3  # a chained comparison asks for the truth of the first
    with pytest.raises(TypeError, match="& | ~"):
        _ = (x < 3) and (x > 1)
    with pytest.raises(TypeError, match="no truth value"):
        bool(x)
    # two columns compare (numpy's comparison of the two arrays)
    assert str(x < pos.field(0)) == "m < pos[0]"
    assert str(x == x) == "m == m"
    for bad in ("3", None, 1j, [1, 2], np.array([1, 2])):
        with pytest.raises(TypeError, match="real number"):
            _ = x < bad
    with pytest.raises(TypeError, match="combines colfile predicates"):
        _ = (x < 3) & True
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)
    with pytest.raises(IndexError, match="3 components"):
        pos.field()
    with pytest.raises(IndexError, match="out of range"):
        pos.field(3)
    with pytest.raises(IndexError, match="scalar column"):
        m.field(0)
    c = wfile.create("c", data=np.array([1 + 1j]))
    s = wfile.create("s", data=[b"ab"])
    for col in (c, s):
        with pytest.raises(TypeError, match="only integer, float and bool"):
            col.field()
    with pytest.raises(TypeError, match="header-only"):
        wfile.create("meta", None).field()
    ds = colfile.Dataset(wfile, ["m", "pos"])
    assert ds.field("pos", 2).name == "pos[2]"
    with pytest.raises(KeyError):
        ds.field("nope")


# ---------------------------------------------------------------------------
# the expression language


@pytest.fixture
def exprfile(wfile: Any) -> Any:
    wfile.create("Mass", data=np.arange(4.0))
    wfile.create("ID", data=np.arange(4))
    wfile.create("1/Position", data=np.zeros((4, 3)))
    wfile.create("Position", data=np.zeros((4, 3)))
    return wfile


@pytest.mark.parametrize("text, expected", [
    ("Mass > 1", "Mass > 1"),
    ("1 < Mass", "Mass > 1"),
    ("-2.5 >= Mass", "Mass <= -2.5"),
    ("Mass == -0", "Mass == 0"),
    ("Mass != +3", "Mass != 3"),
    ("10 <= Mass < 20", "(Mass >= 10) & (Mass < 20)"),
    ("0 < Mass <= ID", "(Mass > 0) & (Mass <= ID)"),
    ("Mass + 1 > 2", "Mass + 1 > 2"),
    ("Mass > 2 ** 10", "Mass > 1024"),
    ("1/Position[0] / 2 > ID", "1/Position[0] / 2 > ID"),
    ("(Position[0] > 100) & (ID < 5000)", "(Position[0] > 100) & (ID < 5000)"),
    ("Position[-1] < 1e300", "Position[2] < 1e+300"),
    ("'1/Position'[1] >= 2", "1/Position[1] >= 2"),
    ("~(ID == 3) | (Mass < 2) & (Mass > 0)", "~(ID == 3) | (Mass < 2) & (Mass > 0)"),
    ("~~(ID > 1)", "~~(ID > 1)"),
    ("ID < 123456789012345678901234567890", "ID < 123456789012345678901234567890"),
    ("ID < --3", "ID < 3"),
    ("ID == True", "ID == True"),
    ("ID == +True", "ID == True"),
    ("((ID > 1))", "ID > 1"),
    ("  ID > 1  ", "ID > 1"),
])
def test_parse(exprfile: Any, text: str, expected: str) -> None:
    assert str(q.parse(text, exprfile.__getitem__)) == expected


@pytest.mark.parametrize("text, message", [
    ("__import__('os').system('true')", "unknown function '__import__'"),
    ("Mass.sum() > 1", "attribute access"),
    ("Mass.real > 1", "attribute access"),
    ("(Mass > 1) and (ID < 2)", "use & and |"),
    ("(Mass > 1) or (ID < 2)", "use & and |"),
    ("not (Mass > 1)", "'not' is not allowed \\(use ~\\)"),
    ("Mass > 1 & ID < 2", "bind more tightly than comparisons"),
    ("Mass > 1 | ID < 2", "bind more tightly than comparisons"),
    ("Mass in [1, 2]", "use isin"),
    ("Mass is 1", "'is' is not allowed"),
    ("Mass > 'a'", "no column 'a'"),
    ("Mass > 1j", "1j is not a real number"),
    ("Mass > None", "None is not a real number"),
    ("Mass", "a column alone is not a condition"),
    ("3", "a number alone"),
    ("1 < 2", "needs a column on one side"),
    ("Position > 1", "3 components per row"),
    ("Mass[0] > 1", "scalar column"),
    ("Position[3] > 1", "out of range"),
    ("Position[0.5] > 1", "a component is an integer"),
    ("Position[0:2] > 1", "a component is an integer"),
    ("Position[ID] > 1", "a component is an integer"),
    ("Nope > 1", "no column 'Nope'"),
    ("(lambda: 1)() > 1", "lambda is not allowed"),
    ("[Mass][0] > 1", "lists are only allowed in isin"),
    ("Mass > (1 if True else 2)", "if-else is not allowed"),
    ("Mass >", "invalid syntax"),
    ("Mass > 1;", "invalid syntax"),
    ("import os", "invalid syntax"),
    ("", "invalid syntax"),
    ("(Mass := 1) > 0", "':' is not allowed"),
])
def test_parse_rejects(exprfile: Any, text: str, message: str) -> None:
    with pytest.raises(q.ExpressionError, match=message):
        q.parse(text, exprfile.__getitem__)


def test_parse_limits(exprfile: Any) -> None:
    with pytest.raises(TypeError):
        q.parse(b"Mass > 1", exprfile.__getitem__)  # type: ignore[arg-type]
    with pytest.raises(q.ExpressionError, match="too long"):
        q.parse("Mass > 1" + " " * q._MAX_EXPRESSION, exprfile.__getitem__)
    deep = "(" * 500 + "Mass > 1" + ")" * 500
    with pytest.raises(q.ExpressionError):
        q.parse(deep, exprfile.__getitem__)
    assert isinstance(q.parse("(" * 50 + "Mass > 1" + ")" * 50, exprfile.__getitem__),
                      q.Compare)
    assert issubclass(q.ExpressionError, ValueError)


def test_where_names(exprfile: Any) -> None:
    m = exprfile["Mass"]
    assert m.where("Mass > 1").rows.tolist() == [2, 3]
    sub = exprfile["1/Position"]
    assert sub.where("Position[0] == 0").count == 4  # the last path component
    assert sub.where("'1/Position'[0] == 0").count == 4
    assert m.where("ID < 2").rows.tolist() == [0, 1]  # other columns of the File
    ds = colfile.Dataset(exprfile["1/"], ["Position"])
    assert ds.where("Position[1] < 1").count == 4
    assert ds.where("Position[1] < 1").read("Position").shape == (4, 3)
    with pytest.raises(q.ExpressionError, match="no column"):
        ds.where("Mass > 1")
    with pytest.raises(TypeError, match="Predicate or an expression"):
        m.where(3)
    with pytest.raises(TypeError, match="not a condition"):
        m.where(m.field())
    with pytest.raises(TypeError, match="Column, Dataset, File or Group"):
        colfile.where(3, "x > 1")


# ---------------------------------------------------------------------------
# three-valued logic


def test_three_valued_logic_is_exact() -> None:
    """For independent leaves the combined state is exactly what the sets
    of possible outcomes give: NONE = {F}, ALL = {T}, SOME = {F, T}."""
    outcomes = {q.NONE: {False}, q.ALL: {True}, q.SOME: {False, True}}

    def state_of(s: set[bool]) -> int:
        return q.SOME if len(s) == 2 else (q.ALL if True in s else q.NONE)

    class Leaf(q.Predicate):
        def __init__(self, i: int) -> None:
            self.i = i

        def _leaves(self) -> list[Any]:
            return [self]

        def _states(self, leaf: dict[int, np.ndarray]) -> np.ndarray:
            return leaf[id(self)]

    a, b, c = Leaf(0), Leaf(1), Leaf(2)
    exprs = {
        "a&b": (a & b, lambda x, y, z: x and y),
        "a|b": (a | b, lambda x, y, z: x or y),
        "~a": (~a, lambda x, y, z: not x),
        "~(a&b)|c": (~(a & b) | c, lambda x, y, z: (not (x and y)) or z),
        "a&~b&c": (a & ~b & c, lambda x, y, z: x and not y and z),
    }
    combos = list(itertools.product(range(3), repeat=3))
    states = {id(leaf): np.array([cmb[k] for cmb in combos], np.int8)
              for k, leaf in enumerate((a, b, c))}
    for name, (pred, truth) in exprs.items():
        got = pred._states(states)
        for i, (sa, sb, sc) in enumerate(combos):
            possible = {truth(x, y, z) for x in outcomes[sa] for y in outcomes[sb]
                        for z in outcomes[sc]}
            assert got[i] == state_of(possible), (name, sa, sb, sc)


# ---------------------------------------------------------------------------
# decisions from synthetic statistics


def down(v: Any) -> float:
    """The largest double <= v (v int or float)."""
    d = float(v)
    if isinstance(v, (int, np.integer)) and d > int(v):
        d = math.nextafter(d, -math.inf)
    return d


def up(v: Any) -> float:
    d = float(v)
    if isinstance(v, (int, np.integer)) and d < int(v):
        d = math.nextafter(d, math.inf)
    return d


def stats_of(chunks: list[np.ndarray], valid: Any = True) -> np.ndarray:
    """What libcolfile records for these chunks: min and max over the
    non-NaN values, rounded outward to double."""
    st = np.zeros(len(chunks), CHUNK_STATS_DTYPE)
    for i, c in enumerate(chunks):
        st["valid"][i] = valid if np.isscalar(valid) else valid[i]
        st["ordered"][i] = True
        st["count"][i] = st["rows"][i] = len(c)
        if c.dtype.kind == "f":
            nan = np.isnan(c)
            st["nan_count"][i] = int(nan.sum())
            c = c[~nan].astype(np.float64)
        if len(c) == 0:
            st["min"][i] = st["max"][i] = np.nan
        elif c.dtype.kind in "iub":
            st["min"][i] = down(int(c.min()))
            st["max"][i] = up(int(c.max()))
        else:
            st["min"][i], st["max"][i] = c.min(), c.max()
    return st


def check_decisions(chunks: list[np.ndarray], consts: list[Any], dtype: Any) -> dict[str, int]:
    """decide() is sound for every op and constant: ALL only if numpy says
    True for every value, NONE only if False for every value."""
    st = stats_of(chunks)
    tally = {"ALL": 0, "NONE": 0, "SOME": 0}
    for op, fn in OPS.items():
        for c in consts:
            got = q.decide(op, c, dtype, st, st["rows"])
            for k, chunk in enumerate(chunks):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    truth = np.asarray(fn(as_numbers(chunk), c), bool)
                if got[k] == q.ALL:
                    assert truth.all(), (op, c, chunk)
                elif got[k] == q.NONE:
                    assert not truth.any(), (op, c, chunk)
                tally[q._STATE_NAMES[int(got[k])]] += 1
    return tally


def random_chunks(rng: np.random.Generator, values: np.ndarray, n: int) -> list[np.ndarray]:
    out = []
    for _ in range(n):
        size = int(rng.integers(1, 6))
        out.append(rng.choice(values, size))
    return out


@pytest.mark.parametrize("dtype", ["i1", "u1", "i2", "i4", "<i8", ">i8", "u4", "u8",
                                   "f2", "f4", "f8", ">f4", "b1"])
def test_decide_is_sound(dtype: str) -> None:
    rng = np.random.default_rng(hash(dtype) % 2**32)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        pool = np.array([False, True])
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        special = [info.min, info.min + 1, info.max, info.max - 1, 0, 1]
        if dt.itemsize == 8:
            special += [2**53 - 1, 2**53, 2**53 + 1, 2**53 + 2, 2**62 + 1]
            if dt.kind == "i":
                special += [-2**53 - 1, -2**53, -2**63 + 1]
            else:
                special += [2**64 - 1, 2**64 - 2, 2**63 + 1]
        pool = np.array([v for v in special if info.min <= v <= info.max] +
                        list(rng.integers(-5, 6, 8) if dt.kind == "i" else rng.integers(0, 6, 8)),
                        dtype=dt)
    else:
        finfo = np.finfo(dt)
        pool = np.array([0.0, -0.0, 1.0, -1.0, 0.1, 2.5, np.inf, -np.inf, np.nan,
                         float(finfo.max), float(finfo.tiny), 1e-300 if dt.itemsize == 8 else 0,
                         3.0, 3.0], dtype=dt)
    chunks = random_chunks(rng, pool, 300)
    chunks += [np.array([v], dt) for v in pool]  # single values: ALL/NONE decided
    consts: list[Any] = [0, 1, -1, 0.5, 3, 2.5, 0.1, np.nan, np.inf, -np.inf, True, False,
                         2**53, 2**53 + 1, 2.0**53, 2**63, 2**63 - 1, -2**63, -2**63 - 1,
                         2**64, 2**64 - 1, 10**30, -10**30, 1e300, -1e300,
                         np.float32(0.1), np.float16(2.5), np.int64(-1), np.uint64(2**64 - 1),
                         np.int8(-128)]
    consts += [v.item() if hasattr(v, "item") else v for v in pool[:6]]
    consts += list(pool[:6])
    tally = check_decisions(chunks, consts, dt)
    assert tally["ALL"] > 0 and tally["NONE"] > 0 and tally["SOME"] > 0


def test_decide_precision() -> None:
    """On tight statistics the obvious cases are decided."""
    chunks = [np.arange(0, 10.0), np.arange(10, 20.0), np.array([5.0, np.nan]),
              np.array([np.nan, np.nan]), np.array([7.0, 7.0])]
    st = stats_of(chunks)
    d = lambda op, c: q.decide(op, c, "f8", st, st["rows"]).tolist()  # noqa: E731
    N, S, A = q.NONE, q.SOME, q.ALL
    assert d("<", 10) == [A, N, S, N, A]
    assert d(">=", 10) == [N, A, N, N, N]
    assert d("==", 7) == [S, N, N, N, A]
    assert d("!=", 7) == [S, A, A, A, N]
    assert d("!=", 5) == [S, A, S, A, A]
    assert d("<", np.nan) == [N] * 5 and d("!=", np.nan) == [A] * 5
    assert d(">", -np.inf) == [A, A, S, N, A]
    ints = [np.array([2**53 + 1, 2**53 + 3], np.int64)]
    sti = stats_of(ints)
    assert sti["min"][0] == 2.0**53 and sti["max"][0] == 2.0**53 + 4  # outward
    di = lambda op, c: int(q.decide(op, c, "i8", sti, sti["rows"])[0])  # noqa: E731
    # the bounds 2**53 and 2**53 + 4 prove no more than they say
    assert di(">", 2**53 - 1) == A and di(">=", 2**53) == A and di("<", 2**53 + 5) == A
    assert di(">", 2**53) == S and di("<", 2**53 + 4) == S
    assert di(">", 2**53 + 1) == S and di("==", 2**53 + 2) == S
    assert di(">", 2**53 + 4) == N and di("<", 2**53) == N and di("<", 2**53 + 1) == S
    # numpy compares int64 with a float in float64: 2**53+1 > 2.0**53 is False there
    assert di(">", 2.0**53) == S
    assert di(">", 2**63) == N and di("<", 2**63) == A and di("!=", -2**70) == A


def test_decide_distrusts_bad_statistics() -> None:
    chunks = [np.arange(10.0)] * 6
    st = stats_of(chunks)
    st["valid"][0] = False
    st["ordered"][1] = False
    st["count"][2] = 9  # count differs from the chunk's rows
    st["min"][3] = np.nan  # no min though values exist
    st["min"][4], st["max"][4] = 5.0, 1.0  # min > max
    st["nan_count"][5] = 11  # more NaNs than values
    for op in OPS:
        for c in (-1, 5, 20):
            assert q.decide(op, c, "f8", st, st["rows"]).tolist() == [q.SOME] * 6
    sti = stats_of([np.arange(10)] * 2)
    sti["min"][0] = 0.5  # not a value of f4 would be fine; for ints it is floored
    sti["nan_count"][1] = 1  # ints have no NaN: inconsistent
    got = q.decide("<", 100, "i4", sti, sti["rows"]).tolist()
    assert got == [q.ALL, q.SOME]
    stf = stats_of([np.arange(10, dtype="f4")])
    stf["min"][0] = 0.1  # not a float32 value: cannot be a float32 column's min
    assert q.decide("<", 100, "f4", stf, stf["rows"]).tolist() == [q.SOME]


# ---------------------------------------------------------------------------
# exact evaluation on real Files


def make_table(path: str, n: int, seed: int = 0, chunk: bool = True
               ) -> dict[str, np.ndarray]:
    """Columns of every kind, each with its own blob layout and chunk size."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    a[rng.random(n) < 0.1] = np.nan
    a[: n // 7] = np.nan  # a run of NaN-only chunks
    cols: dict[str, tuple[np.ndarray, dict[str, Any]]] = {
        "a": (a, {"nfile": 3, "chunk_rows": 37}),
        "b": (np.sort(rng.integers(-500, 500, n)), {"chunk_rows": 100,
                                                      "blob_rows": [n // 4, 0, n - n // 4]}),
        "v": (np.cumsum(rng.random((n, 3)), axis=0).astype(">f4"), {"nfile": 2,
                                                                     "chunk_rows": 64}),
        "u": (np.uint64(2**64 - 1) - rng.integers(0, 2**40, n).astype(np.uint64),
              {"chunk_rows": 50}),
        "big": (2**53 + np.sort(rng.integers(-40, 40, n)), {"chunk_rows": 30, "nfile": 4}),
        "flag": (np.arange(n) % 200 < 60, {"chunk_rows": 128}),
        "h": (rng.normal(size=n).astype("f2"), {"chunk_rows": 256}),
        "i1": (rng.integers(-128, 128, n).astype("i1"), {"chunk_rows": 40}),
        "id": (np.arange(n, dtype=np.int64), {"chunk_rows": 100, "nfile": 2}),
    }
    with colfile.File(path, "w") as f:
        for name, (data, kw) in cols.items():
            if not chunk:
                kw = {k: v for k, v in kw.items() if k != "chunk_rows"}
            f.create(name, data=data, **kw)
    return {k: v[0] for k, v in cols.items()}


def constants_for(rng: np.random.Generator, values: np.ndarray) -> list[Any]:
    flat = values[~np.isnan(values)] if values.dtype.kind == "f" else values
    out: list[Any] = [np.nan, 0]
    if len(flat):
        picks = rng.choice(flat, 3)
        out += [p.item() for p in picks] + [picks[0]]
        out += [flat.min().item(), flat.max().item()]
        if flat.dtype.kind in "iu":
            out += [int(flat.max()) + 1, int(flat.min()) - 1, float(flat.max()),
                    2**53 + 1, 2**64, -(2**70)]
        else:
            out += [float(np.quantile(flat.astype("f8"), 0.3)), np.inf, -np.inf]
    return out


def random_predicate(rng: np.random.Generator, f: Any, arrays: dict[str, np.ndarray],
                     depth: int = 0) -> q.Predicate:
    if depth >= 2 or rng.random() < 0.4:
        name = rng.choice(sorted(arrays))
        col = f[name]
        j = None if col.nmemb == 1 else int(rng.integers(col.nmemb))
        fld = col.field(j)
        vals = arrays[name] if j is None else arrays[name][:, j]
        c = rng.choice(np.array(constants_for(rng, vals), dtype=object))
        op = str(rng.choice(list(OPS)))
        return q.Compare(fld, op, q._constant(c))
    kind = rng.integers(3)
    left = random_predicate(rng, f, arrays, depth + 1)
    if kind == 2:
        return ~left
    right = random_predicate(rng, f, arrays, depth + 1)
    return (left & right) if kind == 0 else (left | right)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_queries_equal_numpy(path: str, slib: Any, seed: int) -> None:
    n = 1500
    arrays = make_table(path, n, seed)
    rng = np.random.default_rng(seed)
    with colfile.File(path) as f:
        for name, arr in arrays.items():
            np.testing.assert_array_equal(f[name][:], arr)
        for i in range(120):
            pred = random_predicate(rng, f, arrays)
            expected = numpy_eval(pred, arrays)
            pb = [None, 200, 1 << 12][i % 3]
            sel = colfile.where(f, pred, piece_bytes=pb)
            check_selection(sel, expected)


@pytest.mark.parametrize("name", ["a", "b", "u", "big", "flag", "h", "i1", "v0", "v2"])
def test_every_op_and_constant_equals_numpy(path: str, slib: Any, name: str) -> None:
    arrays = make_table(path, 1000, seed=7)
    rng = np.random.default_rng(3)
    with colfile.File(path) as f:
        if name.startswith("v"):
            j = int(name[1])
            fld, vals = f["v"].field(j), arrays["v"][:, j]
        else:
            fld, vals = f[name].field(), arrays[name]
        for c in constants_for(rng, vals) + [True, 0.5, -0.0]:
            for op in OPS:
                pred = q.Compare(fld, op, c)
                check_selection(colfile.where(f, pred), numpy_eval(pred, arrays))


def test_pushdown_on_sorted_data(path: str, slib: Any) -> None:
    n = 100_000
    with colfile.File(path, "w") as f:
        f.create("ID", data=np.arange(n, dtype="i8"), chunk_rows=1000, nfile=3)
        f.create("Mass", data=np.linspace(0.0, 1.0, n), chunk_rows=4096)
        f.create("Other", data=np.zeros(n), chunk_rows=4096)
    with colfile.File(path) as f:
        ds = colfile.Dataset(f, ["ID", "Mass"])
        sel = ds.where("ID < 2500")
        r = sel.report
        # chunks of ID are cut at blob boundaries (33333, 66666) too
        assert sel.count == 2500 and r.columns == ("ID",)
        assert (r.all_match, r.scanned) == (2, 1) and r.skipped == r.chunks - 3
        assert r.bytes_read == 1000 * 8 and r.bytes_total == n * 8
        sel = ds.where("(ID >= 1500) & (ID < 42000) & (Mass < 0.2)")
        expected = (np.arange(n) >= 1500) & (np.arange(n) < 42000) & \
            (np.linspace(0, 1, n) < 0.2)
        check_selection(sel, expected)
        r = sel.report
        assert r.bytes_read < r.bytes_total / 20, str(r)
        assert r.skipped > 0.7 * r.chunks
        assert "skipped (no match)" in str(r) and "of 1600000 B" not in str(r)
        # nothing to read at all: every chunk decided
        sel = ds.where((ds.field("ID") >= 0) | (ds.field("Mass") > 5))
        assert sel.count == n and sel.report.bytes_read == 0
        assert sel.report.all_match == sel.report.chunks
        sel = ds.where("Mass > 5")
        assert sel.count == 0 and sel.report.bytes_read == 0 and sel.rows.size == 0
        # reading the selected rows of another column reads only those
        sel = ds.where("(ID >= 99990) | (ID < 3)")
        np.testing.assert_array_equal(sel.read("Other"), np.zeros(13))
        np.testing.assert_array_equal(sel.read("ID"), np.r_[0:3, 99990:n])
        assert sel.ranges == [(0, 3), (99990, n)]


def test_nan_semantics(path: str, slib: Any) -> None:
    data = np.array([np.nan, 1.0, np.nan, np.nan, 2.0, np.inf, -np.inf, np.nan])
    with colfile.File(path, "w") as f:
        f.create("x", data=data, chunk_rows=2)
    with colfile.File(path) as f:
        x = f["x"].field()
        for op in OPS:
            for c in (np.nan, 1.0, np.inf, -np.inf, 0):
                pred = q.Compare(x, op, c)
                check_selection(colfile.where(f, pred), numpy_eval(pred, {"x": data}))
        sel = colfile.where(f, x != x.column.dtype.type(np.nan))
        assert sel.count == 8 and sel.report.bytes_read == 0
        sel = colfile.where(f, x < 5)
        assert sel.rows.tolist() == [1, 4, 6]
        assert sel.report.skipped == 1  # rows 2-3: NaN only


def test_empty_and_tiny_columns(path: str, slib: Any) -> None:
    with colfile.File(path, "w") as f:
        f.create("e", "f8", size=0)
        f.create("e2", ("i4", 2), size=0, chunk_rows=3)
        f.create("one", data=np.array([5]), chunk_rows=1)
    with colfile.File(path) as f:
        sel = colfile.where(f, "(e < 1) | (e2[1] > 0)")
        assert sel.count == 0 and sel.rows.dtype == np.int64 and sel.mask().shape == (0,)
        assert sel.report.chunks == 0 and sel.read("e").shape == (0,)
        assert sel.read("e2").shape == (0, 2)
        assert colfile.where(f, "one == 5").rows.tolist() == [0]
        assert colfile.where(f, "one != 5").count == 0
        with pytest.raises(ValueError, match="equal lengths"):
            colfile.where(f, "(e < 1) & (one > 0)")
        sel = colfile.where(f, "one == 5")
        with pytest.raises(ValueError, match="has 0 rows"):
            sel.read("e")


def test_selection_read(path: str, slib: Any) -> None:
    n = 20_000
    rng = np.random.default_rng(5)
    x = rng.random(n)
    vec = rng.random((n, 4)).astype("f4")
    with colfile.File(path, "w") as f:
        f.create("x", data=x, chunk_rows=512)
        f.create("vec", data=vec, nfile=3)
        f.create("grp/id", data=np.arange(n, dtype=">i8"))
    mask = (x < 0.3) | ((np.arange(n) > 5000) & (np.arange(n) < 12000))
    with colfile.File(path) as f:
        sel = f["x"].where((f["x"].field() < 0.3) | f["grp/id"].field().between(5001, 12000))
        check_selection(sel, mask)
        np.testing.assert_array_equal(sel.read("vec"), vec[mask])
        np.testing.assert_array_equal(sel.read(f["vec"]), vec[mask])
        np.testing.assert_array_equal(sel.read("grp/id"), np.arange(n)[mask])
        np.testing.assert_array_equal(sel.read("x", dtype="f4"), x[mask].astype("f4"))
        both = sel.read(["x", "vec"])
        assert both.dtype == np.dtype([("x", "<f8"), ("vec", "<f4", (4,))])
        np.testing.assert_array_equal(both["vec"], vec[mask])
        runs = sel.ranges
        assert all(b > a for a, b in runs) and all(runs[i][1] < runs[i + 1][0]
                                                   for i in range(len(runs) - 1))
        assert "Selection" in repr(sel) and str(sel.count) in repr(sel)
    with colfile.File(path) as f:
        ds = colfile.Dataset(f["grp/"], ["id"])
        sel = ds.where("id >= 19990")
        assert sel.read("id").tolist() == list(range(19990, n))
        with pytest.raises(KeyError):
            sel.read("x")  # names resolve in the Dataset's group


def test_different_layouts_and_chunk_sizes(path: str, slib: Any) -> None:
    """The grid is the union of every referenced column's chunk boundaries."""
    n = 5000
    x = np.arange(n, dtype="i4")
    y = np.arange(n)[::-1].astype("f8")
    with colfile.File(path, "w") as f:
        f.create("x", data=x, chunk_rows=300, blob_rows=[1000, 0, 777, 3223])
        f.create("y", data=y, chunk_rows=1024, nfile=3)
    with colfile.File(path) as f:
        bx = set(f["x"].chunk_stats()["first_row"].tolist())
        by = set(f["y"].chunk_stats()["first_row"].tolist())
        sel = colfile.where(f, "(x > 1200) & (y > 1200)")
        assert sel.report.chunks == len(bx | by)
        check_selection(sel, (x > 1200) & (y > 1200))
        assert sel.report.bytes_read < sel.report.bytes_total / 2


def test_stale_statistics_are_never_trusted(path: str, slib: Any) -> None:
    """bigfile 0.1.52 rewrites data and the header but not colfile's
    statistics file: the column's statistics become invalid (the header
    changed since they were recorded), its chunks are read, and results
    stay exact."""
    bigfile = pytest.importorskip("bigfile")
    n = 2000
    data = np.arange(n, dtype="<i8")
    with colfile.File(path, "w") as f:
        f.create("x", data=data, nfile=2, chunk_rows=100)
    with colfile.File(path) as f:
        st = f["x"].chunk_stats()
        assert st["valid"].all()
        assert colfile.where(f, "x >= 1950").report.bytes_read == 100 * 8  # one chunk
    new = data.copy()
    new[1500:1600] = -7  # in blob 1, whose statistics say min 1000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        b = bigfile.File(path)
        with b.open("x") as blk:
            blk.write(1500, new[1500:1600].copy())
    with colfile.File(path) as f:
        st = f["x"].chunk_stats()
        # bigfile rewrote the header: no blob's statistics are current, and
        # each unknown blob is one record
        assert len(st) == 2 and not st["valid"].any()
        for expr, expected in [("x < 0", new < 0), ("x == -7", new == -7),
                               ("x >= 1950", new >= 1950), ("x < 1000", new < 1000),
                               ("~(x > -100)", ~(new > -100))]:
            sel = colfile.where(f, expr)
            check_selection(sel, expected)
        sel = colfile.where(f, "x < 0")
        assert sel.report.skipped == 0 and sel.report.bytes_read == 2000 * 8  # all read
    with colfile.File(path, "r+") as f:
        f["x"].index_blobs([0, 1])  # recompute from the data: valid again
    with colfile.File(path) as f:
        assert f["x"].chunk_stats()["valid"].all()
        sel = colfile.where(f, "x < 0")
        check_selection(sel, new < 0)
        # rows 1500-1599 hold only -7 now: taken whole without reading
        assert sel.report.all_match == 1 and sel.report.skipped == 19
        assert sel.report.bytes_read == 0


def test_statistics_of_unsettled_writes(path: str, slib: Any) -> None:
    """A query through a handle that is being written sees its own writes:
    the statistics of blobs with unsettled writes are invalid until flush."""
    with colfile.File(path, "w") as f:
        x = f.create("x", data=np.arange(100.0), chunk_rows=10)
        x.flush()
        assert x.where("x > 95").report.bytes_read == 10 * 8
        x[50] = 1000.0
        sel = x.where("x > 95")
        assert sel.rows.tolist() == [50, 96, 97, 98, 99]
        x.flush()
        sel = x.where("x > 95")
        assert sel.rows.tolist() == [50, 96, 97, 98, 99]


def test_big_integers(path: str, slib: Any) -> None:
    base = 2**53
    vals = np.array([base - 1, base, base + 1, base + 2, base + 3, 2**62, 2**63 - 1,
                     -2**63, -base - 1], dtype=np.int64)
    u = np.array([2**64 - 1, 2**64 - 2, 2**63, 2**53 + 1, 0], dtype=np.uint64)
    with colfile.File(path, "w") as f:
        f.create("i", data=vals, chunk_rows=2)
        f.create("u", data=u, chunk_rows=1)
    with colfile.File(path) as f:
        arrays = {"i": vals, "u": u}
        for name, consts in [("i", [base, base + 1, base + 2, float(base), float(base + 2),
                                    2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**62 + 1]),
                             ("u", [2**64 - 1, 2**64, 2**64 - 2, float(2**64), -1, 2**63,
                                    base + 1, float(base + 1)])]:
            for c in consts:
                for op in OPS:
                    pred = q.Compare(f[name].field(), op, c)
                    check_selection(colfile.where(f, pred), numpy_eval(pred, arrays))
        sel = colfile.where(f, "i == 9007199254740993")  # 2**53 + 1, exactly
        assert sel.rows.tolist() == [2]


def test_bool_columns(path: str, slib: Any) -> None:
    flags = np.zeros(1000, bool)
    flags[300:350] = True
    with colfile.File(path, "w") as f:
        f.create("flag", data=flags, chunk_rows=100)
    with colfile.File(path) as f:
        for expr in ["flag == 1", "flag == True", "flag > 0.5", "flag != 0", "flag < 1",
                     "flag >= 0", "flag == 2", "~(flag == 0)"]:
            pred = q.parse(expr, f.__getitem__)
            sel = colfile.where(f, pred)
            check_selection(sel, numpy_eval(pred, {"flag": flags}))
        sel = colfile.where(f, "flag == 1")
        assert sel.report.skipped == 9 and sel.report.scanned == 1


def test_without_chunk_statistics(path: str, lib: Any, monkeypatch: Any) -> None:
    """A libcolfile without statistics: everything is read, still exact."""
    arrays = make_table(path, 400, chunk=has_stats(lib))

    def missing(self: Any, component: Any = None) -> Any:
        raise AttributeError("cf_column_chunk_stats")

    monkeypatch.setattr(colfile.Column, "chunk_stats", missing)
    with colfile.File(path) as f:
        pred = (f["a"].field() > 0) | (f["v"].field(1) < 20)
        sel = colfile.where(f, pred)
        check_selection(sel, numpy_eval(pred, arrays))
        assert sel.report.scanned == sel.report.chunks
        assert sel.report.bytes_read == sel.report.bytes_total


def test_create_chunk_rows(path: str, slib: Any) -> None:
    with colfile.File(path, "w") as f:
        c = f.create("c", "f8", size=10, chunk_rows=3, nfile=2)
        assert c.chunk_rows == 3
        c[:] = np.arange(10.0)
        c.flush()
        st = c.chunk_stats()
        assert st["first_row"].tolist() == [0, 3, 5, 8]  # chunks restart at blob 1
        assert st["rows"].tolist() == [3, 2, 3, 2] and st["blob"].tolist() == [0, 0, 1, 1]
        assert st["min"].tolist() == [0, 3, 5, 8] and st["sum"].tolist() == [3, 7, 18, 17]
        v = f.create("v", ("i2", 2), data=np.arange(8).reshape(4, 2), chunk_rows=2)
        v.flush()
        assert v.chunk_stats().shape == (2, 2)
        assert v.chunk_stats(1)["max"].tolist() == [3, 7]
        assert v.chunk_stats(-2)["min"].tolist() == [0, 4]
        with pytest.raises(IndexError):
            v.chunk_stats(2)
        for bad in (0, -1):
            with pytest.raises(ValueError, match="at least 1"):
                f.create("bad", "f8", size=1, chunk_rows=bad)
        with pytest.raises(TypeError):
            f.create("bad", "f8", size=1, chunk_rows=1.5)
        with pytest.raises(ValueError, match="with data"):
            f.create("meta", None, chunk_rows=4)
