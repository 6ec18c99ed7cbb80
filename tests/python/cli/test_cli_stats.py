"""colfile stats: per-chunk and per-blob statistics, and unknown ones."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest


def _write(path, lib, **columns):
    """Write columns: name=(array, nfile, chunk_rows)."""
    import colfile

    with colfile.File(path, "w") as f:
        for name, (arr, nfile, crows) in columns.items():
            f.create(name, data=arr, nfile=nfile, chunk_rows=crows)
    return str(path)


def _json(cli, *args):
    status, out, err = cli("stats", *args, "--json")
    assert (status, err) == (0, ""), err
    return json.loads(out)


def _num(v):
    return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(v, v)


def _expected_chunks(arr, blob_rows, crows):
    """[(blob, first_row, rows, part)] of numpy slices, the layout of 8.4."""
    out = []
    first = 0
    for b, rows in enumerate(blob_rows):
        for k in range(0, rows, crows):
            n = min(crows, rows - k)
            out.append((b, first + k, n, arr[first + k:first + k + n]))
        first += rows
    return out


def test_scalar_float_matches_numpy(cli, tmp_path, lib):
    rng = np.random.default_rng(3)
    x = rng.normal(size=1000)
    x[[5, 17, 600]] = np.nan
    path = _write(tmp_path / "f", lib, x=(x, 3, 100))
    doc = _json(cli, path, "x")
    assert doc["column"] == "x" and doc["size"] == 1000 and doc["nfile"] == 3
    assert doc["chunk_rows"] == 100 and doc["blobs_known"] == 3 and doc["components"] == [0]
    chunks = [ch for b in doc["blobs"] for ch in b["chunks"]]
    want = _expected_chunks(x, [333, 333, 334], 100)
    assert len(chunks) == len(want) == 12
    for ch, (b, first, rows, part) in zip(chunks, want):
        assert (ch["first_row"], ch["rows"], ch["valid"]) == (first, rows, True)
        (nums,) = ch["components"]
        assert nums["count"] == rows and nums["nan"] == int(np.isnan(part).sum())
        assert _num(nums["min"]) == np.nanmin(part) and _num(nums["max"]) == np.nanmax(part)
        assert _num(nums["sum"]) == pytest.approx(np.nansum(part), rel=1e-12)
    for b, blob in enumerate(doc["blobs"]):
        part = x[[0, 333, 666][b]:[333, 666, 1000][b]]
        (tot,) = blob["total"]
        assert blob["known"] and blob["id"] == f"{b:06X}"
        assert tot["count"] == len(part) and tot["nan"] == int(np.isnan(part).sum())
        assert tot["min"] == np.nanmin(part) and tot["max"] == np.nanmax(part)
    (tot,) = doc["total"]
    assert (tot["count"], tot["nan"]) == (1000, 3)
    assert (tot["min"], tot["max"]) == (np.nanmin(x), np.nanmax(x))
    assert tot["sum"] == pytest.approx(np.nansum(x), rel=1e-12)


def test_text_layout(cli, tmp_path, lib):
    path = _write(tmp_path / "f", lib, x=(np.arange(100.0), 2, 16))
    status, out, err = cli("stats", path, "x")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == ("x: <f8, 100 rows in 2 blobs, chunks of 16 rows; statistics known "
                        "for 2 of 2 blobs")
    assert re.split(r"\s+", lines[1]) == ["blob", "chunk", "rows", "state", "count", "nan",
                                          "min", "max", "sum"]
    assert re.split(r"\s+", lines[2]) == ["000000", "0", "0-15", "valid", "16", "0", "0.0",
                                          "15.0", "120.0"]
    assert re.split(r"\s+", lines[5]) == ["000000", "3", "48-49", "valid", "2", "0", "48.0",
                                          "49.0", "97.0"]
    assert re.split(r"\s+", lines[6]) == ["000000", "all", "0-49", "valid", "50", "0", "0.0",
                                          "49.0", "1225.0"]
    assert re.split(r"\s+", lines[-1]) == ["column", "all", "0-99", "valid", "100", "0",
                                           "0.0", "99.0", "4950.0"]
    assert len(lines) == 2 + 5 + 5 + 1
    # aligned: the numbers end in the same column
    ends = {len(line) for line in lines[1:]}
    assert len(ends) == 1
    assert "UNKNOWN" not in out


def test_vector_component_blob_and_totals(cli, tmp_path, lib):
    rng = np.random.default_rng(4)
    pos = rng.uniform(-5, 5, size=(300, 3))
    path = _write(tmp_path / "f", lib, pos=(pos, 3, 64))
    doc = _json(cli, path, "pos")
    assert doc["nmemb"] == 3 and doc["components"] == [0, 1, 2]
    for c, j in enumerate(range(3)):
        assert doc["total"][c]["min"] == pos[:, j].min()
        assert doc["total"][c]["max"] == pos[:, j].max()
    doc = _json(cli, path, "pos", "--component", "-1", "--blob", "1")
    assert doc["components"] == [2] and [b["blob"] for b in doc["blobs"]] == [1]
    ch = doc["blobs"][0]["chunks"]
    assert [c["first_row"] for c in ch] == [100, 164]
    assert ch[1]["components"][0]["max"] == pos[164:200, 2].max()
    # the blob's file name in hex, several blobs
    doc = _json(cli, path, "pos", "--blob", "000002", "--blob", "0", "-j", "1")
    assert [b["id"] for b in doc["blobs"]] == ["000000", "000002"]
    # text: component column, totals only
    status, out, _ = cli("stats", path, "pos", "--totals")
    assert status == 0
    rows = [re.split(r"\s+", line.strip()) for line in out.splitlines()[2:]]
    assert len(rows) == 4 * 3
    for i, label in enumerate(["000000", "000001", "000002", "column"]):
        assert rows[3 * i][:5] == [label, "all", ["0-99", "100-199", "200-299", "0-299"][i],
                                   "valid", "0"]
        assert rows[3 * i + 1][:2] == ["1", "100" if i < 3 else "300"]
        assert rows[3 * i + 2][:2] == ["2", "100" if i < 3 else "300"]
    assert "comp" in out.splitlines()[1]


def test_dtypes(cli, tmp_path, lib):
    ints = np.array([5, -2**62, 7, 2**62], dtype="i8")
    flags = np.array([True, False, True, True])
    f4 = np.array([0.1, 0.25, -3.5], dtype="f4")
    z = np.array([1 + 2j, 3 - 1j], dtype="c16")
    path = _write(tmp_path / "f", lib, i=(ints, 1, None), b=(flags, 1, None),
                  f=(f4, 1, None), z=(z, 1, None))
    doc = _json(cli, path, "i")
    assert doc["total"][0]["min"] == -2**62 and doc["total"][0]["max"] == 2**62
    assert doc["total"][0]["sum"] == 12
    status, out, _ = cli("stats", path, "b")
    assert re.split(r"\s+", out.splitlines()[-1]) == ["column", "all", "0-3", "valid", "4",
                                                      "0", "0", "1", "3"]
    status, out, _ = cli("stats", path, "f")
    # f4 bounds in their own shortest form
    assert re.split(r"\s+", out.splitlines()[-1])[6:8] == ["-3.5", "0.25"]
    status, out, _ = cli("stats", path, "f", "--json")
    assert json.loads(out)["total"][0]["min"] == -3.5
    status, out, _ = cli("stats", path, "z")
    assert re.split(r"\s+", out.splitlines()[-1]) == ["column", "all", "0-1", "valid", "2",
                                                      "0", "-", "-", "-"]
    doc = _json(cli, path, "z")
    assert doc["ordered"] is False and doc["total"][0]["min"] is None


def test_all_nan_chunk(cli, tmp_path, lib):
    x = np.array([np.nan, np.nan, 1.0, 2.0])
    path = _write(tmp_path / "f", lib, x=(x, 1, 2))
    doc = _json(cli, path, "x")
    first = doc["blobs"][0]["chunks"][0]["components"][0]
    assert (first["count"], first["nan"]) == (2, 2)
    assert doc["total"][0]["min"] == 1.0 and doc["total"][0]["nan"] == 2


def _bigfile():
    import bigfile  # the original 0.1.52, installed where the tests run

    return bigfile


def test_unknown_for_bigfile_output(cli, tmp_path, lib):
    bigfile = _bigfile()
    path = str(tmp_path / "bf")
    with bigfile.File(path, create=True) as f:
        f.create_from_array("x", np.arange(10.0), Nfile=2)
    status, out, err = cli("stats", path, "x")
    assert (status, err) == (0, "")
    assert "statistics known for 0 of 2 blobs" in out.splitlines()[0]
    assert "UNKNOWN (2 blobs)" in out
    body = [l for l in out.splitlines()[2:] if not l.startswith("UNKNOWN")]
    assert all("UNKNOWN" in l and re.search(r"\s-\s+-\s+-\s+-\s+-$", l) for l in body)
    assert out.splitlines()[-1].startswith("UNKNOWN: 2 of 2 blobs have no current statistics")
    assert f"'colfile index {path} x'" in out
    doc = _json(cli, path, "x")
    assert doc["blobs_known"] == 0 and doc["total"] is None
    assert all(not b["known"] and b["total"] is None for b in doc["blobs"])
    assert all(ch["components"] == [None] for b in doc["blobs"] for ch in b["chunks"])


def test_stale_after_foreign_write(cli, tmp_path, lib):
    bigfile = _bigfile()
    path = _write(tmp_path / "f", lib, x=(np.arange(100.0), 2, 16))
    with bigfile.File(path) as f:
        with f["x"] as b:
            b.write(60, np.full(5, -1.0))       # blob 1 changes behind colfile's back
    doc = _json(cli, path, "x")
    # the header changed: nothing recorded is trusted, blob 0's neither
    assert [b["known"] for b in doc["blobs"]] == [False, False]
    assert doc["total"] is None
    status, out, _ = cli("stats", path, "x", "--blob", "1")
    assert "000001  all    50-99  UNKNOWN" in out


def test_statistics_switched_off(cli, tmp_path, lib):
    import colfile

    path = str(tmp_path / "f")
    with colfile.File(path, "w") as f:
        c = f.create("x", "f8", size=10)
        lib.cf_column_set_statistics(c._handle(), 0)
        c[:] = np.arange(10.0)
    doc = _json(cli, path, "x")
    assert doc["blobs_known"] == 0


def test_errors(cli, sample):
    status, out, err = cli("stats", sample, "nope")
    assert status == 2 and out == "" and "no column or group 'nope'" in err
    status, _, err = cli("stats", sample, "meta")
    assert status == 1 and "header-only" in err
    status, out, err = cli("stats", sample, "1")  # a group: each of its columns
    assert status == 0 and "1/ID:" in out and "1/Position:" in out
    status, _, err = cli("stats", sample, "1/Position", "--component", "3")
    assert status == 2 and "--component 3 is out of range" in err
    status, _, err = cli("stats", sample, "1/ID", "--blob", "3")
    assert status == 2 and "--blob 3 (000003) does not exist" in err
    status, _, err = cli("stats", sample, "1/ID", "--blob", "x1")
    assert status == 2 and "not a blob number" in err
    for e in (err,):
        assert len(e.splitlines()) == 1 and e.startswith("colfile: error: ")


def test_empty_column(cli, tmp_path, lib):
    path = _write(tmp_path / "f", lib, e=(np.zeros(0, "f8"), 1, None))
    doc = _json(cli, path, "e")
    assert doc["size"] == 0 and doc["total"][0]["count"] == 0
    status, out, _ = cli("stats", path, "e")
    assert status == 0 and "no rows" in out
