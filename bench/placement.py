"""How fast cached file bytes are copied into memory, by where the
destination starts relative to them (colfile/_buffers.py).

    python bench/placement.py [--mib 64] [--small-mib 4] [--iters 30]
        [--prime-mib 256] [--tmpdir DIR]

It writes a file of ``--mib`` MiB, reads it once so that the page cache
holds it, then times ``os.preadv`` of (a) the whole file from offset 0 and
(b) ``--small-mib`` MiB from an offset 48 bytes past a 64-byte boundary
(where bench/peers.py's 1% read of Position starts), each into one buffer
at every remainder of (destination address - file offset) modulo 64 that
keeps 8-byte alignment, in random order.  Before each read it touches and
frees ``--prime-mib`` MiB of memory (bench/prime.py), which also
flushes the CPU caches.  Every read is checked against the file.  It prints
the lower quartile and median of each remainder in microseconds, the lower
quartile as GB/s (decimal) and as a ratio to the best remainder.

``np.empty`` puts a large array 16 bytes past a page boundary, so a read
from the start of a blob into one lands at remainder 16.  colfile places
the arrays its reads allocate at remainder 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prime import prime_memory  # noqa: E402  (bench/prime.py)

REMAINDERS = list(range(0, 64, 8))


def address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def measure(fd: int, expect: np.ndarray, offset: int, n: int, iters: int,
            prime_bytes: int, seed: int) -> dict[int, list[float]]:
    """{remainder: [microseconds of each read]} for n bytes at offset."""
    buf = np.empty(n + 128, np.uint8)
    buf.fill(1)  # touched: the timing is the copy's, not page faults'
    times: dict[int, list[float]] = {r: [] for r in REMAINDERS}
    rng = np.random.default_rng(seed)
    for _ in range(iters):
        for r in rng.permutation(REMAINDERS):
            k = (offset + int(r) - address(buf)) % 64
            view = buf[k:k + n]
            view.fill(0)
            prime_memory(prime_bytes)
            t0 = time.perf_counter_ns()
            got = os.preadv(fd, [memoryview(view)], offset)
            t1 = time.perf_counter_ns()
            if got != n or not np.array_equal(view, expect[offset:offset + n]):
                raise SystemExit(f"read at {offset} into remainder {r} differs from the file")
            times[int(r)].append((t1 - t0) / 1e3)
    return times


def table(title: str, n: int, times: dict[int, list[float]]) -> None:
    q1 = {r: statistics.quantiles(v, n=4)[0] for r, v in times.items()}
    best = min(q1.values())
    print(f"\n{title}\n")
    print("| (destination - file offset) % 64 | q1 (us) | median (us) | GB/s (q1) | vs best |")
    print("|---|---|---|---|---|")
    for r in REMAINDERS:
        print(f"| {r} | {q1[r]:.0f} | {statistics.median(times[r]):.0f} | "
              f"{n / q1[r] / 1e3:.2f} | {best / q1[r]:.2f}x |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=64, help="file size, MiB (default 64)")
    ap.add_argument("--small-mib", type=int, default=4, help="the short read, MiB (default 4)")
    ap.add_argument("--iters", type=int, default=30, help="reads per remainder (default 30)")
    ap.add_argument("--prime-mib", type=int, default=256,
                    help="memory touched before each read, MiB (default 256)")
    ap.add_argument("--tmpdir", default=None, help="where the file is made")
    args = ap.parse_args(argv)
    if not 0 < args.small_mib < args.mib:
        ap.error("--small-mib must be in 1..--mib - 1")
    work = tempfile.mkdtemp(prefix="colfile-placement-", dir=args.tmpdir)
    try:
        path = os.path.join(work, "blob")
        data = np.random.default_rng(1).integers(0, 256, args.mib << 20, dtype=np.uint8)
        data.tofile(path)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.pread(fd, args.mib << 20, 0)  # into the page cache
            whole = measure(fd, data, 0, args.mib << 20, args.iters, args.prime_mib << 20, 2)
            small_n = args.small_mib << 20
            small_off = ((args.mib - args.small_mib) << 19) // 64 * 64 + 48  # mid-file
            small = measure(fd, data, small_off, small_n, args.iters, args.prime_mib << 20, 3)
        finally:
            os.close(fd)
        print(f"pread of cached bytes into touched memory, {args.iters} reads per remainder, "
              f"{args.prime_mib} MiB touched before each")
        table(f"{args.mib} MiB from offset 0:", args.mib << 20, whole)
        table(f"{args.small_mib} MiB from offset {small_off} (48 modulo 64):", small_n, small)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
