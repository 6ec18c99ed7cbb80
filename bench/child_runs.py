"""Timing in fresh child processes: the benchmarks that must see a cold
process (bench/cold_reads.py, bench/cold_snapshot.py) run their script
again as ``script --child SPEC`` for every timed read.  Here are both ends
of that call and the options such a benchmark always has."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any


def serve_child(argv: list[str], child: Callable[[dict[str, Any]], Any]) -> bool:
    """In the child: if ``argv`` is ``--child SPEC``, print ``child(SPEC)``
    as JSON (the line the parent reads) and return True."""
    if argv[:1] != ["--child"]:
        return False
    print(json.dumps(child(json.loads(argv[1]))))
    return True


def run_child(script: str, spec: dict[str, Any], label: str,
              env: dict[str, str] | None = None) -> Any:
    """In the parent: ``script --child SPEC`` in a fresh interpreter; its
    result, or None after printing its output when it failed."""
    proc = subprocess.run([sys.executable, script, "--child", json.dumps(spec)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"{label}: failed\n{proc.stdout}{proc.stderr}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def parser(doc: str | None, default_rows: int, rows_help: str) -> argparse.ArgumentParser:
    """The command line of such a benchmark: the summary line of the
    script's docstring, its rows, and what every one of them takes (seed,
    nice, tmpdir; see :func:`common_options`)."""
    p = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=default_rows, help=rows_help)
    return p


def common_options(p: argparse.ArgumentParser) -> None:
    """--seed, --nice and --tmpdir, after the benchmark's own options."""
    p.add_argument("--seed", type=int, default=6)
    p.add_argument("--nice", type=int, default=0, help="as bench/peers.py --nice (root)")
    p.add_argument("--tmpdir", default=None)
