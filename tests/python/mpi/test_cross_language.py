"""The C and the Python MPI layers write the same bytes.

For 1, 2 and 4 ranks and the throttled, aggregated and blob-owner modes, the Python
pattern writer (``write_pattern.py``, colfile.mpi) and the C one
(``tests/mpi/cf_write_pattern.c``, libcolfile-mpi) write the same File, and
both trees must equal, file for file and byte for byte, a serial write of
the same rows (Python, no MPI).

The C program is looked for in ``$COLFILE_C_BUILD/tests/mpi/`` (``./run
test`` builds it first).  Without it the C side is skipped -- unless ``CI``
is set, where it must exist.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mpirun import assert_same_files, c_mpi_program, launch, mpiexec, run_ok, run_serial, tree

WRITER = Path(__file__).parent / "write_pattern.py"
TOTAL = 1001
NFILE = 3


def pattern_args(path: Path, mode: str, layout: str, nfile: int = NFILE,
                 align: bool = False) -> list[str]:
    args = [str(path), "--total", str(TOTAL), "--nfile", str(nfile), "--mode", mode,
            "--layout", layout]
    return args + (["--align"] if align else [])


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory, lib: Any) -> dict[str, dict[str, bytes]]:
    """The serial reference trees (no MPI), by nfile."""
    out = {}
    for nfile in (NFILE, 0):
        path = tmp_path_factory.mktemp("serial") / "ref"
        run_serial([WRITER, *pattern_args(path, "auto", "even", nfile), "--serial"])
        out[str(nfile)] = tree(path)
    return out


def check_reference(ref: dict[str, bytes]) -> None:
    """The reference holds what the pattern says (read back by colfile)."""
    assert sorted(ref) == sorted(
        [f"{c}/{x}" for c in ("ID", "Mass", "Position", "Velocity")
         for x in ("attr-v2", "colfile-v1", "header")]
        + [f"{c}/{i:06d}" for c in ("ID", "Mass", "Position", "Velocity")
           for i in range(NFILE)] + ["attr-v2"])


CASES = [(n, mode, layout) for n in (1, 2, 4) for mode in ("throttled", "aggregated")
         for layout in ("even", "skewed")]
# blob owners: every layout (uneven: rank boundaries inside blobs)
CASES += [(n, "blob_owners", layout) for n in (1, 2, 4) for layout in ("even", "skewed", "uneven")]


@pytest.mark.parametrize("nranks,mode,layout", CASES)
def test_python_writes_the_serial_bytes(nranks: int, mode: str, layout: str,
                                        tmp_path: Path,
                                        serial: dict[str, dict[str, bytes]]) -> None:
    mpiexec()
    ref = serial[str(NFILE)]
    check_reference(ref)
    py = tmp_path / "py"
    run_ok(launch(nranks, [sys.executable, WRITER, *pattern_args(py, mode, layout)]))
    assert tree(py) == ref


@pytest.mark.parametrize("nranks,mode,layout", CASES)
def test_c_writes_the_serial_bytes(nranks: int, mode: str, layout: str, tmp_path: Path,
                                   serial: dict[str, dict[str, bytes]]) -> None:
    mpiexec()
    exe = c_mpi_program("cf_write_pattern")
    ref = serial[str(NFILE)]
    c = tmp_path / "c"
    run_ok(launch(nranks, [exe, *pattern_args(c, mode, layout)]))
    assert_same_files(tree(c), ref)


def test_reference_values(serial: dict[str, dict[str, bytes]], tmp_path: Path) -> None:
    """The serial reference holds the documented pattern."""
    import numpy as np

    import colfile

    path = tmp_path / "ref"
    for name, data in serial[str(NFILE)].items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    # a copy that keeps modification times (cp -a) keeps the CRC32C and
    # statistics current: colfile-v1 has its header's mtime (format.md 8.1)
    for ext in path.rglob("colfile-v1"):
        header = ext.parent / "header"
        os.utime(ext, ns=(ext.stat().st_atime_ns, header.stat().st_mtime_ns))
    row = np.arange(TOTAL)
    with colfile.File(path) as f:
        assert np.array_equal(f["Position"][:], row[:, None] + 0.25 * np.arange(3))
        v = f["Velocity"][:]
        assert v.dtype == np.float32
        assert np.array_equal(v, (row % 1000).astype("f4")[:, None]
                              - np.float32(0.5) * np.arange(3, dtype="f4"))
        assert np.array_equal(f["ID"][:], row * 3 + 1) and f["ID"].dtype == np.dtype("i8")
        assert np.array_equal(f["Mass"][:], 1.0 + (row % 7)) and f["Mass"].dtype == "f4"
        assert f.attrs["BoxSize"] == 1000.0 and f.attrs["Time"] == 0.5
        assert [f[c].nfile for c in f.columns] == [NFILE] * 4
        assert all(f[c].ext_state == "current" for c in f.columns)
        assert all(f[c].verify_blob(i) == {"OK"} for c in f.columns for i in range(NFILE))


@pytest.mark.parametrize("nranks", [2, 4])
def test_automatic_nfile_and_aligned_blobs(nranks: int, tmp_path: Path,
                                           serial: dict[str, dict[str, bytes]]) -> None:
    """nfile 0 (automatic) matches the serial write; blobs aligned to ranks
    (a layout that depends on the ranks) match between the languages."""
    mpiexec()
    py = tmp_path / "py-auto"
    run_ok(launch(nranks, [sys.executable, WRITER,
                           *pattern_args(py, "auto", "skewed", nfile=0)]))
    assert tree(py) == serial["0"]
    aligned = tmp_path / "py-aligned"
    args = [*pattern_args(aligned, "aggregated", "even", nfile=nranks, align=True),
            "--concurrency", "1"]
    run_ok(launch(nranks, [sys.executable, WRITER, *args]))
    import colfile
    from colfile.mpi import plan_share

    with colfile.File(aligned) as f:
        assert f["ID"].blob_rows == [plan_share(TOTAL, nranks, r)[1] for r in range(nranks)]
    exe = c_mpi_program("cf_write_pattern")
    c = tmp_path / "c-aligned"
    args[0] = str(c)
    run_ok(launch(nranks, [exe, *args]))
    assert tree(c) == tree(aligned)


@pytest.mark.parametrize("nranks,mode,layout", [(1, "auto", "even"), (2, "throttled", "skewed"),
                                                (4, "aggregated", "even"),
                                                (4, "throttled", "skewed")])
def test_appends_write_the_same_bytes(nranks: int, mode: str, layout: str,
                                      tmp_path: Path) -> None:
    """Collective appends (C cf_mpi_column_grow, Python Column.append) write
    what serial appends write: one planned blob per append."""
    mpiexec()
    args = ["--appends", "3"]
    ref = tmp_path / "serial"
    run_serial([WRITER, *pattern_args(ref, "auto", "even"), *args, "--serial"])
    import numpy as np

    import colfile

    with colfile.File(ref) as f:
        log = f["Log"]
        assert log.blob_rows == [0, 42, 79, 116]
        assert np.array_equal(log[:], np.arange(237) * 5 + 1)
    py = tmp_path / "py"
    run_ok(launch(nranks, [sys.executable, WRITER, *pattern_args(py, mode, layout), *args]))
    assert tree(py) == tree(ref)
    c = tmp_path / "c"
    run_ok(launch(nranks, [c_mpi_program("cf_write_pattern"), *pattern_args(c, mode, layout), *args]))
    got, want = tree(c), tree(ref)
    assert_same_files(got, want)


#: columns of more chunk records than the statistics text holds (Position
#: and Velocity: 3 x 30001 > 2^16) close by chunk owners, ID and Mass by
#: gathering; rank boundaries of the uneven layout fall inside chunks
CHUNKED = ["--total", "60001", "--nfile", "3", "--layout", "uneven", "--chunk-rows", "2"]


@pytest.mark.parametrize("nranks,mode", [(1, "throttled"), (2, "throttled"), (4, "throttled"),
                                         (4, "blob_owners")])
def test_large_columns_same_bytes_in_c_and_python(nranks: int, mode: str, tmp_path: Path) -> None:
    """Closing by chunk owners (C and Python) writes the serial bytes, the
    chunk index included, for uneven splits across chunk boundaries (and
    with blob owners, whose statistics and CRCs of the rows they receive
    are theirs)."""
    mpiexec()
    exe = c_mpi_program("cf_write_pattern")
    ref, py, c = tmp_path / "ref", tmp_path / "py", tmp_path / "c"
    run_serial([WRITER, ref, "--mode", "throttled", *CHUNKED, "--serial"], timeout=300)
    run_ok(launch(nranks, [sys.executable, WRITER, py, "--mode", mode, *CHUNKED]))
    run_ok(launch(nranks, [exe, c, "--mode", mode, *CHUNKED]))
    want = tree(ref)
    assert "Position/colfile-index-v1" in want and "Velocity/colfile-index-v1" in want
    assert tree(py) == want
    assert_same_files(tree(c), want)
