"""Run both iosims (C colfile-iosim and Python colfile iosim) over ranks, loads and modes.

    .venv/bin/python bench/iosim_sweep.py [--ranks 1,2,4] [--loads small,medium,large]
        [--modes throttled,aggregated,auto] [--repeats 3] [--c-iosim build/release/colfile-iosim]
        [--durable-load medium] [--cost-us 1000] [--cost-ranks 4] [--scratch DIR]
        [--markdown bench/results/iosim.md] [--plot sweep.png]

One run prints four tables, all measured in the same run:

1. page cache: every load, rank count, layer and mode, with commits that
   skip fsync (``CF_OPEN_NODURABLE`` / ``durable=False``, iosim's default),
   and the CPU time of the write phase (user + system, all threads, summed
   over ranks: ``write_cpu_seconds``) with the cores it kept busy on
   average (``write_cpu_per_wall``: CPU time per second of the write; with
   more than one rank it includes MPI polling while ranks wait for each
   other);
2. durable: the ``--durable-load`` with ``--durable`` (every commit fsyncs),
   auto mode, for comparison with the same rows of table 1;
3. request cost: the ``small``, ``medium`` and ``large`` loads on
   ``--cost-ranks`` ranks, throttled against aggregated, with every file-system request (open,
   write, read, fsync, rename, mkdir, unlink) served one at a time by an
   emulated server taking ``--cost-us`` microseconds each -- the cost that a
   parallel file system's metadata and lock servers add and one local disk
   does not have.  ``bench/request_cost.c`` (built here, loaded with
   LD_PRELOAD, never part of colfile) adds the cost and counts the requests
   each rank makes, which the table shows;
4. targets: the ratios docs/performance.md sets as goals, each computed
   from the tables above, and whether it is met; next to the 2-rank scaling
   target, its CPU ceiling: if 1 rank writing the largest load keeps ``u``
   cores busy, 2 ranks on ``os.cpu_count()`` cores can write at most
   ``min(2, cores / u)`` times as fast when the write is CPU bound (as
   page-cache writes are; 1 rank makes no MPI wait, so ``u`` is the
   write's own).

Each configuration runs ``repeats`` times, the configurations taking turns
(round-robin), and the tables keep the best run of each phase (these machines
are noisy).  With ``--markdown`` the tables
replace the text between the ``<!-- iosim:begin -->`` and
``<!-- iosim:end -->`` markers of that file, together with the command line
and the machine it ran on.

Memory priming: just before the write, each rank touches and frees twice
the bytes it writes (``--prime-factor``, 0 turns it off): the Python layer
runs as ``bench/primed_iosim.py`` (``colfile iosim`` with bench/prime.py
called before its write), the C layer with ``bench/primed_iosim.c`` loaded
(LD_PRELOAD; colfile-iosim calls its hook before the write).  On a virtual machine that hands memory the guest frees back to its
host within seconds (free page reporting, as on the benchmark machine), the
first write to such a page faults into the host, about 2 ms per MiB there;
priming gives every run recently used memory, so that runs differ by what
colfile does, not by where the guest's free pages were (bench/peers.py
does the same).

Runs with more ranks than cores are oversubscribed; MPICH then spins in its
progress loop, so the MPICH progress-throttle variables below are set for every
run (other MPIs ignore them).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mdsection import replace_section  # noqa: E402  (bench/mdsection.py)

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "16",
}
PHASES = ("create", "write", "write_data", "read")

#: The targets (docs/performance.md, "Parallel I/O: iosim").
SCALE_2 = 1.5      # 2 ranks write at least this many times as fast as 1
OVERSUB_4 = 0.8    # 4 ranks on 2 cores keep at least this much of 2 ranks' speed
NO_LOSS = 0.8      # aggregated mode that falls back to per-rank writes keeps this much
#: The loads of the request-cost table: small (aggregation should win), medium
#: (4 ranks make one 64 MiB group: aggregation copies and should lose), large
#: (every rank is a group of its own: aggregated mode writes like throttled).
COST_LOADS = ("small", "medium", "large")


#: Bytes per rank of each --load (as both iosim programs define them).
LOAD_BYTES = {"small": 4 << 12, "medium": 4 << 22, "large": 4 << 26}


def with_env(*envs: dict[str, str]) -> dict[str, str]:
    """The environments merged, later ones winning, but the libraries of
    every LD_PRELOAD kept."""
    out: dict[str, str] = {}
    for env in envs:
        for key, value in env.items():
            if key == "LD_PRELOAD" and out.get(key):
                value = f"{out[key]} {value}"
            out[key] = value
    return out


def run_one(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    full = with_env(dict(os.environ), ENV, env or {})
    out = subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    report: dict[str, Any] = json.loads(lines[-1])
    if not report.get("verified", False):
        raise RuntimeError(f"{shlex.join(cmd)}: data did not verify: {report}")
    return report


#: Figures of the write phase taken from the run with the fastest write
#: (they describe that run, not the fastest of each).
WRITE_CPU = ("write_cpu_seconds", "write_cpu_per_wall")


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The first run, with each phase's time (and speed) the fastest of all,
    and the write's CPU figures those of the run with the fastest write."""
    best = dict(runs[0])
    for phase in PHASES:
        fastest = min(runs, key=lambda r: r[f"{phase}_seconds"])
        best[f"{phase}_seconds"] = fastest[f"{phase}_seconds"]
        if f"{phase}_GBps" in fastest:
            best[f"{phase}_GBps"] = fastest[f"{phase}_GBps"]
        if phase == "write":
            for key in WRITE_CPU:
                if key in fastest:
                    best[key] = fastest[key]
    return best


def cpu_ceiling(cores_busy: float, nranks: int, cores: int) -> float | None:
    """How many times as fast as 1 rank ``nranks`` ranks can write on
    ``cores`` cores when the write is CPU bound and 1 rank keeps
    ``cores_busy`` cores busy: ``min(nranks, cores / cores_busy)``."""
    if cores_busy <= 0:
        return None
    return min(float(nranks), cores / cores_busy)


def fmt_cpu(r: dict[str, Any]) -> str:
    """The write's CPU seconds and cores busy, "" if the program did not
    report them (an older colfile-iosim)."""
    if "write_cpu_seconds" not in r:
        return ""
    return f"{r['write_cpu_seconds']:.4f} ({r['write_cpu_per_wall']:.2f})"


def measure(configs: dict[Any, Callable[[], dict[str, Any]]], repeats: int,
            label: str) -> dict[Any, dict[str, Any]]:
    """Run every configuration ``repeats`` times, round-robin (so that a
    burst of load from elsewhere spoils one repeat of many configurations,
    not every repeat of one), and keep the best of each phase."""
    runs: dict[Any, list[dict[str, Any]]] = {key: [] for key in configs}
    for rep in range(repeats):
        for key, run in configs.items():
            runs[key].append(run())
            r = runs[key][-1]
            print(label, rep, *key, r["write_seconds"], r["write_GBps"],
                  r.get("write_cpu_per_wall", ""), flush=True)
    return {key: best_of(rs) for key, rs in runs.items()}


def build_preload(scratch: Path, name: str) -> Path:
    """Compile bench/NAME.c into scratch (a benchmark-only library loaded
    with LD_PRELOAD)."""
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    lib = scratch / f"{name}.so"
    subprocess.run([cc, "-std=c11", "-O2", "-shared", "-fPIC", "-o", str(lib),
                    str(ROOT / "bench" / f"{name}.c"), "-ldl", "-lpthread"], check=True)
    return lib


def cost_run(cmd: list[str], cmd_env: dict[str, str], lib: Path, scratch: Path,
             cost_us: int) -> dict[str, Any]:
    """One iosim run with the emulated per-request cost: the report, with
    the requests of rank 0 and the most of any other rank added."""
    work = Path(tempfile.mkdtemp(prefix="run-", dir=scratch))
    try:
        path, reports = work / "file", work / "requests"
        reports.mkdir()
        env = {"LD_PRELOAD": str(lib), "COLFILE_REQUEST_COST_DIR": str(path),
               "COLFILE_REQUEST_COST_US": str(cost_us),
               "COLFILE_REQUEST_COST_LOCK": str(work / "server.lock"),
               "COLFILE_REQUEST_COST_REPORT": str(reports)}
        report = run_one([*cmd, str(path)], with_env(cmd_env, env))
        kinds = ("open", "write", "read", "fsync", "metadata")
        by_rank: dict[int, dict[str, int]] = {}
        for name in glob.glob(str(reports / "*.json")):
            one = json.loads(Path(name).read_text())
            into = by_rank.setdefault(int(one["rank"]), {"rank": int(one["rank"])})
            for k in kinds:
                into[k] = into.get(k, 0) + int(one[k])
        # A rank that made no request under the File writes no report (with
        # aggregated mode, small loads are written and read by rank 0 alone).
        if 0 not in by_rank or not set(by_rank) <= set(range(report["ranks"])):
            raise RuntimeError(f"{shlex.join(cmd)}: request reports of ranks {sorted(by_rank)}")
        for r in range(report["ranks"]):
            by_rank.setdefault(r, {"rank": r, **{k: 0 for k in kinds}})
        per_rank = [by_rank[r] for r in sorted(by_rank)]
        report["requests_rank0"] = sum(r[k] for r in per_rank if r["rank"] == 0 for k in kinds)
        report["requests_other"] = max((sum(r[k] for k in kinds) for r in per_rank
                                        if r["rank"] != 0), default=0)
        report["requests_total"] = sum(r[k] for r in per_rank for k in kinds)
        report["write_requests"] = {str(r["rank"]): (r["open"], r["write"]) for r in per_rank}
        return report
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fmt_ratio(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--loads", default="small,medium,large")
    p.add_argument("--modes", default="throttled,aggregated,auto")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--c-iosim", default=str(ROOT / "build" / "release" / "colfile-iosim"))
    p.add_argument("--durable-load", default="medium",
                   help="the load of the durable table ('' for none)")
    p.add_argument("--cost-us", type=int, default=1000,
                   help="emulated service time per file-system request, microseconds "
                        "(0: no request-cost table)")
    p.add_argument("--cost-ranks", type=int, default=4)
    p.add_argument("--scratch", help="directory for the request-cost runs and the libraries "
                                     "built (default: $TMPDIR)")
    p.add_argument("--markdown", help="file whose iosim section to replace")
    p.add_argument("--plot", help="draw the page-cache write and read bandwidth against ranks, "
                                  "per load, layer and mode, into this image (.png, .pdf, "
                                  ".svg; needs matplotlib: pip install colfile[plot]); the "
                                  "read figure goes beside it, named with -read")
    p.add_argument("--prime-factor", type=float, default=2.0,
                   help="each rank touches and frees this many times the bytes it writes "
                        "just before its write (default 2; 0: off; see the docstring)")
    args = p.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="iosim-sweep-", dir=args.scratch))
    try:
        return sweep(args, argv, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def sweep(args: argparse.Namespace, argv: list[str] | None, scratch: Path) -> int:
    primed = build_preload(scratch, "primed_iosim")

    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    layers = {
        "C": [args.c_iosim],
        "Python": [sys.executable, str(ROOT / "bench" / "primed_iosim.py")],
    }
    ranks = [int(x) for x in args.ranks.split(",")]
    loads = args.loads.split(",")
    modes = args.modes.split(",")

    def command(n: int, layer: str, load: str, mode: str,
                *extra: str) -> tuple[list[str], dict[str, str]]:
        """The command line of one run, and what it adds to the environment."""
        prime = max(0, int(args.prime_factor * LOAD_BYTES[load]))
        if layer == "C":
            how, env = [], {"LD_PRELOAD": str(primed), "COLFILE_BENCH_PRIME": str(prime)}
        else:
            how, env = ["--prime", str(prime)], {}
        return ([mpiexec, "-n", str(n), *layers[layer], *how, "--load", load, "--mode", mode,
                 "--json", *extra], env)

    load_before = os.getloadavg()[0]
    # 1. page cache
    results = measure({(load, n, layer, mode): partial(run_one, *command(n, layer, load, mode))
                       for load in loads for n in ranks for layer in layers for mode in modes},
                      args.repeats, "page cache")

    def agg_ratio(key: tuple[str, int, str], field: str = "write_seconds",
                  table: dict[Any, dict[str, Any]] = results) -> float | None:
        thr, agg = table.get((*key, "throttled")), table.get((*key, "aggregated"))
        if not thr or not agg or agg[field] <= 0:
            return None
        return float(thr[field] / agg[field])

    page = ["| load | ranks | layer | mode (used) | nfile | bytes | create s | write s | write GB/s "
            "| write cpu s (cores busy) | read s | read GB/s | aggregated/throttled write speed |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (load, n, layer, mode), r in results.items():
        ratio = agg_ratio((load, n, layer)) if mode == "aggregated" else None
        page.append(f"| {load} | {n} | {layer} | {mode} ({r['mode_used']}) | {r['nfile']} | "
                    f"{r['bytes']} | {r['create_seconds']:.4f} | {r['write_seconds']:.4f} | "
                    f"{r['write_GBps']:.2f} | {fmt_cpu(r)} | {r['read_seconds']:.4f} | "
                    f"{r['read_GBps']:.2f} | {fmt_ratio(ratio)} |")

    # 2. durable
    durable: dict[Any, dict[str, Any]] = {}
    if args.durable_load:
        durable = measure({(n, layer): partial(run_one, *command(n, layer, args.durable_load,
                                                                "auto", "--durable"))
                           for n in ranks if n <= 2 for layer in layers},
                          args.repeats, "durable")
    dur = ["| load | ranks | layer | write s (durable) | write GB/s (durable) "
           "| write s (page cache, table above) | durable/page-cache write speed |",
           "|---|---|---|---|---|---|---|"]
    for (n, layer), r in durable.items():
        ref = results.get((args.durable_load, n, layer, "auto"))
        ratio = ref["write_seconds"] / r["write_seconds"] if ref else None
        dur.append(f"| {args.durable_load} | {n} | {layer} | {r['write_seconds']:.4f} | "
                   f"{r['write_GBps']:.2f} | {ref['write_seconds'] if ref else float('nan'):.4f} | "
                   f"{fmt_ratio(ratio)} |")

    # 3. request cost
    costed: dict[Any, dict[str, Any]] = {}
    if args.cost_us > 0:
        lib = build_preload(scratch, "request_cost")
        n = args.cost_ranks
        costed = measure({(load, n, layer, mode): partial(cost_run, *command(n, layer, load, mode),
                                                          lib, scratch, args.cost_us)
                          for load in COST_LOADS for layer in layers
                          for mode in ("throttled", "aggregated")},
                         args.repeats, "request cost")
    cost = ["| load | ranks | layer | mode | write s | write data s | aggregated/throttled "
            "write speed (data only) | requests: rank 0 | requests: each other rank "
            "| (opens, writes) per rank |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for (load, n, layer, mode), r in costed.items():
        ratio = agg_ratio((load, n, layer), table=costed) if mode == "aggregated" else None
        data = agg_ratio((load, n, layer), "write_data_seconds", costed) \
            if mode == "aggregated" else None
        ow = ", ".join(f"{k}: {v[0]}+{v[1]}" for k, v in sorted(r["write_requests"].items(),
                                                                    key=lambda kv: int(kv[0])))
        cost.append(f"| {load} | {n} | {layer} | {mode} | {r['write_seconds']:.4f} | "
                    f"{r['write_data_seconds']:.4f} | "
                    f"{fmt_ratio(ratio)}{f' ({fmt_ratio(data)})' if data is not None else ''} | "
                    f"{r['requests_rank0']} | {r['requests_other']} | {ow} |")

    # 4. targets
    targets = ["| target | measured | met? |", "|---|---|---|"]

    def target(text: str, value: float | None, ok: bool | None) -> None:
        met = "n/a" if value is None or ok is None else ("yes" if ok else "**no**")
        targets.append(f"| {text} | {fmt_ratio(value)} | {met} |")

    def speed(table: dict[Any, dict[str, Any]], *key: Any) -> float | None:
        r = table.get(key)
        return r["write_GBps"] if r else None

    big = "large" if "large" in loads else loads[-1]
    cores = os.cpu_count() or 1
    for layer in layers:
        s1, s2, s4 = (speed(results, big, n, layer, "auto") for n in (1, 2, 4))
        v = s2 / s1 if s1 and s2 else None
        target(f"{layer}: 2 ranks write `{big}` at >= {SCALE_2}x the speed of 1 rank (page "
               "cache, auto mode)", v, v is not None and v >= SCALE_2)
        r1, r2 = (results.get((big, n, layer, "auto")) for n in (1, 2))
        if r1 and "write_cpu_per_wall" in r1:
            u = r1["write_cpu_per_wall"]
            ceiling = cpu_ceiling(u, 2, cores)
            busy2 = (f"; 2 ranks kept {r2['write_cpu_per_wall']:.2f} cores busy"
                     if r2 and "write_cpu_per_wall" in r2 else "")
            target(f"{layer}: 1 rank keeps {u:.2f} cores busy while writing `{big}`; CPU "
                   f"ceiling for 2 ranks on {cores} cores: min(2, {cores}/{u:.2f}) = "
                   f"{fmt_ratio(ceiling)}x (measured scaling: {fmt_ratio(v) or 'n/a'}x{busy2}; "
                   "not a target: the most a CPU-bound write can reach)", ceiling, None)
        v = s4 / s2 if s2 and s4 else None
        target(f"{layer}: 4 ranks on 2 cores (oversubscribed) keep >= {OVERSUB_4}x the write "
               f"speed of 2 ranks, `{big}` (does not collapse)", v,
               v is not None and v >= OVERSUB_4)
    n = args.cost_ranks
    for layer in layers:
        v = agg_ratio(("small", n, layer), table=costed)
        target(f"{layer}: with a request cost, aggregated beats throttled for `small` on {n} "
               "ranks (aggregated/throttled write speed > 1)", v, None if v is None else v > 1)
        v = agg_ratio(("medium", n, layer), table=costed)
        target(f"{layer}: with a request cost, aggregated loses to throttled for `medium` on "
               f"{n} ranks, where the ranks form one group (aggregated/throttled write speed "
               "< 1)", v, None if v is None else v < 1)
        v = agg_ratio(("large", n, layer), table=costed)
        target(f"{layer}: with a request cost, `large` on {n} ranks: every rank is its own "
               f"group, aggregated writes like throttled (aggregated/throttled write speed "
               f">= {NO_LOSS})", v, None if v is None else v >= NO_LOSS)
    for layer in layers:
        v = agg_ratio(("small", max(ranks), layer))
        target(f"{layer}: page cache, no request cost: aggregated/throttled write speed, "
               f"`small`, {max(ranks)} ranks (not a target: see the text)", v, None)

    load_after = os.getloadavg()[0]
    argv_used = argv if argv is not None else sys.argv[1:]
    cmdline = "bench/iosim_sweep.py " + " ".join(shlex.quote(a) for a in argv_used)
    section = "\n".join([
        "<!-- iosim:begin -->",
        f"Command: `.venv/bin/python {cmdline.strip()}` (one run; best of {args.repeats} "
        "per phase"
        + (f"; just before its write, each rank touched and freed {args.prime_factor:g}x the "
           "bytes it writes: memory priming, bench/prime.py" if args.prime_factor > 0 else "")
        + ").",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; "
        "runs with more ranks than cores are oversubscribed. Load average (1 min) when the "
        f"run started: {load_before:.1f}, when it ended: {load_after:.1f} (other work on the "
        "machine competes for its cores).",
        "",
        "Page cache (commits without fsync: `CF_OPEN_NODURABLE`, `durable=False`):",
        "",
        *page,
        "",
        "Durable commits (`--durable`: fsync of the blobs, the header files and the "
        "directories):",
        "",
        *dur,
        "",
        f"Request cost: every file-system request under the File served one at a time, "
        f"{args.cost_us} µs each (`bench/request_cost.c`); requests counted per rank over the "
        "whole run (create, write, read); the last column lists each rank's opens+writes:",
        "",
        *cost,
        "",
        "Targets (computed from the tables above):",
        "",
        *targets,
        "<!-- iosim:end -->",
    ])
    print(section)
    if args.markdown:
        replace_section(Path(args.markdown), section, "<!-- iosim:begin -->",
                        "<!-- iosim:end -->")
    if args.plot:
        from colfile import plots  # only here: the sweep itself needs no colfile import

        out = Path(args.plot)
        for phase, path in (("write", out), ("read", out.with_stem(out.stem + "-read"))):
            plots.save(plots.sweep_figure(results, phase), str(path))
            print(f"{phase} bandwidth drawn in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
