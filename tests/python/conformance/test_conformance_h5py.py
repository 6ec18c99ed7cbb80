"""h5py is the oracle of file semantics.

A hypothesis state machine runs the same random operations on a
``colfile.File`` and on an ``h5py.File``: opening in every mode (r, r+, w,
w-, x, a) files that exist or not, creating columns (datasets) and groups
where names are free or taken, reading, listing, ``in``, ``len``, removing,
attributes of the File, of groups and of columns (set, get, delete,
contains, iterate, missing names), and every operation on a closed File and
on a File opened read-only.  Each operation must succeed on both or fail on
both; where h5py's exception class is one of Python's (KeyError for a
missing name, FileNotFoundError, FileExistsError/OSError, ValueError for a
taken name), colfile's must be an instance of it.  The differences that
docs/differences.md lists are translated here (:data:`TRANSLATED`) or
asserted as such:

* a group is ``f["g/"]`` in colfile (a name without the slash is a
  column), ``"g/" in f`` tests for it;
* listing a File or group gives the columns below it at any depth,
  sorted (h5py: the direct members, groups included);
* read-only Files raise ``PermissionError`` for every change and closed
  handles ``ValueError`` for every use (h5py raises ValueError, OSError
  or KeyError for the former and KeyError, ValueError or RuntimeError for
  the latter, depending on the call).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import colfile

h5py = pytest.importorskip("h5py")

NAMES = ["a", "b", "g/a", "g/h/c", "h"]
GROUPS = ["g", "g/h", "k"]
ATTRS = ["x", "BoxSize", "z"]
MODES = ["r", "r+", "w", "w-", "x", "a"]


def _second_create_succeeds(second: str) -> bool:
    """True if ``create(second)`` succeeds after ``create("x")`` in a new
    File (a probe of behaviour that is still changing)."""
    d = tempfile.mkdtemp()
    try:
        with colfile.File(os.path.join(d, "f"), "w", durable=False) as f:
            f.create("x", data=[1])
            try:
                f.create(second, data=[2])
            except Exception:
                return False
            return True
    finally:
        shutil.rmtree(d)


def _replace_on_create() -> bool:
    """True while ``create`` on an existing name replaces the column
    silently (before explicit overwrite is merged); h5py raises."""
    return _second_create_succeeds("x")


def _create_under_column() -> bool:
    """True while a column may be created below another column."""
    return _second_create_succeeds("x/y")


PENDING_OVERWRITE = _replace_on_create()
PENDING_UNDER_COLUMN = _create_under_column()


def outcome(fn: Any) -> tuple[Any, BaseException | None]:
    try:
        return fn(), None
    except Exception as exc:
        return None, exc


def same_failure(what: str, h: tuple[Any, BaseException | None],
                 c: tuple[Any, BaseException | None], accept: tuple[type, ...] = ()) -> bool:
    """Both succeed (True is returned) or both fail; a failure of a builtin
    class in h5py is one of that class in colfile, or of ``accept`` (the
    documented classes)."""
    hv, he = h
    cv, ce = c
    if he is None:
        if ce is not None:
            raise AssertionError(f"{what}: h5py succeeded, colfile raised {ce!r}") from ce
        return True
    assert ce is not None, f"{what}: h5py raised {he!r}, colfile returned {cv!r}"
    if accept and isinstance(ce, accept):
        return False
    builtin = next(c for c in type(he).__mro__ if c.__module__ == "builtins")
    assert isinstance(ce, builtin), \
        f"{what}: h5py raised {type(he).__name__} ({he}), colfile {type(ce).__name__} ({ce})"
    return False


def attr_value(v: Any) -> Any:
    """An attribute value in a form both sides compare by (h5py and colfile
    both give numpy scalars for numbers and str for text)."""
    if isinstance(v, (str, bytes)):
        return v.decode() if isinstance(v, bytes) else v
    return np.asarray(v).tolist()


class FileMachine(RuleBasedStateMachine):
    """The colfile File ``self.c`` and the h5py File ``self.h``."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp()
        self.cpath = os.path.join(self.dir, "c")
        self.hpath = os.path.join(self.dir, "h.h5")
        self.c: Any = None
        self.h: Any = None
        self.mode: str | None = None
        self.counter = 0

    def teardown(self) -> None:
        for f in (self.c, self.h):
            if f is not None:
                try:
                    f.close()
                except Exception:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- helpers -------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self.c is not None and not self.c.closed

    def h_kind(self, name: str) -> str | None:
        """What ``name`` is in the h5py File: 'dataset', 'group' or None."""
        obj = self.h.get(name)
        if obj is None:
            return None
        return "group" if isinstance(obj, h5py.Group) else "dataset"

    def c_name(self, name: str) -> str:
        """colfile's spelling: groups take a trailing slash."""
        return name + "/" if self.is_open and self.h_kind(name) == "group" else name

    def h_datasets(self) -> list[str]:
        out: list[str] = []
        self.h.visititems(lambda n, o: out.append(n) if isinstance(o, h5py.Dataset) else None)
        return sorted(out)

    def data(self) -> np.ndarray:
        self.counter += 1
        return np.arange(3, dtype="f8") * self.counter

    # -- opening and closing ---------------------------------------------

    @rule(mode=st.sampled_from(MODES))
    def reopen(self, mode: str) -> None:
        for f in (self.c, self.h):
            if f is not None:
                f.close()
        self.c = self.h = None
        h = outcome(lambda: h5py.File(self.hpath, mode))
        c = outcome(lambda: colfile.File(self.cpath, mode, durable=False))
        if same_failure(f"File({mode!r})", h, c):
            self.h, self.c, self.mode = h[0], c[0], mode

    @precondition(lambda self: not self.is_open)
    @rule()
    def remove_files(self) -> None:
        if os.path.exists(self.hpath):
            os.remove(self.hpath)
        shutil.rmtree(self.cpath, ignore_errors=True)

    @precondition(lambda self: self.is_open)
    @rule()
    def close(self) -> None:
        self.h.close()
        self.c.close()
        assert self.c.closed and not self.h

    @precondition(lambda self: self.c is not None and self.c.closed)
    @rule(name=st.sampled_from(NAMES + GROUPS),
          op=st.sampled_from(["get", "list", "len", "create", "attrs", "delete",
                              "create_group", "close", "in", "bool"]))
    def use_closed(self, name: str, op: str) -> None:
        """Every use of a closed File fails with ValueError (ClosedError);
        ``in`` gives False and ``close`` does nothing, as in h5py."""
        calls = {
            "get": lambda f: f[name],
            "list": lambda f: list(f),
            "len": lambda f: len(f),
            "create": lambda f: (f.create if f is self.c else f.create_dataset)(
                name, data=[1.0]),
            "attrs": lambda f: f.attrs["x"],
            "delete": lambda f: f.__delitem__(name),
            "create_group": lambda f: f.create_group(name),
            "close": lambda f: f.close(),
            "in": lambda f: name in f,
            "bool": lambda f: bool(f),
        }
        h = outcome(lambda: calls[op](self.h))
        c = outcome(lambda: calls[op](self.c))
        if op in ("close", "in", "bool"):
            assert h[1] is None and c[1] is None and h[0] == c[0], (op, h, c)
            return
        assert h[1] is not None, (op, h)
        assert isinstance(c[1], colfile.ClosedError) and isinstance(c[1], ValueError), (op, c)

    # -- names -----------------------------------------------------------

    @precondition(lambda self: self.is_open)
    @rule(name=st.sampled_from(NAMES))
    def create(self, name: str) -> None:
        arr = self.data()
        kind = self.h_kind(name)
        if kind is not None and PENDING_OVERWRITE:
            # a column or an empty group of that name is replaced until
            # explicit overwrite is merged (test_create_on_a_taken_name)
            return
        parent = name.rsplit("/", 1)[0] if "/" in name else None
        if parent and self.h_kind(parent) == "dataset" and PENDING_UNDER_COLUMN:
            return  # test_create_under_a_column
        if parent and "/" in parent and self.h_kind(parent.split("/")[0]) == "dataset" \
                and PENDING_UNDER_COLUMN:
            return
        h = outcome(lambda: self.h.create_dataset(name, data=arr))
        c = outcome(lambda: self.c.create(name, data=arr))
        # read-only: PermissionError (docs/differences.md)
        if same_failure(f"create({name!r})", h, c, accept=(PermissionError,)):
            np.testing.assert_array_equal(self.c[name][:], arr)
        else:
            assert self.mode != "r" or isinstance(c[1], PermissionError), c

    @precondition(lambda self: self.is_open)
    @rule(name=st.sampled_from(GROUPS))
    def create_group(self, name: str) -> None:
        if PENDING_UNDER_COLUMN and any(self.h_kind(name[:i]) == "dataset"
                                        for i in range(1, len(name)) if name[i] == "/"):
            return
        h = outcome(lambda: self.h.create_group(name))
        c = outcome(lambda: self.c.create_group(name))
        same_failure(f"create_group({name!r})", h, c, accept=(PermissionError,))

    @precondition(lambda self: self.is_open)
    @rule(name=st.sampled_from(GROUPS + NAMES))
    def require_group(self, name: str) -> None:
        if PENDING_UNDER_COLUMN and any(self.h_kind(name[:i]) == "dataset"
                                        for i in range(1, len(name)) if name[i] == "/"):
            return
        h = outcome(lambda: self.h.require_group(name))
        c = outcome(lambda: self.c.require_group(name))
        if same_failure(f"require_group({name!r})", h, c, accept=(PermissionError,)):
            assert isinstance(c[0], colfile.Group) and c[0].name == name

    @precondition(lambda self: self.is_open)
    @rule(name=st.sampled_from(NAMES + GROUPS))
    def get(self, name: str) -> None:
        h = outcome(lambda: self.h[name])
        c = outcome(lambda: self.c[self.c_name(name)])
        if same_failure(f"f[{name!r}]", h, c):
            if isinstance(h[0], h5py.Dataset):
                np.testing.assert_array_equal(c[0][:], h[0][()])
                assert c[0].shape == h[0].shape and c[0].dtype == h[0].dtype
            else:
                assert isinstance(c[0], colfile.Group)

    @precondition(lambda self: self.is_open)
    @rule(name=st.sampled_from(NAMES + GROUPS + ["", "zz", "a/x"]))
    def contains(self, name: str) -> None:
        assert (name in self.h) == (self.c_name(name) in self.c), name

    @precondition(lambda self: self.is_open)
    @rule(name=st.sampled_from(NAMES + GROUPS))
    def delete(self, name: str) -> None:
        cname = self.c_name(name)
        h = outcome(lambda: self.h.__delitem__(name))
        c = outcome(lambda: self.c.__delitem__(cname))
        # h5py's read-only deletion is a KeyError, colfile's a PermissionError
        same_failure(f"del f[{name!r}]", h, c, accept=(PermissionError,))

    @invariant()
    def same_columns(self) -> None:
        """Listing: the datasets at any depth, sorted (docs/differences.md)."""
        if self.is_open:
            assert bool(self.c) and bool(self.h)
            want = self.h_datasets()
            assert list(self.c) == want
            assert len(self.c) == len(want)
            assert self.c.columns == want

    # -- attributes ------------------------------------------------------

    def owners(self, name: str) -> tuple[Any, Any] | None:
        """The attribute owners called ``name`` ('' is the File)."""
        if name == "":
            return self.h, self.c
        kind = self.h_kind(name)
        if kind is None:
            return None
        return self.h[name], self.c[self.c_name(name)]

    @precondition(lambda self: self.is_open)
    @rule(owner=st.sampled_from([""] + NAMES + GROUPS), key=st.sampled_from(ATTRS),
          value=st.one_of(st.integers(-5, 5), st.floats(-1e3, 1e3), st.text("abc", min_size=1,
                                                                            max_size=3)))
    def set_attr(self, owner: str, key: str, value: Any) -> None:
        objs = self.owners(owner)
        if objs is None:
            return
        h = outcome(lambda: objs[0].attrs.__setitem__(key, value))
        c = outcome(lambda: objs[1].attrs.__setitem__(key, value))
        same_failure(f"{owner!r}.attrs[{key!r}] = {value!r}", h, c, accept=(PermissionError,))

    @precondition(lambda self: self.is_open)
    @rule(owner=st.sampled_from([""] + NAMES + GROUPS), key=st.sampled_from(ATTRS))
    def get_attr(self, owner: str, key: str) -> None:
        objs = self.owners(owner)
        if objs is None:
            return
        h = outcome(lambda: objs[0].attrs[key])
        c = outcome(lambda: objs[1].attrs[key])
        if same_failure(f"{owner!r}.attrs[{key!r}]", h, c):
            assert attr_value(c[0]) == attr_value(h[0]), (owner, key, h, c)
        assert (key in objs[0].attrs) == (key in objs[1].attrs)
        assert objs[1].attrs.get(key, "default") == "default" or h[1] is None

    @precondition(lambda self: self.is_open)
    @rule(owner=st.sampled_from([""] + NAMES + GROUPS), key=st.sampled_from(ATTRS))
    def del_attr(self, owner: str, key: str) -> None:
        objs = self.owners(owner)
        if objs is None:
            return
        h = outcome(lambda: objs[0].attrs.__delitem__(key))
        c = outcome(lambda: objs[1].attrs.__delitem__(key))
        same_failure(f"del {owner!r}.attrs[{key!r}]", h, c, accept=(PermissionError,))

    @precondition(lambda self: self.is_open)
    @rule(owner=st.sampled_from([""] + NAMES + GROUPS))
    def list_attrs(self, owner: str) -> None:
        objs = self.owners(owner)
        if objs is None:
            return
        # both iterate in name order
        assert list(objs[1].attrs) == list(objs[0].attrs)
        assert len(objs[1].attrs) == len(objs[0].attrs)


TestFileSemantics = FileMachine.TestCase


@pytest.fixture(autouse=True)
def _lib(lib: Any) -> None:
    """Every test needs libcolfile (the conftest skips without it)."""


@contextlib.contextmanager
def _both_holding(tmp_path: Any, name: str) -> Any:
    """A new colfile File and a new h5py file, each holding `name` = [1.0]."""
    with colfile.File(str(tmp_path / "c"), "w", durable=False) as f, \
            h5py.File(str(tmp_path / "h.h5"), "w") as h:
        f.create(name, data=[1.0])
        h.create_dataset(name, data=[1.0])
        yield f, h


def _both_raise(exc: Any, h_change: Any, f_change: Any) -> None:
    """h5py's change and colfile's raise exc alike."""
    with pytest.raises(exc):
        h_change()
    with pytest.raises(exc):
        f_change()


# --------------------------------------------------------------------------
# what h5py does and colfile does after the pending changes


@pytest.mark.xfail(PENDING_OVERWRITE, strict=True,
                   reason="create() on a taken name replaces the column until explicit "
                          "overwrite is merged; h5py raises ValueError")
def test_create_on_a_taken_name(tmp_path: Any) -> None:
    with _both_holding(tmp_path, "x") as (f, h):
        _both_raise(ValueError, lambda: h.create_dataset("x", data=[2.0]), lambda: f.create("x", data=[2.0]))
        assert f["x"][:].tolist() == [1.0]
        # an empty group is a taken name too
        f.require_group("g").attrs["k"] = 1
        h.require_group("g")
        _both_raise(ValueError, lambda: h.create_dataset("g", data=[2.0]), lambda: f.create("g", data=[2.0]))
        assert f["g/"].attrs["k"] == 1


@pytest.mark.xfail(PENDING_UNDER_COLUMN, strict=True,
                   reason="a column may be created below a column until that is refused")
def test_create_under_a_column(tmp_path: Any) -> None:
    with _both_holding(tmp_path, "x") as (f, h):
        _both_raise(Exception, lambda: h.create_dataset("x/y", data=[2.0]), lambda: f.create("x/y", data=[2.0]))
        assert list(f) == ["x"]


# --------------------------------------------------------------------------
# what the machine found, kept as explicit regression tests


def test_taken_names_are_value_errors_as_in_h5py(tmp_path: Any) -> None:
    # h5py raises ValueError for a group or name that exists; colfile's
    # AlreadyExistsError is that too (and still a FileExistsError)
    with colfile.File(str(tmp_path / "c"), "w", durable=False) as f:
        f.create_group("g")
        f.create("col", data=[1.0])
        with pytest.raises(ValueError, match="g: group exists"):
            f.create_group("g")
        with pytest.raises(ValueError, match="col: a column of that name exists"):
            f.create_group("col")
    with pytest.raises(FileExistsError):
        colfile.File(str(tmp_path / "c"), "x")


# --------------------------------------------------------------------------
# the deliberate differences (docs/differences.md), asserted


def test_difference_groups_by_slash_and_recursive_listing(tmp_path: Any) -> None:
    with colfile.File(str(tmp_path / "c"), "w", durable=False) as f:
        f.create("a", data=[1.0])
        f.create("g/b", data=[2.0])
        assert "g/" in f and "g" not in f
        assert isinstance(f["g/"], colfile.Group)
        with pytest.raises(KeyError, match=r"use \['g/'\]"):
            f["g"]
        assert list(f) == ["a", "g/b"] and len(f) == 2 and f.keys() == ["a", "g/b"]
        assert list(f["g/"]) == ["b"]


def test_difference_read_only_and_closed_classes(tmp_path: Any) -> None:
    path = str(tmp_path / "c")
    with colfile.File(path, "w", durable=False) as f:
        f.create("a", data=[1.0])
        f.require_group("g")
    f = colfile.File(path, "r")
    col = f["a"]
    for change in (lambda: f.create("b", data=[1.0]), lambda: f.create_group("h"),
                   lambda: f.attrs.__setitem__("k", 1), lambda: f.__delitem__("a"),
                   lambda: col.__setitem__(0, 2.0), lambda: col.attrs.__setitem__("k", 1)):
        with pytest.raises(PermissionError):
            change()
    f.close()
    for use in (lambda: f["a"], lambda: list(f), lambda: len(f), lambda: f.attrs["k"],
                lambda: f.create("b", data=[1.0]), lambda: col[0], lambda: col.shape,
                lambda: col.attrs["k"]):
        with pytest.raises(ValueError):
            use()
    assert "a" not in f and not f
    f.close()


def test_difference_regular_file(tmp_path: Any) -> None:
    p = tmp_path / "plain"
    p.write_text("not a File")
    with pytest.raises(colfile.FormatError, match="not a directory"):
        colfile.File(str(p), "r")


def test_refused_removal_keeps_open_columns(tmp_path: Any) -> None:
    # del f[name] on a read-only File used to close the open handles of the
    # name before the core refused the removal
    path = str(tmp_path / "c")
    with colfile.File(path, "w", durable=False) as f:
        f.create("a", data=[1.0])
        f.create("g/b", data=[2.0])
    with colfile.File(path, "r") as f:
        a, b = f["a"], f["g/b"]
        with pytest.raises(PermissionError, match="read-only; cannot remove 'a'"):
            del f["a"]
        with pytest.raises(PermissionError):
            del f["g/"]
        assert a[0] == 1.0 and b[0] == 2.0 and f["a"] is a


def test_a_column_is_no_group(tmp_path: Any) -> None:
    # h5py: a dataset is not a group (require_group raises TypeError); the
    # column's directory used to pass for a group whose attributes were the
    # column's
    with _both_holding(tmp_path, "a") as (f, h):
        f.create("g/b", data=[2.0])
        with pytest.raises(TypeError):
            h.require_group("a")
        with pytest.raises(TypeError, match="a column, not a group"):
            f.require_group("a")
        with pytest.raises(ValueError, match="a column of that name exists"):
            f.create_group("a")
        assert "a/" not in f and "g/" in f and f.get("a/") is None
        with pytest.raises(KeyError, match="no such group"):
            f["a/"]
        assert isinstance(f.require_group("g"), colfile.Group)
        assert list(f) == ["a", "g/b"] and f["a"][:].tolist() == [1.0]
