"""A dtype a collective create cannot store fails on every rank with the
column's path and the message the C layer gives (tests/mpi/test_mpi_dtype.c
expects the same texts), hint included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import same_on_all_ranks

import colfile

CASES = [
    ("f3", "unreasonable dtype 'f3': kind 'f' has no width 3 (allowed: 2, 4 or 8)"),
    ("U4", "unreasonable dtype 'U4': unsupported kind 'U' (colfile stores i u f c b S)"),
    ("<double", "unreasonable dtype '<double': unsupported kind 'd' (colfile stores i u f c b S); "
                "did you mean '<f8'?"),
]


@pytest.mark.parametrize("spec,why", CASES)
def test_create_names_column(comm: Any, shared: Path, spec: str, why: str) -> None:
    path = shared / "f"
    with colfile.File(path, "w", comm=comm) as f:
        with pytest.raises(colfile.DTypeError) as info:
            f.create("x", spec, size=4)
        msg = same_on_all_ranks(comm, str(info.value))
        assert msg == f"rank 0: {path}/x: {why}"
        assert f.columns == []


def test_numpy_names_are_taken(comm: Any, shared: Path) -> None:
    """numpy's spelling works in Python (the C layer suggests the token)."""
    with colfile.File(shared / "f", "w", comm=comm) as f:
        assert f.create("x", "float64", size=4).dtype == "f8"
