"""A Lustre-like model of one snapshot column written by P ranks: metadata calls, fsyncs,
files created and extent-lock hand-offs, counted for colfile and bigfile 0.1.52 and
extrapolated to P = 10^5.

    .venv/bin/python bench/lustre_model.py [--ranks 4,8,16,32,64] [--build build/release]
        [--rows-full 10000000] [--scale 1024] [--concurrency 1] [--systems LIST] [--chunk-rows N]
        [--markdown FILE [--label NAME]]

Every rank writes ``rows-full / scale`` rows of f8 x 3 into one column
(bench/lustre_model_write.c: colfile's collective write, throttled,
aggregated and by blob owners, and bigfile 0.1.52's ``big_block_mpi_write``, built from its
sdist), under ``bench/lustre_model.c`` (LD_PRELOAD, benchmark only), which
counts each rank's metadata-server requests and fsyncs and keeps, per file,
one extent lock owned by the last writing process: a write by another
process is a hand-off (a lock cancel) that writes back the previous
owner's dirty bytes.  The counts do not depend on the machine's speed, so
oversubscribed runs (64 ranks on 2 cores) give the same numbers as a
cluster would.

Scaling: colfile's plan (blob bytes, aggregation group bytes) and
bigfile's write buffer are divided by ``scale`` as the rows are, so that a
run has the blob and group layout of the full-size column: ``rows-full``
rows per rank (default 10^7: the 10^12-row column at P = 10^5), one blob
per 256 MiB (colfile's default plan, even split of the rows), and bigfile
with as many blobs as colfile's plan makes.  ``concurrency`` 1 (default)
makes the ranks write one after another in rank order, which is what both
libraries' throttled writes do within one chain of ranks; the counts are
then deterministic and match the model's prediction from the plan (the
``predicted`` column).  With more ranks writing at once, neighbours that
share a blob may interleave their writes: more hand-offs, varying from run
to run.

Each count is fitted over the runs as an exact integer function of P and
the blob count M (the simplest of: constant, a*P, a*M, and those plus a
constant) and evaluated at P = 10^5 with M from the default plan; where no
simple form fits exactly, a least-squares fit a + b*P + c*M is used and
marked "~".  The hand-offs at P = 10^5 are also computed exactly from the
plan (``--rows-full`` rows per rank, the blob boundaries, the writers'
ranges), in the same order.

ADIOS2 BP5 runs only where the installed ``adios2`` is built with MPI
(``adios2.is_built_with_mpi``); otherwise the script says so.
"""

from __future__ import annotations

import argparse
import bisect
import glob
import json
import os
import platform
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "compat" / "bigfile" / "tests"))
from mdsection import replace_section  # noqa: E402  (bench/mdsection.py)

ENV = {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
       "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "16"}
#: colfile's plan (include/colfile_binding.h)
BLOB_BYTES = 256 << 20
GROUP_BYTES = 64 << 20
ROW_BYTES = 24  # f8 x 3
P_FULL = 100_000
#: the per-rank counts of the preload that are metadata-server requests
META = ("open", "create", "close", "mkdir", "rename", "unlink", "rmdir", "stat", "readdir",
        "setattr", "lock", "fsync")
#: struct file_state of bench/lustre_model.c
STATE = struct.Struct("<QQiiqqqqqii14i64s")
SYSTEMS = ("colfile throttled", "colfile aggregated", "colfile blob owners", "colfile aligned",
           "bigfile 0.1.52")


def plan_nfile(total_bytes: int, nranks: int, blob_bytes: int) -> int:
    """cf_plan_nfile."""
    n = -(-total_bytes // blob_bytes)
    return max(1, min(n, nranks, 1 << 24))


def blobs_even(nranks: int, rows: int, nfile: int) -> list[int]:
    """The first row of each blob when the rows are split evenly
    (cf_plan_share: colfile's default, and bigfile's split)."""
    total = nranks * rows
    return [b * total // nfile for b in range(nfile)]


def blobs_by_rank(nranks: int, rows: int, nfile: int) -> list[int]:
    """The first row of each blob with every boundary on a rank boundary
    (cf_plan_blobs_by_rank, for ranks of equal rows)."""
    total, r, row, firsts = nranks * rows, 0, 0, []
    for b in range(nfile):
        firsts.append(row)
        boundary = total if b == nfile - 1 else (b + 1) * total // nfile
        later = nfile - 1 - b
        while True:
            row += rows
            r += 1
            if not (r < nranks and (b == nfile - 1 or
                                    (nranks - r > later and 2 * row + rows <= 2 * boundary))):
                break
    return firsts


def writer_starts(nranks: int, rows: int, group_bytes: int | None,
                  blob_firsts: list[int] | None = None) -> list[int]:
    """The first row of each write, in the order they are made: every
    rank's, (aggregation, cf_plan_groups) every group leader's, or (blob
    owners) every blob's, written whole by its owner."""
    if blob_firsts is not None:
        return list(blob_firsts)
    if group_bytes is None:
        return [r * rows for r in range(nranks)]
    starts, held = [0], 0
    for r in range(nranks):
        if r > 0 and held + rows * ROW_BYTES > group_bytes:
            starts.append(r * rows)
            held = 0
        held += rows * ROW_BYTES
    return starts


def predicted(system: str, nranks: int, rows: int, nfile: int, scale: int) -> dict[str, int]:
    """What the plan says of a write in rank order: the hand-offs and the
    bytes they write back (a writer whose first row is not a blob's first
    row takes the lock of the writer before it, whose rows in that blob are
    dirty), the (writer, blob) pieces K, bigfile's write chunks C (a piece
    cut every 64 MiB / scale), and the most pieces J and chunks JC of one
    writer."""
    firsts = (blobs_by_rank if system.endswith("aligned") else blobs_even)(nranks, rows, nfile)
    group = GROUP_BYTES // scale if system == "colfile aggregated" else None
    starts = writer_starts(nranks, rows, group, firsts if system == "colfile blob owners" else None)
    bounds = set(firsts)
    total = nranks * rows
    chunk_rows = max(1, (64 << 20) // scale // ROW_BYTES)
    out = {"handoffs": 0, "cancelled": 0, "K": 0, "C": 0, "J": 0, "JC": 0}
    for w, s in enumerate(starts):
        e = starts[w + 1] if w + 1 < len(starts) else total
        if w > 0 and s not in bounds:
            out["handoffs"] += 1
            blob_first = firsts[bisect.bisect_right(firsts, s) - 1]
            out["cancelled"] += (s - max(starts[w - 1], blob_first)) * ROW_BYTES
        # the writer's rows cut by the blob boundaries inside them
        cuts = [s] + firsts[bisect.bisect_right(firsts, s):bisect.bisect_left(firsts, e)] + [e]
        chunks = sum(-(-(y - x) // chunk_rows) for x, y in zip(cuts, cuts[1:]))
        out["K"] += len(cuts) - 1
        out["C"] += chunks
        out["J"] = max(out["J"], len(cuts) - 1)
        out["JC"] = max(out["JC"], chunks)
    return out


def build(work: Path, build_dir: Path, mpicc: str, with_bigfile: bool) -> dict[str, Path]:
    """The preload and the writers (bigfile's only if asked for)."""
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    out = {"preload": work / "lustre_model.so", "colfile": work / "write_colfile",
           "bigfile": work / "write_bigfile"}
    src = ROOT / "bench" / "lustre_model_write.c"
    subprocess.run([cc, "-std=c11", "-O2", "-shared", "-fPIC", "-o", str(out["preload"]),
                    str(ROOT / "bench" / "lustre_model.c"), "-ldl", "-lpthread"], check=True)
    subprocess.run([mpicc, "-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L", f"-I{ROOT / 'include'}",
                    str(src), "-o", str(out["colfile"]), f"-L{build_dir}", "-lcolfile_mpi", "-lcolfile",
                    f"-Wl,-rpath,{build_dir}"], check=True)
    if not with_bigfile:
        return out
    import differential  # the sdist of bigfile 0.1.52 (BIGFILE_SDIST_DIR to use a copy)

    bsrc = Path(differential.sdist(str(work)))
    lib = work / "bigfile-lib"
    lib.mkdir()
    flags = ["-O2", "-std=gnu11", "-fPIC", "-w", "-shared"]
    subprocess.run([mpicc, *flags, "-o", str(lib / "libbigfile.so"), str(bsrc / "bigfile.c"),
                    str(bsrc / "bigfile-record.c")], check=True)
    subprocess.run([mpicc, *flags, "-o", str(lib / "libbigfile-mpi.so"), str(bsrc / "bigfile-mpi.c"),
                    str(bsrc / "mp-mpiu.c"), f"-L{lib}", "-lbigfile"], check=True)
    subprocess.run([mpicc, "-O2", "-std=c11", "-DBIGFILE", "-D_POSIX_C_SOURCE=200809L", f"-I{bsrc}",
                    str(src), "-o", str(out["bigfile"]), f"-L{lib}", "-lbigfile-mpi", "-lbigfile",
                    f"-Wl,-rpath,{lib}"], check=True)
    return out


def read_state(path: Path, under: str) -> list[dict[str, Any]]:
    """The preload's per-file lock records of the files under ``under``."""
    data = path.read_bytes()
    files = []
    for i in range(len(data) // STATE.size):
        f = STATE.unpack_from(data, i * STATE.size)
        if not f[2]:
            continue
        name = f[25].split(b"\0")[0].decode(errors="replace")
        files.append({"name": name, "handoffs": f[5], "cancelled": f[6], "writes": f[7],
                      "fsyncs": f[8], "writers": f[9]})
    return files


def run(exe: Path, preload: Path, nranks: int, args: list[str], work: Path,
        mpiexec: str) -> dict[str, Any]:
    """One job under the model: the ranks' counts and the files' locks."""
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=work))
    try:
        data, reports, state = run_dir / "snap", run_dir / "reports", run_dir / "state"
        reports.mkdir()
        env = {**os.environ, **ENV, "LD_PRELOAD": str(preload), "COLFILE_LUSTRE_DIR": str(data),
               "COLFILE_LUSTRE_STATE": str(state), "COLFILE_LUSTRE_REPORT": str(reports)}
        cmd = [mpiexec, "-n", str(nranks), str(exe), str(data), *args]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(f"{shlex.join(cmd)} failed:\n{p.stdout}\n{p.stderr}")
        nfile = int(p.stdout.split("nfile")[-1].split()[0])
        ranks: dict[int, dict[str, int]] = {r: {} for r in range(nranks)}
        for name in glob.glob(str(reports / "*.json")):
            one = json.loads(Path(name).read_text())
            counts = one["counts"]
            into = ranks.setdefault(int(one["rank"]), {})
            for k, v in counts.items():
                into[k] = into.get(k, 0) + int(v)
        files = read_state(state, str(data))
        meta = {r: sum(c.get(k, 0) for k in META) for r, c in ranks.items()}
        busiest = max(meta, key=lambda r: (meta[r], -r))
        return {
            "P": nranks, "M": nfile,
            "metadata": sum(meta.values()),
            "busiest": meta[busiest], "busiest_rank": busiest,
            "others": max((v for r, v in meta.items() if r != 0), default=0),
            "fsync": sum(c.get("fsync", 0) for c in ranks.values()),
            "created": sum(c.get("create", 0) for c in ranks.values()),
            "handoffs": sum(f["handoffs"] for f in files),
            "shared": sum(1 for f in files if f["writers"] > 1),
            "most_writers": max((f["writers"] for f in files), default=0),
            "index_handoffs": sum(f["handoffs"] for f in files if f["name"].endswith("colfile-index-v1")),
            "cancelled": sum(f["cancelled"] for f in files),
        }
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


#: the quantities a count may grow with: ranks P, blobs M, (writer, blob)
#: pieces K, bigfile's write chunks C, and the most pieces J and chunks JC
#: of one writer (see predicted())
VARS = ("1", "P", "M", "K", "C", "J", "JC")


def fit(points: list[tuple[int, ...]]) -> tuple[str, Any]:
    """The simplest exact form count = a (+ b*X (+ c*Y))) with X, Y among
    VARS, integer coefficients first, then eighths, over points (the VARS
    values and the count) that leave at least one point to spare; else a
    least-squares fit a + b*P + c*M marked "~": (text, f)."""
    X = np.array([[1.0, *pt[:-1]] for pt in points])
    y = np.array([float(pt[-1]) for pt in points])
    bases = [[0]] + [[0, i] for i in range(1, len(VARS))] + \
        [[0, i, j] for i in range(1, len(VARS)) for j in range(i + 1, len(VARS))]
    for step in (1, 8):
        for cols in bases:
            if len(points) < len(cols) + 1 or np.linalg.matrix_rank(X[:, cols]) < len(cols):
                continue
            coef, *_ = np.linalg.lstsq(X[:, cols], y, rcond=None)
            rounded = np.round(coef * step) / step
            if np.all(np.abs(X[:, cols] @ rounded - y) < 0.5):
                return text_of(cols, rounded, ""), (cols, rounded)
    cols = [0, 1, 2]
    coef, *_ = np.linalg.lstsq(X[:, cols], y, rcond=None)
    return text_of(cols, coef, "~ "), (cols, coef)


def text_of(cols: list[int], coef: Any, mark: str) -> str:
    terms = []
    for c, a in zip(cols, coef):
        if abs(a) < 1e-9:
            continue
        a_txt = f"{a:.3g}" if abs(a - round(a)) > 1e-9 else str(int(round(a)))
        terms.append(a_txt if VARS[c] == "1" else (VARS[c] if a_txt == "1" else f"{a_txt} {VARS[c]}"))
    return (mark + " + ".join(terms)).replace("+ -", "- ") if terms else "0"


def at(f: Any, values: tuple[float, ...]) -> float:
    cols, coef = f
    return float(sum(a * values[c] for c, a in zip(cols, coef)))


def adios2_note() -> str:
    try:
        import adios2  # noqa: PLC0415  (optional: only to see how it was built)
    except ImportError:
        return "ADIOS2 BP5: not run: adios2 is not installed."
    if not adios2.is_built_with_mpi:
        return (f"ADIOS2 BP5: not run: the installed adios2 {adios2.__version__} is built without "
                "MPI (adios2.is_built_with_mpi is False), so its BP5 engine has no aggregators "
                "to model.")
    return (f"ADIOS2 BP5: adios2 {adios2.__version__} is built with MPI, but this script does "
            "not drive it yet.")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="4,8,16,32,64")
    ap.add_argument("--build", default=str(ROOT / "build" / "release"))
    ap.add_argument("--rows-full", type=int, default=10_000_000, help="rows per rank at full size")
    ap.add_argument("--scale", type=int, default=1024, help="rows and the plan's bytes divided by this")
    ap.add_argument("--concurrency", type=int, default=1, help="ranks writing at once (1: in rank order)")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--chunk-rows", type=int, default=0,
                    help="colfile: rows per statistics chunk (0: the default); few enough make "
                         "more than 2^16 chunks, so that the close goes by chunk owners, each rank "
                         "writing its records into the one chunk-index file, as at full size")
    ap.add_argument("--mpicc", default=str(Path(sys.executable).parent / "mpicc"))
    ap.add_argument("--mpiexec", default=str(Path(sys.executable).parent / "mpiexec"))
    ap.add_argument("--markdown", help="replace this run's section (--label) of this file")
    ap.add_argument("--label", default="lustre-model",
                    help="the section's markers: <!-- LABEL:begin --> ... <!-- LABEL:end -->")
    o = ap.parse_args(argv)
    ranks = [int(x) for x in o.ranks.split(",")]
    systems = o.systems.split(",")
    rows = o.rows_full // o.scale
    work = Path(tempfile.mkdtemp(prefix="lustre-model-"))
    try:
        exe = build(work, Path(o.build).resolve(), o.mpicc, any(s.startswith("bigfile") for s in systems))
        results: dict[str, list[dict[str, Any]]] = {s: [] for s in systems}
        for n in ranks:
            m = plan_nfile(n * rows * ROW_BYTES, n, BLOB_BYTES // o.scale)
            for s in systems:
                if s.startswith("colfile"):
                    args = [str(rows), "_".join(s.split()[1:]), "0", str(o.concurrency), str(o.scale),
                            str(o.chunk_rows)]
                    r = run(exe["colfile"], exe["preload"], n, args, work, o.mpiexec)
                else:
                    args = [str(rows), "-", str(m), str(o.concurrency), str(o.scale)]
                    r = run(exe["bigfile"], exe["preload"], n, args, work, o.mpiexec)
                r["predicted"] = predicted(s, n, rows, r["M"], o.scale)
                results[s].append(r)
                print(s, json.dumps(r), flush=True)
        text = report(o, argv, results, rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(text)
    if o.markdown:
        replace_section(Path(o.markdown), text, f"<!-- {o.label}:begin -->", f"<!-- {o.label}:end -->",
                        new_file="# A Lustre-like model: raw output\n")
    return 0


COUNTS = (("metadata", "metadata calls, all ranks"), ("busiest", "metadata calls, busiest rank"),
          ("others", "metadata calls, busiest rank but 0"), ("fsync", "fsyncs"),
          ("created", "files created"), ("handoffs", "extent-lock hand-offs"),
          ("cancelled", "bytes written back at hand-offs"),
          ("index_handoffs", "hand-offs of the chunk index"))


def report(o: argparse.Namespace, argv: list[str] | None, results: dict[str, list[dict[str, Any]]],
           rows: int) -> str:
    m_full = plan_nfile(P_FULL * o.rows_full * ROW_BYTES, P_FULL, BLOB_BYTES)
    cmd = "bench/lustre_model.py " + " ".join(shlex.quote(a) for a in
                                               (argv if argv is not None else sys.argv[1:]))
    lines = [f"<!-- {o.label}:begin -->",
             f"Command: `.venv/bin/python {cmd.strip()}`; {platform.machine()}, "
             f"{os.cpu_count()} cores (ranks oversubscribed; counts do not depend on speed).",
             f"Each rank writes {rows} rows of f8 x 3 ({rows * ROW_BYTES} bytes) = "
             f"{o.rows_full:,} / {o.scale}; plan bytes / {o.scale}; concurrency {o.concurrency}; "
             + (f"chunk rows {o.chunk_rows}; " if o.chunk_rows else "") +
             "bytes written back are shown at full size (x scale); predicted: from the plan, writers "
             "in rank order.", "",
             "| system | P | blobs M | metadata calls | busiest rank (rank) | busiest but rank 0 | "
             "fsyncs | files created | hand-offs (predicted) | files with 2+ writers | "
             "MB written back at hand-offs (predicted) | most writers of one file | "
             "hand-offs of the chunk index |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s, rs in results.items():
        for r in rs:
            ph = r["predicted"]["handoffs"]
            lines.append(f"| {s} | {r['P']} | {r['M']} | {r['metadata']} | {r['busiest']} "
                         f"({r['busiest_rank']}) | {r['others']} | {r['fsync']} | {r['created']} | "
                         f"{r['handoffs']} ({ph}) | {r['shared']} | "
                         f"{r['cancelled'] * o.scale / 1e6:.1f} "
                         f"({r['predicted']['cancelled'] * o.scale / 1e6:.1f}) | "
                         f"{r['most_writers']} | {r['index_handoffs']} |")
    lines += ["", f"Extrapolated to P = {P_FULL:,} ({o.rows_full:,} rows per rank, M = {m_full:,} "
              "blobs from the default plan; bigfile with the same M; K, C, J, JC from the plan: "
              "the (writer, blob) pieces, bigfile's 64 MiB write chunks, and the most of one "
              "writer):", "",
              "| system | count | fit over the runs | at P = 10^5 |", "|---|---|---|---|"]
    for s, rs in results.items():
        full = predicted(s, P_FULL, o.rows_full, m_full, 1)
        names = VARS[3:]
        for key, label in COUNTS:
            value: float | None
            if key in ("handoffs", "cancelled") and all(r[key] == r["predicted"][key] for r in rs):
                text, value = "the plan's, as measured at every P", float(full[key])
            elif len({r["M"] for r in rs}) == 1 and rs[0]["M"] != m_full:
                # the runs cannot show what grows with the blobs
                text, value = f"not determined: M = {rs[0]['M']} in every run", None
            else:
                pts = [(r["P"], r["M"], *(r["predicted"][v] for v in names), r[key]) for r in rs]
                text, f = fit(pts)
                value = at(f, (1.0, P_FULL, m_full, *(full[v] for v in names)))
            if value is None:
                shown = ""
            elif key == "cancelled":
                if not text.startswith("the plan"):
                    value *= o.scale
                    text += f" (x {o.scale})"
                shown = f"{value / 1e12:.2f} TB"
            else:
                shown = f"{value:,.0f}"
            lines.append(f"| {s} | {label} | {text} | {shown} |")
        lines.append(f"| {s} | the plan's pieces at P = 10^5 | | "
                     + "; ".join(f"{v} = {full[v]:,}" for v in names) + " |")
    lines += ["", adios2_note(), f"<!-- {o.label}:end -->"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
