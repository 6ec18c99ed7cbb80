"""A stream's temporary table (a commit in progress, or one a crash cut
short) is its writer's: File.cleanup leaves it while the stream's writer
holds the name's lock, and removes it once that writer is gone."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import colfile
import colfile.stream as cs


def test_temporary_table_of_a_live_writer_stays(tmp_path: Path) -> None:
    f = colfile.File(str(tmp_path / "f"), "w")
    w = cs.create(f, "s", "<i8", tasks=2, chunk=4096, align=4096)
    w.task(0).append(np.arange(100))
    w.flush()  # published: the writer keeps the name's lock
    tmp = tmp_path / "f" / "s" / ".colfile-stream-v1.tmp.4242.0badcafe"
    tmp.write_bytes(b"COLFILE-STREAM: 2\n")  # a commit in parts under way
    other = colfile.File(str(tmp_path / "f"), "a")
    assert not any("tmp.4242" in line for line in other.cleanup())
    assert tmp.exists()
    w.close()
    lines = other.cleanup()
    assert any("tmp.4242" in line for line in lines), lines
    assert not tmp.exists()
    s = cs.open(other, "s")
    assert s.size == 100
    s.close()
    other.close()
    f.close()
