"""Readers see one version (docs/reliability.md): a column open in this
process keeps reading the version it opened while other processes replace
or remove the column, or raises ReplacedError; never rows of two versions,
never a false ChecksumError.  The writers are real child processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import colfile

from childenv import child_env


def _child(code: str) -> None:
    script = "import numpy as np, colfile\n" + textwrap.dedent(code)
    subprocess.run([sys.executable, "-c", script], check=True, env=child_env(), timeout=120)


def _replace(path: str, dtype: str, values: str, nfile: int) -> None:
    """Another process replaces column x (and brings the catalog up to date)."""
    _child(f"""
        with colfile.File({path!r}, "r+") as f:
            f.create("x", data=np.asarray({values}, dtype={dtype!r}), nfile={nfile}, overwrite=True)
    """)


def _old(path: str) -> np.ndarray:
    data = np.arange(10, dtype="f8") + 0.25
    with colfile.File(path, "w") as f:
        f.create("x", data=data, nfile=2)
    return data


def test_replaced_error_is_a_file_not_found_error() -> None:
    assert issubclass(colfile.ReplacedError, colfile.NoSuchFileError)
    assert issubclass(colfile.ReplacedError, FileNotFoundError)
    assert colfile.errors.error_class(colfile.errors.CF_EREPLACED) is colfile.ReplacedError


@pytest.mark.parametrize("verify", [False, True])
def test_replaced_with_another_dtype(path: str, verify: bool) -> None:
    old = _old(path)
    with colfile.File(path, "r", verify=verify) as f:
        col = f["x"]
        np.testing.assert_array_equal(col[:5], old[:5])
        _replace(path, "i8", "np.arange(1000, 1012)", 3)
        with pytest.raises(colfile.ReplacedError) as exc:
            col[:]
        assert "x" in str(exc.value) and "reopen" in str(exc.value)
        assert exc.value.code_name == "CF_EREPLACED"
        # the blob it has open still gives the old bytes
        np.testing.assert_array_equal(col[:5], old[:5])
        col.close()
        again = f["x"]
        assert again.dtype == np.dtype("i8")
        np.testing.assert_array_equal(again[:], np.arange(1000, 1012))


def test_same_dtype_other_values_never_a_checksum_error(path: str) -> None:
    old = _old(path)
    with colfile.File(path, "r", verify=True) as f:
        col = f["x"]
        np.testing.assert_array_equal(col[:1], old[:1])
        _replace(path, "f8", "np.arange(10) + 0.5", 2)
        try:
            got = col[:]
        except colfile.ReplacedError:
            pass
        else:
            np.testing.assert_array_equal(got, old)


def test_removed_under_the_reader(path: str) -> None:
    old = _old(path)
    with colfile.File(path, "r") as f:
        col = f["x"]
        np.testing.assert_array_equal(col[:5], old[:5])
        _child(f"""
            with colfile.File({path!r}, "r+") as f:
                del f["x"]
        """)
        with pytest.raises(FileNotFoundError) as exc:
            col[5:]
        assert isinstance(exc.value, colfile.ReplacedError)


def test_writer_opened_before_a_replace(path: str) -> None:
    _old(path)
    with colfile.File(path, "r+") as f:
        col = f["x"]
        _replace(path, "i8", "np.arange(1000, 1012)", 3)
        with pytest.raises(colfile.ReplacedError, match="reopen"):
            col[:] = np.zeros(10)
        col.close()
    with colfile.File(path, "r", verify=True) as f:
        np.testing.assert_array_equal(f["x"][:], np.arange(1000, 1012))


def test_writer_opened_before_another_commit(path: str) -> None:
    """Another process updates the rows in place between this writer's
    open and its first change: committing this writer's header would
    undo that update."""
    _old(path)
    with colfile.File(path, "r+") as f:
        col = f["x"]
        _child(f"""
            with colfile.File({path!r}, "r+") as f:
                f["x"][:] = np.arange(10) + 5000.25
        """)
        with pytest.raises(colfile.BusyError, match="changed by another writer"):
            col[:5] = np.zeros(5)
        col.close()
    with colfile.File(path, "r", verify=True) as f:
        np.testing.assert_array_equal(f["x"][:], np.arange(10) + 5000.25)


def test_racing_replace_loop(path: str) -> None:
    """A child replaces x 200 times, alternating dtype and layout; this
    process opens (through the catalog or not) and reads it, verified."""
    _old(path)
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import numpy as np, colfile
        for k in range(2, 202):
            with colfile.File({path!r}, "r+", durable=False) as f:
                if k % 2:
                    f.create("x", data=np.arange(10) + k * 1000 + 0.25, nfile=2, overwrite=True)
                else:
                    f.create("x", data=np.arange(12, dtype="i8") + k * 1000, nfile=3, overwrite=True)
    """)], env=child_env())
    reads = replaced = 0
    deadline = time.monotonic() + 120
    try:
        while writer.poll() is None and time.monotonic() < deadline:
            with colfile.File(path, "r", verify=True) as f:
                col = f["x"]
                try:
                    first = col[:1]
                    got = col[:]
                except colfile.ReplacedError:
                    replaced += 1
                    continue
                finally:
                    reads += 1
                k = int(got[0] // 1000)
                if got.dtype == np.dtype("f8"):
                    np.testing.assert_array_equal(got, np.arange(10) + k * 1000 + 0.25)
                else:
                    assert got.dtype == np.dtype("i8")
                    np.testing.assert_array_equal(got, np.arange(12) + k * 1000)
                assert first[0] == got[0]
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    assert reads > 20
    print(f"{reads} reads, {replaced} ReplacedError")
    # afterwards: the last version, whole
    with colfile.File(path, "r", verify=True) as f:
        np.testing.assert_array_equal(f["x"][:], np.arange(10) + 201 * 1000 + 0.25)
