"""Run the iosim benchmark (C and Python) over ranks, loads and modes.

    .venv/bin/python bench/iosim.py [--ranks 1,2,4] [--loads small,medium,large]
        [--modes throttled,aggregated,auto] [--repeats 3] [--c-iosim build/release/colfile-iosim]
        [--markdown docs/performance.md]

Each configuration runs ``repeats`` times; the table keeps the best run of each
phase (these machines are noisy) and states the ratio of aggregated to
throttled writes measured in the same run.  With ``--markdown`` the table
replaces the text between the ``<!-- iosim:begin -->`` and
``<!-- iosim:end -->`` markers of that file, together with the command line
and the machine it ran on.

Runs with more ranks than cores are oversubscribed; MPICH then spins in its
progress loop, so the MPICH progress-throttle variables below are set for every
run (other MPIs ignore them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "16",
}


def run_one(cmd: list[str]) -> dict:
    env = dict(os.environ, **ENV)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    report = json.loads(lines[-1])
    if not report.get("verified", False):
        raise RuntimeError(f"{shlex.join(cmd)}: data did not verify: {report}")
    return report


def best_of(cmd: list[str], repeats: int) -> dict:
    runs = [run_one(cmd) for _ in range(repeats)]
    best = dict(runs[0])
    for phase in ("create", "write", "read"):
        fastest = min(runs, key=lambda r: r[f"{phase}_seconds"])
        best[f"{phase}_seconds"] = fastest[f"{phase}_seconds"]
        if f"{phase}_GBps" in fastest:
            best[f"{phase}_GBps"] = fastest[f"{phase}_GBps"]
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--loads", default="small,medium,large")
    p.add_argument("--modes", default="throttled,aggregated,auto")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--c-iosim", default=str(ROOT / "build" / "release" / "colfile-iosim"))
    p.add_argument("--markdown", help="file whose iosim section to replace")
    args = p.parse_args(argv)

    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    layers = {
        "C": [args.c_iosim],
        "Python": [sys.executable, "-m", "colfile.cli", "iosim"],
    }
    rows = []
    for load in args.loads.split(","):
        for n in [int(x) for x in args.ranks.split(",")]:
            for layer, prog in layers.items():
                results = {}
                for mode in args.modes.split(","):
                    cmd = [mpiexec, "-n", str(n), *prog, "--load", load, "--mode", mode, "--json"]
                    results[mode] = best_of(cmd, args.repeats)
                for mode, r in results.items():
                    ratio = ""
                    if mode == "aggregated" and "throttled" in results:
                        ratio = f"{results['throttled']['write_seconds'] / r['write_seconds']:.2f}"
                    rows.append((load, n, layer, mode, r.get("mode_used", mode), r["nfile"], r["bytes"],
                                 r["create_seconds"], r["write_seconds"], r["write_GBps"],
                                 r["read_seconds"], r["read_GBps"], ratio))
                    print(rows[-1], flush=True)

    table = ["| load | ranks | layer | mode (used) | nfile | bytes | create s | write s | write GB/s "
             "| read s | read GB/s | aggregated/throttled write speed |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (load, n, layer, mode, used, nfile, nbytes, cs, ws, wg, rs, rg, ratio) in rows:
        table.append(f"| {load} | {n} | {layer} | {mode} ({used}) | {nfile} | {nbytes} | {cs:.4f} | "
                     f"{ws:.4f} | {wg:.2f} | {rs:.4f} | {rg:.2f} | {ratio} |")
    command = "bench/iosim.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    section = "\n".join([
        "<!-- iosim:begin -->",
        f"Command: `.venv/bin/python {command.strip()}` (best of {args.repeats} per phase).",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; "
        "runs with more ranks than cores are oversubscribed.",
        "",
        *table,
        "<!-- iosim:end -->",
    ])
    print(section)
    if args.markdown:
        path = Path(args.markdown)
        text = path.read_text() if path.exists() else ""
        begin, end = "<!-- iosim:begin -->", "<!-- iosim:end -->"
        if begin in text and end in text:
            text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
        else:
            text = text + "\n" + section + "\n"
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
