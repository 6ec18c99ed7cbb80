"""The marks of a File's generation are counted from what its catalog
records (docs/format.md 8.5): the index keeps, beside the generation, the
number of ``+`` open in the generation file's first that many bytes, so
that a writer's close (its catalog update) and a reader that finds the
listing changed read only the bytes appended since, not two bytes for
every change the File ever had.

Shown two ways: a prefix rewritten in place (every byte a ``+``, which a
count from the start would take for a million writers inside their
change) changes nothing a close or a reader does; and the bytes a close
reads from the generation file, counted with strace, stay a few while the
file holds a megabyte.  A record the file does not bear out (an index from
before the field, a file shorter than recorded, a byte before the
generation that colfile never appends, a foreign byte after it) is not
trusted: the marks are counted from the start, as before."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import catalog_shards as cs
import colfile
from catalog_oracle import CAT, catalog_current
from childenv import child_env

bigfile = pytest.importorskip("bigfile")

#: closed marks of a File with a long history: a million changes
HISTORY = b"+-" * 500_000


def _open_marks(data: bytes) -> int:
    n = 0
    for b in data:
        if b == ord("+"):
            n += 1
        elif b == ord("-") and n:
            n -= 1
    return n


def _with_history(root: Path) -> int:
    """A File with columns a and g/b whose generation file holds HISTORY
    before its own marks, and a current catalog recording it: its size."""
    with colfile.File(root, "w") as f:
        f.create("a", data=np.arange(5))
        f.create("g/b", data=np.arange(3))
    gen = root / CAT / "generation"
    gen.write_bytes(HISTORY + gen.read_bytes())
    colfile.File(root, "a").close()  # an update: counts it once, records it
    index = cs.read_index(root)
    assert index["generation"] == gen.stat().st_size == len(HISTORY) + 4 and index["marks"] == 0
    return index["generation"]


def _rewrite_prefix(root: Path, upto: int) -> None:
    """Every byte of the generation file before byte upto - 1 made a '+',
    in place: what a count from the start sees as writers inside their
    change; the record, continued from, does not read them."""
    with open(root / CAT / "generation", "r+b") as fh:
        fh.write(b"+" * (upto - 1))


def _read(root: Path) -> tuple[list[str], list[str], bool]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with colfile.File(root) as f:
            keys = sorted(f.keys())
            stale = f.catalog_stale
    return keys, [str(w.message) for w in caught if issubclass(w.category, colfile.CatalogWarning)], stale


def test_a_close_counts_only_the_marks_after_the_record(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    g = _with_history(root)
    _rewrite_prefix(root, g)
    gen = root / CAT / "generation"
    before = gen.read_bytes()
    assert _open_marks(before) == g - 2
    with colfile.File(root, "a") as f:
        f.create("c", data=np.arange(2))
    # its own marks and nothing else: no wait for the "writers" of the
    # rewritten prefix, no '-' appended for them
    assert gen.read_bytes() == before + b"+-"
    index = cs.read_index(root)
    assert (index["generation"], index["marks"]) == (g + 2, 0)
    assert catalog_current(root)
    with colfile.File(root) as f:
        assert sorted(f.keys()) == ["a", "c", "g/b"]


def test_a_reader_takes_the_open_marks_from_the_record(tmp_path: Path, lib: Any) -> None:
    """A listing that differs from a catalog of the current generation is
    a foreign writer's unless the record says a '+' is open: the prefix
    is not read for that either."""
    root = tmp_path / "F"
    g = _with_history(root)
    _rewrite_prefix(root, g)
    with bigfile.File(str(root)) as bf:
        bf.create_from_array("foreign", np.arange(7, dtype="i8"))
    keys, warned, stale = _read(root)
    assert keys == ["a", "foreign", "g/b"]
    assert stale and len(warned) == 1 and "colfile index" in warned[0]


def _strace() -> str:
    strace = shutil.which("strace")
    if strace is None or subprocess.run([strace, "-f", "-o", os.devnull, "true"],
                                        capture_output=True).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("strace is needed to count the bytes read")
        pytest.skip("strace not found or cannot trace here")
    return strace


CLOSER = """
import sys, numpy as np, colfile
with colfile.File(sys.argv[1], "a") as f:
    f.create(sys.argv[2], data=np.arange(4))
"""


def _generation_bytes_read(strace: str, tmp_path: Path, root: Path, name: str) -> int:
    """The bytes a writer adding column `name` (and closing: the catalog
    update) reads from the generation file, as strace shows them."""
    out = tmp_path / f"strace-{name}.txt"
    run = subprocess.run([strace, "-f", "-y", "-e", "trace=read,pread64,readv,preadv,preadv2", "-o", str(out),
                          sys.executable, "-c", CLOSER, str(root), name],
                         env=child_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    total = 0
    for line in out.read_text().splitlines():
        m = re.search(r"\((\d+)<([^>]*)>.*\)\s+=\s+(\d+)", line)
        if m and m.group(2).endswith(f"/{CAT}/generation"):
            total += int(m.group(3))
    return total


def test_a_close_reads_the_bytes_appended_since_the_record(tmp_path: Path, lib: Any) -> None:
    strace = _strace()
    root = tmp_path / "F"
    g = _with_history(root)
    # the fd's path is how strace names the file: it must be seen at all
    first = _generation_bytes_read(strace, tmp_path, root, "c")
    assert 0 < first <= 16, first  # its own two marks and the byte before the record
    assert (root / CAT / "generation").stat().st_size == g + 2
    assert _generation_bytes_read(strace, tmp_path, root, "d") <= 16


# ---- records the file does not bear out: counted from the start ----------


def _dead_writer(root: Path) -> Path:
    """A File whose generation file holds one '+' no '-' matched (a writer
    killed inside its change) before its own closed marks."""
    with colfile.File(root, "w") as f:
        f.create("a", data=np.arange(5))
    gen = root / CAT / "generation"
    gen.write_bytes(b"+" + gen.read_bytes())
    return gen


def _set_record(root: Path, generation: int, marks: int | None) -> None:
    index = cs.read_index(root)
    cs.write_index(root, {**index, "generation": generation, "marks": marks})


def _close_matches_the_dead_mark(root: Path, gen: Path) -> None:
    """The next writer's close counts from the start: it finds the dead
    writer's '+', matches it, and records the count the file gives."""
    before = gen.read_bytes()
    colfile.File(root, "a").close()
    after = gen.read_bytes()
    assert after == before + b"-", (before, after)
    index = cs.read_index(root)
    assert (index["generation"], index["marks"]) == (len(after), _open_marks(after)) == (len(after), 0)
    assert catalog_current(root)


def test_an_index_before_the_field_is_read_and_counted_from_the_start(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    gen = _dead_writer(root)
    _set_record(root, gen.stat().st_size, None)  # CFIDX3, at the current generation
    assert (root / CAT / cs.INDEX).read_bytes()[:8] == b"CFIDX3\n\0"
    # read: a foreign column is compared with its listing (so it was
    # loaded), and the dead writer's open '+' (counted from the start)
    # takes the blame
    with bigfile.File(str(root)) as bf:
        bf.create_from_array("foreign", np.arange(7, dtype="i8"))
    keys, warned, stale = _read(root)
    assert keys == ["a", "foreign"] and not warned and not stale
    _close_matches_the_dead_mark(root, gen)
    assert (root / CAT / cs.INDEX).read_bytes()[:8] == b"CFIDX4\n\0"


def test_a_file_shorter_than_recorded_is_counted_from_the_start(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    gen = _dead_writer(root)
    _set_record(root, gen.stat().st_size + 10, 0)  # a tail lost with the power
    _close_matches_the_dead_mark(root, gen)


def test_a_byte_before_the_record_that_is_no_mark_is_counted_from_the_start(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    gen = _dead_writer(root)
    gen.write_bytes(gen.read_bytes() + b"\0" * 4)  # what a lost tail reads back as
    _set_record(root, gen.stat().st_size, 0)
    _close_matches_the_dead_mark(root, gen)


def test_a_foreign_byte_after_the_record_is_counted_from_the_start(tmp_path: Path, lib: Any) -> None:
    root = tmp_path / "F"
    gen = _dead_writer(root)
    _set_record(root, gen.stat().st_size, 0)  # wrong, and nothing before it shows it
    with open(gen, "ab") as fh:
        fh.write(b"x")
    _close_matches_the_dead_mark(root, gen)


def test_a_reader_does_not_trust_a_record_the_file_does_not_bear_out(tmp_path: Path, lib: Any) -> None:
    """At the catalog's generation, a byte before it that colfile never
    appends: the open '+' is counted from the start and excuses the
    change, as without the record."""
    root = tmp_path / "F"
    gen = _dead_writer(root)
    gen.write_bytes(gen.read_bytes() + b"\0")
    _set_record(root, gen.stat().st_size, 0)
    with bigfile.File(str(root)) as bf:
        bf.create_from_array("foreign", np.arange(7, dtype="i8"))
    keys, warned, stale = _read(root)
    assert keys == ["a", "foreign"] and not warned and not stale
