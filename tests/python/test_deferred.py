"""File(..., deferred=True): column commits in the background.

What a caller of the File sees must not change: the same bytes on disk,
the same columns when it looks, the same errors (raised later, by the
File), and nothing lost when the program ends without closing the File.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import colfile
from colfile import _deferred

from childenv import child_env


def tree(path: str) -> dict[str, bytes]:
    """Every file below ``path`` with its bytes, the catalog left out (it
    records inode numbers and times)."""
    out = {}
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".colfile-catalog"]
        for name in files:
            full = os.path.join(root, name)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, path)] = fh.read()
    return out


def build(path: str, deferred: bool, durable: bool = False) -> None:
    """Enough columns to fill the commit queue, with attributes, groups,
    a column replaced and one rewritten after its close."""
    n = _deferred.QUEUE_LIMIT * 2 + 5
    with colfile.File(path, "w", durable=durable, deferred=deferred) as f:
        f.attrs["BoxSize"] = 250.0
        for i in range(n):
            c = f.create(f"g{i % 3}/c{i:04d}", data=np.arange(4, dtype="i8") + i)
            c.attrs["index"] = i
            c.close()
        with f.create("Position", ("f4", 3), size=10, nfile=2) as c:
            c[:] = np.arange(30, dtype="f4").reshape(10, 3)
        f.create("g0/c0001", data=np.full(7, -1.5))  # replaces a pending one
        c = f.create("late", "i4", size=3)
        c.close()
        c = f["late"]  # reopened: waits for its commit
        c[:] = [1, 2, 3]
        c.close()
        f["g1/"].attrs["unit"] = "Mpc"


@pytest.mark.parametrize("durable", [False, True])
def test_same_files_as_immediate_commits(tmp_path, durable):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    build(a, deferred=False, durable=durable)
    build(b, deferred=True, durable=durable)
    ta, tb = tree(a), tree(b)
    assert sorted(ta) == sorted(tb)
    assert ta == tb
    with colfile.File(b) as f:
        assert f["g0/c0001"][:].tolist() == [-1.5] * 7
        assert f["late"][:].tolist() == [1, 2, 3]
        assert int(f["g2/c0005"].attrs["index"]) == 5
        assert f["Position"][9].tolist() == [27, 28, 29]


def test_the_file_sees_what_was_closed(tmp_path):
    path = str(tmp_path / "f")
    with colfile.File(path, "w", durable=False, deferred=True) as f:
        for i in range(20):
            f.create(f"c{i:02d}", data=np.arange(i + 1)).close()
        # listing and the one-call attributes wait for the commits
        assert f.columns == [f"c{i:02d}" for i in range(20)]
        assert "c19" in f and len(f) == 20
        f.create("x", data=np.ones(3)).close()
        assert f.column_attrs()["x"] == {}
        f.create("y", data=np.ones(2)).close()
        assert f["y"][:].tolist() == [1.0, 1.0]
        f.create("z", data=np.ones(2)).close()
        del f["z"]
        assert "z" not in f
        f.create("w", data=np.ones(2)).close()
        f.flush()
        # another handle (another process would see the same) after flush
        with colfile.File(path) as g:
            assert g["w"][:].tolist() == [1.0, 1.0]
            assert g["c07"][:].tolist() == list(range(8))


def attempt(f: colfile.File, name: str) -> str:
    """Create and close column ``name``: what happened, as text."""
    try:
        f.create(name, data=np.arange(2)).close()
        return f"created {name}"
    except colfile.Error as exc:
        return type(exc).__name__


def run_python(script: str) -> None:
    """Run ``script`` in a fresh interpreter that imports this colfile."""
    subprocess.run([sys.executable, "-c", script], check=True, env=child_env(), timeout=120)


def test_names_below_and_above_wait(tmp_path):
    """A column and columns below its name (refused or not) give what
    immediate commits give."""
    outcomes = []
    for deferred in (False, True):
        path = str(tmp_path / f"f{deferred}")
        got = []
        with colfile.File(path, "w", durable=False, deferred=deferred) as f:
            f.create("a", data=np.arange(3)).close()
            got.append(attempt(f, "a/b"))  # below a pending column
            f.create("p/q", data=np.arange(2)).close()
            got.append(attempt(f, "p"))  # above one
            got.append(f.columns)
        got.append(sorted(tree(path)))
        outcomes.append(got)
    assert outcomes[0] == outcomes[1]


def stage_of(path: str, name: str) -> str:
    (stage,) = glob.glob(os.path.join(path, f".colfile-stage.{name}.*"))
    return stage


def test_a_failed_commit_is_raised_by_the_file(tmp_path):
    path = str(tmp_path / "f")
    # immediate: close raises
    with colfile.File(path, "w", durable=False) as f:
        c = f.create("gone", data=np.arange(3))
        shutil.rmtree(stage_of(path, "gone"))
        with pytest.raises(colfile.Error) as immediate:
            c.close()
    # deferred: close returns, the next look at the File raises the same
    with colfile.File(path, "w", durable=False, deferred=True) as f:
        f.create("kept", data=np.arange(2)).close()
        c = f.create("gone", data=np.arange(3))
        shutil.rmtree(stage_of(path, "gone"))
        c.close()
        assert c.closed
        with pytest.raises(colfile.Error) as deferred:
            f.columns
        assert type(deferred.value) is type(immediate.value)
        # the same message, but for the staging directory's random part
        same = re.compile(r"\.colfile-stage\.gone\.\d+\.[0-9a-f]+")
        assert same.sub("STAGE", str(deferred.value)) == same.sub("STAGE", str(immediate.value))
        assert os.path.join(path, ".colfile-stage.gone.") in str(deferred.value)
        # reported once; the File goes on
        assert f.columns == ["kept"]
    with colfile.File(path) as f:
        assert f.columns == ["kept"]


def test_repr_leaves_a_failure_to_the_file(tmp_path):
    """A Group's repr counts its columns, which waits for the commits; a
    failure is not raised there (nor lost), the next look at the File
    raises it."""
    path = str(tmp_path / "f")
    with colfile.File(path, "w", durable=False, deferred=True) as f:
        f.create("g/kept", data=np.arange(2)).close()
        g = f["g/"]
        c = f.create("g/gone", data=np.arange(3))
        shutil.rmtree(stage_of(os.path.join(path, "g"), "gone"))
        c.close()
        assert "a deferred commit failed" in repr(g)
        assert "a deferred commit failed" in repr(g)
        with pytest.raises(colfile.Error, match="colfile-stage.gone"):
            f.columns
        assert repr(g).endswith("(1 columns)>")


def test_close_raises_every_failure_once(tmp_path):
    path = str(tmp_path / "f")
    f = colfile.File(path, "w", durable=False, deferred=True)
    bad = [f"bad{i:02d}" for i in range(20)]  # more than are taken from the core at once
    for name in bad:
        c = f.create(name, data=np.arange(3))
        shutil.rmtree(stage_of(path, name))
        c.close()
    f.create("ok", data=np.arange(3)).close()
    with pytest.raises(colfile.Error) as info:
        f.close()
    assert "/.colfile-stage.bad00." in str(info.value)
    if sys.version_info >= (3, 11):
        notes = [n for n in info.value.__notes__ if "19 more deferred commit(s) failed" in n]
        assert len(notes) == 1
        assert [n for n in bad[1:] if f"/.colfile-stage.{n}." not in notes[0]] == []
    assert f.closed
    f.close()  # nothing left to raise
    with colfile.File(path) as g:
        assert g.columns == ["ok"]


def test_commits_finish_when_the_program_ends_without_close(tmp_path):
    path = str(tmp_path / "f")
    script = textwrap.dedent(f"""
        import numpy as np, colfile
        f = colfile.File({path!r}, "w", durable=False, deferred=True)
        for i in range(300):
            c = f.create("c%03d" % i, data=np.arange(5) + i)
            c.attrs["index"] = i
            c.close()
        # no f.close(): the pending commits must still land
    """)
    run_python(script)
    with colfile.File(path) as f:
        assert len(f.columns) == 300
        attrs = f.column_attrs()
        for i in (0, 150, 299):
            assert f[f"c{i:03d}"][:].tolist() == list(range(i, i + 5))
            assert int(attrs[f"c{i:03d}"]["index"]) == i


def test_read_only_files_and_options(tmp_path):
    path = str(tmp_path / "f")
    with colfile.File(path, "w", deferred=True) as f:
        f.create("a", data=np.arange(3)).close()
    with colfile.File(path, "r", deferred=True) as f:  # nothing to commit
        assert f["a"][:].tolist() == [0, 1, 2]
        assert f._commits is None


def test_a_forked_child_leaves_the_parents_commits_alone(tmp_path):
    """After fork, the child neither hangs on the parent's queue nor
    commits it a second time; its own closes are committed; the parent's
    queue is committed by the parent."""
    path = str(tmp_path / "f")
    script = textwrap.dedent(f"""
        import os, signal, numpy as np, colfile
        f = colfile.File({path!r}, "w", durable=False, deferred=True)
        f.create("first", data=np.arange(3)).close()
        f._commits.settle()
        hold = colfile._ffi.lib().cf_committer_hold
        hold(f._commits._q, 1)  # the parent's next closes stay queued
        for i in range(5):
            f.create("p%d" % i, data=np.arange(4) + i).close()
        pid = os.fork()
        if pid == 0:
            signal.alarm(30)  # a hang fails the test instead of stalling it
            ok = not f._commits.pending() and f.columns == ["first"]
            f.create("child", data=np.arange(6)).close()
            f._settle()
            ok = ok and os.path.isdir(os.path.join({path!r}, "child"))
            ok = ok and not any(os.path.exists(os.path.join({path!r}, "p%d" % i))
                                for i in range(5))
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        hold(f._commits._q, 0)
        f.close()
        assert os.waitstatus_to_exitcode(status) == 0, status
    """)
    run_python(script)
    with colfile.File(path) as f:
        assert f.columns == ["child", "first", "p0", "p1", "p2", "p3", "p4"]
        for i in range(5):
            assert f[f"p{i}"][:].tolist() == list(range(i, i + 4))
        assert f["child"][:].tolist() == list(range(6))
    assert not [n for n in os.listdir(path) if n.startswith(".") and n != ".colfile-catalog"]


def test_a_forked_child_lets_go_of_the_parents_writers(tmp_path):
    """A writable column open at a fork is the parent's: in the child it is
    closed without a commit, so that the child's exit commits nothing and
    the child's inherited descriptor does not keep the column's writer lock
    held (the parent could not write the column again while it lives)."""
    path = str(tmp_path / "f")
    script = textwrap.dedent(f"""
        import os, sys, numpy as np, colfile
        f = colfile.File({path!r}, "w", durable=False)
        c = f.create("x", data=np.arange(4))
        up_r, up_w = os.pipe()
        down_r, down_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(up_w, b"1" if c.closed else b"0")
            os.read(down_r, 1)
            sys.exit(0)  # a normal exit: finalizers run, and must commit nothing
        ok = os.read(up_r, 1) == b"1"
        c.close()
        with colfile.File({path!r}, "a") as g:
            y = g["x"]
            y[0:1] = [9]  # takes the writer lock: not BusyError
            y.close()
        os.write(down_w, b"x")
        _, status = os.waitpid(pid, 0)
        assert ok and os.waitstatus_to_exitcode(status) == 0, (ok, status)
        f.close()
    """)
    run_python(script)
    with colfile.File(path) as f:
        assert f.columns == ["x"]
        assert f["x"][:].tolist() == [9, 1, 2, 3]
    assert [n for n in os.listdir(path) if n.startswith(".")] == [".colfile-catalog"]


def test_a_fork_waits_for_the_batch_being_committed(tmp_path):
    """A fork while the thread closes a batch waits for the batch: the child
    holds no copy of those columns' lock descriptors, so the parent writes
    them again while the child lives (before, some got BusyError)."""
    path = str(tmp_path / "f")
    script = textwrap.dedent(f"""
        import os, sys, time, numpy as np, colfile
        f = colfile.File({path!r}, "w", durable=True, deferred=True)
        c = f._commits
        for i in range(60):
            f.create("c%d" % i, data=np.arange(3) + i).close()
        deadline = time.monotonic() + 30
        L = colfile._ffi.lib()
        def busy():  # handles handed over and not yet closed: a batch in flight
            return L.cf_committer_done(c._q) < c._last
        while not busy() and time.monotonic() < deadline:
            time.sleep(0.0002)
        assert busy(), "no batch was in flight"
        down_r, down_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.read(down_r, 1)  # alive until the parent has written
            os._exit(0)
        busy = []
        f.flush()
        with colfile.File({path!r}, "a", durable=False) as g:
            for i in range(60):
                try:
                    col = g["c%d" % i]
                    col[0:1] = [-i]
                    col.close()
                except colfile.BusyError:
                    busy.append(i)
        os.write(down_w, b"x")
        os.waitpid(pid, 0)
        f.close()
        assert not busy, busy
    """)
    run_python(script)
    with colfile.File(path) as f:
        assert [f[f"c{i}"][:].tolist() for i in range(60)] == [[-i, i + 1, i + 2] for i in range(60)]


def test_a_writer_killed_with_commits_pending(tmp_path):
    """os._exit with commits queued: every column is absent or whole, and
    the File passes colfile's checks once repair has removed the leftovers
    of the commits that never ran."""
    path = str(tmp_path / "f")
    n = 400
    script = textwrap.dedent(f"""
        import os, numpy as np, colfile
        f = colfile.File({path!r}, "w", durable=False, deferred=True)
        for i in range({n}):
            if i == {n} - 30:
                # once the queue is empty, hold the committer: the last 30
                # columns stay queued
                f._commits.settle()
                colfile._ffi.lib().cf_committer_hold(f._commits._q, 1)
            c = f.create("c%03d" % i, data=np.arange(50) + i)
            c.attrs["index"] = i
            c.close()
        os._exit(0)  # no close, no finalizers, commits still queued
    """)
    run_python(script)
    with colfile.File(path, "a") as f:
        names = f.columns
        assert names == [f"c{i:03d}" for i in range(n - 30)]  # the exit cut the queue short
        for name in names:
            i = int(name[1:])
            assert f[name][:].tolist() == list(range(i, i + 50))
            assert int(f[name].attrs["index"]) == i
            assert f[name].verify_blob(0) == {"OK"}
        f.cleanup()
    assert not [e for e in os.listdir(path) if e.startswith(".colfile-") and
                e != ".colfile-catalog"]
