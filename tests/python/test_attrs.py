"""Attributes: the value mapping, round trips through files, the mapping API."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile
from colfile.attrs import decode_value, encode_value

NATIVE = "<" if sys.byteorder == "little" else ">"


# ----------------------------------------------------------------------
# the mapping on its own (no library needed)


@pytest.mark.parametrize("value, stored", [
    ("abc", ("|a1", 3, b"abc")),
    ("", ("|a1", 1, b"\0")),
    ("αβ", ("|a1", 4, "αβ".encode())),
    (b"raw", ("|S3", 1, b"raw")),
    (b"", ("|S1", 1, b"\0")),
    (["a", "bcd", ""], ("|S3", 3, b"a\0\0bcd\0\0\0")),
    (("x", b"yz"), ("|S2", 2, b"x\0yz")),
    (True, ("|b1", 1, b"\1")),
    (7, (NATIVE + "i8", 1, np.int64(7).tobytes())),
    (2**64 - 1, (NATIVE + "u8", 1, b"\xff" * 8)),
    (-2.5, (NATIVE + "f8", 1, np.float64(-2.5).tobytes())),
    (1 - 2j, (NATIVE + "c16", 1, np.complex128(1 - 2j).tobytes())),
    ([1, 2], (NATIVE + "i8", 2, np.array([1, 2], "i8").tobytes())),
    ([1.0, 2], (NATIVE + "f8", 2, np.array([1, 2], "f8").tobytes())),
    (np.array([[1, 2], [3, 4]], ">i2"), (">i2", 4, np.array([1, 2, 3, 4], ">i2").tobytes())),
    (np.float32(1.5), (NATIVE + "f4", 1, np.float32(1.5).tobytes())),
    (np.array([], "<u4"), ("<u4", 0, b"")),
    (np.array(["é", "ab"]), ("|S2", 2, "é".encode() + b"ab")),
    (np.array([b"a"], "S4"), ("|S4", 1, b"a\0\0\0")),
    (np.bool_(False), ("|b1", 1, b"\0")),
])
def test_encode(value: Any, stored: tuple[str, int, bytes]) -> None:
    assert encode_value(value) == stored


@pytest.mark.parametrize("value", [object(), {"a": 1}, np.array([1, "a"], dtype=object),
                                   [1, "a"], [[1], [1, 2]], 2**64, -(2**63) - 1,
                                   np.zeros(2, "M8[s]"), np.zeros(1, [("a", "i4")]), None])
def test_encode_rejects(value: Any) -> None:
    with pytest.raises(ValueError):
        encode_value(value)


@pytest.mark.parametrize("stored, value", [
    (("<a1", 1, b"\0"), ""),
    (("<a1", 3, b"a\0b"), "a\0b"),
    (("<a1", 2, b"\xff\xfe"), b"\xff\xfe"),
    (("<S3", 2, b"a\0\0bc\0"), ["a", "bc"]),
    (("<S2", 2, b"\0\0\xffx"), ["", b"\xffx"]),
    (("<S15", 1, b"raw-bytes-a4x7y"), ["raw-bytes-a4x7y"]),
])
def test_decode_strings(stored: tuple[str, int, bytes], value: Any) -> None:
    assert decode_value(*stored) == value


def test_decode_numbers() -> None:
    v = decode_value(">f8", 1, np.array([3.0], ">f8").tobytes())
    assert isinstance(v, np.float64) and v == 3.0 and v * 2 == 6.0
    a = decode_value("<b1", 3, b"\0\1\1")
    assert a.dtype == bool and a.tolist() == [False, True, True]
    e = decode_value("<c8", 0, b"")
    assert e.shape == (0,) and e.dtype == np.dtype("<c8")
    a.flags.writeable  # a private, writable copy
    a[0] = True


# ----------------------------------------------------------------------
# through files

VALUES: dict[str, Any] = {
    "str": "hello",
    "empty_str": "",
    "unicode": "Ωmega ☃",
    "newline": "two\nlines and\ttab",
    "int": 42,
    "neg": -(2**63),
    "big": 2**63 + 1,
    "float": 0.1,
    "bool": False,
    "complex": 3 - 4j,
    "list_int": [1, 2, 3],
    "list_float": [0.5, 1e300, -np.inf],
    "list_str": ["x", "yy", "zzz"],
    "empty_list_str": ["", ""],
    "f4_be": np.array([1.25, -2.5], ">f4"),
    "i2_le": np.array([-7, 300], "<i2"),
    "u8_be": np.array([2**64 - 1], ">u8"),
    "c8_be": np.array([1 + 2j, -3j], ">c8"),
    "c16_be": np.array([1.5 - 0.5j], ">c16"),
    "f2": np.array([0.5, 65504], "<f2"),
    "b1": np.array([True, False, True]),
    "i1": np.array([-128, 127], "i1"),
    "empty_f8": np.array([], "f8"),
    "empty_be": np.array([], ">i4"),
    "scalar_u2": np.uint16(65535),
    "#odd=name/x.y": 7,
    "ünïcode_name": 1,
    "n" * 300: "long name",
}


def expected_back(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], str):
        return list(value)
    arr = np.asarray(value).reshape(-1)
    if arr.size == 1:  # one element reads back as a numpy scalar
        return arr[0]
    return arr


def check_value(got: Any, value: Any) -> None:
    want = expected_back(value)
    if isinstance(want, (str, list)):
        assert got == want
        return
    assert isinstance(got, np.ndarray) == isinstance(want, np.ndarray), (got, want)
    assert isinstance(got, (np.ndarray, np.generic)), got
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.asarray(got).dtype.str == np.asarray(want).dtype.str
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("where", [".", "grp/.", "col", "meta"])
def test_round_trip_every_kind(path: str, where: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("col", "f8", size=2)
        f.create("meta", None)
        attrs = {".": f.attrs, "grp/.": f.require_group("grp").attrs,
                 "col": f["col"].attrs, "meta": f["meta"].attrs}[where]
        for name, value in VALUES.items():
            attrs[name] = value
        for name, value in VALUES.items():
            check_value(attrs[name], value)
    with colfile.File(path) as f:
        attrs = {".": f.attrs, "grp/.": f["grp/"].attrs,
                 "col": f["col"].attrs, "meta": f["meta"].attrs}[where]
        assert list(attrs) == sorted(VALUES, key=lambda s: s.encode())
        assert len(attrs) == len(VALUES)
        for name, value in VALUES.items():
            check_value(attrs[name], value)
        assert attrs.raw("empty_f8") == (NATIVE + "f8", 0, b"")
        assert attrs.raw("f4_be") == (">f4", 2, VALUES["f4_be"].tobytes())
        assert attrs.raw("empty_str") == (NATIVE + "a1", 1, b"\0")


def test_attr_v2_text_is_bigfile_format(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.attrs["s"] = "hi"
        f.attrs["x"] = 1.5
        assert f["."].kind == "attrs-only"
        f.require_group("g").attrs["n"] = np.array([1, 2], ">i2")
    text = Path(path, "attr-v2").read_text()
    assert text.splitlines()[0].startswith(f"s {NATIVE}a1 2 6869 ")
    assert text.splitlines()[1].startswith(f"x {NATIVE}f8 1 {np.float64(1.5).tobytes().hex().upper()} ")
    assert Path(path, "g", "attr-v2").read_text().startswith("n >i2 2 00010002 ")
    assert not Path(path, "g", "header").exists()


def test_mapping_api(wfile: colfile.File) -> None:
    attrs = wfile.create("c", "i4", size=1).attrs
    attrs.update({"a": 1, "b": "two"})
    assert "a" in attrs and "zz" not in attrs and 3 not in attrs
    assert attrs.get("zz", "dflt") == "dflt"
    assert attrs.pop("a") == 1 and "a" not in attrs
    assert attrs.setdefault("c", 2.5) == 2.5
    assert dict(attrs) == {"b": "two", "c": 2.5}
    with pytest.raises(KeyError) as exc:
        attrs["zz"]
    assert isinstance(exc.value, colfile.AttributeNotFoundError)
    with pytest.raises(KeyError):
        del attrs["zz"]
    attrs["b"] = [1, 2]  # replace with another type
    assert attrs["b"].tolist() == [1, 2]
    attrs.set_raw("raw", "<u2", 2, b"\x01\x00\x02\x00")
    assert attrs["raw"].tolist() == [1, 2]
    attrs.clear()
    assert len(attrs) == 0 and list(attrs) == []
    assert "AttributeManager" in repr(attrs)


@pytest.mark.parametrize("name", ["a b", "tab\there", "nl\n", ""])
def test_bad_attribute_names(wfile: colfile.File, name: str) -> None:
    with pytest.raises(colfile.InvalidNameError) as exc:
        wfile.attrs[name] = 1
    assert isinstance(exc.value, ValueError)


def test_attribute_key_type(wfile: colfile.File) -> None:
    with pytest.raises(TypeError):
        wfile.attrs[1] = 1  # type: ignore[index]


def test_read_only_attributes(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("c", "i4", size=0).attrs["x"] = 1
    with colfile.File(path, "r") as f:
        assert f["c"].attrs["x"] == 1
        with pytest.raises(colfile.ReadOnlyError) as exc:
            f["c"].attrs["x"] = 2
        assert isinstance(exc.value, PermissionError)
        with pytest.raises(PermissionError):
            del f["c"].attrs["x"]
        with pytest.raises(PermissionError):
            f.attrs["y"] = 1
        assert dict(f.attrs) == {}


def test_attributes_survive_rewrites_of_data(path: str) -> None:
    with colfile.File(path, "w") as f:
        col = f.create("c", "i4", size=3)
        col.attrs["unit"] = "m"
        col[:] = [1, 2, 3]
        col.append([4])
    with colfile.File(path, "a") as f:
        assert f["c"].attrs["unit"] == "m"
        f.create("c", "i4", size=1, overwrite=True)  # re-creating empties the attributes
        assert dict(f["c"].attrs) == {}


@pytest.mark.parametrize("value", [0, 1, -1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1,
                                   0.0, -0.0, 1e300, -2.5, float("inf"), float("nan")])
def test_encode_scalar_bytes_are_numpys(value: Any) -> None:
    """Python ints and floats take a short path: the bytes numpy would give."""
    dt = "f8" if isinstance(value, float) else ("i8" if value < 2**63 else "u8")
    assert encode_value(value) == (NATIVE + dt, 1, np.array(value, NATIVE + dt).tobytes())


def test_attributes_of_a_new_column_are_written_by_its_commit(path: str) -> None:
    """Until its first commit a new column lives in a staging directory, its
    attributes in memory; the commit writes them with the rest, in place
    (no temporaries left), and bigfile's attr-v2 and colfile-attrs hold them."""
    with colfile.File(path, "w") as f:
        col = f.create("c", data=np.arange(4, dtype="i8"))
        col.attrs["index"] = 7
        col.attrs["empty"] = np.array([], "<u4")  # bigfile cannot read it: colfile-attrs
        col.attrs["gone"] = 1.5
        del col.attrs["gone"]
        assert not Path(path, "c").exists()  # not published yet
        assert list(col.attrs) == ["empty", "index"] and col.attrs["index"] == 7
        col.close()
        files = sorted(p.name for p in Path(path, "c").iterdir())
        assert files == ["000000", "attr-v2", "colfile-attrs", "colfile-v1", "header"]
        # the directory's writer-lock file stays while the File is open; the
        # publication bumped the File's generation (.colfile-catalog/generation)
        assert sorted(p.name for p in Path(path).iterdir() if p.name.startswith(".colfile-")) == \
            [".colfile-catalog", ".colfile-lock"]
        text = Path(path, "c", "attr-v2").read_text()
        assert text.startswith(f"index {NATIVE}i8 1 {np.int64(7).tobytes().hex().upper()} ")
        assert "gone" not in text and "empty" not in text
        assert Path(path, "c", "colfile-attrs").read_text().startswith("empty <u4 0 ")
    assert [p.name for p in Path(path).iterdir() if p.name.startswith(".")] == [".colfile-catalog"]
    with colfile.File(path) as f:
        attrs = f["c"].attrs
        assert sorted(attrs) == ["empty", "index"] and attrs["index"] == 7
        assert attrs.raw("empty") == ("<u4", 0, b"")
        np.testing.assert_array_equal(f["c"][:], np.arange(4))


@pytest.mark.parametrize("durable", [True, False])
def test_new_column_without_attributes_has_an_empty_attr_v2(path: str, durable: bool) -> None:
    with colfile.File(path, "w", durable=durable) as f:
        f.create("g/h", None)
        f.create("g/x", "f4", size=0)
    for name in ("h", "x"):
        assert Path(path, "g", name, "attr-v2").read_bytes() == b""
        assert not Path(path, "g", name, "colfile-attrs").exists()
