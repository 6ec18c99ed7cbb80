"""Benchmark queries that skip chunks, and what computing statistics costs.

    .venv/bin/python bench/query.py [--rows 16777216] [--repeats 5] [--write-repeats 21]
        [--chunk-rows 65536] [--fraction 0.01] [--bins 64] [--dir DIR] [--keep]
        [--callgrind BUILD] [--markdown docs/performance.md]
    .venv/bin/python bench/query.py --scale [options of bench/query_scale.py]

``--scale`` runs bench/query_scale.py instead: spherical cuts on a snapshot in
Morton order at 0.1%, 1% and 10% selectivity, colfile against a full read
with a numpy mask and against ADIOS2's query, warm and cold (see its
docstring).  Without it:

One run, in one process, on one snapshot it writes first:

1. **Snapshot.**  ``--rows`` rows (default 2**24) in group ``1/``:
   ``Position`` (f8 x 3, uniform in a box of side 1000, sorted along x as a
   simulation code that orders its particles spatially writes them), ``ID``
   (i8, a random permutation of 0..rows-1) and ``Mass`` (f4, log-normal),
   written with colfile with ``--chunk-rows`` rows per statistics chunk
   (0: the core's default of about 8 MiB per chunk).
2. **Selective query.**  ``(Position[0] >= a) & (Position[0] < b) & (ID < k)``
   with ``[a, b)`` a random ``--fraction`` (1%) of the x range and ``k`` half
   the IDs, through ``colfile.where`` (string expression), against the plain
   way: read the whole columns from the same File with numpy indexing
   (``col[:]``), mask in numpy, ``np.flatnonzero``.  Reports the bytes the
   query read against the size of the columns of the condition (target: at
   most 2%) and the speedup (target: at least 10x).
3. **Conditional histogram.**  ``colfile.histogram`` of Mass (``--bins`` bins
   over a fixed range) where the same condition holds, against reading
   Position, ID and Mass whole, masking and ``np.histogram``.
4. **Cost of statistics.**  Writing the same three columns (create, write,
   close) with statistics computed (the default) and with them switched off
   (``cf_column_set_statistics(c, 0)``); ratio of the times (target: at most
   1.05).  Twice: into the page cache (the File system is synced before each
   timed write, not during it; the File is opened without the fsyncs of
   each commit), and to disk (the sync that follows the write is timed
   too); then each column alone into the page cache.  The writes
   with and without statistics alternate (``--write-repeats`` of each, which
   goes first alternating too), so a change in the machine's load hits both
   alike; the ratio reported is that of the medians, with the best times and
   the process CPU time (both threads: the writer and the digest helper)
   next to it.  With ``--callgrind BUILD`` the instructions per byte that
   statistics cost are counted too (``bench/stats_cost.py``: exact, whatever
   the load).

The query timings are the best of ``--repeats`` after one warm-up run; the data is
in the page cache (warm), so the plain way is not slowed by a disk.  Every
result is verified against numpy: the rows selected, the histogram counts,
the data written read back, and the statistics written (valid, with the
minimum and maximum of each chunk numpy finds) or not written (unknown).
Exit status 1 if any verification fails (targets missed only get reported).

With ``--markdown`` the table replaces the text between the
``<!-- query:begin -->`` and ``<!-- query:end -->`` markers of that file
(appended as a new section if they are absent), with the command line and
the machine it ran on.  Text between ``<!-- query:notes:begin -->`` and
``<!-- query:notes:end -->`` inside that section is written by hand and
kept.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import os
import resource
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

import colfile
import colfile._ffi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe as describe_machine  # noqa: E402  (bench/machine.py)
from mdsection import replace_section  # noqa: E402  (bench/mdsection.py)
from verify import Failed, failed, finish  # noqa: E402  (bench/verify.py)

BOX = 1000.0
BEGIN, END = "<!-- query:begin -->", "<!-- query:end -->"
NOTES_BEGIN, NOTES_END = "<!-- query:notes:begin -->", "<!-- query:notes:end -->"


# ---------------------------------------------------------------------------
# helpers


def best_of(fn: Callable[[], Any], repeats: int, before: Callable[[], None] | None = None
            ) -> tuple[float, Any]:
    """(best seconds, last result) of ``repeats`` timed runs after one
    warm-up run; ``before()`` runs untimed before each."""
    if before:
        before()
    result = fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        if before:
            before()
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def median(xs: list[float]) -> float:
    v = sorted(xs)
    k = len(v)
    return v[k // 2] if k % 2 else 0.5 * (v[k // 2 - 1] + v[k // 2])


def cells(n: int, adj: str = "") -> str:
    return f"{n} {adj}cell{'s' if n != 1 else ''}"


def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def check(ok: bool, what: str) -> None:
    if not ok:
        raise Failed(what)
    print(f"  verified: {what}", flush=True)


# ---------------------------------------------------------------------------
# the snapshot


def make_data(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0.0, BOX, size=(n, 3))
    pos = pos[np.argsort(pos[:, 0], kind="stable")]   # spatially ordered along x
    ids = rng.permutation(n).astype(np.int64)
    mass = rng.lognormal(mean=0.0, sigma=1.0, size=n).astype(np.float32)
    return {"Position": pos, "ID": ids, "Mass": mass}


def write_snapshot(path: str, data: dict[str, np.ndarray], chunk_rows: int | None,
                   statistics: bool = True, durable: bool = True) -> None:
    """Create, write and close the three columns (the timed unit of step 4);
    ``durable=False``: without the fsyncs of each commit (where colfile has
    them), so that the data stays in the page cache."""
    opts = {} if durable or "durable" not in inspect.signature(colfile.File).parameters \
        else {"durable": False}
    with colfile.File(path, "w", **opts) as f:
        for name, arr in data.items():
            dtype: Any = arr.dtype if arr.ndim == 1 else (arr.dtype, arr.shape[1])
            col = f.create(f"1/{name}", dtype, size=len(arr), chunk_rows=chunk_rows)
            if not statistics:
                colfile._ffi.lib().cf_column_set_statistics(col._handle(), 0)
            col.write(0, arr)
            col.close()


def chunk_bounds_ok(col: Any, arr: np.ndarray) -> bool:
    """Every chunk's statistics are valid, and their min, max and count are
    numpy's for the rows of the chunk."""
    stats = col.chunk_stats()
    stats = stats.reshape(len(stats), -1)
    for k in range(len(stats)):
        r0, nr = int(stats[k, 0]["first_row"]), int(stats[k, 0]["rows"])
        part = arr[r0:r0 + nr].reshape(nr, -1)
        for j in range(stats.shape[1]):
            s = stats[k, j]
            if not (s["valid"] and s["count"] == nr and s["nan_count"] == 0
                    and s["min"] == float(part[:, j].min())
                    and s["max"] == float(part[:, j].max())):
                return False
    return True


# ---------------------------------------------------------------------------


def run(args: argparse.Namespace, argv: list[str]) -> int:
    n = args.rows
    chunk_rows = args.chunk_rows or None
    workdir = Path(tempfile.mkdtemp(prefix="colfile-bench-query-", dir=args.dir))
    snap = str(workdir / "snapshot")
    scratch = str(workdir / "scratch")
    results: dict[str, Any] = {}
    t_start = time.perf_counter()
    try:
        print(f"colfile {colfile.__version__} (libcolfile {colfile.library_version()}); "
              f"{n} rows; data in {workdir}", flush=True)
        t0 = time.perf_counter()
        data = make_data(n, args.seed)
        print(f"generated the data in {time.perf_counter() - t0:.1f} s", flush=True)
        t0 = time.perf_counter()
        write_snapshot(snap, data, chunk_rows)
        print(f"wrote the snapshot in {time.perf_counter() - t0:.1f} s", flush=True)

        pos, ids, mass = data["Position"], data["ID"], data["Mass"]
        rng = np.random.default_rng(args.seed + 1)
        width = args.fraction * BOX
        a = float(rng.uniform(0.0, BOX - width))
        b = a + width
        k = n // 2
        expr = f"(Position[0] >= {a!r}) & (Position[0] < {b!r}) & (ID < {k})"
        want = np.flatnonzero((pos[:, 0] >= a) & (pos[:, 0] < b) & (ids < k))

        f = colfile.File(snap, "r")
        g = f["1/"]
        cpos, cid, cmass = f["1/Position"], f["1/ID"], f["1/Mass"]
        layout = {name: (c.chunk_rows, len(c.chunk_stats(0)), c.nfile)
                  for name, c in (("Position", cpos), ("ID", cid), ("Mass", cmass))}
        for name, (crows, nchunks, nfile) in layout.items():
            print(f"  1/{name}: {nchunks} chunks of {crows} rows, {nfile} blob(s)")
        results["layout"] = layout

        print(f"\n[1] selective query {expr}", flush=True)
        cond_bytes = pos.nbytes + ids.nbytes

        def query() -> Any:
            sel = colfile.where(g, expr)
            return sel, sel.rows

        def plain_query() -> np.ndarray:
            p = cpos[:]
            i = cid[:]
            return np.flatnonzero((p[:, 0] >= a) & (p[:, 0] < b) & (i < k))

        t_q, (sel, rows) = best_of(query, args.repeats)
        t_p, prow = best_of(plain_query, args.repeats)
        rep = sel.report
        print(f"  colfile.where: {t_q:.4f} s; {rep}", flush=True)
        print(f"  plain numpy:   {t_p:.4f} s (reads {mib(cond_bytes)})", flush=True)
        check(np.array_equal(rows, want) and np.array_equal(prow, want),
              f"query selects the {len(want)} rows numpy selects")
        check(rep.bytes_total == cond_bytes, "report counts the bytes of Position and ID")
        results["query"] = {"t": t_q, "t_plain": t_p, "read": rep.bytes_read,
                            "total": rep.bytes_total, "chunks": rep.chunks,
                            "skipped": rep.skipped, "all_match": rep.all_match,
                            "scanned": rep.scanned, "matched": len(want)}

        print("\n[1b] the same query, then reading Mass of the selected rows", flush=True)

        def query_read() -> np.ndarray:
            return colfile.where(g, expr).read("Mass")

        def plain_read() -> np.ndarray:
            p = cpos[:]
            i = cid[:]
            m = cmass[:]
            return m[(p[:, 0] >= a) & (p[:, 0] < b) & (i < k)]

        t_qr, got = best_of(query_read, args.repeats)
        t_pr, pgot = best_of(plain_read, args.repeats)
        print(f"  colfile: {t_qr:.4f} s; plain numpy: {t_pr:.4f} s", flush=True)
        check(np.array_equal(got, mass[want]) and np.array_equal(pgot, mass[want]),
              "Mass of the selected rows equals numpy's")
        results["query_read"] = {"t": t_qr, "t_plain": t_pr}

        if chunk_rows is not None:
            print("\n[1c] the same query on a copy written with the core's default chunks",
                  flush=True)
            other = str(workdir / "default-chunks")
            write_snapshot(other, data, None)
            with colfile.File(other) as fd:
                gd = fd["1/"]
                dlay = {nm: (fd[f"1/{nm}"].chunk_rows, len(fd[f"1/{nm}"].chunk_stats(0)))
                        for nm in ("Position", "ID")}
                t_d, (sel_d, rows_d) = best_of(lambda: (lambda s: (s, s.rows))(
                    colfile.where(gd, expr)), args.repeats)
                rd = sel_d.report
                print(f"  colfile.where: {t_d:.4f} s; {rd}", flush=True)
                check(np.array_equal(rows_d, want), "the same rows again")
            shutil.rmtree(other, ignore_errors=True)
            results["query_default"] = {"t": t_d, "read": rd.bytes_read, "total": rd.bytes_total,
                                        "layout": dlay, "scanned": rd.scanned,
                                        "chunks": rd.chunks}

        print(f"\n[2] histogram of Mass ({args.bins} bins) where the same condition holds",
              flush=True)
        hrange = (0.0, 10.0)
        pred = ((cpos.field(0) >= a) & (cpos.field(0) < b) & (cid.field() < k))

        def hist() -> Any:
            return colfile.histogram(cmass, bins=args.bins, range=hrange, where=pred,
                                     return_report=True)

        def plain_hist() -> Any:
            p = cpos[:]
            i = cid[:]
            m = cmass[:]
            return np.histogram(m[(p[:, 0] >= a) & (p[:, 0] < b) & (i < k)], bins=args.bins,
                                range=hrange)

        t_h, (h, edges, hrep) = best_of(hist, args.repeats)
        t_hp, (hp, ep) = best_of(plain_hist, args.repeats)
        hw, ew = np.histogram(mass[want], bins=args.bins, range=hrange)
        print(f"  colfile.histogram: {t_h:.4f} s; {hrep}", flush=True)
        print(f"  plain numpy:       {t_hp:.4f} s (reads "
              f"{mib(pos.nbytes + ids.nbytes + mass.nbytes)})", flush=True)
        check(np.array_equal(h, hw) and np.array_equal(hp, hw) and np.array_equal(edges, ew),
              f"histogram counts ({int(hw.sum())} values) and edges equal numpy's")
        results["hist"] = {"t": t_h, "t_plain": t_hp, "read": hrep.bytes_read,
                           "total": hrep.bytes_total}
        f.close()

        print("\n[3] writing the three columns with statistics on and off", flush=True)
        nbytes = sum(x.nbytes for x in data.values())
        write_t: dict[str, dict[Any, float]] = {}
        # (label, columns, synced): the whole snapshot into the page cache and
        # to disk, then each column alone into the page cache
        cases: list[tuple[str, list[str], bool]] = [
            ("cache", list(data), False), ("disk", list(data), True),
            *((name, [name], False) for name in data)]
        for label, names, durable in cases:
            part = {nm: data[nm] for nm in names}
            times: dict[bool, list[float]] = {True: [], False: []}
            cpu: dict[bool, list[float]] = {True: [], False: []}

            def timed_write(stats: bool) -> None:
                shutil.rmtree(scratch, ignore_errors=True)
                os.sync()
                gc.collect()
                t0, c0 = time.perf_counter(), time.process_time()
                write_snapshot(scratch, part, chunk_rows, statistics=stats, durable=False)
                if durable:
                    os.sync()
                times[stats].append(time.perf_counter() - t0)
                cpu[stats].append(time.process_time() - c0)

            for stats in (True, False):  # warm-up
                timed_write(stats)
            times, cpu = {True: [], False: []}, {True: [], False: []}
            for r in range(args.write_repeats):  # interleaved, alternating which goes first
                for stats in ((True, False) if r % 2 == 0 else (False, True)):
                    timed_write(stats)
            how = {"cache": "all, to the page cache", "disk": "all, to disk (write + sync)"
                   }.get(label, f"1/{label} alone, to the page cache")
            nb = sum(x.nbytes for x in part.values())
            for stats in (True, False):
                t, b = median(times[stats]), min(times[stats])
                print(f"  {how}, statistics {'on: ' if stats else 'off:'} median {t:.4f} s "
                      f"({nb / t / 1e9:.2f} GB/s), best {b:.4f} s, CPU median "
                      f"{median(cpu[stats]):.4f} s; runs "
                      f"{', '.join(f'{x:.3f}' for x in times[stats])}", flush=True)
            print(f"  {how}: ratio of the medians {median(times[True]) / median(times[False]):.3f}, "
                  f"of the bests {min(times[True]) / min(times[False]):.3f}, of the CPU medians "
                  f"{median(cpu[True]) / median(cpu[False]):.3f}", flush=True)
            write_t[label] = {True: median(times[True]), False: median(times[False]),
                              "best": {s_: min(times[s_]) for s_ in (True, False)},
                              "cpu": {s_: median(cpu[s_]) for s_ in (True, False)},
                              "spread": max(times[False]) - min(times[False])}
        # the last write was with statistics on or off: verify both kinds
        for stats in (False, True):
            shutil.rmtree(scratch, ignore_errors=True)
            write_snapshot(scratch, data, chunk_rows, statistics=stats)
            with colfile.File(scratch) as h5:
                same = all(np.array_equal(h5[f"1/{nm}"][:], arr) for nm, arr in data.items())
                check(same, f"data written with statistics {'on' if stats else 'off'} "
                            "reads back identical")
                if stats:
                    check(all(chunk_bounds_ok(h5[f"1/{nm}"], arr) for nm, arr in data.items()),
                          "statistics written are valid, with numpy's min, max and count "
                          "for every chunk and component")
                else:
                    check(not any(h5[f"1/{nm}"].chunk_stats(0)["valid"].any()
                                  for nm in data),
                          "no statistics were written with statistics off")
        results["write"] = {"bytes": nbytes, "cols": {nm: data[nm].nbytes for nm in data},
                            **write_t}
        if args.callgrind:
            print("\n[4] instructions per byte written, under callgrind (bench/stats_cost.py)",
                  flush=True)
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import stats_cost  # noqa: E402 (bench/stats_cost.py)
            exe = stats_cost.build(Path(args.callgrind).resolve())
            results["callgrind"] = stats_cost.run_callgrind(exe, ["f8x3", "f4x3", "i8", "f4"],
                                                            args.callgrind_mib)
    except Failed as exc:
        return failed(exc)
    finally:
        finish(workdir, args.keep)

    results["elapsed"] = time.perf_counter() - t_start
    results["rss"] = peak_rss()
    section = markdown(args, argv, results, expr, n)
    print()
    print(section)
    if args.markdown:
        update_markdown(Path(args.markdown), section)
        print(f"\nupdated {args.markdown}")
    return 0


def markdown(args: argparse.Namespace, argv: list[str], r: dict[str, Any], expr: str,
             n: int) -> str:
    q, qr, h, w = r["query"], r["query_read"], r["hist"], r["write"]
    qd = r.get("query_default")
    yes = lambda ok: "yes" if ok else "**no**"  # noqa: E731
    frac = q["read"] / q["total"]
    speed = q["t_plain"] / q["t"]
    hspeed = h["t_plain"] / h["t"]
    wc, wd = w["cache"], w["disk"]
    extra = {nm: w[nm][True] - w[nm][False] for nm in w["cols"]}
    worst = max(extra, key=extra.__getitem__)
    ratio = wc[True] / wc[False]

    def wcell(x: dict[Any, Any], on: bool, nbytes: int | None = None) -> str:
        rate = f" ({nbytes / x[on] / 1e9:.2f} GB/s)" if nbytes else ""
        return (f"median {x[on]:.3f} s{rate}, best {x['best'][on]:.3f} s, CPU "
                f"{x['cpu'][on]:.3f} s")

    def wratio(x: dict[Any, Any]) -> str:
        return (f"{x[True] / x[False]:.3f}x the time (medians; bests "
                f"{x['best'][True] / x['best'][False]:.3f}x, CPU {x['cpu'][True] / x['cpu'][False]:.3f}x)")
    lay = r["layout"]
    chunks = ", ".join(f"{name} {nchunks} chunks of {crows} rows"
                       for name, (crows, nchunks, _) in lay.items())
    command = " ".join(shlex.quote(x) for x in argv)
    lines = [
        BEGIN,
        f"Command: `.venv/bin/python bench/query.py{(' ' + command) if command else ''}` "
        f"(queries: best of {args.repeats} after a warm-up; writes: {args.write_repeats} with "
        f"statistics and {args.write_repeats} without, alternating, after a warm-up; "
        f"{r['elapsed']:.0f} s in all, peak RSS {r['rss'] / 2**30:.2f} GiB).",
        f"Machine: {describe_machine()}, numpy {np.__version__}, "
        f"colfile {colfile.__version__}.",
        "",
        f"Snapshot: {n} rows in group `1/`: Position f8x3 sorted along x, ID i8 (random "
        f"permutation), Mass f4; {chunks}; one blob per column; in the page cache. "
        f"Condition: `{expr}` ({q['matched']} rows match).",
        "",
        "| measurement | colfile | plain numpy | colfile vs plain | target | met |",
        "|---|---|---|---|---|---|",
        f"| selective query (row numbers) | {q['t'] * 1e3:.1f} ms; read {mib(q['read'])} of "
        f"{mib(q['total'])} ({100 * frac:.2f}%); {q['chunks']} cells: {q['skipped']} "
        f"skipped, {q['all_match']} all-match, {q['scanned']} scanned | "
        f"{q['t_plain'] * 1e3:.1f} ms; read {mib(q['total'])} | {speed:.1f}x faster | "
        f"≥ 10x, ≤ 2% read | {yes(speed >= 10 and frac <= 0.02)} |",
        *([] if qd is None else [
            f"| the same query, core's default chunks (Position {qd['layout']['Position'][0]}"
            f" rows, ID {qd['layout']['ID'][0]}) | {qd['t'] * 1e3:.1f} ms; read "
            f"{mib(qd['read'])} ({100 * qd['read'] / qd['total']:.2f}%); {qd['chunks']} cells, "
            f"{qd['scanned']} scanned | {q['t_plain'] * 1e3:.1f} ms | "
            f"{q['t_plain'] / qd['t']:.1f}x faster | ≥ 10x, ≤ 2% read | "
            f"{yes(q['t_plain'] / qd['t'] >= 10 and qd['read'] <= 0.02 * qd['total'])} |"]),
        f"| query, then Mass of the selected rows | {qr['t'] * 1e3:.1f} ms | "
        f"{qr['t_plain'] * 1e3:.1f} ms | {qr['t_plain'] / qr['t']:.1f}x faster | | |",
        f"| histogram of Mass ({args.bins} bins) where the condition holds | "
        f"{h['t'] * 1e3:.1f} ms; read {mib(h['read'])} of {mib(h['total'])} | "
        f"{h['t_plain'] * 1e3:.1f} ms | {hspeed:.1f}x faster | | |",
        f"| write Position, ID, Mass ({mib(w['bytes'])}) to the page cache: statistics on "
        f"vs off | {wcell(wc, True, w['bytes'])} | {wcell(wc, False, w['bytes'])} | "
        f"{wratio(wc)} | ≤ 1.05x | {yes(ratio <= 1.05)} |",
        f"| the same, to disk (write + sync): statistics on vs off | "
        f"{wcell(wd, True, w['bytes'])} | {wcell(wd, False, w['bytes'])} | {wratio(wd)} "
        f"| ≤ 1.05x | {yes(wd[True] / wd[False] <= 1.05)} |",
        *(f"| ... 1/{nm} alone ({mib(nb)}, page cache) | {wcell(w[nm], True)} | "
          f"{wcell(w[nm], False)} | {wratio(w[nm])} | | |"
          for nm, nb in w["cols"].items()),
        "",
        f"The query read {100 * frac:.2f}% of the condition's columns: the "
        f"{cells(q['scanned'] + q['all_match'])} whose x range meets [a, b), where Position "
        "and ID are read (ID's statistics cannot decide anything: random IDs span the "
        "whole range in every chunk); Position's statistics skip every other cell. The "
        "plain way reads everything."
        + ("" if qd is None else
           f" The snapshot is written with --chunk-rows {args.chunk_rows}; with the core's "
           f"default chunks (about 8 MiB each) the same slab meets "
           f"{cells(qd['scanned'], 'larger ')} and the query reads {100 * qd['read'] / qd['total']:.2f}% (row above): "
           "smaller chunks skip more precisely, for more statistics to keep "
           "(a few dozen bytes per chunk and component)."),
        "",
        (f"Statistics are computed with the byte sum and CRC32C that every write computes, "
         f"on a helper thread, in one pass over each 2 MiB hand-over while the writing "
         f"thread copies it into the file, so what they cost is the helper's computation "
         f"and, when the helper has no core of its own, the writer's. Into the page cache "
         f"the medians differ by {wc[True] - wc[False]:+.3f} s for {mib(w['bytes'])} "
         f"({100 * (ratio - 1):+.1f}%"
         + ("" if ratio <= 1.05 else ", missing the 5% target")
         + f"; the CPU time of both threads by "
         f"{100 * (wc['cpu'][True] / wc['cpu'][False] - 1):+.1f}%). "
         + (f"Alone, 1/{worst} costs the most extra time ({extra[worst]:+.3f} s of "
            f"{sum(extra.values()):+.3f} s for the three). " if sum(extra.values()) > 0 else "")
         + f"Written to disk (write + sync) the difference is "
         f"{100 * (wd[True] / wd[False] - 1):+.1f}% ({wd[True]:.2f} s against "
         f"{wd[False]:.2f} s; the {args.write_repeats} runs without statistics alone spread "
         f"over {wd['spread']:.2f} s)."),
        *([] if "callgrind" not in r else [
            "",
            f"Instructions per byte written (`--callgrind {args.callgrind}`: "
            f"`bench/stats_cost.py --build {args.callgrind} --mib {args.callgrind_mib}`, "
            "both threads, the kernel's side of pwrite not counted; exact and independent "
            "of the machine's load):",
            "",
            *r["callgrind"]]),
        "",
        "Verified against numpy in the same run: the rows selected, the Mass values read, "
        "the histogram counts and edges, the data written (both ways) read back, and the "
        "statistics written (every chunk valid with numpy's min, max and count; none "
        "with statistics off).",
        END,
    ]
    return "\n".join(lines)


SECTION_HEAD = """## Queries that skip chunks: bench/query.py

`bench/query.py` writes a snapshot, then compares, in the same run, a
selective query and a conditional histogram through `colfile.where` /
`colfile.histogram` (which use the per-chunk statistics to skip data, see
docs/format.md 8.4) with the plain way (read the whole columns from the
same File, mask with numpy), and measures what computing the statistics
costs when writing. Every result is checked against numpy.

"""


def update_markdown(path: Path, section: str) -> None:
    replace_section(path, section, BEGIN, END, SECTION_HEAD, (NOTES_BEGIN, NOTES_END),
                    new_file="# Performance\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--scale" in argv:  # spherical cuts at several selectivities, and ADIOS2
        import query_scale  # noqa: E402  (bench/query_scale.py)
        argv.remove("--scale")
        return query_scale.main(argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="See the module docstring (bench/query.py) for details.")
    p.add_argument("--rows", type=int, default=1 << 24, help="rows of the snapshot (2**24)")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per query measurement (5)")
    p.add_argument("--write-repeats", type=int, default=21,
                   help="timed writes with and without statistics each, alternating (21)")
    p.add_argument("--callgrind", metavar="BUILD",
                   help="also count instructions under callgrind (bench/stats_cost.py), "
                        "against BUILD/libcolfile.a")
    p.add_argument("--callgrind-mib", type=int, default=16,
                   help="MiB per column written under callgrind (16)")
    p.add_argument("--chunk-rows", type=int, default=65536,
                   help="rows per statistics chunk (65536; 0: the core's default)")
    p.add_argument("--fraction", type=float, default=0.01,
                   help="fraction of the x range the query selects (0.01)")
    p.add_argument("--bins", type=int, default=64, help="histogram bins (64)")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--dir", default=None, help="where to write (default $TMPDIR)")
    p.add_argument("--keep", action="store_true", help="keep the files written")
    p.add_argument("--markdown", help="file whose query section to replace")
    args = p.parse_args(argv)
    if (args.rows < 1 or args.repeats < 1 or args.write_repeats < 1 or args.chunk_rows < 0
            or not 0 < args.fraction < 1):
        p.error("--rows, --repeats and --write-repeats must be positive, --chunk-rows not negative, "
                "--fraction in (0, 1)")
    return run(args, argv)


if __name__ == "__main__":
    sys.exit(main())
