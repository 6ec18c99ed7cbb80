"""The examples in the docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib
import tempfile
from pathlib import Path
from typing import Any

import pytest

MODULES = [
    "colfile",
    "colfile._dtypes",
    "colfile._ints",
    "colfile._indexing",
    "colfile.attrs",
    "colfile.column",
    "colfile.dataset",
    "colfile.errors",
    "colfile.file",
    "colfile.mpi",
    "colfile.query",
    "colfile.histograms",
    "colfile.tools",
    "colfile.compat.bigfile",
    # parts of the modules above, where the examples of their methods live
    "colfile._column_handle",
    "colfile._column_rows",
    "colfile._column_base",
    "colfile._group",
    "colfile._expr",
    "colfile._scan",
    "colfile._runs",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str, lib: Any, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The examples make their Files in tempfile.mkdtemp(), as a reader would;
    # here those land in this test's directory, which pytest removes.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"


def test_every_public_module_has_examples() -> None:
    for name in MODULES:
        module = importlib.import_module(name)
        tests = doctest.DocTestFinder().find(module)
        assert sum(len(t.examples) for t in tests) > 0, name
