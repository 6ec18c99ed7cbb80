"""The marks of the File's generation (docs/format.md 8.5): a colfile
writer appends ``+`` to ``.colfile-catalog/generation`` before each change
to the listing (fsynced when durable) and ``-`` once it is in place.

A writer killed between its change and its ``-`` (tests/crash/faultshim.c
kills it at every changing file operation of its close) leaves a listing
that is right and no :class:`colfile.CatalogWarning`: the change is a
colfile writer's, not one that does not know the generation.  After a
power loss at any of those operations the generation is never below the
one a catalog on disk records (a catalog built before a change is never
taken as current), the listing is right and nothing warns.  The next
writer's close matches a dead writer's ``+``, so that a later foreign
change (bigfile) is called out again."""
from __future__ import annotations

import struct
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import catalog_shards as cs
import colfile
from catalog_faults import CHANGES, count_operations, crash_writer
from catalog_oracle import CAT, catalog_current, padded_file, scan

bigfile = pytest.importorskip("bigfile")

WRITER = """
import sys, numpy as np, colfile
with colfile.File(sys.argv[1], "a") as f:
    f.create("g1/new", data=np.arange(5))
    f.create("top", data=np.arange(4.0), overwrite=True)
    del f["g2/c0"]
"""


def _make(root: Path) -> None:
    padded_file(root, {f"g{i}/c{j}": np.arange(5) + 10 * i + j for i in range(3) for j in range(2)}, 9000,
                ("top", np.arange(3.0)))


def _open_marks(root: Path, upto: int | None = None) -> int:
    """The ``+`` of the generation file (its first ``upto`` bytes) no later
    ``-`` matched."""
    p = root / CAT / "generation"
    n = 0
    for b in (p.read_bytes() if p.exists() else b"")[:upto]:
        if b == ord("+"):
            n += 1
        elif b == ord("-") and n:
            n -= 1
    return n


def _read(root: Path) -> tuple[list[str], list[str], bool]:
    """A read-only File's listing, the CatalogWarnings it gave, and
    File.catalog_stale."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with colfile.File(root) as f:
            keys = sorted(f.keys())
            stale = f.catalog_stale
    return keys, [str(w.message) for w in caught if issubclass(w.category, colfile.CatalogWarning)], stale


def _recorded(root: Path) -> int | None:
    """The generation the index on disk records, or None (none, or not valid)."""
    try:
        return int(cs.read_index(root)["generation"])
    except (OSError, AssertionError, struct.error):
        return None


@pytest.fixture(scope="module")
def crash_points(tmp_path_factory: pytest.TempPathFactory, lib: Any) -> list[int]:
    d = tmp_path_factory.mktemp("count")
    _make(d / "F")
    ops = count_operations(WRITER, d / "F", d / "report")
    # the operations between the first commit and the index's rename: every
    # step of a closing writer's changes and of its catalog update
    assert any("generation" in what for _, cls, what in ops if cls == "write"), ops
    return [int(n) for n, cls, _ in ops if cls in CHANGES]


def _record_holds(root: Path) -> str | None:
    """What is wrong with the marks the index on disk records (the '+' open
    in the generation file's first `generation` bytes), or None."""
    try:
        index = cs.read_index(root)
    except (OSError, AssertionError, struct.error):
        return None  # none, or not valid: nothing recorded
    gen = root / CAT / "generation"
    size = gen.stat().st_size if gen.exists() else 0
    if index["marks"] is None or size < index["generation"]:
        return None  # checked by the caller where it matters
    counted = _open_marks(root, index["generation"])
    if index["marks"] != counted:
        return f"the index records {index['marks']} marks open at {index['generation']}, the file {counted}"
    return None


def _after_crash(root: Path, what: str, failures: list[str]) -> None:
    wrong = _record_holds(root)
    if wrong:
        failures.append(f"{what}: {wrong}")
    keys, warned, stale = _read(root)
    if keys != scan(root):
        failures.append(f"{what}: listed {keys}, the directories hold {scan(root)}")
    if warned or stale:
        failures.append(f"{what}: a colfile writer's change called a foreign writer's: {warned} stale={stale}")
    # the next writer's close leaves a current catalog and no open mark
    with colfile.File(root, "a"):
        pass
    if not catalog_current(root) or _open_marks(root) or cs.read_index(root)["marks"] != 0:
        failures.append(f"{what}: after the next close: current={catalog_current(root)} "
                        f"open marks={_open_marks(root)} recorded={cs.read_index(root)['marks']}")


@pytest.mark.parametrize("action", ["kill", "powerloss"])
def test_crash_at_every_operation_gives_no_false_warning(tmp_path: Path, crash_points: list[int],
                                                         action: str) -> None:
    failures: list[str] = []
    for at in crash_points:
        d = tmp_path / f"at{at}"
        (d / "J").mkdir(parents=True)
        _make(d / "F")
        crash_writer(WRITER, d / "F", at, action, d / "J")
        root = d / "F"
        if action == "powerloss":
            # the generation only grows: never below what a catalog records
            gen = root / CAT / "generation"
            size = gen.stat().st_size if gen.exists() else 0
            recorded = _recorded(root)
            if recorded is not None and size < recorded:
                failures.append(f"powerloss at {at}: generation {size} below the index's {recorded}")
        _after_crash(root, f"{action} at {at}", failures)
    assert not failures, "\n".join(failures)


def test_a_writer_killed_inside_its_change_excuses_no_later_foreign_change(tmp_path: Path, lib: Any) -> None:
    """Killed after its '+' (at its first rename): the next close waits for
    it a moment, then matches its '+'; a column bigfile adds afterwards is
    called out as ever."""
    d = tmp_path / "k"
    (d / "J").mkdir(parents=True)
    root = d / "F"
    _make(root)
    report = tmp_path / "report"
    ops = count_operations(WRITER, root, report)
    first_rename = next(int(n) for n, cls, what in ops if cls == "rename" and "g1/new" in what)
    root2 = d / "F2"
    _make(root2)
    crash_writer(WRITER, root2, first_rename, "kill", d / "J")
    assert _open_marks(root2) == 1
    t0 = time.monotonic()
    with colfile.File(root2, "a"):
        pass
    assert time.monotonic() - t0 >= 1.0  # it waited for the writer to finish its change
    assert _open_marks(root2) == 0 and catalog_current(root2)
    with bigfile.File(str(root2)) as bf:
        bf.create_from_array("foreign", np.arange(7, dtype="i8"))
    keys, warned, stale = _read(root2)
    assert keys == scan(root2) and "foreign" in keys
    assert stale and len(warned) == 1 and "colfile index" in warned[0]


def test_a_listing_that_differs_while_a_mark_is_open_is_the_writers_change(tmp_path: Path, lib: Any) -> None:
    """A catalog of the current generation, built while a writer was inside
    its change (its '+' written, its rename not yet made; the update that
    built it took more than its wait to come), and the writer killed after
    its rename: the new column is listed and nothing warns; the same
    generation without the open mark (a '-' in its place) is a foreign
    writer's change and warns."""
    root = tmp_path / "F"
    with colfile.File(root, "w") as f:
        f.create("a", data=np.arange(5))
        f.create("g/b", data=np.arange(3))
    gen = root / CAT / "generation"
    assert gen.read_bytes() == b"+-+-"
    # the catalog as such an update leaves it: the generation after the
    # '+', which it records open
    with open(gen, "ab") as fh:
        fh.write(b"+")
    index = cs.read_index(root)
    assert index["marks"] == 0
    cs.write_index(root, {**index, "generation": 5, "marks": 1})
    assert _recorded(root) == 5
    # the writer's rename: its column, complete, under its name
    with colfile.File(tmp_path / "elsewhere", "w") as f:
        f.create("c", data=np.arange(2))
    (tmp_path / "elsewhere" / "c").rename(root / "c")
    keys, warned, stale = _read(root)
    assert keys == ["a", "c", "g/b"]
    assert not warned and not stale
    # the same bytes but for the mark: no colfile writer is inside a change
    gen.write_bytes(b"+-+-\n")
    cs.write_index(root, {**index, "generation": 5, "marks": 0})
    keys, warned, stale = _read(root)
    assert keys == ["a", "c", "g/b"]
    assert stale and len(warned) == 1
