#!/usr/bin/env python3
"""The concurrency harness: rounds of two to four worker processes
(worker.py) running random mixes of every mutation and read on one File,
with and without delay injection (delayshim.so), while an observer in this
process takes snapshots of every column straight from the files; then the
independent checker (conccheck.py) judges every snapshot, read, query,
damage report and removal against the versions the workers' logs define.

    run_concurrency.py [--budget S | --ops N] [--seed K] [--delay on|off|both]
                       [--workers 2,3,4] [--round-seconds S] [--json OUT] [--keep DIR]
                       [--fs local|noflock|nodelocal|noexchange] [--locking on|off]
                       [--mutators N]

``--fs`` runs every worker under a file-system model (tests/crash/fsmodel.py).
Where locks exclude no one (``nodelocal``, or ``noflock`` with ``--locking
off``) colfile promises nothing about concurrent writers of one File
(docs/reliability.md, "Locking on parallel file systems"): those rounds
have one mutating worker (``--mutators``, default 1 there) and the others
read, query, check and repair.  ``--fs noflock --locking on`` expects every
mutation to be refused with an error naming ``locking=False``.

Exit status: 0 no violation, 1 violations, 2 the harness could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import conccheck  # noqa: E402
from childpath import with_colfile_path  # noqa: E402  (tests/crash, on the path by conccheck)
import fsmodel  # noqa: E402  (tests/crash, on the path conccheck set)

#: what the read-only workers leave out
MUTATION_KINDS = "create,append,update,attr,rm,rmr,truncate"


def find_shim(build: str | None) -> Path | None:
    for cand in (build, os.environ.get("COLFILE_C_BUILD"), REPO / "build" / "release", REPO / "build" / "crash"):
        if cand and (Path(cand) / "tests" / "concurrency" / "delayshim.so").exists():
            return Path(cand) / "tests" / "concurrency" / "delayshim.so"
    return None


def worker_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CF_")}
    env.pop("LD_PRELOAD", None)
    with_colfile_path(env)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def has_rm_recursive(python: str, env: dict[str, str]) -> bool:
    """Whether ``colfile rm`` has ``-r`` (removal of a group)."""
    p = subprocess.run([python, "-m", "colfile.cli", "rm", "--help"], env=env, capture_output=True,
                       text=True, timeout=120)
    return any(tok in p.stdout for tok in (" -r,", " -r ", "--recursive"))


class Round:
    def __init__(self, opts: argparse.Namespace, n: int, workdir: Path, shim: Path | None,
                 env: dict[str, str], rmr: bool, fs: fsmodel.FsModel | None = None) -> None:
        rng = random.Random(opts.seed * 7919 + n)
        self.n = n
        self.seed = opts.seed * 1000 + n
        self.nworkers = rng.choice([int(x) for x in opts.workers.split(",")])
        self.delay = {"on": True, "off": False}.get(opts.delay, n % 2 == 1) and shim is not None
        self.dir = workdir / f"r{n:05d}"
        self.dir.mkdir(parents=True)
        self.file = self.dir / "F"
        self.opts = opts
        self.shim = shim
        self.env = env
        self.rmr = rmr
        self.fs = fs or fsmodel.FsModel()
        self.snapshots: list[tuple[str, float, float, dict[str, Any]]] = []
        self.judge: conccheck.Judge | None = None
        self.stderr = ""

    def spec(self) -> str:
        return f"seed={self.seed} workers={self.nworkers} delay={'on' if self.delay else 'off'}"

    def run(self) -> None:
        start_at = time.monotonic_ns() + int(self.opts.startup * 1e9)
        if self.opts.mutators < self.nworkers:
            self.file.mkdir()   # an empty File: the readers may start first
        procs = []
        for w in range(self.nworkers):
            env = dict(self.env)
            if self.delay:
                env["LD_PRELOAD"] = self.fs.preload(self.shim)
                env["CF_DELAY_SCOPE"] = str(self.file)
                env["CF_DELAY_MAX_US"] = str(self.opts.delay_us)
                env["CF_DELAY_SEED"] = str(self.seed * 10 + w)
            cmd = [self.opts.python, str(HERE / "worker.py"), str(self.file), str(self.dir / f"log{w}"),
                   "--wid", str(w), "--seed", str(self.seed), "--duration", str(self.opts.round_seconds),
                   "--start-at", str(start_at)] + (["--rmr"] if self.rmr else [])
            without = ",".join(k for k in (self.opts.without, MUTATION_KINDS if w >= self.opts.mutators else "") if k)
            if without:
                cmd += ["--without", without]
            if self.opts.locking == "off":
                cmd += ["--locking", "off"]
            if self.opts.ops_per_worker:
                cmd += ["--ops", str(self.opts.ops_per_worker)]
            errfh = open(self.dir / f"stderr{w}", "wb")
            procs.append((subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=errfh,
                                           start_new_session=True), errfh))
        while time.monotonic_ns() < start_at:
            time.sleep(0.005)
        deadline = time.monotonic() + self.opts.round_seconds + 120
        hung = False
        last: dict[str, Any] = {}
        while any(p.poll() is None for p, _ in procs):
            for c in conccheck.NAMES:
                t0, t1, snap = conccheck.read_snapshot(self.file, c)
                # a state seen again and again is kept once per 50 ms, so
                # that files of the same content are not held many times
                prev = last.get(c)
                if prev is not None and prev[3].get("hash", prev[3]["state"]) == snap.get("hash", snap["state"]) \
                        and t0 - prev[1] < 50_000_000 and snap["state"] != "bad":
                    continue
                last[c] = (c, t0, t1, snap)
                self.snapshots.append((c, t0, t1, snap))
            time.sleep(0.001)
            if time.monotonic() > deadline:
                hung = True
                break
        for p, fh in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
            p.wait()
            fh.close()
        for c in conccheck.NAMES:   # the quiescent end state
            t0, t1, snap = conccheck.read_snapshot(self.file, c)
            self.snapshots.append((c, t0, t1, snap))
        logs = [self.dir / f"log{w}" for w in range(self.nworkers)]
        self.judge = conccheck.judge_round(self.seed, [p for p in logs if p.exists()], self.snapshots)
        if hung:
            self.judge.add("hang", f"a worker did not finish within {self.opts.round_seconds + 120:.0f} s")
        for w, (p, _) in enumerate(procs):
            err = (self.dir / f"stderr{w}").read_text(errors="replace")
            if p.returncode not in (0, None) and not hung:
                self.judge.add("crash", f"worker {w} exited with status {p.returncode}: {err[-800:]}")
            self.stderr += err
        self.snapshots = []   # the files of the snapshots are no longer needed

    @property
    def ops(self) -> int:
        return len(self.judge.ops) if self.judge else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of rounds (default 60)")
    ap.add_argument("--ops", type=int, default=0, help="run rounds until this many operations (overrides --budget)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", default="2,3,4", help="processes per round, chosen at random")
    ap.add_argument("--delay", choices=["on", "off", "both"], default="both",
                    help="delay injection (both: every other round)")
    ap.add_argument("--delay-us", type=int, default=4000, help="longest injected sleep (default 4000 us)")
    ap.add_argument("--round-seconds", type=float, default=4.0)
    ap.add_argument("--without", default="", help="operation kinds the workers leave out, e.g. "
                    "repair,truncate (create append update attr rm rmr truncate repair check read slowread query)")
    ap.add_argument("--ops-per-worker", type=int, default=0)
    ap.add_argument("--startup", type=float, default=2.0, help="seconds the workers get to start")
    ap.add_argument("--build", help="CMake build with tests/concurrency/delayshim.so")
    ap.add_argument("--shim", help="delayshim.so to use (default: the build's)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--keep", help="copy the directories of rounds with violations here")
    ap.add_argument("--workdir")
    ap.add_argument("--fs", default="local", help="file-system model (tests/crash/fsmodel.py): local, noflock, "
                    "nodelocal, noexchange or a comma list")
    ap.add_argument("--locking", choices=["on", "off"], help="off: workers open with locking=False "
                    "(default: off under noflock, else on)")
    ap.add_argument("--mutators", type=int, help="how many workers mutate; the others only read, query, "
                    "check and repair (default: 1 where locks exclude no one, else all)")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args(argv)

    shim = Path(opts.shim) if opts.shim else find_shim(opts.build)
    build = Path(opts.build) if opts.build else (shim.resolve().parents[2] if shim else None)
    fs = fsmodel.parse(opts.fs, build)
    if opts.locking is None:
        opts.locking = "off" if fs.locking_off else "on"
    refused = "noflock" in fs.modes and opts.locking == "on"
    unexcluded = "nodelocal" in fs.modes or opts.locking == "off"
    if opts.mutators is None:
        opts.mutators = 1 if unexcluded else 99
    conccheck.ABSENT_WHILE_REPLACED = fs.no_exchange
    conccheck.NO_LOCK_PROOF = unexcluded
    if refused:
        # the promise there: every mutation refused, with that message
        conccheck.ACCEPTED_FAIL.add("LockingRefused")
    if shim is None and opts.delay != "off":
        print("note: delayshim.so is not built: rounds run without delay injection", file=sys.stderr)
    env = worker_env()
    try:
        rmr = has_rm_recursive(opts.python, env)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"cannot run colfile: {exc}", file=sys.stderr)
        return 2
    workdir = Path(opts.workdir) if opts.workdir else Path(tempfile.mkdtemp(prefix="colfile-conc-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if fs.active:
        fs.log = workdir / "lockshim.log"
        fs.show_mount(workdir)
        env = fs.apply(env)
    print(f"concurrency harness: seed {opts.seed}, "
          + (f"{opts.ops} operations" if opts.ops else f"budget {opts.budget:.0f} s")
          + f", workers {opts.workers}, delay {opts.delay} (shim {shim}), "
          f"rm -r {'used' if rmr else 'not available: group removal not exercised'}, "
          f"file system {fs.name}, locking {opts.locking}, "
          f"mutating workers {'all' if opts.mutators >= 99 else opts.mutators}", flush=True)
    t_start = time.monotonic()
    rounds: list[Round] = []
    cats: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    stats: dict[str, int] = {}
    total_ops = 0
    n = 0
    try:
        while True:
            if opts.ops and total_ops >= opts.ops:
                break
            if not opts.ops and time.monotonic() - t_start + opts.round_seconds + opts.startup > opts.budget \
                    and rounds:
                break
            n += 1
            r = Round(opts, n, workdir, shim, env, rmr, fs)
            r.run()
            assert r.judge is not None
            if refused:
                for op in r.judge.ops.values():
                    if op.status == "done" and op.kind in conccheck.MUTATIONS | {"attr"}:
                        r.judge.add("unlocked-write", f"{op.key} {op.kind} {op.target} succeeded on a file "
                                    f"system without locks, with locking on")
            total_ops += r.ops
            rounds.append(r)
            for k, v in r.judge.stats.items():
                stats[k] = stats.get(k, 0) + v
            rc: dict[str, int] = {}
            for cat, text in r.judge.violations:
                cats[cat] = cats.get(cat, 0) + 1
                rc[cat] = rc.get(cat, 0) + 1
                ex = examples.setdefault(cat, [])
                if len(ex) < 3:
                    ex.append(f"round {r.spec()}: {text[:400]}")
            line = f"  round {n:4d} {r.spec():36s} {r.ops:5d} ops"
            if rc:
                line += "  VIOLATIONS " + ", ".join(f"{k} {v}" for k, v in sorted(rc.items()))
                if opts.keep:
                    (r.dir / "violations.txt").write_text("".join(f"[{c}] {t}\n" for c, t in r.judge.violations))
                    dst = Path(opts.keep) / r.dir.name
                    shutil.rmtree(dst, ignore_errors=True)
                    shutil.copytree(r.dir, dst, symlinks=True)
            print(line, flush=True)
            if not rc or not opts.keep:
                shutil.rmtree(r.dir, ignore_errors=True)
    finally:
        answered = fs.answered()
        if not opts.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - t_start
    bad_rounds = sum(1 for r in rounds if r.judge and r.judge.violations)
    summary = {"seed": opts.seed, "seconds": round(elapsed, 1), "rounds": len(rounds), "operations": total_ops,
               "rounds_with_violations": bad_rounds, "violations": sum(cats.values()),
               "violation_categories": cats, "rounds_per_category": {
                   c: sum(1 for r in rounds if r.judge and any(v[0] == c for v in r.judge.violations))
                   for c in cats},
               "examples": examples, "stats": stats, "rm_recursive": rmr, "shim": str(shim),
               "fs": fs.name, "locking": opts.locking, "mutators": opts.mutators,
               "answered": answered}
    print(f"\nconcurrency harness: {len(rounds)} rounds, {total_ops} operations in {elapsed:.1f} s")
    if fs.active:
        print(f"  file-system model {fs.name}: the shim answered "
              + (", ".join(f"{k} {v}" for k, v in sorted(summary["answered"].items())) or "no call"))
    for k, v in sorted(stats.items()):
        print(f"  {k}: {v}")
    for cat, k in sorted(cats.items(), key=lambda kv: -kv[1]):
        print(f"  VIOLATION {cat}: {k} in {summary['rounds_per_category'][cat]} round(s)")
        for e in examples[cat]:
            print(f"      e.g. {e}")
    print("RESULT: " + ("OK, no violation" if not cats else f"{sum(cats.values())} violations in {bad_rounds} round(s)"))
    if opts.json:
        Path(opts.json).write_text(json.dumps(summary, indent=1))
    if not rounds:
        return 2
    return 1 if cats else 0


if __name__ == "__main__":
    sys.exit(main())
