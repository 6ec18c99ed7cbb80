"""colfile on file systems whose locks or renames differ from a local one's
(tests/crash/fsmodel.py, tests/locking/lockshim.c):

* ``noflock``: every lock call fails (Lustre ``-o noflock``): writes with
  locking on are refused with an error naming ``locking=False``; with
  locking off the crash promise holds and one writer with concurrent
  readers keeps every read a version;
* ``nodelocal``: every lock is granted (node-local locks seen from another
  node, with the mount table saying ``localflock``): the same, and
  ``colfile repair`` changes nothing a live writer elsewhere may hold;
* ``noexchange``: ``renameat2(RENAME_EXCHANGE)`` fails (NFS): a replace
  moves the old version aside first, a crash between its two renames is
  undone by ``colfile repair``.

The crash harness (tests/crash/run_crash.py) and the concurrency harness
(tests/concurrency/run_concurrency.py) run under each model for
``$COLFILE_FSMODEL_BUDGET`` seconds (default 15) per model.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from childenv import child_env

REPO = Path(__file__).resolve().parents[2]
CRASH = REPO / "tests" / "crash"
CONC = REPO / "tests" / "concurrency"
BUDGET = float(os.environ.get("COLFILE_FSMODEL_BUDGET", "15"))


def _build() -> Path:
    for cand in (os.environ.get("COLFILE_C_BUILD"), REPO / "build" / "release", REPO / "build" / "crash"):
        if cand and (Path(cand) / "tests" / "locking" / "lockshim.so").exists() \
                and (Path(cand) / "tests" / "crash" / "faultshim.so").exists():
            return Path(cand).resolve()
    if os.environ.get("CI"):
        pytest.fail("no build with tests/locking/lockshim.so and tests/crash/faultshim.so (CI must run these)")
    pytest.skip("no build with tests/locking/lockshim.so and tests/crash/faultshim.so")


def _env(**extra: str) -> dict[str, str]:
    env = child_env(**extra)
    if env.get("COLFILE_LIBRARY"):
        env["COLFILE_LIBRARY"] = str(Path(env["COLFILE_LIBRARY"]).resolve())
    return env


def _fsmodel() -> Any:
    sys.path.insert(0, str(CRASH))
    try:
        import fsmodel
    finally:
        sys.path.remove(str(CRASH))
    return fsmodel


# ---------------------------------------------------------------------------
# repair where no lock can show a live writer

_UPDATER = r"""
import sys, time, numpy as np, colfile
path, flag, locking = sys.argv[1], sys.argv[2], sys.argv[3]
with colfile.File(path, "a", locking=False if locking == "off" else True) as f:
    c = f["a"]
    c.write(10, np.full(20, -7, dtype="<i4"))   # in place: the column is marked torn
    open(flag, "w").close()
    while not __import__("os").path.exists(flag + ".go"):
        time.sleep(0.01)
    c.close()
"""


def _python(env: dict[str, str], code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -c code args...`` under env; it must exit 0."""
    r = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def _harness(cmd: list[str], summary: Path, cannot: str) -> tuple[dict[str, Any], str]:
    """Runs a harness (cmd) that writes its JSON summary to summary: the
    summary and the end of what it printed (printed too); the test fails
    with `cannot` where the harness could not run."""
    r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=BUDGET * 4 + 600)
    out = r.stdout[-8000:] + r.stderr[-3000:]
    if r.returncode == 2 or not summary.exists():
        pytest.fail(f"{cannot} (status {r.returncode}):\n{out}")
    print(out)
    return json.loads(summary.read_text()), out


def _repair(path: Path, env: dict[str, str], *opts: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "colfile.cli", "repair", *opts, str(path)], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("model", ["noflock", "nodelocal"])
def test_repair_leaves_a_live_update_it_cannot_see(tmp_path: Path, model: str) -> None:
    """A writer updates a column in place (marked torn) on a file system
    where no lock shows it to `colfile repair` (locks off under
    ``noflock``; node-local locks, as the mount table says, under
    ``nodelocal``).  Repair must leave the column as it is (exit 1, saying
    why) instead of clearing the mark and committing sums over the live
    writer's rows; the writer's commit then leaves the column clean.
    ``--force`` repairs."""
    import numpy as np
    fsmodel = _fsmodel()
    fs = fsmodel.parse(model, _build())
    fs.show_mount(tmp_path)
    env = _env(**fs.apply({}))
    path = tmp_path / "F"
    off = model == "noflock"
    _python(env, "import sys, numpy as np, colfile\n"
            "with colfile.File(sys.argv[1], 'w', locking=False) as f:\n"
            "    f.create('a', '<i4', size=100, nfile=2).write(0, np.arange(100, dtype='<i4'))\n",
            str(path))
    flag = tmp_path / "flag"
    w = subprocess.Popen([sys.executable, "-c", _UPDATER, str(path), str(flag), "off" if off else "on"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        while not flag.exists():
            assert w.poll() is None and time.monotonic() - t0 < 60, w.communicate()
            time.sleep(0.01)
        assert (path / "a" / "colfile-torn").exists()
        header = (path / "a" / "header").read_bytes()
        opts = ["--no-locking"] if off else []
        rep = _repair(path, env, *opts)
        out = rep.stdout + rep.stderr
        assert rep.returncode == 1, out
        assert "a: needs repair (torn" in out and ": left" in out, out
        assert ("locking off" if off else "node-local") in out, out
        assert (path / "a" / "colfile-torn").exists(), "repair cleared a live writer's torn mark"
        assert (path / "a" / "header").read_bytes() == header, "repair committed over a live writer"
    finally:
        (tmp_path / "flag.go").touch()
        out_w, err_w = w.communicate(timeout=120)
    assert w.returncode == 0, err_w
    assert not (path / "a" / "colfile-torn").exists()
    r = _python(env, "import sys, colfile\n"
                "with colfile.File(sys.argv[1], 'r', verify=True) as f:\n"
                "    print(f['a'].read().tolist())\n",
                str(path))
    want = list(range(100))
    want[10:30] = [-7] * 20
    assert json.loads(r.stdout) == want


def test_repair_forced_without_lock_proof(tmp_path: Path) -> None:
    """With no writer left, ``--force`` repairs a torn column where no lock
    can prove that (``--no-locking``)."""
    fs = _fsmodel().parse("noflock", _build())
    env = _env(**fs.apply({}))
    path = tmp_path / "F"
    _python(env, "import sys, os, numpy as np, colfile\n"
            "f = colfile.File(sys.argv[1], 'w', locking=False)\n"
            "f.create('a', '<i4', size=50).write(0, np.arange(50, dtype='<i4'))\n"
            "f.close()\n"
            "f = colfile.File(sys.argv[1], 'a', locking=False)\n"
            "c = f['a']\nc.write(0, np.zeros(5, dtype='<i4'))\n"
            "os._exit(0)\n",
            str(path))
    assert (path / "a" / "colfile-torn").exists()
    assert _repair(path, env, "--no-locking").returncode == 1
    assert (path / "a" / "colfile-torn").exists()
    rep = _repair(path, env, "--no-locking", "--force")
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert not (path / "a" / "colfile-torn").exists()


def test_replace_without_rename_exchange(tmp_path: Path) -> None:
    """Under ``noexchange`` the shim refuses the swap (and says so in its
    log), colfile falls back to moving the old version aside, and the
    replace commits the new rows."""
    fs = _fsmodel().parse("noexchange", _build())
    fs.log = tmp_path / "shim.log"
    env = _env(**fs.apply({}))
    code = ("import sys, numpy as np, colfile\n"
            "for k in (1, 2):\n"
            "    with colfile.File(sys.argv[1], 'a') as f:\n"
            "        f.create('a', '<i8', size=10, overwrite=True).write(0, np.arange(10) * k)\n"
            "with colfile.File(sys.argv[1], 'r') as f:\n"
            "    print(f['a'].read().tolist())\n")
    r = _python(env, code, str(tmp_path / "F"))
    assert json.loads(r.stdout) == [2 * i for i in range(10)]
    assert fs.answered().get("noexchange renameat2", 0) >= 1, fs.answered()
    assert not [n for n in os.listdir(tmp_path / "F") if n.startswith(".colfile-old.")]


# ---------------------------------------------------------------------------
# the harnesses under each model

@pytest.mark.parametrize("model", ["noflock", "nodelocal", "noexchange"])
def test_crash_harness_under(tmp_path: Path, model: str) -> None:
    """Kills, power losses and injected faults, serial and 2 MPI ranks,
    on each file-system model: the promise holds in every trial."""
    build = _build()
    summary = tmp_path / "summary.json"
    cmd = [sys.executable, str(CRASH / "run_crash.py"), "--budget", str(BUDGET), "--fs", model,
           "--mode", "kill,rankkill,inject,powerloss,faults", "--mpi", "--nranks", "2", "--build", str(build),
           "--json", str(summary), "--keep", str(tmp_path / "failures"), "--workdir", str(tmp_path / "work")]
    s, out = _harness(cmd, summary, f"the crash harness could not run under {model}")
    assert s["fs"]["model"] == model
    assert sum(m.get("trials", 0) for m in s["modes"].values()) > 0, out
    assert s["run_violations"] == [], f"{s['run_violations']}\n{out}"
    assert s["violating_trials"] == 0, f"{s['violating_trials']} trial(s) broke the promise under {model}:\n{out}"
    answered = s["fs"]["answered"]
    if model == "noflock":
        # locking=False: not one lock call
        assert answered == {}, answered
    elif model == "nodelocal":
        assert answered.get("nodelocal fcntl", 0) + answered.get("nodelocal flock", 0) > 0, answered
    else:
        assert answered.get("noexchange renameat2", 0) > 0, answered


@pytest.mark.parametrize("model,locking", [("noflock", "on"), ("noflock", "off"), ("nodelocal", "on"),
                                           ("noexchange", "on")])
def test_concurrency_harness_under(tmp_path: Path, model: str, locking: str) -> None:
    """Live processes on one File under each model: every snapshot, read
    and query a version.  Where locks exclude no one, one process writes
    and the others read, query, check and repair; under ``noflock`` with
    locking on every mutation is refused with an error naming
    ``locking=False``."""
    build = _build()
    summary = tmp_path / "summary.json"
    cmd = [sys.executable, str(CONC / "run_concurrency.py"), "--budget", str(max(BUDGET, 7.0)),
           "--fs", model, "--locking", locking, "--round-seconds", "3", "--startup", "1.5",
           "--build", str(build), "--json", str(summary), "--keep", str(tmp_path / "failures"),
           "--workdir", str(tmp_path / "work")]
    s, out = _harness(cmd, summary, f"the concurrency harness could not run under {model}")
    assert s["fs"] == model and s["locking"] == locking
    assert s["rounds"] >= 1 and s["operations"] > 0, out
    assert s["violations"] == 0, (f"{s['violations']} violations under {model}: "
                                  f"{s['violation_categories']}\n{out}")
    st = s["stats"]
    if model == "noflock" and locking == "on":
        assert st.get("fail LockingRefused", 0) > 0, st
        assert not [k for k in st if k.startswith("done ") and k[5:] in
                    ("create", "append", "update", "attr", "rm", "rmr", "truncate")], st
    else:
        assert st.get("done create", 0) > 0 and st.get("read results", 0) > 0, st
    if model == "noexchange":
        assert s["answered"].get("noexchange renameat2", 0) > 0, s["answered"]


def test_cleanup_on_node_local_locks_needs_force(tmp_path: Path) -> None:
    """Where the mount table says locks are node-local, a free lock does not
    show a writer on another node: a staging directory without an owner
    record, an old version moved aside and a metadata temporary stay after
    `colfile repair` and go with ``--force``."""
    fs = _fsmodel().parse("nodelocal", _build())
    fs.show_mount(tmp_path)
    env = _env(**fs.apply({}))
    path = tmp_path / "F"
    _python(env, "import sys, numpy as np, colfile\n"
            "with colfile.File(sys.argv[1], 'w') as f:\n"
            "    f.create('a', '<i4', size=10).write(0, np.arange(10, dtype='<i4'))\n",
            str(path))
    stage = path / ".colfile-stage.b.1.ab12"      # an older writer's: no owner record
    stage.mkdir()
    (stage / "000000").write_bytes(b"\0" * 8)
    old = path / ".colfile-old.a.1.cd34"
    old.mkdir()
    (old / "header").write_text("DTYPE: <i4\n")
    tmp = path / "a" / ".header.tmp.1.ef56"
    tmp.write_text("x")
    r = _repair(path, env)
    assert stage.exists() and old.exists() and tmp.exists(), r.stdout + r.stderr
    r = _repair(path, env, "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not stage.exists() and not old.exists() and not tmp.exists(), r.stdout
