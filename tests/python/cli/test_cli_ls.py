"""colfile ls."""

from __future__ import annotations

import json
import re


def _rows(out: str) -> dict[str, list[str]]:
    """Leaf name -> the cells of its line (name, dtype, shape, nfile, bytes)."""
    rows = {}
    for line in out.splitlines()[1:]:
        m = re.match(r"^(\s*)(\S+)\s+(\S+)\s+(\(.*?\)|header-only)\s+(\d+)\s+(\d+)$", line)
        if m:
            rows[m.group(2)] = [m.group(1), m.group(3), m.group(4), m.group(5), m.group(6)]
    return rows


def test_ls_tree(cli, sample):
    status, out, err = cli("ls", sample)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "DTYPE", "SHAPE", "NFILE", "BYTES"]
    assert "1/" in [l.strip() for l in lines] and "2/" in [l.strip() for l in lines]
    rows = _rows(out)
    assert rows["Position"] == ["  ", "<f8", "(10, 3)", "2", "240"]
    assert rows["ID"] == ["  ", "<u8", "(10,)", "3", "80"]
    assert rows["Mass"] == ["  ", ">f4", "(10,)", "1", "40"]
    assert rows["Flag"] == ["  ", "|b1", "(4,)", "1", "4"]
    assert rows["Vel"] == ["  ", "<f4", "(4, 2)", "1", "32"]
    assert rows["Name"] == ["", "|S5", "(5,)", "1", "25"]
    assert rows["meta"] == ["", "-", "header-only", "0", "0"]
    # the group line comes right before its columns
    i = [l.strip() for l in lines].index("1/")
    assert lines[i + 1].strip().startswith("ID")
    assert lines[-1] == "8 columns, 461 bytes"


def test_ls_order_is_the_api_listing(cli, sample):
    import colfile

    status, out, _ = cli("ls", "--json", sample)
    with colfile.File(sample) as f:
        assert [c["name"] for c in json.loads(out)["columns"]] == f.columns


def test_ls_long(cli, sample):
    import colfile

    status, out, err = cli("ls", "-l", sample)
    assert status == 0, err
    assert re.search(r'attr\s+BoxSize\s+<f8\s+1000\.0', out)
    assert re.search(r'attr\s+Unit\s+<a1\[5\]\s+"Mpc/h"', out)
    assert re.search(r'attr\s+Count\s+<i8\s+10', out)          # group attribute
    assert re.search(r'attr\s+Origin\s+<f8\[3\]\s+\[0\.5, 1\.5, -2\.0\]', out)
    assert re.search(r'attr\s+Version\s+<a1\[3\]\s+"1\.0"', out)  # header-only block
    with colfile.File(sample) as f:
        col = f["1/ID"]
        first = 0
        for i, info in enumerate(col.checksums()):
            want = (rf"blob\s+{i:06X}\s+rows {first}-{first + info['rows'] - 1} "
                    rf"\({info['rows']}\)\s+sum {info['sum']}\s+fold {info['fold']}\s+"
                    rf"crc32c {info['crc32c']:08x}")
            assert re.search(want, out), want
            first += info["rows"]


def test_ls_json(cli, sample):
    import colfile

    status, out, err = cli("ls", "--json", "-l", sample)
    assert status == 0, err
    doc = json.loads(out)
    assert doc["path"] == sample
    cols = {c["name"]: c for c in doc["columns"]}
    pos = cols["1/Position"]
    assert pos["dtype"] == "<f8" and pos["shape"] == [10, 3] and pos["nmemb"] == 3
    assert pos["nfile"] == 2 and pos["nbytes"] == 240 and pos["blob_rows"] == [5, 5]
    assert pos["attrs"]["Unit"] == {"dtype": "<a1", "nmemb": 5, "value": "kpc/h"}
    assert pos["attrs"]["Origin"]["value"] == [0.5, 1.5, -2.0]
    assert cols["meta"]["kind"] == "header-only"
    assert cols["Z"]["dtype"] == "<c8"
    with colfile.File(sample) as f:
        for b, info in zip(pos["blobs"], f["1/Position"].checksums()):
            assert b["rows"] == info["rows"] and b["sum"] == info["sum"]
            assert b["crc32c"] == f"{info['crc32c']:08x}"
        assert b["path"].endswith("1/Position/000001") and b["first_row"] == 5
    assert doc["attrs"]["BoxSize"]["value"] == 1000.0
    assert {g["name"]: g["attrs"] for g in doc["groups"]}["1"]["Count"]["value"] == 10
    assert doc["total_bytes"] == 461
    # without -l: no attributes and blobs
    doc = json.loads(cli("ls", "--json", sample)[1])
    assert "attrs" not in doc and "blobs" not in doc["columns"][0]


def test_ls_select(cli, sample):
    status, out, _ = cli("ls", sample, "1", "Name")
    assert status == 0
    names = set(_rows(out))
    assert names == {"ID", "Mass", "Position", "Name"}
    assert out.splitlines()[-1].startswith("4 columns")


def test_ls_missing_column(cli, sample):
    status, out, err = cli("ls", sample, "nope")
    assert status == 2
    assert err.startswith("colfile: error: ") and "'nope'" in err


def test_ls_depth(cli, sample):
    status, out, _ = cli("ls", "--depth", "1", "-H", sample)
    assert status == 0
    assert re.search(r"^1/\s+3 columns\s+360 B$", out, re.M)
    assert re.search(r"^2/\s+2 columns\s+36 B$", out, re.M)
    assert "Position" not in out
    assert cli("ls", "--depth", "0", sample)[0] == 2


def test_ls_damaged_column_is_reported(cli, sample):
    import os

    with open(os.path.join(sample, "1", "Mass", "header"), "w") as fh:
        fh.write("garbage\n")
    status, out, err = cli("ls", sample)
    assert status == 1
    assert re.search(r"Mass\s+cannot open: .*header", out)
    assert "ID" in out and "Position" in out   # the rest is still listed
    assert "could not be opened" in err


# -- the bigfile 0.1.52 fixture set --------------------------------------------


def test_ls_fixture_main_matches_manifest(cli, bigfile_set, manifest):
    tree = manifest["bigfiles"]["main"]
    status, out, err = cli("ls", "--json", bigfile_set / "main")
    assert status == 0, err
    doc = json.loads(out)
    assert [c["name"] for c in doc["columns"]] == tree["list_blocks"]
    for c in doc["columns"]:
        b = tree["blocks"][c["name"]]
        assert c["nfile"] == b["Nfile"]
        if b["kind"] == "column":
            assert c["kind"] == "data"
            assert c["blob_rows"] == b["fsize"]
            assert c["size"] == b["size"] and c["nmemb"] == b["nmemb"]
            want = [b["size"]] if b["nmemb"] == 1 else [b["size"], b["nmemb"]]
            assert c["shape"] == want
        else:
            assert c["kind"] == "header-only"


def test_ls_fixture_long_text(cli, bigfile_set, manifest):
    tree = manifest["bigfiles"]["main"]
    status, out, err = cli("ls", "-l", bigfile_set / "main")
    assert status == 0, err
    # every blob of every column appears with the header's sums and no CRC
    for name, b in tree["blocks"].items():
        if b["kind"] != "column":
            continue
        for i, (raw, fold) in enumerate(b["checksums"]):
            assert re.search(rf"blob\s+{i:06X}\s+.*sum {raw}\s+fold {fold}\s+crc32c -", out)
    doc = json.loads(cli("ls", "-l", "--json", bigfile_set / "main")[1])
    for name, b in tree["blocks"].items():
        if b["kind"] == "column":
            col = next(c for c in doc["columns"] if c["name"] == name)
            assert [[x["sum"], x["fold"]] for x in col["blobs"]] == b["checksums"]
            assert set(col["attrs"]) == set(b["attrs"])
            for an, a in b["attrs"].items():
                assert col["attrs"][an]["dtype"] == a["dtype"]
                assert col["attrs"][an]["nmemb"] == a["nmemb"]


def test_ls_fixture_shadow(cli, bigfile_set, manifest):
    tree = manifest["bigfiles"]["shadow"]
    doc = json.loads(cli("ls", "--json", bigfile_set / "shadow")[1])
    assert [c["name"] for c in doc["columns"]] == tree["list_blocks"]
    hidden = [n for n, b in tree["blocks"].items()
              if n not in tree["list_blocks"] and b["kind"] == "column"]
    assert hidden
    status, out, err = cli("ls", "--json", bigfile_set / "shadow", *hidden)
    assert status == 0, err
    assert [c["name"] for c in json.loads(out)["columns"]] == sorted(hidden)
