"""Attributes read back exactly as written (dtype with its byte order,
shape, value, Python type), or are refused when written; bigfile 0.1.52
reads what colfile writes and colfile reads what bigfile writes.

What attr-v2 cannot hold (bytes, numpy byte strings, arrays of more than
one dimension, the string '\\x00', list elements ending in NUL) is refused
by ``attrs[name] = value`` with a ValueError naming the object, the
attribute and what to store instead; nothing is written then.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colfile

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _reopen_attrs(path: Path, where: str) -> Any:
    f = colfile.File(path)
    return f, (f.attrs if where == "." else f[where].attrs)


@pytest.fixture
def fpath(tmp_path: Path, lib: Any) -> Path:
    p = tmp_path / "f"
    with colfile.File(p, "w") as f:
        f.create("col", data=np.arange(3))
    return p


# ----------------------------------------------------------------------
# refused at write


@pytest.mark.parametrize("value, words", [
    (b"\x00\x01", ["bytes b'\\x00\\x01'", "list of str", "np.frombuffer"]),
    (np.bytes_(b"ab"), ["bytes b'ab'"]),
    (np.eye(2), ["shape (2, 2)", "flat", "ravel"]),
    (np.zeros((0, 3), ">i4"), ["shape (0, 3)"]),
    ([[1, 2], [3, 4]], ["nested list of shape (2, 2)"]),
    (np.array([b"ab", b"c"]), ["byte string array", "astype(str)"]),
    (["a", b"b"], ["list holding bytes"]),
    ("\x00", ["the string '\\x00'", "empty str"]),
    (["a\x00", "b"], ["ending in NUL"]),
])
@pytest.mark.parametrize("where", [".", "col"])
def test_lossy_values_are_refused(fpath: Path, where: str, value: Any, words: list[str]) -> None:
    with colfile.File(fpath, "r+") as f:
        am = f.attrs if where == "." else f[where].attrs
        with pytest.raises(ValueError) as info:
            am["x"] = value
        msg = str(info.value)
        assert str(fpath) in msg and "attribute 'x'" in msg
        for w in words:
            assert w in msg, msg
        assert "x" not in am
    f, am = _reopen_attrs(fpath, where)
    with f:
        assert "x" not in am


def test_raw_bytes_and_text_alternatives(fpath: Path) -> None:
    with colfile.File(fpath, "r+") as f:
        a = f["col"].attrs
        a["raw"] = np.frombuffer(b"\x00\x01", "u1")
        a["text"] = np.array("abc")          # a 0-d str array is a str
        a["words"] = np.array(["a", "bcd"])  # 1-d: a list of str
        a.set_raw("bytes", "|S2", 1, b"\x00\x01")  # the bigfile form, stored on request
    with colfile.File(fpath) as f:
        a = f["col"].attrs
        assert a["raw"].tobytes() == b"\x00\x01" and a["raw"].dtype == np.uint8
        assert a["text"] == "abc" and a["words"] == ["a", "bcd"]
        assert a["bytes"] == ["\x00\x01"]


def test_compat_bigfile_keeps_bigfile_behaviour(fpath: Path) -> None:
    import colfile.compat.bigfile as bf

    f = bf.File(str(fpath))
    with f["col"] as b:
        b.attrs["b"] = b"\x00\x01"
        b.attrs["eye"] = np.eye(2)
    with f["col"] as b:
        assert b.attrs["b"] == ["\x00\x01"]
        assert b.attrs["eye"].tolist() == [1.0, 0.0, 0.0, 1.0]


# ----------------------------------------------------------------------
# numbers: every kind, width and byte order; scalars, 0-d and 1-d arrays

_WIDTHS = {"i": [1, 2, 4, 8], "u": [1, 2, 4, 8], "f": [2, 4, 8], "c": [8, 16], "b": [1]}


@st.composite
def numeric_dtypes(draw: Any) -> np.dtype[Any]:
    kind = draw(st.sampled_from(sorted(_WIDTHS)))
    width = draw(st.sampled_from(_WIDTHS[kind]))
    if kind == "b":
        return np.dtype("?")
    order = draw(st.sampled_from("<>"))
    return np.dtype(f"{order}{kind}{width}")


@st.composite
def numeric_values(draw: Any) -> Any:
    dt = draw(numeric_dtypes())
    form = draw(st.sampled_from(["scalar", "0-d", "1-d"]))
    n = 1 if form != "1-d" else draw(st.integers(0, 6))
    raw = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
    arr = np.frombuffer(raw, dt).copy() if dt.kind != "b" else \
        np.frombuffer(raw, "u1").astype(bool)
    if form == "scalar":
        return arr[0]
    if form == "0-d":
        return arr.reshape(())
    return arr


def _same_dtype(a: np.dtype[Any], b: np.dtype[Any]) -> bool:
    return a == b and (a.itemsize == 1 or a.byteorder == b.byteorder
                       or a.isnative == b.isnative)


@SETTINGS
@given(value=numeric_values(), where=st.sampled_from([".", "col", "g/."]))
def test_numbers_round_trip(tmp_path_factory: Any, lib: Any, value: Any, where: str) -> None:
    path = tmp_path_factory.mktemp("num") / "f"
    with colfile.File(path, "w") as f:
        f.create("col", data=np.arange(3))
        f.create("g/c", data=np.arange(3))
        am = f.attrs if where == "." else f[where].attrs
        am["v"] = value
    arr = np.asarray(value)
    f, am = _reopen_attrs(path, where)
    with f:
        got = am["v"]
        tok, nmemb, data = am.raw("v")
    assert nmemb == arr.size and data == arr.tobytes()
    assert _same_dtype(np.dtype(tok), arr.dtype), (tok, arr.dtype.str)
    if arr.size == 1:
        # one element reads back as a numpy scalar (so does a 1-d array of
        # one), in the machine's byte order as every numpy scalar; raw()
        # keeps the stored order
        assert isinstance(got, np.generic) and got.dtype == arr.dtype.newbyteorder("=")
        assert np.asarray(got).astype(arr.dtype).tobytes() == arr.tobytes()
        if arr.ndim == 0:
            assert np.asarray(got).shape == arr.shape
    else:
        assert isinstance(got, np.ndarray) and got.shape == arr.shape
        assert _same_dtype(got.dtype, arr.dtype) and got.tobytes() == arr.tobytes()
    # the original reads what colfile wrote (an empty array lives in
    # colfile-attrs, which it does not read); big-endian complex keeps
    # numpy's layout here, bigfile exchanged the parts on conversion only
    bigfile = pytest.importorskip("bigfile")
    if arr.size:
        bf = bigfile.File(str(path))
        block = bf.open(where if where != "g/." else "g/.")
        theirs = np.asarray(block.attrs["v"])
        assert theirs.shape == (arr.size,)
        assert theirs.tobytes() == arr.reshape(-1).tobytes()


# ----------------------------------------------------------------------
# text

_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=20).filter(
    lambda s: s != "\x00")
_elem = st.text(st.characters(blacklist_categories=["Cs"]), max_size=8).filter(
    lambda s: not s.endswith("\x00"))


@SETTINGS
@given(value=st.one_of(_text, st.lists(_elem, min_size=1, max_size=5),
                       st.lists(_elem, min_size=1, max_size=5).map(np.array)))
def test_text_round_trips(tmp_path_factory: Any, lib: Any, value: Any) -> None:
    path = tmp_path_factory.mktemp("txt") / "f"
    with colfile.File(path, "w") as f:
        f.create("col", data=np.arange(3)).attrs["t"] = value
    with colfile.File(path) as f:
        got = f["col"].attrs["t"]
    if isinstance(value, str):
        assert type(got) is str and got == value
    else:
        want = [str(s) for s in (value.tolist() if isinstance(value, np.ndarray) else value)]
        assert type(got) is list and got == want
    bigfile = pytest.importorskip("bigfile")
    theirs = bigfile.File(str(path)).open("col").attrs["t"]
    if isinstance(value, str):
        assert theirs == (value if value else "\x00")  # bigfile's '' is '\x00'
    elif all(s.isascii() for s in want):
        # bigfile gives an element of only NULs (an empty str) as '\x00'
        assert [s if s.strip("\x00") else "" for s in theirs] == want


# ----------------------------------------------------------------------
# what bigfile writes, colfile reads as bigfile does (value for value)


@SETTINGS
@given(value=st.one_of(numeric_values(), _text.filter(lambda s: s != "" and s.isascii()),
                       st.binary(min_size=1, max_size=8).filter(lambda b: not b.endswith(b"\0")
                                                               and b.isascii())))
def test_bigfile_written_attributes_read_back(tmp_path_factory: Any, lib: Any,
                                              value: Any) -> None:
    bigfile = pytest.importorskip("bigfile")
    arr = np.asarray(value)
    if isinstance(value, (np.ndarray, np.generic)) and arr.size == 0:
        return  # bigfile writes an empty array and cannot reopen the column
    if isinstance(value, (np.ndarray, np.generic)) and arr.dtype.kind == "c" \
            and not arr.dtype.isnative:
        return  # bigfile exchanges the parts of big-endian complex (documented)
    path = str(tmp_path_factory.mktemp("bf") / "f")
    bf = bigfile.File(path, create=True)
    with bf.create("col", dtype="f8", size=1) as b:
        b.attrs["v"] = value
    theirs = bigfile.File(path).open("col").attrs["v"]
    with colfile.File(path) as f:
        got = f["col"].attrs["v"]
    if isinstance(theirs, (str, list)):
        assert got == theirs
    else:
        mine = np.atleast_1d(got)
        assert mine.dtype.newbyteorder("=") == theirs.dtype.newbyteorder("=")
        assert mine.astype(theirs.dtype).tobytes() == theirs.tobytes()


# ----------------------------------------------------------------------
# one string, however a C program or the legacy attr file stored it


def test_text_of_s1_characters(fpath: Path) -> None:
    """A string stored as S1 x 13 (C programs, legacy attr) reads back as 13
    characters through attrs[name], as in bigfile, and as one str through
    attrs.text(name), as cf_column_attr_get_string gives it."""
    with colfile.File(fpath, "r+") as f:
        a = f["col"].attrs
        a.set_raw("chars", "|S1", 13, b"hello world!!")
        a.set_raw("padded", "|S8", 1, b"Mpc\0\0\0\0\0")
        a["str"] = "héllo"
        a["list"] = ["ab", "c"]
        a["n"] = 3
    with colfile.File(fpath) as f:
        a = f["col"].attrs
        assert a["chars"] == list("hello world!!")
        assert a.text("chars") == "hello world!!"
        assert a.text("padded") == "Mpc" and a.text("str") == "héllo"
        for name in ("list", "n"):
            with pytest.raises(TypeError, match=f"attribute '{name}'"):
                a.text(name)
    bigfile = pytest.importorskip("bigfile")
    assert bigfile.File(str(fpath)).open("col").attrs["chars"] == list("hello world!!")
