"""The examples in the docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib
from typing import Any

import pytest

MODULES = [
    "colfile",
    "colfile._dtypes",
    "colfile._indexing",
    "colfile.attrs",
    "colfile.column",
    "colfile.dataset",
    "colfile.errors",
    "colfile.file",
    "colfile.mpi",
    "colfile.query",
    "colfile.histograms",
    "colfile.compat.bigfile",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str, lib: Any) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"


def test_every_public_module_has_examples() -> None:
    for name in MODULES:
        module = importlib.import_module(name)
        tests = doctest.DocTestFinder().find(module)
        assert sum(len(t.examples) for t in tests) > 0, name
