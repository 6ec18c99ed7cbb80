"""Statistics of a stream's chunks (docs/format.md 8.7, version 2 of the
table): computed as tasks append, per chunk the rows that start in it, read
back as Stream.chunk_stats / stats; kept exact across a reopen; old tables
without them still read."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import colfile
import colfile.stream as cs
from exttext import crc32c

CHUNK = 4096


def rows_of(task: int, start: int, stop: int) -> np.ndarray:
    k = np.arange(start, stop, dtype=np.float64)
    out = np.stack([task * 1e3 + k, -k * 0.25, np.sin(k + task)], axis=1)
    out[(np.arange(start, stop) % 17) == 3, 1] = np.nan  # NaNs in component 1
    return out


SIZES = [700, 0, 3, 1500]


def write(f: colfile.File, name: str, sizes: list[int] = SIZES) -> None:
    with cs.create(f, name, "<f8", nmemb=3, tasks=len(sizes), files=2, chunk=CHUNK, align=CHUNK) as w:
        for t, n in enumerate(sizes):
            at, step = 0, 1
            while at < n:
                m = min(step, n - at)
                w.task(t).append(rows_of(t, at, at + m))
                at, step = at + m, step * 3


def expected(data: np.ndarray, first: int, rows: int) -> list[tuple[int, int, float, float, float]]:
    out = []
    for j in range(data.shape[1]):
        v = data[first:first + rows, j]
        ok = v[~np.isnan(v)]
        out.append((len(v), int(np.isnan(v).sum()), ok.min() if len(ok) else np.nan,
                    ok.max() if len(ok) else np.nan, math.fsum(ok)))
    return out


def test_chunk_stats_match_the_data(tmp_path: Path) -> None:
    with colfile.File(tmp_path / "f", "w") as f:
        write(f, "s")
        s = cs.open(f, "s")
        data = s[:]
        st = s.chunk_stats()
        # rows of 24 bytes: 4096 / 24 is not whole, rows straddle chunks
        assert st.shape == (5 + 1 + 9, 3)  # 16800, 72 and 36000 bytes
        assert st["valid"].all() and st["ordered"].all()
        assert st["rows"][:, 0].sum() == len(data)
        assert list(st["blob"][:, 0]) == [0] * 5 + [2] + [3] * 9
        for rec in st:
            first, rows = int(rec[0]["first_row"]), int(rec[0]["rows"])
            # the rows that start in the chunk: [ceil(k C / 24), ceil((k+1) C / 24))
            for j, (count, nan, mn, mx, total) in enumerate(expected(data, first, rows)):
                assert (rec[j]["count"], rec[j]["nan_count"]) == (count, nan)
                assert rec[j]["min"] == mn and rec[j]["max"] == mx
                assert rec[j]["sum"] == total  # exact sum, correctly rounded
        assert [int(r) for r in st["first_row"][:7, 0]] == [0, 171, 342, 512, 683, 700, 703]
        whole = s.stats()
        np.testing.assert_array_equal(whole["count"], [len(data)] * 3)
        assert whole["nan_count"][1] == np.isnan(data[:, 1]).sum()
        np.testing.assert_array_equal(whole["min"], np.nanmin(data, axis=0))
        np.testing.assert_array_equal(whole["max"], np.nanmax(data, axis=0))
        assert whole["sum"][0] == pytest.approx(math.fsum(data[:, 0]), rel=1e-15)
        np.testing.assert_array_equal(s.chunk_stats(1), st[:, 1])
        s.close()
    text = (tmp_path / "f/s/colfile-stream-v1").read_text()
    assert text.startswith("COLFILE-STREAM: 2\n")
    assert "\nS 0 1 count=171 nan=10 min=" in text


def test_integers_long_rows_and_empty_chunks(tmp_path: Path) -> None:
    big = np.array([2**62 + 1, -(2**63), 7, 2**63 - 1], dtype="<i8")
    with colfile.File(tmp_path / "f", "w") as f:
        with cs.create(f, "i", "<i8", tasks=1, chunk=512, align=512) as w:
            w.task(0).append(big)
        s = cs.open(f, "i")
        (rec,) = s.chunk_stats()
        assert rec["count"] == 4 and rec["min"] == -(2.0**63) and rec["max"] == 2.0**63
        assert rec["sum"] == float(int(big.astype(object).sum()))
        s.close()
        # rows of 1600 bytes in chunks of 512: most chunks have no row start
        with cs.create(f, "long", "<f8", nmemb=200, tasks=2, chunk=512, align=512) as w:
            w.task(1).append(np.arange(600.0).reshape(3, 200))
        s = cs.open(f, "long")
        st = s.chunk_stats(0)
        assert len(st) == 10 and st["valid"].all()
        starts = [k for k in range(10) if st["rows"][k]]
        assert starts == [0, 3, 6] and list(st["first_row"][starts]) == [0, 1, 2]
        assert list(st["min"][starts]) == [0.0, 200.0, 400.0]
        assert all(st["count"][k] == 0 and np.isnan(st["min"][k]) for k in range(10) if k not in starts)
        assert s.stats()["sum"][199] == 199 + 399 + 599
        s.close()


def test_reopen_keeps_sums_exact(tmp_path: Path) -> None:
    """A chunk continued after a reopen gets the statistics it would have
    got in one go: the open chunk's accumulators are rebuilt from its rows,
    not from the rounded sum the table keeps."""
    parts = [np.array([1e16, 1.0]), np.array([1.0, -1e16, 0.5])]
    with colfile.File(tmp_path / "f", "w") as f:
        with cs.create(f, "once", "<f8", tasks=2, chunk=512, align=512) as w:
            for p in parts:
                w.task(1).append(p)
        w = cs.create(f, "twice", "<f8", tasks=2, chunk=512, align=512)
        w.task(1).append(parts[0])
        w.close()
        w = cs.reopen(f, "twice")
        w.task(1).append(parts[1])
        w.close()
        a, b = cs.open(f, "once"), cs.open(f, "twice")
        np.testing.assert_array_equal(a.chunk_stats(), b.chunk_stats())
        assert b.chunk_stats()["sum"][0] == 2.5  # 1e16 + 1 + 1 - 1e16 + 0.5, exactly
        a.close()
        b.close()
    once = (tmp_path / "f/once/colfile-stream-v1").read_text()
    twice = (tmp_path / "f/twice/colfile-stream-v1").read_text()
    assert once.replace("COMMIT: 1", "COMMIT: 2").split("CRC32C:")[0] == twice.split("CRC32C:")[0]


def test_old_tables_and_raw_streams(tmp_path: Path) -> None:
    with colfile.File(tmp_path / "f", "w") as f:
        write(f, "s")
        with cs.create(f, "r", "raw", tasks=1, chunk=512, align=512) as w:
            w.task(0).append(np.frombuffer(b"abc" * 300, np.uint8))
    raw_table = (tmp_path / "f/r/colfile-stream-v1").read_text()
    assert raw_table.startswith("COLFILE-STREAM: 1\n") and "\nS " not in raw_table
    # the typed stream's table as a writer without statistics made it
    path = tmp_path / "f/s/colfile-stream-v1"
    body = path.read_text().split("CRC32C: ")[0]
    body = re.sub(r"^S .*\n", "", body, flags=re.M).replace("COLFILE-STREAM: 2", "COLFILE-STREAM: 1")
    path.write_text(body + f"CRC32C: {crc32c(body.encode()):08x}\n")
    with colfile.File(tmp_path / "f", "a") as f:
        s = cs.open(f, "s", verify=True)
        np.testing.assert_array_equal(s.task(3), rows_of(3, 0, 1500))
        assert not s.chunk_stats()["valid"].any()
        with pytest.raises(ValueError, match="records no statistics"):
            s.stats()
        s.close()
        # appending to an old table keeps it old: no statistics for part of it
        w = cs.reopen(f, "s")
        w.task(1).append(rows_of(1, 0, 5))
        w.close()
        assert path.read_text().startswith("COLFILE-STREAM: 1\n")
        r = cs.open(f, "r")
        assert not r.chunk_stats()["valid"].any()
        r.close()

def test_statistics_lines_are_strict(tmp_path: Path) -> None:
    """A statistics line not as a writer makes it (the seal made right) is
    refused, naming the file and line."""
    with colfile.File(tmp_path / "f", "w") as f:
        write(f, "s")
    path = tmp_path / "f/s/colfile-stream-v1"
    good = path.read_text().split("CRC32C: ")[0]
    for old, new in ((" nan=10 ", " nan=010 "), ("\nS 0 1 ", "\nS 0 2 "), (" count=171 ", " count=171  ")):
        body = good.replace(old, new, 1)
        assert body != good
        path.write_text(body + f"CRC32C: {crc32c(body.encode()):08x}\n")
        with colfile.File(tmp_path / "f", "r") as f:
            with pytest.raises(colfile.errors.FormatError, match=r"colfile-stream-v1: line \d+: a chunk's statistics"):
                cs.open(f, "s")
