"""The library reads no environment variable: behaviour switches are open
flags.  Python keeps the documented ``COLFILE_NO_MMAP`` by turning it into
``CF_OPEN_NOMMAP`` on every File it opens."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile
from colfile import _constants
from colfile._ffi import environment_open_flags

SRC = Path(__file__).resolve().parents[2] / "src"


def test_no_library_source_reads_the_environment() -> None:
    """Only colfile-iosim, a program with a main, may: it looks up TMPDIR."""
    readers = []
    for p in sorted(SRC.rglob("*.[ch]")):
        text = re.sub(r"/\*.*?\*/", " ", p.read_text(), flags=re.S)
        if re.search(r"\b(secure_)?getenv\s*\(", text) and p.name != "iosim.c":
            readers.append(str(p.relative_to(SRC)))
    assert not readers, f"library sources reading the environment: {readers}"


@pytest.mark.parametrize("value, expected", [(None, 0), ("", 0), ("0", 0), ("1", 1), ("yes", 1)])
def test_environment_open_flags(monkeypatch: pytest.MonkeyPatch, value: str | None,
                                expected: int) -> None:
    if value is None:
        monkeypatch.delenv("COLFILE_NO_MMAP", raising=False)
    else:
        monkeypatch.setenv("COLFILE_NO_MMAP", value)
    assert environment_open_flags() == expected * _constants.CF_OPEN_NOMMAP


@pytest.mark.parametrize("value", ["1", "0"])
def test_file_passes_nommap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lib: Any,
                            value: str) -> None:
    monkeypatch.setenv("COLFILE_NO_MMAP", value)
    path = str(tmp_path / "f")
    data = np.arange(3_000_000, dtype="<f8")
    with colfile.File(path, "w") as f:
        f.create("x", "<f8", size=data.size)[:] = data
        assert bool(lib.cf_file_flags(f._h) & _constants.CF_OPEN_NOMMAP) == (value == "1")
    with colfile.File(path) as f:
        assert bool(lib.cf_file_flags(f._h) & _constants.CF_OPEN_NOMMAP) == (value == "1")
        np.testing.assert_array_equal(f["x"][:], data)
        np.testing.assert_array_equal(f["x"][::3], data[::3])


def test_compat_file_passes_nommap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lib: Any) -> None:
    from colfile.compat import bigfile

    monkeypatch.setenv("COLFILE_NO_MMAP", "1")
    with bigfile.File(str(tmp_path / "b"), create=True) as f:
        assert lib.cf_file_flags(f._h) & _constants.CF_OPEN_NOMMAP
