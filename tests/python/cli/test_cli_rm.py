"""colfile rm."""

from __future__ import annotations

import os


def _columns(path):
    import colfile

    with colfile.File(path) as f:
        return f.columns


def test_rm_columns(cli, sample):
    before = _columns(sample)
    status, out, err = cli("rm", sample, "1/Position", "Name")
    assert (status, out, err) == (0, "", "")
    assert _columns(sample) == [c for c in before if c not in ("1/Position", "Name")]
    assert not os.path.exists(os.path.join(sample, "1", "Position"))
    assert not os.path.exists(os.path.join(sample, "Name"))
    # the group and its attributes stay
    assert cli("attrs", sample, "1/.", "--get", "Count")[1] == "10\n"
    assert "Position" not in cli("ls", sample)[1]


def test_rm_missing_removes_nothing(cli, sample):
    before = _columns(sample)
    status, out, err = cli("rm", sample, "Name", "nope")
    assert status == 2 and out == ""
    assert err == f"colfile: error: {sample}: no column 'nope' (nothing removed)\n"
    assert _columns(sample) == before


def test_rm_force_and_verbose(cli, sample):
    status, out, err = cli("rm", "-f", "-v", sample, "nope", "Name", "Name")
    assert (status, out, err) == (0, "removed Name\n", "")
    assert "Name" not in _columns(sample)
    assert cli("rm", "-f", sample, "Name") == (0, "", "")


def test_rm_header_only_block(cli, sample):
    assert cli("rm", sample, "meta")[0] == 0
    assert "meta" not in _columns(sample)


def test_rm_errors(cli, sample):
    before = _columns(sample)
    status, _, err = cli("rm", sample, "1")
    assert status == 2 and "is a group, not a column" in err
    status, _, err = cli("rm", sample, ".")
    assert status == 1 and "names attributes" in err
    status, _, err = cli("rm", sample, "bad name")
    assert status == 1 and "bad column name" in err
    status, _, err = cli("rm", sample)
    assert status == 2 and "no columns given" in err
    assert _columns(sample) == before


def test_rm_keeps_columns_below(cli, writable_copy, manifest):
    """Removing a header-only block that hides a column below it (fixture
    `shadow`, on a copy) keeps that column, which then appears in listings."""
    t = manifest["bigfiles"]["shadow"]
    hidden = [n for n, b in t["blocks"].items()
              if n not in t["list_blocks"] and b["kind"] == "column"]
    holder = next(n for n in t["list_blocks"] if any(h.startswith(n + "/") for h in hidden))
    path = writable_copy("shadow")
    assert cli("rm", path, holder)[0] == 0
    cols = _columns(path)
    assert holder not in cols and all(h in cols for h in hidden)
    assert cli("check", path)[0] == 0
