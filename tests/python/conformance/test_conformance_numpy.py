"""numpy is the oracle of indexing and casting.

The same random operations run on a colfile column and on a numpy array of
the same dtype and shape: reads with any index (``col[key]`` and
``a[key]``), writes (``col[key] = v`` and ``a[key] = v``, v of any dtype
and any broadcastable shape), conversions (``read(dtype=)`` and
``astype``) and reads into caller buffers (``read(out=)`` and
``np.copyto``).  Results must agree in values, dtype, shape and type
(array or numpy scalar), and a failure must raise an exception of numpy's
class (colfile's exceptions derive from the builtin numpy raises: a
:class:`colfile.RangeError` is an ``IndexError``).  Where colfile differs on
purpose the difference is in docs/differences.md and is asserted here as
such (``DOCUMENTED`` below, and the explicit tests at the end).

Columns cover every dtype colfile stores (kinds i u f c b S, every width,
both byte orders), scalar and vector rows (1-4 components), 0 rows
included, and blob layouts of 0 to 7 blobs of uneven sizes.  Every row is
written before it is read.
"""

from __future__ import annotations

import tempfile
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import colfile

# --------------------------------------------------------------------------
# strategies

NUMERIC = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]


@st.composite
def element_dtypes(draw: Any, strings: bool = True) -> np.dtype[Any]:
    """Every element dtype colfile stores, either byte order."""
    kinds = NUMERIC + ["b1"] + (["S"] if strings else [])
    k = draw(st.sampled_from(kinds))
    if k == "b1":
        return np.dtype("?")
    if k == "S":
        return np.dtype(f"S{draw(st.integers(1, 6))}")
    order = draw(st.sampled_from("<>"))
    return np.dtype(order + k)


@st.composite
def blob_layouts(draw: Any, size: int) -> list[int]:
    """Rows per blob: 0 to 7 blobs (at least one when there are rows),
    uneven, empty blobs included."""
    nfile = draw(st.integers(1 if size else 0, 7))
    if nfile == 0:
        return []
    cuts = sorted(draw(st.lists(st.integers(0, size), min_size=nfile - 1,
                                max_size=nfile - 1)))
    edges = [0] + cuts + [size]
    return [b - a for a, b in zip(edges[:-1], edges[1:])]


def _safe_elements(dt: np.dtype[Any], signed: bool, fractions: bool,
                   specials: bool) -> st.SearchStrategy[Any]:
    """Values that every conversion in the test maps the same way in numpy
    and in libcolfile (out-of-range float-to-int casts differ between
    numpy's own loops, so they are not drawn where an integer target may
    follow: see float_to_int_comparable)."""
    if dt.kind == "b":
        return st.booleans()
    if dt.kind == "S":
        return st.binary(max_size=dt.itemsize).filter(lambda b: not b.endswith(b"\0"))
    if dt.kind == "U":
        return st.text("abcxyz019", max_size=dt.itemsize // 4)
    lo = -100 if signed and dt.kind != "u" else 0
    ints = st.integers(lo, 100)
    if dt.kind in "iu":
        return ints
    reals: st.SearchStrategy[Any] = ints
    if fractions:
        reals = st.one_of(ints, st.floats(lo, 100, width=16 if dt.itemsize == 2 else 32))
    if specials:
        reals = st.one_of(reals, st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))
    if dt.kind == "c":
        return st.builds(complex, reals, reals)
    return reals


def values(dt: np.dtype[Any], shape: tuple[int, ...], signed: bool = True,
           fractions: bool = True, specials: bool = True) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(dt, shape, elements=_safe_elements(dt, signed, fractions, specials))


@st.composite
def columns(draw: Any, max_rows: int = 24) -> dict[str, Any]:
    """A column description and its first contents (every row written)."""
    dt = draw(element_dtypes())
    nmemb = draw(st.integers(1, 4))
    size = draw(st.integers(0, max_rows))
    layout = draw(blob_layouts(size))
    shape = (size,) if nmemb == 1 else (size, nmemb)
    # a vector column of one component is spelled ('f8', 1): shape (n,)
    full = draw(st.booleans())
    if full and dt.kind not in "SU":
        data = draw(hnp.arrays(dt, shape))  # any value, NaN payloads and all
    else:
        data = draw(values(dt, shape))
    return {"dtype": dt, "nmemb": nmemb, "size": size, "blob_rows": layout,
            "data": data, "full": full}


def index_component(size: int) -> st.SearchStrategy[Any]:
    """One element of an index for an axis of length ``size``: valid and
    invalid alike."""
    out = size + 3
    bound = st.none() | st.integers(-out, out)
    step = st.none() | st.integers(-4, 4).filter(bool)
    return st.one_of(
        st.integers(-out, out),
        st.integers(-out, out).map(np.int64),
        st.builds(slice, bound, bound, step),
        st.lists(st.integers(-out, out), max_size=6),
        hnp.arrays(st.sampled_from([np.int64, np.int32, np.uint8, np.intp]).map(np.dtype),
                   hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=3),
                   elements=st.integers(0, min(out, 255))),
        hnp.arrays(np.int64, hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=4),
                   elements=st.integers(-out, out)),
        # masks of the right length mostly, and of a wrong one
        st.integers(0, 2).flatmap(lambda d: hnp.arrays(
            np.bool_, (max(size + d - 1, 0),) if d != 1 else (size,))),
    )


@st.composite
def keys(draw: Any, shape: tuple[int, ...]) -> Any:
    """An index for an array of ``shape``: up to ndim + 1 components, an
    ellipsis anywhere, components drawn for the axis they land on."""
    if len(shape) == 2 and draw(st.integers(0, 8)) == 0:
        # one mask over rows and components, of the right shape or not
        mshape = draw(st.sampled_from([shape, (shape[0], shape[1] + 1),
                                       (shape[0] + 1, shape[1]), shape + (1,)]))
        mask = draw(hnp.arrays(np.bool_, mshape))
        return draw(st.sampled_from([mask, (mask,), (mask, ...), (..., mask)]))
    n = draw(st.integers(0, len(shape) + 1))
    parts: list[Any] = []
    axis = 0
    for _ in range(n):
        if draw(st.integers(0, 6)) == 0:
            parts.append(Ellipsis)
            axis = len(shape) - (n - len(parts))
            continue
        length = shape[axis] if 0 <= axis < len(shape) else 3
        parts.append(draw(index_component(length)))
        axis += 1
    if n == 1 and draw(st.booleans()):
        return parts[0]  # not wrapped in a tuple
    return tuple(parts)


# --------------------------------------------------------------------------
# comparison

#: Indices numpy accepts and colfile refuses on purpose (docs/differences.md):
#: np.newaxis and boolean scalars add an axis to the result; index the
#: result instead.
def documented_refusal(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return any(k is None or isinstance(k, (bool, np.bool_)) for k in parts)


def _warn_free(fn: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ComplexWarning, invalid casts
        return fn()


def outcome(fn: Any) -> tuple[Any, BaseException | None]:
    try:
        return _warn_free(fn), None
    except Exception as exc:  # the class is compared
        return None, exc


def assign_as_numpy(arr: Any, col: Any, key: Any, value: Any) -> BaseException | None:
    """``arr[key] = value``, then ``col[key] = value``: where numpy raised,
    the column must raise the same class (numpy's exception is returned);
    else the column is written too."""
    try:
        arr[key] = value
    except Exception as exc:  # noqa: BLE001 - its class is compared
        with pytest.raises(type(exc)):
            col[key] = value
        return exc
    col[key] = value
    return None


def assert_same_outcome(expected: tuple[Any, BaseException | None],
                        got: tuple[Any, BaseException | None], what: str) -> None:
    want, werr = expected
    have, herr = got
    if werr is not None:
        assert herr is not None, f"{what}: numpy raised {werr!r}, colfile returned {have!r}"
        assert isinstance(herr, type(werr)), \
            f"{what}: numpy raised {type(werr).__name__} ({werr}), colfile {herr!r}"
        return
    if herr is not None:
        raise AssertionError(f"{what}: numpy gave {want!r}, colfile raised {herr!r}") from herr
    assert_same_array(want, have, what)


def assert_same_array(want: Any, have: Any, what: str) -> None:
    assert type(have) is type(want), f"{what}: {type(want)} expected, got {type(have)}"
    w, h = np.asarray(want), np.asarray(have)
    assert h.dtype == w.dtype, f"{what}: dtype {w.dtype} expected, got {h.dtype}"
    assert h.shape == w.shape, f"{what}: shape {w.shape} expected, got {h.shape}"
    if w.dtype.names is not None:  # records: NaN fields compare by their bytes
        assert w.tobytes() == h.tobytes(), f"{what}: {w!r} expected, got {h!r}"
    elif w.dtype.kind in "fc":
        # bit-exact: NaN payloads and signed zeros included
        assert w.tobytes() == h.tobytes() or np.array_equal(w, h, equal_nan=True), \
            f"{what}: {w!r} expected, got {h!r}"
    else:
        assert np.array_equal(w, h), f"{what}: {w!r} expected, got {h!r}"


def float_to_int_comparable(src: np.ndarray, to: np.dtype[Any]) -> np.ndarray:
    """Elements whose conversion numpy defines the same way on every
    platform: float (or complex) to integer only when the truncated value
    fits the integer type (out of range, numpy's results depend on the
    loop it picks; libcolfile's rule is in src/format/dtype_convert.c)."""
    if src.dtype.kind not in "fc" or to.kind not in "iu":
        return np.ones(src.shape, bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        re = np.real(src).astype(np.float64)
        info = np.iinfo(to)
        t = np.trunc(re)
        return np.isfinite(re) & (t >= info.min) & (t <= info.max)


class Pair:
    """A colfile column and the numpy array it must behave as."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.dir = tempfile.TemporaryDirectory()
        # durable=False: no fsync, the suite tests semantics, not power loss
        self.file = colfile.File(self.dir.name + "/f", "w", durable=False)
        dt, n = spec["dtype"], spec["nmemb"]
        self.col = self.file.create("c", dt if n == 1 else (dt, n), size=spec["size"],
                                    blob_rows=spec["blob_rows"])
        self.arr = spec["data"].copy()
        if spec["size"]:
            self.col[:] = spec["data"]

    def close(self) -> None:
        try:
            self.file.close()
        finally:
            self.dir.cleanup()

    def __enter__(self) -> "Pair":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def check_contents(self, what: str) -> None:
        assert_same_array(self.arr, self.col[:], f"{what}: contents")


@pytest.fixture(autouse=True)
def _lib(lib: Any) -> None:
    """Every test needs libcolfile (the conftest skips without it)."""


# --------------------------------------------------------------------------
# reads


@given(spec=columns(), data=st.data())
@example(spec={"dtype": np.dtype("<f8"), "nmemb": 3, "size": 10, "blob_rows": [3, 3, 4],
               "data": np.arange(30.0).reshape(10, 3), "full": False},
         data=None).via("an ellipsis and two integers: numpy gives a 0-d array")
def test_getitem_matches_numpy(spec: dict[str, Any], data: Any) -> None:
    with Pair(spec) as p:
        if data is None:  # the explicit example's keys
            ks: list[Any] = [(1, ..., 2), (..., 0, 1), (0, ...), (..., 5), (-1, ...)]
        else:
            ks = data.draw(st.lists(keys(p.arr.shape), min_size=1, max_size=6), "keys")
        for key in ks:
            if documented_refusal(key):
                with pytest.raises(IndexError):
                    p.col[key]
                continue
            assert_same_outcome(outcome(lambda: p.arr[key]), outcome(lambda: p.col[key]),
                                f"col[{key!r}]")


@given(spec=columns(), data=st.data())
def test_read_dtype_matches_astype(spec: dict[str, Any], data: Any) -> None:
    """read(start, stop, dtype=) converts as numpy's astype (unsafe casting)."""
    with Pair(spec) as p:
        size = spec["size"]
        src = p.arr.dtype
        to = data.draw(element_dtypes(), "dtype")
        # numbers and byte strings do not convert (docs/differences.md)
        assume((to.kind == "S") == (src.kind == "S"))
        start = data.draw(st.integers(-size - 2, size + 2), "start")
        stop = data.draw(st.none() | st.integers(-size - 2, size + 2), "stop")
        got = outcome(lambda: p.col.read(start, stop, dtype=to))
        lo = start + size if start < 0 else start
        hi = size if stop is None else (stop + size if stop < 0 else stop)
        if not 0 <= lo <= hi <= size:
            # read() takes a row range, not a slice: out of range is an error
            # (docs/differences.md)
            assert isinstance(got[1], IndexError), got
            return
        src_rows = p.arr[lo:hi]
        want = outcome(lambda: src_rows.astype(to))
        ok = float_to_int_comparable(src_rows, to)
        if got[1] is None and want[1] is None and not ok.all():
            want = (want[0][ok], None)
            got = (got[0][ok], None)
        assert_same_outcome(want, got, f"read({start}, {stop}, dtype={to})")


# --------------------------------------------------------------------------
# writes


@st.composite
def write_values(draw: Any, target: np.dtype[Any], sel_shape: tuple[int, ...]) -> Any:
    """A value for ``a[key] = v``: of another dtype (converted), of the
    selection's shape or broadcastable to it (or not), or a Python scalar."""
    if target.kind == "S":
        src = draw(st.sampled_from([np.dtype("S3"), np.dtype("S8"), target, np.dtype("U3")]))
    else:
        src = draw(element_dtypes(strings=False))
    # the shape: the selection's, a broadcastable suffix with ones, or a
    # mismatch (numpy's ValueError must be colfile's too)
    choice = draw(st.integers(0, 5))
    if choice == 0:
        shape: tuple[int, ...] = ()
    elif choice == 1 and sel_shape:
        k = draw(st.integers(0, len(sel_shape)))
        shape = tuple(1 if draw(st.booleans()) else s for s in sel_shape[k:])
    elif choice == 2:
        shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=4))
    else:
        shape = sel_shape
    signed = target.kind not in "ub" and src.kind != "u"
    # out-of-range float-to-int casts are not compared (see _safe_elements)
    v = draw(values(src, shape, signed=signed,
                    specials=target.kind in "fcb" and src.kind in "fc"))
    if shape == () and draw(st.booleans()):
        if target.kind in "iu" and draw(st.booleans()):
            return draw(st.integers(-300, 300))  # in range or not: OverflowError
        return v.item()  # a Python scalar
    return v


def _write_ok_dtypes(target: np.dtype[Any], v: Any) -> bool:
    """False for the value kinds colfile refuses on purpose
    (docs/differences.md): numbers into byte strings and back."""
    kind = np.asarray(v).dtype.kind
    if target.kind == "S":
        return kind in "SU"
    return kind not in "SU"


@given(spec=columns(), data=st.data())
def test_setitem_matches_numpy(spec: dict[str, Any], data: Any) -> None:
    """A sequence of writes (and reads between them) leaves the column as
    the same writes leave the array; failures raise numpy's classes."""
    with Pair(spec) as p:
        for i in range(data.draw(st.integers(1, 4), "writes")):
            key = data.draw(keys(p.arr.shape), f"key{i}")
            if documented_refusal(key):
                continue
            sel, err = outcome(lambda: p.arr[key])
            sel_shape = np.shape(sel) if err is None else (2,)
            v = data.draw(write_values(p.arr.dtype, sel_shape), f"value{i}")
            assume(_write_ok_dtypes(p.arr.dtype, v))
            before = p.arr.copy()

            def np_write() -> None:
                p.arr[key] = v

            want = outcome(np_write)
            got = outcome(lambda: p.col.__setitem__(key, v))
            if want[1] is not None:
                p.arr[...] = before  # numpy may have written part of it
            assert_same_outcome(want, got, f"col[{key!r}] = {v!r}")
            p.check_contents(f"after col[{key!r}] = {v!r}")
            # and a read of any rows between the writes
            rkey = data.draw(keys(p.arr.shape), f"read{i}")
            if not documented_refusal(rkey):
                assert_same_outcome(outcome(lambda: p.arr[rkey]), outcome(lambda: p.col[rkey]),
                                    f"col[{rkey!r}] after writes")


@given(spec=columns(), data=st.data())
def test_write_and_append_match_numpy(spec: dict[str, Any], data: Any) -> None:
    """Column.write(start, rows) is ``a[start:start+len(rows)] = rows`` for
    rows inside the column; append is np.concatenate."""
    with Pair(spec) as p:
        size = spec["size"]
        start = data.draw(st.integers(-size, size), "start")
        lo = start + size if start < 0 else start
        n = data.draw(st.integers(0, size - lo), "rows")
        rows = data.draw(values(p.arr.dtype, (n,) + p.arr.shape[1:]), "data")
        p.col.write(start, rows)
        p.arr[lo:lo + n] = rows
        p.check_contents(f"write({start}, {n} rows)")
        more = data.draw(values(p.arr.dtype, (data.draw(st.integers(0, 5)),) + p.arr.shape[1:]),
                         "append")
        p.col.append(more, nfile=data.draw(st.integers(0 if not len(more) else 1, 3)))
        p.arr = np.concatenate([p.arr, more]).astype(p.arr.dtype)
        p.check_contents("append")


# --------------------------------------------------------------------------
# read(out=)


@st.composite
def out_buffers(draw: Any, shape: tuple[int, ...], dt: np.dtype[Any]) -> tuple[np.ndarray, str]:
    """A caller's buffer for read(out=): the right one, or strided, of
    another dtype, of a wrong shape, read-only, Fortran-ordered, a view of a
    larger array..."""
    how = draw(st.sampled_from(["plain", "strided", "reversed", "dtype", "shape",
                                "readonly", "fortran", "column", "noncontig-2d", "list"]))
    if how == "dtype":
        odt = draw(element_dtypes())
        # numbers and byte strings do not convert (docs/differences.md)
        assume((odt.kind == "S") == (dt.kind == "S"))
    else:
        odt = dt
    if how == "list":  # not an array: TypeError, as np.copyto gives
        return [0] * (shape[0] if shape else 0), how  # type: ignore[return-value]
    if how == "shape":
        bad = list(shape) or [0]
        bad[draw(st.integers(0, len(bad) - 1))] += draw(st.sampled_from([-1, 1, 2]))
        if bad[0] < 0:
            bad[0] = 1
        return np.zeros(tuple(bad), odt), how
    if how == "strided":
        big = np.zeros((shape[0] * 3,) + shape[1:], odt)
        return big[::3], how
    if how == "reversed":
        return np.zeros(shape, odt)[::-1], how
    if how == "fortran":
        return np.zeros(shape, odt, order="F"), how
    if how == "noncontig-2d" and len(shape) == 2:
        return np.zeros((shape[0], shape[1] * 2), odt)[:, ::2], how
    if how == "column" and len(shape) == 1:
        return np.zeros((shape[0], 1), odt), how  # documented: accepted
    buf = np.zeros(shape, odt)
    if how == "readonly":
        buf.flags.writeable = False
        return buf, how
    return buf, "plain" if how in ("column", "noncontig-2d") else how


@given(spec=columns(), data=st.data())
def test_read_out_matches_copyto(spec: dict[str, Any], data: Any) -> None:
    """read(start, stop, out=buf) fills ``buf`` as
    ``np.copyto(buf, a[start:stop], casting='unsafe')`` does when ``buf``
    has the rows' shape; another shape is numpy's ValueError (as for a
    ufunc's ``out=``), a read-only buffer too."""
    with Pair(spec) as p:
        size = spec["size"]
        lo = data.draw(st.integers(0, size), "start")
        hi = data.draw(st.integers(lo, size), "stop")
        rows = p.arr[lo:hi]
        buf, how = data.draw(out_buffers(rows.shape, p.arr.dtype), "out")
        if how == "list":
            with pytest.raises(TypeError):
                np.copyto(buf, rows)  # type: ignore[arg-type]
            with pytest.raises(TypeError):
                p.col.read(lo, hi, out=buf)
            return
        expect = buf.copy()
        got = outcome(lambda: p.col.read(lo, hi, out=buf))
        if how == "column":
            # documented: (n, 1) is accepted for a scalar column
            assert got[1] is None and got[0] is buf
            np.copyto(expect[:, 0], rows, casting="unsafe")
            assert_same_array(expect, buf, "out (n, 1)")
            return

        def oracle() -> np.ndarray:
            if expect.shape != rows.shape:
                raise ValueError(f"out has shape {expect.shape}, rows {rows.shape}")
            if not buf.flags.writeable:
                raise ValueError("out is read-only")
            np.copyto(expect, rows, casting="unsafe")
            return expect

        want = outcome(oracle)
        if want[1] is None and got[1] is None:
            assert got[0] is buf, "read(out=) must return out itself"
            ok = float_to_int_comparable(rows, buf.dtype)
            assert_same_array(want[0][ok], buf[ok], f"read(out={how} {buf.dtype})")
        else:
            assert_same_outcome(want, got, f"read({lo}, {hi}, out={how})")


# --------------------------------------------------------------------------
# the deliberate differences (docs/differences.md), asserted


@pytest.fixture
def col(tmp_path: Any) -> Any:
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        yield f.create("c", data=np.arange(12.0).reshape(4, 3), nfile=2)


def test_difference_newaxis_and_bool_scalars_refused(col: Any) -> None:
    for key in [None, (None, 0), True, np.bool_(False), (0, True)]:
        with pytest.raises(IndexError, match="not supported"):
            col[key]


def test_difference_read_range_is_not_clipped(col: Any) -> None:
    # a[2:10] clips to the end; read(2, 10) names rows that do not exist
    with pytest.raises(IndexError, match=r"rows \[2, 10\)"):
        col.read(2, 10)
    with pytest.raises(IndexError):
        col.read(3, 1)
    np.testing.assert_array_equal(col[2:10], np.arange(12.0).reshape(4, 3)[2:10])


def test_difference_numbers_and_strings_do_not_mix(tmp_path: Any) -> None:
    with colfile.File(str(tmp_path / "f"), "w") as f:
        s = f.create("s", "S4", size=2)
        x = f.create("x", "i4", size=2)
        with pytest.raises(TypeError):
            s[:] = np.array([1, 2])  # numpy would store b'1', b'2'
        with pytest.raises(TypeError):
            x[:] = np.array([b"1", b"2"])  # numpy would parse the text
        with pytest.raises(TypeError):
            x.read(dtype="S4")


def test_difference_out_may_have_a_trailing_axis_of_one(tmp_path: Any) -> None:
    with colfile.File(str(tmp_path / "f"), "w") as f:
        c = f.create("c", data=np.arange(4, dtype="i2"))
        out = np.zeros((4, 1), "f8")
        assert c.read(out=out) is out
        np.testing.assert_array_equal(out[:, 0], [0, 1, 2, 3])


# --------------------------------------------------------------------------
# what the suite found, kept as explicit regression tests


def test_ellipsis_with_integers_gives_a_0d_array(col: Any) -> None:
    a = np.arange(12.0).reshape(4, 3)
    for key in [(1, ..., 2), (..., 0, 1), (-1, 2, ...)]:
        got = col[key]
        assert type(got) is np.ndarray and got.shape == () and got == a[key]
    with colfile.File(col.file.path, "r+") as f:
        be = f.create("be", data=np.array([7, 8], ">i2"))
        s = f.create("s", data=np.array([b"ab", b"cde"], "S5"))
        # the column's dtype (byte order, string width) is kept
        assert repr(be[..., 1]) == repr(np.array([7, 8], ">i2")[..., 1])
        assert repr(s[0, ...]) == "array(b'ab', dtype='|S5')"


def test_boolean_scalar_refused_after_the_row_axis(col: Any) -> None:
    # numpy reads (..., True) as a new last axis: (4, 3, 1); the column
    # used to apply it to the components instead and give (4, 1, 3)
    for key in [(..., True), (0, True), (slice(None), np.bool_(False))]:
        with pytest.raises(IndexError, match="boolean scalar"):
            col[key]
        with pytest.raises(IndexError, match="boolean scalar"):
            col[key] = 0


def test_empty_mask_selects_nothing_whatever_the_length(col: Any) -> None:
    a = np.arange(12.0).reshape(4, 3)
    empty = np.zeros(0, bool)
    assert col[empty].shape == a[empty].shape == (0, 3)
    col[empty] = 5.0
    np.testing.assert_array_equal(col[:], a)


def test_mask_over_rows_and_components(col: Any) -> None:
    a = np.arange(12.0).reshape(4, 3)
    m = (a % 5 == 0)
    np.testing.assert_array_equal(col[m], a[m])
    np.testing.assert_array_equal(col[m, ...], a[m, ...])
    col[m] = -np.arange(m.sum())
    a[m] = -np.arange(m.sum())
    np.testing.assert_array_equal(col[:], a)
    with pytest.raises(IndexError, match="along axis 1; size of axis is 3 but size of "
                                         "corresponding boolean axis is 2"):
        col[np.ones((4, 2), bool)]
    with pytest.raises(IndexError, match="it is 2-dimensional, but 3 were indexed"):
        col[np.ones((4, 3, 1), bool)]


def test_write_shape_mismatch_is_reported_before_bounds(col: Any) -> None:
    # numpy checks that the value fits the selection before the bounds
    a = np.arange(12.0).reshape(4, 3)
    for key, value in [([9], np.zeros((2, 3))), (([9, 0], 0), [1, 2, 3])]:
        with pytest.raises(ValueError, match="broadcast"):
            a[key] = value
        with pytest.raises(ValueError, match="broadcast"):
            col[key] = value
    with pytest.raises(IndexError):
        col[[9]] = 0.0  # a value that fits: the bounds
    np.testing.assert_array_equal(col[:], a)


def test_index_arrays_broadcasting_to_nothing_check_no_bounds(tmp_path: Any) -> None:
    # numpy dereferences no row when the index arrays broadcast to an empty
    # result, so it checks no bounds either
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        c = f.create("c", ("i1", 2), size=0)
        a = np.zeros((0, 2), "i1")
        for key in [(np.array([0]), []), ([5], np.zeros(0, int))]:
            assert_same_array(a[key], c[key], repr(key))
            c[key] = 7
        with pytest.raises(IndexError):
            c[[0], [1]]


def test_python_numbers_convert_as_numpy_assigns_them(tmp_path: Any) -> None:
    # numpy raises OverflowError for a Python int out of the column's range
    # (the column used to store 300 as 44 in an i1 column, -1 as 255 in u1)
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        i1 = f.create("i1", data=np.array([1, 2, 3], "i1"))
        u1 = f.create("u1", data=np.array([1, 2, 3], "u1"))
        x = f.create("x", data=np.zeros(2))
        for col, value in [(i1, 300), (i1, [300, 1, 2]), (u1, -1), (u1, [1, -1, 2])]:
            a = np.zeros(3, col.dtype)
            with pytest.raises(OverflowError):
                a[:] = value
            with pytest.raises(OverflowError):
                col[:] = value
            with pytest.raises(OverflowError):
                col.write(0, value if isinstance(value, list) else [value] * 3)
        np.testing.assert_array_equal(i1[:], [1, 2, 3])
        np.testing.assert_array_equal(u1[:], [1, 2, 3])
        with pytest.raises(TypeError):
            np.zeros(2)[:] = 1 + 2j
        with pytest.raises(TypeError):
            x[:] = 1 + 2j
        # numpy arrays and scalars still convert unsafely, as numpy casts them
        i1[:] = np.array([300, -1, 2])
        np.testing.assert_array_equal(i1[:], np.array([300, -1, 2]).astype("i1"))
        i1[:] = [1.7, -2.2, 3.0]
        np.testing.assert_array_equal(i1[:], [1, -2, 3])


def test_open_file_is_true_even_without_columns(tmp_path: Any) -> None:
    # h5py: bool(File) tells whether it is open; the File used to be false
    # while it had no columns (len 0) and to raise once closed
    f = colfile.File(str(tmp_path / "f"), "w", durable=False)
    g = f.require_group("g")
    assert f and g and len(f) == 0
    f.close()
    assert not f and not g


def test_difference_reads_are_copies(col: Any) -> None:
    r = col[:]
    r[0, 0] = 99.0
    assert col[0, 0] == 0.0


def test_difference_text_is_utf8_and_casts_are_silent(tmp_path: Any) -> None:
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        s = f.create("s", "S4", size=2)
        s[:] = ["é", "abcdef"]
        assert s[:].tolist() == ["é".encode(), b"abcd"]
        with pytest.raises(UnicodeEncodeError):
            np.zeros(1, "S4")[0] = "é"
        c = f.create("c", data=np.array([1 + 2j, np.nan, np.inf]))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_array_equal(c.read(dtype="f8"), [1.0, np.nan, np.inf])
            # NaN and infinity to int32: the x86-64 scalar result (src/format/dtype_convert.c)
            assert c.read(dtype="i4").tolist() == [1, -2**31, -2**31]


def test_mask_write_errors_follow_the_key_spelling(tmp_path: Any) -> None:
    # numpy checks the value of a (mask, ...) key as a broadcast (ValueError)
    # and that of a bare mask as 1-d input (TypeError)
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        c = f.create("c", data=np.zeros((9, 3), "c16"))
        a = np.zeros((9, 3), "c16")
        m = np.ones((9, 3), bool)
        for key in [m, (m,), (m, ...), (..., m)]:
            value = np.zeros((0, 0), "i1")
            if assign_as_numpy(a, c, key, value) is None:
                raise AssertionError(f"numpy accepted {key!r}")
        np.testing.assert_array_equal(c[:], a)


# --------------------------------------------------------------------------
# Dataset: a structured array over several columns


@given(specs=st.lists(columns(max_rows=12), min_size=1, max_size=3), data=st.data())
def test_dataset_getitem_matches_structured_array(specs: list[dict[str, Any]],
                                                  data: Any) -> None:
    size = specs[0]["size"]
    with tempfile.TemporaryDirectory() as d, \
            colfile.File(d + "/f", "w", durable=False) as f:
        fields = []
        for i, s in enumerate(specs):
            arr = np.resize(s["data"], (size,) + s["data"].shape[1:]).astype(s["data"].dtype)
            f.create(f"c{i}", data=arr, blob_rows=s["blob_rows"] if s["size"] == size else None)
            fields.append((f"c{i}", arr))
        rec = np.empty(size, [(n, a.dtype, a.shape[1:]) for n, a in fields])
        for n, a in fields:
            rec[n] = a
        ds = colfile.Dataset(f, [n for n, _ in fields])
        assert ds.dtype == rec.dtype and len(ds) == len(rec)
        for key in data.draw(st.lists(keys((size,)), min_size=1, max_size=5), "keys"):
            if documented_refusal(key):
                continue
            assert_same_outcome(outcome(lambda: rec[key]), outcome(lambda: ds[key]),
                                f"ds[{key!r}]")


def test_dataset_ellipsis_with_an_integer_gives_a_0d_array(col: Any) -> None:
    ds = colfile.Dataset(col.file, ["c"])
    rec = np.zeros(4, ds.dtype)
    rec["c"] = np.arange(12.0).reshape(4, 3)
    for key in [(..., 1), (-1, ...)]:
        got = ds[key]
        assert type(got) is np.ndarray and got.shape == () and got.dtype == rec.dtype
        assert got.tobytes() == rec[key].tobytes()
    assert type(ds[1]) is np.void


def test_asarray_copy_false_is_refused(col: Any) -> None:
    # numpy 2: np.asarray(x, copy=False) raises ValueError when a copy is
    # needed; the column used to return a copy silently
    with pytest.raises(ValueError, match="unable to avoid a copy"):
        np.asarray(col, copy=False)
    np.testing.assert_array_equal(np.asarray(col, dtype="f4"),
                                  np.arange(12.0, dtype="f4").reshape(4, 3))
    assert np.array(col).shape == (4, 3)


def test_mask_write_selecting_nothing_follows_the_key_spelling(tmp_path: Any) -> None:
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        c = f.create("c", data=np.zeros((9, 3), "c8"))
        none = np.zeros((9, 3), bool)
        a = np.zeros((9, 3), "c8")
        a[(none, ...)] = np.zeros((0, 0), "i1")
        c[(none, ...)] = np.zeros((0, 0), "i1")
        with pytest.raises(TypeError):
            a[none] = np.zeros((0, 0), "i1")
        with pytest.raises(TypeError):
            c[none] = np.zeros((0, 0), "i1")
        np.testing.assert_array_equal(c[:], a)


def test_difference_dtypes_colfile_stores(tmp_path: Any) -> None:
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        for dt in ["U4", "O", "M8[s]", "m8[s]", "V4", [("a", "i4")], ("f8", (2, 2)), "f16"]:
            with pytest.raises(TypeError):
                f.create("c", dt, size=1)
        for dt in ["i1", ">u2", "<i8", "f2", ">f4", "c8", ">c16", "?", "S7", ("<f8", 4)]:
            assert f.create(f"ok/{np.dtype(dt).str[1:]}", dt, size=0).size == 0


def test_one_element_refuses_sequences_as_numpy(tmp_path: Any) -> None:
    # numpy assigns one element through the scalar path: a sequence is a
    # ValueError ("setting an array element with a sequence"), a list a
    # TypeError; the column said ValueError for both
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        c = f.create("c", data=np.zeros(3, "i1"))
        v = f.create("v", data=np.zeros((3, 2), "f4"))
        a, b = np.zeros(3, "i1"), np.zeros((3, 2), "f4")
        cases = [(c, a, 0, np.array([], "i1")), (c, a, -1, np.array([5])), (c, a, 1, [5]),
                 (c, a, 2, [1, 2]), (v, b, (0, 1), [7.0]), (v, b, (2, -1), np.array([1, 2]))]
        for col, arr, key, value in cases:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assign_as_numpy(arr, col, key, value)
        np.testing.assert_array_equal(c[:], a)
        np.testing.assert_array_equal(v[:], b)


def test_value_with_leading_axes_of_one(tmp_path: Any) -> None:
    # numpy drops a value's leading axes of length 1 (a[0:2] = ones((1, 2)),
    # a[..., 0] = [[7]]); the column refused them
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        c = f.create("c", data=np.zeros(3, "i1"))
        v = f.create("v", data=np.zeros((3, 2)))
        a, b = np.zeros(3, "i1"), np.zeros((3, 2))
        for col, arr, key, value in [(c, a, slice(0, 2), np.ones((1, 2))),
                                     (c, a, (..., 0), np.array([7])),
                                     (c, a, (0, ...), np.array([[9]])),
                                     (v, b, slice(None), np.full((1, 1, 3, 2), 4.0)),
                                     (v, b, (1, ...), np.array([[5.0, 6.0]]))]:
            arr[key] = value
            col[key] = value
        np.testing.assert_array_equal(c[:], a)
        np.testing.assert_array_equal(v[:], b)
        with pytest.raises(ValueError):
            c[0:2] = np.ones((2, 2))


def test_value_checked_before_bounds(tmp_path: Any) -> None:
    # numpy converts a Python number before it checks the index's bounds
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        c = f.create("c", "i1", size=0)
        with pytest.raises(OverflowError):
            np.zeros(0, "i1")[[0]] = 128
        with pytest.raises(OverflowError):
            c[[0]] = 128
        with pytest.raises(IndexError, match="out of bounds for column"):
            c[[0]] = 1


def test_ellipsis_write_to_one_element_broadcasts(tmp_path: Any) -> None:
    # with an ellipsis numpy assigns to a 0-d view (a value of shape (1,)
    # fits); without, to one element (it does not)
    with colfile.File(str(tmp_path / "f"), "w", durable=False) as f:
        v = f.create("v", data=np.zeros((3, 2), "i1"))
        b = np.zeros((3, 2), "i1")
        b[..., 0, 1] = np.array([4])
        v[..., 0, 1] = np.array([4])
        b[2, ..., 0] = np.array([[5]])
        v[2, ..., 0] = np.array([[5]])
        np.testing.assert_array_equal(v[:], b)
        with pytest.raises(ValueError):
            v[0, 1] = np.array([4])
