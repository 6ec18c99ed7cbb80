"""The File catalog (docs/format.md, "The catalog"): what a File gives with
it is what the per-column files give, whoever changed them and however."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile

CATALOG = os.path.join(".colfile-catalog", "colfile-catalog-index")


def catalog_of(path: str) -> str:
    return os.path.join(path, CATALOG)


def snapshot(path: str) -> dict[str, Any]:
    """Everything a reader can see of the File."""
    out: dict[str, Any] = {}
    with colfile.File(path) as f:
        out["."] = {k: f.attrs.raw(k) for k in f.attrs}
        for name in f.columns:
            c = f[name]
            out[name] = (c.kind, c.dtype.str, c.shape, c.nfile, c.blob_rows,
                         c.checksums(), {k: c.attrs.raw(k) for k in c.attrs},
                         c[:].tobytes() if c.kind == "data" else None)
    return out


def truth(path: str, tmp: Path) -> dict[str, Any]:
    """The same from the files alone: a copy without the catalog."""
    copy = str(tmp / f"copy{random.random()}")
    shutil.copytree(path, copy, symlinks=True)
    shutil.rmtree(os.path.join(copy, ".colfile-catalog"), ignore_errors=True)
    try:
        return snapshot(copy)
    finally:
        shutil.rmtree(copy)


def random_tree(path: str, seed: int, columns: int | None = None) -> None:
    rng = random.Random(seed)
    with colfile.File(path, "w") as f:
        for i in range(rng.randint(1, 25) if columns is None else columns):
            depth = rng.randint(0, 3)
            name = "/".join([f"g{rng.randint(0, 2)}" for _ in range(depth)] + [f"c{i}"])
            kind = rng.choice(["i1", "f8", "vec", "none", "S3"])
            if kind == "none":
                c = f.create(name, None)
            elif kind == "vec":
                c = f.create(name, data=np.arange(rng.randint(0, 9) * 3.0).reshape(-1, 3),
                             nfile=rng.randint(1, 3))
            elif kind == "S3":
                c = f.create(name, data=np.array([b"ab", b"xyz"]))
            else:
                c = f.create(name, data=np.arange(rng.randint(0, 40)).astype(kind),
                             nfile=rng.randint(0, 4) or None)
            c.attrs["index"] = i
            if rng.random() < 0.3:
                c.attrs["empty"] = np.array([], "f4")  # kept in colfile-attrs
            if rng.random() < 0.3:
                c.attrs["s"] = "text" * rng.randint(1, 3)
        f.attrs["n"] = 1


@pytest.mark.parametrize("seed", range(8))
def test_same_as_the_files_on_random_trees(path: str, tmp_path: Path, seed: int) -> None:
    random_tree(path, seed)
    assert os.path.isfile(catalog_of(path))
    assert snapshot(path) == truth(path, tmp_path)


def test_same_as_the_files_on_a_large_tree(path: str, tmp_path: Path) -> None:
    """Enough columns for the update to read them on several threads
    (catalog_build.c BUILD_MIN), first from the files, then mostly reused."""
    random_tree(path, 99, columns=700)
    assert snapshot(path) == truth(path, tmp_path)
    with colfile.File(path, "a") as f:
        for i in range(0, 700, 50):
            name = next(n for n in f.columns if n.endswith(f"/c{i}") or n == f"c{i}")
            f[name].attrs["index"] = -i
    assert snapshot(path) == truth(path, tmp_path)


def test_written_only_when_something_changed(path: str) -> None:
    random_tree(path, 1)
    before = os.stat(catalog_of(path))
    with colfile.File(path, "a"):
        pass
    with colfile.File(path, "r") as f:
        f.columns  # readers never write it
    after = os.stat(catalog_of(path))
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)
    with colfile.File(path, "a") as f:
        f["c0"].attrs["new"] = 1
    assert os.stat(catalog_of(path)).st_ino != before.st_ino


def test_plain_file_changes_are_seen(path: str, tmp_path: Path) -> None:
    with colfile.File(path, "w") as f:
        for i in range(4):
            f.create(f"c{i}", data=np.arange(4, dtype="i1")).attrs["index"] = i
    # attr-v2 rewritten in place: same size, within the same second
    p = os.path.join(path, "c2", "attr-v2")
    text = Path(p).read_bytes()
    assert b"0200000000000000" in text
    Path(p).write_bytes(text.replace(b"0200000000000000", b"0900000000000000"))
    with colfile.File(path) as f:
        assert int(f["c2"].attrs["index"]) == 9
    # a column added by copying a directory, one removed, one renamed
    shutil.copytree(os.path.join(path, "c0"), os.path.join(path, "new"))
    shutil.rmtree(os.path.join(path, "c1"))
    os.rename(os.path.join(path, "c3"), os.path.join(path, "d3"))
    with colfile.File(path) as f:
        assert f.columns == ["c0", "c2", "d3", "new"]
        assert [int(f[n].attrs["index"]) for n in f.columns] == [0, 9, 3, 0]
    assert snapshot(path) == truth(path, tmp_path)
    # a group gains a header: what was below it is no longer listed
    with colfile.File(path, "a") as f:
        f.create("g/x", data=np.arange(3))
    for leaf in ("000000", "header"):
        shutil.copy(os.path.join(path, "c0", leaf), os.path.join(path, "g", leaf))
    with colfile.File(path) as f:
        assert "g/x" not in f.columns and "g" in f.columns
    assert snapshot(path) == truth(path, tmp_path)


def test_modifications_by_bigfile_are_seen(path: str, tmp_path: Path) -> None:
    bigfile = pytest.importorskip("bigfile")
    with colfile.File(path, "w") as f:
        for i in range(3):
            f.create(f"c{i}", data=np.arange(4, dtype="i8")).attrs["index"] = i
    b = bigfile.File(path)
    assert sorted(b.list_blocks()) == ["c0", "c1", "c2"]  # the catalog is not a block
    with b.open("c1") as blk:
        blk.attrs["index"] = 5  # same size, in place, this same second
    with b.create("c2", dtype="i8", size=4) as blk:
        blk.write(0, np.array([7, 8, 9, 10]))
    with b.create("nb", dtype="f4", size=2) as blk:
        blk.write(0, np.array([1.5, 2.5], "f4"))
    with colfile.File(path) as f:
        assert f.columns == ["c0", "c1", "c2", "nb"]
        assert int(f["c1"].attrs["index"]) == 5
        assert f["c2"][:].tolist() == [7, 8, 9, 10]
        assert f["nb"][:].tolist() == [1.5, 2.5]
    assert snapshot(path) == truth(path, tmp_path)


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "magic-only",
                                    "directory", "link"])
def test_damaged_catalog_is_ignored(path: str, tmp_path: Path, damage: str) -> None:
    random_tree(path, 3)
    want = truth(path, tmp_path)
    cat = catalog_of(path)
    good = Path(cat).read_bytes()
    os.remove(cat)
    rng = random.Random(damage)
    if damage == "truncate":
        Path(cat).write_bytes(good[:rng.randrange(len(good))])
    elif damage == "flip":
        bad = bytearray(good)
        bad[rng.randrange(len(bad))] ^= 0x10
        Path(cat).write_bytes(bytes(bad))
    elif damage == "garbage":
        Path(cat).write_bytes(bytes(rng.randrange(256) for _ in range(len(good))))
    elif damage == "empty":
        Path(cat).write_bytes(b"")
    elif damage == "magic-only":
        Path(cat).write_bytes(good[:8] + b"\xff" * 64)
    elif damage == "directory":
        os.mkdir(cat)
    else:
        os.symlink(str(tmp_path / "elsewhere"), cat)
    assert snapshot(path) == want


def test_catalog_absent_and_unwritable(path: str, tmp_path: Path) -> None:
    random_tree(path, 4)
    want = truth(path, tmp_path)
    shutil.rmtree(os.path.join(path, ".colfile-catalog"))
    assert snapshot(path) == want
    # where it cannot be written, closing a writer still succeeds
    Path(path, ".colfile-catalog").write_bytes(b"not a directory")
    with colfile.File(path, "a") as f:
        f.create("late", data=np.arange(2))
    assert snapshot(path)["late"][7] == np.arange(2).tobytes()
    os.remove(os.path.join(path, ".colfile-catalog"))
    with colfile.File(path, "a"):
        pass  # rebuilt
    assert os.path.isfile(catalog_of(path))
    assert snapshot(path) == truth(path, tmp_path)


def test_truncating_open_removes_it(path: str) -> None:
    random_tree(path, 5)
    with colfile.File(path, "w") as f:
        assert f.columns == []
        f.create("only", data=np.arange(3))
    with colfile.File(path) as f:
        assert f.columns == ["only"]


@pytest.mark.parametrize("how", ["linked blob", "linked attr-v2", "torn"])
def test_columns_it_cannot_vouch_for_are_read_from_their_files(path: str, tmp_path: Path,
                                                               how: str) -> None:
    """A column whose directory holds a symbolic link among colfile's files
    or a torn mark is left to its files (recorded incomplete): opening it
    behaves exactly as without a catalog."""
    with colfile.File(path, "w") as f:
        for name in ("a", "b"):
            f.create(name, data=np.arange(6, dtype="i4"), nfile=2).attrs["k"] = 1
    d = os.path.join(path, "b")
    if how.startswith("linked"):
        leaf = "000001" if how == "linked blob" else "attr-v2"
        target = str(tmp_path / "elsewhere")
        shutil.copy(os.path.join(d, leaf), target)
        os.remove(os.path.join(d, leaf))
        os.symlink(target, os.path.join(d, leaf))
    else:
        Path(d, "colfile-torn").write_bytes(b"")
    with colfile.File(path, "a"):
        pass  # rebuilds the catalog around b
    assert os.path.isfile(catalog_of(path))

    def outcome(p: str) -> Any:
        with colfile.File(p) as f:
            assert f.columns == ["a", "b"]
            assert f["a"][:].tolist() == list(range(6))
            try:
                c = f["b"]
                return ("opened", c[:].tolist(), {k: c.attrs.raw(k) for k in c.attrs})
            except (colfile.Error, OSError) as exc:
                return ("refused", type(exc).__name__)

    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy, symlinks=True)
    shutil.rmtree(os.path.join(copy, ".colfile-catalog"))
    got, want = outcome(path), outcome(copy)
    assert got == want
    assert got[0] == "refused"
