"""Hostile names and paths (issue 5): none escapes the File or crashes.

A table of malicious column, group and attribute names goes through every
entry point of the Python API that takes a name (create, ``[]``, ``in``,
``del``, groups, ``attrs``) and through the command line tool; symbolic
links below the File and odd File paths come after.  Each gives a clear
error of the right class (:class:`colfile.InvalidNameError` naming the
problem) or, when the name is legal, a correct round trip.  In every case a
sentinel tree next to the File and the File's parent are compared before
and after: nothing outside the File is created, changed or removed.

The decisions these tests pin down (docs/format.md 2.2):

* column and group names are refused for ``..``, ``.`` inside, empty
  components, absolute paths, SP HT LF CR NUL and other ASCII control
  characters, and the reserved components (``header``, ``attr``,
  ``attr-v2``, ``colfile-*``, ``.colfile*``);
* everything else is legal bytes: Unicode look-alikes of ``/`` and ``.``,
  bidi overrides, invalid UTF-8, format specifiers, blob-like names,
  Windows-reserved names (``CON``, ``a:b``) -- a File is a POSIX tree;
* attribute names are data, not paths: only empty names and SP HT LF CR
  (which would break an ``attr-v2`` line) and NUL are refused;
* colfile follows no symbolic link below a File's directory (not even one
  that stays inside); the File path itself may be or pass through one.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

colfile = pytest.importorskip("colfile")

# ---------------------------------------------------------------------------
# the sentinel world

Snapshot = dict[str, tuple[Any, ...]]


def snapshot(root: Path, skip: str | None = None) -> Snapshot:
    """Every entry below ``root`` (links not followed): type, mode, size,
    inode, mtime and a hash of the content or the link's target."""
    out: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if skip and Path(dirpath) == root and skip in dirnames:
            dirnames.remove(skip)
        if ".colfile-catalog" in dirnames:  # a cache every writer may rewrite (format.md 8.5)
            dirnames.remove(".colfile-catalog")
        for name in sorted(dirnames + filenames):
            if skip and Path(dirpath) == root and name == skip:
                continue
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                digest = os.readlink(p)
            else:
                digest = ""
            out[os.path.relpath(p, root)] = (st.st_mode, st.st_size, st.st_ino,
                                             st.st_mtime_ns, digest)
    return out


class World:
    """``tmp/outside``: a File with a column ``col`` plus loose files (the
    sentinel); ``tmp/F``: the File under test."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.outside = tmp / "outside"
        self.file = tmp / "F"
        with colfile.File(self.outside, "w") as o:
            o.create("col", data=np.arange(4, dtype="i4"), nfile=2)
        (self.outside / "secret.txt").write_bytes(b"do not touch\n")
        (self.outside / "dir").mkdir()
        (self.outside / "dir" / "passwd").write_bytes(b"root:x:0:0\n")
        colfile.File(self.file, "w").close()
        self._around = snapshot(tmp, skip="F")

    def surroundings_unchanged(self) -> None:
        """Nothing next to the File (sentinel included) has changed."""
        assert snapshot(self.tmp, skip="F") == self._around

    def link(self, target: str | Path, name: str, where: Path | None = None) -> None:
        """A symbolic link ``name`` in the File (or in ``where``)."""
        os.symlink(target, (self.file if where is None else where) / name)
        self._around = snapshot(self.tmp, skip="F")


@pytest.fixture
def world(tmp_path: Path, lib: Any) -> Any:
    w = World(tmp_path)
    yield w
    w.surroundings_unchanged()


# ---------------------------------------------------------------------------
# the table

LONG_COMPONENT = "c" * 256
LONG_PATH = "a/" * 2500 + "z"                 # 5001 bytes
DEEP_OK = "/".join(["d" * 99] * 28)           # 2799 bytes, legal

BAD = [  # (label, name, what the message says)
    ("dotdot", "..", "'..'"),
    ("dotdot-x", "../x", "'..'"),
    ("a-dotdot", "a/..", "'..'"),
    ("a-dotdot-dotdot-x", "a/../../x", "'..'"),
    ("sibling", "../outside/col", "'..'"),
    ("absolute", "/etc/passwd", "absolute"),
    ("double-slash-abs", "//x", "absolute"),
    ("double-slash", "a//b", "empty path component"),
    ("trailing-slash", "x/", "empty path component"),
    ("dot-middle", "x/./y", "'.' is only allowed"),
    ("dot-first", "./x", "'.' is only allowed"),
    ("empty", "", "empty"),
    ("nul-str", "a\x00/../../x", "NUL"),
    ("nul-only", "\x00", "NUL"),
    ("newline", "a\nb", "newline"),
    ("tab", "a\tb", "tab"),
    ("cr", "a\rb", "carriage return"),
    ("space", "a b", "space"),
    ("del", "a\x7f", "0x7F"),
    ("escape-seq", "a\x1b]0;owned\x07", "0x1B"),
    ("long-component", LONG_COMPONENT, "longer than 255"),
    ("long-path", LONG_PATH, "longer than 3072"),
    ("header", "header", "reserved"),
    ("attr-v2", "g/attr-v2", "reserved"),
    ("attr", "attr/x", "reserved"),
    ("colfile-ext", "colfile-v1", "reserved"),
    ("colfile-stage", ".colfile-stage.x", "reserved"),
    ("colfile-lock", "g/.colfile-lock.x", "reserved"),
    ("colfile-bare", ".colfile", "reserved"),
]

LEGAL = [  # (label, name, hidden from listings: a component starts with '.')
    ("format-specifiers", "%s%s%s%n%n", False),
    ("more-format", "%x%p%99999999d%%{0}{}", False),
    ("blob-name", "000000", False),
    ("blob-name-below", "g/00000A", False),
    ("three-dots", "...", True),
    ("hidden", ".hidden", True),
    ("hidden-temp-like", ".header.tmp.1.2", True),
    ("division-slash", "a\u2215..\u2215x", False),
    ("fullwidth-solidus", "a\uff0f..\uff0fx", False),
    ("one-dot-leaders", "\u2024\u2024", False),
    ("fullwidth-stops", "\uff0e\uff0e/x", False),
    ("rtl-override", "\u202etxt.exe", False),
    ("invalid-utf8", "bad\udcff\udcfe", False),   # bytes ff fe on disk
    ("overlong-utf8-dots", "a/\udcc0\udcae\udcc0\udcae/x", False),
    ("backslashes", "a\\..\\..\\x", False),
    ("windows-con", "CON", False),
    ("windows-nul", "NUL/aux.txt", False),
    ("windows-chars", 'a:b*c?d<e>f|g"', False),
    ("trailing-dot", "x.", False),
    ("component-255", "L" * 255, False),
    ("deep-path", DEEP_OK, False),
]


def test_the_table_is_big_enough() -> None:
    assert len(BAD) + len(LEGAL) + 2 >= 30


@pytest.mark.parametrize("label,name,why", BAD, ids=[b[0] for b in BAD])
def test_bad_names_are_refused_everywhere(world: Any, label: str, name: str,
                                          why: str) -> None:
    # f["x/"] asks for the group "x", del f["x/"] removes it: legal
    group_lookup = name.endswith("/")
    with colfile.File(world.file, "a") as f:
        g = f.require_group("g")
        before = snapshot(world.file)
        direct: list[Callable[[], Any]] = [
            lambda: f.create(name, "i4", size=3),
            lambda: f.create(name, data=np.arange(3)),
            lambda: f.create(name, None),
        ]
        if not group_lookup:
            direct += [lambda: f[name], lambda: f.__delitem__(name)]
        # the same name below a group, or as a group of its own
        indirect: list[Callable[[], Any]] = [
            lambda: g.create(name, "i4", size=1),
        ]
        if not group_lookup:
            indirect += [lambda: g[name], lambda: g.__delitem__(name), lambda: f[name + "/"],
                         lambda: f.__delitem__(name + "/"), lambda: f.create_group(name),
                         lambda: f.require_group(name)]
        for attempt in direct + indirect:
            with pytest.raises(colfile.InvalidNameError,
                               match=why if attempt in direct else None) as exc:
                attempt()
            assert isinstance(exc.value, ValueError)
            assert "\n" not in str(exc.value) and "\x1b" not in str(exc.value)
            # which File refused it (a NUL byte never reaches the core: the
            # binding refuses to encode the name)
            if attempt in direct and "\x00" not in name:
                assert str(exc.value).startswith(f"{f.path}: "), exc.value
        assert name not in f
        assert name + "/" not in f
        assert name not in g
    with colfile.File(world.file, "r") as f:
        with pytest.raises(colfile.InvalidNameError):
            f[name.rstrip("/") + "//" if group_lookup else name]
        assert name not in f
    assert snapshot(world.file) == before, "a refused name changed the File"
    world.surroundings_unchanged()


@pytest.mark.parametrize("label,name,hidden", LEGAL, ids=[x[0] for x in LEGAL])
def test_legal_names_round_trip(world: Any, label: str, name: str,
                                hidden: bool) -> None:
    with colfile.File(world.file, "a") as f:
        c = f.create(name, data=np.array([7, -8, 9], dtype="i4"), nfile=2)
        c.attrs["k"] = 1
        assert c.name == name
    with colfile.File(world.file, "r") as f:
        assert name in f
        assert (name in f.columns) is not hidden
        assert f[name][:].tolist() == [7, -8, 9]
        assert f[name].attrs["k"] == 1
    with colfile.File(world.file, "r+") as f:
        del f[name]
        assert name not in f
        assert name not in f.columns
        # the same name as a group, with attributes and a column inside
        g = f.require_group(name)
        # bytes on disk are the name's (surrogates give back the raw bytes)
        raw = name.encode("utf-8", "surrogateescape")
        assert os.path.isdir(os.path.join(os.fsencode(world.file), raw))
        g.attrs["a"] = "x"
        g.create("inner", data=np.array([1], dtype="u1"))
        assert name + "/" in f
        assert f[name + "/"].attrs["a"] == "x"
        assert f[name + "/inner"][:].tolist() == [1]
        assert (name + "/inner" in f.columns) is not hidden
        with pytest.raises(colfile.AlreadyExistsError):
            f.create_group(name)
        del f[name + "/inner"]
        # a header-only block of that name (a group's name: replacing it is asked for)
        assert f.create(name, None, overwrite=True).kind == "header-only"
        del f[name]
    world.surroundings_unchanged()


@pytest.mark.parametrize("name", [".", "x/."])
def test_attribute_block_names(world: Any, name: str) -> None:
    with colfile.File(world.file, "a") as f:
        with pytest.raises(colfile.ColumnKindError, match="names attributes"):
            f.create(name, "i4", size=1)
        f.create(name, None)
        assert f[name].kind == "attrs-only"
        with pytest.raises(colfile.ColumnKindError, match="names attributes"):
            del f[name]


@pytest.mark.parametrize("name", [b"x", b"../x", 5, None])
def test_names_must_be_str(world: Any, name: Any) -> None:
    with colfile.File(world.file, "a") as f:
        for attempt in (lambda: f.create(name, "i4"), lambda: f[name],
                        lambda: f.__delitem__(name)):
            with pytest.raises(TypeError):
                attempt()
        assert name not in f


# ---------------------------------------------------------------------------
# attribute names: data, not paths

ATTR_LEGAL = ["..", "../../outside/secret.txt", "/etc/passwd", "a/../../x", "header",
              "attr-v2", "000000", ".colfile-stage.x", "%s%n%x", "\u2215\uff0f",
              "\u202ertl", "bad\udcff\udcfe", "esc\x1b[31m", "del\x7f", "vt\x0bff\x0c",
              "#comment", "n" * 5000]
ATTR_BAD = [("", "empty"), ("a b", "a space at byte 1"), ("a\tb", "a tab"),
            ("a\nb", "a newline"), ("a\rb", "a carriage return"),
            (" lead", "a space at byte 0"), ("nul\x00x", "NUL")]


@pytest.mark.parametrize("where", [".", "col", "g/."])
def test_attribute_names(world: Any, where: str) -> None:
    def attrs(f: Any) -> Any:
        return f.attrs if where == "." else f[where].attrs if where == "col" else f["g/"].attrs

    with colfile.File(world.file, "a") as f:
        f.create("col", "f8", size=1)
        f.require_group("g")
        am = attrs(f)
        for i, name in enumerate(ATTR_LEGAL):
            am[name] = i
        for name, why in ATTR_BAD:
            with pytest.raises(colfile.InvalidNameError, match=why) as exc:
                am[name] = 1
            assert "\n" not in str(exc.value)
            assert name not in am
            with pytest.raises((KeyError, colfile.InvalidNameError)):
                am[name]
    with colfile.File(world.file, "r+") as f:
        am = attrs(f)
        assert sorted(am) == sorted(ATTR_LEGAL)
        for i, name in enumerate(ATTR_LEGAL):
            assert am[name] == i
            del am[name]
            assert name not in am
        assert len(am) == 0


# ---------------------------------------------------------------------------
# symbolic links below the File

OUTSIDE = "leads outside the File"


def test_link_to_an_outside_directory(world: Any) -> None:
    world.link(world.outside, "abs")
    world.link("../outside", "rel")
    with colfile.File(world.file, "a") as f:
        for link in ("abs", "rel"):
            for attempt in (lambda: f.create(f"{link}/x", "i4", size=1),
                            lambda: f.create(f"{link}/col", "i4", size=1),
                            lambda: f.create(f"{link}/dir/new", None),
                            lambda: f[f"{link}/col"],
                            lambda: f.__delitem__(f"{link}/col"),
                            lambda: f.__delitem__(link),
                            lambda: f[f"{link}/"],
                            lambda: f.require_group(link),
                            lambda: f.create_group(f"{link}/sub"),
                            lambda: f[f"{link}/"].attrs.keys()):
                with pytest.raises(colfile.InvalidNameError, match=OUTSIDE):
                    attempt()
            assert f"{link}/col" not in f
            assert f"{link}/" not in f
        assert f.columns == []
    with colfile.File(world.file, "r") as f:
        with pytest.raises(colfile.InvalidNameError, match=OUTSIDE):
            f["abs/col"]
    world.surroundings_unchanged()


def test_column_directory_is_a_link(world: Any) -> None:
    world.link(world.outside / "col", "col")
    with colfile.File(world.file, "a") as f:
        for attempt in (lambda: f["col"], lambda: f.create("col", "i4", size=9, nfile=3),
                        lambda: f.create("col", None), lambda: f.__delitem__("col"),
                        lambda: f["col"].attrs.keys(), lambda: f.create("col/sub", "i4")):
            with pytest.raises(colfile.InvalidNameError, match=OUTSIDE):
                attempt()
        assert "col" not in f.columns
    assert os.path.islink(world.file / "col")
    world.surroundings_unchanged()


def test_links_among_the_files_of_a_column(world: Any) -> None:
    with colfile.File(world.file, "a") as f:
        f.create("b", data=np.arange(6, dtype="i4"), nfile=2)
    os.unlink(world.file / "b" / "000001")
    world.link(world.outside / "secret.txt", "b/000001")
    for mode in ("r", "r+", "a"):
        with colfile.File(world.file, mode) as f:
            with pytest.raises(colfile.InvalidNameError, match="000001: symbolic link"):
                f["b"]
            assert "b" in f.columns        # it holds a header; opening says why not
            if mode != "r":
                with pytest.raises(colfile.InvalidNameError, match=OUTSIDE):
                    f.create("b", "i4", size=6, nfile=2)   # would truncate the target
                with pytest.raises(colfile.InvalidNameError, match=OUTSIDE):
                    del f["b"]
    # the File's own attribute file
    world.link(world.outside / "dir" / "passwd", "attr-v2")
    with colfile.File(world.file, "a") as f:
        with pytest.raises(colfile.InvalidNameError, match="attr-v2: symbolic link"):
            f.attrs["x"] = 1
        with pytest.raises(colfile.InvalidNameError, match=OUTSIDE):
            list(f.attrs)
    assert (world.outside / "secret.txt").read_bytes() == b"do not touch\n"
    world.surroundings_unchanged()


def test_file_path_through_a_link_works(world: Any) -> None:
    world.link(world.file, "alias", where=world.tmp)
    world.link("F", "alias-rel", where=world.tmp)
    for form in ("alias", "alias-rel", "alias/", "outside/../F"):
        path = os.path.join(world.tmp, form)
        with colfile.File(path, "a") as f:
            f.create("g/x", data=np.array([5, 6], dtype="i8"))
            f.attrs["n"] = 1
        with colfile.File(path, "r+") as f:
            assert f.columns == ["g/x"]
            assert f["g/x"][:].tolist() == [5, 6]
            assert "g/" in f and f.attrs["n"] == 1
            del f["g/x"]
        assert not (world.file / "g" / "x").exists()


def test_link_loops_and_links_that_stay_inside(world: Any) -> None:
    with colfile.File(world.file, "a") as f:
        f.create("real/c", data=np.arange(2))
    world.link("loop", "loop")
    world.link("pong", "ping")
    world.link("ping", "pong")
    world.link(".", "self")
    world.link("..", "up")
    world.link("real", "alias")
    with colfile.File(world.file, "a") as f:
        cases = [("loop/x", "loop"), ("ping/x", "loop"), ("self/x", "inside the File"),
                 ("self/real/c", "inside the File"), ("alias/c", "inside the File"),
                 ("up/F/x", OUTSIDE), ("up/outside/col", OUTSIDE)]
        for name, why in cases:
            for attempt in (lambda: f.create(name, "i4"), lambda: f[name],
                            lambda: f.__delitem__(name)):
                with pytest.raises(colfile.InvalidNameError, match=why):
                    attempt()
            assert name not in f
        assert f.columns == ["real/c"]    # the listing ends, links skipped
        assert f["real/c"][:].tolist() == [0, 1]
    with pytest.raises(colfile.FormatError, match="refusing"):
        colfile.File(world.file, "w")      # links are not File content
    world.surroundings_unchanged()


# ---------------------------------------------------------------------------
# File paths

def test_file_paths(tmp_path: Path, lib: Any) -> None:
    (tmp_path / "regular").write_bytes(b"x")
    os.symlink(tmp_path / "regular", tmp_path / "to-regular")
    os.symlink("nowhere/new", tmp_path / "dangling")
    os.symlink("loop", tmp_path / "loop")
    before = snapshot(tmp_path)
    with pytest.raises(colfile.InvalidArgumentError, match="empty"):
        colfile.File("", "a")
    for bad in ("a\x00b", b"a\x00b", os.fspath(tmp_path / "x\x00/../../y")):
        with pytest.raises(colfile.InvalidNameError, match="NUL"):
            colfile.File(bad, "a")
    for name in ("to-regular", "dangling", "loop"):
        for mode in ("a", "r"):
            with pytest.raises(colfile.FormatError, match="not a directory"):
                colfile.File(tmp_path / name, mode)
    with pytest.raises(colfile.InvalidNameError, match="longer than 255"):
        colfile.File(tmp_path / "ok" / ("p" * 300), "a")
    with pytest.raises(colfile.InvalidNameError, match="longer than"):
        colfile.File(os.path.join(tmp_path, *["dir"] * 1100), "a")
    assert snapshot(tmp_path) == before
    # odd bytes in a File path are the caller's business: they work
    for odd in ("odd name\nwith newline", "\u202eevil", os.fsdecode(b"bad\xff")):
        with colfile.File(tmp_path / odd, "w") as f:
            f.create("x", data=np.arange(2))
        with colfile.File(tmp_path / odd, "r") as f:
            assert f.columns == ["x"]


# ---------------------------------------------------------------------------
# the command line tool

CLI_NAMES = ["..", "../outside/col", "a/../../x", "/etc/passwd", "//x", "a//b", "",
             "a\nb", "a\x1b[2J", "header", ".colfile-stage.x", LONG_COMPONENT,
             "abs/col", "col", "abs/", "loop/x", "self/real/c"]


@pytest.fixture
def cli_world(world: Any, capsys: Any) -> Any:
    with colfile.File(world.file, "a") as f:
        f.create("real/c", data=np.arange(3, dtype="i4"))
        f.attrs["x"] = 1
    world.link(world.outside, "abs")
    world.link(world.outside / "col", "col")
    world.link("loop", "loop")
    world.link(".", "self")
    return world


def run_cli(capsys: Any, *args: Any) -> tuple[int, str, str]:
    from colfile.cli import main

    capsys.readouterr()
    status = main([os.fspath(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("name", CLI_NAMES, ids=[repr(n)[:30] for n in CLI_NAMES])
def test_cli_refuses_hostile_names(cli_world: Any, capsys: Any, name: str) -> None:
    w = cli_world
    before = snapshot(w.file)
    commands = [("ls", w.file, name), ("ls", "-l", w.file, name), ("cat", w.file, name),
                ("check", w.file, name), ("stats", w.file, name), ("rm", w.file, name),
                ("rm", "-f", w.file, name), ("attrs", w.file, name),
                ("attrs", w.file, name, "--set", "y=2"), ("attrs", w.file, name, "--delete", "x"),
                ("query", w.file, "-g", name, "c > 0")]
    for cmd in commands:
        if name == "" and ("--set" in cmd or "--delete" in cmd):
            continue   # OBJECT '' is the File itself: a legal target for attrs
        status, out, err = run_cli(capsys, *cmd)
        shown = f"colfile {' '.join(map(repr, cmd))}"
        if name in ("", "abs/") and cmd[0] in ("ls", "check", "query", "attrs") and status == 0:
            continue   # '' and a link to outside reduce to the File itself / nothing: harmless
        assert status != 0, f"{shown} succeeded: {out!r}"
        assert err.strip(), f"{shown}: no message"
        assert "Traceback" not in err and "COLFILE_DEBUG" not in err, f"{shown}: {err}"
        assert "\x1b" not in err, f"{shown} echoed an escape sequence: {err!r}"
    assert snapshot(w.file) == before
    w.surroundings_unchanged()


def test_cli_walks_around_links(cli_world: Any, capsys: Any) -> None:
    w = cli_world
    for cmd in (("ls", "-l", "-R", w.file), ("check", w.file), ("cat", w.file, "real/c"),
                ("attrs", w.file), ("ls", "--json", w.file)):
        status, out, err = run_cli(capsys, *cmd)
        assert status == 0, (cmd, err)
        assert "outside" not in out and "secret" not in out
    status, out, _ = run_cli(capsys, "ls", w.file)
    assert "real" in out and "abs" not in out and "loop" not in out
    status, _, err = run_cli(capsys, "rm", w.file, "real/c")
    assert status == 0, err
    w.surroundings_unchanged()
