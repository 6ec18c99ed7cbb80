"""A snapshot read whole from the disk: colfile against h5py's one contiguous
file, numpy's raw files and the device's own best sequential read, in one
run.

    python bench/cold_snapshot.py [--rows 16777216] [--repeats 7]
        [--readers colfile,colfile-verify,h5py,numpy,dd-direct,dd]
        [--library NAME=PATH ...] [--tmpdir DIR] [--prime BYTES] [--nice -20]
        [--json PATH]

It writes bench/peers.py's snapshot (``--rows`` rows of Position f8 x 3,
Velocity f4 x 3, ID i8, Mass f4) as a colfile File (one blob per column),
as one h5py file (contiguous datasets) and as numpy raw files (one per
column), a copy for each reader (the dd readers read h5py files), fsyncs
them, then runs ``--repeats`` rounds.  Copies of their own, because on a
virtual machine the host may cache the guest's disk: a file read three
times a round (h5py's, by h5py and both dd readers) then comes back from
the host's memory more often than one read once, however the guest's page
cache is dropped.  ``--shared-files`` reads one copy per system instead.  In each round
every reader runs once, in a fresh process, in an order that rotates from
round to round (A B C, B C A, ...): the page cache of the reader's files is
dropped (``fsync`` + ``posix_fadvise(POSIX_FADV_DONTNEED)`` on each file, or
``drop_caches`` as root with ``--cold-method drop_caches``), memory is
primed (bench/prime.py), then the whole snapshot is read into new arrays and
timed, and checked against the data written (untimed).  Readers:

* ``colfile``: ``File(path)`` and ``f[name][:]`` of each column (the
  default read; one library per ``--library``: ``colfile@NAME``);
* ``colfile-verify``: the same with ``File(path, verify=True)`` (every
  blob's CRC32C checked as it is read);
* ``h5py``: one HDF5 file, contiguous datasets, ``f[name][()]``;
* ``numpy``: ``np.fromfile`` of each column's raw file;
* ``dd-direct``: ``dd if=<the h5py file> of=/dev/null bs=16M iflag=direct``:
  the device's best sequential read (no page cache, 16 MiB requests);
* ``dd``: the same without ``iflag=direct`` (cache dropped first): one file
  read in order through the page cache and its read-ahead.

``--library NAME=PATH`` (repeatable) runs the colfile readers once per
library given (``COLFILE_LIBRARY`` of the child), so that two builds of
libcolfile are compared in the same run, interleaved; the last column
pairs each colfile reader with the same reader on the first library, round
by round.  ``--json PATH`` keeps every round's speeds and which files
(relative to the run's directory) each reader read.

It prints, per reader, the median, lower and upper quartile and best of the
rounds in decimal GB/s of the snapshot's bytes (dd: of the file it read),
the median's ratio to h5py's and to ``dd-direct``'s medians, and the median
over rounds of the ratio to h5py and to ``dd-direct`` in the same round
(readers of one round run next to each other, so these ratios are steadier
than the speeds where other work comes and goes).  On a
machine shared with other work the spread is wide: compare medians of many
rounds, and take final figures on a quiet machine.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import child_runs  # noqa: E402  (bench/child_runs.py: the --child calls)
import peers  # noqa: E402  (bench/peers.py: the snapshot, the systems)
from prime import prime_memory  # noqa: E402  (bench/prime.py)

READERS = ["colfile", "colfile-verify", "h5py", "numpy", "dd-direct", "dd"]
SYSTEM = {"colfile": "colfile", "colfile-verify": "colfile-verify", "h5py": "h5py", "numpy": "numpy"}


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """One timed cold read in this process; returns seconds and bytes."""
    import numpy as np

    if spec["nice"]:
        peers.set_priority(spec["nice"])
    reader, path = spec["reader"], spec["path"]
    if reader.startswith("dd"):
        src = os.path.join(path, "snap.h5")
        direct = reader == "dd-direct"
        if not direct:
            peers.drop_cache(path, spec["cold_method"])
        cmd = ["dd", f"if={src}", "of=/dev/null", "bs=16M", *(["iflag=direct"] if direct else [])]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        return {"seconds": time.perf_counter() - t0, "bytes": os.path.getsize(src)}
    peer = peers.PEERS[SYSTEM[reader]]()
    peer.load()
    tiny = path + "-warmup"
    peers.warm_up(peer, "read_cold", tiny, spec["seed"])  # imports and first calls untimed
    peers.drop_cache(path, spec["cold_method"])
    prime_memory(spec["prime"])
    t0 = time.perf_counter()
    got = peer.read(path)
    t = time.perf_counter() - t0
    if not peers.equal(got, peers.make_data(spec["rows"], spec["seed"])):
        raise SystemExit(f"{reader}: the data read differs from the data written")
    del got, np
    return {"seconds": t, "bytes": peers.snapshot_bytes(spec["rows"])}


def write_snapshot(work: str, rows: int, seed: int, labels: dict[str, str], shared: bool) -> dict[str, str]:
    """The files each run label reads: ``labels`` maps a label to the
    system whose files it reads (dd: h5py's).  A copy of its own for every
    label, unless ``shared``: one copy per system."""
    data = peers.make_data(rows, seed)
    paths: dict[str, str] = {}
    written: dict[str, str] = {}
    for label, system in labels.items():
        if shared and system in written:
            paths[label] = written[system]
            continue
        p = os.path.join(work, label.replace("@", "-at-"))
        peers.PEERS[system]().write(p, data)
        peers.fsync_tree(p)
        paths[label] = written[system] = p
    return paths


def main(argv: list[str]) -> int:
    if child_runs.serve_child(argv, child):
        return 0
    p = child_runs.parser(__doc__, 1 << 24, "rows of the snapshot (2**24: 805 MB)")
    p.add_argument("--repeats", type=int, default=7, help="rounds (every reader once per round)")
    p.add_argument("--readers", default=",".join(READERS), help="comma-separated, of: " + ", ".join(READERS))
    p.add_argument("--library", action="append", default=[], metavar="NAME=PATH",
                   help="a libcolfile to run the colfile readers with (repeatable)")
    p.add_argument("--prime", type=int, default=None,
                   help="bytes of memory touched and freed before each read (default 1.25x the snapshot)")
    p.add_argument("--cold-method", choices=["fadvise", "drop_caches"], default="fadvise")
    child_runs.common_options(p)
    p.add_argument("--json", default=None, metavar="PATH", help="write every round's speeds here")
    p.add_argument("--shared-files", action="store_true",
                   help="readers of the same system read the same files (default: a copy each)")
    args = p.parse_args(argv)
    readers = [r for r in args.readers.split(",") if r]
    unknown = [r for r in readers if r not in READERS]
    if unknown or not readers:
        p.error(f"unknown readers {unknown}; choose from {READERS}")
    libs = {}
    for item in args.library:
        name, sep, lib = item.partition("=")
        if not sep or not os.path.exists(lib):
            p.error(f"--library {item!r}: NAME=PATH of an existing libcolfile")
        libs[name] = os.path.abspath(lib)
    runs = []  # (label, reader, library or None)
    for r in readers:
        if r.startswith("colfile") and libs:
            runs += [(f"{r}@{name}", r, lib) for name, lib in libs.items()]
        else:
            runs.append((r, r, None))
    prime = args.prime if args.prime is not None else peers.snapshot_bytes(args.rows) * 5 // 4
    work = tempfile.mkdtemp(prefix="colfile-coldsnap-", dir=args.tmpdir)
    speeds: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    try:
        paths = write_snapshot(work, args.rows, args.seed,
                               {label: SYSTEM.get(reader, "h5py").replace("colfile-verify", "colfile")
                                for label, reader, _ in runs}, args.shared_files)
        for k in range(args.repeats):
            for label, reader, lib in runs[k % len(runs):] + runs[:k % len(runs)]:
                spec = {"reader": reader, "path": paths[label], "rows": args.rows, "seed": args.seed,
                        "prime": prime, "cold_method": args.cold_method, "nice": args.nice}
                env = dict(os.environ, **({"COLFILE_LIBRARY": lib} if lib else {}))
                r = child_runs.run_child(__file__, spec, label, env)
                if r is None:
                    return 1
                speeds[label].append(r["bytes"] / r["seconds"] / 1e9)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {label: statistics.median(v) for label, v in speeds.items()}

    def paired(label: str, ref: str) -> str:
        """The median over rounds of label's speed over ref's in the same
        round: runs next to each other see much the same machine."""
        if ref not in speeds or label == ref:
            return "-"
        return f"{statistics.median(a / b for a, b in zip(speeds[label], speeds[ref])):.2f}"
    print(f"cold read of the whole snapshot ({peers.snapshot_bytes(args.rows) / 1e6:.0f} MB, "
          f"{args.rows} rows), {args.repeats} rounds, readers interleaved, page cache dropped "
          f"({args.cold_method}) and {prime / 1e6:.0f} MB of memory primed before each; decimal GB/s")
    first = next(iter(libs), None)  # the other libraries' colfile readers are paired with its

    def per_library(label: str) -> str:
        reader = label.partition("@")[0]
        return "-" if first is None or "@" not in label else paired(label, f"{reader}@{first}")
    print("| reader | median | q1 | q3 | best | median / h5py's | median / dd-direct's | "
          "per round / h5py | per round / dd-direct | per round / " + (f"@{first}" if first else "-") + " |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, v in speeds.items():
        q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3

        def ratio(ref: str) -> str:
            return f"{med[label] / med[ref]:.2f}" if ref in med else "-"
        print(f"| {label} | {med[label]:.2f} | {q[0]:.2f} | {q[2]:.2f} | {max(v):.2f} | "
              f"{ratio('h5py')} | {ratio('dd-direct')} | {paired(label, 'h5py')} | "
              f"{paired(label, 'dd-direct')} | {per_library(label)} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": args.rows, "cold_method": args.cold_method, "libraries": libs,
                       "files": {label: os.path.relpath(p, work) for label, p in paths.items()},
                       "gbps_per_round": speeds}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
