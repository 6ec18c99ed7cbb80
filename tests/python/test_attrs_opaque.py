"""Attributes of kinds colfile does not interpret, as other tools write them
into ``attr-v2`` (``<U4``, ``<U1``, ``<M8``, ``<O8``, ``<V4``, ``<x2``, and
a numeric kind with a width numpy lacks, ``<i3``): every reader keeps them as
opaque bytes of the token's width (docs/format.md 7.3) -- the mapping, the
one-call ``File.column_attrs``, ``colfile ls -l`` and ``colfile attrs``
(text and JSON), ``colfile.compat.bigfile`` -- and rewriting the other
attributes keeps their bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile

# name, token, nmemb, hex: the bytes are the token's width (4 for <U4,
# not numpy's 16) times nmemb
FOREIGN = [
    ("u4", "<U4", 1, "41000000"),
    ("u1", "<U1", 2, "4142"),
    ("m8", "<M8", 1, "0100000000000000"),
    ("o8", "<O8", 1, "0000000000000000"),
    ("v4", "<V4", 1, "01020304"),
    ("x2", "<x2", 1, "0102"),
    ("i3", "<i3", 2, "010203040506"),
]


def _file_with_foreign_attrs(path: str) -> None:
    with colfile.File(path, "w") as f:
        c = f.create("a", data=np.arange(3.0))
        c.attrs["keep"] = np.int32(7)
        f.create("b", data=np.arange(2))
        f.attrs["top"] = 1.5
    for target in (Path(path) / "a" / "attr-v2", Path(path) / "attr-v2"):
        with open(target, "a") as fh:
            for name, tok, n, hx in FOREIGN:
                fh.write(f"{name} {tok} {n} {hx} #HUMANE [ ]\n")


def _check(value: Any, n: int, hx: str) -> None:
    raw = bytes.fromhex(hx)
    width = len(raw) // n
    if n == 1:
        assert isinstance(value, np.void), repr(value)
    else:
        assert isinstance(value, np.ndarray) and value.shape == (n,), repr(value)
    assert value.dtype == np.dtype(f"V{width}")
    assert value.tobytes() == raw


def _fields(text: str) -> dict[str, list[str]]:
    """name -> [token, nmemb, hex] of each line (the #HUMANE text aside)."""
    return {ln.split()[0]: ln.split()[1:4] for ln in text.splitlines() if ln.strip()}


def test_mapping_and_column_attrs_keep_them(path: str) -> None:
    _file_with_foreign_attrs(path)
    with colfile.File(path, "r") as f:
        for attrs in (f["a"].attrs, f.attrs):
            got = dict(attrs)  # raised ValueError
            for name, tok, n, hx in FOREIGN:
                _check(got[name], n, hx)
                assert attrs.raw(name) == (tok, n, bytes.fromhex(hx))
        assert got["top"] == 1.5
        assert f["a"].attrs["keep"] == 7
        every = f.column_attrs()
        for name, _tok, n, hx in FOREIGN:
            _check(every["a"][name], n, hx)
        assert every["a"]["keep"] == 7 and every["b"] == {}


def test_rewriting_other_attributes_keeps_their_bytes(path: str) -> None:
    _file_with_foreign_attrs(path)
    files = [Path(path) / "a" / "attr-v2", Path(path) / "attr-v2"]
    before = [_fields(p.read_text()) for p in files]
    with colfile.File(path, "r+") as f:
        f["a"].attrs["new"] = 2.5
        del f["a"].attrs["keep"]
        f.attrs["top"] = 3.0
    for p, old in zip(files, before):
        now = _fields(p.read_text())
        for name, tok, n, hx in FOREIGN:
            assert now[name] == old[name] == [tok, str(n), hx.upper()]
    with colfile.File(path, "r") as f:
        assert f["a"].attrs["new"] == 2.5 and "keep" not in f["a"].attrs
        for name, _tok, n, hx in FOREIGN:
            _check(f["a"].attrs[name], n, hx)


def test_cli_ls_and_attrs_show_them(path: str, cli: Any) -> None:
    _file_with_foreign_attrs(path)
    status, out, err = cli("ls", "-l", path)
    assert status == 0, err
    assert "<U4     0x41000000" in out and "<U1[2]  [0x41, 0x42]" in out
    assert "0x0100000000000000" in out and "<i3[2]  [0x010203, 0x040506]" in out
    assert "b " in out  # the other column is listed too
    status, out, err = cli("ls", "-l", "--json", path)
    assert status == 0, err
    status, out, err = cli("attrs", path, "a")
    assert status == 0, err
    lines = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines()}
    assert lines["u4"] == ["<U4", "0x41000000"] and lines["keep"] == ["<i4", "7"]
    assert lines["x2"] == ["<x2", "0x0102"]
    status, out, err = cli("attrs", "--json", path, ".")
    assert status == 0, err
    got = json.loads(out)
    assert got["m8"] == {"dtype": "<M8", "nmemb": 1, "value": "0x0100000000000000"}
    assert got["u1"]["value"] == ["0x41", "0x42"]
    status, out, err = cli("attrs", path, "a", "--get", "o8")
    assert (status, out) == (0, "0x0000000000000000\n"), err


def test_query_out_skips_them_with_a_note(path: str, cli: Any, tmp_path: Path) -> None:
    _file_with_foreign_attrs(path)
    new = str(tmp_path / "sub")
    status, out, err = cli("query", path, "a >= 1", "-c", "a", "--out", new)
    assert status == 0, err
    assert "'u4' of 'a' (<U4) not copied" in err
    with colfile.File(new, "r") as g:
        # kind i of width 3 is a kind colfile writes: copied as it was
        assert sorted(g["a"].attrs) == ["i3", "keep"]
        assert g["a"].attrs.raw("i3") == ("<i3", 2, bytes.fromhex("010203040506"))


def test_compat_bigfile_keeps_them(path: str) -> None:
    from colfile.compat import bigfile as bf

    _file_with_foreign_attrs(path)
    with bf.File(path) as f:
        attrs = f["a"].attrs
        got = {k: attrs[k] for k in attrs}
    for name, _tok, n, hx in FOREIGN:
        v = got[name]
        assert isinstance(v, np.ndarray) and v.shape == (n,) and v.tobytes() == bytes.fromhex(hx)
    np.testing.assert_array_equal(got["keep"], [7])


@pytest.mark.parametrize("token, numeric", [("<f8", True), ("<b1", True), ("<f2", True), ("<i3", False),
                                            ("<U4", False), ("<b2", False), ("<c4", False)])
def test_numeric_dtype(token: str, numeric: bool) -> None:
    from colfile.attrs import numeric_dtype

    dt = numeric_dtype(token)
    assert (dt is not None) == numeric
    if numeric:
        assert dt.itemsize == int(token[2:])
