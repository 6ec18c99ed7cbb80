"""Smoke test of bench/peers.py: a --quick run in a temporary directory, with
numpy raw, colfile and whichever peers are importable here.  It checks that
every measurement verified and that the tables are printed; it asserts
nothing about speed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchscript import run_script, table_rows
from childenv import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "peers.py"
PEERS = ("h5py", "zarr", "adios2", "bigfile")


def test_peers_quick(tmp_path: Path, lib: Any) -> None:
    # The peers that are installed, plus ones that are not: those must be
    # skipped with a note, not fail the run.
    present = [p for p in PEERS if importable(p)]
    systems = ["numpy", "colfile", *present]
    # colfile with durable=False / verify=True / deferred=True: skipped with a
    # note by a colfile without those options
    variants = ["colfile-nodurable", "colfile-verify", "colfile-deferred-durable"]
    # the file-system floors of the metadata workload: bare os calls
    floors = ["fs-floor", "fs-floor-ext", "fs-floor-commit"]
    # ... and of the 1% read (its own files, each header read before the rows)
    read_floor = "fs-floor-read"
    # ... and of write + fsync (raw files, write-back started as it goes;
    # once at the end, and column by column)
    fsync_floors = ["fs-floor-fsync", "fs-floor-fsync-percolumn"]
    env = child_env()
    out_json = tmp_path / "peers.json"
    md = tmp_path / "performance.md"
    md.write_text("# Performance\n\nkept\n")
    cmd = [sys.executable, str(SCRIPT), "--quick", "--rows", "4096", "--md-columns", "20",
           "--systems", ",".join([*systems, *variants, *floors, read_floor, *fsync_floors,
                                  *(p for p in PEERS if p not in present)]),
           "--tmpdir", str(tmp_path / "work"), "--cold-method", "fadvise",
           "--json", str(out_json), "--markdown", str(md), "--timeout", "300"]
    text = run_script(cmd, env=env, timeout=900)
    assert "every measurement verified" in text
    assert "| system | write (page cache) | write + fsync | read warm | read cold |" in text
    # one repeat: no quartile to show, an empty cell
    assert "| target | measured (best) | lower quartiles | goal | met |" in text
    assert [ln.split("|")[3].strip() for ln in table_rows(text)
            if ln.startswith("| strided slice vs the fastest peer")] == [""]
    for p in PEERS:
        if p not in present:
            assert f"note: skipping {p}" in text

    res = json.loads(out_json.read_text())
    assert res["failures"] == []
    assert [s for s in res["systems"]
            if s not in [*variants, *floors, read_floor, *fsync_floors]] == systems
    for v in variants:
        assert v in res["systems"] or f"note: skipping {v}" in text
    best = res["best"]
    # numpy and colfile do every snapshot phase; colfile every metadata phase
    for phase in ("write", "write_fsync", "read_warm", "read_cold", "read_out", "rows",
                  "stride", "fancy_sorted", "fancy_unsorted"):
        for s in ("numpy", "colfile"):
            assert best[f"{s}/{phase}"]["verified"] is True
            assert best[f"{s}/{phase}"]["seconds"] > 0
    for phase in ("md_create", "md_read_warm", "md_read_cold"):
        assert best[f"colfile/{phase}"]["verified"] is True
        for f in floors:  # each floor made (and read back) every column
            assert best[f"{f}/{phase}"]["verified"] is True
    for what in ("the file-system floor of bigfile's layout", "plus the file of checksums and statistics",
                 "made as colfile commits"):
        assert what in text
    assert best[f"{read_floor}/rows"]["verified"] is True
    assert best[f"{read_floor}/rows"]["seconds"] > 0
    for phase in ("stride", "md_create"):  # a floor of the 1% read only
        assert f"{read_floor}/{phase}" not in best
    assert "floor of a self-describing read" in text
    for fsync_floor in fsync_floors:
        assert best[f"{fsync_floor}/write_fsync"]["verified"] is True
        for phase in ("write", "read_warm", "rows", "md_create"):  # write + fsync only
            assert f"{fsync_floor}/{phase}" not in best
    assert "floor of a durable write" in text
    assert "| colfile's write + fsync vs that floor |" in text
    assert "| ... each column fsynced before the next is written |" in text
    assert "| colfile's write + fsync vs the column-by-column floor |" in text
    # durable commits in the background: write + fsync only, shown next to
    # colfile's own figure against each peer
    assert best["colfile-deferred-durable/write_fsync"]["verified"] is True
    assert "colfile-deferred-durable/write" not in best
    assert [ln for ln in table_rows(text) if ln.startswith("| write + fsync (durable commits) vs numpy")
            and "(deferred=True: " in ln]
    assert "memcpy/copyto" in best
    assert res["skipped"]["numpy/md_create"]  # raw files have no attributes: n/a

    doc = md.read_text()
    assert doc.startswith("# Performance\n\nkept\n")
    assert "## Peers: snapshot and metadata workloads" in doc
    assert doc.count("<!-- peers:begin -->") == 1 and doc.count("<!-- peers:end -->") == 1
    assert "bench/peers.py --quick" in doc


def load_peers() -> Any:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import peers
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return peers


def target_cells(table: list[str]) -> dict[str, list[str]]:
    """The targets table's rows: first cell -> the other cells, stripped."""
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in table_rows("\n".join(table))]
    return {c[0]: c[1:] for c in cells}


def test_targets_show_lower_quartiles() -> None:
    """The targets table judges on the best repeats and shows the ratio of
    the lower quartiles next to it; a quartile needs four repeats."""
    peers = load_peers()

    def runs(system: str, phase: str, *seconds: float) -> list[dict[str, Any]]:
        return [{"system": system, "phase": phase, "seconds": t, "verified": True}
                for t in seconds]

    assert peers.lower_quartile(runs("a", "w", 5, 1, 4, 2, 3, 9, 8, 7)) == 3
    assert peers.lower_quartile(runs("a", "w", 4, 3, 2, 1)) == 2
    assert peers.lower_quartile(runs("a", "w", 3, 2, 1)) is None
    # unverified repeats do not count
    assert peers.lower_quartile(runs("a", "w", 4, 3, 2) + [{"seconds": 1.0}]) is None

    r = {"args": {"rows": 16},
         "runs": {"numpy/rows": runs("numpy", "rows", 1.0, 2.0, 2.0, 2.0),
                  "h5py/rows": runs("h5py", "rows", 1.5, 1.5, 1.5, 1.5),
                  "colfile/rows": runs("colfile", "rows", 1.25, 1.6, 1.6, 1.6),
                  "fs-floor-read/rows": runs("fs-floor-read", "rows", 2.0, 2.5, 2.5, 2.5),
                  "colfile/stride": runs("colfile", "stride", 1.0, 1.0, 1.0),
                  "numpy/stride": runs("numpy", "stride", 2.0, 2.0, 2.0)}}
    best = {k: min(v, key=lambda x: x["seconds"]) for k, v in r["runs"].items()}

    def get(s: str, p: str) -> Any:
        return best.get(f"{s}/{p}")

    def best_peer(s: str, p: str) -> Any:
        others = [get(o, p) for o in ("numpy", "h5py") if get(o, p)]
        return min(others, key=lambda x: x["seconds"]) if others else None

    table = peers.targets(r, get, best_peer)
    assert "| target | measured (best) | lower quartiles | goal | met |" in table
    rows = target_cells(table)
    # best: numpy 1.0 / colfile 1.25 = 0.80x, missed; the same peer's
    # quartile: 2.0 / 1.6 = 1.25x
    assert rows["1% of rows from the middle vs the fastest peer"] == ["0.80x", "1.25x", "≥ 1.00x", "**no**"]
    # the read floor against the same peer: 1.0 / 2.0 by the best, 2.0 / 2.5
    # by the quartiles, a bound with no goal
    floor = [v for k, v in rows.items() if k.startswith("... the floor of a self-describing read")]
    assert floor == [["0.50x", "0.80x", "(the same read, its layout learnt from the File)", ""]]
    # three repeats: no quartile
    assert rows["strided slice vs the fastest peer"] == ["2.00x", "", "≥ 1.00x", "yes"]
    assert rows["read warm vs numpy raw"] == ["not measured", "", "", ""]


def test_targets_show_the_disks_pace() -> None:
    """Next to write + fsync vs bigfile, the targets table shows the floor of
    a durable write against bigfile and colfile against that floor, as
    bounds (no goal, not judged)."""
    peers = load_peers()

    def one(system: str, seconds: float) -> dict[str, Any]:
        return {"system": system, "phase": "write_fsync", "seconds": seconds, "verified": True}

    r = {"args": {"rows": 16}, "runs": {
        f"{s}/write_fsync": [one(s, t)] * 4
        for s, t in (("bigfile", 4.0), ("colfile", 2.0), ("fs-floor-fsync", 1.6),
                     ("fs-floor-fsync-percolumn", 2.5), ("numpy", 2.5))}}
    best = {k: v[0] for k, v in r["runs"].items()}
    table = peers.targets(r, lambda s, p: best.get(f"{s}/{p}"), lambda s, p: None)
    rows = target_cells(table)
    assert rows["write + fsync (durable commits) vs bigfile"][0] == "2.00x"
    floor = [v for k, v in rows.items() if k.startswith("the floor of a durable write")]
    assert floor == [["2.50x", "2.50x", "(the disk's pace in this run: a goal well above it is out of the disk's reach)", ""]]
    assert rows["colfile's write + fsync vs that floor"][:2] == ["0.80x", "0.80x"]
    # the floor of durable commits: each column fsynced before the next
    floor = [v for k, v in rows.items() if k.startswith("the floor of a write durable column by column")]
    assert floor == [["1.60x", "1.60x", "(the disk's pace for durable commits, colfile's default)", ""]]
    assert rows["colfile's write + fsync vs the column-by-column floor"][:2] == ["1.25x", "1.25x"]
    # without the floors measured, no such rows
    del best["fs-floor-fsync/write_fsync"], best["fs-floor-fsync-percolumn/write_fsync"]
    table = peers.targets(r, lambda s, p: best.get(f"{s}/{p}"), lambda s, p: None)
    assert not [ln for ln in table if "floor of a" in ln or "floor |" in ln]


@pytest.mark.parametrize("cls", ["FsFloorFsync", "FsFloorFsyncPerColumn"])
def test_fsync_floor_writes_every_byte(tmp_path: Path, cls: str) -> None:
    """The durable-write floors' pieces and write-back ranges cover each
    file exactly, whatever their sizes against the column's."""
    import numpy as np

    peers = load_peers()
    floor = getattr(peers, cls)()
    assert floor.per_column == (cls == "FsFloorFsyncPerColumn")
    floor.load()
    floor.piece, floor.kick = 1000, 4500  # many pieces, a ragged tail
    data = peers.make_data(777, 3)
    floor.write(str(tmp_path / "f"), data)
    got = floor.read(str(tmp_path / "f"))
    for name, arr in data.items():
        np.testing.assert_array_equal(got[name], arr)
        assert (tmp_path / "f" / f"{name}.raw").stat().st_size == arr.nbytes


def importable(name: str) -> bool:
    if importlib.util.find_spec(name) is None:
        return False
    proc = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True)
    return proc.returncode == 0


def test_floor_files_carry_bigfiles_sums(tmp_path: Path, lib: Any) -> None:
    """The read floor's files are bigfile's, byte sums included: colfile
    opens them and finds every blob's sum right, and the sum wraps at 32
    bits as colfile's own header records it."""
    import numpy as np

    import colfile

    peers = load_peers()
    floor = tmp_path / "floor"
    data = peers.make_data(4096, 6)
    peers.FsFloorRead().write(str(floor), data)
    with colfile.File(str(floor)) as f:
        for name, arr in data.items():
            np.testing.assert_array_equal(f[name][:], arr)
            assert "SUM_MISMATCH" not in f[name].verify_blob(0)
    # 17 MB of 0xFF: the sum passes 2**32
    big = np.full(17 << 20, 255, np.uint8)
    with colfile.File(str(tmp_path / "c"), "w") as f:
        f.create("b", data=big)
    header = (tmp_path / "c" / "b" / "header").read_text().splitlines()[-1]
    raw, fold = (int(x) for x in header.split(":")[2:4])
    assert 255 * big.size > 2**32
    assert peers.bigfile_sums(big) == (raw, fold)


def test_warm_tree_anew_reads_every_file_back(tmp_path: Path) -> None:
    """``warm_tree(anew=True)`` reads every file below the path into the page
    cache: files whose pages were dropped are cached whole afterwards (a read
    that must not wait for the disk gets every byte), with the bytes written,
    including ones written after the drop and not yet synced."""
    import os

    import numpy as np

    peers = load_peers()

    def cached_bytes(p: Path, n: int) -> tuple[int, bytes]:
        """(bytes readable without waiting for the disk, those bytes)"""
        buf = bytearray(n)
        fd = os.open(p, os.O_RDONLY)
        try:
            got = os.preadv(fd, [buf], 0, os.RWF_NOWAIT)
        except BlockingIOError:  # not even the first page is cached
            got = 0
        finally:
            os.close(fd)
        return got, bytes(buf[:got])

    top = tmp_path / "tree"
    (top / "sub").mkdir(parents=True)
    rng = np.random.default_rng(5)
    want = {top / "a": rng.bytes(3 << 20), top / "sub" / "b": rng.bytes(12345)}
    for p, b in want.items():
        p.write_bytes(b)
    peers.drop_cache(str(top), "fadvise")
    if all(cached_bytes(p, len(b))[0] == len(b) for p, b in want.items()):
        pytest.skip("this file system keeps the pages cached (tmpfs?)")
    # dirty bytes past the first page of a dropped file: warm_tree must not lose them
    fresh = rng.bytes(4096)
    with open(top / "a", "r+b") as fh:
        fh.seek(1 << 20)
        fh.write(fresh)
    a = want[top / "a"]
    want[top / "a"] = a[:1 << 20] + fresh + a[(1 << 20) + 4096:]
    peers.warm_tree(str(top), anew=True)
    for p, b in want.items():
        got, data = cached_bytes(p, len(b))
        assert got == len(b), f"{p}: {got} of {len(b)} bytes cached"
        assert data == b
