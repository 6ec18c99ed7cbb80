"""The colfile demo: write and read a synthetic N-body snapshot on local disk.

Writes a table like a cosmology code's particle output (Position f8x3,
Velocity f4x3, ID i8, Mass f4, plus the attributes BoxSize, Time and
Omega0), reads it back in full and in part, verifies every value, checks
every blob's checksums, and prints the throughput next to plain numpy
``tofile``/``fromfile`` of the same bytes measured in the same run.

Run it with ``./run demo`` (or ``python examples/demo.py --help``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

import colfile

COLUMNS = {
    "Position": ("f8", 3),
    "Velocity": ("f4", 3),
    "ID": ("i8", 1),
    "Mass": ("f4", 1),
}


def make_snapshot(rows: int, box: float, seed: int) -> dict[str, np.ndarray]:
    """Particles on a jittered grid, sorted along x like a real snapshot."""
    rng = np.random.default_rng(seed)
    pos = np.sort(rng.uniform(0, box, size=rows))[:, None] * np.array([1.0, 0.0, 0.0])
    pos[:, 1:] = rng.uniform(0, box, size=(rows, 2))
    return {
        "Position": pos,
        "Velocity": rng.normal(0, 300, size=(rows, 3)).astype("f4"),
        "ID": rng.permutation(rows).astype("i8"),
        "Mass": np.full(rows, 1e10, dtype="f4"),
    }


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def gbps(nbytes: int, seconds: float) -> str:
    return f"{nbytes / seconds / 1e9:6.2f} GB/s" if seconds > 0 else "   inf"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1 << 22, help="particles (default 4Mi: ~150 MB)")
    p.add_argument("--nfile", type=int, default=4, help="blob files per column (default 4)")
    p.add_argument("--dir", default=str(Path(__file__).resolve().parents[1] / "build" / "demo"),
                   help="output directory (default build/demo; the snapshot is kept for inspection)")
    args = p.parse_args(argv)

    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    snap = out / "snapshot"
    raw = out / "numpy-raw"
    shutil.rmtree(raw, ignore_errors=True)
    raw.mkdir()

    data = make_snapshot(args.rows, box=1000.0, seed=42)
    nbytes = sum(a.nbytes for a in data.values())
    print(f"colfile {colfile.__version__}: {args.rows} particles, {nbytes / 1e6:.0f} MB, "
          f"{args.nfile} blobs per column -> {snap}")

    # Baseline: one raw file per column with numpy.
    def numpy_write():
        for name, a in data.items():
            a.tofile(raw / name)

    def numpy_read():
        return {name: np.fromfile(raw / name, dtype=a.dtype).reshape(a.shape) for name, a in data.items()}

    def colfile_write():
        with colfile.File(snap, "w") as f:
            f.attrs["BoxSize"] = 1000.0
            f.attrs["Time"] = 0.5
            f.attrs["Omega0"] = 0.3
            for name, a in data.items():
                dtype, nmemb = COLUMNS[name]
                col = f.create(f"1/{name}", (dtype, nmemb) if nmemb > 1 else dtype,
                               size=args.rows, nfile=args.nfile)
                col[:] = a
                col.close()
            f["1/"].attrs["NumPart"] = args.rows

    def colfile_read():
        with colfile.File(snap, "r") as f:
            return {name: f[f"1/{name}"][:] for name in data}

    _, t_np_w = timed(numpy_write)
    _, t_cf_w = timed(colfile_write)
    back_np, t_np_r = timed(numpy_read)
    back, t_cf_r = timed(colfile_read)

    for name, a in data.items():
        if not np.array_equal(back[name], a) or not np.array_equal(back_np[name], a):
            print(f"MISMATCH in column {name}", file=sys.stderr)
            return 1

    # A partial read: every particle in a thin slab, found through the
    # spatially sorted x coordinate, then their IDs by fancy indexing.
    with colfile.File(snap, "r") as f:
        x, t_x = timed(lambda: f["1/Position"][:, 0])
        sel = np.flatnonzero((x > 500.0) & (x < 510.0))
        ids, t_ids = timed(lambda: f["1/ID"][sel])
        assert np.array_equal(ids, data["ID"][sel])
        # Every blob: size, bigfile byte sum and CRC32C.
        bad = [(name, i, s) for name in f.columns for i in range(f[name].nfile)
               if (s := f[name].verify_blob(i)) != {"OK"}]
        attrs = dict(f.attrs)

    print(f"  write   colfile {gbps(nbytes, t_cf_w)}   numpy raw {gbps(nbytes, t_np_w)}   "
          f"ratio {t_np_w / t_cf_w:.2f}")
    print(f"  read    colfile {gbps(nbytes, t_cf_r)}   numpy raw {gbps(nbytes, t_np_r)}   "
          f"ratio {t_np_r / t_cf_r:.2f}")
    print(f"  slab    {len(sel)} particles with 500 < x < 510: x column in {t_x * 1e3:.1f} ms, "
          f"their IDs in {t_ids * 1e3:.1f} ms")
    print(f"  attrs   {attrs}")
    nblobs = len(data) * args.nfile
    print(f"  check   {'all ' + str(nblobs) + ' blobs intact (size, byte sum, CRC32C)' if not bad else bad}")
    print(f"  verified: every value read back equals what was written. Try: colfile ls -l {snap}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
