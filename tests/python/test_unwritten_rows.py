"""Rows never written, and writes of part of a row into them.

numpy and h5py let any element of a new array be assigned first; colfile
writes whole rows, so a write of some components of rows never written
reads the rows (zeros where nothing was written, h5py's default fill value)
and writes them back whole.  Rows past the last one written in their blob
have no bytes on disk, as a blob cut short: reading them raises
IncompleteError naming the rows, closing the column warns about them, and
``colfile check`` reports them.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile
from colfile.cli import main as cli_main


@pytest.fixture
def f(path: str) -> Any:
    fh = colfile.File(path, "w")
    yield fh
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", colfile.IncompleteWarning)
        fh.close()


PARTIAL_KEYS = [
    (slice(0, 5), slice(None)),          # all components: written whole
    (slice(0, 5), slice(0, 3)),
    (slice(0, 5), Ellipsis),
    (slice(0, 5), 0),                    # one component
    (slice(0, 5), slice(1, 3)),
    (slice(0, 10, 3), slice(None, None, -1)),
    (slice(None, None, -4), 2),
    ([7, 2, 7], [0, 2, 1]),
    ([7, 2, 7], slice(0, 2)),
    (np.array([False, True] * 5), -1),
    (4, 1),
    (Ellipsis, 1),
]


@pytest.mark.parametrize("key", PARTIAL_KEYS, ids=repr)
@pytest.mark.parametrize("blob_rows", [[10], [3, 0, 4, 3]], ids=["one-blob", "uneven"])
def test_partial_row_write_into_rows_never_written(f: Any, key: Any, blob_rows: list[int]) -> None:
    c = f.create("y", ("f8", 3), size=10, blob_rows=blob_rows)
    ref = np.zeros((10, 3))
    shape = ref[key].shape
    value = np.arange(1, 1 + int(np.prod(shape)), dtype="f8").reshape(shape)
    ref[key] = value
    c[key] = value
    # in each blob, the rows up to the last one written read as numpy says
    # (zeros where nothing was written); the rows after it raise
    written = np.any(ref != 0, axis=1)
    first = 0
    for n in blob_rows:
        rows = np.arange(first, first + n)
        hit = rows[written[rows]]
        end = int(hit.max()) + 1 if len(hit) else first
        np.testing.assert_array_equal(c[first:end], ref[first:end])
        for r in range(end, first + n):
            with pytest.raises(colfile.IncompleteError, match=rf"rows {end}\.\.{first + n - 1} "):
                c[r]
        first += n
    # once the rest is written, the whole column does
    c[~written] = ref[~written]
    np.testing.assert_array_equal(c[:], ref)


def test_issue_example_vector_column(f: Any) -> None:
    c = f.create("y", ("f8", 3), size=10)
    c[0:5, :] = np.ones((5, 3))
    c[5:10, 0:3] = np.full((5, 3), 2.0)
    np.testing.assert_array_equal(c[:], np.r_[np.ones((5, 3)), np.full((5, 3), 2.0)])
    d = f.create("z", ("i4", 2), size=6, nfile=2)
    d[0:6, 0] = np.arange(6)
    d[0:6, 1] = -np.arange(6)
    np.testing.assert_array_equal(d[:], np.c_[np.arange(6), -np.arange(6)])


def test_partial_write_keeps_written_components(f: Any) -> None:
    c = f.create("y", ("i8", 3), size=6, nfile=2)
    c[:] = np.arange(18).reshape(6, 3)
    c[1:5, 1] = -1
    ref = np.arange(18).reshape(6, 3)
    ref[1:5, 1] = -1
    np.testing.assert_array_equal(c[:], ref)


def test_reading_rows_never_written_raises_incomplete_error(f: Any) -> None:
    c = f.create("y", ("f8", 3), size=10, nfile=2)
    c[0:3] = np.ones((3, 3))
    with pytest.raises(colfile.IncompleteError) as info:
        c[:]
    msg = str(info.value)
    assert c.path in msg and "'y'" in msg and "rows 3..4" in msg and "never written" in msg
    assert isinstance(info.value, colfile.FormatError)  # old handlers still catch it
    with pytest.raises(colfile.IncompleteError, match="rows 5..9"):
        c[7]
    # rows skipped before a written one read as zeros (the fill value)
    c[8] = [8, 8, 8]
    np.testing.assert_array_equal(c[5:9], [[0, 0, 0]] * 3 + [[8, 8, 8]])
    with pytest.raises(colfile.IncompleteError, match="rows 9..9"):
        c[9]


def test_close_warns_about_rows_never_written(path: str) -> None:
    with colfile.File(path, "w") as f:
        c = f.create("y", "f8", size=10, nfile=2)
        c[0:3] = 1.0
        with pytest.warns(colfile.IncompleteWarning) as rec:
            c.close()
        msg = str(rec[0].message)
        assert c.path in msg and "'y'" in msg and "rows 3..4, 5..9" not in msg
        assert "7 row(s)" in msg and "rows 3..9" in msg
        full = f.create("full", "f8", size=4, nfile=2)
        full[:] = 1.0
        empty = f.create("empty", "f8", size=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            full.close()  # complete: no warning
            empty.close()
        g = f["y"]  # opened, not created: its rows are not this handle's to fill
        g.attrs["a"] = 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            g.close()
        # growing adds rows this handle must fill
        a = f["full"]
        a.append(np.ones(3), nfile=1)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            a.close()
        b = f["full"]
        first_new = b.nfile
        b._call("cf_column_grow", 4, 2)  # an append of rows not written yet
        b._made_blobs_from(first_new)
        b[7:9] = 2.0
        with pytest.warns(colfile.IncompleteWarning, match=r"rows 9\.\.10"):
            b.close()
    with colfile.File(path) as f:
        with pytest.raises(colfile.IncompleteError):
            f["full"][:]
        np.testing.assert_array_equal(f["full"][:9], [1.0] * 7 + [2.0] * 2)


def test_file_close_and_garbage_collection_warn_too(path: str) -> None:
    f = colfile.File(path, "w")
    c = f.create("p/q", ("i4", 2), size=5)
    c[0:2, 1] = 7
    with pytest.warns(colfile.IncompleteWarning, match=r"'p/q'.*rows 2\.\.4"):
        f.close()
    assert c.closed
    f = colfile.File(path, "a")
    with pytest.warns(colfile.IncompleteWarning, match=r"'r'.*rows 1\.\.2"):
        f.create("r", "i4", size=3)[0] = 1  # the handle dies with the statement
        gc.collect()
    f.close()


def test_deferred_close_warns(path: str) -> None:
    with colfile.File(path, "w", deferred=True) as f:
        c = f.create("y", "i4", size=4)
        c[0:1] = 1
        with pytest.warns(colfile.IncompleteWarning, match=r"rows 1\.\.3"):
            c.close()


def test_check_reports_rows_never_written(path: str, capsys: Any) -> None:
    with colfile.File(path, "w") as f:
        c = f.create("y", "f8", size=10, nfile=2)
        c[0:3] = 1.0
        with pytest.warns(colfile.IncompleteWarning):
            c.close()
    rc = cli_main(["check", path])
    out = capsys.readouterr()
    assert rc != 0
    text = out.out + out.err
    assert "rows 3-4" in text and "rows 5-9" in text


def _store(f: Any, lock: bool) -> None:
    import dask.array as da

    rng = np.random.default_rng(5)
    ref = rng.normal(size=(1000, 4))
    x = da.from_array(ref, chunks=(130, 3))  # chunks split rows and components
    c = f.create("v", ("f8", 4), size=1000, nfile=3)
    da.store(x, c, lock=lock, scheduler="threads", num_workers=4)
    np.testing.assert_array_equal(c[:], ref)
    s = f.create("s", "i8", size=1000, nfile=2)
    da.store(da.arange(1000, chunks=77), s, lock=lock, scheduler="threads")
    np.testing.assert_array_equal(s[:], np.arange(1000))


@pytest.mark.parametrize("lock", [True, False], ids=["locked", "unlocked"])
def test_dask_store_onto_vector_column(path: str, lock: bool) -> None:
    pytest.importorskip("dask.array")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every row written: no warning
        with colfile.File(path, "w") as f:
            _store(f, lock)
    assert cli_main(["check", path]) == 0
    with colfile.File(path) as f:
        assert f["v"].shape == (1000, 4)


def test_threads_filling_components_of_the_same_rows(f: Any) -> None:
    c = f.create("v", ("i8", 4), size=4000, nfile=2)
    barrier = threading.Barrier(4)

    def fill(j: int) -> None:
        barrier.wait()
        for a in range(0, 4000, 250):
            c[a:a + 250, j] = np.arange(a, a + 250) * 10 + j

    threads = [threading.Thread(target=fill, args=(j,)) for j in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ref = np.arange(4000)[:, None] * 10 + np.arange(4)
    np.testing.assert_array_equal(c[:], ref)


def test_mpi_python_path_single_rank(path: str) -> None:
    """The MPI Column (comm=COMM_SELF) writes part of rows the same way."""
    mpi4py = pytest.importorskip("mpi4py")
    code = f"""
import warnings, numpy as np, colfile
from mpi4py import MPI
with colfile.File({path!r}, "w", comm=MPI.COMM_SELF) as f:
    c = f.create("y", ("f8", 3), size=10)
    c[0:5, 0] = 1.0
    c[5:10, :] = 2.0
    assert c[:5, 0].tolist() == [1.0] * 5 and c[:5, 1:].sum() == 0
    c[0:5, 1:] = 3.0
with colfile.File({path!r}) as f:
    assert f["y"][:].tolist() == [[1.0, 3.0, 3.0]] * 5 + [[2.0] * 3] * 5
print("ok")
"""
    del mpi4py
    from childenv import child_env  # type: ignore[import-not-found]

    proc = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]


def test_blob_file_cut_short_is_incomplete_not_zeros(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("y", data=np.arange(1.0, 11.0), nfile=2)
    blob = Path(path) / "y" / "000001"
    with open(blob, "r+b") as fh:
        fh.truncate(16)  # rows 7..9 gone, as after a crash of another tool
    with colfile.File(path) as f:
        c = f["y"]
        np.testing.assert_array_equal(c[:7], np.arange(1.0, 8.0))
        with pytest.raises(colfile.IncompleteError, match=r"rows 7\.\.9.*cut short"):
            c[:]
