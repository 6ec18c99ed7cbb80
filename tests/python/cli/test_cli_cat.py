"""colfile cat."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest


def _csv(out: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(out)))


def _read(path, name):
    import colfile

    with colfile.File(path) as f:
        return f[name][:]


def _parse(text: str, dtype: np.dtype):
    if dtype.kind == "b":
        assert text in ("true", "false")
        return text == "true"
    if dtype.kind in "iu":
        return int(text)
    if dtype.kind == "f":
        return dtype.type(text)  # exact in the column's own width
    if dtype.kind == "c":
        return complex(text)
    raise AssertionError(dtype)


def test_csv_values_exact(cli, sample):
    cols = ["1/ID", "1/Position", "1/Mass"]
    status, out, err = cli("cat", sample, "--columns", ",".join(cols), "--csv", "--header")
    assert status == 0, err
    rows = _csv(out)
    assert rows[0] == ["1/ID", "1/Position[0]", "1/Position[1]", "1/Position[2]", "1/Mass"]
    assert len(rows) == 11
    ids, pos, mass = (_read(sample, c) for c in cols)
    for r, row in enumerate(rows[1:]):
        assert int(row[0]) == int(ids[r])                      # u8 above 2**63, exact
        assert [float(x) for x in row[1:4]] == pos[r].tolist()  # f8 round trip
        assert np.float32(row[4]) == mass[r]                   # >f4 in its own width
    assert len(row[4]) <= 16  # shortest float32 form, not the widened double


def test_csv_bool_complex_vectors(cli, sample):
    status, out, _ = cli("cat", sample, "-c", "2/Flag,2/Vel", "--csv")
    assert status == 0
    flag, vel = _read(sample, "2/Flag"), _read(sample, "2/Vel")
    rows = _csv(out)
    assert [r[0] for r in rows] == ["true" if x else "false" for x in flag]
    assert np.array_equal(np.array([[np.float32(x) for x in r[1:]] for r in rows]), vel)
    status, out, _ = cli("cat", sample, "Z", "--csv")
    z = _read(sample, "Z")
    assert [np.complex64(complex(r[0])) for r in _csv(out)] == list(z)


def test_text_aligned_matches_csv(cli, sample):
    cols = "1/ID,1/Position,1/Mass"
    status, text, _ = cli("cat", sample, "-c", cols, "--header")
    status2, out, _ = cli("cat", sample, "-c", cols, "--csv", "--header")
    assert status == status2 == 0
    lines = text.splitlines()
    assert [l.split() for l in lines] == _csv(out)
    # numbers are right-aligned: every line ends in the same column
    assert len({len(l) for l in lines}) == 1


def test_bytes_printed_safely(cli, sample):
    status, out, _ = cli("cat", sample, "Name", "--csv")
    assert status == 0
    assert [r[0] for r in _csv(out)] == ["alpha", "b,c", 'q"t', "\\xff\\x01", "x\\ny"]
    status, text, _ = cli("cat", sample, "Name")
    assert text.splitlines() == ["alpha", "b,c", 'q"t', "\\xff\\x01", "x\\ny"]
    assert "\x01" not in text and "\xff" not in text


def test_start_count(cli, sample):
    ids = _read(sample, "1/ID")
    _, out, _ = cli("cat", sample, "-c", "1/ID", "--start", 3, "--count", 4)
    assert [int(x) for x in out.split()] == ids[3:7].tolist()
    _, out, _ = cli("cat", sample, "-c", "1/ID", "--start", -2)
    assert [int(x) for x in out.split()] == ids[-2:].tolist()
    _, out, _ = cli("cat", sample, "-c", "1/ID", "--start", 8, "--count", 100)
    assert [int(x) for x in out.split()] == ids[8:].tolist()
    status, out, _ = cli("cat", sample, "-c", "1/ID", "--start", 10, "--header", "--csv")
    assert status == 0 and out == "1/ID\n"


def test_chunked_output_is_identical(cli, sample):
    a = cli("cat", sample, "-c", "1/ID,1/Position", "--csv")[1]
    b = cli("cat", sample, "-c", "1/ID,1/Position", "--csv", "--chunk-rows", 3)[1]
    assert a == b and a.count("\n") == 10


def test_different_lengths_refused(cli, sample):
    status, out, err = cli("cat", sample, "-c", "1/ID,2/Flag")
    assert status == 1 and out == ""
    assert err.startswith("colfile: error: ") and err.count("\n") == 1
    assert "different lengths" in err and "1/ID has 10" in err and "2/Flag has 4" in err


@pytest.mark.parametrize("argv, status, words", [
    (["-c", "nope"], 2, ["no column 'nope'"]),
    (["-c", "1"], 2, ["is a group"]),
    (["-c", "meta"], 1, ["header-only"]),
    ([], 2, ["no columns given"]),
    (["-c", "1/ID", "--count", "-1"], 2, ["--count"]),
    (["-c", "1/ID", "--start", "11"], 2, ["past the end"]),
    (["-c", "1/ID", "--start", "-11"], 2, ["before the first row"]),
])
def test_errors(cli, sample, argv, status, words):
    st, out, err = cli("cat", sample, *argv)
    assert st == status and out == ""
    assert err.startswith("colfile: error: ") and err.count("\n") == 1
    for w in words:
        assert w in err


def test_short_blob_is_an_error_not_a_traceback(cli, sample):
    import os

    blob = os.path.join(sample, "1", "ID", "000002")
    os.truncate(blob, 3)
    status, out, err = cli("cat", sample, "-c", "1/ID")
    assert status == 1
    assert "Traceback" not in err and "000002" in err


def test_fixture_first_rows_match_manifest(cli, bigfile_set, manifest):
    """The first rows of every numeric fixture column, printed as CSV, read
    back to the manifest's values."""
    tree = manifest["bigfiles"]["main"]
    checked = 0
    for name, b in tree["blocks"].items():
        if b["kind"] != "column" or b["size"] == 0:
            continue
        dt = np.dtype(b["dtype"])
        if dt.kind not in "iufb" or b["nmemb"] != 1:
            continue
        status, out, err = cli("cat", bigfile_set / "main", "-c", name, "--count", 3, "--csv")
        assert status == 0, err
        got = [r[0] for r in _csv(out)]
        assert len(got) == len(b["first3"])
        for text, want in zip(got, b["first3"]):
            if dt.kind == "f":
                if isinstance(want, str):
                    assert text == want, (name, text, want)
                else:
                    assert dt.type(text) == dt.type(want), (name, text, want)
            else:
                assert _parse(text, dt) == want, (name, text, want)
        checked += 1
    assert checked >= 10
