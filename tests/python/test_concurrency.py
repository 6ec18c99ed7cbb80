"""Concurrency: several processes changing and reading one File at once
(tests/concurrency/README.md):

* the delay shim (delayshim.so) itself: it sleeps before file operations
  below its scope directory only, and changes no result;
* the independent checker catches what it must: a committed column with a
  blob gone, a changed byte, a read that is no version;
* the harness, tests/concurrency/run_concurrency.py, for a bounded budget:
  rounds of 2 to 4 worker processes running random mixes of every mutation
  (create/replace, append, in-place update, attributes, rm, rm -r when the
  CLI has it, truncation by mode "w", repair) and every read (reads, slow
  reads, verifying reads, queries, colfile check), with and without delay
  injection: zero violations.

The budget is ``$COLFILE_CONCURRENCY_BUDGET`` seconds (default 60).  A long
run, on demand (at least 10,000 operations)::

    python tests/concurrency/run_concurrency.py --ops 10000 --json summary.json
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
from shims import shim_library

REPO = Path(__file__).resolve().parents[2]
CONC = REPO / "tests" / "concurrency"
BUDGET = float(os.environ.get("COLFILE_CONCURRENCY_BUDGET", "60"))


def _env() -> dict[str, str]:
    env = child_env()
    if env.get("COLFILE_LIBRARY"):
        env["COLFILE_LIBRARY"] = str(Path(env["COLFILE_LIBRARY"]).resolve())
    return env


def _conccheck() -> Any:
    """tests/concurrency/conccheck.py (imported from there, which leaves
    sys.path as it was)."""
    sys.path.insert(0, str(CONC))
    try:
        import conccheck
    finally:
        sys.path.remove(str(CONC))
    return conccheck


def _rows_of(conccheck: Any, seed: int, tok: str) -> Any:
    """rows(n, s, k): the bytes of rows s..s+k as the n-th operation of
    worker 0 writes them (the harness's deterministic data)."""
    crashplan = conccheck.crashplan

    def rows(n: int, s: int, k: int) -> bytes:
        return crashplan.element_bytes(tok, crashplan.gen_key(seed, conccheck.gen_of(0, n)), s, k)
    return rows


@pytest.fixture(scope="module")
def delayshim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """delayshim.so: the build's, else compiled here."""
    return shim_library(tmp_path_factory, "concurrency", "delayshim", ("-ldl", "-lpthread"),
                        builds=(REPO / "build" / "crash",))


_OPS = r"""
import os, sys, time
root, n = sys.argv[1], int(sys.argv[2])
t0 = time.monotonic()
for i in range(n):
    p = os.path.join(root, f"f{i}")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o666)
    os.write(fd, b"x%d" % i)
    os.close(fd)
    os.rename(p, p + ".r")
    assert open(p + ".r", "rb").read() == b"x%d" % i
    os.unlink(p + ".r")
print(time.monotonic() - t0)
"""


def test_delay_shim_delays_in_scope_only(tmp_path: Path, delayshim: Path) -> None:
    """40 rounds of open, rename, open, unlink: in scope each sleeps up to
    CF_DELAY_MAX_US (mean 10 ms here), outside it nothing; the files are
    what they would be without the shim."""
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    env = {**os.environ, "LD_PRELOAD": str(delayshim), "CF_DELAY_SCOPE": str(inside),
           "CF_DELAY_MAX_US": "20000"}

    def run(root: Path) -> float:
        r = subprocess.run([sys.executable, "-c", _OPS, str(root), "40"], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return float(r.stdout.split()[-1])

    slow, fast = run(inside), run(outside)
    # 160 delayed calls of 10 ms on average: well above a second
    assert slow > 0.8, f"in scope: {slow:.3f} s"
    assert fast < slow / 4, f"outside the scope {fast:.3f} s, inside {slow:.3f} s"
    assert list(inside.iterdir()) == [] and list(outside.iterdir()) == []


def test_checker_catches_damage(tmp_path: Path, lib: Any) -> None:
    """One worker alone writes columns; the checker accepts every snapshot
    and read, then reports a removed blob, a changed byte and a read
    result that is no version."""
    conccheck = _conccheck()
    F, log = tmp_path / "F", tmp_path / "log0"
    r = subprocess.run([sys.executable, str(CONC / "worker.py"), str(F), str(log), "--wid", "0", "--seed", "7",
                        "--ops", "60", "--duration", "100", "--without", "rm,truncate,rmr,check,repair"],
                       env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr

    def judge(extra_log: str = "") -> Any:
        if extra_log:
            with open(log, "a") as fh:
                fh.write(extra_log)
        now = time.monotonic_ns()
        snaps = [(c, *conccheck.read_snapshot(F, c)) for c in conccheck.NAMES]
        return conccheck.judge_round(7, [log], snaps), snaps, now

    j, snaps, now = judge()
    assert j.violations == [], j.violations
    assert j.stats.get("done create", 0) > 0 and j.stats.get("read results", 0) > 0, j.stats
    present = [(c, s) for c, _, _, s in snaps if s["state"] == "version"]
    assert present, "the worker left no column"
    col = present[0][0]
    blobs = sorted(p for p in (F / col).iterdir() if p.name[:1] in "0123456789ABCDEF" and p.stat().st_size)
    assert blobs, f"{col} has no blob with data"
    # a changed byte: no version
    raw = bytearray(blobs[0].read_bytes())
    raw[0] ^= 0x20
    blobs[0].write_bytes(bytes(raw))
    j, _, _ = judge()
    assert any(cat == "mix" and text.startswith(col) for cat, text in j.violations), j.violations
    # a blob gone: missing data
    blobs[0].unlink()
    # and a read that got data of no version
    j, _, _ = judge(f"B {now} 9999 read {col} verify=1 slow=0\nR {now + 1} 9999 d:0123456789abcdef0123\n"
                    f"D {now + 2} 9999\n")
    cats = {cat for cat, _ in j.violations}
    assert {"missing-data", "read-mix"} <= cats, j.violations


def test_checker_follows_sums_over_many_whole_overwrites(tmp_path: Path, lib: Any) -> None:
    """Updates that rewrite every row of a column leave no rows to tell
    their base by, so the checker keeps every header byte sum their chain
    may carry (bigfile's sum grows by the bytes written; a repair resets it
    to the bytes' sum).  A chain of such updates with a repair in the middle
    is a version, with the header the writers really left."""
    import random
    sys.path.insert(0, str(CONC))
    try:
        import conccheck
        import worker
    finally:
        sys.path.remove(str(CONC))

    class Second(random.Random):
        """Every choice the second option: a one-row <i8... column, every
        update rewriting its only row."""
        def choice(self, seq: Any) -> Any:
            return seq[1]

        def random(self) -> float:
            return 0.9

    F, log = tmp_path / "F", tmp_path / "log0"
    w = worker.Worker(str(F), str(log), 0, 7, False)
    w.rng = Second(1)
    steps = ["create"] + ["update"] * 3 + ["repair"] + ["update"] * 6
    for kind in steps:
        if kind == "repair":
            w.repair()
        else:
            getattr(w, kind)("g/c")
        w.op += 1
    text = log.read_text()
    assert text.count(" D ") == 0 and text.count("\nD ") + text.startswith("D ") == len(steps), text
    assert "repaired (sum mismatch)" in text, text
    snaps = [(c, *conccheck.read_snapshot(F, c)) for c in conccheck.NAMES]
    j = conccheck.judge_round(7, [log], snaps)
    assert j.violations == [], j.violations


def test_checker_read_of_an_older_version_during_a_live_update(tmp_path: Path) -> None:
    """A read handle opened on version V; another process appended to V
    and then updated rows of V's blob in place while the read went on.
    The handle reads V's blob, so it gets V's rows, each old or new: no
    violation.  A row that is neither still is one."""
    conccheck = _conccheck()
    seed, tok = 11, "<i4"
    rows = _rows_of(conccheck, seed, tok)

    v1 = rows(1, 0, 10)                 # create: 10 rows, one blob
    v2 = v1 + rows(2, 10, 5)            # append: 5 rows, a second blob
    upd = rows(4, 2, 3)                 # update of v2: rows 2..4
    got = v1[:8] + upd[:4] + v1[12:]    # row 2 new, rows 3 and 4 not yet
    log, data = tmp_path / "log0", tmp_path / "log0.data"
    data.write_bytes(got)

    def lines(read: bytes) -> str:
        data.write_bytes(read)
        return "\n".join([
            f"B 100 1 create a token={tok} size=10 nfile=1", "L 110 1", "X 120 1 layout=10", "C 130 1",
            "D 200 1",
            "B 250 3 read a verify=0 slow=1",
            f"B 300 2 append a rows=5 nfile=1", "L 310 2",
            f"X 320 2 layout=10,5 old=10 base={conccheck.digest(tok, 1, [10], v1)}", "C 330 2", "D 400 2",
            "B 500 4 update a", "L 510 4",
            f"X 520 4 layout=10,5 start=2 count=3 base={conccheck.outside_digest(tok, 1, [10, 5], v2, 2, 3)}",
            f"R 700 3 d:{conccheck.digest(tok, 1, [10], read)} at=0,{len(read)}", "D 701 3",
            "C 790 4", "D 800 4", ""])

    log.write_text(lines(got))
    j = conccheck.judge_round(seed, [log], [])
    assert j.violations == [], j.violations
    assert j.stats.get("results during a live update") == 1, j.stats
    bad = bytearray(got)
    bad[36] ^= 0x11                     # row 9: neither old nor new
    log.write_text(lines(bytes(bad)))
    j = conccheck.judge_round(seed, [log], [])
    assert [cat for cat, _ in j.violations] == ["read-mix"], j.violations


def test_checker_read_across_two_updates(tmp_path: Path) -> None:
    """A slow read during which one in-place update committed and a second
    one (of the version the first made) was live: each row it got may be
    that of the version before, between or after them."""
    conccheck = _conccheck()
    seed, tok = 12, "<i4"
    rows = _rows_of(conccheck, seed, tok)

    v1 = rows(1, 0, 10)
    v2 = v1[:8] + rows(2, 2, 6) + v1[32:]          # update 2: rows 2..7
    v3 = v2[:24] + rows(3, 6, 3) + v2[36:]         # update 3: rows 6..8
    got = v1[:12] + v2[12:24] + v3[24:28] + v2[28:]  # rows 0-2 before, 3-5 after 2, 6 after 3
    (tmp_path / "log0.data").write_bytes(got)
    log = tmp_path / "log0"
    log.write_text("\n".join([
        f"B 100 1 create a token={tok} size=10 nfile=2", "L 110 1", "X 120 1 layout=5,5", "C 130 1", "D 200 1",
        "B 250 9 read a verify=0 slow=1",
        "B 300 2 update a", "L 310 2",
        f"X 320 2 layout=5,5 start=2 count=6 base={conccheck.outside_digest(tok, 1, [5, 5], v1, 2, 6)}",
        "C 330 2", "D 400 2",
        "B 500 3 update a", "L 510 3",
        f"X 520 3 layout=5,5 start=6 count=3 base={conccheck.outside_digest(tok, 1, [5, 5], v2, 6, 3)}",
        f"R 700 9 d:{conccheck.digest(tok, 1, [5, 5], got)} at=0,{len(got)}", "D 701 9",
        "C 790 3", "D 800 3", ""]))
    j = conccheck.judge_round(seed, [log], [])
    assert j.violations == [], j.violations
    assert j.stats.get("results during a live update") == 1, j.stats


def test_concurrency_harness(tmp_path: Path, lib: Any, delayshim: Path) -> None:
    """Rounds of 2-4 processes for a bounded budget, half of them with
    delay injection: every snapshot, read and query is a version, no false
    damage report, no removal while a writer holds the lock."""
    summary = tmp_path / "summary.json"
    env = _env()
    cmd = [sys.executable, str(CONC / "run_concurrency.py"), "--budget", str(BUDGET), "--json", str(summary),
           "--keep", str(tmp_path / "failures"), "--workdir", str(tmp_path / "work"), "--shim", str(delayshim)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=BUDGET * 3 + 600)
    out = r.stdout[-12000:] + r.stderr[-4000:]
    if r.returncode == 2 or not summary.exists():
        pytest.fail(f"the concurrency harness could not run (status {r.returncode}):\n{out}")
    s = json.loads(summary.read_text())
    print(out)
    assert s["rounds"] >= 2 and s["operations"] > 0, out
    assert s["shim"] != "None", "delay injection did not run"
    assert s["violations"] == 0, (f"{s['violations']} violations in {s['rounds_with_violations']} of "
                                  f"{s['rounds']} rounds: {s['violation_categories']}\n{out}")
