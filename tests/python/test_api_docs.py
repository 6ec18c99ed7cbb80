"""The API reference (docs/api, built by `./run test` with sphinx-build -W)
covers the whole public API: every function the C headers export appears
as a C declaration, and every public Python name is documented."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
HEADERS = ["include/colfile.h", "include/colfile_mpi.h", "include/colfile_binding.h", "include/colfile_stream.h"]


@pytest.fixture(scope="module")
def cheader():
    pytest.importorskip("sphinx")  # the docs extra; installed by ./run test
    sys.path.insert(0, str(API))
    try:
        import cheader as mod
    finally:
        sys.path.remove(str(API))
    return mod


@pytest.mark.parametrize("header", HEADERS)
def test_every_exported_function_is_declared(cheader, header: str) -> None:
    """Each `CF_API` declaration becomes one c:function with its contract
    (the comment above it), so a header change cannot drop one silently."""
    source = (ROOT / header).read_text()
    exported = set(re.findall(r"^CF_API\b[^;(]*?\b(\w+)\s*\(", source, re.M))
    assert len(exported) > 5
    rst = cheader.render(header, source)
    declared = set()
    for i, line in enumerate(rst):
        if not line.startswith(".. c:function:: "):
            continue
        sigs = [line[len(".. c:function:: "):]]
        while rst[i + len(sigs)].startswith(" " * len(".. c:function:: ")):
            sigs.append(rst[i + len(sigs)].strip())
        names = [re.search(r"(\w+)\s*\(", s).group(1) for s in sigs]
        declared.update(names)
        assert rst[i + len(sigs) + 1].strip() == ".. code-block:: text", f"{names} have no comment"
    assert declared == exported
    assert ".. c-header:: " + header in (API / "c.rst").read_text()


def test_header_sections_become_headings(cheader) -> None:
    rst = cheader.render("include/colfile.h", (ROOT / "include/colfile.h").read_text())
    headings = [rst[i - 1] for i, line in enumerate(rst) if line and set(line) == {"~"}]
    assert {"Errors", "Files", "Columns", "Attributes"} <= set(headings)


def test_every_public_python_name_is_documented() -> None:
    import colfile
    import colfile.errors

    text = (API / "python.rst").read_text()
    directed = set(re.findall(r"^\.\. auto\w+:: colfile\.(\w+)\s*$", text, re.M))
    modules = set(re.findall(r"^\.\. automodule:: (colfile[\w.]*)\s*\n   :members:", text, re.M))
    assert {"colfile.errors", "colfile.mpi", "colfile.compat.bigfile"} <= modules
    missing = [n for n in colfile.__all__ if not n.startswith("_") and n != "errors"
               and n not in directed and n not in colfile.errors.__all__]
    assert missing == []
