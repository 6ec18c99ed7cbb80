"""Crash consistency and fault injection (issue #5), with the harness of
tests/crash/ (see tests/crash/README.md):

* the power-loss model of faultshim.so itself, scenario by scenario, and its
  injected errors;
* the C and the Python writer replay a plan to byte-identical Files, which
  the independent checker accepts;
* the driver, tests/crash/run_crash.py, for a bounded budget over every
  mode -- random-time SIGKILL of a writer and of one rank of two, SIGKILL
  and power loss at swept I/O operations, EIO / ENOSPC / short writes / NULL
  allocations at swept sites -- with serial and MPI (2 ranks) writers: zero
  violations of the promise;
* pinned windows: power losses at crash points found by their syscall
  pattern, with what survives chosen (CF_FAULT_KEEP_NAMES), for durability
  rules the code once broke -- each with a twin showing that it fails when
  the sync it protects is dropped (CF_FAULT_NOSYNC);
* pinned faults under MPI: NULL from an allocation found by its caller (the
  library's symbol table maps the shim's library+offset to a function) on
  rank 1, for windows of the collective layers the sweeps once sampled.

The budget is ``$COLFILE_CRASH_BUDGET`` seconds (default 70).  Longer runs,
on demand::

    COLFILE_CRASH_BUDGET=1800 pytest tests/python/test_crash.py
    python tests/crash/run_crash.py --budget 1800 --mpi --nranks 2,3,4

The C parts need the CMake build of tests/crash (``$COLFILE_C_BUILD``, as
``./run test`` sets it, or build/crash); without it the shim is compiled
here and only the Python writer runs.  Under CI (``CI`` set) missing pieces
fail instead of skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from childenv import child_env

REPO = Path(__file__).resolve().parents[2]
CRASH = REPO / "tests" / "crash"
BUDGET = float(os.environ.get("COLFILE_CRASH_BUDGET", "70"))


def _missing(reason: str) -> Any:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: the crash tests must run)")
    pytest.skip(reason)


def _build_dir() -> Path | None:
    for cand in (os.environ.get("COLFILE_C_BUILD"), REPO / "build" / "crash", REPO / "build" / "release"):
        # absolute: the driver runs writers in their trial directories
        if cand and (Path(cand) / "tests" / "crash" / "faultshim.so").exists():
            return Path(cand).resolve()
    return None


def _sanitize_dir(build: Path | None) -> Path | None:
    cand = os.environ.get("COLFILE_CRASH_SANITIZE_BUILD")
    if cand:
        return Path(cand).resolve()
    if build is not None and (build.parent / "sanitize" / "tests" / "crash" / "crash_writer").exists():
        return build.parent / "sanitize"
    return None


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """faultshim.so: the build's, else compiled here."""
    build = _build_dir()
    if build is not None:
        return build / "tests" / "crash" / "faultshim.so"
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        _missing("no tests/crash build and no C compiler for faultshim.so")
    out = tmp_path_factory.mktemp("shim") / "faultshim.so"
    subprocess.run([cc, "-std=c11", "-O2", "-shared", "-fPIC", "-o", str(out), str(CRASH / "faultshim.c"),
                    "-ldl", "-lpthread"], check=True, capture_output=True)
    return out


# ---------------------------------------------------------------------------
# the power-loss model

def _probe(root: Path, script: list[list[Any]], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    sp = root.parent / f"script-{len(list(root.parent.iterdir()))}.json"
    sp.write_text(json.dumps(script))
    return subprocess.run([sys.executable, str(CRASH / "shim_probe.py"), str(root), str(sp)],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=60)


def _tree(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = "<dir>" if p.is_dir() else p.read_text()
    return out


def _power_loss(tmp_path: Path, shim: Path, setup: list[list[Any]], script: list[list[Any]],
                keep: float | None = None, env_of: Any = None, after_setup: Any = None) -> dict[str, str]:
    """Run setup for real (then sync), then script under the shim with a
    power loss after its last operation; the tree that survives.  env_of
    (optional): the counted operations [number, class, path] -> more
    environment for the power-loss run; after_setup (optional): called with
    the File's directory once the setup is done."""
    root = tmp_path / "F"
    root.mkdir()
    r = _probe(root, setup + [["sync"]], {})
    assert r.returncode == 0, r.stderr
    if after_setup is not None:
        after_setup(root)
    # where the power goes out: the sentinel operation after the script
    script = script + [["mkdir", "SENTINEL"]]
    count_root = tmp_path / "C"
    shutil.copytree(root, count_root)
    report = tmp_path / "report"
    r = _probe(count_root, script, {"LD_PRELOAD": str(shim), "CF_FAULT_SCOPE": str(count_root),
                                    "CF_FAULT_MODE": "count", "CF_FAULT_REPORT": str(report)})
    assert r.returncode == 0, r.stderr
    ops = [ln.split() for ln in report.read_text().splitlines()[1:] if not ln.startswith("a")]
    assert ops[-1][1:3] == ["mkdir", "SENTINEL"], ops[-3:]
    journal = tmp_path / "J"
    journal.mkdir()
    env = {"LD_PRELOAD": str(shim), "CF_FAULT_SCOPE": str(root), "CF_FAULT_AT": ops[-1][0],
           "CF_FAULT_ACTION": "powerloss", "CF_FAULT_JOURNAL": str(journal)}
    if keep is not None:
        env["CF_FAULT_KEEP"] = str(keep)
    if env_of is not None:
        env.update(env_of(ops))
    r = _probe(root, script, env)
    assert r.returncode == -9, (r.returncode, r.stdout, r.stderr)
    return _tree(root)


SCENARIOS = {
    # name: (setup, script, what survives)
    "new file, data synced, name not": ([], [["write", "A", "data"], ["fsync", "A"]], {}),
    "new file, data and name synced": (
        [], [["write", "A", "data"], ["fsync", "A"], ["fsync", "."]], {"A": "data"}),
    "new file, name synced, data not": ([], [["write", "A", "data"], ["fsync", "."]], {"A": ""}),
    "rename over, directory not synced": (
        [["write", "A", "old"]], [["write", "t", "new"], ["fsync", "t"], ["rename", "t", "A"]], {"A": "old"}),
    "rename over, directory synced": (
        [["write", "A", "old"]],
        [["write", "t", "new"], ["fsync", "t"], ["rename", "t", "A"], ["fsync", "."]], {"A": "new"}),
    "rename over, data not synced": (
        [["write", "A", "old"]], [["write", "t", "new"], ["rename", "t", "A"], ["fsync", "."]], {"A": ""}),
    "overwrite and extend in place": (
        [["write", "A", "old data"]], [["pwrite", "A", 0, "XX"], ["pwrite", "A", 6, "extended"]],
        {"A": "old data"}),
    "overwrite, synced, then more": (
        [["write", "A", "old data"]], [["pwrite", "A", 0, "XX"], ["fsync", "A"], ["pwrite", "A", 4, "YY"]],
        {"A": "XXd data"}),
    "truncate": ([["write", "A", "old data"]], [["truncate", "A", 2]], {"A": "old data"}),
    "unlink": ([["write", "A", "x"]], [["unlink", "A"]], {"A": "x"}),
    "unlink, synced": ([["write", "A", "x"]], [["unlink", "A"], ["fsync", "."]], {}),
    "rmdir": ([["mkdir", "D"]], [["rmdir", "D"]], {"D": "<dir>"}),
    "link": ([["write", "A", "x"]], [["link", "A", "B"]], {"A": "x"}),
    "sync() makes all durable": ([], [["write", "A", "x"], ["sync"], ["write", "B", "y"]], {"A": "x"}),
    "staged, renamed, parent not synced": (
        [], [["mkdir", "S"], ["write", "S/b", "blob"], ["fsync", "S/b"], ["fsync", "S"], ["rename", "S", "F"]], {}),
    "staged, renamed, parent synced": (
        [], [["mkdir", "S"], ["write", "S/b", "blob"], ["fsync", "S/b"], ["fsync", "S"], ["rename", "S", "F"],
             ["fsync", "."]], {"F": "<dir>", "F/b": "blob"}),
    "staged without syncing the stage": (
        [], [["mkdir", "S"], ["write", "S/b", "blob"], ["fsync", "S/b"], ["rename", "S", "F"], ["fsync", "."]],
        {"F": "<dir>"}),
    "exchange not synced": (
        [["mkdir", "F"], ["write", "F/b", "old"]],
        [["mkdir", "S"], ["write", "S/b", "new"], ["fsync", "S/b"], ["fsync", "S"], ["fsync", "."],
         ["exchange", "S", "F"]],
        {"F": "<dir>", "F/b": "old", "S": "<dir>", "S/b": "new"}),
    "exchange synced, old tree removal not": (
        [["mkdir", "F"], ["write", "F/b", "old"]],
        [["mkdir", "S"], ["write", "S/b", "new"], ["fsync", "S/b"], ["fsync", "S"], ["fsync", "."],
         ["exchange", "S", "F"], ["fsync", "."], ["unlink", "S/b"], ["rmdir", "S"]],
        {"F": "<dir>", "F/b": "new", "S": "<dir>", "S/b": "old"}),
    "exchange and removal synced": (
        [["mkdir", "F"], ["write", "F/b", "old"]],
        [["mkdir", "S"], ["write", "S/b", "new"], ["fsync", "S/b"], ["fsync", "S"], ["fsync", "."],
         ["exchange", "S", "F"], ["fsync", "."], ["unlink", "S/b"], ["fsync", "S"], ["rmdir", "S"],
         ["fsync", "."]],
        {"F": "<dir>", "F/b": "new"}),
    "directory removed and made again": (
        [["mkdir", "D"], ["write", "D/x", "1"]],
        [["unlink", "D/x"], ["rmdir", "D"], ["mkdir", "D"], ["write", "D/y", "2"], ["fsync", "D/y"],
         ["fsync", "D"]],
        {"D": "<dir>", "D/x": "1"}),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_power_loss_model(tmp_path: Path, shim: Path, name: str) -> None:
    setup, script, survives = SCENARIOS[name]
    assert _power_loss(tmp_path, shim, setup, script) == survives


def test_power_loss_keep_everything(tmp_path: Path, shim: Path) -> None:
    """CF_FAULT_KEEP=1: every change survives (the random-subset mode)."""
    got = _power_loss(tmp_path, shim, [], [["write", "A", "data"], ["mkdir", "D"]], keep=1.0)
    assert got == {"A": "data", "D": "<dir>"}


def test_power_loss_keep_names(tmp_path: Path, shim: Path) -> None:
    """CF_FAULT_KEEP_NAMES: the directory changes not durable whose name
    matches survive, the others do not -- here the rename over A (by its
    new name) but not the creation of B, whose data was synced."""
    got = _power_loss(tmp_path, shim, [["write", "A", "old"]],
                      [["write", "B", "blob"], ["fsync", "B"], ["write", "t", "new"], ["fsync", "t"],
                       ["rename", "t", "A"]], env_of=lambda ops: {"CF_FAULT_KEEP_NAMES": "x*,A"})
    assert got == {"A": "new"}


def test_power_loss_nosync(tmp_path: Path, shim: Path) -> None:
    """CF_FAULT_NOSYNC: the listed fsync makes nothing durable (the other
    fsyncs still do)."""
    script = [["write", "A", "data"], ["fsync", "A"], ["fsync", "."]]

    def dirsync(ops: list[list[str]]) -> dict[str, str]:
        n = [op[0] for op in ops if op[1:3] == ["fsync", "."]]
        assert len(n) == 1, ops
        return {"CF_FAULT_NOSYNC": n[0]}

    (tmp_path / "synced").mkdir()
    (tmp_path / "nosync").mkdir()
    assert _power_loss(tmp_path / "synced", shim, [], script) == {"A": "data"}
    assert _power_loss(tmp_path / "nosync", shim, [], script, env_of=dirsync) == {}


def test_power_loss_removed_tree_and_a_reused_inode(tmp_path: Path, shim: Path) -> None:
    """A directory removed for good was empty: the removals inside it are
    as durable as its own removal, whether or not the directories that held
    them were synced.  Here d is moved into R (synced), d/f and d removed,
    then R, and the root synced; the next directory, N, gets d's inode
    number back (shim_probe's mkdir-reusing).  What survives is N, empty:
    no POSIX file system brings f back, least of all into N, a directory
    that merely got d's number (the model once relinked f there, and so
    put a column's files, removed by a truncation, into the group
    directory made after it)."""
    setup = [["mkdir", "d"], ["write", "d/f", "old"], ["mkdir", "R"]]
    script = [["remember", "d"], ["rename", "d", "R/d"], ["fsync", "R"], ["fsync", "."],
              ["unlink", "R/d/f"], ["rmdir", "R/d"], ["rmdir", "R"], ["fsync", "."],
              ["mkdir-reusing", "N", "d"], ["fsync", "."]]
    for attempt in range(4):  # the file system's allocator may give N another number
        t = tmp_path / str(attempt)
        t.mkdir()
        ino: dict[str, int] = {}
        got = _power_loss(t, shim, setup, script,
                          after_setup=lambda root: ino.update(d=(root / "d").stat().st_ino))
        assert got == {"N": "<dir>"}
        if (t / "F" / "N").stat().st_ino == ino["d"]:
            return
    pytest.skip("the file system never gave d's inode number to a new directory")


@pytest.mark.parametrize("action, errno_name", [("eio", "EIO"), ("enospc", "ENOSPC")])
def test_injected_errors(tmp_path: Path, shim: Path, action: str, errno_name: str) -> None:
    """The N-th operation fails with the errno and changes nothing; the
    others run."""
    import errno

    root = tmp_path / "F"
    root.mkdir()
    # operations counted: write A = create, write, close (1-3); rename = 4
    script = [["write", "A", "abcd"], ["rename", "A", "B"], ["write", "C", "x"]]
    r = _probe(root, script, {"LD_PRELOAD": str(shim), "CF_FAULT_SCOPE": str(root), "CF_FAULT_AT": "4",
                              "CF_FAULT_ACTION": action})
    out = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert out[0] == ["ok", 4] and out[2] == ["ok", 1], out
    assert out[1][0] == "err" and out[1][1] == getattr(errno, errno_name), out
    assert _tree(root) == {"A": "abcd", "C": "x"}


def test_short_write(tmp_path: Path, shim: Path) -> None:
    root = tmp_path / "F"
    root.mkdir()
    r = _probe(root, [["write", "A", "abcdefgh"]], {"LD_PRELOAD": str(shim), "CF_FAULT_SCOPE": str(root),
                                                     "CF_FAULT_AT": "2", "CF_FAULT_ACTION": "short"})
    assert json.loads(r.stdout.splitlines()[0]) == ["ok", 4]
    assert (root / "A").read_text() == "abcd"


def test_outside_scope_untouched(tmp_path: Path, shim: Path) -> None:
    """Operations outside the scope are neither counted nor failed."""
    root, other = tmp_path / "F", tmp_path / "other"
    root.mkdir()
    other.mkdir()
    r = _probe(other, [["write", "A", "x"], ["fsync", "A"]],
               {"LD_PRELOAD": str(shim), "CF_FAULT_SCOPE": str(root), "CF_FAULT_AT": "1",
                "CF_FAULT_ACTION": "eio"})
    assert [json.loads(ln)[0] for ln in r.stdout.splitlines()] == ["ok", "ok"]


# ---------------------------------------------------------------------------
# the writers and the checker

def _env_for_writers() -> dict[str, str]:
    env = child_env()
    if env.get("COLFILE_LIBRARY"):  # writers run in their trial directories
        env["COLFILE_LIBRARY"] = str(Path(env["COLFILE_LIBRARY"]).resolve())
    return env


@pytest.mark.parametrize("variant", ["", "destroy"])
def test_writers_agree_and_checker_accepts(tmp_path: Path, lib: Any, variant: str) -> None:
    """Both writers replay the same plan to the same bytes (also a plan with
    rm, truncation and repair); the checker accepts the result and rejects a
    File with one blob byte changed."""
    sys.path.insert(0, str(CRASH))
    try:
        import checker
        import crashplan
    finally:
        sys.path.remove(str(CRASH))
    seed = 5 if not variant else 35
    ops = crashplan.make_plan(seed, "tiny", variant)
    if variant:
        assert {"rm", "truncate", "repair"} <= {op.kind for op in ops}, [op.line() for op in ops]
    plan = tmp_path / "plan.txt"
    crashplan.write_plan(ops, str(plan), seed, "tiny", variant)
    env = _env_for_writers()
    trees = {}
    build = _build_dir()
    writers = {"py": [sys.executable, str(CRASH / "writer.py")]}
    if build is not None:
        writers["c"] = [str(build / "tests" / "crash" / "crash_writer")]
    for name, cmd in writers.items():
        d = tmp_path / name
        d.mkdir()
        r = subprocess.run(cmd + [str(d / "F"), str(plan), str(d / "log")], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        model = crashplan.Model(seed, ops)
        rep = checker.check(d / "F", model, checker.parse_log(d / "log"))
        assert rep.violations == [], rep.violations
        # hidden entries skipped: temporaries, and the catalog (format.md 8.5)
        # that File.close writes and the C writer does not
        trees[name] = {str(p.relative_to(d / "F")): p.read_bytes() for p in sorted((d / "F").rglob("*"))
                       if p.is_file() and not any(part.startswith(".")
                                                  for part in p.relative_to(d / "F").parts)}
    if "c" in trees:
        assert trees["c"].keys() == trees["py"].keys()
        assert [k for k in trees["c"] if trees["c"][k] != trees["py"][k]] == []
    # one flipped byte in a committed blob is a violation
    d = tmp_path / "py"
    blob = next(p for p in sorted((d / "F").rglob("00000*")) if p.stat().st_size > 0)
    raw = bytearray(blob.read_bytes())
    raw[0] ^= 0x40
    blob.write_bytes(bytes(raw))
    rep = checker.check(d / "F", crashplan.Model(seed, ops), checker.parse_log(d / "log"), use_bigfile=False)
    assert rep.violations, "a changed byte went unnoticed"


# ---------------------------------------------------------------------------
# the harness

def test_driver_takes_a_relative_build_dir(tmp_path: Path) -> None:
    """``--build build/release`` (as docs/reliability.md quotes it) names
    the writers and the shim by absolute paths: they run in the trial
    directories."""
    build = _build_dir()
    if build is None:
        _missing("no CMake build of tests/crash")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import run_crash; "
            "t = run_crash.find_tools(sys.argv[2], sys.executable, sys.argv[3]); "
            "print(t.build, t.shim, t.cwriter, sep='\\n')")
    rel = os.path.relpath(build, build.parent.parent)
    r = subprocess.run([sys.executable, "-c", code, str(CRASH), rel, os.path.join(rel, "tests/crash/faultshim.so")],
                       cwd=build.parent.parent, env=_env_for_writers(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    paths = [Path(ln) for ln in r.stdout.splitlines()]
    assert paths == [build, build / "tests/crash/faultshim.so", build / "tests/crash/crash_writer"], paths


def test_crash_harness(tmp_path: Path, lib: Any) -> None:
    """Every mode for a bounded budget, serial and 2 MPI ranks: the promise
    holds in every trial."""
    build = _build_dir()
    if build is None and os.environ.get("CI"):
        pytest.fail("no CMake build of tests/crash (COLFILE_C_BUILD): CI must run the C writers")
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists() and os.environ.get("CI"):
        pytest.fail(f"no mpiexec next to {sys.executable} (CI must run the MPI writers)")
    summary = tmp_path / "summary.json"
    cmd = [sys.executable, str(CRASH / "run_crash.py"), "--budget", str(BUDGET), "--mode", "all",
           "--mpi", "--nranks", "2", "--json", str(summary), "--keep", str(tmp_path / "failures"),
           "--workdir", str(tmp_path / "work")]
    if build is not None:
        cmd += ["--build", str(build)]
        san = _sanitize_dir(build)
        if san is not None:
            cmd += ["--sanitize-build", str(san)]
    else:
        cmd += ["--writers", "py", "--shim", str(tmp_path / "shim.so")]
        cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
        if cc is None:
            _missing("no tests/crash build and no C compiler")
        subprocess.run([cc, "-std=c11", "-O2", "-shared", "-fPIC", "-o", str(tmp_path / "shim.so"),
                        str(CRASH / "faultshim.c"), "-ldl", "-lpthread"], check=True)
    r = subprocess.run(cmd, env=_env_for_writers(), capture_output=True, text=True,
                       timeout=BUDGET * 3 + 600)
    out = r.stdout[-12000:] + r.stderr[-4000:]
    if r.returncode == 2 or not summary.exists():
        pytest.fail(f"the crash harness could not run (status {r.returncode}):\n{out}")
    s = json.loads(summary.read_text())
    modes = s["modes"]
    print(out)
    # the harness did its work: crashes survived in every crash mode, faults injected
    for mode in ("kill", "inject", "powerloss"):
        assert modes.get(mode, {}).get("trials", 0) > 0, f"no {mode} trial ran:\n{out}"
    assert modes.get("faults", {}).get("faults_fired", 0) > 0, f"no fault was injected:\n{out}"
    if mpiexec.exists():
        assert modes.get("rankkill", {}).get("trials", 0) > 0, f"no MPI rank was killed:\n{out}"
    assert s["run_violations"] == [], f"{s['run_violations']}\n{out}"
    assert s["violating_trials"] == 0, f"{s['violating_trials']} trial(s) broke the promise:\n{out}"



# ---------------------------------------------------------------------------
# pinned windows: power losses at crash points found by their syscall
# pattern, with a deterministic choice of what survives
#
# The sweeps above reach a window only when a sampled crash point and a
# random subset of the changes meet it.  A durability rule the code once
# broke gets a test of its own here, which fails every time the rule does.

#: A column of one blob, then an append of two new blobs (format.md 8.3).
APPEND_PLAN = """# crashplan 1 seed=11 scale=tiny
0 create a dtype=<i4 nmemb=1 size=100 nfile=1 gen=1 piece=100 io=auto
1 append a rows=50 nfile=2 gen=2 piece=50
"""


def _pinned_run(d: Path, shim: Path, plan: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Replay plan on a new File d/F, the shim scoped to it (the C writer
    when built, else the Python writer); d/J is the shim's journal."""
    d.mkdir()
    (d / "F").mkdir()
    (d / "J").mkdir()
    (d / "plan.txt").write_text(plan)
    build = _build_dir()
    cmd = ([str(build / "tests" / "crash" / "crash_writer")] if build is not None
           else [sys.executable, str(CRASH / "writer.py")])
    full = {**_env_for_writers(), "LD_PRELOAD": str(shim), "CF_FAULT_SCOPE": str(d / "F"),
            "CF_FAULT_VERBOSE": "1", **env}
    return subprocess.run(cmd + [str(d / "F"), str(d / "plan.txt"), str(d / "log")],
                          env=full, capture_output=True, text=True, timeout=120)


def _pinned_ops(d: Path, shim: Path, plan: str) -> list[tuple[int, str, str]]:
    """(number, class, path) of every I/O operation of a clean run."""
    r = _pinned_run(d, shim, plan, {"CF_FAULT_MODE": "count", "CF_FAULT_REPORT": str(d / "report")})
    assert r.returncode == 0, r.stderr
    ops = []
    for ln in (d / "report").read_text().splitlines()[1:]:
        if not ln.startswith("a"):
            n, cls, what = ln.split(" ", 2)
            ops.append((int(n), cls, what))
    return ops


def _append_window(ops: list[tuple[int, str, str]], col: str) -> dict[str, Any]:
    """The operations of a durable append of new blobs to `col`, by their
    pattern, not their numbers: the commit is the one rename of a temporary
    over `col`/header (a first commit renames a staging directory instead);
    before it the blob files are created; `dirsyncs` are the fsyncs of the
    directory `col` between the last blob creation and the commit; `end`
    is the first fsync of `col` after the commit, which makes it durable."""
    import re

    blob = re.compile(re.escape(col) + r"/[0-9A-F]{6}$")
    commits = [i for i, (_, cls, what) in enumerate(ops)
               if cls == "rename" and what.startswith(f"{col}/.header.") and what.endswith(f" -> {col}/header")]
    assert len(commits) == 1, f"not one header rename in {col}: {[ops[i] for i in commits]}"
    c = commits[0]
    creates = [i for i in range(c) if ops[i][1] == "create" and blob.match(ops[i][2])]
    assert creates, f"no blob of {col} created before its header rename {ops[c]}"
    after = [i for i in range(c + 1, len(ops)) if ops[i][1:] == ("fsync", col)]
    assert after, f"no fsync of the directory {col} after its header rename {ops[c]}"
    return {"first_create": ops[creates[0]][0], "rename": ops[c][0], "end": ops[after[0]][0],
            "dirsyncs": [ops[i][0] for i in range(creates[-1] + 1, c) if ops[i][1:] == ("fsync", col)]}


def _pinned_power_loss(d: Path, shim: Path, plan: str, at: int, env: dict[str, str]) -> tuple[Any, str]:
    """Power loss before operation `at`: the checker's report, the undo log."""
    sys.path.insert(0, str(CRASH))
    try:
        import checker
        import crashplan
    finally:
        sys.path.remove(str(CRASH))
    r = _pinned_run(d, shim, plan, {"CF_FAULT_AT": str(at), "CF_FAULT_ACTION": "powerloss",
                                    "CF_FAULT_JOURNAL": str(d / "J"), **env})
    assert r.returncode == -9 and (d / "J" / "powerloss.txt").exists(), \
        f"no power loss at op {at} (status {r.returncode}): {r.stderr[-2000:]}"
    undo = (d / "J" / "undo.log").read_text()
    seed, ops = crashplan.read_plan(str(d / "plan.txt"))
    rep = checker.check(d / "F", crashplan.Model(seed, ops), checker.parse_log(d / "log"), use_bigfile=False)
    return rep, undo


#: What survives the power loss: the new header's rename, nothing else that
#: is not durable -- the worst case for a header that lists new blobs (file
#: systems need not keep the order of directory changes not yet synced).
KEEP_HEADER = {"CF_FAULT_KEEP_NAMES": "header"}


@pytest.fixture
def append_window(tmp_path: Path, shim: Path, lib: Any) -> dict[str, Any]:
    return _append_window(_pinned_ops(tmp_path / "count", shim, APPEND_PLAN), "a")


def test_append_blobs_durable_before_header(tmp_path: Path, shim: Path, append_window: dict[str, Any]) -> None:
    """format.md 8.3 step 2: the new blob files of an append are named
    durably (their directory fsynced) before the header that lists them is
    renamed into place.  A power loss before every operation from the first
    new blob to the directory sync after the header rename, the header
    rename surviving: the column is its old version up to the rename, its
    new one after, never a header listing blob files that are gone."""
    w = append_window
    for at in range(w["first_create"], w["end"] + 1):
        rep, undo = _pinned_power_loss(tmp_path / f"at{at}", shim, APPEND_PLAN, at, KEEP_HEADER)
        assert rep.violations == [], f"power loss before op {at} of {w}:\n{rep.violations}\n{undo}"
        # the window is reached: once renamed, the new header survived
        want = "v2" if at > w["rename"] else "v1"
        assert rep.matched.get("a") == want, f"op {at} of {w}: a is {rep.matched.get('a')}, not {want}\n{undo}"


def test_append_window_sees_a_lost_directory_sync(tmp_path: Path, shim: Path,
                                                  append_window: dict[str, Any]) -> None:
    """The test above can fail: with the directory sync between the new
    blobs and the header rename made a no-op (CF_FAULT_NOSYNC, as if
    cf_column_flush no longer called it), the power loss right after the
    rename leaves a header listing blobs that are gone."""
    w = append_window
    assert w["dirsyncs"], (f"no fsync of the column directory between the new blobs and the header rename "
                           f"(format.md 8.3 step 2): {w}")
    rep, undo = _pinned_power_loss(tmp_path / "nosync", shim, APPEND_PLAN, w["rename"] + 1,
                                   {**KEEP_HEADER, "CF_FAULT_NOSYNC": ",".join(map(str, w["dirsyncs"]))})
    assert any(v.startswith("[missing-data] a:") and "blob 000001 (25 rows) is missing" in v
               for v in rep.violations), f"{w}: {rep.violations}\n{undo}"


#: Columns and File attributes, emptied by mode "w", then a new column.
TRUNCATE_PLAN = """# crashplan 1 seed=13 scale=tiny variant=destroy
0 create a dtype=<i4 nmemb=1 size=100 nfile=1 gen=1 piece=100 io=auto
1 create g/b dtype=<i4 nmemb=1 size=10 nfile=2 gen=2 piece=10 io=auto
2 attr . name=A2 type=str gen=3
3 truncate . gen=4
4 create s dtype=<i4 nmemb=1 size=10 nfile=1 gen=5 piece=10 io=auto
"""


def test_truncation_durable_once_it_returns(tmp_path: Path, shim: Path, lib: Any) -> None:
    """A truncation moves every entry of the File into a hidden directory
    and then deletes it.  Each move is a rename between two directories,
    durable only once both are synced: with only the File's synced, a power
    loss after the truncation returned brought the columns and the File's
    attributes back (the crash harness's destroy plans).  Power loss at the
    first operation of the create after it: the File is empty but for what
    that create may have left."""
    ops = _pinned_ops(tmp_path / "count", shim, TRUNCATE_PLAN)
    after = [n for n, cls, what in ops if ".colfile-stage.s." in what]
    assert after, ops
    rep, undo = _pinned_power_loss(tmp_path / "loss", shim, TRUNCATE_PLAN, after[0], {})
    assert rep.violations == [], f"power loss before op {after[0]}:\n{rep.violations}\n{undo}"
    assert rep.matched.get("a") == "absent" and rep.matched.get("g/b") == "absent", (rep.matched, undo)


# ---------------------------------------------------------------------------
# pinned windows under MPI: an allocation failure chosen by its caller
#
# A collective create (cf_mpi_column_create, File.create with a comm) is
# made by rank 0, which stages the new column (format.md 8.3), exports its
# metadata and broadcasts it; every other rank builds a replica with
# cf_column_open_meta.  When a replica cannot be built, rank 0 must discard
# the staged column before it closes its handle: a close alone commits it,
# publishing a header that lists rows whose bytes were never written (the
# crash harness found it: ENOMEM in cf_column_open_meta on rank 1).

#: Three collective creates: a new column, a new version of it, a second
#: new column.  Each shares its new handle once, so the n-th call of
#: cf_column_open_meta on rank 1 is the create of operation n.
SHARE_PLAN = """# crashplan 1 seed=12 scale=tiny
0 create a dtype=<i4 nmemb=1 size=100 nfile=1 gen=1 piece=100 io=auto
1 replace a dtype=<f8 nmemb=1 size=60 nfile=2 gen=2 piece=60 io=auto
2 create s dtype=<i4 nmemb=1 size=80 nfile=2 gen=3 piece=80 io=auto
"""


def _mpi_writer(writer: str, shim: Path) -> list[str]:
    """mpiexec -n 2 with the shim in every rank, then the writer (c: the C
    MPI writer of the build, py: writer.py, which needs --mpi after its
    arguments); missing pieces skip (fail under CI)."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        found = shutil.which("mpiexec")
        if found is None:
            _missing("no mpiexec: the MPI writers cannot run")
        mpiexec = Path(found)
    if writer == "c":
        build = _build_dir()
        exe = build / "tests" / "crash" / "crash_writer_mpi" if build is not None else None
        if exe is None or not exe.exists():
            _missing("no crash_writer_mpi (a CMake build of tests/crash with MPI, $COLFILE_C_BUILD)")
        return [str(mpiexec), "-n", "2", "-genv", "LD_PRELOAD", str(shim), str(exe)]
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        _missing("no mpi4py: the Python MPI writer cannot run")
    return [str(mpiexec), "-n", "2", "-genv", "LD_PRELOAD", str(shim), sys.executable, str(CRASH / "writer.py")]


def _mpi_run(d: Path, shim: Path, writer: str, plan: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Replay plan on a new File d/F with 2 ranks of `writer`, the shim
    loaded in both and scoped to d/F; rank 1 is the one that acts."""
    d.mkdir()
    (d / "F").mkdir()
    (d / "pids").mkdir()
    (d / "plan.txt").write_text(plan)
    # as run_crash.py: no trace of an MPI job this test may run in, of
    # another shim setting; ranks that poll less on a machine with few cores
    full = {k: v for k, v in _env_for_writers().items()
            if not k.startswith(("PMI_", "PMIX_", "OMPI_", "HYDRA_", "MPI_LOCALRANKID", "CF_FAULT_"))}
    full.pop("LD_PRELOAD", None)
    full.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")
    full.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT", "16")
    full.update({"CF_FAULT_SCOPE": str(d / "F"), "CF_FAULT_VERBOSE": "1", "CF_FAULT_RANK": "1", **env})
    cmd = _mpi_writer(writer, shim) + [str(d / "F"), str(d / "plan.txt"), str(d / "log"), "--pids", str(d / "pids")]
    if writer == "py":
        cmd.append("--mpi")
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=120)


def _rank_allocs(d: Path, shim: Path, writer: str, plan: str, rank: int) -> list[tuple[int, str, int]]:
    """(number, library, offset of the caller) of every allocation
    libcolfile makes on `rank` in a clean run, in order."""
    r = _mpi_run(d, shim, writer, plan, {"CF_FAULT_MODE": "count", "CF_FAULT_REPORT": str(d / "r.%p")})
    assert r.returncode == 0, r.stderr[-3000:]
    reports = [p.read_text().splitlines() for p in sorted(d.glob("r.*"))]
    # processes the writer starts (a library lookup running ldconfig, say)
    # inherit the shim and report too, with no allocation of libcolfile
    mine = [lines for lines in reports if lines and lines[0].split()[-2:] == ["rank", str(rank)]
            and any(ln.startswith("a") and "libcolfile" in ln for ln in lines[1:])]
    assert len(mine) == 1, f"not one count report of rank {rank}: {[lines[:2] for lines in reports]}"
    allocs = []
    for ln in mine[0][1:]:
        if ln.startswith("a"):
            n, _, _, site = ln.split()
            lib_name, off = site.rsplit("+", 1)
            allocs.append((int(n[1:]), lib_name, int(off, 16)))
    return allocs


def _function_at(lib_name: str, offset: int, writer: str) -> str:
    """The function of the libcolfile `writer` runs (the C writer: the
    build's; the Python writer: the one colfile loads, which in an
    installed package is not the build's) whose code holds `offset`, from
    the library's symbol table."""
    from colfile import _ffi

    nm = shutil.which("nm")
    if nm is None:
        _missing("no nm (binutils): allocations cannot be mapped to functions")
    dirs = [Path(_ffi.library_path()).parent]
    build = _build_dir()
    if build is not None:
        dirs.insert(0 if writer == "c" else 1, build)
    path = next((dd / lib_name for dd in dirs if (dd / lib_name).exists()), None)
    assert path is not None, f"{lib_name} is in none of {dirs}"
    for opts in (["-S", "--defined-only"], ["-D", "-S", "--defined-only"]):
        out = subprocess.run([nm, *opts, str(path)], capture_output=True, text=True).stdout
        syms = [ln.split() for ln in out.splitlines()]
        for p in syms:
            if len(p) == 4 and p[2] in "Tt" and int(p[0], 16) <= offset < int(p[0], 16) + int(p[1], 16):
                return p[3]
        if any(len(p) == 4 for p in syms):
            break  # a symbol table, but no function there
    return "?"


def _open_meta_failures(d: Path, shim: Path, writer: str, plan: str) -> list[int]:
    """The allocation on rank 1 to fail for each call of
    cf_column_open_meta, by pattern: the first allocation whose caller is
    in cf_column_open_meta gives the call site where every call makes its
    first allocation; the allocations there, one per call, in order."""
    allocs = _rank_allocs(d, shim, writer, plan, 1)
    fn: dict[tuple[str, int], str] = {}
    for _, lib_name, off in allocs:
        if (lib_name, off) not in fn:
            fn[lib_name, off] = _function_at(lib_name, off, writer)
    firsts = [(lib_name, off) for _, lib_name, off in allocs if fn[lib_name, off] == "cf_column_open_meta"]
    assert firsts, f"no allocation from cf_column_open_meta on rank 1 of {writer}: {sorted(set(fn.values()))}"
    return [n for n, lib_name, off in allocs if (lib_name, off) == firsts[0]]


@pytest.fixture(scope="module")
def open_meta_failures(tmp_path_factory: pytest.TempPathFactory, shim: Path) -> Any:
    """writer -> the allocation numbers of _open_meta_failures for
    SHARE_PLAN (one count run per writer)."""
    found: dict[str, list[int]] = {}

    def get(writer: str) -> list[int]:
        if writer not in found:
            found[writer] = _open_meta_failures(tmp_path_factory.mktemp(f"count-{writer}") / "run", shim, writer,
                                                SHARE_PLAN)
        return found[writer]
    return get


@pytest.mark.parametrize("writer", ["c", "py"])
@pytest.mark.parametrize("op, want", [(1, {"a": "v1", "s": "absent"}), (2, {"a": "v2", "s": "absent"})],
                         ids=["replace", "create"])
def test_mpi_create_replica_fails(tmp_path: Path, shim: Path, lib: Any, open_meta_failures: Any,
                                  writer: str, op: int, want: dict[str, str]) -> None:
    """A collective create whose replica on rank 1 cannot be made (NULL from
    the first allocation of cf_column_open_meta) fails cleanly on every
    rank, and the column is its previous version (replace) or absent
    (create) -- never a committed header listing rows with no data."""
    sys.path.insert(0, str(CRASH))
    try:
        import checker
        import crashplan
    finally:
        sys.path.remove(str(CRASH))
    calls = open_meta_failures(writer)
    assert len(calls) == 3, (f"{writer}: {len(calls)} calls of cf_column_open_meta on rank 1, not one per "
                             f"collective create of the plan (3): allocations {calls}")
    at = calls[op]
    d = tmp_path / "run"
    r = _mpi_run(d, shim, writer, SHARE_PLAN,
                 {"CF_FAULT_AT": str(at), "CF_FAULT_ACTION": "enomem",
                  **({"GLIBC_TUNABLES": "glibc.malloc.perturb=165"} if writer == "c" else {})})
    assert f"NULL from allocation {at} " in r.stderr, f"no NULL from allocation {at}: {r.stderr[-3000:]}"
    log = checker.parse_log(d / "log")
    assert r.returncode == 3 and list(log.failed) == [op] and "ENOMEM" in log.failed[op], \
        f"{writer}: not a clean ENOMEM in operation {op} (status {r.returncode}, failed {log.failed}): " \
        f"{r.stderr[-3000:]}"
    seed, ops = crashplan.read_plan(str(d / "plan.txt"))
    rep = checker.check(d / "F", crashplan.Model(seed, ops), log)
    assert rep.violations == [], f"{writer}, NULL from allocation {at} (operation {op}):\n{rep.violations}"
    assert rep.matched == want, f"{writer}, operation {op}: {rep.matched}, not {want}"
    # the staged column is gone with its handle
    assert [h for h in rep.hidden if "stage" in h] == [], rep.hidden
