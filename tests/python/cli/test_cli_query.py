"""colfile query: rows where a condition holds, checked against numpy."""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest

N = 5000


@pytest.fixture
def snap(tmp_path, lib):
    """Spatially ordered positions, random IDs, masses with NaNs, flags,
    names; small statistics chunks so that queries skip."""
    import colfile

    rng = np.random.default_rng(11)
    pos = rng.uniform(0, 100, size=(N, 3))
    pos = pos[np.argsort(pos[:, 0])]
    data = {
        "1/Position": pos,
        "1/ID": rng.permutation(N).astype("i8"),
        "1/Mass": rng.lognormal(size=N).astype(">f4"),
        "1/Flag": rng.random(N) > 0.7,
        "1/Name": np.array([f"p{i}".encode() for i in range(N)], dtype="S6"),
    }
    data["1/Mass"][[3, 100, 4000]] = np.nan
    path = str(tmp_path / "snap")
    with colfile.File(path, "w") as f:
        for name, arr in data.items():
            f.create(name, data=arr, nfile=2, chunk_rows=250)
        f["1/Mass"].attrs["Unit"] = "Msun/h"
        f["1/Position"].attrs["Origin"] = np.array([0.5, 1.5, -2.0])
        f.create("other/Short", data=np.arange(10))
    return path, data


def _csv(out: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(out)))


def test_rows_match_numpy(cli, snap):
    path, d = snap
    pos, ids = d["1/Position"], d["1/ID"]
    status, out, err = cli("query", path, "-g", "1", "(Position[0] > 40) & (Position[0] < 45) "
                           "& (ID < 2500)", "--csv", "--header")
    assert (status, err) == (0, "")
    rows = _csv(out)
    assert rows[0] == ["1/Position[0]", "1/Position[1]", "1/Position[2]", "1/ID"]
    want = np.flatnonzero((pos[:, 0] > 40) & (pos[:, 0] < 45) & (ids < 2500))
    assert len(want) > 10 and len(rows) == len(want) + 1
    got = np.array([[float(x) for x in r] for r in rows[1:]])
    np.testing.assert_array_equal(got[:, :3], pos[want])
    np.testing.assert_array_equal(got[:, 3].astype(np.int64), ids[want])


@pytest.mark.parametrize("expr, numpy", [
    ("Mass > 2", lambda m, i, f, p: m > 2),
    ("Mass != 1", lambda m, i, f, p: m != 1),            # NaN != 1 is True
    ("~(Mass <= 2)", lambda m, i, f, p: ~(m <= 2)),      # NaN: not (False)
    ("(Flag == 1) | (ID < 10)", lambda m, i, f, p: (f == 1) | (i < 10)),
    ("10 <= ID < 20", lambda m, i, f, p: (10 <= i) & (i < 20)),
    ("(Position[2] < 5) & ~(Position[0] >= 50)",
     lambda m, i, f, p: (p[:, 2] < 5) & ~(p[:, 0] >= 50)),
    ("ID > 100000", lambda m, i, f, p: i > 100000),      # nothing
    ("ID >= 0", lambda m, i, f, p: i >= 0),              # everything
])
def test_count_matches_numpy(cli, snap, expr, numpy):
    path, d = snap
    want = int(np.count_nonzero(numpy(d["1/Mass"], d["1/ID"], d["1/Flag"], d["1/Position"])))
    status, out, err = cli("query", path, "--group", "1", expr, "--count")
    assert (status, out, err) == (0, f"{want}\n", "")


def test_columns_text_and_limit(cli, snap):
    path, d = snap
    ids, mass, names = d["1/ID"], d["1/Mass"], d["1/Name"]
    status, out, err = cli("query", path, "-g", "1", "ID < 50", "-c", "Name,ID", "-c", "Mass",
                           "--limit", "7", "--header")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert re.split(r"\s+", lines[0].strip()) == ["Name", "ID", "Mass"]
    want = np.flatnonzero(ids < 50)[:7]
    assert len(lines) == 8
    for line, r in zip(lines[1:], want):
        name, i, m = re.split(r"\s+", line.strip())
        assert name == names[r].decode() and int(i) == ids[r]
        assert m == ("nan" if np.isnan(mass[r]) else str(np.float32(mass[r])))
    # aligned like cat: numbers right-aligned, so every line has the same length
    assert len({len(l) for l in lines}) == 1
    status, out, _ = cli("query", path, "-g", "1", "ID < 50", "-c", "ID", "--limit", "0")
    assert (status, out) == (0, "")
    status, out, _ = cli("query", path, "-g", "1", "ID < 50", "--count", "--limit", "3")
    assert out == "3\n"


def test_pieces_give_the_same_output(cli, snap):
    path, _ = snap
    args = ["query", path, "-g", "1", "(Position[1] < 30) & (Mass > 0.5)", "-c",
            "ID,Position,Mass,Flag"]
    _, whole, _ = cli(*args, "--csv")
    _, pieces, _ = cli(*args, "--csv", "--piece-rows", "7")
    assert whole == pieces and whole.count("\n") > 100


def test_quoted_names_without_group(cli, snap):
    path, d = snap
    status, out, _ = cli("query", path, "('1/ID' < 3) & ('1/Position'[0] >= 0)", "--csv")
    assert status == 0
    rows = _csv(out)
    want = np.flatnonzero(d["1/ID"] < 3)
    assert [int(r[0]) for r in rows] == d["1/ID"][want].tolist()
    assert len(rows[0]) == 4   # default columns: 1/ID, then 1/Position x 3


def test_report(cli, snap):
    path, d = snap
    pos = d["1/Position"]
    status, out, err = cli("query", path, "-g", "1", "(Position[0] >= 10) & (Position[0] < 12)",
                           "--count", "--report")
    want = int(np.count_nonzero((pos[:, 0] >= 10) & (pos[:, 0] < 12)))
    assert status == 0 and out == f"{want}\n"
    lines = err.splitlines()
    assert lines[0] == f"query over 1/Position: {want} of {N} rows match ({100 * want / N:.1f}%)"
    m = re.match(r"  chunks: (\d+) in all, (\d+) skipped \(no match\), (\d+) taken whole "
                 r"\(all match\), (\d+) scanned$", lines[1])
    assert m, lines[1]
    total, skipped, whole, scanned = map(int, m.groups())
    assert total == N // 250 and skipped + whole + scanned == total
    assert skipped >= total - 3 and scanned >= 1
    m = re.match(r"  read:   .* of the condition's columns \((\d+) of (\d+) bytes, "
                 r"([\d.]+)%\)$", lines[2])
    assert m, lines[2]
    read, tot = int(m.group(1)), int(m.group(2))
    assert tot == pos.nbytes and 0 < read <= scanned * 250 * 24
    assert lines[3].startswith("  time:   ") and len(lines) == 4


def test_report_notes_unknown_statistics(cli, tmp_path, lib):
    import bigfile  # the original 0.1.52

    path = str(tmp_path / "bf")
    x = np.arange(1000.0)
    with bigfile.File(path, create=True) as f:
        f.create_from_array("x", x, Nfile=2)
    status, out, err = cli("query", path, "x >= 990", "--report", "--csv")
    assert status == 0 and [float(v) for v in out.split()] == x[990:].tolist()
    assert "2 scanned" in err and "read:   7.8 KiB of 7.8 KiB" in err
    assert "note:   2 of 2 blobs of x have no statistics and were read; 'colfile index' " \
           "computes them" in err
    assert cli("index", "--no-progress", path)[0] == 0
    status, out2, err = cli("query", path, "x >= 990", "--report", "--csv")
    assert out2 == out and "1 skipped" in err and "note" not in err


def test_out_writes_a_new_file(cli, snap, tmp_path):
    import colfile

    path, d = snap
    new = str(tmp_path / "sub")
    status, out, err = cli("query", path, "-g", "1", "(Position[0] < 20) & (Flag == 0)", "-c",
                           "ID,Position,Mass,Name", "--out", new)
    assert (status, err) == (0, "")
    pos, flag = d["1/Position"], d["1/Flag"]
    want = np.flatnonzero((pos[:, 0] < 20) & ~flag)
    assert out == (f"wrote {len(want)} rows of 4 columns (1/ID, 1/Position, 1/Mass, 1/Name) "
                   f"to {new}\n")
    with colfile.File(new) as g:
        assert g.columns == ["1/ID", "1/Mass", "1/Name", "1/Position"]
        for name in ("1/ID", "1/Position", "1/Mass", "1/Name"):
            col = g[name]
            assert col.dtype == d[name].dtype and col.shape == (len(want),) + d[name].shape[1:]
            np.testing.assert_array_equal(col[:], d[name][want])
            assert col.chunk_stats(0)["valid"].all()   # written by colfile: statistics too
        assert g["1/Mass"].attrs["Unit"] == "Msun/h"
        np.testing.assert_array_equal(g["1/Position"].attrs["Origin"], [0.5, 1.5, -2.0])
    # never over an existing File
    status, out, err = cli("query", path, "-g", "1", "ID < 3", "--out", new)
    assert status == 1 and out == "" and err.startswith("colfile: error: ")
    assert "exists" in err and len(err.splitlines()) == 1
    # --limit applies
    new2 = str(tmp_path / "sub2")
    status, out, _ = cli("query", path, "-g", "1", "ID < 100", "--out", new2, "--limit", "5")
    assert status == 0 and out.startswith("wrote 5 rows of 1 column (1/ID)")
    with colfile.File(new2) as g:
        np.testing.assert_array_equal(g["1/ID"][:], d["1/ID"][d["1/ID"] < 100][:5])


def test_no_match(cli, snap):
    path, _ = snap
    status, out, err = cli("query", path, "-g", "1", "ID < -1", "--header", "--csv")
    assert (status, out, err) == (0, "1/ID\n", "")
    status, out, err = cli("query", path, "-g", "1", "ID < -1")
    assert (status, out, err) == (0, "", "")


@pytest.mark.parametrize("args, status, words", [
    (["Mass > 1 & ID < 3"], 2, ["bad expression", "parentheses"]),
    (["Mass.sum() > 1"], 2, ["attribute access (.) is not allowed"]),
    (["Nope > 1"], 2, ["no column 'Nope'"]),
    (["Mass > 1j"], 2, ["not a real number"]),
    (["Mass > 1", "-c", "Nope"], 2, ["no column 'Nope'"]),
    (["Mass > 1", "-c", "../other/Short"], 1, ["bad column name"]),
    (["Mass > 1", "--limit", "-1"], 2, ["--limit"]),
    (["Mass > 1", "--out", "x", "--csv"], 2, ["--out"]),
    (["Mass > 1", "--out", "x", "--count"], 2, ["not allowed"]),
])
def test_errors(cli, snap, args, status, words):
    path, _ = snap
    got, out, err = cli("query", path, "-g", "1", *args)
    assert got == status and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("colfile: error: ")
    for w in words:
        assert w in lines[0]


def test_errors_other(cli, snap, tmp_path):
    path, _ = snap
    status, _, err = cli("query", path, "-g", "nogroup", "ID < 3")
    assert status == 2 and "no group 'nogroup'" in err
    status, _, err = cli("query", path, "('1/ID' < 3)", "-c", "other/Short")
    assert status == 1 and "'other/Short' has 10 rows" in err
    status, _, err = cli("query", str(tmp_path / "none"), "x < 3")
    assert status == 2 and len(err.splitlines()) == 1
