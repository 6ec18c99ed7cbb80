"""Streams under power loss (tests/crash/faultshim.so): a writer that
creates a stream, appends, flushes twice, and then reopens it and appends
and flushes again, loses power before each of its file operations in
turn (everything not yet durable undone, then SIGKILL; also with half of
the changes not durable kept at random).  Every time the stream is absent
(no commit finished) or exactly the state of a commit that finished or was
in flight, every row verified against the chunk CRC32Cs (docs/format.md
8.7, docs/reliability.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import colfile
import colfile.stream as cs

# The writer logs, outside the File and fsynced, each commit it starts and
# finishes with the rows every task then has.
WRITER = r"""
import os, sys, numpy as np, colfile, colfile.stream as cs
path, log = sys.argv[1], sys.argv[2]
def note(line):
    with open(log, "a") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())
n = [0, 0, 0]
def grow(w, step):
    for t in range(3) if step == 3 else range(1):  # file 1 (tasks 1, 2) made only after the reopen
        k = (step * (t + 2)) % 11 * 40   # uneven, crossing chunks
        w.task(t).append(np.arange(n[t], n[t] + k) + t * 10**9)
        n[t] += k
def commit(w):
    note("begin " + " ".join(map(str, n)))
    w.flush()
    note("done " + " ".join(map(str, n)))
f = colfile.File(path, "a")
w = cs.create(f, "s", "<i8", tasks=3, files=2, chunk=4096, align=4096)
grow(w, 1); commit(w)
grow(w, 2); commit(w)
w.discard()
w = cs.reopen(f, "s")
grow(w, 3); commit(w)
w.close()
f.close()
"""


def shim() -> Path:
    build = os.environ.get("COLFILE_C_BUILD")
    so = Path(build) / "tests" / "crash" / "faultshim.so" if build else None
    if so is None or not so.exists():
        if os.environ.get("CI"):
            pytest.fail("no faultshim.so in COLFILE_C_BUILD (CI is set)")
        pytest.skip("no faultshim.so in COLFILE_C_BUILD")
    return so


def run(tmp: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    tmp.mkdir()
    path, log = tmp / "F", tmp / "log"
    path.mkdir()
    proc = subprocess.run([sys.executable, "-c", WRITER, str(path), str(log)], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)
    return proc, path, log


def states(log: Path) -> tuple[list[tuple[int, ...]], tuple[int, ...] | None]:
    """The states of the commits that finished, and of the one in flight."""
    done: list[tuple[int, ...]] = []
    flight = None
    for line in (log.read_text().splitlines() if log.exists() else []):
        word, *nums = line.split()
        state = tuple(int(x) for x in nums)
        if word == "begin":
            flight = state
        else:
            done.append(state)
            flight = None
    return done, flight


def test_power_loss_before_every_operation(tmp_path: Path) -> None:
    so = shim()
    report = tmp_path / "report"
    proc, _, log = run(tmp_path / "count", {"LD_PRELOAD": str(so), "CF_FAULT_SCOPE": str(tmp_path / "count" / "F"),
                                            "CF_FAULT_MODE": "count", "CF_FAULT_REPORT": str(report)})
    assert proc.returncode == 0, proc.stderr
    assert len(states(log)[0]) == 3
    ops = [ln.split() for ln in report.read_text().splitlines()[1:] if not ln.startswith("a")]
    assert len(ops) > 20
    # every operation; a third of them keeping half of what is not durable;
    # after the reopen, the table's rename kept and nothing else, so that a
    # physical file made since the last commit must already be durable
    last = max(i for i, op in enumerate(ops) if op[1] == "rename" and op[-1].endswith("colfile-stream-v1"))
    reopened = max(i for i, op in enumerate(ops[:last]) if op[1] == "rename" and op[-1].endswith("colfile-stream-v1"))
    trials = [(int(op[0]), None) for op in ops] + [(int(op[0]), "0.5") for op in ops[::3]] + \
        [(int(op[0]), "names") for op in ops[reopened + 1:]]
    outcomes = set()
    for k, keep in trials:
        d = tmp_path / f"t{k}-{keep}"
        journal = tmp_path / f"j{k}-{keep}"
        journal.mkdir()
        env = {"LD_PRELOAD": str(so), "CF_FAULT_SCOPE": str(d / "F"), "CF_FAULT_AT": str(k),
               "CF_FAULT_ACTION": "powerloss", "CF_FAULT_JOURNAL": str(journal)}
        if keep == "names":
            env.update(CF_FAULT_KEEP_NAMES="colfile-stream-v1")
        elif keep:
            env.update(CF_FAULT_KEEP=keep, CF_FAULT_SEED=str(k))
        proc, path, log = run(d, env)
        assert proc.returncode == -9, (k, proc.stderr[-2000:])
        done, flight = states(log)
        allowed = [done[-1]] if done else []
        if flight is not None:
            allowed.append(flight)
        where = f"power lost before operation {k} ({ops[k - 1][1:]}), keep={keep}: committed {done}, in flight {flight}"
        with colfile.File(path, "a") as f:
            if not cs.list_streams(f):
                assert not done, where
                outcomes.add("absent")
                continue
            s = cs.open(f, "s", verify=True)
            sizes = tuple(s.task_size(t) for t in range(3))
            assert sizes in allowed, (sizes, where)
            for t in range(3):
                np.testing.assert_array_equal(s.task(t), np.arange(sizes[t]) + t * 10**9, err_msg=where)
            outcomes.add(f"commit {s.commit}")
    # the sweep reached every stage: before the first commit and after each
    assert {"absent", "commit 1", "commit 2", "commit 3"} <= outcomes, outcomes
