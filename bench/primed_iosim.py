"""``colfile iosim`` with memory priming just before its write (benchmarks only).

    mpiexec -n 2 python bench/primed_iosim.py --prime BYTES [colfile iosim options]

Every rank touches and frees ``--prime`` bytes of memory (bench/prime.py)
just before the timed write, then the run goes on as ``colfile iosim``'s
with the other options, and prints its report.  bench/iosim_sweep.py runs
the Python layer this way; for the C colfile-iosim it loads
bench/primed_iosim.c instead.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prime import prime_memory  # noqa: E402

from colfile.cli import build_parser  # noqa: E402
from colfile.cli import iosim  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prime", type=int, required=True, metavar="BYTES",
                   help="bytes each rank touches and frees just before its write")
    ours, rest = p.parse_known_args(argv)
    if ours.prime < 0:
        p.error(f"--prime must not be negative: {ours.prime}")
    args = build_parser().parse_args(["iosim", *rest])
    return iosim.run(args, before_write=partial(prime_memory, ours.prime))


if __name__ == "__main__":
    sys.exit(main())
