#!/usr/bin/env python3
"""Crash-test and fault-injection driver for colfile (issue #5).

Runs writers (tests/crash/crash_writer[_mpi] and writer.py, serial and under
mpiexec) that replay seeded plans (crashplan.py) on a File, crashes or fails
them in every way below, and checks every File afterwards with the
independent checker (checker.py):

  kill       random-time SIGKILL of a serial writer (C and Python)
  rankkill   random-time SIGKILL of one rank of an MPI writer (--mpi);
             mpiexec kills the rest
  inject     SIGKILL at the N-th I/O operation, N sweeping every operation
             the writer makes (hits every fsync/rename window)
  powerloss  at the N-th operation undo everything not yet durable, then
             SIGKILL (faultshim.c describes the model)
  faults     EIO, ENOSPC, short write at every I/O operation and NULL from
             every allocation libcolfile makes: the writer must get a clean
             error, and the File must still keep the promise

Usage:
  run_crash.py --budget SECONDS [--seed S] [--mode kill|inject|powerloss|faults|all]
               [--mpi] [--nranks 2,4] [--writers c,py] [--json OUT] [--keep DIR]
  run_crash.py --trial SPEC        rerun one trial (the reproducer of a failure)

A trial is reproduced exactly by its SPEC (printed with every violation),
except for the timing of random-time kills.  Exit status: 0 no violation,
1 violations, 2 the harness could not run.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import checker  # noqa: E402
from childpath import with_colfile_path  # noqa: E402
import crashplan  # noqa: E402
import fsmodel  # noqa: E402

MODES = ["kill", "rankkill", "inject", "powerloss", "faults"]
IO_ACTIONS = ("eio", "enospc", "short")
#: operation classes where each fault makes sense
FAULT_CLASSES = {
    "eio": {"open", "create", "write", "truncate", "fsync", "rename", "unlink", "mkdir", "rmdir",
            "link", "close"},
    "enospc": {"create", "write", "truncate", "fsync", "rename", "mkdir", "link", "close"},
    "short": {"write"},
}
#: classes whose errors must reach the writer: ignoring them loses data
#: or durability silently (a failed fsync must never be retried away)
SWALLOW_CLASSES = {"fsync", "write", "rename"}
CATALOG_DIR = ".colfile-catalog"
SANITIZER = re.compile(r"(AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:)")
#: MPICH's fatal error handler ending a rank (in a collective whose peer died)
MPI_FATAL = re.compile(r"Abort\(\d+\) on node \d+ \(rank \d+ in comm \d+\): Fatal error in ")


# ---------------------------------------------------------------------------
# tools

@dataclass
class Tools:
    build: Path | None
    shim: Path | None
    cwriter: Path | None
    cwriter_mpi: Path | None
    mpiexec: Path | None
    python: str
    env: dict[str, str]
    nodurable_flag: int | None
    py_durable: bool
    colfile_version: str = "?"
    san_cwriter: Path | None = None   # crash_writer of a COLFILE_SANITIZE build
    san_shim: Path | None = None      # its faultshim_io.so
    torn_exported: bool = True        # colfile.TornError exists
    fs: fsmodel.FsModel = field(default_factory=fsmodel.FsModel)   # --fs

    def describe(self) -> str:
        return (f"build {self.build}; shim {self.shim}; C writer {self.cwriter}; "
                f"sanitizer C writer {self.san_cwriter}; "
                f"C MPI writer {self.cwriter_mpi}; mpiexec {self.mpiexec}; "
                f"COLFILE_LIBRARY {self.env.get('COLFILE_LIBRARY', '(package)')}")


def _source_dir(build: Path) -> Path | None:
    cache = build / "CMakeCache.txt"
    if cache.exists():
        m = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache.read_text(), re.M)
        if m:
            return Path(m.group(1))
    return None


def find_tools(build_arg: str | None, python: str, shim_arg: str | None = None,
               san_arg: str | None = None) -> Tools:
    build = Path(build_arg) if build_arg else None
    if build is None:
        for cand in (os.environ.get("COLFILE_C_BUILD"), REPO / "build" / "crash", REPO / "build" / "release"):
            if cand and (Path(cand) / "tests" / "crash" / "faultshim.so").exists():
                build = Path(cand)
                break
    # absolute: the writers run in their trial directories
    build = build.resolve() if build is not None else None
    def art(rel: str) -> Path | None:
        if build is None:
            return None
        p = build / rel
        return p if p.exists() else None
    shim = Path(shim_arg).resolve() if shim_arg else art("tests/crash/faultshim.so")
    cw = art("tests/crash/crash_writer")
    cwm = art("tests/crash/crash_writer_mpi")
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        found = shutil.which("mpiexec")
        mpiexec = Path(found) if found else None  # type: ignore[assignment]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "PMIX_", "OMPI_", "HYDRA_", "MPI_LOCALRANKID", "CF_FAULT_"))}
    env.pop("LD_PRELOAD", None)
    # The Python writer imports the colfile this driver would import.
    pkg = with_colfile_path(env)
    has_own_lib = any((pkg / "colfile" / "_lib").glob("libcolfile*")) if (pkg / "colfile").exists() else False
    if "COLFILE_LIBRARY" not in env and not has_own_lib and build and (build / "libcolfile.so").exists():
        env["COLFILE_LIBRARY"] = str(build / "libcolfile.so")
    env.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")
    env.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT", "16")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    nodurable = None
    src = _source_dir(build) if build else None
    header = (src or REPO) / "include" / "colfile.h"
    if header.exists():
        m = re.search(r"CF_OPEN_NODURABLE\s*=\s*(0x[0-9A-Fa-f]+|\d+)", header.read_text())
        if m:
            nodurable = int(m.group(1), 0)
    probe = subprocess.run(
        [python, "-c", "import os, ctypes.util, inspect; "
         "os.environ.get('COLFILE_LIBRARY') and setattr(ctypes.util, 'find_library', lambda n: None); "
         "import colfile; "
         "print(colfile.__version__ if hasattr(colfile, '__version__') else '?', "
         "'durable' in inspect.signature(colfile.File).parameters, hasattr(colfile, 'TornError'))"],
        env=env, capture_output=True, text=True, timeout=120)
    py_durable = probe.returncode == 0 and probe.stdout.split()[-2:-1] == ["True"]
    torn_exported = probe.returncode == 0 and probe.stdout.split()[-1:] == ["True"]
    version = probe.stdout.split()[0] if probe.returncode == 0 and probe.stdout.split() else "?"
    san_cw = san_shim = None
    if san_arg:
        san = Path(san_arg).resolve()
        if (san / "tests/crash/crash_writer").exists() and (san / "tests/crash/faultshim_io.so").exists():
            san_cw, san_shim = san / "tests/crash/crash_writer", san / "tests/crash/faultshim_io.so"
        else:
            print(f"note: {san} has no tests/crash/crash_writer and faultshim_io.so", file=sys.stderr)
    t = Tools(build, shim, cw, cwm, mpiexec, python, env, nodurable, py_durable, version, san_cw, san_shim)
    t.torn_exported = torn_exported
    return t


# ---------------------------------------------------------------------------
# trials

@dataclass
class Spec:
    """One trial.  encode()/decode() make its reproducer string."""
    writer: str = "c"        # c | py | csan (the C writer of a sanitizer build)
    np: int = 1              # MPI ranks (1: serial writer)
    seed: int = 1
    scale: str = "small"
    action: str = "none"     # none count killtime kill powerloss eio enospc short enomem
    at: int = 0              # the N-th operation (kill powerloss eio enospc short enomem)
    rank: int = 0            # the rank that acts (or is killed)
    delay: float = 0.0       # killtime: seconds after "ready"
    keep: float = 0.0        # powerloss: probability of keeping a change that is not durable
    onerror: str = "close"   # close | abort
    nodurable: int = 0
    sticky: int = 0
    resume: int = 0          # after the crash, finish the plan and check again
    cache: int = 0           # the operation is part of the File catalog's update
    variant: str = ""        # the plan variant ("destroy": with rm, truncate, repair)
    repair: int = 0          # after the crash, `colfile repair` killed at its N-th I/O operation

    def encode(self) -> str:
        d = Spec()
        return ",".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self)
                        if getattr(self, f.name) != getattr(d, f.name) or f.name in ("writer", "seed", "action"))

    @classmethod
    def decode(cls, text: str) -> Spec:
        s = cls()
        for kv in text.split(","):
            k, v = kv.split("=", 1)
            cur = getattr(s, k)
            setattr(s, k, type(cur)(v))
        return s

    @property
    def mode(self) -> str:
        if self.action in ("none", "count"):
            return "clean"
        if self.action == "killtime":
            return "rankkill" if self.np > 1 else "kill"
        if self.action == "kill":
            return "inject"
        if self.action == "powerloss":
            return "powerloss"
        return "faults"


@dataclass
class Result:
    spec: Spec
    violations: list[str] = field(default_factory=list)
    killed: bool = False       # the writer died by the injected crash
    fired: bool = False        # the fault was injected
    clean_error: bool = False  # the writer reported a clean error
    elapsed: float = 0.0
    rc: int | None = None
    notes: list[str] = field(default_factory=list)
    dir: str = ""
    stderr: str = ""
    counts: dict[int, dict[str, Any]] = field(default_factory=dict)
    t_ready: float | None = None
    t_total: float = 0.0
    site: str = ""             # the operation the fault hit ("fsync g/.colfile-stage.*")
    inflight: str = ""         # the plan operation in flight ("create g/b")

    def signature(self) -> str:
        cats = sorted({m.group(1) for v in self.violations for m in [re.match(r"\[([^\]]+)\]", v)] if m})
        during = self.inflight.split(" ")[0] if self.inflight else "no operation"
        mode = self.spec.mode + (f"+{self.spec.variant}" if self.spec.variant else "")
        return f"{mode}: {'+'.join(cats)} (during {during})"


class Plans:
    """Plan files and models, made once per (seed, scale)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cache: dict[tuple[int, str, str], tuple[str, crashplan.Model]] = {}

    def get(self, seed: int, scale: str, variant: str = "") -> tuple[str, crashplan.Model]:
        with self.lock:
            hit = self.cache.get((seed, scale, variant))
            if hit is None:
                ops = crashplan.make_plan(seed, scale, variant)
                text = (f"# crashplan 1 seed={seed} scale={scale}" + (f" variant={variant}" if variant else "")
                        + "\n" + "".join(o.line() + "\n" for o in ops))
                hit = (text, crashplan.Model(seed, ops))
                self.cache[(seed, scale, variant)] = hit
            return hit


def _open_by_anyone(paths: set[str]) -> set[str]:
    """The paths among `paths` some live process has open or mapped."""
    busy: set[str] = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    t = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if t in paths:
                    busy.add(t)
            with open(f"/proc/{pid}/maps") as fh:
                for line in fh:
                    t = line.rstrip("\n").split(None, 5)[-1]
                    if t in paths:
                        busy.add(t)
        except OSError:
            continue
    return busy


def shm_segments() -> set[str]:
    try:
        return {f"/dev/shm/{n}" for n in os.listdir("/dev/shm") if n.startswith("mpich_shm_")}
    except OSError:
        return set()


def cleanup_shm(before: set[str]) -> int:
    """Remove MPICH shared-memory segments (about 2 MB each) that appeared
    since `before` and that no live process holds or maps: killed ranks
    cannot unlink them.  A segment another job has just created but not yet
    mapped is spared by the age limit."""
    new = {p for p in shm_segments() - before if os.path.exists(p) and time.time() - os.path.getmtime(p) > 0.2}
    if not new:
        return 0
    gone = 0
    for p in new - _open_by_anyone(new):
        try:
            os.unlink(p)
            gone += 1
        except OSError:
            pass
    return gone


class Runner:
    def __init__(self, tools: Tools, workroot: Path, plans: Plans, opts: argparse.Namespace) -> None:
        self.tools = tools
        self.workroot = workroot
        self.plans = plans
        self.opts = opts
        self.seq = 0
        self.lock = threading.Lock()
        self.reader = ColfileReader(tools) if opts.colfile_read else None

    def _trial_dir(self) -> Path:
        with self.lock:
            self.seq += 1
            n = self.seq
        d = self.workroot / f"t{n:05d}"
        d.mkdir(parents=True)
        return d

    def command(self, spec: Spec, tdir: Path, start: int | None = None, shim: bool = True) -> list[str]:
        t = self.tools
        args = [str(tdir / "F"), str(tdir / "plan.txt"), str(tdir / "log"), "--pids", str(tdir / "pids"),
                "--on-error", spec.onerror]
        if start is not None:
            args += ["--start", str(start)]
        if spec.writer in ("c", "csan"):
            exe = t.cwriter_mpi if spec.np > 1 else (t.san_cwriter if spec.writer == "csan" else t.cwriter)
            if exe is None:
                raise RuntimeError("the C writer is not built")
            cmd = [str(exe)] + args
            flags = ((t.nodurable_flag or 0) if spec.nodurable else 0) | \
                (fsmodel.OPEN_NOLOCKING if t.fs.locking_off else 0)
            if flags:
                cmd += ["--open-flags", hex(flags)]
        else:
            cmd = [t.python, str(HERE / "writer.py")] + args + (["--mpi"] if spec.np > 1 else [])
            if spec.nodurable:
                cmd.append("--nodurable")
            if t.fs.locking_off:
                cmd.append("--no-locking")
        if spec.np > 1:
            if t.mpiexec is None:
                raise RuntimeError("no mpiexec")
            pre = ["-genv", "LD_PRELOAD", t.fs.preload(t.shim)] if shim and t.shim else []
            cmd = [str(t.mpiexec), "-n", str(spec.np)] + pre + cmd
        return cmd

    def environment(self, spec: Spec, tdir: Path, shim: bool = True) -> dict[str, str]:
        env = dict(self.tools.env)
        if not shim or self.tools.shim is None:
            return env
        if spec.writer == "csan":
            env["LD_PRELOAD"] = self.tools.fs.preload(self.tools.san_shim)
            env["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=1"
            env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
        elif spec.np == 1:
            env["LD_PRELOAD"] = self.tools.fs.preload(self.tools.shim)
        env["CF_FAULT_SCOPE"] = str(tdir / "F")
        env["CF_FAULT_VERBOSE"] = "1"
        env["CF_FAULT_RANK"] = str(spec.rank)
        if spec.action == "count":
            (tdir / "reports").mkdir(exist_ok=True)
            env["CF_FAULT_MODE"] = "count"
            env["CF_FAULT_REPORT"] = str(tdir / "reports" / "r.%p")
        elif spec.action in ("kill", "powerloss", "eio", "enospc", "short", "enomem"):
            env["CF_FAULT_AT"] = str(spec.at)
            env["CF_FAULT_ACTION"] = spec.action
            if spec.sticky:
                env["CF_FAULT_STICKY"] = "1"
        if spec.action == "powerloss":
            (tdir / "journal").mkdir(exist_ok=True)
            env["CF_FAULT_JOURNAL"] = str(tdir / "journal")
            if spec.keep:
                env["CF_FAULT_KEEP"] = str(spec.keep)
                env["CF_FAULT_SEED"] = str(spec.seed * 1000 + spec.at)
        if spec.writer == "c":
            # glibc fills freed memory: use after free shows up as garbage
            env["GLIBC_TUNABLES"] = "glibc.malloc.perturb=165"
        return env

    def execute(self, spec: Spec, tdir: Path, timeout: float, start: int | None = None,
                shim: bool = True, kill_after_ready: float | None = None,
                kill_rank: int = 0) -> tuple[int | None, str, float | None, float, bool]:
        """Run the writer; returns (rc, stderr, t_ready, t_total, timed_out)."""
        cmd = self.command(spec, tdir, start, shim)
        env = self.environment(spec, tdir, shim)
        shm_before = set()
        if spec.np > 1:
            try:
                shm_before = {f"/dev/shm/{n}" for n in os.listdir("/dev/shm") if n.startswith("mpich_shm_")}
            except OSError:
                pass
        errpath = tdir / ("stderr" if start is None else "stderr.resume")
        log = tdir / "log"
        t0 = time.monotonic()
        t_ready = None
        timed_out = False
        with open(errpath, "wb") as errfh:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=errfh,
                                    start_new_session=True, cwd=str(tdir))
            deadline = t0 + timeout
            sent = False
            while True:
                rc = proc.poll()
                now = time.monotonic()
                if t_ready is None and log.exists():
                    try:
                        if b"ready" in log.read_bytes()[:4096]:
                            t_ready = now - t0
                    except OSError:
                        pass
                if rc is not None:
                    break
                if kill_after_ready is not None and not sent and t_ready is not None \
                        and now - t0 >= t_ready + kill_after_ready:
                    pidf = tdir / "pids" / str(kill_rank)
                    try:
                        os.kill(int(pidf.read_text().split()[0]), signal.SIGKILL)
                        sent = True
                    except (OSError, ValueError):
                        pass
                if now > deadline:
                    timed_out = True
                    break
                time.sleep(0.002 if kill_after_ready is not None else 0.01)
            t_total = time.monotonic() - t0
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            rc = proc.wait()
        if spec.np > 1:
            cleanup_shm(shm_before)
        stderr = errpath.read_text(errors="replace")
        return (None if timed_out else rc), stderr, t_ready, t_total, timed_out

    def run(self, spec: Spec, keep: bool = False, timeout: float | None = None) -> Result:
        res = Result(spec)
        tdir = self._trial_dir()
        res.dir = str(tdir)
        text, model = self.plans.get(spec.seed, spec.scale, spec.variant)
        (tdir / "plan.txt").write_text(text)
        (tdir / "pids").mkdir()
        (tdir / "F").mkdir()
        t0 = time.monotonic()
        try:
            self._run(spec, tdir, model, res, timeout or self.opts.timeout)
        except Exception as exc:  # a harness failure is reported, not swallowed
            import traceback
            res.violations.append(f"[harness] {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        res.elapsed = time.monotonic() - t0
        if not keep and not res.violations:
            shutil.rmtree(tdir, ignore_errors=True)
        return res

    def _run(self, spec: Spec, tdir: Path, model: crashplan.Model, res: Result, timeout: float) -> None:
        kill_delay = spec.delay if spec.action == "killtime" else None
        rc, stderr, t_ready, t_total, hung = self.execute(
            spec, tdir, timeout, shim=spec.action != "killtime",
            kill_after_ready=kill_delay, kill_rank=spec.rank)
        res.rc, res.stderr, res.t_ready, res.t_total = rc, stderr, t_ready, t_total
        log = checker.parse_log(tdir / "log")
        shim_said = re.findall(r"faultshim\[\d+\]: (.*)", stderr)
        res.fired = any(x.startswith(("EIO", "ENOSPC", "short", "NULL", "SIGKILL", "power loss"))
                        for x in shim_said)
        for x in shim_said:
            m = re.search(r"\((\w+) (.*)\)\s*$", x)
            if m:
                res.site = f"{m.group(1)} {normalise_path(m.group(2))}"
            elif x.startswith("NULL"):
                m = re.search(r"(lib\w+[^ ]*\+0x[0-9a-f]+)", x)
                res.site = f"alloc {m.group(1) if m else ''}"
        pending = log.in_flight + sorted(log.failed)
        if pending:
            op = model.ops[pending[-1]]
            res.inflight = f"{op.kind} {op.target}"
        if hung:
            res.violations.append(f"[hang] the writer did not finish in {timeout:.0f} s "
                                  f"(log: {(tdir / 'log').read_text()[-300:] if (tdir / 'log').exists() else ''!r})")
        if SANITIZER.search(stderr):
            res.violations.append("[sanitizer] " + SANITIZER.search(stderr).group(0) + ": "
                                  + stderr[max(0, SANITIZER.search(stderr).start() - 200):][:1500])
        killed_sig = rc is not None and (rc == -signal.SIGKILL or (spec.np > 1 and rc in (9, 137, 143)))
        a = spec.action
        if not hung:
            if a in ("none", "count"):
                if rc != 0 or not log.end:
                    res.violations.append(f"[crash] clean run ended with status {rc}: {stderr[-1500:]}")
            elif a == "killtime":
                res.killed = not log.end and rc != 0
                # A rank killed inside MPI_Finalize (every operation done,
                # "end" logged) can break hydra's PMI barrier: mpiexec then
                # exits 255 with only its own complaints on stderr.
                in_finalize = (spec.np > 1 and rc == 255 and log.end and all(
                    ln.startswith(("[proxy:", "[mpiexec@")) for ln in stderr.splitlines() if ln.strip()))
                # The surviving rank may learn of the death first, inside a
                # collective, and abort through MPI's fatal error handler
                # (MPICH: "Abort(17) on node 0 (rank 0 in comm 0): Fatal
                # error in internal_Gatherv") before mpiexec kills it.
                peer_died = (spec.np > 1 and not log.end and MPI_FATAL.search(stderr) is not None)
                if rc not in (0, -signal.SIGKILL) and not killed_sig and not in_finalize \
                        and not peer_died:
                    res.violations.append(f"[crash] status {rc} after a SIGKILL of rank {spec.rank}: "
                                          f"{stderr[-1500:]}")
            elif a in ("kill", "powerloss"):
                res.killed = res.fired and (killed_sig or rc != 0)
                if not res.fired and rc != 0:
                    res.violations.append(f"[crash] status {rc} (no fault fired): {stderr[-1500:]}")
                if a == "powerloss" and res.fired:
                    pl = tdir / "journal" / "powerloss.txt"
                    res.notes.append(pl.read_text().strip() if pl.exists() else "no powerloss.txt")
            else:
                # Under mpiexec the ranks exit 3 one after the other, and one
                # that has not exited yet may be killed by the teardown the
                # first exit starts: the job then ends with that signal's
                # status, the failure logged all the same.
                torn_down = spec.np > 1 and killed_sig
                res.clean_error = (rc == 3 or torn_down) and bool(log.failed or log.open_failed)
                if rc != 0 and not res.clean_error:
                    res.violations.append(f"[crash] {a} at op {spec.at}: the writer ended with status {rc} "
                                          f"instead of a clean error: {stderr[-2000:]}")
                if res.fired and rc == 0 and a in ("eio", "enospc"):
                    res.notes.append(f"tolerated {a} at {res.site}")
                    if spec.cache:
                        # the catalog is a cache that readers check against
                        # the files (docs/format.md 8.5): its update may fail
                        # without failing the close
                        res.notes.append("the File catalog's update: a cache, not committed data")
                    elif res.site.split(" ")[0] in SWALLOW_CLASSES:
                        res.violations.append(
                            f"[swallowed] {a.upper()} from {res.site} was ignored: every operation "
                            f"reported success, so data or a name the writer counts as committed may "
                            f"not be durable")
                if a == "short" and rc == 3:
                    res.notes.append("a short write made the operation fail (colfile could have retried)")
        rep = checker.check(tdir / "F", model, log, use_bigfile=self.opts.bigfile)
        if self.tools.fs.no_exchange and rep.violations:
            rep = self.restore_moved_aside(tdir, model, log, rep, res, timeout)
        res.violations += rep.violations
        if not rep.violations and self.reader is not None:
            res.violations += self.reader.check(tdir / "F", model, rep)
        if a == "count" and not res.violations:
            res.counts = parse_reports(tdir / "reports")
        if spec.repair and not res.violations and (res.killed or res.clean_error):
            self.repair_after(spec, tdir, model, log, rep, res, timeout)
        if spec.resume and not res.violations and (res.killed or res.clean_error):
            self.resume(spec, tdir, model, log, rep, res, timeout)

    def restore_moved_aside(self, tdir: Path, model: crashplan.Model, log: checker.LogState,
                            rep: checker.Report, res: Result, timeout: float) -> checker.Report:
        """Without RENAME_EXCHANGE a re-create killed between its two
        renames leaves the column absent and its old version moved aside:
        what docs/reliability.md promises there is that `colfile repair`
        brings it back.  Only `lost` columns with a moved-aside version are
        forgiven, and only when a repair then leaves the File passing."""
        lost = [v for v in rep.violations if v.startswith("[lost] ")]
        if len(lost) != len(rep.violations):
            return rep
        ents = [v[len("[lost] "):].split(":", 1)[0] for v in lost]
        if not all(fsmodel.moved_aside(tdir / "F", e) for e in ents):
            return rep
        p = subprocess.run([self.tools.python, "-c", REPAIR_SRC, str(tdir / "F")] + self.tools.fs.repair_args(),
                           env=self.tools.env, capture_output=True, text=True, timeout=timeout, cwd=str(tdir))
        (tdir / "repair.noexchange.out").write_text(p.stdout + p.stderr)
        after = checker.check(tdir / "F", model, log, use_bigfile=self.opts.bigfile)
        if p.returncode not in (0, 1) or "Traceback" in p.stderr:
            after.violations.append(f"[repair] colfile repair of a column moved aside (no RENAME_EXCHANGE) "
                                    f"ended with status {p.returncode}: {(p.stdout + p.stderr)[-800:]}")
        res.notes.append(f"no RENAME_EXCHANGE: {', '.join(ents)} absent after the crash, restored by repair"
                         if not after.violations else f"no RENAME_EXCHANGE: repair did not restore {ents}")
        return after

    def repair_after(self, spec: Spec, tdir: Path, model: crashplan.Model, log: checker.LogState,
                     rep: checker.Report, res: Result, timeout: float) -> None:
        """`colfile repair` on the crashed File, SIGKILLed at its N-th I/O
        operation (if it gets that far): it must leave nothing worse than
        before (every column as it was, or a torn one repaired, or a column
        a crash left absent restored to a version the log allows), and a
        second repair must finish the job (status 0, no torn mark, no
        leftover but the File catalog)."""
        t = self.tools
        before = dict(rep.matched)
        for attempt, killed in (("killed", True), ("again", False)):
            env = dict(t.env)
            if killed and t.shim is not None:
                env.update({"LD_PRELOAD": t.fs.preload(t.shim), "CF_FAULT_SCOPE": str(tdir / "F"),
                            "CF_FAULT_VERBOSE": "1", "CF_FAULT_AT": str(spec.repair), "CF_FAULT_ACTION": "kill"})
            try:
                p = subprocess.run([t.python, "-c", REPAIR_SRC, str(tdir / "F")] + t.fs.repair_args(),
                                   env=env, capture_output=True,
                                   text=True, timeout=timeout, cwd=str(tdir))
            except subprocess.TimeoutExpired:
                res.violations.append(f"[repair] colfile repair ({attempt}) hung")
                return
            (tdir / f"repair.{attempt}.out").write_text(p.stdout + p.stderr)
            fired = "SIGKILL" in p.stderr
            if killed:
                res.notes.append(f"repair killed at its operation {spec.repair}" if fired
                                 else f"repair finished before its operation {spec.repair} (status {p.returncode})")
            elif p.returncode != 0:
                res.violations.append(f"[repair] a second colfile repair after one killed at its operation "
                                      f"{spec.repair} exited {p.returncode}: {(p.stdout + p.stderr)[-800:]}")
            if not fired and p.returncode not in (0, 1) or "Traceback" in p.stderr:
                res.violations.append(f"[repair] colfile repair ({attempt}) ended with status {p.returncode}: "
                                      f"{(p.stdout + p.stderr)[-800:]}")
            after = checker.check(tdir / "F", model, log, use_bigfile=False)
            for v in after.violations:
                ent = v.split("] ", 1)[-1].split(":", 1)[0]
                if before.get(ent) in ("torn", "repaired") and torn_repaired(tdir / "F", model, log, ent):
                    after.matched[ent] = "repaired"
                    continue
                same = resummed(tdir / "F", model, log, ent)
                if same is not None:
                    after.matched[ent] = f"v{same}"
                    continue
                res.violations.append(v.replace("] ", f"] after a repair ({attempt}, killed at its operation "
                                                f"{spec.repair}): ", 1))
            for ent, state in before.items():
                now = after.matched.get(ent)
                # torn: repaired, or any version the log allows (the
                # update may not have written a row yet); absent: a version
                # moved aside by a commit may come back
                if now is None or now == state or state in ("torn", "repaired", "absent") \
                        or same_rows(model, ent, state, now):
                    continue
                res.violations.append(f"[repair] {ent} was {state} before a repair ({attempt}, killed at its "
                                      f"operation {spec.repair}) and is {now} after it")
            if not killed:
                left = [h for h in after.hidden if not h.startswith(".colfile-catalog")]
                torn = [e for e, st in after.matched.items() if st == "torn"]
                if left or torn:
                    res.violations.append(f"[repair] a second repair left " + (f"leftovers {left[:6]}" if left else "")
                                          + (f" torn columns {torn}" if torn else ""))
            before = {k: v for k, v in after.matched.items()}

    def resume(self, spec: Spec, tdir: Path, model: crashplan.Model, log: checker.LogState,
               rep: checker.Report, res: Result, timeout: float) -> None:
        """Finish the plan with a fresh serial writer on the crashed File:
        leftovers of the crash (locks, staging directories, temporaries)
        must not stop it, and the end result must be the plan's."""
        pending = sorted(set(log.in_flight) | set(log.failed))
        notes = []
        for idx in pending:
            entity, before, after = model.op_versions[idx]
            state = rep.matched.get(entity)
            if state == "torn":
                res.notes.append(f"resume skipped: {entity} is torn (needs repair)")
                return
            kind = model.ops[idx].kind
            if kind in ("truncate", "repair"):
                notes.append(f"assume-undone {idx}")   # done again: both may be repeated
            elif kind == "rm" and state == "absent":
                notes.append(f"assume-done {idx}")
            elif state == f"v{after}" and after != before:
                notes.append(f"assume-done {idx}")
            else:
                notes.append(f"assume-undone {idx}")
        with open(tdir / "log", "a") as fh:
            for n in notes:
                fh.write(n + "\n")
        log2 = checker.parse_log(tdir / "log")
        start = max(log2.done) + 1 if log2.done else 0
        rspec = dataclasses.replace(spec, np=1, writer="c" if self.tools.cwriter else spec.writer,
                                    action="none", nodurable=0)
        rc, stderr, _, _, hung = self.execute(rspec, tdir, timeout, start=start, shim=False)
        log3 = checker.parse_log(tdir / "log")
        if hung or rc != 0 or not log3.end:
            res.violations.append(f"[resume] a new writer could not finish the plan after the crash "
                                  f"(status {rc}): {log3.failed or ''} {stderr[-1500:]}")
            return
        rep2 = checker.check(tdir / "F", model, log3, use_bigfile=False)
        res.violations += [v.replace("] ", "] after resume: ", 1) for v in rep2.violations]


def torn_repaired(root: Path, model: crashplan.Model, log: checker.LogState, entity: str) -> bool:
    """Whether `entity`, torn by an interrupted in-place update, is now a
    correct repair of it: no mark, the layout of the update's versions,
    every row the old or the new one, and header sums, CRC32C and
    statistics computed from the rows as they are."""
    cands, torn_ok, _ = checker.candidates(model, log)
    vs = [v for v in cands.get(entity, []) if v.exists and v.token]
    path = root / entity
    if not torn_ok.get(entity) or not vs or (path / checker.TORN_NAME).exists():
        return False
    try:
        htext = (path / "header").read_bytes()
        h = checker.parse_header(htext)
    except (OSError, ValueError, IndexError):
        return False
    v0 = vs[0]
    if (h["dtype"], h["nmemb"], h["rows"]) != (v0.token, v0.nmemb, v0.blob_rows):
        return False
    rb = v0.rowbytes
    disk = bytearray()
    for i, rows in enumerate(v0.blob_rows):
        try:
            with open(path / checker.blob_name(i), "rb") as fh:
                disk += fh.read(rows * rb)
        except OSError:
            return False
    if len(disk) != v0.size * rb:
        return False
    for r in range(v0.size):
        row = disk[r * rb:(r + 1) * rb]
        if not any(v.blob_rows == v0.blob_rows and v.data()[r * rb:(r + 1) * rb] == row for v in vs):
            return False
    fixed = crashplan.Version(entity, v0.number, exists=True, token=v0.token, nmemb=v0.nmemb,
                              blob_rows=v0.blob_rows, segments=v0.segments, attrs=v0.attrs)
    fixed._data = bytes(disk)
    fixed.sums = [crashplan._bytesum(fixed.blob_bytes(i)) & 0xFFFFFFFF for i in range(len(v0.blob_rows))]
    _, probs = checker.column_problems(path, fixed, htext)
    return not probs


def resummed(root: Path, model: crashplan.Model, log: checker.LogState, entity: str) -> int | None:
    """A repair recomputes the byte sums an in-place update left as
    bigfile's running sums: the number of the allowed version of `entity`
    whose rows the column holds with sums recomputed from them (and
    everything else right), or None."""
    cands, _, _ = checker.candidates(model, log)
    path = root / entity
    try:
        htext = (path / "header").read_bytes()
    except OSError:
        return None
    for v in cands.get(entity, []):
        if not v.exists or not v.token:
            continue
        fixed = crashplan.Version(entity, v.number, exists=True, token=v.token, nmemb=v.nmemb,
                                  blob_rows=v.blob_rows, segments=v.segments, attrs=v.attrs)
        fixed.sums = [crashplan._bytesum(v.blob_bytes(i)) & 0xFFFFFFFF for i in range(len(v.blob_rows))]
        layout, probs = checker.column_problems(path, fixed, htext)
        if layout and not probs:
            return v.number
    return None


def same_rows(model: crashplan.Model, entity: str, a: str, b: str) -> bool:
    """Whether states "vN" and "vM" of `entity` differ in their sums only."""
    if not (a.startswith("v") and b.startswith("v")) or entity not in model.versions:
        return False
    va, vb = model.versions[entity][int(a[1:])], model.versions[entity][int(b[1:])]
    return (va.exists, va.token, va.nmemb, va.blob_rows, va.attrs) == \
        (vb.exists, vb.token, vb.nmemb, vb.blob_rows, vb.attrs) and (not va.token or va.data() == vb.data())


def normalise_path(p: str) -> str:
    """Paths of a site with the run-specific parts (pids, random hex) as *."""
    p = re.sub(r"\.tmp\.[0-9a-fA-F.]+", ".tmp.*", p)
    p = re.sub(r"(\.colfile-[a-z]+\.[^/ ]*?)\.\d+\.[0-9a-fA-F]+", r"\1.*", p)
    return p


def site_kind(site: str) -> str:
    """A site without column names: "write <blob>", "rename .header.tmp.* -> header"."""
    cls, _, path = site.partition(" ")
    def leaf(p: str) -> str:
        name = p.rstrip("/").rsplit("/", 1)[-1]
        if re.fullmatch(r"[0-9A-F]{6}", name):
            return "<blob>"
        if name.startswith(".colfile-"):
            return re.sub(r"^(\.colfile-[a-z]+)\..*", r"\1.*", name)
        if "/" not in p.strip() and name and name != ".":
            return "<column or group dir>" if cls in ("mkdir", "rmdir", "open") else name
        return name
    if " -> " in path:
        a, b = path.split(" -> ", 1)
        return f"{cls} {leaf(a)} -> {leaf(b)}"
    return f"{cls} {leaf(path)}" if path else cls


def catalog_ops(io: list[tuple[int, str, str]]) -> set[int]:
    """The operations of a count run that update the File catalog: those on
    its files, and the sync of the File directory that makes a new catalog
    directory durable (the three operations after its mkdir)."""
    out: set[int] = set()
    after_mkdir = 0
    for n, cls, path in io:
        if path.startswith(CATALOG_DIR):
            out.add(n)
            after_mkdir = 3 if cls == "mkdir" else 0
        elif after_mkdir and path == ".":
            out.add(n)
            after_mkdir -= 1
        else:
            after_mkdir = 0
    return out


def parse_reports(d: Path) -> dict[int, dict[str, Any]]:
    """Per rank: the I/O operations [(n, class, path)] and allocations [n]."""
    out: dict[int, dict[str, Any]] = {}
    for p in sorted(d.glob("r.*")):
        lines = p.read_text(errors="replace").splitlines()
        if not lines:
            continue
        head = lines[0].split()
        rank = int(head[3]) if len(head) >= 4 else -1
        io, allocs = [], 0
        for ln in lines[1:]:
            parts = ln.split(" ", 3)
            if ln.startswith("a"):
                allocs += 1
            elif len(parts) >= 3 and parts[0].isdigit():
                io.append((int(parts[0]), parts[1], parts[2]))
        if not io and not allocs:
            continue  # a helper process (mpiexec, a child) that did nothing
        out[max(rank, 0)] = {"io": io, "allocs": allocs}
    return out


# ---------------------------------------------------------------------------
# colfile's own readers (in a helper process: a crash there is a finding,
# not the end of the run)

READER_SRC = r'''
import hashlib, json, os, sys
if os.environ.get("COLFILE_LIBRARY"):
    import ctypes.util  # colfile._ffi would run ldconfig and gcc for nothing
    ctypes.util.find_library = lambda name: None
import colfile
Torn = getattr(colfile, "TornError", None) or getattr(getattr(colfile, "errors", None), "TornError", None)
for line in sys.stdin:
    req = json.loads(line)
    probs = []
    try:
        f = colfile.File(req["root"], "r")
    except Exception as exc:
        print(json.dumps([f"colfile cannot open the File: {type(exc).__name__}: {exc}"]), flush=True)
        continue
    try:
        listed = sorted(f.columns, key=lambda s: s.encode())
        if listed != req["listing"]:
            probs.append(f"colfile lists {listed}, the format listing is {req['listing']}")
        for ent in req["entities"]:
            name, state = ent["name"], ent["state"]
            try:
                if state == "block":
                    g = f if name == "." else f[name[:-1]]
                    got = {k: g.attrs.raw(k)[2].hex() for k in g.attrs}
                    if got != ent["attrs"]:
                        probs.append(f"{name}: colfile reads attributes {sorted(got)}, expected {sorted(ent['attrs'])}")
                    continue
                if state == "torn":
                    # opening or reading must raise colfile.TornError
                    try:
                        col = f[name]
                        col[:]
                        probs.append(f"{name}: marked torn, yet colfile reads it without an error")
                    except Exception as exc:
                        if Torn is None:
                            probs.append(f"torn-error: {name}: colfile has no TornError; reading the torn "
                                         f"column raised {type(exc).__name__}: {str(exc)[:160]}")
                        elif not isinstance(exc, Torn):
                            probs.append(f"torn-error: {name}: reading the torn column raised "
                                         f"{type(exc).__name__}, not TornError: {str(exc)[:160]}")
                    continue
                col = f[name]
                data = col.read() if col.size else None
                raw = b"" if data is None else data.tobytes()
                if hashlib.sha256(raw).hexdigest() != ent["sha"]:
                    probs.append(f"{name}: colfile reads other data than {ent['version']}")
                got = {k: col.attrs.raw(k)[2].hex() for k in col.attrs}
                if got != ent["attrs"]:
                    probs.append(f"{name}: colfile reads attributes {sorted(got)}, expected {sorted(ent['attrs'])}")
            except Exception as exc:
                if Torn is not None and state == "torn" and isinstance(exc, Torn):
                    continue
                probs.append(f"{name}: colfile cannot read {ent.get('version', state)}: {type(exc).__name__}: {exc}")
    finally:
        f.close()
    print(json.dumps(probs), flush=True)
'''


#: `colfile repair FILE [options]` in a process of its own
REPAIR_SRC = ("import os, sys, ctypes.util\n"
              "os.environ.get('COLFILE_LIBRARY') and setattr(ctypes.util, 'find_library', lambda n: None)\n"
              "from colfile.cli import main\n"
              "sys.exit(main(['repair'] + sys.argv[2:] + [sys.argv[1]]))\n")


class ColfileReader:
    def __init__(self, tools: Tools) -> None:
        self.tools = tools
        self.proc: subprocess.Popen[str] | None = None
        self.lock = threading.Lock()

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([self.tools.python, "-c", READER_SRC], env=self.tools.env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
        return self.proc

    def check(self, root: Path, model: crashplan.Model, rep: checker.Report) -> list[str]:
        ents = []
        for name, state in rep.matched.items():
            if state == "absent":
                continue
            if model.is_block(name):
                v = model.versions[name][int(state[1:])]
                if not (root if name == "." else root / name[:-2]).is_dir():
                    continue
                ents.append({"name": name, "state": "block", "attrs": {k: x[2].hex() for k, x in v.attrs.items()}})
            elif state == "torn":
                ents.append({"name": name, "state": "torn"})
            else:
                v = model.versions[name][int(state[1:])]
                ents.append({"name": name, "state": "present", "version": checker.describe_version(v),
                             "sha": hashlib.sha256(v.data()).hexdigest(),
                             "attrs": {k: x[2].hex() for k, x in v.attrs.items()}})
        req = {"root": str(root), "listing": checker.list_columns(root), "entities": ents}
        with self.lock:
            proc = self._start()
            try:
                assert proc.stdin and proc.stdout
                proc.stdin.write(json.dumps(req) + "\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
            except (BrokenPipeError, OSError):
                line = ""
            if not line:
                err = proc.stderr.read()[-1500:] if proc.stderr else ""
                self.proc = None
                return [f"[colfile-read] colfile's reader died on this File: {err}"]
        out = []
        for p in json.loads(line):
            cat, _, rest = p.partition(": ")
            out.append(f"[{cat}] {rest}" if cat in ("torn-error",) else f"[colfile-read] {p}")
        if any(s == "torn" for s in rep.matched.values()):
            out += self.check_cli(root, [n for n, s in rep.matched.items() if s == "torn"])
        return out

    def check_cli(self, root: Path, torn: list[str]) -> list[str]:
        """`colfile check` must report torn columns and exit non-zero."""
        code = ("import os, sys, ctypes.util\n"
                "os.environ.get('COLFILE_LIBRARY') and setattr(ctypes.util, 'find_library', lambda n: None)\n"
                "from colfile.cli import main\n"
                "sys.exit(main(['check', sys.argv[1]]))\n")
        try:
            p = subprocess.run([self.tools.python, "-c", code, str(root)], env=self.tools.env,
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return ["[torn-check] `colfile check` hung on a File with a torn column"]
        out = []
        text = p.stdout + p.stderr
        if p.returncode == 0:
            out.append(f"[torn-check] `colfile check` exits 0 on a File whose column(s) {torn} are torn")
        for name in torn:
            if name not in text or "torn" not in text.lower():
                out.append(f"[torn-check] `colfile check` does not report {name} as torn: {text[-300:]!r}")
        if p.returncode < 0 or "Traceback" in text:
            out.append(f"[torn-check] `colfile check` crashed: {text[-500:]}")
        return out

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


# ---------------------------------------------------------------------------
# campaigns

def low_discrepancy(n: int, offset: int) -> list[int]:
    """0..n-1 in bit-reversed (van der Corput) order, rotated by offset, so
    that any prefix spreads over the whole range."""
    if n <= 0:
        return []
    bits = max(1, (n - 1).bit_length())
    order = []
    for i in range(1 << bits):
        r = int(format(i, f"0{bits}b")[::-1], 2)
        if r < n:
            order.append(r)
    off = offset % n
    return [(x + off) % n for x in order]


@dataclass
class Calib:
    counts: dict[int, dict[str, Any]]
    t_ready: float
    t_total: float


class Combo:
    """One stream of trials (a mode, a writer, serial or MPI)."""

    def __init__(self, driver: Driver, mode: str, writer: str, np_list: list[int], weight: float,
                 variant: str = "") -> None:
        self.driver = driver
        self.variant = variant
        self.mode = mode
        self.writer = writer
        self.np_list = np_list
        self.weight = weight
        self.spent = 0.0
        self.trials = 0
        self.exhausted = False
        self.rng = random.Random(zlib.crc32(repr((driver.seed, mode, writer, np_list)
                                                 + ((variant,) if variant else ())).encode()))
        self.sweep: Iterator[Spec] | None = None
        self.seed_k = 0
        self.busy = False
        self.sites_total = 0
        self.sites_done = 0

    @property
    def name(self) -> str:
        np_ = self.np_list[0] if len(self.np_list) == 1 else "/".join(map(str, self.np_list))
        return f"{self.mode}:{self.writer}:np{np_}" + (f"+{self.variant}" if self.variant else "")

    def _seed(self) -> int:
        return self.driver.seed + self.seed_k

    def next_spec(self) -> Spec | None:
        d = self.driver
        np_ = self.rng.choice(self.np_list)
        if self.mode in ("kill", "rankkill"):
            # random-time kills spread over a few plans (fewer for the writers
            # that take a second to start: each plan needs a calibration run)
            seed = self.driver.seed + self.rng.randrange(0, 4 if self.writer != "py" and np_ == 1 else 2)
            cal = d.calibration(self.writer, np_, seed, self.variant)
            if cal is None:
                return None
            span = max(0.005, cal.t_total - cal.t_ready)
            spec = Spec(writer=self.writer, np=np_, seed=seed, scale=d.scale, action="killtime",
                        delay=round(self.rng.uniform(0, span), 4),
                        rank=self.rng.randrange(np_) if np_ > 1 else 0,
                        resume=int(self.rng.random() < d.resume_p), variant=self.variant)
            self._maybe_repair(spec)
            if d.tools.nodurable_flag and self.writer == "c" and self.rng.random() < 0.2:
                spec.nodurable = 1
            elif d.tools.py_durable and self.writer == "py" and self.rng.random() < 0.2:
                spec.nodurable = 1
            return spec
        while True:
            if self.sweep is None:
                cal = d.calibration(self.writer, np_, self._seed(), self.variant)
                if cal is None:
                    return None
                self.sweep = self._make_sweep(cal, np_, self._seed())
            spec = next(self.sweep, None)
            if spec is not None:
                self.sites_done += 1
                spec.variant = self.variant
                if spec.action in ("kill", "powerloss"):
                    self._maybe_repair(spec)
                return spec
            # this seed is swept completely: the next plan
            self.seed_k += 1
            self.sweep = None
            if self.seed_k >= d.max_seeds:
                self.exhausted = True
                return None

    def _maybe_repair(self, spec: Spec) -> None:
        """Destroy plans: 40 % of crashed trials go on with a `colfile
        repair` killed at a random one of its first 150 I/O operations
        (instead of a resumed writer)."""
        if self.variant == "destroy" and self.rng.random() < 0.4:
            spec.repair = self.rng.randrange(1, 150)
            spec.resume = 0

    def _make_sweep(self, cal: Calib, np_: int, seed: int) -> Iterator[Spec]:
        d = self.driver
        lists: list[list[Spec]] = []
        for rank in sorted(cal.counts):
            if rank >= np_:
                continue
            io = cal.counts[rank]["io"]
            allocs = cal.counts[rank]["allocs"]
            if self.mode in ("inject", "powerloss"):
                action = "kill" if self.mode == "inject" else "powerloss"
                order = low_discrepancy(len(io), seed)
                specs = []
                for i in order:
                    s = Spec(writer=self.writer, np=np_, seed=seed, scale=d.scale, action=action,
                             at=io[i][0], rank=rank, resume=int(self.rng.random() < d.resume_p))
                    if action == "powerloss" and self.rng.random() < 0.3:
                        s.keep = 0.5
                    specs.append(s)
                lists.append(specs)
            else:
                cache = catalog_ops(io)
                for action in IO_ACTIONS:
                    idx = [i for i in range(len(io)) if io[i][1] in FAULT_CLASSES[action]]
                    order = low_discrepancy(len(idx), seed)
                    lists.append([Spec(writer=self.writer, np=np_, seed=seed, scale=d.scale, action=action,
                                       at=io[idx[i]][0], rank=rank, cache=int(io[idx[i]][0] in cache),
                                       onerror="abort" if self.rng.random() < 0.25 else "close",
                                       sticky=int(action != "short" and self.rng.random() < 0.15),
                                       resume=int(self.rng.random() < d.resume_p))
                                  for i in order])
                if allocs:
                    lists.append([Spec(writer=self.writer, np=np_, seed=seed, scale=d.scale, action="enomem",
                                       at=i + 1, rank=rank, resume=int(self.rng.random() < d.resume_p))
                                  for i in low_discrepancy(allocs, seed)])
        self.sites_total += sum(len(x) for x in lists)
        # round robin over actions and ranks
        its = [iter(x) for x in lists]
        def gen() -> Iterator[Spec]:
            while its:
                for it in list(its):
                    s = next(it, None)
                    if s is None:
                        its.remove(it)
                    else:
                        yield s
        return gen()


class Driver:
    def __init__(self, tools: Tools, opts: argparse.Namespace, workroot: Path) -> None:
        self.tools = tools
        self.opts = opts
        self.seed = opts.seed
        self.scale = opts.scale
        self.max_seeds = opts.max_seeds
        self.resume_p = opts.resume
        self.plans = Plans()
        self.runner = Runner(tools, workroot, self.plans, opts)
        self.calib: dict[tuple[str, int, int, str], Calib | None] = {}
        self.calib_lock = threading.Lock()
        self.calib_events: dict[tuple[str, int, int, str], threading.Event] = {}
        self.results: list[Result] = []
        self.results_lock = threading.Lock()
        self.kept = 0

    def calibration(self, writer: str, np_: int, seed: int, variant: str = "") -> Calib | None:
        """A clean run in count mode (its File is checked like any other)."""
        key = (writer, np_, seed, variant)
        with self.calib_lock:
            if key in self.calib:
                return self.calib[key]
            ev = self.calib_events.get(key)
            owner = ev is None
            if owner:
                ev = self.calib_events[key] = threading.Event()
        if not owner:
            assert ev is not None
            ev.wait()
            return self.calib.get(key)
        spec = Spec(writer=writer, np=np_, seed=seed, scale=self.scale, action="count", variant=variant)
        res = self.runner.run(spec)
        self.record(res)
        cal = None
        if not res.violations and res.counts:
            cal = Calib(res.counts, res.t_ready or 0.0, res.t_total)
        with self.calib_lock:
            self.calib[key] = cal
            ev.set()
        return cal

    def record(self, res: Result) -> None:
        with self.results_lock:
            self.results.append(res)
            if res.violations:
                self.report_violation(res)
            elif self.opts.verbose:
                print(f"  ok   {res.spec.encode()} ({res.elapsed:.2f} s, writer {res.t_total:.2f} s)", flush=True)

    def repro(self, spec: Spec) -> str:
        parts = [f"{k}={os.environ[k]}" for k in ("COLFILE_LIBRARY", "PYTHONPATH") if os.environ.get(k)]
        parts += [sys.executable, str(HERE / "run_crash.py")]
        if self.tools.build:
            parts += ["--build", str(self.tools.build)]
        if self.opts.shim:
            parts += ["--shim", str(self.opts.shim)]
        if spec.writer == "csan" and self.opts.sanitize_build:
            parts += ["--sanitize-build", str(self.opts.sanitize_build)]
        if self.tools.fs.active:
            parts += ["--fs", self.tools.fs.name]
        parts += ["--trial", f"'{spec.encode()}'"]
        return " ".join(parts)

    def report_violation(self, res: Result) -> None:
        keepdir = self.opts.keep
        where = res.dir
        if keepdir and self.kept < self.opts.keep_max:
            dst = Path(keepdir) / Path(res.dir).name
            shutil.rmtree(dst, ignore_errors=True)
            try:
                shutil.copytree(res.dir, dst, symlinks=True)
                where = str(dst)
                self.kept += 1
            except OSError:
                pass
        shutil.rmtree(res.dir, ignore_errors=True)
        res.dir = where if keepdir else ""
        print(f"  FAIL {res.spec.mode} {res.spec.encode()}", flush=True)
        for v in res.violations[:6]:
            print(f"       {v[:600]}", flush=True)
        if len(res.violations) > 6:
            print(f"       ... {len(res.violations) - 6} more", flush=True)
        print(f"       reproduce: {self.repro(res.spec)}", flush=True)

    def campaign(self, combos: list[Combo], budget: float, jobs: int) -> None:
        t_end = time.monotonic() + budget
        lock = threading.Lock()

        def pick() -> Combo | None:
            with lock:
                live = [c for c in combos if not c.exhausted and not c.busy]
                if not live:
                    return None
                c = min(live, key=lambda c: (c.trials > 0, c.spent / c.weight))
                c.busy = True
                return c

        def worker() -> None:
            while time.monotonic() < t_end:
                c = pick()
                if c is None:
                    if all(x.exhausted for x in combos):
                        return
                    time.sleep(0.05)
                    continue
                t0 = time.monotonic()
                try:
                    spec = c.next_spec()
                    if spec is None:
                        c.exhausted = True
                        continue
                    res = self.runner.run(spec)
                    self.record(res)
                    c.trials += 1
                except Exception as exc:  # a bug of the harness: report it, stop this stream
                    import traceback
                    bad = Result(Spec(writer=c.writer, np=c.np_list[0], seed=self.seed, action="none"))
                    bad.violations.append(f"[harness] {c.name}: {type(exc).__name__}: {exc}\n"
                                          f"{traceback.format_exc()}")
                    self.record(bad)
                    c.exhausted = True
                finally:
                    c.spent += time.monotonic() - t0
                    c.busy = False

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


# ---------------------------------------------------------------------------
# summary

def run_checks(tools: Tools) -> list[str]:
    """Violations of the promise that do not depend on a trial."""
    out = []
    if not tools.torn_exported:
        out.append("[api] colfile.TornError does not exist: readers of a torn column must raise "
                   "colfile.TornError (colfile.errors has it, the package does not export it)")
    return out


def summarise(driver: Driver, combos: list[Combo], elapsed: float, commit: str) -> dict[str, Any]:
    res = driver.results
    modes: dict[str, dict[str, int]] = {}
    for r in res:
        key = r.spec.mode + (f"+{r.spec.variant}" if r.spec.variant else "")
        m = modes.setdefault(key, {"trials": 0, "crashes": 0, "crashes_survived": 0,
                                   "faults_fired": 0, "clean_errors": 0, "violations": 0,
                                   "resumed": 0, "repairs_killed": 0})
        m["repairs_killed"] += sum(1 for n in r.notes if n.startswith("repair killed"))
        m["trials"] += 1
        m["crashes"] += int(r.killed)
        m["crashes_survived"] += int(r.killed and not r.violations)
        m["faults_fired"] += int(r.fired)
        m["clean_errors"] += int(r.clean_error)
        m["violations"] += int(bool(r.violations))
        m["resumed"] += int(bool(r.spec.resume) and (r.killed or r.clean_error))
    sites: dict[str, Any] = {}
    for r in res:
        if r.spec.mode != "faults":
            continue
        a = sites.setdefault(r.spec.action, {"exercised": 0, "fired": 0, "clean_error": 0, "tolerated": 0,
                                            "violations": 0})
        a["exercised"] += 1
        a["fired"] += int(r.fired)
        a["clean_error"] += int(r.clean_error)
        a["tolerated"] += int(r.fired and not r.clean_error and not r.violations)
        a["violations"] += int(bool(r.violations))
    combos_out = [{"combo": c.name, "trials": c.trials, "seconds": round(c.spent, 1),
                   "sites_in_sweep": c.sites_total, "sites_run": c.sites_done,
                   "plans_swept_completely": c.seed_k} for c in combos]
    categories: dict[str, int] = {}
    failures = []
    for r in res:
        for v in r.violations:
            m = re.match(r"\[([^\]]+)\]", v)
            categories[m.group(1) if m else "?"] = categories.get(m.group(1) if m else "?", 0) + 1
        if r.violations:
            failures.append({"mode": r.spec.mode, "spec": r.spec.encode(), "violations": r.violations[:8],
                             "reproduce": driver.repro(r.spec), "kept": r.dir})
    distinct: dict[str, dict[str, Any]] = {}
    for r in res:
        if not r.violations:
            continue
        sig = r.signature()
        d = distinct.setdefault(sig, {"signature": sig, "trials": 0, "example": r.violations[0][:400],
                                      "reproduce": driver.repro(r.spec), "sites": {}})
        d["trials"] += 1
        where = site_kind(r.site) if r.site else r.spec.action
        d["sites"][where] = d["sites"].get(where, 0) + 1
    return {"commit": commit, "colfile": driver.tools.colfile_version, "seconds": round(elapsed, 1),
            "seed": driver.seed, "scale": driver.scale, "trials": len(res),
            "violating_trials": sum(1 for r in res if r.violations),
            "run_violations": run_checks(driver.tools),
            "violation_categories": categories,
            "distinct_failures": sorted(distinct.values(), key=lambda d: -d["trials"]),
            "modes": modes, "fault_sites": sites, "combos": combos_out, "failures": failures,
            "tools": driver.tools.describe()}


def print_summary(s: dict[str, Any]) -> None:
    print(f"\ncrash harness: {s['trials']} trials in {s['seconds']} s (commit {s['commit']}, seed {s['seed']})")
    for mode, m in sorted(s["modes"].items()):
        extra = ""
        if mode.split("+")[0] in ("kill", "rankkill", "inject", "powerloss"):
            extra = f", {m['crashes']} crashes, {m['crashes_survived']} survived"
        if m.get("repairs_killed"):
            extra += f", {m['repairs_killed']} repairs killed after them"
        if mode.split("+")[0] == "faults":
            extra = f", {m['faults_fired']} faults injected, {m['clean_errors']} clean errors"
        print(f"  {mode:17s} {m['trials']:5d} trials{extra}, {m['violations']} with violations")
    for a, x in sorted(s["fault_sites"].items()):
        print(f"  fault {a:7s} {x['exercised']:5d} sites exercised, {x['fired']} fired, "
              f"{x['clean_error']} clean errors, {x['tolerated']} tolerated, {x['violations']} violations")
    for c in s["combos"]:
        sw = f", sweep {c['sites_run']}/{c['sites_in_sweep']}" if c["sites_in_sweep"] else ""
        print(f"  {c['combo']:22s} {c['trials']:5d} trials {c['seconds']:7.1f} s{sw}")
    if s["distinct_failures"]:
        print(f"  {len(s['distinct_failures'])} distinct failures (mode: categories during plan op at site):")
        for d in s["distinct_failures"][:25]:
            print(f"    {d['trials']:4d} x {d['signature']}")
            sites = sorted(d["sites"].items(), key=lambda kv: -kv[1])
            print("           at " + ", ".join(f"{k} ({v})" for k, v in sites[:6])
                  + (f", {len(sites) - 6} more" if len(sites) > 6 else ""))
            print(f"           e.g. {d['example'][:300]}")
            print(f"           {d['reproduce']}")
        if len(s["distinct_failures"]) > 25:
            print(f"    ... {len(s['distinct_failures']) - 25} more in the JSON summary")
    if s["violation_categories"]:
        print("  violations by category: " + ", ".join(f"{k} {v}" for k, v in sorted(s["violation_categories"].items())))
    for v in s["run_violations"]:
        print(f"  {v}")
    bad = s["violating_trials"] + len(s["run_violations"])
    print("RESULT: " + ("OK, no violation" if not bad
                        else f"{s['violating_trials']} trial(s) with violations"
                        + (f", {len(s['run_violations'])} other violation(s)" if s["run_violations"] else "")))


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out + ("+dirty" if dirty else "") if out else "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def build_combos(driver: Driver, opts: argparse.Namespace) -> list[Combo]:
    modes = MODES if opts.mode == "all" else [m.strip() for m in opts.mode.split(",")]
    writers = [w.strip() for w in opts.writers.split(",")]
    t = driver.tools
    if t.san_cwriter and "csan" not in writers:
        writers.append("csan")
    if "c" in writers and t.cwriter is None:
        print("note: the C writer is not built; using the Python writer only", file=sys.stderr)
        writers = [w for w in writers if w != "c"]
    nranks = [int(x) for x in opts.nranks.split(",")]
    mpi = opts.mpi and t.mpiexec is not None
    if opts.mpi and not mpi:
        print("note: no mpiexec: MPI trials skipped", file=sys.stderr)
    combos: list[Combo] = []
    # weights: the C writer starts in milliseconds, Python and MPI in ~1 s
    table = {
        ("kill", "c"): 1.0, ("kill", "py"): 0.6,
        ("inject", "c"): 1.0, ("inject", "py"): 0.25,
        ("powerloss", "c"): 1.3, ("powerloss", "py"): 0.25,
        ("faults", "c"): 1.5, ("faults", "py"): 0.5,
        ("faults", "csan"): 0.5, ("powerloss", "csan"): 0.2,
    }
    mpi_table = {("rankkill", "c"): 0.6, ("rankkill", "py"): 0.5, ("inject", "c"): 0.35,
                 ("powerloss", "c"): 0.45, ("faults", "c"): 0.35, ("inject", "py"): 0.15,
                 ("powerloss", "py"): 0.15, ("faults", "py"): 0.15}
    for mode in modes:
        for w in writers:
            if mode != "rankkill" and (mode, w) in table:
                combos.append(Combo(driver, mode, w, [1], table[(mode, w)]))
            if mpi and (mode, w) in mpi_table and mode != "kill":
                if w == "c" and t.cwriter_mpi is None:
                    continue
                combos.append(Combo(driver, mode, w, nranks, mpi_table[(mode, w)]))
    if opts.destroy > 0:
        # rm, truncation and repair: serial writers (C and Python)
        for mode in modes:
            for w in writers:
                if mode in opts.destroy_modes.split(",") and (mode, w) in table and w != "csan":
                    combos.append(Combo(driver, mode, w, [1], table[(mode, w)] * opts.destroy, "destroy"))
    if any(c.mode != "kill" and c.mode != "rankkill" for c in combos) and t.shim is None:
        print("note: faultshim.so is not built: only random-time kills run", file=sys.stderr)
        combos = [c for c in combos if c.mode in ("kill", "rankkill")]
    return combos


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of trials (default 60)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mode", default="all", help="kill, rankkill, inject, powerloss, faults, a comma list, or all")
    ap.add_argument("--mpi", action="store_true", help="also run MPI writers (rankkill needs it)")
    ap.add_argument("--nranks", default="2", help="MPI ranks, e.g. 2,3,4 (default 2)")
    ap.add_argument("--writers", default="c,py")
    ap.add_argument("--scale", default="small", choices=sorted(crashplan.SCALES))
    ap.add_argument("--destroy", type=float, default=0.6,
                    help="weight of the streams on plans with rm, truncation and repair (0: none)")
    ap.add_argument("--destroy-modes", default="kill,inject,powerloss,faults",
                    help="the modes that also run on those plans (a comma list)")
    ap.add_argument("--max-seeds", type=int, default=1000, help="plans per sweep before a sweep is done")
    ap.add_argument("--resume", type=float, default=0.3, help="fraction of crashed trials that are resumed")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a writer counts as hung")
    ap.add_argument("--build", help="CMake build dir with tests/crash/ (default: $COLFILE_C_BUILD, build/crash)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--shim", help="faultshim.so to use (default: the build's)")
    ap.add_argument("--sanitize-build", help="a COLFILE_SANITIZE=ON build: its crash_writer also runs "
                    "(faults and power loss, with faultshim_io.so), and any sanitizer report is a violation")
    ap.add_argument("--workdir", help="where trial directories go (default: a new one in $TMPDIR)")
    ap.add_argument("--json", help="write the summary as JSON here")
    ap.add_argument("--keep", help="copy the directories of failing trials here")
    ap.add_argument("--keep-max", type=int, default=20)
    ap.add_argument("--no-bigfile", dest="bigfile", action="store_false", help="skip the bigfile read-back")
    ap.add_argument("--no-colfile-read", dest="colfile_read", action="store_false",
                    help="skip reading every checked File back with colfile")
    ap.add_argument("--trial", help="run one trial SPEC (as printed with a violation) and show everything")
    ap.add_argument("--fs", default="local",
                    help="file-system model: local, noflock, nodelocal, noexchange or a comma list "
                         "(tests/crash/fsmodel.py)")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args(argv)

    tools = find_tools(opts.build, opts.python, opts.shim, opts.sanitize_build)
    workroot = Path(opts.workdir) if opts.workdir else Path(tempfile.mkdtemp(prefix="colfile-crash-"))
    workroot.mkdir(parents=True, exist_ok=True)
    tools.fs = fsmodel.parse(opts.fs, tools.build)
    if tools.fs.active:
        tools.fs.log = workroot / "lockshim.log"
        tools.fs.show_mount(workroot)
    tools.env = tools.fs.apply(tools.env)
    commit = git_commit()
    try:
        if opts.trial:
            return run_one(tools, opts, workroot)
        driver = Driver(tools, opts, workroot)
        combos = build_combos(driver, opts)
        if not combos:
            print("nothing to run (no writer built?)", file=sys.stderr)
            return 2
        print(f"crash harness: budget {opts.budget:.0f} s, seed {opts.seed}, "
              f"{len(combos)} streams: {', '.join(c.name for c in combos)}", flush=True)
        t0 = time.monotonic()
        shm_before = shm_segments()
        driver.campaign(combos, opts.budget, opts.jobs)
        time.sleep(0.3)
        cleanup_shm(shm_before)
        if driver.runner.reader:
            driver.runner.reader.close()
        s = summarise(driver, combos, time.monotonic() - t0, commit)
        if tools.fs.active:
            s["fs"] = {"model": tools.fs.name, "answered": tools.fs.answered()}
            print(f"file-system model {tools.fs.name}: the shim answered "
                  + (", ".join(f"{n} {k}" for k, n in sorted(s["fs"]["answered"].items())) or "no call"))
        print_summary(s)
        if opts.json:
            Path(opts.json).write_text(json.dumps(s, indent=1))
        if not driver.results:
            return 2
        return 1 if s["violating_trials"] or s["run_violations"] else 0
    finally:
        if not opts.workdir and not opts.trial:
            shutil.rmtree(workroot, ignore_errors=True)


def run_one(tools: Tools, opts: argparse.Namespace, workroot: Path) -> int:
    spec = Spec.decode(opts.trial)
    plans = Plans()
    runner = Runner(tools, workroot, plans, opts)
    shm_before = shm_segments()
    res = runner.run(spec, keep=True)
    time.sleep(0.3)
    cleanup_shm(shm_before)
    if runner.reader:
        runner.reader.close()
    tdir = Path(res.dir)
    print(f"trial {spec.encode()} in {tdir}: status {res.rc}, {res.elapsed:.2f} s, "
          f"{'killed' if res.killed else 'not killed'}, fault {'fired' if res.fired else 'not fired'}")
    print(f"plan: {tdir / 'plan.txt'}\nlog:")
    if (tdir / "log").exists():
        print("  " + (tdir / "log").read_text().rstrip().replace("\n", "\n  "))
    if res.stderr.strip():
        print("stderr:\n  " + res.stderr.strip()[-3000:].replace("\n", "\n  "))
    for n in res.notes:
        print(f"note: {n}")
    text, model = plans.get(spec.seed, spec.scale, spec.variant)
    rep = checker.check(tdir / "F", model, checker.parse_log(tdir / "log"), use_bigfile=False)
    for k, v in sorted(rep.matched.items()):
        print(f"  {k}: {v}")
    if rep.hidden:
        print(f"hidden leftovers: {', '.join(rep.hidden[:12])}")
    for v in res.violations:
        print(f"VIOLATION {v}")
    print(f"files kept in {tdir}")
    return 1 if res.violations else 0


if __name__ == "__main__":
    sys.exit(main())
