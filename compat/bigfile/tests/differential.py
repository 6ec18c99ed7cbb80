"""Differential test: colfile's bigfile drop-in against bigfile 0.1.52 itself.

    differential.py WORK SERIAL_DROPIN MPI_DROPIN MPICC MPIEXEC

Gets bigfile 0.1.52's sdist from PyPI (pip download; kept in
$BIGFILE_SDIST_DIR or WORK/sdist for the next run), builds the original
libbigfile and libbigfile-mpi from its src/, and compiles the test programs
bf_serial.c and bf_mpi.c (beside this file, written against bigfile's API
only) against them.  SERIAL_DROPIN and MPI_DROPIN are the same programs
built against colfile's drop-in.  Then:

- serially, and under mpiexec -n 1, 2, 4: both builds must print the same
  and write the same trees, byte for byte, apart from colfile's extension
  files (colfile-*, .colfile*).  One exception is checked, not ignored:
  bigfile adds every rank's copy of a reopened block's checksums when it
  flushes (the old files' sums come out multiplied by the rank count);
  there the drop-in's sum must be the byte sum of the file's data, and
  bigfile's that sum times the number of ranks;
- cross-reading: each build reads the other's MPI tree with another rank
  count, and both print what the original prints reading its own.

Exit status 77 (CTest: skipped) when the sdist cannot be had (offline).
"""
import os
import shutil
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = "0.1.52"


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240, **kw)
    if p.returncode != 0:
        sys.stderr.write("failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
        sys.exit(1)
    return p.stdout


def sdist(work):
    cache = os.environ.get("BIGFILE_SDIST_DIR") or os.path.join(work, "sdist")
    os.makedirs(cache, exist_ok=True)
    tgz = os.path.join(cache, "bigfile-%s.tar.gz" % VERSION)
    if not os.path.exists(tgz):
        p = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", "bigfile",
                            "bigfile==" + VERSION, "-d", cache], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=600)
        if p.returncode != 0 or not os.path.exists(tgz):
            print("cannot download bigfile %s's sdist from PyPI: skipped\n%s" % (VERSION, p.stdout))
            sys.exit(77)
    src = os.path.join(work, "bigfile-" + VERSION)
    shutil.rmtree(src, ignore_errors=True)
    with tarfile.open(tgz) as t:
        t.extractall(work)
    return os.path.join(src, "src")


def build_original(work, src, mpicc):
    lib = os.path.join(work, "orig-lib")
    os.makedirs(lib, exist_ok=True)
    cflags = ["-O2", "-std=gnu11", "-fPIC", "-w"]
    run([mpicc] + cflags + ["-shared", "-o", os.path.join(lib, "libbigfile.so"),
                            os.path.join(src, "bigfile.c"), os.path.join(src, "bigfile-record.c")])
    run([mpicc] + cflags + ["-shared", "-o", os.path.join(lib, "libbigfile-mpi.so"),
                            os.path.join(src, "bigfile-mpi.c"), os.path.join(src, "mp-mpiu.c"),
                            "-L" + lib, "-lbigfile"])
    exes = {}
    for name, libs in (("bf_serial", ["-lbigfile"]), ("bf_mpi", ["-lbigfile-mpi", "-lbigfile"])):
        exe = os.path.join(work, name + "_orig")
        run([mpicc, "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-I" + src, os.path.join(HERE, name + ".c"),
             "-o", exe, "-L" + lib] + libs + ["-Wl,-rpath," + lib])
        exes[name] = exe
    return exes


def is_extension(name):
    return name.startswith("colfile-") or name.startswith(".colfile")


def tree(root):
    """{relative path: bytes} of every file but colfile's, and the directories."""
    files, dirs = {}, set()
    for d, subdirs, names in os.walk(root):
        subdirs[:] = [s for s in subdirs if not is_extension(s)]
        rel = os.path.relpath(d, root)
        dirs.add(rel)
        for n in names:
            if not is_extension(n):
                with open(os.path.join(d, n), "rb") as f:
                    files[os.path.normpath(os.path.join(rel, n))] = f.read()
    return files, dirs


def header_sums_explained(path, orig, ours, tree_ours, ranks):
    """Headers that differ only in sums bigfile multiplied by the rank count."""
    lo, lc = orig.decode().splitlines(), ours.decode().splitlines()
    if len(lo) != len(lc) or lo[:3] != lc[:3]:
        return False
    block = os.path.dirname(path)
    for a, b in zip(lo[3:], lc[3:]):
        if a == b:
            continue
        fa, fb = [x.split(":") for x in (a, b)]
        if fa[0] != fb[0] or fa[1] != fb[1]:
            return False
        data = tree_ours.get(os.path.normpath(os.path.join(block, fb[0].strip())), b"")
        true_sum = sum(data) & 0xFFFFFFFF
        if int(fb[2]) != true_sum or int(fa[2]) != (true_sum * ranks) & 0xFFFFFFFF:
            return False
    return True


def compare(label, orig_dir, ours_dir, ranks):
    (fo, do), (fc, dc) = tree(orig_dir), tree(ours_dir)
    problems = []
    if do != dc:
        problems.append("directories differ: %s" % sorted(do ^ dc))
    if set(fo) != set(fc):
        problems.append("files differ: %s" % sorted(set(fo) ^ set(fc)))
    for p in sorted(set(fo) & set(fc)):
        if fo[p] == fc[p]:
            continue
        if os.path.basename(p) == "header" and ranks > 1 and header_sums_explained(p, fo[p], fc[p], fc, ranks):
            continue
        problems.append("%s differs:\n--- bigfile\n%r\n--- drop-in\n%r" % (p, fo[p][:400], fc[p][:400]))
    if problems:
        sys.stderr.write("%s: trees differ\n%s\n" % (label, "\n".join(problems)))
        sys.exit(1)
    print("%s: same trees (%d files)" % (label, len(fo)))


def same_output(label, a, b):
    if a != b:
        import difflib
        sys.stderr.write("%s: output differs\n" % label)
        sys.stderr.writelines(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "bigfile", "drop-in"))
        sys.exit(1)


def main():
    work, serial_dropin, mpi_dropin, mpicc, mpiexec = sys.argv[1:6]
    os.makedirs(work, exist_ok=True)
    orig = build_original(work, sdist(work), mpicc)
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)

    a = run([orig["bf_serial"], os.path.join(out, "serial-orig")])
    b = run([serial_dropin, os.path.join(out, "serial-dropin")])
    same_output("serial", a, b)
    compare("serial", os.path.join(out, "serial-orig"), os.path.join(out, "serial-dropin"), 1)

    for n in (1, 2, 4):
        launch = [mpiexec, "-n", str(n)]
        to, tc = os.path.join(out, "mpi%d-orig" % n), os.path.join(out, "mpi%d-dropin" % n)
        a = run(launch + [orig["bf_mpi"], "write", to])
        b = run(launch + [mpi_dropin, "write", tc])
        same_output("mpiexec -n %d write" % n, a, b)
        compare("mpiexec -n %d" % n, to, tc, n)
        m = n % 4 + 1  # another rank count: 1 -> 2, 2 -> 3, 4 -> 1
        reads = [run([mpiexec, "-n", str(m), orig["bf_mpi"], "read", to]),
                 run([mpiexec, "-n", str(m), orig["bf_mpi"], "read", tc]),
                 run([mpiexec, "-n", str(m), mpi_dropin, "read", to]),
                 run([mpiexec, "-n", str(m), mpi_dropin, "read", tc])]
        for i, r in enumerate(reads[1:]):
            same_output("written on %d, read on %d (case %d)" % (n, m, i + 1), reads[0], r)
        print("written on %d ranks, read on %d: the same" % (n, m))


if __name__ == "__main__":
    main()
