"""The fixed cost of a small read, counted rather than timed.

A program that reads a little of a large File (``bench/peers.py``'s 1% row
read) opens the File, opens each column and reads a slice, every time; on
a warm page cache that fixed cost is a visible share of the read.  It is
pinned here by two counts, which a shared machine cannot blur:

* the system calls of a repeated read-only open and slice read (strace):
  a bounded number, none to place a write's digest (a reader writes
  nothing), and still the one that detects a catalog replaced since the
  File was opened (the reader-version check must stay);
* the Python function calls of the same read (``sys.setprofile``): the
  binding tier adds no layers of calls to the common path.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from childenv import child_env
from stracetool import strace_or_skip

#: system calls of one ``with File(p) as f: f[name][a:b]`` of one column on
#: a warm page cache: open the directory and the catalog (two preads),
#: stat its generation stamp, open the column directory, stat it and its
#: header, open the blob, one pread, and the closes.  A new call on this
#: path must be worth its cost: raise the bound knowingly.
SYSCALLS_PER_READ = 16

#: Python function calls (``sys.setprofile`` "call" events) of the same
#: read, the File opened and closed each time, COLFILE_NO_MMAP unset (37
#: before the binding tier's calls on this path were fused and an unset
#: environment variable was seen without os.environ.get's KeyError)
PY_CALLS_PER_READ = 25

READER = r'''
import os, sys
import colfile
path, n = sys.argv[1], int(sys.argv[2])
def read():
    with colfile.File(path) as f:
        return f["Position"][1000:1100]
read()  # first-call costs: imports, the library, cffi's lookups
os.write(2, b"@@colfile-begin@@\n")
for _ in range(n):
    read()
os.write(2, b"@@colfile-end@@\n")
'''


def _snapshot(path: Path) -> None:
    import colfile

    rng = np.random.default_rng(3)
    with colfile.File(str(path), "w") as f:
        f.create("Position", data=rng.random((20000, 3)))


def _syscalls(strace: str, tmp_path: Path, snap: Path, n: int) -> tuple[collections.Counter[str],
                                                                         list[str]]:
    """The system calls (name -> count) between the markers of READER
    doing ``n`` reads, and their lines."""
    script = tmp_path / "reader.py"
    script.write_text(READER)
    out = tmp_path / f"strace-{n}.txt"
    run = subprocess.run([strace, "-f", "-o", str(out), sys.executable, str(script),
                          str(snap), str(n)], env=child_env(), capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = out.read_text().splitlines()
    # the markers' writes (the script's own text, read at start, holds them too)
    begin = next(i for i, x in enumerate(lines) if 'write(2, "@@colfile-begin@@' in x)
    end = next(i for i, x in enumerate(lines) if 'write(2, "@@colfile-end@@' in x)
    inside = lines[begin + 1:end]
    names: collections.Counter[str] = collections.Counter()
    for x in inside:
        m = re.match(r"(?:\d+\s+)?([a-z_0-9]+)\(", x)
        if m:
            names[m.group(1)] += 1
    return names, inside


def test_syscalls_per_small_read(tmp_path: Path, lib: Any) -> None:
    strace = strace_or_skip("count system calls")
    snap = tmp_path / "snap"
    _snapshot(snap)
    few, _ = _syscalls(strace, tmp_path, snap, 5)
    many, lines = _syscalls(strace, tmp_path, snap, 25)
    per_read = {k: (many[k] - few[k]) / 20 for k in many}
    total = sum(per_read.values())
    assert 0 < total <= SYSCALLS_PER_READ, per_read
    # a read-only File places no digest: no affinity query per open
    assert per_read.get("sched_getaffinity", 0) == 0, per_read
    # one pread of the rows per read (the slice lies in one blob)
    assert per_read.get("pread64", 0) + per_read.get("pread", 0) >= 1, per_read
    # the reader-version check stays: every open looks at the catalog's
    # generation stamp (test_reader_version.py, test_reader_changes.py)
    stamps = sum("colfile-catalog/generation" in x for x in lines)
    assert stamps == 25, stamps


def test_python_calls_per_small_read(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import colfile

    monkeypatch.delenv("COLFILE_NO_MMAP", raising=False)

    with colfile.File(path, "w") as f:
        f.create("Position", data=np.arange(3000.0).reshape(1000, 3))

    def read() -> np.ndarray:
        with colfile.File(path) as f:
            return f["Position"][10:20]

    want = np.arange(3000.0).reshape(1000, 3)[10:20]
    np.testing.assert_array_equal(read(), want)  # first-call costs
    calls = collections.Counter()

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[f"{frame.f_code.co_filename}:{frame.f_code.co_name}"] += 1

    n = 10
    sys.setprofile(count)
    try:
        for _ in range(n):
            got = read()
    finally:
        sys.setprofile(None)
    np.testing.assert_array_equal(got, want)
    # read() itself, and the test's own frames, are not colfile's
    per_read = (sum(calls.values()) - calls[f"{__file__}:read"]) / n
    assert per_read <= PY_CALLS_PER_READ, sorted(calls.items(), key=lambda kv: -kv[1])


def test_read_only_file_places_no_digest(path: str) -> None:
    """A read-only File writes nothing: ``auto`` reports ``inline`` without
    asking for the CPUs (the system call test_syscalls_per_small_read
    counts); an explicit placement is kept as asked."""
    import colfile

    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(10))
    with colfile.File(path) as f:
        assert f.digest_placement == "inline"
        np.testing.assert_array_equal(f["x"][2:5], [2, 3, 4])
    with colfile.File(path, digest="helper") as f:
        assert f.digest_placement == "helper"
    if len(os.sched_getaffinity(0)) >= 2:  # a writer on an idle machine keeps its helper
        with colfile.File(path, "a") as f:
            assert f.digest_placement == "helper"
