"""Removals and truncation keep the writer lock and the crash promise.

``del f[name]`` (``colfile rm``), ``del f["grp/"]`` (``colfile rm -r``) and
``File(path, "w")`` take the writer locks of what they remove first: while
another process writes a column (in place, appending, creating it) they
raise ``BusyError`` and remove nothing.  A removal racing a replace leaves
the column absent, old or new, never a header with blobs missing.  Also:
a symbolic link where the catalog belongs, read-only file systems, and
blobs left without a header."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile
from childenv import child_env

NBLOB = 60  # blobs of the raced column: small, many


def _make(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("x", data=np.arange(10, dtype="i8"))
        f.create("g/y", data=np.arange(10, dtype="i8"))
        f.create("g/h/z", data=np.arange(10, dtype="i8"))


# A child that takes a column's lock in one of three ways, says "ready" and
# waits for a line on stdin before closing.
HOLDER = r"""
import sys, numpy as np, colfile
path, how, name = sys.argv[1:4]
f = colfile.File(path, "r+" if how != "create" else "a")
if how == "inplace":
    c = f[name]; c[0:1] = np.array([99], dtype="i8")
elif how == "append":
    c = f[name]; c.append(np.array([7, 8], dtype="i8"))
else:
    c = f.create(name, dtype="i8", size=4)
    c[0:4] = np.arange(4, dtype="i8")
print("ready", flush=True)
sys.stdin.readline()
c.close(); f.close()
"""


class Holder:
    def __init__(self, path: str, how: str, name: str) -> None:
        self.p = subprocess.Popen([sys.executable, "-c", HOLDER, path, how, name],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=child_env())
        assert self.p.stdout is not None
        line = self.p.stdout.readline()
        assert line.strip() == "ready", line

    def end(self) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write("\n")
        self.p.stdin.close()
        assert self.p.wait(timeout=60) == 0


def _tree(path: str) -> set[str]:
    out = set()
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            rel = os.path.relpath(os.path.join(root, n), path)
            if not rel.startswith(".colfile-catalog"):
                out.add(rel)
    return out


@pytest.mark.parametrize("how", ["inplace", "append", "create"])
def test_rm_and_truncate_refused_while_another_process_writes(path: str, how: str, cli: Any) -> None:
    _make(path)
    name = "g/h/z" if how != "create" else "g/h/new"
    h = Holder(path, how, name)
    try:
        before = _tree(path)
        with colfile.File(path, "r+") as f:
            if how != "create":
                with pytest.raises(colfile.BusyError, match="g/h/z"):
                    del f["g/h/z"]
            with pytest.raises(colfile.BusyError, match="g/h"):
                del f["g/"]
        with pytest.raises(colfile.BusyError, match="g/h"):
            colfile.File(path, "w")
        if how != "create":
            status, out, err = cli("rm", path, "g/h/z")
            assert status != 0 and "g/h/z" in err
        status, out, err = cli("rm", "-r", path, "g")
        assert status != 0 and "g/h" in err
        # nothing removed, the writer's staging directory and lock included
        assert _tree(path) == before
    finally:
        h.end()
    with colfile.File(path, "r") as f:
        assert set(f.columns) >= {"x", "g/y", "g/h/z"}
        if how == "inplace":
            assert f["g/h/z"][0] == 99
        if how == "append":
            assert list(f["g/h/z"][-2:]) == [7, 8]
        if how == "create":
            assert list(f["g/h/new"][:]) == [0, 1, 2, 3]
    with colfile.File(path, "r+") as f:
        del f["g/"]
        assert f.columns == ["x"]
    with colfile.File(path, "w") as f:
        assert f.columns == []
    assert not [n for n in os.listdir(path) if n.startswith(".colfile-trash")]


def test_del_group_and_rm_r(path: str, cli: Any) -> None:
    _make(path)
    with colfile.File(path, "r+") as f:
        with pytest.raises(KeyError, match="is a group"):
            del f["g"]
        del f["g/h/"]
        assert f.columns == ["g/y", "x"]
    status, out, err = cli("rm", path, "g")
    assert status != 0 and "-r" in err
    status, out, err = cli("rm", "-rv", path, "g")
    assert status == 0 and "removed g" in out
    with colfile.File(path, "r") as f:
        assert f.columns == ["x"]
    assert not os.path.exists(os.path.join(path, "g"))


# -- rm racing a replace ------------------------------------------------------

# A worker that runs one operation per line of stdin ("<k>") and answers
# with a line: the replacer re-creates column x filled with k over NBLOB
# blobs, the remover removes it.  Failures the lock explains (busy, or no
# such column) are outcomes, not errors.
WORKER = r"""
import sys, time, random, numpy as np, colfile
path, role, nblob = sys.argv[1], sys.argv[2], int(sys.argv[3])
for line in sys.stdin:
    k = int(line)
    time.sleep(random.random() * float(sys.argv[4]))
    try:
        with colfile.File(path, "a", durable=False) as f:
            if role == "replace":
                f.create("x", data=np.full(nblob, k, dtype="i8"), nfile=nblob, overwrite=True).close()
            else:
                del f["x"]
        print("ok", flush=True)
    except (colfile.BusyError, KeyError) as exc:
        print("refused", flush=True)
"""


def _check_x(path: str) -> str:
    """The state of column x: absent, or whole (one value everywhere, every
    blob there and verifying)."""
    if not os.path.exists(os.path.join(path, "x", "header")):
        return "absent"
    with colfile.File(path, "r", verify=True) as f:
        c = f["x"]
        v = c[:]
        assert len(v) == NBLOB and (v == v[0]).all(), v
        for i in range(c.nfile):
            assert not c.verify_blob(i) - {"OK"}, (i, c.verify_blob(i))
    return "whole"


def _race(path: str, rounds: int, spread: float, remover_env: dict[str, str]) -> dict[str, int]:
    with colfile.File(path, "w", durable=False) as f:
        f.create("x", data=np.zeros(NBLOB, dtype="i8"), nfile=NBLOB).close()
    procs = {
        role: subprocess.Popen([sys.executable, "-c", WORKER, path, role, str(NBLOB), str(spread)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env=remover_env if role == "remove" else child_env())
        for role in ("replace", "remove")}
    seen: dict[str, int] = {}
    try:
        for k in range(1, rounds + 1):
            for p in procs.values():
                assert p.stdin is not None
                p.stdin.write(f"{k}\n")
                p.stdin.flush()
            for role, p in procs.items():
                assert p.stdout is not None
                answer = p.stdout.readline().strip()
                assert answer in ("ok", "refused"), (role, answer)
                seen[f"{role} {answer}"] = seen.get(f"{role} {answer}", 0) + 1
            state = _check_x(path)
            seen[state] = seen.get(state, 0) + 1
            # the next round starts from a column in place
            if state == "absent":
                with colfile.File(path, "a", durable=False) as f:
                    f.create("x", data=np.zeros(NBLOB, dtype="i8"), nfile=NBLOB).close()
    finally:
        for p in procs.values():
            if p.stdin:
                p.stdin.close()
            p.wait(timeout=60)
    return seen


def test_rm_racing_a_replace(path: str) -> None:
    seen = _race(path, rounds=120, spread=0.004, remover_env=child_env())
    assert seen.get("whole", 0) + seen.get("absent", 0) == 120


def _delay_shim(tmp: Path) -> str | None:
    """A tiny LD_PRELOAD library that sleeps before every unlink, rmdir and
    rename of the process (widening every removal's window), or None
    without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    src = tmp / "delay.c"
    src.write_text(r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
static void pause_(void)
{
    const char *e = getenv("CF_TEST_DELAY_US");
    long us = e ? atol(e) : 1000;
    struct timespec t = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&t, NULL);
}
int unlink(const char *p)
{
    static int (*real)(const char *);
    if (!real) real = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
    pause_();
    return real(p);
}
int rmdir(const char *p)
{
    static int (*real)(const char *);
    if (!real) real = (int (*)(const char *))dlsym(RTLD_NEXT, "rmdir");
    pause_();
    return real(p);
}
int rename(const char *a, const char *b)
{
    static int (*real)(const char *, const char *);
    if (!real) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    pause_();
    return real(a, b);
}
""")
    so = tmp / "delay.so"
    res = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(so), str(src), "-ldl"],
                         capture_output=True, text=True)
    return str(so) if res.returncode == 0 else None


def test_rm_racing_a_replace_with_slow_unlinks(path: str, tmp_path: Path) -> None:
    """The remover sleeps 1 ms before each unlink, rmdir and rename: a
    removal of NBLOB blobs then spans tens of ms, which the replace lands
    in (before the fix: every time, a header with blobs missing)."""
    so = _delay_shim(tmp_path)
    if so is None:
        pytest.skip("no C compiler for the delay shim")
    env = child_env(LD_PRELOAD=so, CF_TEST_DELAY_US="1000")
    seen = _race(path, rounds=25, spread=0.03, remover_env=env)
    assert seen.get("whole", 0) + seen.get("absent", 0) == 25


# -- symbolic link where the catalog belongs ----------------------------------

@pytest.mark.parametrize("how", ["r+", "repair", "index", "w"])
def test_symlinked_catalog(path: str, tmp_path: Path, how: str, cli: Any) -> None:
    _make(path)
    cat = os.path.join(path, ".colfile-catalog")
    shutil.rmtree(cat, ignore_errors=True)
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep").write_text("mine")
    os.symlink(target, cat)
    if how == "r+":
        with colfile.File(path, "r+") as f:
            f["x"][0:1] = np.array([5], dtype="i8")
            f.attrs["a"] = 1
            assert f["g/y"][1] == 1
    elif how == "w":
        with colfile.File(path, "w") as f:
            f.create("new", data=np.arange(2))
    else:
        status, out, err = cli(how, path)
        assert status == 0, (out, err)
    assert not os.path.islink(cat) and os.path.isdir(cat)
    assert sorted(os.listdir(target)) == ["keep"]
    with colfile.File(path, "r") as f:
        assert f.columns == (["new"] if how == "w" else ["g/h/z", "g/y", "x"])


# -- read-only file systems ---------------------------------------------------

RO_SCRIPT = r"""
import subprocess, sys
for args in (["repair", sys.argv[1]], ["index", sys.argv[1]], ["rm", sys.argv[1], "x"]):
    r = subprocess.run([sys.executable, "-m", "colfile.cli", *args], capture_output=True, text=True)
    print("==", args[0], r.returncode)
    print(r.stdout + r.stderr)
"""


def test_read_only_file_system_no_false_torn_marker(path: str, tmp_path: Path) -> None:
    """repair, index and rm on a read-only mount (a read-only bind mount in
    a private mount namespace) must not report a torn-update marker that
    does not exist."""
    _make(path)
    ro = tmp_path / "ro"
    ro.mkdir()
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) for a read-only bind mount")
    cmd = (f"mount --bind '{path}' '{ro}' && mount -o remount,bind,ro '{ro}' && "
           f"exec '{sys.executable}' -c \"$0\" '{ro}'")
    res = subprocess.run([unshare, "-m", "sh", "-c", cmd, RO_SCRIPT], capture_output=True, text=True,
                         env=child_env(), timeout=120)
    if "== repair" not in res.stdout:
        pytest.skip(f"cannot make a read-only mount here: {res.stderr.strip()}")
    assert "torn-update marker" not in res.stdout, res.stdout
    assert "== repair 0" in res.stdout and "== index 0" in res.stdout, res.stdout
    # rm fails, and says why: the file system is read-only
    assert "== rm 1" in res.stdout and "Read-only file system" in res.stdout, res.stdout
    with colfile.File(path, "r") as f:
        assert "x" in f.columns


# -- blobs without a header ---------------------------------------------------

def test_check_and_repair_blobs_without_a_header(path: str, cli: Any) -> None:
    with colfile.File(path, "w") as f:
        f.create("c2", data=np.arange(40, dtype="i8"), nfile=40).close()
        f.create("g/keep", data=np.arange(3, dtype="i8")).close()
    os.unlink(os.path.join(path, "c2", "header"))
    Path(path, "c2", "my-notes.txt").write_text("mine")
    status, out, err = cli("check", path)
    assert "c2" in out and "header is gone" in out, out
    assert os.path.exists(os.path.join(path, "c2", "000000"))
    status, out, err = cli("repair", path)
    assert status == 0 and "header is gone" in out, out
    assert sorted(os.listdir(os.path.join(path, "c2"))) == ["my-notes.txt"]
    status, out, err = cli("check", path)
    assert status == 0 and "header is gone" not in out, out
    with colfile.File(path, "r") as f:
        assert f.columns == ["g/keep"]


def test_repair_after_a_killed_rm(path: str, cli: Any) -> None:
    """A remover killed (SIGKILL) at a random moment of its removal (the
    first, uninterrupted, trial measures how long one takes): the column is
    whole or absent, ``check`` lists what it left, and repair leaves nothing
    of it."""
    import time
    rng = random.Random(5)
    code = ("import sys, colfile\n"
            "f = colfile.File(sys.argv[1], 'r+', durable=False)\n"
            "print('go', flush=True)\n"
            "del f['big']\n")
    took = 0.0
    killed = 0
    for trial in range(9):
        p = os.path.join(path, str(trial))
        with colfile.File(p, "w", durable=False) as f:
            f.create("big", data=np.arange(1000, dtype="i8"), nfile=1000).close()
        proc = subprocess.Popen([sys.executable, "-c", code, p], stdout=subprocess.PIPE, text=True,
                                env=child_env())
        assert proc.stdout is not None
        proc.stdout.readline()
        start = time.monotonic()
        if trial == 0:
            assert proc.wait(timeout=60) == 0
            took = time.monotonic() - start
        else:
            time.sleep(rng.random() * took)
            proc.kill()
            killed += proc.wait() != 0
        hdr = os.path.exists(os.path.join(p, "big", "header"))
        if hdr:
            with colfile.File(p, "r") as f:
                assert (f["big"][:] == np.arange(1000)).all()
        trash = [n for n in os.listdir(p) if n.startswith(".colfile-trash")]
        status, out, err = cli("check", p)
        for n in trash:
            assert n in out and "interrupted removal" in out, out
        status, out, err = cli("repair", p)
        assert status == 0, (out, err)
        left = sorted(os.listdir(p))
        assert not [n for n in left if n.startswith(".colfile-trash")], left
        if not hdr:
            assert "big" not in left, left
    assert killed >= 1


# -- attribute writes and torn markers under another writer -------------------

def test_attribute_write_refused_while_another_process_writes(path: str) -> None:
    _make(path)
    h = Holder(path, "inplace", "x")
    try:
        with colfile.File(path, "r+") as f:
            with pytest.raises(colfile.BusyError, match="x"):
                f["x"].attrs["unit"] = "m"
            f["g/y"].attrs["unit"] = "s"  # another column is free
    finally:
        h.end()
    with colfile.File(path, "r") as f:
        assert "unit" not in f["x"].attrs
        assert f["g/y"].attrs["unit"] == "s"


def test_a_handle_that_changed_nothing_keeps_a_live_writers_torn_marker(path: str, cli: Any) -> None:
    """Opening a column for writing and closing it without a change (as
    ``colfile rm`` checks its names) must not remove the torn marker of an
    update another process has in progress: were that writer killed, the
    column would look consistent."""
    _make(path)
    marker = os.path.join(path, "x", "colfile-torn")
    h = Holder(path, "inplace", "x")
    try:
        assert os.path.exists(marker)
        with colfile.File(path, "r+") as f:
            f["x"].close()
        assert os.path.exists(marker)
        status, out, err = cli("rm", path, "x")
        assert status != 0
        assert os.path.exists(marker)
    finally:
        h.end()
    assert not os.path.exists(marker)


# -- a group moved away under a File that locked in it before ------------------

def test_lock_file_moved_away_with_its_group_excludes_no_one(path: str, cli: Any) -> None:
    """A File keeps the lock file of each directory it locked in open.  A
    removal of the group moves that file away with the directory (it stays
    linked until the removal deletes it; a killed removal leaves it so).  A
    writer of the File that locked through that descriptor would hold a lock
    no other process sees: a repair or ``rm -r`` of the group made again
    would then delete its staging directory under it."""
    _make(path)
    with colfile.File(path, "a") as f:
        c = f["g/y"]
        c.append(np.array([10], dtype="i8"))  # locks through f's descriptor of g/.colfile-lock
        c.close()
        # what a removal of g killed after its rename leaves
        os.rename(os.path.join(path, "g"), os.path.join(path, ".colfile-trash.g.1.1"))
        new = f.create("g/new", dtype="i8", size=3)
        new[0:3] = np.array([5, 6, 7], dtype="i8")
        stage = [n for n in os.listdir(os.path.join(path, "g")) if n.startswith(".colfile-stage.new.")]
        assert len(stage) == 1
        status, out, err = cli("repair", path)
        assert status == 0, (out, err)
        assert stage[0] not in out, out
        status, out, err = cli("rm", "-r", path, "g")
        assert status != 0 and "g" in err, (out, err)
        assert os.listdir(os.path.join(path, "g")) == stage or \
            sorted(os.listdir(os.path.join(path, "g"))) == sorted(stage + [".colfile-lock"])
        new.close()
    with colfile.File(path, "r") as f:
        assert list(f["g/new"][:]) == [5, 6, 7]
        assert "g/y" not in f.columns


MOVE_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
/* Once, when the process opens (CF_TEST_MOVE_WHEN=open, before the call)
 * or makes (=mkdir, after the call) the path CF_TEST_MOVE_AT, rename
 * CF_TEST_MOVE_DIR to CF_TEST_MOVE_TO: another process's removal landing
 * in exactly that window. */
static int done;
static void maybe_move(const char *when, const char *path)
{
    const char *w = getenv("CF_TEST_MOVE_WHEN"), *at = getenv("CF_TEST_MOVE_AT");
    if (done || !w || !at || strcmp(w, when) != 0 || strcmp(path, at) != 0) return;
    done = 1;
    if (rename(getenv("CF_TEST_MOVE_DIR"), getenv("CF_TEST_MOVE_TO")) != 0) perror("moveshim");
    else fprintf(stderr, "moveshim: moved\n");
}
static mode_t mode_of(int flags, va_list ap)
{
    return (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
}
int open(const char *p, int flags, ...)
{
    static int (*real)(const char *, int, ...);
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    va_list ap; va_start(ap, flags); mode_t m = mode_of(flags, ap); va_end(ap);
    maybe_move("open", p);
    return real(p, flags, m);
}
int open64(const char *p, int flags, ...)
{
    static int (*real)(const char *, int, ...);
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
    va_list ap; va_start(ap, flags); mode_t m = mode_of(flags, ap); va_end(ap);
    maybe_move("open", p);
    return real(p, flags, m);
}
int mkdir(const char *p, mode_t m)
{
    static int (*real)(const char *, mode_t);
    if (!real) real = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
    int r = real(p, m);
    maybe_move("mkdir", p);
    return r;
}
"""

CREATOR = r"""
import sys, numpy as np, colfile
with colfile.File(sys.argv[1], "a") as f:
    f.create("g/new", data=np.array([5, 6, 7], dtype="i8")).close()
print("created", flush=True)
"""


@pytest.mark.parametrize("when", ["open", "mkdir"])
def test_create_whose_group_is_moved_away_meanwhile(path: str, tmp_path: Path, when: str, cli: Any) -> None:
    """A removal of the group (``rm -r g``, a truncation) moves g away just
    as a create of g/new has made it (``mkdir``) or is opening its lock file
    there (``open``): the create makes the group again and commits, instead
    of failing ("exists and is not a directory", "cannot open the writer
    lock")."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the shim")
    src = tmp_path / "move.c"
    src.write_text(MOVE_SHIM)
    so = tmp_path / "move.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(so), str(src), "-ldl"], check=True)
    _make(path)
    g = os.path.join(path, "g")
    if when == "mkdir":
        shutil.rmtree(g)  # the create makes it, and it is moved away at once
        at = g
    else:
        at = os.path.join(g, ".colfile-lock")
        if os.path.exists(at):
            os.unlink(at)
    trash = os.path.join(path, ".colfile-trash.g.1.1")
    env = child_env(LD_PRELOAD=str(so), CF_TEST_MOVE_WHEN=when, CF_TEST_MOVE_AT=at, CF_TEST_MOVE_DIR=g,
                    CF_TEST_MOVE_TO=trash)
    p = subprocess.run([sys.executable, "-c", CREATOR, path], env=env, capture_output=True, text=True,
                       timeout=120)
    assert "moveshim: moved" in p.stderr, p.stderr
    assert p.returncode == 0 and "created" in p.stdout, p.stderr
    with colfile.File(path, "r") as f:
        assert list(f["g/new"][:]) == [5, 6, 7]
        assert "g/y" not in f.columns
    status, out, err = cli("repair", path)
    assert status == 0 and ".colfile-trash.g" in out, (out, err)
    assert not os.path.exists(trash)


def test_write_to_a_column_whose_group_was_removed(path: str) -> None:
    """A handle opened for writing whose group another process removed
    before its first change: the change fails with ReplacedError (the
    column is gone), not as a missing lock file."""
    _make(path)
    with colfile.File(path, "a") as f:
        c = f["g/y"]
        with colfile.File(path, "a") as other:
            del other["g/"]
        with pytest.raises(colfile.ReplacedError, match="g/y"):
            c.append(np.array([1], dtype="i8"))
        c.close()
