"""bench/lustre_model.c, the Lustre-like request model, on patterns whose
counts are known: two real processes writing alternating ranges of one
file hand its extent lock over at every turn, and an fsync writes the
owner's dirty bytes back before the next hand-off; and
bench/lustre_model.py's prediction of the hand-offs from a plan."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import lustre_model  # noqa: E402

#: One of two writers: waits for its turn on fd `wait`, writes its range
#: of round i, fsyncs where told, and passes the turn on fd `go`.
CHILD = r"""
import os, sys
path, me, rounds, size, wait, go, sync_round = sys.argv[1:]
me, rounds, size, wait, go, sync_round = map(int, (me, rounds, size, wait, go, sync_round))
fd = None
for i in range(rounds):
    if me == 1 or i > 0:
        assert os.read(wait, 1) == b"t"
    if fd is None:
        fd = os.open(path, os.O_WRONLY | (os.O_CREAT if me == 0 else 0), 0o644)
    os.pwrite(fd, bytes([65 + me]) * size, i * 200 + me * 100)
    if i == sync_round:
        os.fsync(fd)
    if not (me == 1 and i == rounds - 1):
        os.write(go, b"t")
if me == 1:
    os.stat(path)
os.close(fd)
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The preload, built with the C compiler (the test needs one)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("lustre-model") / "lustre_model.so"
    subprocess.run([cc, "-std=c11", "-O2", "-shared", "-fPIC", "-o", str(out),
                    str(ROOT / "bench" / "lustre_model.c"), "-ldl", "-lpthread"], check=True,
                   timeout=120)
    return out


def run_pair(lib: Path, tmp: Path, rounds: int, sizes: tuple[int, int], sync_round: int) -> tuple[
        dict[int, dict[str, int]], list[dict[str, object]]]:
    data, reports, state = tmp / "data", tmp / "reports", tmp / "state"
    data.mkdir()
    reports.mkdir()
    a_to_b, b_to_a = os.pipe(), os.pipe()
    procs = []
    for me, (wait, go) in enumerate(((b_to_a[0], a_to_b[1]), (a_to_b[0], b_to_a[1]))):
        env = {**os.environ, "LD_PRELOAD": str(lib), "COLFILE_LUSTRE_DIR": str(data),
               "COLFILE_LUSTRE_STATE": str(state), "COLFILE_LUSTRE_REPORT": str(reports),
               "COLFILE_LUSTRE_RANK": str(me)}
        args = [str(data / "shared"), str(me), str(rounds), str(sizes[me]), str(wait), str(go),
                str(sync_round if me == 0 else -1)]
        procs.append(subprocess.Popen([sys.executable, "-c", CHILD, *args], env=env,
                                      pass_fds=(wait, go)))
    for fd in (*a_to_b, *b_to_a):
        os.close(fd)
    for p in procs:
        assert p.wait(timeout=120) == 0
    counts = {}
    for name in reports.glob("*.json"):
        one = json.loads(name.read_text())
        counts[one["rank"]] = one["counts"]
    return counts, lustre_model.read_state(state, str(data))


def test_alternating_writers_hand_the_lock_over_every_turn(lib: Path, tmp_path: Path) -> None:
    rounds, sizes = 5, (100, 60)
    counts, files = run_pair(lib, tmp_path, rounds, sizes, sync_round=-1)
    assert sorted(counts) == [0, 1]
    # 2 * rounds writes in turns: every write but the first changes the owner
    assert [f["name"].rsplit("/", 1)[-1] for f in files] == ["shared"]
    f = files[0]
    assert f["writes"] == 2 * rounds and f["writers"] == 2
    assert f["handoffs"] == 2 * rounds - 1
    # each hand-off writes back what the other process wrote in its turn
    assert f["cancelled"] == rounds * sizes[0] + (rounds - 1) * sizes[1]
    # process 1 takes the lock in every round, process 0 in all rounds but the first
    assert counts[1]["handoff"] == rounds and counts[0]["handoff"] == rounds - 1
    assert counts[1]["cancelled_bytes"] == rounds * sizes[0]
    assert counts[0]["cancelled_bytes"] == (rounds - 1) * sizes[1]
    # metadata: process 0 creates the file, process 1 opens and stats it
    assert (counts[0]["create"], counts[0]["open"], counts[0]["close"]) == (1, 0, 1)
    assert (counts[1]["create"], counts[1]["open"], counts[1]["close"]) == (0, 1, 1)
    assert counts[1]["stat"] == 1 and counts[0]["stat"] == 0
    assert counts[0]["write"] == rounds and counts[0]["bytes_written"] == rounds * sizes[0]
    assert counts[0]["fsync"] == counts[1]["fsync"] == 0
    assert (tmp_path / "data" / "shared").read_bytes()[:200] == b"A" * 100 + b"B" * 60 + b"\0" * 40


def test_fsync_writes_back_the_owners_bytes_before_the_hand_off(lib: Path,
                                                               tmp_path: Path) -> None:
    rounds, sizes = 4, (100, 60)
    counts, files = run_pair(lib, tmp_path, rounds, sizes, sync_round=2)
    f = files[0]
    assert f["handoffs"] == 2 * rounds - 1 and f["fsyncs"] == 1
    # round 2's 100 bytes of process 0 were synced: that hand-off cancels nothing dirty
    assert f["cancelled"] == (rounds - 1) * sizes[0] + (rounds - 1) * sizes[1]
    assert counts[0]["fsync"] == 1


def test_predicted_hand_offs_of_plans() -> None:
    # 16 ranks of 9765 rows, 15 blobs split evenly: every rank boundary but
    # none falls inside a blob, so each of ranks 1..15 takes a lock over
    p = lustre_model.predicted("colfile throttled", 16, 9765, 15, 1024)
    assert p["handoffs"] == 15 and p["J"] == 2
    # pieces: 16 ranks, cut by the 14 blob boundaries inside their rows
    assert p["K"] == 30
    # blobs on rank boundaries: one blob holds two ranks whole, one hand-off
    # writing back all of the first rank's rows
    q = lustre_model.predicted("colfile aligned", 16, 9765, 15, 1024)
    assert q["handoffs"] == 1 and q["cancelled"] == 9765 * 24 and q["K"] == 16 and q["J"] == 1
    # as many blobs as ranks: one writer per blob
    r = lustre_model.predicted("colfile throttled", 16, 9765, 16, 1024)
    assert r["handoffs"] == 0 and r["cancelled"] == 0 and r["K"] == 16
    # blob owners: each blob written whole by one process, none taken over
    o = lustre_model.predicted("colfile blob owners", 16, 9765, 15, 1024)
    assert o["handoffs"] == 0 and o["cancelled"] == 0 and o["K"] == 15 and o["J"] == 1
    # the default plan at 10^5 ranks of 10^7 rows of f8 x 3
    m = lustre_model.plan_nfile(100_000 * 10**7 * 24, 100_000, 256 << 20)
    assert m == 89_407
    full = lustre_model.predicted("colfile blob owners", 100_000, 10**7, m, 1)
    assert full["handoffs"] == 0 and full["K"] == m
    assert lustre_model.predicted("colfile throttled", 100_000, 10**7, m, 1)["handoffs"] == 99_999


def test_script_counts_match_the_plan_on_four_ranks(tmp_path: Path) -> None:
    """bench/lustre_model.py on 4 ranks of 7000 rows with the plan's sizes
    / 1024: 3 blobs split evenly (every rank boundary inside a blob: 3
    hand-offs), or aligned to ranks (one blob holds two ranks whole: 1);
    the same even blobs written by their owners: one writer per blob, no
    hand-off."""
    sys.path.insert(0, str(ROOT / "tests" / "python" / "mpi"))
    from mpirun import c_iosim, mpiexec  # noqa: PLC0415  (skips without MPI or a C build)

    mpiexec()
    build = c_iosim().parent
    out = tmp_path / "model.md"
    cmd = [sys.executable, str(ROOT / "bench" / "lustre_model.py"), "--ranks", "4",
           "--rows-full", str(7000 * 1024), "--build", str(build),
           "--systems", "colfile throttled,colfile aligned,colfile blob owners", "--markdown", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in out.read_text().splitlines()
            if line.startswith("| colfile") and line.split(" | ")[1] == "4"}
    # P, M, ..., hand-offs (predicted), files with 2+ writers
    assert rows["colfile throttled"][2] == "3" and rows["colfile throttled"][8] == "3 (3)"
    assert rows["colfile throttled"][9] == "3"
    assert rows["colfile aligned"][8] == "1 (1)" and rows["colfile aligned"][9] == "1"
    # 3 calls (create, fsync, close) per rank and blob it writes, besides rank 0's
    assert rows["colfile aligned"][5] == "3" and rows["colfile throttled"][5] == "6"
    # blob owners: no hand-off, no file with two writers, at most one writer of
    # any file, and 3 calls on any rank but 0 (its one blob)
    owners = rows["colfile blob owners"]
    assert owners[2] == "3" and owners[8] == "0 (0)" and owners[9] == "0"
    assert owners[11] == "1" and owners[5] == "3"
