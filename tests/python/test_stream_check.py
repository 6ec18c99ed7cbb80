"""colfile check on streams (docs/streams.md): every committed chunk of
every task against the CRC32C of the stream's table, damage reported per
task and chunk; colfile repair and a killed writer's staging directory."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

import colfile
import colfile.stream as cs
from exttext import crc32c

CHUNK = 4096
ROWS = [700, 0, 3, 1500]  # <i8 rows: task 0 two chunks, task 3 three
Cli = Callable[..., "tuple[int, str, str]"]


def make(path: Path) -> None:
    with colfile.File(path, "w") as f:
        f.create("col", "<f4", data=np.arange(10, dtype="<f4"))
        with cs.create(f, "g/s", "<i8", tasks=len(ROWS), files=2, chunk=CHUNK, align=CHUNK) as w:
            for t, n in enumerate(ROWS):
                w.task(t).append(np.arange(n, dtype="<i8") + 1000 * t)


def data_file(path: Path, task: int) -> Path:
    with colfile.File(path, "r") as f:
        s = cs.open(f, "g/s")
        chunks = s.task_chunks(task)
        s.close()
    return path / "g/s" / f"colfile-stream-data-{chunks[0]['file']:06X}"


def chunk_at(path: Path, task: int, block: int) -> dict[str, int]:
    with colfile.File(path, "r") as f:
        s = cs.open(f, "g/s")
        c = s.task_chunks(task)[block]
        s.close()
    return c


def report(cli: Cli, *args: Any) -> tuple[int, dict[str, Any]]:
    rc, out, _ = cli("check", "--json", *args)
    return rc, json.loads(out)


def test_intact_stream_is_checked(tmp_path: Path, cli: Cli) -> None:
    make(tmp_path / "f")
    rc, doc = report(cli, tmp_path / "f")
    assert rc == 0 and doc["ok"]
    assert doc["columns_checked"] == 1 and doc["streams_checked"] == 1
    # 700*8 -> 2 chunks, 3*8 -> 1, 1500*8 -> 3
    assert doc["stream_chunks_checked"] == 6
    assert doc["stream_bytes_checked"] == sum(ROWS) * 8
    assert doc["stream_problems"] == []
    rc, out, _ = cli("check", tmp_path / "f")
    assert rc == 0 and "1 stream, 6 chunks: all good" in out


def test_flipped_byte_names_task_and_chunk(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "f"
    make(path)
    c = chunk_at(path, 3, 1)
    data = data_file(path, 3)
    with open(data, "r+b") as fh:
        fh.seek(c["offset"] + 100)
        b = fh.read(1)
        fh.seek(c["offset"] + 100)
        fh.write(bytes([b[0] ^ 0x10]))
    rc, doc = report(cli, path)
    assert rc == 1 and not doc["ok"]
    assert doc["damaged_streams"] == ["g/s"] and doc["damaged_stream_chunks"] == 1
    (e,) = doc["stream_problems"]
    assert (e["task"], e["chunk"], e["path"], e["offset"]) == (3, 1, str(data), c["offset"])
    assert e["task_rows"] == [CHUNK // 8, 2 * CHUNK // 8]
    assert e["problems"][0]["kind"] == "crc mismatch"
    assert doc["columns_checked"] == 1 and doc["problems"] == []  # the column is fine
    rc, out, _ = cli("check", path)
    assert rc == 1
    assert f"{data}: stream 'g/s' task 3 chunk 1 (its rows 512..1023, {CHUNK} bytes at {c['offset']}): " \
           "crc mismatch" in out
    assert "DAMAGE FOUND: 1 damaged chunk in 1 stream" in out
    assert cli("check", "-q", path)[0] == 1


def test_truncated_and_missing_physical_files(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "f"
    make(path)
    data3 = data_file(path, 3)
    c = chunk_at(path, 3, 1)
    os.truncate(data3, c["offset"] + 10)  # chunk 1 of task 3 cut, chunk 2 gone
    rc, doc = report(cli, path)
    assert rc == 1
    got = {(e["task"], e["chunk"]): e["problems"][0]["kind"] for e in doc["stream_problems"]}
    short = {k for k, v in got.items() if v == "short"}
    assert {(3, 1), (3, 2)} <= short
    assert all(v == "short" for v in got.values())
    # every chunk of a task in the other file is intact
    data0 = data_file(path, 0)
    assert data0 != data3 and not any(k[0] == 0 for k in got)
    os.remove(data0)
    rc, doc = report(cli, path)
    missing = {(e["task"], e["chunk"]) for e in doc["stream_problems"]
               if e["problems"][0]["kind"] == "missing"}
    assert rc == 1 and missing == {(0, 0), (0, 1)}


def test_damaged_table_and_naming_a_stream(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "f"
    make(path)
    rc, doc = report(cli, path, "g/s")  # the stream alone
    assert rc == 0 and doc["columns_checked"] == 0 and doc["streams_checked"] == 1
    rc, doc = report(cli, path, "col")  # the column alone
    assert rc == 0 and doc["columns_checked"] == 1 and doc["streams_checked"] == 0
    rc, doc = report(cli, path, "g")  # a group stands for the streams below it
    assert doc["streams_checked"] == 1
    table = path / "g/s/colfile-stream-v1"
    text = table.read_bytes()
    table.write_bytes(text.replace(b"TASKS: 4", b"TASKS: 5"))
    rc, doc = report(cli, path)
    assert rc == 1
    (e,) = doc["stream_problems"]
    assert e["task"] is None and e["problems"][0]["kind"] == "cannot open"
    assert "checksum" in e["problems"][0]["message"] and str(table) in e["problems"][0]["message"]


def test_killed_writer_staging_directory(tmp_path: Path, cli: Cli) -> None:
    """A writer killed before its first commit leaves its staging
    directory: check notes it (not damage), repair removes it."""
    path = tmp_path / "f"
    make(path)
    code = f"""
import os, signal, numpy as np, colfile, colfile.stream as cs
f = colfile.File({str(path)!r}, "a")
w = cs.create(f, "g/new", "<i8", tasks=2, chunk=4096, align=4096)
w.task(1).append(np.arange(5000))
os.kill(os.getpid(), signal.SIGKILL)
"""
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), timeout=120)
    assert proc.returncode == -signal.SIGKILL
    staged = [n for n in os.listdir(path / "g") if n.startswith(".colfile-stage.new.")]
    assert len(staged) == 1, os.listdir(path / "g")
    rc, doc = report(cli, path)
    assert rc == 0 and doc["ok"] and doc["streams_checked"] == 1  # g/new never became a stream
    assert any(staged[0] in line for line in doc["leftovers"]), doc["leftovers"]
    rc, out, err = cli("repair", path)
    assert rc == 0, out + err
    assert [n for n in os.listdir(path / "g") if n.startswith(".colfile-stage")] == []
    rc, doc = report(cli, path)
    assert rc == 0 and doc["leftovers"] == []
    with colfile.File(path, "r") as f:
        assert cs.list_streams(f) == ["g/s"]
        np.testing.assert_array_equal(cs.open(f, "g/s", verify=True).task(3), np.arange(1500) + 3000)


def test_statistics_are_checked(tmp_path: Path, cli: Cli) -> None:
    """Streams of every kind pass with the statistics their writers
    recorded; a recorded statistic that disagrees with the rows (its table
    resealed) is a stats mismatch of that chunk."""
    path = tmp_path / "f"
    rng = np.random.default_rng(5)
    f4 = rng.normal(size=3000).astype("<f4")
    f4[::7] = np.nan
    kinds = {"f4": f4, "i8": np.array([2**62 + 1, -(2**63), 7, 2**63 - 1] * 200, "<i8"),
             "b1": rng.random(5000) < 0.3, "c8": (f4 + 1j * f4[::-1]).astype("<c8"),
             "u2": np.arange(3000, dtype="<u2"), "S3": np.array([b"ab", b"xyz"] * 700, "S3")}
    with colfile.File(path, "w") as f:
        for name, data in kinds.items():
            with cs.create(f, name, data.dtype, tasks=3, chunk=512, align=512) as w:
                for t in range(3):
                    w.task(t).append(data[t * len(data) // 4:(t + 1) * len(data) // 3])
    rc, doc = report(cli, path)
    assert rc == 0 and doc["streams_checked"] == 6, doc["stream_problems"]
    table = path / "f4/colfile-stream-v1"
    body = table.read_text().split("CRC32C: ")[0]
    line = re.compile(r"^S 2 0 count=\d+ nan=\d+ min=\S+ max=\S+ sum=(\S+)$", re.M).search(
        body, body.index("\n1 "))  # task 1's chunk 2
    assert line
    bad = body[:line.start()] + line.group(0).replace(f"sum={line.group(1)}", "sum=12345") + body[line.end():]
    table.write_text(bad + f"CRC32C: {crc32c(bad.encode()):08x}\n")
    rc, doc = report(cli, path)
    assert rc == 1 and doc["damaged_streams"] == ["f4"]
    (e,) = doc["stream_problems"]
    assert (e["task"], e["chunk"]) == (1, 2) and e["problems"][0]["kind"] == "stats mismatch"
    assert "component 0: recorded sum disagree" in e["problems"][0]["message"]
