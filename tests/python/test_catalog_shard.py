"""The sharded File catalog (docs/format.md 8.5): an index and one shard
per group or bounded range of columns.  A writable close rewrites the
index and the shards that changed, never the whole catalog; a reader of
one column reads the index and that column's shard; the single-file
catalog of older colfile is read and upgraded; a damaged or missing shard
only costs a directory scan; and whatever sequence of changes, the
listing is the directories' (a scan in Python is the oracle)."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import catalog_shards as cs
import colfile
from catalog_oracle import CAT, keys, scan
from shims import shim_library
from test_catalog_stale import _list_in
from test_golden import CANONICAL, _copy, _lstat_stamp, parse_catalog, write_catalog

GROUPS = [f"g{i}" for i in range(8)]


def _catalog_files(root: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_ino, p.read_bytes())
            for p in (root / CAT).iterdir() if p.name.startswith("colfile-catalog-")}


def _many_groups(root: Path, per_group: int = 5) -> None:
    """Columns of eight groups, and one at the root, whose entries together
    take more than a catalog keeps in its index (48 KiB)."""
    with colfile.File(root, "w") as f:
        for i, g in enumerate(GROUPS):
            for j in range(per_group):
                f.create(f"{g}/c{j}", data=np.arange(5, dtype="i8") + 10 * i + j)
                f[f"{g}/c{j}"].attrs["pad"] = "x" * 2000
        f.create("top", data=np.arange(3, dtype="f8"))
    with colfile.File(root, "a"):
        pass  # every stamp old enough to trust: the catalog complete and settled


def _shard_of(root: Path, name: str) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    index = cs.read_index(root)
    for shard in index["shards"]:
        if shard["first"] <= name.encode() <= shard["last"]:
            return index, shard, cs.read_shard(root, shard)
    raise AssertionError(f"no shard holds {name}")


def _falsify(root: Path, name: str) -> bytes:
    """Make the catalog's copy of name's header say 4 rows instead of 5
    (stamps untouched), shard and index rewritten consistently; returns
    the shard's previous bytes."""
    index, shard, cols = _shard_of(root, name)
    old = (root / CAT / shard["file"]).read_bytes()
    for c in cols:
        if c["name"] == name.encode():
            state, st, data = c["files"][0]
            assert state == 1 and b"000000: 5 : " in data, data
            c["files"][0] = (state, st, data.replace(b"000000: 5 : ", b"000000: 4 : "))
    cs.write_shard(root, shard, cols)
    cs.write_index(root, index)
    return old


def test_closing_one_column_rewrites_only_its_shard(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    _many_groups(root)
    index = cs.read_index(root)
    assert len(index["shards"]) == len(GROUPS) + 1  # one per group, and the root's
    assert all(s["file"] for s in index["shards"])
    before = _catalog_files(root)
    with colfile.File(root, "a"):
        pass  # nothing changed: nothing rewritten
    assert _catalog_files(root) == before
    with colfile.File(root, "a") as f:
        f["g3/c2"].attrs["note"] = 1.5
    after = _catalog_files(root)
    gone, added = set(before) - set(after), set(after) - set(before)
    assert len(gone) == 1 and len(added) == 1, (gone, added)  # one shard replaced
    (new,) = added
    assert [c["name"] for c in cs.read_shard(root, next(
        s for s in cs.read_index(root)["shards"] if s["file"] == new))] == [f"g3/c{j}".encode() for j in range(5)]
    for name in set(before) & set(after):
        if name != cs.INDEX:
            assert after[name] == before[name], name  # same inode, same bytes
    assert after[cs.INDEX] != before[cs.INDEX]
    rewritten = len(after[cs.INDEX][1]) + len(after[new][1])
    total = sum(len(v[1]) for v in after.values())
    assert rewritten * 4 < total, (rewritten, total)
    with colfile.File(root) as f:
        assert f["g3/c2"].attrs["note"] == 1.5
        assert list(f.keys()) == scan(root)


def test_a_column_is_opened_from_its_shard_alone(tmp_path: Path, lib: Any) -> None:
    """With every other shard gone, a column is still opened from the
    catalog (its false header, kept only there, is what the reader sees),
    and the listing, which needs every shard, is the directories'."""
    root = tmp_path / "F"
    _many_groups(root)
    _falsify(root, "g2/c0")
    index, shard, _ = _shard_of(root, "g2/c0")
    for other in index["shards"]:
        if other["file"] != shard["file"]:
            os.unlink(root / CAT / other["file"])
    with colfile.File(root) as f:
        assert f["g2/c0"].size == 4
        assert f["g5/c1"][:].tolist() == list(range(51, 56))  # from its files
        assert list(f.keys()) == scan(root)


@pytest.mark.parametrize("damage", ["flip", "truncate", "missing", "older", "index"])
def test_a_damaged_shard_falls_back_to_the_files(tmp_path: Path, lib: Any, damage: str) -> None:
    root = tmp_path / "F"
    _many_groups(root)
    previous = _falsify(root, "g2/c0")
    with colfile.File(root) as f:
        assert f["g2/c0"].size == 4  # the intact shard is used
    _, shard, _ = _shard_of(root, "g2/c0")
    p = root / CAT / shard["file"]
    buf = bytearray(p.read_bytes())
    if damage == "flip":
        buf[len(buf) // 2] ^= 0x10
        p.write_bytes(bytes(buf))
    elif damage == "truncate":
        p.write_bytes(bytes(buf[:-9]))
    elif damage == "missing":
        p.unlink()
    elif damage == "older":  # a valid shard, but not the one the index names
        p.write_bytes(previous)
    else:  # the index damaged: no catalog at all
        q = root / CAT / cs.INDEX
        ib = bytearray(q.read_bytes())
        ib[20] ^= 1
        q.write_bytes(bytes(ib))
    with colfile.File(root) as f:
        assert list(f.keys()) == scan(root)
        assert f["g2/c0"].size == 5
        assert f["g2/c0"][:].tolist() == list(range(20, 25))
    with colfile.File(root, "a"):
        pass  # the next writer repairs it
    assert cs.read_catalog(root)["cols"] and keys(root) == scan(root)
    with colfile.File(root) as f:
        assert f["g2/c0"].size == 5


def test_a_column_added_by_another_process_in_the_same_second(tmp_path: Path, lib: Any) -> None:
    """A reader holding the catalog lists a column another process added
    even when the directories' timestamps do not show it (set back, as a
    file system keeping whole seconds or a client's stale cache would):
    the writer bumped the File's generation."""
    root = tmp_path / "F"
    _many_groups(root)
    times = {d: os.stat(d) for d in (root, root / "g1")}
    with colfile.File(root) as reader:
        assert list(reader.keys()) == scan(root)
        code = textwrap.dedent(f"""
            import numpy as np, colfile
            with colfile.File({str(root)!r}, "a") as f:
                f.create("g1/new", data=np.arange(4))
        """)
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
        for d, st in times.items():
            os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert "g1/new" in reader.keys()
        assert list(reader.keys()) == scan(root)
    assert "g1/new" in keys(root)


def test_coarse_timestamps_a_column_added_by_bigfile_behind_the_stamps(
        tmp_path: Path, tmp_path_factory: Any, lib: Any) -> None:
    """A sharded catalog whose every stamp holds but which lacks a column
    that a writer without generations (bigfile) put into an existing group
    -- what a client whose view of the group's timestamps has not caught up
    sees; made here by giving the index the directories' present stamps --
    is trusted where timestamps prove freshness; where they cannot (a statfs
    shim reporting Lustre), the group's entries show the column: listed,
    the catalog called stale."""
    bigfile = pytest.importorskip("bigfile")
    root = tmp_path / "F"
    _many_groups(root)
    listed = scan(root)
    with bigfile.File(str(root)) as bf:
        bf.create_from_array("g4/new", np.arange(6, dtype="i8"))
    index = cs.read_index(root)
    stamp_of = _lstat_stamp(root)
    index["dirs"] = [(path, tuple(int.from_bytes(stamp_of(path.decode())[k:k + 8], "little")
                                  for k in range(0, 56, 8))) for path, _ in index["dirs"]]
    cs.write_index(root, index)
    fine = _list_in(root, None)
    assert fine["keys"] == listed and not fine["stale"]
    coarse = _list_in(root, shim_library(tmp_path_factory, "catalog", "fstypeshim"))
    assert coarse["keys"] == scan(root) == sorted(listed + ["g4/new"])
    assert coarse["stale"] and coarse["warned"] == 1


def test_the_single_file_catalog_is_read_and_upgraded(tmp_path: Path, lib: Any) -> None:
    """A catalog of colfile before shards (colfile-catalog-v1, the
    canonical one given the copy's stamps, with a false header that only
    it holds) is used; a writer's close replaces it with an index and
    shards that keep its entries (their stamps still hold), so the false
    header survives the upgrade, and the single file is gone."""
    golden = _copy(tmp_path)
    cat = parse_catalog(CANONICAL.read_bytes())
    i = [c["name"] for c in cat["cols"]].index(b"crc/check")
    state, st, data = cat["cols"][i]["files"][0]
    cat["cols"][i]["files"][0] = (state, st, data.replace(b"9 : 477 : 477", b"4 : 202 : 202"))
    (golden / CAT).mkdir()
    (golden / CAT / "colfile-catalog-v1").write_bytes(write_catalog(cat, _lstat_stamp(golden)))
    with colfile.File(str(golden)) as f:
        assert f["crc/check"].size == 4
    with colfile.File(str(golden), "a"):
        pass
    assert not (golden / CAT / "colfile-catalog-v1").exists()
    upgraded = cs.read_catalog(golden)
    assert sorted(c["name"].decode() for c in upgraded["cols"]) == scan(golden)
    (entry,) = [c for c in upgraded["cols"] if c["name"] == b"crc/check"]
    assert b"4 : 202 : 202" in entry["files"][0][2]
    with colfile.File(str(golden)) as f:
        assert f["crc/check"].size == 4
        assert list(f.keys()) == scan(golden)


def _random_steps(root: Path, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    values: dict[str, int] = {}
    serial = 0
    groups = ["", "a/", "b/", "b/c/", "d/"]
    for _ in range(steps):
        with colfile.File(root, "a") as f:
            for _op in range(rng.randint(1, 3)):
                op = rng.random()
                if op < 0.5 or not values:
                    name = f"{rng.choice(groups)}x{serial}"
                    serial += 1
                    f.create(name, data=np.array([serial]))
                    values[name] = serial
                elif op < 0.75:
                    name = rng.choice(sorted(values))
                    del f[name]
                    del values[name]
                else:
                    name = rng.choice(sorted(values))
                    dest = f"{rng.choice(groups)}m{serial}"
                    serial += 1
                    f.move(name, dest)
                    values[dest] = values.pop(name)
        if values and rng.random() < 0.2:  # a writer that does not bump the generation (a copy by hand)
            name = rng.choice(sorted(values))
            dest = f"{rng.choice(groups)}h{serial}"
            serial += 1
            shutil.copytree(root / name, root / dest)
            values[dest] = values[name]
        expect = sorted(values)
        assert scan(root) == expect
        with colfile.File(root) as f:
            assert list(f.keys()) == expect
            for name in rng.sample(expect, min(3, len(expect))):
                assert f[name][:].tolist() == [values[name]]


def test_a_small_catalog_is_one_file(tmp_path: Path, lib: Any) -> None:
    """Shards that take at most 48 KiB together are kept in the index: a
    small File's catalog is one file; once it grows, shards get files of
    their own, and the index takes them back when it shrinks."""
    root = tmp_path / "F"
    with colfile.File(root, "w") as f:
        f.create("a", data=np.arange(3))
        f.create("g/b", data=np.arange(4))
    assert sorted(_catalog_files(root)) == [cs.INDEX]
    assert [s["file"] for s in cs.read_index(root)["shards"]] == ["", ""]
    with colfile.File(root, "a") as f:
        for j in range(30):
            f.create(f"g/p{j}", data=np.arange(2))
            f[f"g/p{j}"].attrs["pad"] = "y" * 2000
    assert len(_catalog_files(root)) > 1 and all(s["file"] for s in cs.read_index(root)["shards"])
    with colfile.File(root, "a") as f:
        for j in range(30):
            del f[f"g/p{j}"]
    assert sorted(_catalog_files(root)) == [cs.INDEX]
    with colfile.File(root) as f:
        assert list(f.keys()) == scan(root) == ["a", "g/b"]
        assert f["g/b"][:].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("seed", range(4))
def test_random_changes_across_groups_list_as_the_directories(tmp_path: Path, lib: Any, seed: int) -> None:
    root = tmp_path / "F"
    with colfile.File(root, "w"):
        pass
    _random_steps(root, seed, 14)
    with colfile.File(root, "a"):
        pass
    assert sorted(c["name"].decode() for c in cs.read_catalog(root)["cols"]) == scan(root)
