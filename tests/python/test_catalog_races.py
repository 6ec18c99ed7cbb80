"""Two processes on one File at once, around the sharded catalog's update
(docs/format.md 8.5): the delay shim (tests/concurrency/delayshim.c)
holds one writer at a chosen file operation of its close while the other
acts, every time.  The listing through colfile stays the directories'
(catalog_oracle), and once both are done the catalog on disk is current
(a reader lists from it instead of scanning every directory)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import colfile
from catalog_oracle import assert_lists_as_scanned, catalog_current, padded_file
from childenv import child_env
from shims import shim_library

HOLD_US = 3_000_000

WRITER = """
import sys, numpy as np, colfile
with colfile.File(sys.argv[1], "a") as f:
    f.create("g1/held", data=np.arange(6))
print("closed")
"""


@pytest.fixture(scope="module")
def delayshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shim_library(tmp_path_factory, "concurrency", "delayshim")


def _make(root: Path) -> None:
    padded_file(root, {f"{g}/c{j}": np.arange(4) + j for g in ("g1", "g2", "g3") for j in range(3)}, 7000,
                ("top", np.arange(2.0)))


def _hold_writer_while(root: Path, delayshim: Path, calls: str, match: str, act: Callable[[], None],
                       skip: int = 0) -> None:
    """Run WRITER held (HOLD_US) at its first `calls` (after `skip` of
    them) of a path whose last component contains `match`; act() while it
    is held."""
    note = root.parent / "held"
    env = child_env(LD_PRELOAD=str(delayshim), CF_DELAY_SCOPE=str(root), CF_DELAY_CALLS=calls,
                    CF_DELAY_MATCH=match, CF_DELAY_NOTE=str(note),
                    CF_DELAY_MIN_US=str(HOLD_US), CF_DELAY_MAX_US=str(HOLD_US), CF_DELAY_SKIP=str(skip))
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(root)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not note.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the writer never reached the operation"
            time.sleep(0.002)
        act()
        assert child.poll() is None, "acted after the hold"
    finally:
        out, err = child.communicate(timeout=120)
    assert child.returncode == 0 and out.strip() == "closed", err[-3000:]


def _create_elsewhere(root: Path) -> None:
    with colfile.File(root, "a") as f:
        f.create("g2/other", data=np.arange(3))


def _remove_group(root: Path) -> None:
    with colfile.File(root, "a") as f:
        del f["g3/"]


ACTS: dict[str, Callable[[Path], None]] = {
    "create in another group": _create_elsewhere,
    "remove a group": _remove_group,
    "group removed by hand": lambda root: shutil.rmtree(root / "g3"),
    "group renamed by hand": lambda root: (root / "g3").rename(root / "g4"),
    "column copied in by hand": lambda root: shutil.copytree(root / "g2" / "c0", root / "g3" / "copied"),
}


@pytest.mark.parametrize("act", sorted(ACTS))
@pytest.mark.parametrize("at", ["index", "shard"])
def test_another_process_acts_while_a_writer_updates_the_catalog(tmp_path: Path, lib: Any, delayshim: Path,
                                                                 act: str, at: str) -> None:
    """The held writer built its catalog before the other change and writes
    it after: the listing is still the directories', and (for a colfile
    writer, which bumps the generation) the catalog ends current."""
    root = tmp_path / "F"
    _make(root)
    match = "colfile-catalog-index" if at == "index" else "colfile-catalog-shard-"
    _hold_writer_while(root, delayshim, "rename", match, lambda: ACTS[act](root))
    assert_lists_as_scanned(root, cli=True)
    if act in ("create in another group", "remove a group"):
        assert catalog_current(root), "the last writer's catalog is stale: every reader scans"


def test_a_group_made_a_column_between_the_walk_and_the_groups_stamp(tmp_path: Path, lib: Any,
                                                                    delayshim: Path) -> None:
    """The catalog's walk found no header in group g3, then takes g3's stamp
    to record it as a group; a header put there just before by hand (a
    writer that keeps no generation) is in that stamp.  Such a stamp is
    newer than the clock read before it, so it is not trusted and no
    stale listing is kept (a header made earlier than that, in the instant
    between the walk's look and the stamp, is found by a second look after
    the stamp).  The writer (its lstats of g3: the walk's, the stamp, the
    final check) is held at the stamp while the header is made."""
    root = tmp_path / "F"
    _make(root)

    def make_column() -> None:
        shutil.copyfile(root / "g1" / "c0" / "header", root / "g3" / "header")

    _hold_writer_while(root, delayshim, "lstat", "g3", make_column, skip=1)
    assert assert_lists_as_scanned(root, cli=True) == sorted(
        ["g1/c0", "g1/c1", "g1/c2", "g1/held", "g2/c0", "g2/c1", "g2/c2", "g3", "top"])


def test_a_reader_opened_before_another_writers_update(tmp_path: Path, lib: Any) -> None:
    """A reader loaded the index at its open; another process then changes
    one group and closes, replacing that group's shard (the old one is
    removed).  The reader's later lookups and listings are the files'."""
    root = tmp_path / "F"
    _make(root)
    with colfile.File(root) as reader:
        code = ("import numpy as np, colfile\n"
                f"with colfile.File({str(root)!r}, 'a') as f:\n"
                "    del f['g1/c0']\n"
                "    f.create('g1/c0', data=np.arange(9))\n"
                "    f.create('g1/more', data=np.arange(2))\n")
        subprocess.run([sys.executable, "-c", code], env=child_env(), check=True, timeout=120)
        assert reader["g1/c0"][:].tolist() == list(range(9))
        assert reader["g2/c1"][:].tolist() == [1, 2, 3, 4]
        assert list(reader.keys()) == assert_lists_as_scanned(root)
    assert catalog_current(root)
