"""Fixtures of the ``colfile`` command line tests.

``cli`` (from tests/python/conftest.py) runs ``colfile.cli.main``
in-process and returns (status, stdout, stderr).  ``sample`` is a small File written through the API; ``bigfile_set``
is the read-only bigfile 0.1.52 fixture set (never written: tests that
modify a File copy it to tmp_path first, and a session check makes sure the
set is unchanged at the end).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = Path(os.environ.get("COLFILE_BIGFILE_FIXTURES",
                               REPO.parent / "shared" / "fixtures" / "bigfile-0.1.52"))


def _tree_digest(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            p = os.path.join(dirpath, fn)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = "dir"
    return out


@pytest.fixture(scope="session", autouse=True)
def _fixture_set_untouched() -> Any:
    """The shared fixture set is read-only for these tests: compare every
    file and directory before and after the session."""
    if not FIXTURES.is_dir():
        yield
        return
    before = _tree_digest(FIXTURES)
    yield
    after = _tree_digest(FIXTURES)
    assert after == before, "the CLI tests modified the shared bigfile fixture set"


@pytest.fixture
def sample(tmp_path: Path, lib: Any) -> str:
    """A File with scalar, vector, bool, bytes and header-only columns in
    groups, and attributes at every level."""
    import colfile

    rng = np.random.default_rng(7)
    path = tmp_path / "snap"
    with colfile.File(path, "w") as f:
        f.create("1/ID", data=np.arange(10, dtype="u8") * 3 + 2**63, nfile=3)
        f.create("1/Position", data=rng.normal(size=(10, 3)) * 1e3, nfile=2)
        f.create("1/Mass", data=rng.random(10).astype(">f4"))
        f.create("2/Flag", data=rng.random(4) > 0.5)
        f.create("2/Vel", data=rng.normal(size=(4, 2)).astype("f4"))
        f.create("Name", data=np.array([b"alpha", b"b,c", b'q"t', b"\xff\x01", b"x\ny"]))
        f.create("Z", data=(rng.normal(size=5) + 1j * rng.normal(size=5)).astype("c8"))
        f.create("meta", None)
        f["meta"].attrs["Version"] = "1.0"
        f.attrs["BoxSize"] = 1000.0
        f.attrs["Unit"] = "Mpc/h"
        f["1/"].attrs["Count"] = 10
        f["1/Position"].attrs["Unit"] = "kpc/h"
        f["1/Position"].attrs["Origin"] = np.array([0.5, 1.5, -2.0])
    return str(path)


@pytest.fixture
def bigfile_set() -> Path:
    if not (FIXTURES / "manifest.json").is_file():
        pytest.skip(f"bigfile fixture set not found at {FIXTURES}")
    return FIXTURES


@pytest.fixture
def manifest(bigfile_set: Path) -> dict[str, Any]:
    with open(bigfile_set / "manifest.json") as fh:
        return json.load(fh)


@pytest.fixture
def writable_copy(tmp_path: Path, bigfile_set: Path) -> Callable[[str], str]:
    """copy("main") -> path of a writable copy of that tree."""

    def copy(tree: str) -> str:
        dst = tmp_path / "copy" / tree
        shutil.copytree(bigfile_set / tree, dst)
        for dirpath, dirnames, filenames in os.walk(dst):
            os.chmod(dirpath, 0o755)
            for fn in filenames:
                os.chmod(os.path.join(dirpath, fn), 0o644)
        return str(dst)

    return copy
