"""Appends of every size (1 byte to beyond a chunk), however a task's bytes
are cut into appends: the stream's files are the same bytes as when each
task appends everything at once (small appends wait in the task's buffer,
large ones are written at once, a task alone in its file writes across
chunks in one call), and each commit holds exactly what was appended
before it (read back with every chunk's CRC32C checked, and its
statistics those of its rows)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colfile
import colfile.stream as cs

CHUNK = 8192  # the buffer's 256 KiB spans many chunks; an append of 64 KiB or more is written at once
SIZES = st.one_of(st.integers(1, 300), st.integers(300, 3 * CHUNK), st.integers(64 << 10, 80 << 10))
# (dtype, nmemb, tasks, files): raw bytes; int rows of 2 (exact sums); tasks sharing a file or alone
KINDS = [("raw", 1, 3, 1), ("<i4", 2, 3, 3), ("<i4", 2, 4, 2)]


def rows_of(kind: tuple[str, int, int, int], task: int, start: int, n: int) -> np.ndarray:
    """Rows start .. start+n of a task: values that say where they are."""
    dt, nmemb = kind[0], kind[1]
    if dt == "raw":
        return ((np.arange(start, start + n) * 7 + task * 31) % 251).astype(np.uint8)
    v = np.arange(start * nmemb, (start + n) * nmemb, dtype=np.int64)
    return ((v * 13 + task * 1000) % 100003 - 50000).astype(dt).reshape(n, nmemb)


def write(path: Path, kind: tuple[str, int, int, int], appends: list[tuple[int, int]],
          flush_every: int = 0) -> list[int]:
    """Stream "s" of a new File at path from these (task, rows) appends;
    its rows per task."""
    dt, nmemb, tasks, files = kind
    done = [0] * tasks
    with colfile.File(str(path), "w", durable=False) as f:
        w = cs.create(f, "s", dt, nmemb=nmemb, tasks=tasks, files=files, chunk=CHUNK, align=4096)
        for i, (t, n) in enumerate(appends):
            w.task(t).append(rows_of(kind, t, done[t], n))
            done[t] += n
            if flush_every and i % flush_every == flush_every - 1:
                w.flush()
                check(f, kind, done)
        w.close()
    return done


def check(f: colfile.File, kind: tuple[str, int, int, int], done: list[int]) -> None:
    """The committed stream holds `done` rows of each task, their CRC32Cs
    checked, and each chunk's statistics are its rows'."""
    dt, nmemb, tasks, _ = kind
    s = cs.open(f, "s", verify=True)
    rowbytes = nmemb * (1 if dt == "raw" else np.dtype(dt).itemsize)
    for t in range(tasks):
        want = rows_of(kind, t, 0, done[t])
        assert np.array_equal(s.task(t).reshape(want.shape), want)
    if dt != "raw":
        stats = s.chunk_stats()
        k = 0
        for t in range(tasks):
            rows = rows_of(kind, t, 0, done[t])
            for b in range(-(-done[t] * rowbytes // CHUNK)):
                first = -(-b * CHUNK // rowbytes)  # the rows that start in chunk b
                stop = min(done[t], -(-(b + 1) * CHUNK // rowbytes))
                for j in range(nmemb):
                    rec, vals = stats[k, j], rows[first:stop, j]
                    assert rec["count"] == len(vals)
                    if len(vals):
                        assert (rec["min"], rec["max"]) == (vals.min(), vals.max())
                        assert rec["sum"] == math.fsum(vals.tolist())
                k += 1
        assert k == len(stats)
    s.close()


def files_of(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((path / "s").iterdir())}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(KINDS), data=st.data())
def test_any_cut_same_bytes(tmp_path_factory: object, kind: tuple[str, int, int, int], data: st.DataObject) -> None:
    dt, nmemb, tasks, _ = kind
    rowbytes = nmemb * (1 if dt == "raw" else np.dtype(dt).itemsize)
    appends = data.draw(st.lists(st.tuples(st.integers(0, tasks - 1), SIZES), min_size=1, max_size=40))
    appends = [(t, max(1, n // rowbytes)) for t, n in appends]
    d = Path(tmp_path_factory.mktemp("cut"))  # type: ignore[attr-defined]
    done = write(d / "cut", kind, appends)
    whole = write(d / "whole", kind, [(t, n) for t, n in enumerate(done) if n])
    assert whole == done
    assert files_of(d / "cut") == files_of(d / "whole")
    with colfile.File(str(d / "cut"), "r") as f:
        check(f, kind, done)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(KINDS), data=st.data())
def test_each_commit_holds_what_came_before(tmp_path_factory: object, kind: tuple[str, int, int, int],
                                            data: st.DataObject) -> None:
    dt, nmemb, tasks, _ = kind
    rowbytes = nmemb * (1 if dt == "raw" else np.dtype(dt).itemsize)
    appends = data.draw(st.lists(st.tuples(st.integers(0, tasks - 1), SIZES), min_size=1, max_size=30))
    appends = [(t, max(1, n // rowbytes)) for t, n in appends]
    every = data.draw(st.integers(1, 7))
    d = Path(tmp_path_factory.mktemp("commits"))  # type: ignore[attr-defined]
    done = write(d / "f", kind, appends, flush_every=every)
    with colfile.File(str(d / "f"), "r") as f:
        check(f, kind, done)
