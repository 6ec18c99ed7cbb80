"""The sharded File catalog (docs/format.md 8.5) against Files it must not
be fooled by: entries that are not what they seem, copies, hostile or
older catalog files.  In every case the listing through colfile is the
directories' (catalog_oracle)."""
from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import catalog_shards as cs
import colfile
from catalog_oracle import CAT, assert_lists_as_scanned, catalog_current, keys, padded_file, scan


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


def _settled(root: Path) -> None:
    _file(root)
    padded_file(root, {f"{g}/c{j}": np.arange(4) + j for g in ("g", "h") for j in range(3)}, 9000,
                ("a", np.arange(3)))


@pytest.mark.parametrize("how", ["cp -r", "cp -a"])
def test_a_copied_file_changed_by_hand_lists_its_directories(tmp_path: Path, lib: Any, how: str) -> None:
    """A copy (new inodes; `cp -a` keeps mtimes) carries the catalog and
    generation of the original: changed by hand afterwards, where no
    generation moves, it still lists what its directories hold."""
    root, copy = tmp_path / "F", tmp_path / "C"
    _settled(root)
    if how == "cp -r":
        shutil.copytree(root, copy, copy_function=shutil.copyfile)
    else:
        shutil.copytree(root, copy, symlinks=True)
    assert_lists_as_scanned(copy)
    shutil.rmtree(copy / "g" / "c1")
    shutil.copytree(copy / "h" / "c0", copy / "h" / "new", copy_function=shutil.copyfile)
    assert assert_lists_as_scanned(copy, cli=True) == ["a", "g/c0", "g/c2", "h/c0", "h/c1", "h/c2", "h/new"]
    with colfile.File(copy, "a"):
        pass
    assert_lists_as_scanned(copy)
    assert catalog_current(copy)
    assert keys(root) == scan(root) == ["a", "g/c0", "g/c1", "g/c2", "h/c0", "h/c1", "h/c2"]


def _hostile_variants(root: Path) -> dict[str, Any]:
    index = cs.read_index(root)
    shard = index["shards"][0]
    cols = cs.read_shard(root, shard)

    def huge_count() -> None:
        out = bytearray((root / CAT / shard["file"]).read_bytes())
        struct.pack_into("<Q", out, 8, 2**62)
        body = bytes(out[:-4])
        (root / CAT / shard["file"]).write_bytes(body + struct.pack("<I", cs.crc32c(body)))
        shard.update(size=len(out), crc=cs.crc32c(body))
        cs.write_index(root, index)

    def huge_dirs() -> None:
        buf = bytearray((root / CAT / cs.INDEX).read_bytes())
        struct.pack_into("<Q", buf, 16, 2**60)
        body = bytes(buf[:-4])
        (root / CAT / cs.INDEX).write_bytes(body + struct.pack("<I", cs.crc32c(body)))

    def rename_first(name: bytes) -> Any:
        def go() -> None:
            cols[0]["name"] = name
            shard["first"] = name
            cs.write_shard(root, shard, cols)
            cs.write_index(root, index)
        return go

    def shard_outside() -> None:
        (tmp := root.parent / "outside").write_bytes((root / CAT / shard["file"]).read_bytes())
        shard["file"] = "colfile-catalog-shard-../../" + tmp.name
        cs.write_index(root, index)

    def group_dotdot() -> None:
        index["dirs"].append((b"../escape", index["dirs"][0][1]))
        cs.write_index(root, index)

    return {"huge column count": huge_count, "huge directory count": huge_dirs,
            "column ../": rename_first(b"../a"), "column with NUL": rename_first(b"a\0zzz"),
            "column absolute": rename_first(b"/etc"), "shard name ../": shard_outside,
            "group ../": group_dotdot}


@pytest.mark.parametrize("variant", ["huge column count", "huge directory count", "column ../",
                                     "column with NUL", "column absolute", "shard name ../", "group ../"])
def test_hostile_catalog_files_are_not_used(tmp_path: Path, lib: Any, variant: str) -> None:
    """Catalog files with a valid CRC32C but impossible content: no
    allocation of their counts, nothing outside the File read or removed,
    the listing the directories'; the next writer replaces them."""
    root = tmp_path / "F"
    _settled(root)
    _hostile_variants(root)[variant]()
    outside = root.parent / "outside"
    before = outside.read_bytes() if outside.exists() else None
    assert_lists_as_scanned(root, cli=True)
    with colfile.File(root) as f:
        assert f["a"][:].tolist() == [0, 1, 2]
    with colfile.File(root, "a"):
        pass
    assert_lists_as_scanned(root)
    assert catalog_current(root)
    if before is not None:
        assert outside.read_bytes() == before


def test_an_older_colfiles_catalog_next_to_the_index(tmp_path: Path, lib: Any) -> None:
    """colfile before shards (reading and writing colfile-catalog-v1 only)
    ran on the File after this one: it changed the listing and left its
    single file next to the index, which is now stale.  Neither is trusted
    past its stamps; the next writer keeps the index and drops the file."""
    from test_golden import _lstat_stamp, write_catalog

    root = tmp_path / "F"
    _settled(root)
    with colfile.File(root, "a") as f:
        f.create("h/added", data=np.arange(2))
    # what the older colfile would write: its catalog of the File as it is
    cat = cs.read_catalog(root)
    (root / CAT / "colfile-catalog-v1").write_bytes(write_catalog(cat, _lstat_stamp(root)))
    with colfile.File(root, "a") as f:  # a change the index does not know
        del f["g/c0"]
    assert assert_lists_as_scanned(root, cli=True)[:2] == ["a", "g/c1"]
    with colfile.File(root, "a"):
        pass
    assert not (root / CAT / "colfile-catalog-v1").exists()
    assert catalog_current(root)
    assert_lists_as_scanned(root)


def test_an_older_catalog_and_generation_put_back(tmp_path: Path, lib: Any) -> None:
    """The catalog directory as it was before a change (a backup put back,
    or a power loss that kept neither the generation's last bytes nor the
    newer catalog): its generation is the File's again by accident, yet the
    stamps show the change."""
    root = tmp_path / "F"
    _settled(root)
    saved = tmp_path / "saved"
    shutil.copytree(root / CAT, saved)
    with colfile.File(root, "a") as f:
        f.create("g/new", data=np.arange(5))
        del f["h/c1"]
        f["a"].attrs["x"] = 1
    for p in (root / CAT).iterdir():  # (the directory stays: the root's stamp holds)
        p.unlink()
    for p in saved.iterdir():
        shutil.copy2(p, root / CAT / p.name)
    with colfile.File(root) as f:
        assert f["g/new"][:].tolist() == list(range(5))
        assert "x" in f["a"].attrs
    assert assert_lists_as_scanned(root, cli=True) == ["a", "g/c0", "g/c1", "g/c2", "g/new", "h/c0", "h/c2"]
