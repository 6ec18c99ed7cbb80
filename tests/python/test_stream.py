"""Task-local streams from Python (colfile.stream, docs/format.md 8.7):
a serial writer of several tasks, commits, the per-task and global views
(slicing, dask), and a File that bigfile 0.1.52 still reads."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import colfile
import colfile.stream as cs
import colfile.stream_tools as st
from colfile.errors import ColumnNotFoundError


def pattern(task: int, start: int, stop: int) -> np.ndarray:
    rows = np.arange(start, stop, dtype=np.float64)
    return np.stack([task * 1e6 + rows, -rows, rows * 0.5], axis=1)


ROWS = [700, 0, 3, 1500, 256]  # uneven, empty, a few, several chunks, exactly one chunk (4096 / 24 is not whole)


def write(f: colfile.File, name: str, files: int = 2) -> None:
    with cs.create(f, name, "<f8", nmemb=3, tasks=len(ROWS), files=files, chunk=4096, align=4096) as w:
        for t in range(len(ROWS) - 1, -1, -1):  # tasks in any order
            at, step = 0, 1
            while at < ROWS[t]:  # growing appends
                n = min(step, ROWS[t] - at)
                w.task(t).append(pattern(t, at, at + n))
                at, step = at + n, step * 2


def test_write_and_read_back(tmp_path: Path) -> None:
    with colfile.File(tmp_path / "f", "a") as f:
        write(f, "g/s")
        assert cs.list_streams(f) == ["g/s"]
        s = cs.open(f, "g/s", verify=True)
        assert (s.tasks, s.files, s.chunk, s.nmemb, s.commit) == (5, 2, 4096, 3, 1)
        assert s.shape == (sum(ROWS), 3) and s.dtype == np.dtype("<f8")
        everything = np.concatenate([pattern(t, 0, n) for t, n in enumerate(ROWS)])
        np.testing.assert_array_equal(s[:], everything)
        for t, n in enumerate(ROWS):
            np.testing.assert_array_equal(s.task(t), pattern(t, 0, n))
            assert s.task_size(t) == n and s.task_start(t) == sum(ROWS[:t])
        # slicing as numpy does it
        for key in (slice(5, 1000, 7), slice(None, None, -3), slice(699, 704), 703, -1, [3, 0, 2400],
                    (slice(10, 20), 1)):
            np.testing.assert_array_equal(s[key], everything[key])
        assert s[10:10].shape == (0, 3)
        with pytest.raises(IndexError):
            s[len(everything)]
        # dask, and the chunks as the layout places them
        np.testing.assert_array_equal(s.to_dask(chunks=(333, 3)).compute(), everything)
        np.testing.assert_array_equal(s.to_dask().compute(), everything)  # dask's own chunks
        ch = s.task_chunks(3)
        assert len(ch) == -(-1500 * 24 // 4096)
        assert ch[1] == {"file": 1, "offset": (1 * 3 + 1) * 4096, "bytes": 4096, "crc32c": ch[1]["crc32c"]}
        s.close()
        with pytest.raises(ValueError):
            s.task(0)


def test_flush_is_a_checkpoint(tmp_path: Path) -> None:
    with colfile.File(tmp_path / "f", "a") as f:
        w = cs.create(f, "ckpt", "<i4", tasks=2, chunk=512, align=512)
        w.task(1).append(np.arange(300, dtype=np.int32))
        with pytest.raises(ColumnNotFoundError):
            cs.open(f, "ckpt")  # nothing before the first commit
        w.flush()
        w.task(1).append(np.arange(300, 1000, dtype=np.int32))
        assert cs.open(f, "ckpt").task(1).tolist() == list(range(300))
        w.discard()  # dropped: the last commit stays
        s = cs.open(f, "ckpt")
        assert s.size == 300 and s.commit == 1
        # raw streams take bytes
        with cs.create(f, "log", "raw", tasks=3) as w:
            w.task(2).append(b"hello ")
            w.task(0).append(b"first")
            w.task(2).append(b"world")
        log = cs.open(f, "log")
        assert log.task(2).tobytes() == b"hello world"
        assert log[:].tobytes() == b"firsthello world"
        with pytest.raises(colfile.errors.InvalidArgumentError):
            cs.create(f, "bad", "<f8", nmemb=3).append(np.zeros(4))
        w = cs.create(f, "ints", "<i2")
        w.append([1, 2, 3])  # Python ints: same kind
        with pytest.raises(colfile.errors.DTypeError):
            w.append(np.array([1.5]))  # no float to int
        w.close()
        assert cs.open(f, "ints").task(0).tolist() == [1, 2, 3]
        with cs.create(f, "rawarr", "raw") as w:
            w.append(np.array([1, 2], "<u2"))  # an array's bytes as they are
        assert cs.open(f, "rawarr")[:].tobytes() == b"\x01\x00\x02\x00"


def test_bigfile_reads_the_rest_of_the_file(tmp_path: Path) -> None:
    """bigfile 0.1.52 ignores the stream and reads every column as before."""
    bigfile = pytest.importorskip("bigfile")
    path = tmp_path / "f"
    with colfile.File(path, "a") as f:
        f.create("col", data=np.arange(10, dtype="<i8"))
        write(f, "stream")
        write(f, "grp/stream2")
        assert f.columns == ["col"]  # streams are not columns
    bf = bigfile.File(str(path))
    assert sorted(bf.blocks) == ["col"]
    np.testing.assert_array_equal(bf["col"][:], np.arange(10))
    assert bigfile.__version__ == "0.1.52"


def test_killed_writer_leaves_last_commit(tmp_path: Path) -> None:
    """A process killed after a flush, in the middle of more appends."""
    path = tmp_path / "f"
    code = f"""
import os, signal, numpy as np, colfile, colfile.stream as cs
f = colfile.File({str(path)!r}, "a")
w = cs.create(f, "k", "<i8", tasks=2, chunk=4096, align=4096)
w.task(0).append(np.arange(1000))
w.flush()
w.task(0).append(np.arange(1000, 5000))
w.task(1).append(np.arange(7))
os.kill(os.getpid(), signal.SIGKILL)
"""
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), timeout=120)
    assert proc.returncode == -9
    with colfile.File(path, "r") as f:
        s = cs.open(f, "k", verify=True)
        assert s.task(0).tolist() == list(range(1000)) and s.task_size(1) == 0


def test_reopen_continues_after_the_last_commit(tmp_path: Path) -> None:
    with colfile.File(tmp_path / "f", "a") as f:
        w = cs.create(f, "r", ">i2", nmemb=2, tasks=2, chunk=512, align=512)
        w.task(1).append(np.arange(200, dtype=">i2").reshape(100, 2))
        w.flush()
        w.task(1).append(np.full((50, 2), -1, ">i2"))  # lost: never committed
        w.discard()
        w = cs.reopen(f, "r")
        assert (w.tasks, w.chunk, w.nmemb, w.dtype) == (2, 512, 2, np.dtype(">i2"))
        assert w.task(1).rows == 100
        w.task(1).append(np.arange(200, 400, dtype=">i2").reshape(100, 2))
        w.task(0).append(np.zeros((3, 2), ">i2"))
        with pytest.raises(colfile.errors.BusyError):
            cs.reopen(f, "r")
        w.close()
        s = cs.open(f, "r", verify=True)
        assert s.commit == 2 and s.dtype == np.dtype(">i2")
        np.testing.assert_array_equal(s.task(1), np.arange(400).reshape(200, 2))
        np.testing.assert_array_equal(s.task(0), np.zeros((3, 2)))
        with pytest.raises(ColumnNotFoundError):
            cs.reopen(f, "nothing")


def test_global_view_pickles_for_dask_workers(tmp_path: Path) -> None:
    with colfile.File(tmp_path / "f", "a") as f:
        write(f, "s", files=1)
        s = cs.open(f, "s", verify=True)
        again = pickle.loads(pickle.dumps(s))
        assert (again.name, again.size, again.shape) == ("s", s.size, s.shape)
        np.testing.assert_array_equal(again[100:900], s[100:900])
        again.close()


def test_empty_stream(tmp_path: Path) -> None:
    """No task appended anything: every view and tool still works."""
    bigfile = pytest.importorskip("bigfile")
    with colfile.File(tmp_path / "f", "a") as f:
        cs.create(f, "e", "<f4", nmemb=3, tasks=2).close()
        s = cs.open(f, "e")
        assert s.shape == (0, 3) and s[:].shape == (0, 3) and s.to_dask().compute().shape == (0, 3)
        assert s.task(1).shape == (0, 3)
        s.close()
        assert st.dump(f, "e")["per_file"][0]["bytes"] is None  # no task wrote: no file
        assert [Path(p).read_bytes() for p in st.split(f, "e", tmp_path / "sp")] == [b"", b""]
        st.defrag(f, "e")
        assert f["e"].shape == (0, 3)
    assert bigfile.File(str(tmp_path / "f"))["e"].size == 0
