"""colfile stream ls/dump/split and colfile defrag."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import colfile
import colfile.stream as cs

# task 0: 1500 rows over two chunks, task 1 nothing, task 2 ten rows
ROWS = {0: np.arange(1500, dtype="<i4"), 2: np.arange(10, dtype="<i4") * -3}


def make(path: Path) -> Path:
    with colfile.File(path, "a") as f:
        f.create("plain", data=np.arange(4.0))
        with cs.create(f, "g/s", "<i4", tasks=3, files=2, chunk=4096, align=4096) as w:
            for t, rows in ROWS.items():
                w.task(t).append(rows[:700])
                w.task(t).append(rows[700:])
    return path


def test_ls_and_dump(cli, tmp_path: Path) -> None:
    f = make(tmp_path / "f")
    assert cli("stream", "ls", f) == (0, "g/s\n", "")
    status, out, err = cli("stream", "dump", f, "g/s", "--chunks", "--json")
    assert status == 0, err
    d = json.loads(out)
    assert (d["dtype"], d["tasks"], d["files"], d["chunk"], d["rows"], d["commit"]) == ("<i4", 3, 2, 4096, 1510, 1)
    assert [t["rows"] for t in d["per_task"]] == [1500, 0, 10]
    assert [t["unused"] for t in d["per_task"]] == [2 * 4096 - 6000, 0, 4096 - 40]
    assert [x["tasks"] for x in d["per_file"]] == [[0, 0], [1, 2]]
    assert [x["used"] for x in d["per_file"]] == [6000, 40]
    # task 2, local task 1 of 2 in file 1: its chunk 0 at 4096, as the bytes on disk show
    (c,) = d["per_task"][2]["chunks"]
    assert (c["file"], c["offset"], c["bytes"]) == (1, 4096, 40)
    raw = (f / "g" / "s" / "colfile-stream-data-000001").read_bytes()
    assert raw[4096:4136] == ROWS[2].tobytes()
    assert d["per_file"][1]["bytes"] == 4136
    status, out, err = cli("stream", "dump", f, "g/s")
    assert status == 0 and "1510 rows, 3 tasks in 2 files" in out and "6040 used" in out
    # streams are not columns
    status, out, err = cli("ls", f)
    assert "plain" in out and " s " not in out
    assert cli("stream", "dump", f, "nope")[0] == 2
    assert cli("stream", "dump", f)[0] == 2


def test_split(cli, tmp_path: Path) -> None:
    f = make(tmp_path / "f")
    out_dir = tmp_path / "parts"
    status, out, err = cli("stream", "split", f, "g/s", out_dir)
    assert status == 0, err
    assert out.split() == [str(out_dir / f"s.{t:06d}") for t in range(3)]
    for t in range(3):
        want = ROWS.get(t, np.zeros(0, "<i4")).tobytes()
        assert (out_dir / f"s.{t:06d}").read_bytes() == want
    status, out, err = cli("stream", "split", f, "g/s", tmp_path / "one", "--task", "2")
    assert status == 0 and [p.name for p in (tmp_path / "one").iterdir()] == ["s.000002"]
    status, out, err = cli("stream", "split", f, "g/s", tmp_path / "bad", "--task", "3")
    assert status == 1 and "no task 3" in err


def test_defrag(cli, tmp_path: Path) -> None:
    bigfile = pytest.importorskip("bigfile")
    f = make(tmp_path / "f")
    status, out, err = cli("defrag", "-v", f, "g/s", "--nfile", "2")
    assert status == 0, err
    assert "1510 rows in 2 blobs" in out
    want = np.concatenate([ROWS[0], ROWS[2]])
    with colfile.File(f) as fh:
        assert cs.list_streams(fh) == []
        np.testing.assert_array_equal(fh["g/s"][:], want)
    bf = bigfile.File(str(f))
    assert sorted(bf.blocks) == ["g/s", "plain"]
    np.testing.assert_array_equal(bf["g/s"][:], want)
    assert bf["g/s"].Nfile == 2
    assert not [p.name for p in (f / "g" / "s").iterdir() if p.name.startswith("colfile-stream")]
    assert cli("defrag", f, "g/s")[0] == 2  # no stream any more


def test_defrag_of_damaged_stream_keeps_it(cli, tmp_path: Path) -> None:
    f = make(tmp_path / "f")
    data = f / "g" / "s" / "colfile-stream-data-000000"
    raw = bytearray(data.read_bytes())
    raw[100] ^= 1
    data.write_bytes(bytes(raw))
    status, out, err = cli("defrag", f, "g/s")
    assert status == 1 and "CRC32C" in err
    with colfile.File(f) as fh:
        assert cs.list_streams(fh) == ["g/s"] and fh.columns == ["plain"]
        assert cs.open(fh, "g/s").size == 1510


@pytest.mark.parametrize("argv", [["stream", "ls", "{}"], ["stream", "dump", "{}", "s"],
                                  ["stream", "split", "{}", "s", "out"]])
def test_missing_file_exits_2(cli, tmp_path: Path, argv: list[str]) -> None:
    missing = tmp_path / "nope"
    status, out, err = cli(*[str(missing) if a == "{}" else a for a in argv])
    assert (status, out) == (2, "")
    assert "no such File" in err and str(missing) in err and not missing.exists()
