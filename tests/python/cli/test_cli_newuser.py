"""What a new user of the ``colfile`` tool meets: stats of a group,
``python -m colfile``, ``--json`` for cat and query, patterns in ls, one
exit status for a missing File, column, group or attribute in every
subcommand, and hints for mistyped commands and options."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from childenv import child_env  # noqa: E402

#: every subcommand's way to name a File and (where it takes one) a column
#: after the File given first ("{}": that File again; `dst` is never made)
MISSING_FILE = {
    "ls": [], "cat": ["-c", "1/ID"], "attrs": [], "check": [], "repair": [],
    "stats": ["1/ID"], "index": [], "query": ["ID < 3"], "rm": ["1/ID"],
    "cp": ["dst"], "sample": ["dst", "--every", "2"], "join": ["{}"],
    "convert": ["out.h5"], "mv": ["1/ID", "x"], "defrag": ["s"],
}
MISSING_NAME = {
    "ls": ["nope"], "cat": ["-c", "nope"], "attrs": ["nope"], "check": ["nope"],
    "repair": ["nope"], "stats": ["nope"], "index": ["nope"], "rm": ["nope"],
    "query": ["'1/ID' < 3", "-c", "nope"],
    "cp": ["dst", "nope"], "sample": ["dst", "nope", "--every", "2"],
    "join": ["{}", "-c", "nope"], "mv": ["nope", "x"], "defrag": ["nope"],
}


def _commands() -> set[str]:
    from colfile.cli import build_parser

    import argparse

    parser = build_parser()
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return set(a.choices)
    raise AssertionError("no subcommands")


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("colfile: error: "), err
    return lines[0]


def test_every_path_taking_subcommand_is_covered() -> None:
    # iosim writes a new File of its own: it has no File or column to miss;
    # convert names no column; stream names its action before the File
    # (stream dump PATH NAME): test_cli_stream.py checks its missing names
    assert set(MISSING_FILE) == _commands() - {"iosim", "stream"}
    assert set(MISSING_NAME) == set(MISSING_FILE) - {"convert"}


@pytest.mark.parametrize("cmd", sorted(MISSING_FILE))
def test_missing_file_exits_2_in_every_subcommand(cli: Any, tmp_path: Path, cmd: str) -> None:
    missing = tmp_path / "nope"
    status, out, err = cli(cmd, missing, *[a.replace("{}", str(missing)) for a in MISSING_FILE[cmd]])
    assert (status, out) == (2, "")
    line = _one_line(err)
    assert str(missing) in line and "no such File" in line
    assert not missing.exists()


@pytest.mark.parametrize("cmd", sorted(MISSING_NAME))
def test_missing_column_exits_2_in_every_subcommand(cli: Any, sample: str, cmd: str) -> None:
    status, out, err = cli(cmd, sample, *[a.replace("{}", sample) for a in MISSING_NAME[cmd]])
    assert (status, out) == (2, "")
    assert "'nope'" in _one_line(err)


@pytest.mark.parametrize("argv", [
    ["attrs", "{}", "--get", "Nope"], ["attrs", "{}", "1/Position", "--delete", "Nope"],
    ["attrs", "{}", "nope/."], ["query", "{}", "-g", "nope", "ID < 3"],
    ["query", "{}", "-g", "1", "Nope < 3"], ["ls", "{}", "1/Q*"], ["check", "{}", "9*"],
])
def test_other_missing_names_exit_2(cli: Any, sample: str, argv: list[str]) -> None:
    status, out, err = cli(*[a.replace("{}", sample) for a in argv])
    assert (status, out) == (2, ""), err
    _one_line(err)


def test_help_documents_the_exit_status(cli: Any) -> None:
    status, out, _ = cli("--help")
    assert status == 0
    text = " ".join(out.split())
    assert ("2 usage error, or a File, column, group or attribute named on the command "
            "line that does not exist") in text
    assert "python -m colfile" in text
    for cmd in sorted(_commands()):
        status, out, err = cli(cmd, "--help")
        assert status == 0 and out and err == "", cmd


@pytest.mark.parametrize("argv, hint", [
    (["lss", "x"], "did you mean 'ls'?"), (["stat", "x", "y"], "did you mean 'stats'?"),
    (["ls", "x", "--jsn"], "did you mean '--json'?"),
    (["query", "x", "ID < 1", "--cout"], "did you mean '--count'?"),
])
def test_typos_get_a_suggestion(cli: Any, argv: list[str], hint: str) -> None:
    status, out, err = cli(*argv)
    assert (status, out) == (2, "")
    assert hint in _one_line(err)


def test_python_dash_m_colfile(sample: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "colfile", "ls", sample, "1/ID"],
                          capture_output=True, text=True, env=child_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ID" in proc.stdout and "Position" not in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "colfile", "ls", sample + "-missing"],
                          capture_output=True, text=True, env=child_env(), timeout=120)
    assert proc.returncode == 2 and "no such File" in proc.stderr


def test_stats_of_a_group(cli: Any, sample: str) -> None:
    """Regression: 'stats snap 1/' raised AttributeError ('Group' object has
    no attribute 'kind')."""
    for name in ("1/", "1"):
        status, out, err = cli("stats", sample, name)
        assert status == 0 and err == "", err
        heads = [ln.split(":")[0] for ln in out.splitlines() if ln.startswith("1/")]
        assert heads == ["1/ID", "1/Mass", "1/Position"]
    status, out, err = cli("stats", sample, "1/", "--json")
    assert status == 0
    doc = json.loads(out)
    assert doc["group"] == "1" and [c["column"] for c in doc["columns"]] == \
        ["1/ID", "1/Mass", "1/Position"]
    status, one, _ = cli("stats", sample, "1/Mass", "--json")
    assert json.loads(one) == doc["columns"][1]
    status, _, err = cli("stats", sample, "1/", "--blob", "0")
    assert status == 2 and "is a group" in err
    status, _, err = cli("stats", sample, "meta/")  # a column, even with a slash
    assert status == 1 and "header-only" in err
    status, _, err = cli("stats", sample, "nope/")
    assert status == 2 and "no column or group 'nope/'" in err


def _jv(x: Any) -> Any:
    """What --json gives for a value read through numpy."""
    if isinstance(x, (list, np.ndarray)):
        return [_jv(v) for v in x]
    if isinstance(x, (complex, np.complexfloating)):
        return [_jv(x.real), _jv(x.imag)]
    if isinstance(x, (float, np.floating)):
        return "nan" if math.isnan(x) else ("inf" if x == math.inf else
                                            "-inf" if x == -math.inf else float(x))
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    return x


def test_cat_json(cli: Any, tmp_path: Path, lib: Any) -> None:
    import colfile

    path = str(tmp_path / "f")
    data = {"a/ID": np.arange(7, dtype=">u8") + 2**63,
            "a/Pos": np.arange(21, dtype="f4").reshape(7, 3) / 3,
            "a/M": np.array([1.5, np.nan, np.inf, -np.inf, 0.1, -0.0, 3]),
            "a/Z": np.arange(7) * (1 - 2j),
            "a/F": np.arange(7) % 2 == 0,
            "a/S": np.array([b"x", b"y\n", b"\xff", b"", b"q", b"r", b"s"])}
    with colfile.File(path, "w") as f:
        for n, d in data.items():
            f.create(n, data=d, nfile=2)
    names = list(data)
    status, out, err = cli("cat", path, *names, "--json", "--start", "1", "--count", "5",
                           "--chunk-rows", "2")
    assert status == 0, err
    doc = json.loads(out)
    assert doc["path"] == path and (doc["start"], doc["count"]) == (1, 5)
    assert [c["name"] for c in doc["columns"]] == names
    assert doc["columns"][1] == {"name": "a/Pos", "dtype": "<f4", "nmemb": 3, "shape": [7, 3]}
    assert len(doc["rows"]) == 5
    for k, row in enumerate(doc["rows"]):
        i = k + 1
        assert list(row) == names
        assert row["a/ID"] == 2**63 + i and row["a/F"] == bool(i % 2 == 0)
        assert row["a/Pos"] == [float(v) for v in data["a/Pos"][i]]
        assert row["a/M"] == _jv(data["a/M"][i]) and row["a/Z"] == _jv(data["a/Z"][i])
    assert [r["a/S"] for r in doc["rows"]] == ["y\\n", "\\xff", "", "q", "r"]
    status, out, _ = cli("cat", path, "a/ID", "--json", "--count", "0")
    assert status == 0 and json.loads(out)["rows"] == []
    status, out, err = cli("cat", path, "a/ID", "--json", "--csv")
    assert status == 2 and "--json" in err


def test_query_json(cli: Any, sample: str) -> None:
    import colfile

    with colfile.File(sample) as f:
        ids, pos = f["1/ID"][:], f["1/Position"][:]
    want = np.flatnonzero(pos[:, 0] > 0)
    status, out, err = cli("query", sample, "-g", "1", "Position[0] > 0", "-c", "ID,Position",
                           "--json", "--piece-rows", "2")
    assert status == 0, err
    doc = json.loads(out)
    assert (doc["expr"], doc["group"], doc["matches"]) == ("Position[0] > 0", "1", len(want))
    assert doc["index"] == want.tolist()
    assert [c["name"] for c in doc["columns"]] == ["ID", "Position"]
    assert [r["ID"] for r in doc["rows"]] == ids[want].tolist()
    assert [r["Position"] for r in doc["rows"]] == pos[want].tolist()
    status, out, _ = cli("query", sample, "-g", "1", "Position[0] > 0", "--json", "--count",
                         "--limit", "1")
    assert status == 0 and json.loads(out) == {"path": sample, "expr": "Position[0] > 0",
                                               "group": "1", "matches": min(1, len(want))}
    status, out, _ = cli("query", sample, "'1/ID' < 0", "--json")
    doc = json.loads(out)
    assert doc["matches"] == 0 and doc["rows"] == [] and doc["group"] is None
    status, _, err = cli("query", sample, "'1/ID' < 0", "--json", "--out", sample + "-x")
    assert status == 2 and "--json" in err


@pytest.mark.parametrize("patterns, want", [
    (["1/P*"], ["1/Position"]),
    (["*/Mass"], ["1/Mass"]),
    (["[12]/?"], []),
    (["[2]"], ["2/Flag", "2/Vel"]),              # a group matched: all below it
    (["?/*", "Name"], ["1/ID", "1/Mass", "1/Position", "2/Flag", "2/Vel", "Name"]),
    (["*"], None),                               # every column
])
def test_ls_patterns(cli: Any, sample: str, patterns: list[str], want: Any) -> None:
    import colfile

    with colfile.File(sample) as f:
        every = f.columns
    status, out, err = cli("ls", sample, *patterns, "--json")
    if want == []:
        assert status == 2 and "no column or group matches" in err
        return
    assert status == 0, err
    assert [c["name"] for c in json.loads(out)["columns"]] == (every if want is None else want)
    status, out, _ = cli("ls", sample, *patterns)
    assert status == 0 and "1/P*" not in out


@pytest.mark.parametrize("cmd, missing", [
    ("ls", "PATH"), ("check", "PATH"), ("cat", "PATH"), ("rm", "PATH"),
    ("query", "PATH, EXPR"), ("stats", "PATH, COLUMN"),
])
def test_required_arguments_named_alone(cli: Any, cmd: str, missing: str) -> None:
    """Optional COLUMN lists are not named as required."""
    status, out, err = cli(cmd)
    assert (status, out) == (2, "")
    line = _one_line(err)
    assert f"the following arguments are required: {missing} (" in line


@pytest.mark.parametrize("expr, hint", [
    ("Position > 1", "e.g. Position[0]"), ("'1/Position' > 1", "e.g. 1/Position[0]"),
])
def test_vector_column_hint_is_valid_syntax(cli: Any, sample: str, expr: str, hint: str) -> None:
    group = ["-g", "1"] if not expr.startswith("'") else []
    status, out, err = cli("query", sample, *group, expr)
    assert (status, out) == (2, "")
    assert "3 components per row" in err and hint in _one_line(err)
    fixed = hint.split("e.g. ")[1] + " > 1"
    status, out, err = cli("query", sample, *group, fixed, "--count")
    assert status == 0, err


@pytest.mark.parametrize("nranks", [2, 4])
@pytest.mark.parametrize("cmd", [["index"], ["check"], ["index", "nope"], ["check", "nope"]])
def test_missing_path_exits_2_under_mpiexec(sample: str, tmp_path: Path, nranks: int,
                                            cmd: list[str]) -> None:
    """The MPI commands agree with the others: exit status 2 on every rank
    (mpiexec's status), one message, from rank 0."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mpi"))
    from mpirun import launch, mpiexec

    mpiexec()
    path = sample if len(cmd) > 1 else str(tmp_path / "missing")
    proc = launch(nranks, [sys.executable, "-m", "colfile", cmd[0], "--mpi", "--no-progress",
                           path, *cmd[1:]], timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("colfile: error: "), proc.stderr
