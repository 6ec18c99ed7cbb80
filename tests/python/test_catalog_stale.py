"""Writers that do not record the File's generation (docs/format.md 8.5):
bigfile 0.1.52, a column directory copied in by hand, colfile before
generations.  Their change is seen through the directory stamps; a reader
that finds the File's listing changed while the generation did not reads
the directories (so the listing is right), warns once
(:class:`colfile.CatalogWarning`), sets ``File.catalog_stale`` and
``colfile ls -l``/``colfile check`` print a note naming ``colfile index``,
which rebuilds the catalog."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile
from colfile.cli import main
from shims import shim_library
from test_golden import CANONICAL, _copy, _lstat_stamp, parse_catalog, write_catalog

bigfile = pytest.importorskip("bigfile")


def _make(root: Path) -> None:
    with colfile.File(root, "w") as f:
        f.create("a", data=np.arange(5, dtype="f8"))
        f.create("g/b", data=np.arange(3, dtype="i4"))
    assert (root / ".colfile-catalog" / "colfile-catalog-index").is_file()


def _keys(root: Path) -> tuple[list[str], list[warnings.WarningMessage], bool]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with colfile.File(root) as f:
            keys = list(f.keys())
            stale = f.catalog_stale
    return keys, [w for w in caught if issubclass(w.category, colfile.CatalogWarning)], stale


def test_a_column_bigfile_added_is_listed_and_the_catalog_called_stale(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    _make(root)
    keys, warned, stale = _keys(root)  # the catalog, current
    assert keys == ["a", "g/b"] and not warned and not stale
    with bigfile.File(str(root)) as bf:
        bf.create_from_array("new", np.arange(7, dtype="i8"))
    keys, warned, stale = _keys(root)
    assert keys == ["a", "g/b", "new"]
    assert stale and len(warned) == 1
    msg = str(warned[0].message)
    assert str(root) in msg and "colfile index" in msg and "bigfile" in msg
    with colfile.File(root) as f:
        np.testing.assert_array_equal(f["new"][:], np.arange(7))
    # colfile index rebuilds it: no warning after
    assert main(["index", str(root)]) == 0
    keys, warned, stale = _keys(root)
    assert keys == ["a", "g/b", "new"] and not warned and not stale


def test_one_handle_warns_once(tmp_path: Path, lib: Any) -> None:
    """A handle listed before bigfile's change lists the new column after
    it, and warns once however often it lists."""
    root = tmp_path / "F"
    _make(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with colfile.File(root) as f:
            assert f.keys() == ["a", "g/b"]
            with bigfile.File(str(root)) as bf:
                bf.create_from_array("g/c", np.arange(2, dtype="f4"))
            assert f.keys() == ["a", "g/b", "g/c"]
            assert f["g/"].keys() == ["b", "c"]
            assert f.catalog_stale
    assert sum(issubclass(w.category, colfile.CatalogWarning) for w in caught) == 1


def test_a_column_copied_in_or_removed_by_hand(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    _make(root)
    shutil.copytree(root / "a", root / "copy")  # cp -r
    keys, warned, stale = _keys(root)
    assert keys == ["a", "copy", "g/b"] and stale and len(warned) == 1
    assert main(["index", str(root)]) == 0
    shutil.rmtree(root / "g")  # rm -r, which no generation records
    keys, warned, stale = _keys(root)
    assert keys == ["a", "copy"] and stale and len(warned) == 1


def test_colfile_writers_leave_no_warning(tmp_path: Path, lib: Any) -> None:
    """A colfile writer bumps the generation: the catalog is then simply
    not used, nothing is stale; nor does a change that keeps the listing
    (attributes, rows updated in place) make it stale."""
    root = tmp_path / "F"
    _make(root)
    # a C-level writer leaves the catalog as it was but bumps the generation
    f = colfile.File(root, "a")
    f.create("c", data=np.arange(2))
    f["a"].attrs["unit"] = "m"
    f["a"][0] = 9.0
    keys, warned, stale = _keys(root)
    assert keys == ["a", "c", "g/b"] and not warned and not stale
    f.close()
    keys, warned, stale = _keys(root)
    assert keys == ["a", "c", "g/b"] and not warned and not stale


def test_ls_and_check_print_a_note(tmp_path: Path, lib: Any, capsys: Any) -> None:
    root = tmp_path / "F"
    _make(root)
    with bigfile.File(str(root)) as bf:
        bf.create_from_array("new", np.arange(4, dtype="i8"))
    assert main(["ls", "-l", str(root)]) == 0
    out = capsys.readouterr().out
    assert "new" in out
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "colfile index" in notes[0] and "stale" in notes[0]
    assert main(["check", str(root)]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("note:") and "colfile index" in line for line in out.splitlines())
    assert main(["ls", str(root)]) == 0  # without -l: on stderr
    got = capsys.readouterr()
    assert "note:" not in got.out and "colfile index" in got.err
    assert main(["ls", "--json", str(root)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "new" in [c["name"] for c in doc["columns"]] and "colfile index" in doc["catalog_stale"]
    assert main(["index", str(root)]) == 0
    capsys.readouterr()
    assert main(["ls", "-l", str(root)]) == 0
    got = capsys.readouterr()
    assert "note:" not in got.out and "note:" not in got.err
    assert main(["ls", "--json", str(root)]) == 0
    assert "catalog_stale" not in json.loads(capsys.readouterr().out)


def test_a_writable_file_rebuilds_it_without_warning(tmp_path: Path, lib: Any) -> None:
    """A writable File's close rebuilds the catalog: it lists the new
    column, does not warn, and leaves a catalog that is current again."""
    root = tmp_path / "F"
    _make(root)
    with bigfile.File(str(root)) as bf:
        bf.create_from_array("new", np.arange(4, dtype="i8"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with colfile.File(root, "a") as f:
            assert f.keys() == ["a", "g/b", "new"]
            assert f.catalog_stale
    assert not [w for w in caught if issubclass(w.category, colfile.CatalogWarning)]
    keys, warned, stale = _keys(root)
    assert keys == ["a", "g/b", "new"] and not warned and not stale


_LIST = """
import json, sys, warnings
import colfile
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with colfile.File(sys.argv[1]) as f:  # the bulk attribute read lists too
        with_attrs = sorted(f.column_attrs())
    with colfile.File(sys.argv[1]) as f:
        keys = f.keys()
        stale = f.catalog_stale
assert with_attrs == keys, (with_attrs, keys)
print(json.dumps({"keys": keys, "stale": stale,
                  "warned": sum(issubclass(w.category, colfile.CatalogWarning) for w in caught)}))
"""


def _list_in(root: Path, preload: Path | None) -> dict[str, Any]:
    env = dict(os.environ)
    if preload is not None:
        env["LD_PRELOAD"] = str(preload)
    out = subprocess.run([sys.executable, "-c", _LIST, str(root)], env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return json.loads(out.splitlines()[-1])


def test_coarse_timestamps_the_entries_show_a_new_group_or_column(
        tmp_path: Path, tmp_path_factory: Any, lib: Any) -> None:
    """Where timestamps cannot prove freshness (here: a statfs shim reporting
    Lustre), a catalog whose every stamp still matches -- as on a client
    whose view of the root's timestamps has not caught up with another
    node's bigfile writer -- is used for the listing only while the
    subdirectories of the root and of every group are the recorded ones.  The catalog here has the stamps
    of the File as it is, but not the group crc2/ copied in after it was
    built (the cheapest way to make a stamp that does not show a change on
    a local file system): a local file system's reader trusts it; with the
    shim the group is listed and the catalog called stale."""
    golden = _copy(tmp_path)
    shutil.copytree(golden / "crc", golden / "crc2")  # the writer on "another node"
    cat = parse_catalog(CANONICAL.read_bytes())
    (golden / ".colfile-catalog").mkdir()
    tmp = golden / ".colfile-catalog" / "new"
    tmp.write_bytes(write_catalog(cat, _lstat_stamp(golden)))
    os.rename(tmp, golden / ".colfile-catalog" / "colfile-catalog-v1")
    listed = sorted(n.decode() for n in (c["name"] for c in cat["cols"]))
    fine = _list_in(golden, None)
    assert fine["keys"] == listed and not fine["stale"] and fine["warned"] == 0
    shim = shim_library(tmp_path_factory, "catalog", "fstypeshim")
    coarse = _list_in(golden, shim)
    added = sorted("crc2/" + n[len("crc/"):] for n in listed if n.startswith("crc/"))
    assert added and coarse["keys"] == sorted(listed + added)
    assert coarse["stale"] and coarse["warned"] == 1
    # Every group's entries are checked there, not only the root's: a
    # column copied into an existing group behind its stamps is listed too.
    shutil.rmtree(golden / "crc2")
    shutil.copytree(golden / "crc" / "check", golden / "crc" / "check2")
    tmp.write_bytes(write_catalog(cat, _lstat_stamp(golden)))
    os.rename(tmp, golden / ".colfile-catalog" / "colfile-catalog-v1")
    fine = _list_in(golden, None)
    assert fine["keys"] == listed and not fine["stale"]
    again = _list_in(golden, shim)
    assert again["keys"] == sorted(listed + ["crc/check2"]) and again["stale"] and again["warned"] == 1
