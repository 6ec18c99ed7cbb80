"""Streams under a kill harness: a writer appending and flushing in a loop
is killed (SIGKILL) at random moments; every time the stream is absent
(no commit yet) or exactly one of the states it committed, verified
against the chunk CRC32Cs (docs/format.md 8.7, docs/reliability.md)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import colfile
import colfile.stream as cs

WRITER = r"""
import sys, numpy as np, colfile, colfile.stream as cs
path = sys.argv[1]
f = colfile.File(path, "a")
w = cs.create(f, "s", "<i8", tasks=3, files=2, chunk=4096, align=4096)
n = [0, 0, 0]
for step in range(1, 10**6):
    for t in range(3):
        k = (step * (t + 1)) % 37          # uneven, sometimes zero rows
        w.task(t).append(np.arange(n[t], n[t] + k) + t * 10**9)
        n[t] += k
    if step % 5 == 0:
        w.flush()
        print("committed", *n, flush=True)
"""


def committed_states(lines: list[str]) -> list[tuple[int, ...]]:
    return [tuple(int(x) for x in ln.split()[1:]) for ln in lines if ln.startswith("committed")]


@pytest.mark.parametrize("seed", range(12))
def test_killed_at_random_moments(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "f"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    assert proc.stdout is not None
    lines: list[str] = []
    # a kill before the first commit in some trials, after some commits in others
    want = rng.choice([0, 1, 2, 5, 9])
    deadline = time.monotonic() + 60
    while len(committed_states(lines)) < want and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
    time.sleep(rng.random() * 0.05)
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate(timeout=60)
    lines += rest.splitlines()
    assert proc.returncode == -9
    seen = committed_states(lines)
    with colfile.File(path, "a") as f:
        if not cs.list_streams(f):
            assert seen == []  # absent only before the first commit
            with pytest.raises(colfile.errors.ColumnNotFoundError):
                cs.open(f, "s")
            f.cleanup()  # what the writer left: its staging directory
            assert not [p for p in os.listdir(path) if p.startswith(".colfile-stage.")]
            return
        s = cs.open(f, "s", verify=True)
        sizes = tuple(s.task_size(t) for t in range(3))
        # the state of a commit that happened, perhaps not yet reported
        assert s.commit >= len(seen)
        if s.commit <= len(seen):
            assert sizes == seen[s.commit - 1]
        for t in range(3):
            np.testing.assert_array_equal(s.task(t), np.arange(sizes[t]) + t * 10**9)
        assert s[:].size == sum(sizes)
