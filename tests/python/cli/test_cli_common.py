"""Helpers of the colfile tool: value syntax, formatting, progress bar."""

from __future__ import annotations

import doctest
import io
import math

import numpy as np
import pytest

from colfile.cli import _common
from colfile.cli._common import Progress, fmt_value, jsonable, safe_bytes, want_progress
from colfile.cli.attrs import parse_value


def test_doctests():
    result = doctest.testmod(_common)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("value", [
    0, -5, 2**63 + 1, 0.1, -0.0, 1e-300, True, False, "text", 'quo"te\n', 1.5 - 2j,
    [1, 2, 3], [0.5, -1.25], ["a", "b c"], float("inf"),
])
def test_fmt_value_parses_back(value):
    text = fmt_value(value)
    got = parse_value(text)
    assert type(got) is type(value) and got == value


def test_fmt_value_numpy():
    assert fmt_value(np.array([1.5, np.nan, -np.inf])) == "[1.5, nan, -inf]"
    assert fmt_value(np.float32(0.1)) == "0.1"          # shortest in its own width
    assert fmt_value(np.float64(0.1)) == "0.1"
    assert fmt_value(np.complex64(1 - 2j)) == "1.0-2.0j"
    assert fmt_value(np.array([True, False])) == "[true, false]"
    assert fmt_value(np.uint64(2**64 - 1)) == str(2**64 - 1)
    assert fmt_value([b"\xffa", "x"]) == '[b"\\\\xffa", "x"]'


def test_parse_value_text_fallback():
    assert parse_value("Mpc/h") == "Mpc/h"
    assert parse_value("  1 ") == 1
    assert math.isnan(parse_value("NaN")) and parse_value("-inf") == -math.inf
    assert parse_value('"42"') == "42"


def test_safe_bytes():
    assert safe_bytes(b"abc\0\0") == "abc"
    assert safe_bytes(b"a\0b") == "a\\x00b"
    assert safe_bytes("γ".encode()) == "γ"
    assert safe_bytes(b"\xff\\\n\t\x1b") == "\\xff\\\\\\n\\t\\x1b"


def test_jsonable():
    v = jsonable({"a": np.array([1.0, np.nan]), "c": np.complex128(1 + 2j),
                  "b": np.bool_(True), "u": np.uint64(2**64 - 1), "s": b"x\xff"})
    assert v == {"a": [1.0, "nan"], "c": [1.0, 2.0], "b": True, "u": 2**64 - 1,
                 "s": "x\\xff"}


def test_progress_disabled_writes_nothing():
    buf = io.StringIO()
    p = Progress(100, enabled=False, stream=buf)
    p.advance(100)
    p.close()
    assert buf.getvalue() == ""


def test_progress_rate_limited():
    buf = io.StringIO()
    p = Progress(10**6, enabled=True, stream=buf, rate=1e-9)  # redraw almost never
    for _ in range(999):
        p.advance(1000)
    assert buf.getvalue().count("\r") == 1   # the first call only
    p.advance(1000)                           # reaching the total always draws
    p.close()
    lines = buf.getvalue().split("\r")
    assert "100%" in lines[-1] and "976.6 KiB / 976.6 KiB" in lines[-1]
    assert buf.getvalue().endswith("\n")


def test_want_progress():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert want_progress(None, Tty()) is True
    assert want_progress(None, io.StringIO()) is False
    assert want_progress(True, io.StringIO()) is True
    assert want_progress(False, Tty()) is False
