"""The C (cf_mpi_stream_open, tests/mpi/cf_stream_open_probe.c) and the
Python (colfile.stream.open(..., collective=True), stream_open_probe.py)
opens in slices of one stream at 1, 2 and 4 ranks read the same bytes of
its table on each rank, at the open and after the rank's share, and give
each rank the share a serial reader gives (more tasks than ranks; uneven,
empty tasks).

The C program is looked for in ``$COLFILE_C_BUILD/tests/mpi/``; without it
the test is skipped, unless ``CI`` is set."""

from __future__ import annotations

from pathlib import Path

import pytest
from stream_twins import run_twins, write

import colfile
import colfile.stream as cs


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_c_and_python_open_alike(nranks: int, tmp_path: Path) -> None:
    write(tmp_path / "f", 3 * nranks + 2, "2")
    table = (tmp_path / "f" / "s" / "colfile-stream-v1").read_bytes()
    opened = run_twins(nranks, "cf_stream_open_probe", [tmp_path / "f", "s", tmp_path / "c"],
                       [tmp_path / "f", "s", tmp_path / "py"])
    if nranks == 4:  # two readers (two physical files): ranks 1 and 3 read the head and checksum lines only
        assert opened[1] < len(table) // 8 and opened[3] < len(table) // 8, (opened, len(table))
    with colfile.File(tmp_path / "f", "r") as f:
        s = cs.open(f, "s")
        for r in range(nranks):
            first = s.size * r // nranks
            want = s.read(first, s.size * (r + 1) // nranks - first).tobytes()
            assert (tmp_path / f"c.{r}").read_bytes() == want, f"rank {r}'s share (C)"
            assert (tmp_path / f"py.{r}").read_bytes() == want, f"rank {r}'s share (Python)"
        s.close()
