"""A writer killed, or the power lost, at each file operation of a
writable close that changes columns and updates the sharded catalog
(docs/format.md 8.5; tests/crash/faultshim.c).  After every crash point
the listing through colfile is the directories' (catalog_oracle); the
next writer's close leaves a catalog that is current and, once they are
old, nothing in the catalog directory that no reader uses (what
cf__cat_remove_unused removes)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile
from catalog_faults import CHANGES, count_operations, crash_writer
from catalog_oracle import CAT, assert_lists_as_scanned, catalog_current, catalog_leftovers, padded_file

WRITER = """
import sys, numpy as np, colfile
with colfile.File(sys.argv[1], "a") as f:
    f.create("g1/new", data=np.arange(5))
    del f["g2/c0"]
    f["g3/c1"].attrs["note"] = 2.5
"""


def _make(root: Path) -> None:
    padded_file(root, {f"g{i}/c{j}": np.arange(5) + 10 * i + j for i in range(4) for j in range(3)}, 5000,
                ("top", np.arange(3.0)))


@pytest.fixture(scope="module")
def crash_points(tmp_path_factory: pytest.TempPathFactory, lib: Any) -> list[int]:
    """The changing operations of the writer from its first commit on."""
    d = tmp_path_factory.mktemp("count")
    _make(d / "F")
    ops = count_operations(WRITER, d / "F", d / "report")
    points = [int(n) for n, cls, _ in ops if cls in CHANGES]
    assert any("colfile-catalog-index" in what for _, cls, what in ops if cls == "rename"), ops
    return points


def _check_after_crash(root: Path, what: str) -> None:
    try:
        assert_lists_as_scanned(root)
        with colfile.File(root, "a") as f:
            f.create("after", data=np.arange(2))
        assert_lists_as_scanned(root)
        assert catalog_current(root)
        # what the crash left there goes once it is old (a writer updating
        # at the same time may be about to name a young shard)
        for name in catalog_leftovers(root):
            p = root / CAT / name
            os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns - 7200 * 10**9))
        with colfile.File(root, "a"):
            pass
        assert catalog_leftovers(root) == []
        assert_lists_as_scanned(root)
    except AssertionError as exc:
        raise AssertionError(f"{what}: {exc}") from exc


@pytest.mark.parametrize("action", ["kill", "powerloss"])
def test_crash_at_every_operation_of_a_closing_writer(tmp_path: Path, crash_points: list[int],
                                                       action: str) -> None:
    failures = []
    for at in crash_points:
        d = tmp_path / f"at{at}"
        (d / "J").mkdir(parents=True)
        _make(d / "F")
        crash_writer(WRITER, d / "F", at, action, d / "J")
        try:
            _check_after_crash(d / "F", f"{action} at {at}")
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)
