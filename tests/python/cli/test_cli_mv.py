"""colfile mv and Group.move: a column renamed whole, within and across
groups; existing destinations, groups, hostile names and columns being
written refused with nothing renamed; the listing (catalog) stays true."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import colfile


@pytest.fixture()
def cat(tmp_path):
    p = str(tmp_path / "cat")
    with colfile.File(p, "w") as f:
        c = f.create("1/Vel", ("<f4", 3), data=np.arange(30, dtype="<f4").reshape(10, 3), nfile=3)
        c.attrs["Unit"] = "km/s"
        f.create("1/ID", "<i8", data=np.arange(10))
        f.create("Mass", ">f8", data=np.linspace(0, 1, 7))
    return p


def test_mv_renames_whole(cli, cat):
    with colfile.File(cat) as f:
        assert "1/Vel" in f.columns  # the catalog has seen the old name
    status, out, err = cli("mv", "-v", cat, "1/Vel", "1/Velocity")
    assert (status, out, err) == (0, "renamed 1/Vel -> 1/Velocity\n", "")
    with colfile.File(cat) as f:
        assert f.columns == ["1/ID", "1/Velocity", "Mass"]
        assert f["1/Velocity"][:].tolist() == np.arange(30).reshape(10, 3).tolist()
        assert f["1/Velocity"].attrs["Unit"] == "km/s" and f["1/Velocity"].nfile == 3
        assert f["1/Velocity"].verify_blob(0) == {"OK"}
    assert not os.path.exists(os.path.join(cat, "1", "Vel"))
    # into another group, made on the way; check finds nothing wrong
    assert cli("mv", cat, "Mass", "2/Mass") == (0, "", "")
    with colfile.File(cat) as f:
        assert f.columns == ["1/ID", "1/Velocity", "2/Mass"]
        assert f["2/Mass"].dtype == np.dtype(">f8")
        assert f["2/Mass"][:].tolist() == np.linspace(0, 1, 7).tolist()
    assert cli("check", cat)[0] == 0


def test_mv_refusals_change_nothing(cli, cat):
    def columns():
        with colfile.File(cat) as f:
            return f.columns

    before = columns()
    status, out, err = cli("mv", cat, "1/ID", "Mass")
    assert status == 1 and out == "" and err.count("\n") == 1
    assert "'Mass' already exists" in err and cat in err
    status, _, err = cli("mv", cat, "1/ID", "1")
    assert status == 1 and "'1' already exists" in err
    status, _, err = cli("mv", cat, "nope", "x")
    assert status == 2 and "no column 'nope'" in err and "nothing renamed" in err
    status, _, err = cli("mv", cat, "1", "one")
    assert status == 1 and "is a group" in err
    for bad in ("../x", "/x", "a b", "1/ID/x", "x/../y"):
        status, out, err = cli("mv", cat, "1/ID", bad)
        assert status == 1 and out == "" and err.startswith("colfile: error: "), bad
        assert err.count("\n") == 1, bad
    status, _, err = cli("mv", cat, "../cat/Mass", "x")
    assert status == 1
    assert columns() == before
    assert sorted(os.listdir(os.path.dirname(cat))) == ["cat"]
    assert not os.path.exists(os.path.join(cat, "x"))


def test_mv_refused_while_another_process_writes(cli, cat, lib):
    """A process holding the column's writer lock (an open write) makes
    mv fail as busy; once it closes, mv works."""
    code = textwrap.dedent(f"""
        import sys, numpy as np, colfile
        f = colfile.File({cat!r}, "r+")
        c = f["Mass"]
        c[0:1] = np.array([5.0])
        print("held", flush=True)
        sys.stdin.readline()
        c.close(); f.close()
    """)
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "held"
        status, out, err = cli("mv", cat, "Mass", "Mass2")
        assert status == 1 and "Mass" in err and "another writer" in err, err
        with colfile.File(cat) as f:
            assert "Mass" in f.columns and "Mass2" not in f.columns
    finally:
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
    assert cli("mv", cat, "Mass", "Mass2") == (0, "", "")
    with colfile.File(cat) as f:
        assert f["Mass2"][0] == 5.0


def test_group_move_api(cat):
    with colfile.File(cat, "r+") as f:
        g = f["1/"]
        vel = g["Vel"]
        g.move("Vel", "V")
        assert vel.closed  # this File's handle of the old name is let go
        assert g["V"].shape == (10, 3)
        with pytest.raises(colfile.AlreadyExistsError):
            g.move("V", "ID")
        with pytest.raises(colfile.InvalidNameError):
            g.move("V", "../../x")
        with pytest.raises(colfile.ColumnNotFoundError):
            g.move("nope", "x")
        assert sorted(f.columns) == ["1/ID", "1/V", "Mass"]
    with colfile.File(cat) as f, pytest.raises(colfile.ReadOnlyError):
        f.move("Mass", "M")


def test_rm_r_removes_a_group(cli, cat):
    assert cli("rm", "-r", cat, "1") == (0, "", "")
    with colfile.File(cat) as f:
        assert f.columns == ["Mass"]
