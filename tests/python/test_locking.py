"""Locking on file systems whose locks fail or are node-local: the
mount-table reading behind LockingWarning (on real mountinfo lines),
File(locking=...), and repair from "another node", the last two in child
processes under the lock shim (tests/locking/lockshim.c)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import colfile
from colfile.locking import (LockingWarning, Mount, lock_scope, mount_of, parse_mountinfo,
                             scope_note, scope_of_mount)

from childenv import child_env
from shims import shim_library

REPO = Path(__file__).resolve().parents[2]

# Lines as /proc/self/mountinfo shows them on clusters and workstations.
MOUNTINFO = textwrap.dedent(r"""
    22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw,errors=remount-ro
    25 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
    98 22 0:51 / /lustre/scratch rw,relatime shared:40 - lustre 10.1.0.1@o2ib:10.1.0.2@o2ib:/scratch rw,flock,lazystatfs,encrypt
    99 22 0:52 / /lustre/work rw,relatime shared:41 - lustre 10.1.0.1@o2ib:/work rw,localflock,lazystatfs
    100 22 0:53 / /lustre/old rw,relatime shared:42 - lustre 10.1.0.1@o2ib:/old rw,noflock,lazystatfs
    101 22 0:54 / /gpfs/fs1 rw,relatime shared:43 - gpfs fs1 rw
    102 22 0:55 / /beegfs rw,relatime shared:44 - beegfs beegfs_nodev rw,cfgFile=/etc/beegfs/beegfs-client.conf
    103 22 0:56 / /home rw,relatime shared:45 - nfs4 srv:/export/home rw,vers=4.2,rsize=1048576,proto=tcp,sec=sys,local_lock=none,addr=10.0.0.5
    104 22 0:57 / /nfs/scratch rw,relatime shared:46 - nfs srv:/scratch rw,vers=3,nolock,proto=tcp,addr=10.0.0.6
    105 22 0:58 / /nfs/loc rw,relatime shared:47 - nfs4 srv:/loc rw,vers=4.1,local_lock=all,addr=10.0.0.7
    106 22 0:59 / /mnt/my\040disk rw,relatime shared:48 - xfs /dev/sdb1 rw,attr2
    107 98 0:60 / /lustre/scratch/proj rw,relatime shared:49 - tmpfs tmpfs rw
    108 22 0:61 / /lustre/scratch2 rw,relatime shared:50 - lustre 10.1.0.1@o2ib:/s2 rw,noflock
    """).strip("\n")


@pytest.fixture(scope="module")
def mounts() -> list[Mount]:
    return parse_mountinfo(MOUNTINFO)


def test_parse_fields(mounts: list[Mount]) -> None:
    by = {m.mount_point: m for m in mounts}
    assert len(mounts) == 13
    assert by["/lustre/work"].fstype == "lustre"
    assert "localflock" in by["/lustre/work"].options
    assert by["/lustre/scratch"].source == "10.1.0.1@o2ib:10.1.0.2@o2ib:/scratch"
    assert "local_lock=all" in by["/nfs/loc"].options
    assert "/mnt/my disk" in by  # \040 is a space
    assert parse_mountinfo("garbage\n\n1 2 3") == []


@pytest.mark.parametrize("point,scope", [
    ("/", "cluster"), ("/lustre/scratch", "cluster"), ("/lustre/work", "node"),
    ("/lustre/old", "none"), ("/gpfs/fs1", "cluster"), ("/beegfs", "node"),
    ("/home", "cluster"), ("/nfs/scratch", "node"), ("/nfs/loc", "node"), ("/mnt/my disk", "cluster"),
])
def test_scope_of_mount(mounts: list[Mount], point: str, scope: str) -> None:
    (m,) = [m for m in mounts if m.mount_point == point]
    assert scope_of_mount(m) == scope


def test_path_to_mount(mounts: list[Mount]) -> None:
    assert mount_of("/lustre/work/run1/snap", mounts).mount_point == "/lustre/work"
    # a prefix of the name is not a parent directory
    assert mount_of("/lustre/scratch2/x", mounts).mount_point == "/lustre/scratch2"
    assert mount_of("/lustre/scratch/proj/x", mounts).fstype == "tmpfs"
    assert mount_of("/lustre/scratch/other", mounts).fstype == "lustre"
    assert mount_of("/mnt/my disk/f", mounts).fstype == "xfs"
    assert mount_of("/tmp/x", mounts).mount_point == "/"
    assert lock_scope("/lustre/old/f", MOUNTINFO)[0] == "none"
    assert lock_scope("/beegfs/run/f", MOUNTINFO)[0] == "node"


def test_notes_name_path_and_remedy(mounts: list[Mount]) -> None:
    scope, m = lock_scope("/lustre/old/f", MOUNTINFO)
    note = scope_note("/lustre/old/f", scope, m)
    assert "/lustre/old/f" in note and "locking=False" in note
    scope, m = lock_scope("/nfs/scratch/f", MOUNTINFO)
    note = scope_note("/nfs/scratch/f", scope, m)
    assert "node-local" in note and "locking='local'" in note
    assert scope_note("/gpfs/fs1/f", *lock_scope("/gpfs/fs1/f", MOUNTINFO)) is None


def test_the_real_mount_table(tmp_path: Path) -> None:
    # whatever this machine has: the File's directory is on some mount
    scope, m = lock_scope(str(tmp_path))
    assert m is not None and scope in ("cluster", "node", "none")
    assert str(tmp_path).startswith(m.mount_point.rstrip("/") + "/")


def test_c_and_python_agree_here(tmp_path: Path) -> None:
    with colfile.File(str(tmp_path / "f"), "a") as f:
        assert f.lock_scope == lock_scope(f.path)[0]


def test_locking_argument(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="locking"):
        colfile.File(str(tmp_path / "f"), "a", locking="best-effort")
    for locking in (True, False, "local"):
        p = str(tmp_path / f"f{locking}")
        with warnings.catch_warnings():
            warnings.simplefilter("error", LockingWarning)  # the test's directory is local
            with colfile.File(p, "a", locking=locking) as f:
                f.create("x", "i8", size=3)[:] = [1, 2, 3]
        with colfile.File(p, "r") as f:
            assert list(f["x"][:]) == [1, 2, 3]
        assert not os.path.exists(os.path.join(p, ".colfile-lock"))


@pytest.fixture(scope="module")
def lockshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lockshim.so: the build's, else compiled here."""
    return shim_library(tmp_path_factory, "locking", "lockshim")


def _run(shim: Path, mode: str, code: str, *args: str, host: str | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    extra = {"LD_PRELOAD": str(shim), "LOCKSHIM_MODE": mode}
    if host:
        extra["LOCKSHIM_HOSTNAME"] = host
    r = subprocess.run([sys.executable, "-c", code, *args], env=child_env(**extra), capture_output=True,
                       text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


_WRITE = """
import sys, colfile
path, locking = sys.argv[1], {"true": True, "false": False}[sys.argv[2]]
try:
    with colfile.File(path, "a", locking=locking) as f:
        f.create("g/x", "i8", size=4)[:] = [1, 2, 3, 4]
        f.attrs["a"] = 5
        f["g/x"][1:3] = [7, 8]
        f.create("y", "f4", size=2)[:] = 1.5
        del f["y"]
    with colfile.File(path, "r") as f:
        print(f["g/x"][:].tolist(), int(f.attrs["a"]), list(f))
except colfile.Error as exc:
    print("ERROR", type(exc).__name__, exc)
"""


def test_noflock_clear_error_then_locking_false(lockshim: Path, tmp_path: Path) -> None:
    p = str(tmp_path / "f")
    out = _run(lockshim, "noflock", _WRITE, p, "true").stdout
    assert out.startswith("ERROR"), out
    assert p in out and "locking=False" in out and "cannot lock" in out
    out = _run(lockshim, "noflock", _WRITE, p, "false").stdout
    assert out.strip() == "[1, 7, 8, 4] 5 ['g/x']", out
    assert not os.path.exists(os.path.join(p, ".colfile-lock"))
    # mode "w" empties the File without a lock call
    _run(lockshim, "noflock", "import sys, colfile; colfile.File(sys.argv[1], 'w', locking=False).close()", p)
    with colfile.File(p, "r") as f:
        assert list(f) == []


_LIVE_WRITER = """
import sys, colfile
f = colfile.File(sys.argv[1], "a")
c = f.create("x", "i8", size=3)
c[:] = [1, 2, 3]
print("ready", flush=True)
sys.stdin.read()
"""


def test_repair_from_another_node_leaves_live_staging(lockshim: Path, tmp_path: Path) -> None:
    p = str(tmp_path / "f")
    colfile.File(p, "a").close()
    env = child_env(LD_PRELOAD=str(lockshim), LOCKSHIM_MODE="nodelocal", LOCKSHIM_HOSTNAME="node0042")
    writer = subprocess.Popen([sys.executable, "-c", _LIVE_WRITER, p], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
        (stage,) = [n for n in os.listdir(p) if n.startswith(".colfile-stage.x.")]
        repair = "from colfile.cli import main; import sys; sys.exit(main(sys.argv[1:]))"
        # this node sees the lock free (node-local locks); the owner record says node0042
        r = _run(lockshim, "nodelocal", repair, "repair", p, check=False)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "another node (host node0042" in r.stdout and ": left" in r.stdout
        assert os.path.isdir(os.path.join(p, stage))
        r = _run(lockshim, "nodelocal", repair, "repair", "--force", p, check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "never committed: removed" in r.stdout
        assert not os.path.exists(os.path.join(p, stage))
    finally:
        writer.kill()
        writer.wait(timeout=60)


_WARNS = """
import sys, warnings, colfile
path, locking = sys.argv[1], {"true": True, "false": False, "local": "local"}[sys.argv[2]]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with colfile.File(path, "a", locking=locking) as f:
        scope = f.lock_scope
notes = [str(w.message) for w in caught if issubclass(w.category, colfile.LockingWarning)]
import json
print(json.dumps([scope, notes]))
"""


@pytest.mark.parametrize("option,scope", [("localflock", "node"), ("noflock", "none"), ("flock", "cluster")])
def test_warning_from_the_mount_table(lockshim: Path, tmp_path: Path, option: str, scope: str) -> None:
    # this machine's directory shown as a Lustre mount through the shim
    mnt = os.path.realpath(tmp_path)
    table = tmp_path / "mountinfo"
    table.write_text("22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw\n"
                     f"98 22 0:51 / {mnt} rw,relatime shared:40 - lustre 10.1.0.1@o2ib:/scratch rw,{option}\n")
    p = str(tmp_path / "f")
    extra = {"LD_PRELOAD": str(lockshim), "LOCKSHIM_MOUNTINFO": str(table)}
    for locking, warned in (("true", scope != "cluster"), ("local", scope == "none"), ("false", False)):
        r = subprocess.run([sys.executable, "-c", _WARNS, p, locking], env=child_env(**extra),
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        got_scope, notes = json.loads(r.stdout)
        assert got_scope == scope, r.stdout  # the C core's reading
        assert len(notes) == int(warned), (locking, r.stdout)
        if warned:
            assert p in notes[0] and f"lustre mounted at {mnt}" in notes[0]
            assert ("locking=False" if scope == "none" else "node-local") in notes[0]
