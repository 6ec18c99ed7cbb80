"""Files: modes, listing, groups, removal, creation arguments, life cycle."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile

from childenv import child_env


def make(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(3))


# ----------------------------------------------------------------------
# modes


def test_mode_r(path: str) -> None:
    with pytest.raises(FileNotFoundError) as exc:
        colfile.File(path, "r")
    assert isinstance(exc.value, colfile.NoSuchFileError) and path in str(exc.value)
    assert not os.path.exists(path)
    make(path)
    with colfile.File(path) as f:
        assert f.mode == "r" and not f.writable
        np.testing.assert_array_equal(f["x"][:], [0, 1, 2])
        with pytest.raises(colfile.ReadOnlyError) as exc2:
            f["x"][0] = 5
        assert isinstance(exc2.value, PermissionError)
        with pytest.raises(PermissionError):
            f.create("y", "f8")
        with pytest.raises(PermissionError):
            del f["x"]
    assert [n for n in os.listdir(path) if n != ".colfile-catalog"] == ["x"]  # format.md 8.5


def test_mode_r_plus(path: str) -> None:
    with pytest.raises(FileNotFoundError):
        colfile.File(path, "r+")
    make(path)
    with colfile.File(path, "r+") as f:
        f["x"][0] = 9
        f.create("y", "f8", size=1)
    with colfile.File(path) as f:
        assert f.columns == ["x", "y"] and f["x"][0] == 9


def test_mode_w_creates_and_truncates(path: str) -> None:
    make(path)
    with colfile.File(path, "w") as f:
        assert f.columns == []
        f.create("z", "i4", size=0)
    with colfile.File(path) as f:
        assert f.columns == ["z"]


def test_mode_w_refuses_foreign_directories(tmp_path: Path, lib: Any) -> None:
    d = tmp_path / "notcolfile"
    d.mkdir()
    (d / "precious.txt").write_text("keep me")
    with pytest.raises(colfile.FormatError) as exc:
        colfile.File(str(d), "w")
    assert str(d) in str(exc.value)
    assert (d / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize("mode", ["w-", "x"])
def test_mode_exclusive(path: str, mode: str) -> None:
    with colfile.File(path, mode) as f:
        f.create("a", "f8", size=0)
    with pytest.raises(FileExistsError) as exc:
        colfile.File(path, mode)
    assert isinstance(exc.value, colfile.AlreadyExistsError) and path in str(exc.value)
    with colfile.File(path) as f:
        assert f.columns == ["a"]


def test_mode_a(path: str) -> None:
    with colfile.File(path, "a") as f:
        f.create("a", "f8", size=0)
    with colfile.File(path, "a") as f:
        f.create("b", "f8", size=0)
        assert f.columns == ["a", "b"] and f.writable


def test_bad_mode_and_comm(path: str) -> None:
    for mode in ("rw", "W", "", "r+b"):
        with pytest.raises(ValueError, match="invalid mode"):
            colfile.File(path, mode)
    with pytest.raises(TypeError, match="comm"):  # not a communicator
        colfile.File(path, "w", comm=object())
    assert not os.path.exists(path)


def test_path_is_a_regular_file(tmp_path: Path, lib: Any) -> None:
    p = tmp_path / "plain"
    p.write_text("x")
    with pytest.raises(colfile.FormatError):
        colfile.File(str(p), "r")


def test_pathlike_and_nested_creation(tmp_path: Path, lib: Any) -> None:
    p = tmp_path / "a" / "b" / "c"
    with colfile.File(p, "w") as f:
        assert f.path == str(p)
    assert p.is_dir()


# ----------------------------------------------------------------------
# listing, access, removal


def test_listing_and_mapping_api(wfile: colfile.File) -> None:
    for name in ("b", "a/x", "a/y/z", ".hidden", "c"):
        wfile.create(name, "i4", size=0)
    assert wfile.columns == ["a/x", "a/y/z", "b", "c"]
    assert list(wfile) == wfile.keys() == wfile.columns and len(wfile) == 4
    assert "a/x" in wfile and ".hidden" in wfile and "nope" not in wfile
    assert "a/" in wfile and "a/y/" in wfile and "q/" not in wfile and 3 not in wfile
    assert wfile.get("nope") is None and wfile.get("b").name == "b"
    assert [c.name for c in wfile.values()] == wfile.columns
    assert [k for k, _ in wfile.items()] == wfile.columns
    assert wfile["a/x"] is wfile["a/x"]  # one live handle per name


def test_no_column_below_a_header_only_block(wfile: colfile.File) -> None:
    # a listing hides what is below a column (bigfile's too: fixture
    # shadow/), so colfile refuses to make a column there
    wfile.create("grp", None)
    with pytest.raises(colfile.ColumnExistsError, match="cannot hold columns"):
        wfile.create("grp/sub/col", "i4", size=2)
    wfile.create("other", "f4", size=1)
    assert wfile.columns == ["grp", "other"]


def test_missing_column(wfile: colfile.File) -> None:
    with pytest.raises(KeyError) as exc:
        wfile["nope"]
    assert isinstance(exc.value, colfile.ColumnNotFoundError)
    assert "nope" in str(exc.value) and wfile.path in str(exc.value)
    with pytest.raises(KeyError):
        wfile["nope/"]
    wfile.create("g/c", "i4", size=0)
    with pytest.raises(KeyError, match=r"use \['g/'\]"):
        wfile["g"]  # a directory, not a column
    with pytest.raises(ValueError):
        wfile.create("h", None, data=[1])


def test_delete(path: str) -> None:
    with colfile.File(path, "w") as f:
        col = f.create("a/b", data=np.arange(4), nfile=2)
        col.attrs["k"] = 1
        f.create("a/c", "i4", size=0)
        del f["a/b"]
        assert col.closed
        assert f.columns == ["a/c"] and "a/b" not in f
        with pytest.raises(KeyError):
            del f["a/b"]
        del f["a/"]["c"]
        assert f.columns == []
    assert not Path(path, "a", "b").exists()


@pytest.mark.parametrize("name", ["a b", "../up", "", "x//y", "a/./b", "tab\t", "/abs"])
def test_invalid_names(wfile: colfile.File, name: str) -> None:
    with pytest.raises(colfile.InvalidNameError) as exc:
        wfile.create(name, "f8", size=1)
    assert isinstance(exc.value, ValueError)
    assert not Path(wfile.path).parent.joinpath("up").exists()


@pytest.mark.parametrize("dtype", ["U3", "O", "M8[s]", "V4", "f16", "c32", [("a", "i4")],
                                   ("f8", (2, 2))])
def test_invalid_dtypes(wfile: colfile.File, dtype: Any) -> None:
    with pytest.raises(colfile.DTypeError) as exc:
        wfile.create("c", dtype, size=1)
    assert isinstance(exc.value, TypeError)
    assert "c" not in wfile


def test_create_arguments(wfile: colfile.File) -> None:
    c = wfile.create("c", "f8", size=10, nfile=7)
    assert c.blob_rows == [1, 1, 2, 1, 2, 1, 2]
    c = wfile.create("d", "f8", size=3, nfile=7)
    assert c.blob_rows == [0, 0, 1, 0, 1, 0, 1]
    c = wfile.create("e", "u1", blob_rows=[2, 0, 5])
    assert c.size == 7 and c.nfile == 3
    with pytest.raises(ValueError):
        wfile.create("f", "u1", size=3, blob_rows=[1, 1])
    with pytest.raises(colfile.InvalidArgumentError) as exc:
        wfile.create("g", "f8", size=3, nfile=0)
    assert isinstance(exc.value, ValueError)
    assert wfile.create("h", "f8", size=0, nfile=0).nfile == 0


def test_recreate_closes_the_old_handle(wfile: colfile.File) -> None:
    old = wfile.create("c", "f8", size=2)
    new = wfile.create("c", "i4", size=5, overwrite=True)
    assert old.closed and new.dtype == np.dtype("i4") and wfile["c"] is new
    with pytest.raises(colfile.ClosedError):
        old[:]


def test_closed_file(path: str) -> None:
    f = colfile.File(path, "w")
    col = f.create("c", "f8", size=1)
    attrs = f.attrs
    f.close()
    assert f.closed and col.closed and "closed" in repr(f)
    for action in (lambda: f["c"], lambda: f.columns, lambda: f.create("d", "f8"),
                   lambda: attrs["x"], lambda: col[0]):
        with pytest.raises(colfile.ClosedError):
            action()
    f.close()


def test_repr(wfile: colfile.File) -> None:
    wfile.create("g/x", "f8", size=1)
    assert wfile.path in repr(wfile) and "mode='w'" in repr(wfile)
    assert "'g'" in repr(wfile["g/"]) and "1 columns" in repr(wfile["g/"])


# ----------------------------------------------------------------------
# groups


def test_groups(path: str) -> None:
    with colfile.File(path, "w") as f:
        g = f.require_group("1")
        assert g.name == "1" and g.path == os.path.join(path, "1")
        g.create("Position", ("f8", 3), size=2)
        g.create("sub/ID", data=np.arange(2))
        g.attrs["Mass"] = 0.5
        assert f.require_group("1").attrs["Mass"] == 0.5  # existing: untouched
        with pytest.raises(FileExistsError):
            f.create_group("1")
        h = f.create_group("empty")
        assert h.columns == [] and len(h) == 0
    assert Path(path, "1", "attr-v2").exists() and not Path(path, "1", "header").exists()
    with colfile.File(path) as f:
        g = f["1/"]
        assert g.file is f
        assert g.columns == ["Position", "sub/ID"] == list(g)
        assert g["Position"] is f["1/Position"]
        assert g["sub/"]["ID"][1] == 1 and g["sub/"].name == "1/sub"
        assert g.attrs["Mass"] == 0.5 and "Mass" not in f.attrs
        assert "Position" in g and "1/Position" not in g
        assert dict(f["empty/"].attrs) == {}
        with pytest.raises(KeyError):
            g["nope"]


def test_group_attrs_of_missing_group_in_read_mode(path: str) -> None:
    make(path)
    os.makedirs(os.path.join(path, "bare"))
    with colfile.File(path) as f:
        assert dict(f["bare/"].attrs) == {} and len(f["bare/"].attrs) == 0


def test_flush_commits_headers(path: str) -> None:
    with colfile.File(path, "w") as f:
        col = f.create("c", "u1", size=3)
        col[:] = [1, 2, 3]
        f.flush()
        assert Path(path, "c", "header").read_text().splitlines()[3] == "000000: 3 : 6 : 6"


def test_attribute_handles_are_shared(wfile: colfile.File) -> None:
    wfile.attrs["a"] = 1
    assert wfile["."].attrs["a"] == 1  # the same handle as f.attrs
    wfile["."].attrs["b"] = 2
    assert dict(wfile.attrs) == {"a": 1, "b": 2}
    g = wfile.require_group("g")
    g.attrs["c"] = 3
    assert wfile["g/."].attrs["c"] == 3 and wfile["g/"].attrs["c"] == 3


def test_concurrent_opens_share_one_handle(wfile: colfile.File) -> None:
    import threading

    wfile.create("x", "f8", size=1)
    seen: list[Any] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(200):
            col = wfile["x"]
            with lock:
                seen.append(col)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in seen}) == 1


@pytest.mark.parametrize("name", ["a\x00b", "\x00", "grp/\x00/x"])
def test_nul_in_names_is_refused_before_c_sees_it(path: str, name: str) -> None:
    """A NUL would cut the C string short and silently name another column."""
    with colfile.File(path, "w") as f:
        with pytest.raises(colfile.errors.InvalidNameError, match="NUL"):
            f.create(name, "f8", size=1)
        with pytest.raises(colfile.errors.InvalidNameError, match="NUL"):
            f.attrs[name] = 1
        with pytest.raises(colfile.errors.InvalidNameError, match="NUL"):
            f[name]
        assert f.columns == []
        assert sorted(os.listdir(path)) in ([], ["attr-v2"])
    with pytest.raises(colfile.errors.InvalidNameError, match="NUL"):
        colfile.File(path + "\x00x", "w")


def test_read_only_file_released_without_close(path: str) -> None:
    # a read-only File frees its handle when dropped (no finalizer); its
    # columns stay readable, a writable File keeps its finalizer
    with colfile.File(path, "w") as w:
        w.create("x", data=np.arange(10, dtype="<i8"))
        assert w._finalizer is not None
    col = colfile.File(path)["x"]  # the File is gone at once
    assert col[2:5].tobytes() == np.arange(2, 5, dtype="<i8").tobytes()
    f = colfile.File(path)
    assert f._finalizer is None and f.path == path
    c = f["x"]
    f.close()
    f.close()  # twice: harmless
    assert c.closed and f.closed
    with pytest.raises(colfile.ClosedError):
        f["x"]


def test_a_forked_child_does_not_keep_a_dead_parents_locks(tmp_path):
    """A writable File keeps its directories' lock files open, and a child
    made by fork inherits those descriptors, with the bytes its parent
    holds locked through them.  The child closes its copies at the fork:
    when the parent dies holding a column's lock, the next writer of the
    column is not refused for as long as the child lives."""
    import subprocess
    import sys
    import textwrap

    path = str(tmp_path / "f")
    script = textwrap.dedent(f"""
        import os, sys, numpy as np, colfile
        import time
        f = colfile.File({path!r}, "w", durable=False)
        c = f.create("x", data=np.arange(4))  # holds x's lock
        pid = os.fork()
        if pid == 0:
            # fork() has returned: the after-fork handlers closed the copies
            open({str(tmp_path / "ready")!r}, "w").close()
            time.sleep(120)  # lives until the test kills it
            os._exit(0)
        print(pid, flush=True)
        os._exit(0)  # dies holding it, closing nothing
    """)
    child = subprocess.Popen([sys.executable, "-c", script], env=child_env(), stdout=subprocess.PIPE,
                             text=True)
    grandchild = int(child.stdout.readline())
    try:
        assert child.wait(timeout=60) == 0
        ready = tmp_path / "ready"
        for _ in range(6000):
            if ready.exists():
                break
            time.sleep(0.01)
        assert ready.exists(), "the forked child never got past fork()"
        os.kill(grandchild, 0)  # still alive
        with colfile.File(path, "a", durable=False) as f:
            f.create("x", data=np.arange(3)).close()  # not BusyError
            assert f["x"][:].tolist() == [0, 1, 2]
    finally:
        os.kill(grandchild, 9)
