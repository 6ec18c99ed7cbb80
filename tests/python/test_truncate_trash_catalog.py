"""A truncation that meets another truncation's live trash (a hidden
directory holding that File's content, catalog included, until it is
removed) takes it for File content: the concurrency harness once saw
`File(path, "w")` refused because of the moved `.colfile-catalog/generation`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import colfile


def test_truncate_accepts_a_moved_catalog(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    with colfile.File(root, "w") as f:
        f.create("a", data=np.arange(3))
    assert (root / ".colfile-catalog" / "generation").is_file()
    # what another truncation leaves while it runs: the File moved into its trash
    trash = root / ".colfile-trash.colfile-truncate.1.0000abcd"
    (trash / ".colfile-catalog").mkdir(parents=True)
    (trash / ".colfile-catalog" / "generation").write_bytes(b"\n\n")
    (trash / ".colfile-catalog" / "colfile-catalog-index").write_bytes(b"CFIDX3\n\0")
    with colfile.File(root, "w") as f:
        assert list(f.keys()) == []
        f.create("b", data=np.arange(2))
    with colfile.File(root) as f:
        assert list(f.keys()) == ["b"]


def test_truncate_still_refuses_a_foreign_file(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    with colfile.File(root, "w") as f:
        f.create("a", data=np.arange(3))
    (root / "g").mkdir()
    (root / "g" / "generation").write_bytes(b"mine")  # not in a catalog directory
    try:
        colfile.File(root, "w").close()
    except colfile.Error as exc:
        assert "generation" in str(exc) and "not part of" in str(exc)
    else:
        raise AssertionError("a foreign file was truncated away")
    assert (root / "g" / "generation").read_bytes() == b"mine"
