"""Spherical cuts at several selectivities: colfile's selective read against
a full read with a numpy mask, and against ADIOS2's block-statistics query.

    .venv/bin/python bench/query.py --scale [--rows 16777216] [--repeats 7]
        [--chunk-rows 0] [--fractions 0.001,0.01,0.1] [--cache both]
        [--dir DIR] [--keep] [--markdown docs/query.md]

1. **Snapshot.**  ``--rows`` particles (default 2**24) uniform in a box of
   side 1000, in Morton (Z-order) order of their position on a 1024**3
   grid, as simulation codes order particles along a space-filling curve so
   that each chunk of rows covers a compact region: group ``1/`` with
   ``Position`` (f8 x 3), ``ID`` (i8, a random permutation) and ``Mass``
   (f4), ``--chunk-rows`` rows per chunk (0, the default: colfile's default
   chunks, chosen from each column's size).  The same data in an ADIOS2 BP5
   file (when ``import adios2`` works): variables ``x``, ``y``, ``z``
   (f8) and ``Mass`` (f4), one block per ``Put`` of Position's rows per chunk,
   so that ADIOS2 records min and max per block of the same rows (one
   variable per component: ADIOS2's block statistics do not separate the
   components of an array).
2. **Query.**  For each fraction f of ``--fractions``, a sphere whose
   volume is f of the box (centre random, inside the box):
   ``(Position[0]-cx)**2 + (Position[1]-cy)**2 + (Position[2]-cz)**2 < r**2``
   and the Mass of the selected rows.  Five ways, each returning the row
   numbers and the Mass values:

   * **colfile**: ``colfile.where`` (the chunk statistics skip the chunks
     outside the sphere by interval arithmetic) then ``sel["Mass"]``;
   * **no hints**: the same without announcing the reads to the kernel
     (``colfile._fetch`` switched off: the kernel's read-ahead alone);
   * **chunks only**: the same planned from the chunk records alone, the
     fine level of the chunk index (min and max per sub-chunk) unused, as
     for an index written without one;
   * **full read**: ``Position[:]`` and ``Mass[:]`` read whole from the
     same File, the mask computed with numpy;
   * **adios2**: ADIOS2's query API (``adios2.bindings.Query``, an XML
     query per coordinate) on the sphere's bounding box
     ``cx - r < x < cx + r`` and the same for y and z -- ADIOS2 compares
     value ranges with block min/max and cannot express the sphere; the
     blocks of the three queries are intersected in Python (its composite
     ``AND`` of several variables is not reliable in 2.12) -- then ``x``,
     ``y``, ``z`` and ``Mass`` of those blocks read with deferred ``Get``s
     and masked with numpy.

   Every way's rows and Mass values are checked equal to numpy's on the
   data in memory (exit status 1 otherwise).
3. **Timing.**  ``--repeats`` rounds after a warm-up, the ways interleaved
   in each round (the order rotating from round to round), each opening
   its file afresh; medians and the ratios of the medians.  ``--cache``:
   ``warm`` (the files in the page cache), ``cold`` (every file of both
   snapshots dropped from the page cache before each timed run, with
   ``posix_fadvise(POSIX_FADV_DONTNEED)`` after an fsync: no root
   needed), or ``both``.  Cold runs also report the bytes the process read
   from disk (``/proc/self/io`` read_bytes) against the bytes of the
   columns used (Position and Mass).

The table is printed; with ``--markdown FILE`` it replaces the text between
the ``<!-- query-scale:begin -->`` and ``<!-- query-scale:end -->`` markers
of FILE (appended with a heading when they are absent).
"""

from __future__ import annotations

import argparse
import gc
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import colfile
from colfile import chunkindex
from colfile.cli import main as colfile_cli

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe as describe_machine  # noqa: E402  (bench/machine.py)
from mdsection import replace_section  # noqa: E402  (bench/mdsection.py)
from pagecache import drop_cache, read_bytes  # noqa: E402  (bench/pagecache.py)
from verify import Failed, failed, finish  # noqa: E402  (bench/verify.py)

BOX = 1000.0
BEGIN, END = "<!-- query-scale:begin -->", "<!-- query-scale:end -->"
HEAD = "## Measured: spherical cuts (bench/query.py --scale)\n\n"


# ---------------------------------------------------------------------------
# data


def morton_keys(pos: np.ndarray, bits: int = 10) -> np.ndarray:
    """Z-order keys of positions in [0, BOX)**3 on a (2**bits)**3 grid."""
    cells = np.clip((pos / BOX * (1 << bits)).astype(np.int64), 0, (1 << bits) - 1)
    key = np.zeros(len(pos), np.int64)
    for b in range(bits):
        for d in range(3):
            key |= ((cells[:, d] >> b) & 1) << (3 * b + d)
    return key


def make_data(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0.0, BOX, size=(n, 3))
    pos = pos[np.argsort(morton_keys(pos), kind="stable")]
    return {"Position": pos, "ID": rng.permutation(n).astype(np.int64),
            "Mass": rng.lognormal(0.0, 1.0, n).astype(np.float32)}


def write_colfile(path: str, data: dict[str, np.ndarray], chunk_rows: int) -> None:
    with colfile.File(path, "w") as f:
        for name, arr in data.items():
            f.create(f"1/{name}", data=arr, **({"chunk_rows": chunk_rows} if chunk_rows else {}))
    # the chunk index's fine level comes from `colfile index` (writes leave none)
    if colfile_cli(["index", "-q", path]) != 0:
        raise SystemExit(f"colfile index {path} failed")


def adios2_module() -> Any:
    try:
        import adios2.bindings as ab
    except ImportError:
        return None
    return ab


def write_adios(ab: Any, path: str, data: dict[str, np.ndarray], chunk_rows: int) -> None:
    pos, mass = data["Position"], data["Mass"]
    arrays = {"x": np.ascontiguousarray(pos[:, 0]), "y": np.ascontiguousarray(pos[:, 1]),
              "z": np.ascontiguousarray(pos[:, 2]), "Mass": mass}
    n = len(mass)
    ad = ab.ADIOS()
    io = ad.DeclareIO("write")
    io.SetEngine("BP5")
    b0 = min(chunk_rows, n)
    var = {k: io.DefineVariable(k, a[:b0], [n], [0], [b0]) for k, a in arrays.items()}
    eng = io.Open(path, ab.Mode.Write)
    eng.BeginStep()
    for k, a in arrays.items():
        for s in range(0, n, chunk_rows):
            e = min(n, s + chunk_rows)
            var[k].SetSelection([[s], [e - s]])
            eng.Put(var[k], a[s:e], ab.Mode.Sync)  # one block, with its min and max
    eng.EndStep()
    eng.Close()


def sphere(fraction: float, rng: np.random.Generator) -> tuple[list[float], float]:
    """A centre (Python floats: they are written into the expression with
    repr, as the same doubles numpy uses) and a radius."""
    r = float((3.0 * fraction * BOX**3 / (4.0 * np.pi)) ** (1.0 / 3.0))
    return [float(v) for v in rng.uniform(r, BOX - r, 3)], r


# ---------------------------------------------------------------------------
# the ways


def way_colfile(snap: str, c: list[float], r: float) -> tuple[np.ndarray, np.ndarray, Any]:
    with colfile.File(snap) as f:
        expr = (f"(Position[0] - {c[0]!r})**2 + (Position[1] - {c[1]!r})**2 + "
                f"(Position[2] - {c[2]!r})**2 < {r * r!r}")
        sel = colfile.where(f["1/"], expr)
        return sel.rows, sel["Mass"], sel.report


def way_colfile_unhinted(snap: str, c: list[float], r: float
                         ) -> tuple[np.ndarray, np.ndarray, Any]:
    """As way_colfile, without announcing the reads to the kernel (its own
    read-ahead only): what colfile._fetch changes."""
    from colfile import _fetch
    saved = _fetch._WILLNEED
    _fetch._WILLNEED = None
    try:
        return way_colfile(snap, c, r)
    finally:
        _fetch._WILLNEED = saved


def way_colfile_chunks(snap: str, c: list[float], r: float
                       ) -> tuple[np.ndarray, np.ndarray, Any]:
    """As way_colfile, planned from the chunk records alone (the fine level
    of the chunk index unused, as for an index written without one)."""
    saved = chunkindex.count

    def count(col: Any, level: int) -> int:
        return 0 if level == chunkindex.FINE_LEVEL else saved(col, level)
    chunkindex.count = count  # type: ignore[assignment]
    try:
        return way_colfile(snap, c, r)
    finally:
        chunkindex.count = saved  # type: ignore[assignment]


def way_full(snap: str, c: list[float], r: float) -> tuple[np.ndarray, np.ndarray, Any]:
    with colfile.File(snap) as f:
        p = f["1/Position"][:]
        m = f["1/Mass"][:]
    mask = (p[:, 0] - c[0])**2 + (p[:, 1] - c[1])**2 + (p[:, 2] - c[2])**2 < r * r
    return np.flatnonzero(mask), m[mask], None


def adios_query_xml(io_name: str, var: str, lo: float, hi: float) -> str:
    """ADIOS2's XML query for ``lo < var < hi``."""
    return (f'<?xml version="1.0"?><adios-query><io name="{io_name}">'
            f'<var name="{var}"><op value="AND"><range compare="GT" value="{lo!r}"/>'
            f'<range compare="LT" value="{hi!r}"/></op></var></io></adios-query>')


class AdiosWay:
    def __init__(self, ab: Any, path: str, workdir: str) -> None:
        self.ab, self.path, self.workdir = ab, path, workdir
        self.ad = ab.ADIOS()
        self.n = 0

    def __call__(self, c: list[float], r: float) -> tuple[np.ndarray, np.ndarray, Any]:
        ab = self.ab
        self.n += 1
        name = f"read{self.n}"
        io = self.ad.DeclareIO(name)
        io.SetEngine("BP5")
        eng = io.Open(self.path, ab.Mode.ReadRandomAccess)
        try:
            # one query per coordinate, the blocks they return intersected
            # here (ADIOS2 2.12's composite AND of tags returned no block
            # for two identical one-block hits, and crashed on three)
            hits = None
            for d, v in enumerate("xyz"):
                qfile = os.path.join(self.workdir, f"query-{v}.xml")
                with open(qfile, "w") as fh:
                    fh.write(adios_query_xml(name, v, c[d] - r, c[d] + r))
                got = {(int(s[0]), int(k[0])) for s, k in ab.Query(qfile, eng).GetResult()}
                hits = got if hits is None else hits & got
            boxes = sorted(hits or ())
            bufs: dict[str, list[np.ndarray]] = {v: [] for v in ("x", "y", "z", "Mass")}
            for v in bufs:
                var = io.InquireVariable(v)
                dt = np.float32 if v == "Mass" else np.float64
                for s, k in boxes:
                    out = np.empty(k, dt)
                    var.SetSelection([[s], [k]])
                    eng.Get(var, out, ab.Mode.Deferred)
                    bufs[v].append(out)
            eng.PerformGets()
        finally:
            eng.Close()
            self.ad.RemoveIO(name)
        cat = {v: np.concatenate(b) if b else np.zeros(0) for v, b in bufs.items()}
        rows = np.concatenate([np.arange(s, s + k) for s, k in boxes]) if boxes else \
            np.zeros(0, np.int64)
        mask = (cat["x"] - c[0])**2 + (cat["y"] - c[1])**2 + (cat["z"] - c[2])**2 < r * r
        return rows[mask], cat["Mass"][mask], len(boxes)


# ---------------------------------------------------------------------------
# measuring


def median(xs: list[float]) -> float:
    v = sorted(xs)
    k = len(v)
    return v[k // 2] if k % 2 else 0.5 * (v[k // 2 - 1] + v[k // 2])


def interleaved(ways: dict[str, Callable[[], Any]], repeats: int,
                before: Callable[[], None] | None) -> dict[str, dict[str, Any]]:
    """Each way once as a warm-up, then ``repeats`` rounds of all of them,
    the order rotating; seconds and bytes read from disk per run."""
    names = list(ways)
    out: dict[str, dict[str, Any]] = {k: {"t": [], "disk": [], "result": None} for k in names}
    for k in names:
        if before:
            before()
        out[k]["result"] = ways[k]()
    for rnd in range(repeats):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for k in order:
            if before:
                before()
            gc.collect()
            d0 = read_bytes(-1)
            t0 = time.perf_counter()
            ways[k]()
            out[k]["t"].append(time.perf_counter() - t0)
            out[k]["disk"].append(read_bytes(-1) - d0)
    return out


def run(args: argparse.Namespace, argv: list[str]) -> int:
    n, cr = args.rows, args.chunk_rows
    fractions = [float(x) for x in args.fractions.split(",")]
    caches = ["warm", "cold"] if args.cache == "both" else [args.cache]
    ab = adios2_module()
    workdir = tempfile.mkdtemp(prefix="colfile-bench-query-scale-", dir=args.dir)
    snap = os.path.join(workdir, "snapshot")
    bp = os.path.join(workdir, "snapshot.bp")
    rows_out: list[dict[str, Any]] = []
    try:
        print(f"colfile {colfile.__version__}; {n} rows, {cr or 'default'} rows per chunk; data in {workdir}; "
              f"adios2 {'not installed' if ab is None else 'BP5'}", flush=True)
        data = make_data(n, args.seed)
        write_colfile(snap, data, cr)
        with colfile.File(snap) as f:
            cr = args.chunk_rows_used = f["1/Position"].chunk_rows
            pos_col = f["1/Position"]
            nfine = chunkindex.count(pos_col, chunkindex.FINE_LEVEL)
            nch = chunkindex.count(pos_col, 0)
            args.fine_rows_used = -(-cr // (nfine // nch)) if nfine and nch else 0
        print(f"Position: {cr} rows per chunk, {nfine} sub-chunks in the fine level", flush=True)
        if ab is not None:
            write_adios(ab, bp, data, cr)
        pos, mass = data["Position"], data["Mass"]
        used = pos.nbytes + mass.nbytes
        adios = AdiosWay(ab, bp, workdir) if ab is not None else None
        rng = np.random.default_rng(args.seed + 1)
        for frac in fractions:
            c, r = sphere(frac, rng)
            want = (pos[:, 0] - c[0])**2 + (pos[:, 1] - c[1])**2 + (pos[:, 2] - c[2])**2 < r * r
            rows_w, mass_w = np.flatnonzero(want), mass[want]
            ways: dict[str, Callable[[], Any]] = {
                "colfile": lambda c=c, r=r: way_colfile(snap, c, r),
                "no hints": lambda c=c, r=r: way_colfile_unhinted(snap, c, r),
                "chunks only": lambda c=c, r=r: way_colfile_chunks(snap, c, r),
                "full read": lambda c=c, r=r: way_full(snap, c, r)}
            if adios is not None:
                ways["adios2"] = lambda c=c, r=r, a=adios: a(c, r)
            for cache in caches:
                if cache == "cold":
                    def before() -> None:
                        drop_cache(workdir)
                else:
                    before = None  # type: ignore[assignment]
                print(f"\nsphere of {100 * frac:g}% of the box (r = {r:.1f}), {cache}: "
                      f"{len(rows_w)} rows", flush=True)
                res = interleaved(ways, args.repeats, before)
                for k, v in res.items():
                    got_rows, got_mass, extra = v["result"]
                    if not (np.array_equal(got_rows, rows_w) and np.array_equal(got_mass, mass_w)):
                        raise Failed(f"{k}: the rows or Mass of the sphere of {frac} differ "
                                     f"from numpy's")
                    t = median(v["t"])
                    disk = median([float(x) for x in v["disk"]])
                    note = ""
                    if k in ("colfile", "no hints", "chunks only"):
                        note = (f"; {extra.scanned + extra.all_match} of {extra.chunks} cells read, "
                                f"{100 * extra.bytes_read / max(extra.bytes_total, 1):.2f}% of "
                                "Position")
                    elif k == "adios2":
                        note = f"; {extra} blocks returned by the query"
                    print(f"  {k:9s} median {t * 1e3:9.2f} ms; runs "
                          f"{', '.join(f'{x * 1e3:.1f}' for x in v['t'])}"
                          + (f"; from disk {100 * disk / used:.2f}% of Position+Mass"
                             if cache == "cold" else "") + note, flush=True)
                    v["median"], v["disk_median"], v["note"] = t, disk, note
                print("  verified: every way's rows and Mass equal numpy's", flush=True)
                rows_out.append({"frac": frac, "cache": cache, "selected": len(rows_w),
                                 "res": res})
    except Failed as exc:
        return failed(exc)
    finally:
        finish(workdir, args.keep)
    section = markdown(args, argv, rows_out, n, ab is not None, used)
    print()
    print(section)
    if args.markdown:
        replace_section(Path(args.markdown), section, BEGIN, END, HEAD)
        print(f"\nupdated {args.markdown}")
    return 0


def markdown(args: argparse.Namespace, argv: list[str], rows: list[dict[str, Any]], n: int,
             has_adios: bool, used: int) -> str:
    command = " ".join(shlex.quote(x) for x in argv)
    default = "" if args.chunk_rows else " (colfile's default)"
    head = ("| sphere | cache | rows selected | colfile | colfile without hints | "
            "colfile, chunk records only | full read + numpy | full / colfile |")
    sep = "|---|---|---|---|---|---|---|---|"
    if has_adios:
        head += " adios2 query | adios2 / colfile |"
        sep += "---|---|"
    lines = [BEGIN,
             f"Command: `.venv/bin/python bench/query.py --scale {command}` (medians of "
             f"{args.repeats} interleaved rounds after a warm-up).",
             f"Machine: {describe_machine()}, numpy {np.__version__}, colfile "
             f"{colfile.__version__}.",
             "",
             f"{n} particles in Morton order, {args.chunk_rows_used} rows per chunk of Position"
             f"{default} ({args.fine_rows_used or 'no'} rows per sub-chunk of its chunk index's fine "
             "level; \"chunk records only\": planned without it); the sphere's "
             "Mass values are read with the rows (all ways checked equal to numpy's). Cold: "
             "every file dropped from the page cache before each run; \"disk\" is what the "
             "process read from disk, in % of Position and Mass.",
             "", head, sep]
    for row in rows:
        res = row["res"]
        cold = row["cache"] == "cold"

        def cell(k: str) -> str:
            v = res[k]
            s = f"{v['median'] * 1e3:.1f} ms"
            return s + (f", disk {100 * v['disk_median'] / used:.2f}%" if cold else "")
        t0 = res["colfile"]["median"]
        line = (f"| {100 * row['frac']:g}% | {row['cache']} | {row['selected']} | "
                f"{cell('colfile')} | {cell('no hints')} | {cell('chunks only')} | {cell('full read')} | "
                f"{res['full read']['median'] / t0:.1f}x |")
        if has_adios:
            line += f" {cell('adios2')} | {res['adios2']['median'] / t0:.2f}x |"
        lines.append(line)
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="bench/query.py --scale",
                                description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1 << 24, help="particles (2**24)")
    p.add_argument("--repeats", type=int, default=7, help="timed rounds (7)")
    p.add_argument("--chunk-rows", type=int, default=0,
                   help="rows per chunk (0: colfile's default for each column)")
    p.add_argument("--fractions", default="0.001,0.01,0.1",
                   help="volume fractions of the spheres (0.001,0.01,0.1)")
    p.add_argument("--cache", choices=["warm", "cold", "both"], default="both")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--dir", default=None, help="where to write (default $TMPDIR)")
    p.add_argument("--keep", action="store_true", help="keep the files written")
    p.add_argument("--markdown", help="file whose query-scale section to replace")
    args = p.parse_args(argv)
    try:
        fr = [float(x) for x in args.fractions.split(",")]
    except ValueError:
        fr = []
    if args.rows < 1 or args.repeats < 1 or args.chunk_rows < 0 or not fr or \
            not all(0 < x < 0.5 for x in fr):
        p.error("--rows and --repeats must be positive, --chunk-rows not negative, --fractions a "
                "comma-separated list of numbers in (0, 0.5)")
    return run(args, argv)


if __name__ == "__main__":
    sys.exit(main())
