"""What a small read costs in a fresh process: the fixed cost of opening and
reading, with the CPU caches flushed, for numpy raw, colfile's Python API
and colfile's C API called through cffi alone (the 1% read).

    python bench/cold_reads.py [--rows 1048576] [--read-rows 100]
        [--rounds 4] [--iters 25] [--tmpdir DIR] [--nice -20]

It writes a snapshot (bench/peers.py's columns, ``--rows`` rows) as numpy
raw files and as a colfile File, then runs ``--rounds`` child processes per
reader, interleaved.  Each child warms up on the snapshot once, then
``--iters`` times: touches and frees memory (bench/prime.py's priming, which
also flushes the CPU caches), and times reading ``--read-rows`` rows from
the middle of all four columns into new arrays, File open and close
included.  Every read is checked against the data written.  It prints the
minimum, 10th percentile, lower quartile and median of each reader, in
milliseconds, and each reader's 10th percentile against numpy's.

A small ``--read-rows`` leaves only the fixed cost: the copies are then too
short for the state of the destination memory (faulted in or not, huge
pages or not, which varies from process to process) to matter.  Readers:

* ``numpy``: ``np.fromfile(offset=)``, dtypes given by the benchmark;
* ``colfile``: ``with colfile.File(path) as f: f[name][a:b]``;
* ``colfile-cffi``: the same calls of libcolfile (``cf_file_open``,
  ``cf_column_open``, ``cf_column_read``, the closes) made through
  ``colfile._ffi`` with no Python objects of colfile's: what the core and
  cffi cost without the Python layer.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import child_runs  # noqa: E402  (bench/child_runs.py: the --child calls)
import peers  # noqa: E402  (bench/peers.py: the snapshot, the readers)
from prime import prime_memory  # noqa: E402  (bench/prime.py)

READERS = ["numpy", "colfile", "colfile-cffi"]


def read_cffi(path: str, a: int, b: int) -> dict[str, np.ndarray]:
    """The colfile read through libcolfile's C API alone."""
    from colfile._ffi import ffi, lib

    L = lib()
    fp, cp = ffi.new("cf_file **"), ffi.new("cf_column **")
    err = ffi.new("cf_error *")
    if L.cf_file_open(fp, path.encode(), 0, err) < 0:
        raise RuntimeError(ffi.string(err.message).decode())
    out = {}
    try:
        for name, dt, m in peers.COLUMNS:
            if L.cf_column_open(cp, fp[0], name.encode(), err) < 0:
                raise RuntimeError(ffi.string(err.message).decode())
            arr = np.empty((b - a, m) if m > 1 else (b - a,), dt)
            rc = L.cf_column_read(cp[0], a, b - a, ffi.from_buffer(arr), ffi.NULL,
                                  arr.strides[0], arr.itemsize, err)
            L.cf_column_close(cp[0], ffi.NULL)
            if rc < 0:
                raise RuntimeError(ffi.string(err.message).decode())
            out[name] = arr
    finally:
        L.cf_file_close(fp[0])
    return out


def child(spec: dict[str, Any]) -> list[float]:
    if spec["nice"]:
        peers.set_priority(spec["nice"])
    reader, a, b = spec["reader"], spec["a"], spec["a"] + spec["read_rows"]
    if reader == "numpy":
        raw = peers.NumpyRaw()
        path = spec["numpy"]

        def read() -> dict[str, np.ndarray]:
            return raw.read_sel(path, "rows", slice(a, b))
    else:
        import colfile

        path = spec["colfile"]
        if reader == "colfile":
            def read() -> dict[str, np.ndarray]:
                with colfile.File(path) as f:
                    return {name: f[name][a:b] for name, _, _ in peers.COLUMNS}
        else:
            def read() -> dict[str, np.ndarray]:
                return read_cffi(path, a, b)
    want = {k: v[a:b] for k, v in peers.make_data(spec["rows"], spec["seed"]).items()}
    if not peers.equal(read(), want):  # the warm-up read, checked
        raise SystemExit(f"{reader}: the data read differs from the data written")
    peers.warm_tree(path)
    times = []
    for _ in range(spec["iters"]):
        prime_memory(spec["prime"])
        t0 = time.perf_counter()
        got = read()
        times.append(time.perf_counter() - t0)
        if not peers.equal(got, want):
            raise SystemExit(f"{reader}: the data read differs from the data written")
    return times


def main(argv: list[str]) -> int:
    if child_runs.serve_child(argv, child):
        return 0
    p = child_runs.parser(__doc__, 1 << 20, "rows of the snapshot")
    p.add_argument("--read-rows", type=int, default=100, help="rows each read takes")
    p.add_argument("--rounds", type=int, default=4, help="child processes per reader")
    p.add_argument("--iters", type=int, default=25, help="timed reads per child")
    p.add_argument("--prime", type=int, default=256 << 20,
                   help="bytes touched and freed before each timed read")
    child_runs.common_options(p)
    args = p.parse_args(argv)
    if not 0 < args.read_rows <= args.rows:
        p.error("--read-rows must be in 1..--rows")
    work = tempfile.mkdtemp(prefix="colfile-cold-", dir=args.tmpdir)
    try:
        import colfile

        data = peers.make_data(args.rows, args.seed)
        npath, cpath = os.path.join(work, "numpy"), os.path.join(work, "colfile")
        peers.NumpyRaw().write(npath, data)
        with colfile.File(cpath, "w") as f:
            for name, arr in data.items():
                f.create(name, data=arr)
        del data
        spec = {"rows": args.rows, "read_rows": args.read_rows, "iters": args.iters,
                "prime": args.prime, "seed": args.seed, "nice": args.nice,
                "a": (args.rows - args.read_rows) // 2, "numpy": npath, "colfile": cpath}
        times: dict[str, list[float]] = {r: [] for r in READERS}
        for k in range(args.rounds):
            for reader in (READERS if k % 2 == 0 else READERS[::-1]):
                got = child_runs.run_child(__file__, {**spec, "reader": reader}, reader)
                if got is None:
                    return 1
                times[reader] += got
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.read_rows} rows of each of the 4 columns, File open and close included; "
          f"{args.rounds} x {args.iters} reads each, caches flushed before each (ms)")
    print("| reader | min | p10 | q1 | median | p10 vs numpy |")
    print("|---|---|---|---|---|---|")
    ref = None
    for reader in READERS:
        v = sorted(t * 1e3 for t in times[reader])
        p10 = v[len(v) // 10]
        ref = p10 if reader == "numpy" else ref
        print(f"| {reader} | {v[0]:.3f} | {p10:.3f} | {v[len(v) // 4]:.3f} | "
              f"{statistics.median(v):.3f} | {ref / p10:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
