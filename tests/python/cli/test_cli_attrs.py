"""colfile attrs."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest


def _attrs(path, obj="."):
    import colfile

    with colfile.File(path) as f:
        am = f.attrs if obj == "." else (f[obj[:-1]].attrs if obj.endswith("/.") else f[obj].attrs)
        return {n: (am.raw(n)[0], am.raw(n)[1], am[n]) for n in am}


def test_list_file_attrs(cli, sample):
    status, out, err = cli("attrs", sample)
    assert status == 0 and err == ""
    assert out.splitlines() == ["BoxSize  <f8     1000.0", 'Unit     <a1[5]  "Mpc/h"']


def test_list_objects(cli, sample):
    assert re.search(r'^Count\s+<i8\s+10$', cli("attrs", sample, "1/.")[1], re.M)
    assert cli("attrs", sample, "1/")[1] == cli("attrs", sample, "1/.")[1]
    assert cli("attrs", sample, "1")[1] == cli("attrs", sample, "1/.")[1]  # not a column
    out = cli("attrs", sample, "1/Position")[1]
    assert re.search(r'^Origin\s+<f8\[3\]\s+\[0\.5, 1\.5, -2\.0\]$', out, re.M)
    assert re.search(r'^Unit\s+<a1\[5\]\s+"kpc/h"$', out, re.M)
    assert re.search(r'^Version\s+<a1\[3\]\s+"1\.0"$', cli("attrs", sample, "meta")[1], re.M)


def test_json_listing(cli, sample):
    status, out, _ = cli("attrs", sample, "1/Position", "--json")
    assert status == 0
    assert json.loads(out) == {
        "Origin": {"dtype": "<f8", "nmemb": 3, "value": [0.5, 1.5, -2.0]},
        "Unit": {"dtype": "<a1", "nmemb": 5, "value": "kpc/h"},
    }


@pytest.mark.parametrize("text, dtype, nmemb, value", [
    ("42", "<i8", 1, 42),
    ("-7", "<i8", 1, -7),
    ("0.5", "<f8", 1, 0.5),
    ("1e300", "<f8", 1, 1e300),
    ("true", "<b1", 1, True),
    ("false", "<b1", 1, False),
    ("1.5-2j", "<c16", 1, 1.5 - 2j),
    ('"1.0"', "<a1", 3, "1.0"),
    ('"with space"', "<a1", 10, "with space"),
    ("Mpc/h", "<a1", 5, "Mpc/h"),
    ("[1, 2, 3]", "<i8", 3, [1, 2, 3]),
    ("[1, 2.5]", "<f8", 2, [1.0, 2.5]),
    ('["a", "bcd"]', "<S3", 2, ["a", "bcd"]),
])
def test_set_get_roundtrip(cli, sample, text, dtype, nmemb, value):
    status, out, err = cli("attrs", sample, "1/Position", "--set", f"x={text}")
    assert (status, out, err) == (0, "", "")
    tok, n, v = _attrs(sample, "1/Position")["x"]
    assert (tok, n) == (dtype, nmemb)
    assert (v.tolist() if isinstance(v, np.ndarray) else v) == value
    # --get prints it in the same syntax, which --set reads back identically
    status, got, _ = cli("attrs", sample, "1/Position", "--get", "x")
    assert status == 0
    if isinstance(value, str):
        assert got == value + "\n"   # strings come out raw
    else:
        cli("attrs", sample, "1/Position", "--set", f"y={got.strip()}")
        assert _attrs(sample, "1/Position")["y"][:2] == (dtype, nmemb)
        assert cli("attrs", sample, "1/Position", "--get", "y")[1] == got


def test_special_floats(cli, sample):
    assert cli("attrs", sample, "--set", "n=nan", "--set", "v=[1, nan, -inf, inf]")[0] == 0
    a = _attrs(sample)
    assert math.isnan(a["n"][2])
    v = a["v"][2]
    assert v[0] == 1 and math.isnan(v[1]) and v[2] == -math.inf and v[3] == math.inf
    assert cli("attrs", sample, "--get", "v")[1] == "[1.0, nan, -inf, inf]\n"
    assert json.loads(cli("attrs", sample, "--get", "v", "--json")[1]) == [1.0, "nan", "-inf", "inf"]


def test_set_delete_in_order(cli, sample):
    status, out, err = cli("attrs", sample, "1/.", "--set", "a=1", "--set", "b=2",
                           "--delete", "a", "--get", "b", "--delete", "Count")
    assert (status, out, err) == (0, "2\n", "")
    assert set(_attrs(sample, "1/.")) == {"b"}


@pytest.mark.parametrize("text, dtype, token, value", [
    ("[0, 0.5]", ">f4", ">f4", [0.0, 0.5]),
    ("3", "f4", "<f4", 3.0),
    ("[1, 2]", ">i2", ">i2", [1, 2]),
    ("255", "u1", "<u1", 255),
    ("1", "b1", "<b1", True),
    ("1.0", "str", "<a1", "1.0"),
    ('"quoted"', "str", "<a1", "quoted"),
    ("hello", "S10", "<S10", ["hello"]),
    ('["a", "b"]', "S", "<S1", ["a", "b"]),
    ("2", "c8", "<c8", 2 + 0j),
])
def test_set_with_type(cli, sample, text, dtype, token, value):
    status, out, err = cli("attrs", sample, "--set", f"x={text}", "--type", dtype)
    assert status == 0, err
    tok, n, v = _attrs(sample)["x"]
    assert tok == token
    assert (v.tolist() if isinstance(v, np.ndarray) else v) == value


@pytest.mark.parametrize("argv, words", [
    (["--set", "x=300", "--type", "u1"], ["does not fit"]),
    (["--set", "x=1.5", "--type", "i4"], ["does not fit"]),
    (["--set", "x=2", "--type", "b1"], ["does not fit"]),
    (["--set", "x=abc", "--type", "f8"], ["not a number"]),
    (["--set", "x=1", "--type", "U5"], ["--type"]),
    (["--set", "x=1", "--type", "nonsense"], ["unknown dtype"]),
    (["--set", "novalue"], ["NAME=VALUE"]),
    (["--set", "x=[1, 2"], ["cannot parse list"]),
    (["--set", "x=[1, \"a\"]"], ["mixes strings and numbers"]),
    (["--set", "x=null"], ["null"]),
    (["--set", "x=[]"], ["empty list"]),
    (["--type", "f8"], ["only applies to --set"]),
])
def test_usage_errors(cli, sample, argv, words):
    before = _attrs(sample)
    status, out, err = cli("attrs", sample, *argv)
    assert status == 2 and out == ""
    assert err.startswith("colfile: error: ") and err.count("\n") == 1
    for w in words:
        assert w in err
    assert _attrs(sample) == before   # nothing written


@pytest.mark.parametrize("argv, words", [
    (["--get", "nope"], ["has no attribute 'nope'"]),
    (["--delete", "nope"], ["has no attribute 'nope'"]),
    (["nosuch", "--get", "x"], ["no column or group 'nosuch'"]),
    (["nosuch/.", "--set", "x=1"], ["no group 'nosuch'"]),
    (["--set", "bad name=1"], ["bad attribute name"]),
])
def test_failures(cli, sample, argv, words):
    status, out, err = cli("attrs", sample, *argv)
    # a name that does not exist: 2, as in every subcommand
    assert status == (1 if "bad attribute name" in words else 2) and out == ""
    assert err.startswith("colfile: error: ") and err.count("\n") == 1
    for w in words:
        assert w in err


def test_fixture_attrs_read(cli, bigfile_set, manifest):
    """Every attribute of the fixture set lists, with the manifest's dtype
    and nmemb, in text and JSON."""
    for tree, t in manifest["bigfiles"].items():
        for name, b in t["blocks"].items():
            if not b.get("attrs"):
                continue
            status, out, err = cli("attrs", bigfile_set / tree, name, "--json")
            assert status == 0, (tree, name, err)
            doc = json.loads(out)
            assert set(doc) == set(b["attrs"]), (tree, name)
            for an, a in b["attrs"].items():
                assert (doc[an]["dtype"], doc[an]["nmemb"]) == (a["dtype"], a["nmemb"])
                if a["dtype"][1] in "iu":
                    want = a["value"]
                    got = doc[an]["value"]
                    assert (got if isinstance(got, list) else [got]) == want, (name, an)
            status, out, err = cli("attrs", bigfile_set / tree, name)
            assert status == 0 and len(out.splitlines()) == len(b["attrs"])


def test_fixture_writes_go_to_a_copy(cli, writable_copy):
    path = writable_copy("main")
    assert cli("attrs", path, "meta", "--set", "Added=[1, 2]", "--delete", "Version")[0] == 0
    a = _attrs(path, "meta")
    assert "Version" not in a and a["Added"][2].tolist() == [1, 2]


def test_object_after_options(cli, sample):
    want = cli("attrs", sample, "1/Position", "--get", "Unit")
    assert want == (0, "kpc/h\n", "")
    assert cli("attrs", sample, "--get", "Unit", "1/Position") == want
    status, out, err = cli("attrs", sample, ".", "--get", "Unit", "1/Position")
    assert status == 2 and "unrecognized arguments: 1/Position" in err
