"""bigfile 0.1.52 against colfile's drop-in of its C API, side by side.

    python bench/bigfile_c.py --build BUILD [--ranks 1 2 4] [--particles N] [--repeat K] [--dir DIR]

Builds bench/bigfile_c.c twice -- against bigfile 0.1.52 (compiled from
its PyPI sdist, as the differential test does: compat/bigfile/tests/
differential.py) and against the drop-in of the colfile build BUILD --
then, for each rank count, writes and reads the same snapshot (PARTICLES
per rank, 48 bytes each) with: bigfile; the drop-in with bigfile's
durability (no fsync: colfile_bigfile_set_durable(0)); the drop-in with
colfile's durable commits (the default).  Prints the best of K runs as
MB/s and the ratios to bigfile in one table.  The snapshot directory
(default: a new directory under /tmp) should be on the file system the
simulation writes to.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "compat", "bigfile", "tests"))
import differential  # noqa: E402  (the sdist download and build of the original)


def build(work, build_dir, mpicc):
    src = differential.sdist(work)
    lib = os.path.join(work, "orig-lib")
    os.makedirs(lib, exist_ok=True)
    cflags = ["-O2", "-std=gnu11", "-fPIC", "-w"]
    differential.run([mpicc] + cflags + ["-shared", "-o", os.path.join(lib, "libbigfile.so"),
                                         os.path.join(src, "bigfile.c"), os.path.join(src, "bigfile-record.c")])
    differential.run([mpicc] + cflags + ["-shared", "-o", os.path.join(lib, "libbigfile-mpi.so"),
                                         os.path.join(src, "bigfile-mpi.c"), os.path.join(src, "mp-mpiu.c"),
                                         "-L" + lib, "-lbigfile"])
    bench = os.path.join(ROOT, "bench", "bigfile_c.c")
    orig = os.path.join(work, "bigfile_c_orig")
    differential.run([mpicc, "-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-I" + src, bench, "-o", orig,
                      "-L" + lib, "-lbigfile-mpi", "-lbigfile", "-Wl,-rpath," + lib])
    inc = os.path.join(ROOT, "compat", "bigfile", "include", "colfile", "bigfile")
    dropin = os.path.join(work, "bigfile_c_dropin")
    differential.run([mpicc, "-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-DCOLFILE_DROPIN", "-I" + inc, bench,
                      "-o", dropin, "-L" + build_dir, "-lcolfile-bigfile-mpi", "-lcolfile-bigfile", "-lcolfile_mpi",
                      "-lcolfile", "-Wl,-rpath," + build_dir])
    return orig, dropin


def timed(mpiexec, ranks, args):
    out = differential.run([mpiexec, "-n", str(ranks)] + args)
    _, seconds, nbytes = out.split()[-3:]
    return float(seconds), int(nbytes)


def main():
    # MPICH busy-polls with more ranks than cores: let waiting ranks yield
    # (as ./run does; other MPIs ignore these)
    os.environ.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1")
    os.environ.setdefault("MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT", "16")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="colfile build directory (libcolfile-bigfile-mpi.so)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--particles", type=int, default=1_000_000, help="per rank")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where snapshots are written (default: a temporary directory)")
    ap.add_argument("--mpicc", default=os.path.join(os.path.dirname(sys.executable), "mpicc"))
    ap.add_argument("--mpiexec", default=os.path.join(os.path.dirname(sys.executable), "mpiexec"))
    o = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bigfile_c_bench.")
    data = o.dir or os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    orig, dropin = build(work, os.path.abspath(o.build), o.mpicc)
    kinds = [("bigfile 0.1.52", orig, []), ("drop-in, no fsync", dropin, ["nodurable"]),
             ("drop-in, durable", dropin, [])]
    print("snapshot: %d particles per rank, 48 bytes each; best of %d; MB/s (ratio to bigfile)"
          % (o.particles, o.repeat))
    print("| ranks | op | " + " | ".join(k[0] for k in kinds) + " |")
    print("|---|---|" + "---|" * len(kinds))
    for r in o.ranks:
        for op in ("write", "read"):
            rates = []
            for _, exe, extra in kinds:
                best = 0.0
                for _ in range(o.repeat):
                    snap = os.path.join(data, "snap")
                    if op == "write":
                        shutil.rmtree(snap, ignore_errors=True)
                        s, n = timed(o.mpiexec, r, [exe, "write", snap, str(o.particles)] + extra)
                    else:
                        # each library reads the snapshot it wrote itself
                        shutil.rmtree(snap, ignore_errors=True)
                        timed(o.mpiexec, r, [exe, "write", snap, str(o.particles)] + extra)
                        s, n = timed(o.mpiexec, r, [exe, "read", snap])
                    best = max(best, n / s / 1e6)
                rates.append(best)
            cells = ["%.0f" % rates[0]] + ["%.0f (%.2f)" % (x, x / rates[0]) for x in rates[1:]]
            print("| %d | %s | %s |" % (r, op, " | ".join(cells)))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
