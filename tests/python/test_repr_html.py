"""_repr_html_ of File, Group, Column and Selection (a collapsible tree with
dtype, shape, nfile, size, attributes, statistics and checksum state; the
text repr unchanged) and _ipython_key_completions_."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

import colfile


class _Tree(HTMLParser):
    """Parses the HTML, checking that every element closes in order, and
    keeps the text."""

    VOID = {"br", "hr", "img", "meta", "input"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.text: list[str] = []
        self.details = 0

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)
        self.details += tag == "details"

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()

    def handle_data(self, data):
        if "style" not in self.stack:
            self.text.append(data)


def parse(text: str) -> _Tree:
    t = _Tree()
    t.feed(text)
    t.close()
    assert t.stack == []
    return t


def plain(text: str) -> str:
    return " ".join(" ".join(parse(text).text).split())


@pytest.fixture()
def f(tmp_path):
    f = colfile.File(str(tmp_path / "snap"), "w")
    f.attrs["BoxSize"] = 250.0
    pos = f.create("1/Position", data=np.arange(30.0).reshape(10, 3), blob_rows=[4, 6])
    pos.attrs["Unit"] = "kpc/h <comoving>"
    f.create("1/Mass", data=np.array([3.0, np.nan, 1.0, 7.0]), nfile=2)
    f.create("0/ID", data=np.arange(5, dtype="i8"))
    f.create("Header/Flag", data=np.array([True]))
    f.require_group("1").attrs["Kind"] = "dm & gas"
    f.flush()
    yield f
    f.close()


def test_column_html(f):
    col = f["1/Position"]
    text = col._repr_html_()
    t = parse(text)
    assert t.details >= 2  # the column, its attributes
    s = plain(text)
    assert "1/Position" in s and "<f8" in s and "(10, 3)" in s
    assert "nfile 2 (rows per blob: 4, 6)" in s
    assert "240 B" in s
    # statistics from the recorded chunks, per component
    assert "[0] min 0, max 27, NaN 0" in s and "[2] min 2, max 29, NaN 0" in s
    assert "current, CRC32C recorded for 2 of 2 blobs" in s
    # attribute values are escaped, not markup
    assert "kpc/h <comoving>" in s and "<comoving>" not in text
    mass = plain(f["1/Mass"]._repr_html_())
    assert "min 1, max 7, NaN 1" in mass


def test_text_repr_unchanged(f):
    col = f["1/Position"]
    assert repr(col) == "<colfile.Column '1/Position' shape=(10, 3) dtype=<f8 nfile=2>"
    assert repr(f).startswith("<colfile.File ") and repr(f).endswith("mode='w'>")
    assert repr(f["1/"]) == f"<colfile.Group '1' in {f.path!r} (2 columns)>"


def test_file_and_group_html(f):
    text = f._repr_html_()
    t = parse(text)
    s = plain(text)
    assert "colfile.File" in s and "mode=w" in s and "(4 columns)" in s
    assert "BoxSize" in s and "250.0" in s
    for name in ("0/", "1/", "Header/", "Position", "Mass", "ID", "Flag"):
        assert name in s
    # groups before their columns, nested
    assert s.index("1/ group, 2 columns") < s.index("Mass <f8 (4,) nfile=2")
    assert t.details >= 8
    g = plain(f["1/"]._repr_html_())
    assert g.startswith("colfile.Group 1 in") and "'dm & gas'" in g and "ID" not in g


def test_closed_html(tmp_path):
    f = colfile.File(str(tmp_path / "c"), "w")
    col = f.create("x", data=np.arange(3))
    f.close()
    assert "(closed file)" in plain(f._repr_html_())
    assert "closed" in plain(col._repr_html_())


def test_unknown_statistics(tmp_path):
    p = str(tmp_path / "u")
    with colfile.File(p, "w") as f:
        f.create("s", data=np.array([b"ab", b"cd"]))
    with colfile.File(p) as f:
        s = plain(f["s"]._repr_html_())
        assert "|S2" in s and "statistics" in s


def test_selection_html(f):
    sel = colfile.where(f["1/"], "Position[0] > 10")
    s = plain(sel._repr_html_())
    rows = np.flatnonzero(f["1/Position"][:, 0] > 10)
    assert f"colfile.Selection {len(rows)} of 10 rows" in s
    assert f"{rows[0]}:{rows[-1] + 1}" in s
    assert "Position[0] > 10" in s
    assert re.search(r"report .*chunk", s)
    assert repr(sel).startswith("<colfile.Selection ")


def test_key_completions(f):
    assert f._ipython_key_completions_() == ["0/", "1/", "Header/", "0/ID", "1/Mass",
                                             "1/Position", "Header/Flag"]
    assert f["1/"]._ipython_key_completions_() == ["Mass", "Position"]
    g = f["0/"]
    assert colfile.Dataset(g, ["ID"])._ipython_key_completions_() == ["ID"]


def test_file_written_by_bigfile(tmp_path):
    """No colfile metadata: statistics unknown, checksums absent."""
    bigfile = pytest.importorskip("bigfile")
    p = str(tmp_path / "bf")
    with bigfile.File(p, create=True) as bf:
        bf.create_from_array("x", np.arange(10.0), Nfile=3)
    with colfile.File(p) as f:
        s = plain(f["x"]._repr_html_())
        assert "nfile 3 (rows per blob: 3, 3, 4)" in s
        assert "statistics unknown for all 10 rows" in s
        assert "checksums absent, CRC32C recorded for 0 of 3 blobs" in s


def test_header_block_html(tmp_path):
    bigfile = pytest.importorskip("bigfile")
    p = str(tmp_path / "bf")
    with bigfile.File(p, create=True) as bf:
        with bf.create("Header") as h:
            h.attrs["Time"] = 0.5
    with colfile.File(p) as f:
        s = plain(f._repr_html_())
        assert "Header header-only" in s and "Time 0.5" in s
        assert "shape" not in s and "np.float64" not in s
