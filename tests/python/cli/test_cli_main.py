"""The colfile tool as a whole: help, version, usage errors, exit codes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

COMMANDS = ["ls", "cat", "attrs", "check", "stats", "index", "query", "rm"]


def test_help_lists_commands_and_examples(cli):
    status, out, err = cli("--help")
    assert status == 0 and err == ""
    for cmd in COMMANDS:
        assert cmd in out
    assert "examples:" in out and "Exit status" in out


@pytest.mark.parametrize("cmd", COMMANDS)
def test_command_help(cli, cmd):
    status, out, err = cli(cmd, "--help")
    assert status == 0 and err == ""
    assert out.startswith(f"usage: colfile {cmd}")
    assert "examples:" in out


def test_version(cli):
    import colfile

    status, out, err = cli("--version")
    assert status == 0
    assert out.startswith(f"colfile {colfile.__version__}")
    assert f"libcolfile {colfile.library_version()}" in out


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("colfile: error: ")
    assert "Traceback" not in err
    return lines[0]


def test_no_command(cli):
    status, out, err = cli()
    assert status == 2 and out == ""
    assert "no command" in _one_error_line(err)


@pytest.mark.parametrize("argv, words", [
    (["frobnicate"], ["invalid choice", "frobnicate"]),
    (["ls"], ["required", "PATH"]),
    (["ls", "x", "--bogus"], ["unrecognized", "--bogus"]),
    (["cat", "x", "-c", "a", "--count", "many"], ["--count", "invalid int"]),
    (["check", "x", "--progress", "--no-progress"], ["not allowed"]),
])
def test_usage_errors_exit_2(cli, argv, words):
    status, out, err = cli(*argv)
    assert status == 2 and out == ""
    line = _one_error_line(err)
    for w in words:
        assert w in line


@pytest.mark.parametrize("cmd, status_expected", [
    (["ls"], 2), (["cat", "-c", "x"], 2), (["attrs"], 2), (["check"], 2), (["rm", "x"], 2),
])
def test_missing_file(cli, tmp_path, cmd, status_expected):
    missing = tmp_path / "nope"
    status, out, err = cli(cmd[0], missing, *cmd[1:])
    assert status == status_expected
    line = _one_error_line(err)
    assert str(missing) in line and "no such File" in line
    assert not missing.exists()


def test_not_a_directory(cli, tmp_path):
    p = tmp_path / "plain"
    p.write_text("x")
    status, out, err = cli("ls", p)
    assert status == 1
    assert "not a directory" in _one_error_line(err)


def test_debug_shows_traceback(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLFILE_DEBUG", "1")
    status, out, err = cli("ls", tmp_path / "nope")
    assert status == 2
    assert "Traceback" in err
    assert err.rstrip().splitlines()[-1].startswith("colfile: error: ")


def test_options_after_positionals(cli, sample):
    # argparse alone cannot give COLUMN after an option to an nargs="*" list
    status, out, err = cli("ls", sample, "-l", "1/ID", "Name")
    assert status == 0, err
    assert "ID" in out and "Name" in out and "Position" not in out


def test_python_m_help_subprocess(lib):
    """`python -m colfile.cli --help` in a fresh interpreter, same env."""
    proc = subprocess.run([sys.executable, "-m", "colfile.cli", "--help"], env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: colfile")
    for cmd in COMMANDS:
        assert cmd in proc.stdout
    assert proc.stderr == ""
