"""The sharded File catalog (docs/format.md 8.5) against Files it must not
be fooled by: entries that are not what they seem, copies, hostile or
older catalog files.  In every case the listing through colfile is the
directories' (catalog_oracle)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

import colfile
from catalog_oracle import CAT, assert_lists_as_scanned, scan


def _file(root: Path) -> None:
    with colfile.File(root, "w") as f:
        f.create("a", data=np.arange(3))
        f.create("g/b", data=np.arange(4.0))


def test_a_header_that_is_a_dangling_link_makes_a_column(tmp_path: Path, lib: Any) -> None:
    """2.3: a directory holding an entry named `header` is a column, a
    symbolic link too (colfile then cannot open it, but lists it).  The
    writer building the catalog followed the link, found nothing and
    recorded the directory as an empty group, whose stamp then held: the
    listing lost the column."""
    root = tmp_path / "F"
    _file(root)
    (root / "zq").mkdir()
    os.symlink(tmp_path / "nowhere", root / "zq" / "header")
    (root / "g" / "zr").mkdir()
    os.symlink(tmp_path / "nowhere", root / "g" / "zr" / "header")
    for _ in range(2):  # the second close reuses what the first recorded
        with colfile.File(root, "a"):
            pass
        assert assert_lists_as_scanned(root, cli=True) == ["a", "g/b", "g/zr", "zq"]
